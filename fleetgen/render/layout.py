"""The kustomize tree: what each cluster gets, split into shared base/ folders and per-cluster patches.

`cluster_objects` is the truth: every object a cluster must end up with. `plan` lays it out as
base/<part>/<team>/ folders (each team's objects at its default quota and queue), and a
clusters/<name>/ overlay that includes the bases of its teams, adds the cluster's labels and
patches only what differs there. A test builds each overlay with the real kustomize and compares
the result with `cluster_objects`.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

from fleetgen.errors import FieldPath
from fleetgen.model import Cluster, Fleet, Queue, Quota, Team
from fleetgen.model.platform import GpuOperator
from fleetgen.render import (
    cluster_info,
    dcgm_metrics,
    kueue_monitor,
    multikueue,
    multikueue_alerts,
    notebooks,
    observability,
    registries,
    secret_store,
    slo,
    storage,
)
from fleetgen.render import kueue as kueue_objects
from fleetgen.render import limit_range as limit_ranges
from fleetgen.render import provenance as prov
from fleetgen.render import team as team_objects
from fleetgen.render import volcano as volcano_objects
from fleetgen.render.argocd import HUB_FOLDER, TEAMS_FOLDER, hub_bootstrap
from fleetgen.render.gitops import gitops_folders
from fleetgen.render.manifest import Manifest
from fleetgen.render.nvidia_drivers import nvidia_drivers
from fleetgen.render.platform import add_ons
from fleetgen.render.provenance import NOWHERE, Given, Recorder

KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"
DEFAULT_QUEUE = Queue().name


class OutputFile(NamedTuple):
    path: str  # relative, '/'-separated
    manifests: tuple[Manifest, ...]
    markdown: str | None = None  # a document for people (FLEET.md) instead of objects


class TeamContext(NamedTuple):
    """What a team's objects depend on besides the team: its quota and queue on one cluster."""

    quota: Quota
    quota_at: FieldPath
    queue: str
    role_rules: tuple[dict[str, Any], ...] = ()  # beyond the seed's Role: Volcano's on a Volcano cluster
    queue_at: Given = prov.default("the default ClusterQueue's name")  # where `queue` comes from
    cluster_at: FieldPath = ()  # the cluster, when the context is one cluster's
    why: Recorder = NOWHERE  # records provenance (explain); the plan records nothing


TeamBuilder = Callable[[Fleet, Team, FieldPath, TeamContext], list[Manifest]]

# base/<folder>/<team>/<file>: one part of what the seed's onboarding module gives a team.
# The last field says whether the part depends on the cluster (its quota or queue): only those
# can need a patch.
TEAM_PARTS: tuple[tuple[str, str, TeamBuilder, bool], ...] = (
    ("namespaces", "namespace.yaml", lambda f, t, at, ctx: team_objects.namespace(f, t, at, ctx.why), False),
    (
        "rbac",
        "rbac.yaml",
        lambda f, t, at, ctx: team_objects.rbac(f, t, at, ctx.role_rules, ctx.why, ctx.cluster_at + ("volcano",)),
        True,
    ),
    (
        "resource-quotas",
        "resource-quotas.yaml",
        lambda f, t, at, ctx: (
            team_objects.resource_quotas(f, t, at, ctx.quota, ctx.quota_at, ctx.why, ctx.cluster_at)
            + limit_ranges.limit_range(f, t, at, ctx.quota, ctx.quota_at, ctx.why)
        ),
        True,
    ),
    ("network-policies", "network-policy.yaml", lambda f, t, at, ctx: team_objects.network_policy(f, t, at, ctx.why), False),
    (
        "kueue",
        "local-queue.yaml",
        lambda f, t, at, ctx: team_objects.local_queue(f, t, ctx.queue, at + ("clusters",), ctx.why, ctx.queue_at),
        True,
    ),
    ("dashboards", "dashboard.yaml", lambda f, t, at, ctx: observability.team_dashboard(f, t, at, ctx.why), False),
)

# clusters/<name>/<file>: what only this cluster has.
LOCAL_FILES: tuple[tuple[str, Callable[..., list[Manifest]]], ...] = (  # (fleet, index, why=NOWHERE)
    (
        "cluster.yaml",
        lambda f, i, why=NOWHERE: (
            kueue_objects.fleet_versions(f, f.clusters[i], ("clusters", i), why)
            + cluster_info.fleet_info(f, f.clusters[i], ("clusters", i), why)
            + kueue_objects.topologies(f, f.clusters[i], ("clusters", i), why)
            + kueue_objects.resource_flavors(f, f.clusters[i], ("clusters", i), why)
            + nvidia_drivers(f, f.clusters[i], ("clusters", i), why)
            + kueue_objects.cohorts(f, f.clusters[i], ("clusters", i), why)
            + kueue_objects.cluster_queues(f, f.clusters[i], ("clusters", i), why)
            + volcano_objects.volcano_queues(f, f.clusters[i], ("clusters", i), why)
            + multikueue.manager_objects(f, f.clusters[i], why)
            + multikueue.worker_objects(f, f.clusters[i], why)
            + registries.admission_policies(f, f.clusters[i], ("clusters", i), why)
            + secret_store.cluster_git_credentials(f, i, why)
        ),
    ),
    (
        "observability.yaml",
        lambda f, i, why=NOWHERE: (
            observability.prometheus_rule(f, i, why)
            + slo.prometheus_rule(f, i, why)
            + multikueue_alerts.prometheus_rule(f, i, why)
            + kueue_monitor.service_monitor(f, i, why)
            + [dcgm_metrics.metrics_config_map(f, addon, at, why) for name, addon, at in add_ons(f, i) if isinstance(addon, GpuOperator)]
            + observability.overview_dashboard(f, i, why)
        ),
    ),
)


# clusters/<name>/teams/<team>/<file>: what a team has on this cluster only, in its namespace (none in base/).
TeamLocalBuilder = Callable[[Fleet, Team, FieldPath, Cluster, FieldPath, Recorder], list[Manifest]]
TEAM_LOCAL_FILES: tuple[tuple[str, TeamLocalBuilder], ...] = (
    ("service-account.yaml", registries.service_account),
    ("pull-secret.yaml", secret_store.pull_secret),
    ("volumes.yaml", lambda f, t, at, c, c_at, why: storage.claims(f, t, at, c, c_at, why)),
    ("notebooks.yaml", notebooks.team_objects),
)


def team_local(fleet: Fleet, team: Team, at: FieldPath, index: int, why: Recorder = NOWHERE) -> list[tuple[str, list[Manifest]]]:
    """The files of team `at`'s own folder of cluster `index` that no base holds, each with its objects (none: no file)."""
    cluster = fleet.clusters[index]
    built = [(name, build(fleet, team, at, cluster, ("clusters", index), why)) for name, build in TEAM_LOCAL_FILES]
    return [(name, objects) for name, objects in built if objects]


def base_context(team: Team, at: FieldPath) -> TeamContext:
    return TeamContext(team.quota, at + ("quota",), DEFAULT_QUEUE)


def cluster_context(team: Team, at: FieldPath, cluster: Cluster, index: int, why: Recorder = NOWHERE) -> TeamContext:
    placement = team.clusters.get(cluster.name)
    quota_at = at + ("clusters", cluster.name) if placement else at + ("quota",)
    queue = team.queue_on(cluster)
    queue_at: FieldPath = quota_at + ("queue",) if placement and placement.queue else ("clusters", index, "queues", 0, "name")
    rules = volcano_objects.VOLCANO_RULES if cluster.volcano else ()
    return TeamContext(team.quota_on(cluster.name), quota_at, queue, rules, queue_at, ("clusters", index), why)


def cluster_labels(cluster: Cluster) -> dict[str, str]:
    return {"environment": cluster.environment}


class TeamOnCluster(NamedTuple):
    """A placed team's objects on one cluster: each part of TEAM_PARTS, in that order, and its own files (team_local)."""

    t: int
    team: Team
    parts: tuple[list[Manifest], ...]
    own: list[tuple[str, list[Manifest]]]


class ClusterBuild(NamedTuple):
    """What cluster `index` gets, each object built once: its teams' parts and own files, and its own files
    (LOCAL_FILES). The cluster's objects (`cluster_objects`) and its folder's plan (`cluster_plan`) are both made
    from it, so a run that validates the objects and then writes the folder builds them once."""

    teams: tuple[TeamOnCluster, ...]
    local: tuple[tuple[str, list[Manifest]], ...]


def build_cluster(fleet: Fleet, index: int, bases: "Bases | None" = None, why: Recorder = NOWHERE) -> ClusterBuild:
    """Build cluster `index`'s objects. With `bases` (base_plan's), a part that does not depend on the cluster is
    the team's base object, which the overlay includes as it is; without them it is built here, the same objects
    (such a part's builder reads no quota, queue or cluster), recording with `why`."""
    cluster = fleet.clusters[index]
    teams = []
    for t, team in fleet.placements[cluster.name]:
        at = ("teams", t)
        context = cluster_context(team, at, cluster, index, why)
        parts = tuple(
            bases[(folder, t)] if bases is not None and not varies else build(fleet, team, at, context)
            for folder, _, build, varies in TEAM_PARTS
        )
        teams.append(TeamOnCluster(t, team, parts, team_local(fleet, team, at, index, why)))
    return ClusterBuild(tuple(teams), tuple((name, build(fleet, index, why)) for name, build in LOCAL_FILES))


def cluster_objects(fleet: Fleet, index: int, why: Recorder = NOWHERE, built: ClusterBuild | None = None) -> list[Manifest]:
    """Every object cluster `index` must end up with, as `kustomize build clusters/<name>` gives it (`built`: the
    cluster's objects built already; without it they are built here, recording with `why`)."""
    cluster = fleet.clusters[index]
    built = built if built is not None else build_cluster(fleet, index, why=why)
    objects = list(kueue_objects.priority_classes(fleet, why))
    for team in built.teams:
        for part in team.parts:
            objects += part
        objects += [m for _, own in team.own for m in own]
    objects += [m for _, local in built.local for m in local]
    extra = cluster_labels(cluster)
    if why.on:
        for m in objects:
            why.set(m.body, ("metadata", "labels", "environment"), ("clusters", index, "environment"))
    return [_with_labels(m, extra) for m in objects]


def _with_labels(manifest: Manifest, labels: dict[str, str]) -> Manifest:
    body = dict(manifest.body)
    metadata = dict(body["metadata"])
    metadata["labels"] = dict(sorted({**metadata.get("labels", {}), **labels}.items()))
    body["metadata"] = metadata
    return Manifest(body, manifest.source)


Bases = dict[tuple[str, int], list[Manifest]]  # each team's base objects by (folder, team): overlays patch against them


def plan(fleet: Fleet) -> list[OutputFile]:
    """All files of the tree, in a stable order: base/, each cluster's folder, then an Argo CD hub's bootstrap."""
    files, bases = base_plan(fleet)
    return files + [f for index in range(len(fleet.clusters)) for f in cluster_plan(fleet, index, bases)] + hub_plan(fleet)


def base_plan(fleet: Fleet) -> tuple[list[OutputFile], Bases]:
    """The files of base/, and the team objects in them that cluster overlays patch."""
    files: list[OutputFile] = []
    if fleet.priority_classes:
        files += _folder("base/priority-classes", "priority-classes.yaml", kueue_objects.priority_classes(fleet), ())
    placed = [(t, team) for t, team in enumerate(fleet.teams) if team.clusters]
    bases: Bases = {}
    for folder, filename, build, _ in TEAM_PARTS:
        for t, team in placed:
            at = ("teams", t)
            bases[(folder, t)] = build(fleet, team, at, base_context(team, at))
            files += _folder(f"base/{folder}/{team.name}", filename, bases[(folder, t)], at)
    return files, bases


def _folder(path: str, filename: str, manifests: list[Manifest], at: FieldPath) -> list[OutputFile]:
    return [
        OutputFile(f"{path}/kustomization.yaml", (_kustomization(at, resources=[filename]),)),
        OutputFile(f"{path}/{filename}", tuple(manifests)),
    ]


def _kustomization(at: FieldPath, **fields: Any) -> Manifest:
    return Manifest({"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", **fields}, at)


def team_owned(bases: Bases, folder: str, t: int, team: Team) -> bool:
    """Whether part `folder` of team `t` lives in the team's namespace only: such parts make up the
    team's folder of each cluster, clusters/<name>/teams/<team>/, which Argo CD syncs as the team's
    own Application (its AppProject holds it to that namespace)."""
    return all(m.body["metadata"].get("namespace") == team.namespace for m in bases[(folder, t)])


def cluster_plan(
    fleet: Fleet,
    index: int,
    bases: Bases,
    built: ClusterBuild | None = None,
    folders: list[tuple[str, str, list[Manifest]]] | None = None,
) -> list[OutputFile]:
    """The files of clusters/<name>/ for cluster `index`: its overlay, its own objects, its teams' folders and entry point.

    `built` (build_cluster's, with these bases) and `folders` (gitops_folders') are what was built already; without
    them they are built here."""
    cluster = fleet.clusters[index]
    built = built if built is not None else build_cluster(fleet, index, bases)
    folders = folders if folders is not None else gitops_folders(fleet, index)
    root, at = f"clusters/{cluster.name}", ("clusters", index)
    resources = ["../../base/priority-classes"] if fleet.priority_classes else []
    patches: list[OutputFile] = []
    teams: list[OutputFile] = []
    labels = [{"pairs": cluster_labels(cluster), "includeSelectors": False}]
    for placed in built.teams:
        t, team, team_at = placed.t, placed.team, ("teams", placed.t)
        folder_of_team = f"{root}/{TEAMS_FOLDER}/{team.name}"
        team_resources: list[str] = []
        team_patches: list[OutputFile] = []
        for (folder, _, _, varies), part in zip(TEAM_PARTS, placed.parts, strict=True):
            own = team_owned(bases, folder, t, team)
            (team_resources if own else resources).append(f"{'../../../..' if own else '../..'}/base/{folder}/{team.name}")
            if not varies:
                continue
            for shared, local in zip(bases[(folder, t)], part, strict=True):
                patch = merge_patch(shared.body, local.body)
                if patch:
                    kind, namespace, name = local.key
                    target = {"apiVersion": local.body["apiVersion"], "kind": kind, "metadata": {"name": name, "namespace": namespace}}
                    filename = f"{folder_of_team if own else root}/patches/{namespace}-{kind.lower()}-{name}.yaml"
                    (team_patches if own else patches).append(OutputFile(filename, (Manifest({**target, **patch}, local.source),)))
        own_files = [OutputFile(f"{folder_of_team}/{name}", tuple(objects)) for name, objects in placed.own]
        team_resources += [f.path.removeprefix(folder_of_team + "/") for f in own_files]
        if team_resources:
            fields = {"patches": [{"path": p.path.removeprefix(folder_of_team + "/")} for p in team_patches]} if team_patches else {}
            teams += [
                OutputFile(
                    f"{folder_of_team}/kustomization.yaml", (_kustomization(team_at, labels=labels, resources=team_resources, **fields),)
                )
            ]
            teams += team_patches + own_files
            if fleet.gitops.engine != "argocd":  # Argo CD syncs each team's folder as an Application of its own
                resources.append(f"{TEAMS_FOLDER}/{team.name}")
    resources += [name for name, _ in LOCAL_FILES] + list(cluster.extra_resources)  # hand-written: listed, never written
    overlay = _kustomization(
        at,
        labels=labels,
        resources=resources,
        **({"patches": [{"path": p.path.removeprefix(root + "/")} for p in patches]} if patches else {}),
    )
    return [
        OutputFile(f"{root}/kustomization.yaml", (overlay,)),
        *(OutputFile(f"{root}/{name}", tuple(objects)) for name, objects in built.local),
        *patches,
        *teams,
        *(f for folder, name, objects in folders for f in _folder(f"{root}/{folder}", name, objects, at)),
    ]


def hub_plan(fleet: Fleet) -> list[OutputFile]:
    """The files of the tree that belong to no cluster and no team: an Argo CD hub's bootstrap folder."""
    objects = hub_bootstrap(fleet)
    return _folder(HUB_FOLDER, "bootstrap.yaml", objects, ("gitops",)) if objects else []


def merge_patch(base: Any, target: Any) -> dict[str, Any]:
    """The smallest merge patch turning mapping `base` into `target` (lists are replaced whole)."""
    patch: dict[str, Any] = {}
    for key, value in target.items():
        if key not in base:
            patch[key] = value
        elif base[key] != value:
            both_maps = isinstance(value, dict) and isinstance(base[key], dict)
            patch[key] = merge_patch(base[key], value) if both_maps else value
    for key in base:
        if key not in target:
            patch[key] = None
    return patch

"""The GitOps entry point of each cluster and the platform folder it syncs first.

clusters/<name>/<engine folder>/ is applied once by hand (or by the engine's bootstrap) and then
keeps itself in sync; clusters/<name>/platform/ holds the platform add-ons (render/platform.py).
The cluster's own kustomization includes neither, so its objects never manage their syncer.

Flux: a GitRepository, a Kustomization `platform` (the add-ons' HelmReleases; `wait: true`, so it
is ready only when every release is), and the fleet's Kustomization, which `dependsOn` it.

Argo CD: the fleet's AppProject (its source repositories and destinations, nothing else) and one
root Application per cluster (app of apps) that syncs clusters/<name>/platform/: the add-ons'
Applications (sync waves -2 and -1) and the fleet's Application (wave 0). Argo CD does not assess
the health of a child Application for its parent unless argocd-cm restores that health check
(`resource.customizations.health.argoproj.io_Application`); without it a wave waits only until
its children exist. The fleet's Application therefore also retries, and skips the dry run of
kinds whose CRDs are not installed yet, so it converges once its add-ons are up either way.
"""

from __future__ import annotations

from collections.abc import Callable
from posixpath import join, normpath

from fleetgen.model import Cluster, Fleet
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.platform import ARGOCD_NS, FLUX_NS, argocd_add_ons, chart_repositories, flux_add_ons, sync_policy
from fleetgen.render.provenance import NOWHERE, Recorder

GitOpsBuilder = Callable[[Fleet, Cluster, int, Recorder], list[Manifest]]
PLATFORM_FOLDER = "platform"
IN_CLUSTER = "https://kubernetes.default.svc"  # Argo CD's own cluster, where the child Applications live


def repo_path(fleet: Fleet, *parts: str) -> str:
    return normpath(join(fleet.gitops.path, *parts))


def _path_of(index: int, *rest: str) -> prov.Origin:
    return prov.derived("gitops.path/clusters/<cluster>" + "".join(f"/{r}" for r in rest), ("gitops", "path"), ("clusters", index, "name"))


def flux(fleet: Fleet, cluster: Cluster, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    ops, labels, ns = fleet.gitops, fleet_labels(fleet), FLUX_NS
    source = {"kind": "GitRepository", "name": fleet.metadata.name}
    repository = k8s_object(
        "source.toolkit.fluxcd.io/v1",
        "GitRepository",
        fleet.metadata.name,
        labels,
        namespace=ns,
        spec={"interval": ops.interval, "url": ops.repository, "ref": {"branch": ops.branch}},
    )
    out, depends = [Manifest(repository, ("gitops",))], []
    if why.on:
        why.meta(repository, ("metadata", "name"), prov.fleet_labels(), prov.default("Flux's namespace"))
        for pointer, at in ((("interval",), "interval"), (("url",), "repository"), (("ref", "branch"), "branch")):
            why.set(repository, ("spec", *pointer), ("gitops", at))
    if flux_add_ons(fleet, index):
        platform = k8s_object(
            "kustomize.toolkit.fluxcd.io/v1",
            "Kustomization",
            PLATFORM_FOLDER,
            labels,
            namespace=ns,
            spec={
                "interval": ops.interval,
                "path": "./" + repo_path(fleet, "clusters", cluster.name, PLATFORM_FOLDER),
                "prune": True,
                "wait": True,  # ready once every HelmRelease is: CRDs and controllers before the fleet's objects
                "timeout": "15m",
                "sourceRef": source,
            },
        )
        out.append(Manifest(platform, ("platform",)))
        depends = [{"name": PLATFORM_FOLDER}]
        if why.on:
            why.meta(platform, prov.default("fleetgen's platform folder"), prov.fleet_labels(), prov.default("Flux's namespace"))
            _record_sync(why, platform, index, PLATFORM_FOLDER)
    fleet_sync = k8s_object(
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        fleet.metadata.name,
        labels,
        namespace=ns,
        spec={
            **({"dependsOn": depends} if depends else {}),
            "interval": ops.interval,
            "path": "./" + repo_path(fleet, "clusters", cluster.name),
            "prune": True,
            "sourceRef": source,
        },
    )
    if why.on:
        why.meta(fleet_sync, ("metadata", "name"), prov.fleet_labels(), prov.default("Flux's namespace"))
        _record_sync(why, fleet_sync, index)
        why.set(fleet_sync, ("spec", "dependsOn"), prov.derived("the platform folder first, when the cluster has add-ons", ("platform",)))
    return [*out, Manifest(fleet_sync, ("clusters", index))]


def _record_sync(why: Recorder, body: dict[str, object], index: int, *folder: str) -> None:
    """A Flux Kustomization of the fleet's repository."""
    why.set(body, ("spec",), prov.default("fleetgen's sync settings"))
    why.set(body, ("spec", "interval"), ("gitops", "interval"))
    why.set(body, ("spec", "path"), _path_of(index, *folder))
    why.set(body, ("spec", "sourceRef", "name"), ("metadata", "name"))


def argocd(fleet: Fleet, cluster: Cluster, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    ops, labels, name = fleet.gitops, fleet_labels(fleet), fleet.metadata.name
    destinations = [{"name": c.name, "namespace": "*"} for c in fleet.clusters] + [{"server": IN_CLUSTER, "namespace": ARGOCD_NS}]
    project = k8s_object(
        "argoproj.io/v1alpha1",
        "AppProject",
        name,
        labels,
        namespace=ARGOCD_NS,
        spec={
            "description": f"Fleet {name}, rendered by fleetgen",
            "sourceRepos": sorted({ops.repository, *chart_repositories(fleet)}),
            "destinations": destinations,
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],  # namespaces, queues, flavors, the charts' CRDs
        },
    )
    root = k8s_object(
        "argoproj.io/v1alpha1",
        "Application",
        f"{name}-{cluster.name}-root",
        labels,
        namespace=ARGOCD_NS,
        spec={
            "project": name,
            "source": {
                "repoURL": ops.repository,
                "targetRevision": ops.branch,
                "path": repo_path(fleet, "clusters", cluster.name, PLATFORM_FOLDER),
            },
            "destination": {"server": IN_CLUSTER, "namespace": ARGOCD_NS},
            "syncPolicy": sync_policy([]),
        },
    )
    if why.on:
        argocd_ns = prov.default("Argo CD's namespace")
        why.meta(project, ("metadata", "name"), prov.fleet_labels(), argocd_ns)
        why.set(project, ("spec",), prov.default("fleetgen's AppProject settings"))
        why.set(project, ("spec", "description"), prov.derived("Fleet <name>, rendered by fleetgen", ("metadata", "name")))
        why.set(
            project,
            ("spec", "sourceRepos"),
            prov.derived("the fleet's repository and its add-ons' charts", ("gitops", "repository"), ("platform",)),
        )
        why.set(project, ("spec", "destinations"), prov.derived("every cluster of the fleet, and Argo CD's own", ("clusters",)))
        why.meta(
            root, prov.derived("<fleet>-<cluster>-root", ("metadata", "name"), ("clusters", index, "name")), prov.fleet_labels(), argocd_ns
        )
        _record_application(why, root, index, PLATFORM_FOLDER)
    return [Manifest(project, ("gitops",)), Manifest(root, ("clusters", index))]


def _record_application(why: Recorder, body: dict[str, object], index: int, *folder: str) -> None:
    """An Argo CD Application of the fleet's repository."""
    why.set(body, ("spec",), prov.default("fleetgen's Application settings"))
    why.set(body, ("spec", "project"), ("metadata", "name"))
    why.set(body, ("spec", "source", "repoURL"), ("gitops", "repository"))
    why.set(body, ("spec", "source", "targetRevision"), ("gitops", "branch"))
    why.set(body, ("spec", "source", "path"), _path_of(index, *folder))


def argocd_children(fleet: Fleet, cluster: Cluster, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """What the root Application syncs: the add-ons' Applications, then the fleet's (wave 0)."""
    ops, name = fleet.gitops, fleet.metadata.name
    fleet_app = k8s_object(
        "argoproj.io/v1alpha1",
        "Application",
        f"{name}-{cluster.name}",
        fleet_labels(fleet),
        namespace=ARGOCD_NS,
        annotations={"argocd.argoproj.io/sync-wave": "0"},
        spec={
            "project": name,
            "source": {"repoURL": ops.repository, "targetRevision": ops.branch, "path": repo_path(fleet, "clusters", cluster.name)},
            "destination": {"name": cluster.name, "namespace": "default"},
            "syncPolicy": sync_policy(["SkipDryRunOnMissingResource=true"]),
        },
    )
    if why.on:
        named = prov.derived("<fleet>-<cluster>", ("metadata", "name"), ("clusters", index, "name"))
        why.meta(fleet_app, named, prov.fleet_labels(), prov.default("Argo CD's namespace"))
        why.set(fleet_app, ("metadata", "annotations"), prov.default("wave 0: after the add-ons"))
        _record_application(why, fleet_app, index)
        why.set(fleet_app, ("spec", "destination", "name"), ("clusters", index, "name"))
    return [*argocd_add_ons(fleet, index, name, why), Manifest(fleet_app, ("clusters", index))]


def flux_children(fleet: Fleet, cluster: Cluster, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    return flux_add_ons(fleet, index, why)


# engine -> (entry point folder, its objects, the platform folder's objects)
ENGINES: dict[str, tuple[str, GitOpsBuilder, GitOpsBuilder]] = {
    "flux": ("flux-system", flux, flux_children),
    "argocd": ("argocd", argocd, argocd_children),
}


def gitops_folders(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[tuple[str, str, list[Manifest]]]:
    """(folder under clusters/<name>/, file name, objects): the entry point, then the platform folder if it has objects."""
    folder, entry, children = ENGINES[fleet.gitops.engine]
    cluster = fleet.clusters[index]
    platform = children(fleet, cluster, index, why)
    return [(folder, "sync.yaml", entry(fleet, cluster, index, why)), *([(PLATFORM_FOLDER, "platform.yaml", platform)] if platform else [])]


def entry_point(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """The GitOps objects that sync cluster `index`: its entry point and the platform folder it syncs first."""
    return [m for _, _, manifests in gitops_folders(fleet, index, why) for m in manifests]

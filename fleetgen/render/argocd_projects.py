"""The fleet's Argo CD AppProjects: what each kind of Application may deploy, and where.

- `<fleet>`: the fleet repository's objects that are not a team's (namespaces, priority classes,
  Kueue's and Volcano's cluster-wide objects, the versions ConfigMaps, alerts and dashboards) and the
  Argo CD objects themselves (Applications, the ApplicationSet, AppProjects, repository Secrets,
  argocd-cm): exactly the kinds fleetgen renders, each cluster's namespaces fleetgen writes to.
  Where the fleet has MultiKueue, its objects too: the manager's AdmissionChecks, MultiKueueConfigs,
  MultiKueueClusters and kubeconfig ExternalSecrets, each worker's account for the manager (a
  ServiceAccount, its token Secret, and the ClusterRole and binding by name), in Kueue's namespace.
- `<fleet>-platform`: the add-ons' Helm charts, from their chart repositories only, into the add-ons'
  namespaces, with exactly the cluster-scoped kinds the pinned chart versions create (CRDs, ClusterRoles,
  webhooks, the GPU Operator's ClusterPolicy: compat/chart_kinds.yaml, derived from the charts by
  `helm template`) and the add-ons' own Namespaces by name (their Applications create them).
- `<fleet>-team-<team>`: the team's Application of each of its clusters, into the team's namespace
  there, from the fleet repository only, with no cluster-scoped kind: the kinds fleetgen renders for
  the team (Role, RoleBinding, ResourceQuota, NetworkPolicy, LocalQueue) and the kinds its Role lets
  the team create (pods, services, config maps, volume claims, Jobs, Deployments, and Volcano Jobs
  where a cluster of the team runs Volcano).

`validate` checks every object each Application syncs against its project (validation/argocd.py).
"""

from __future__ import annotations

from typing import Any

from fleetgen.compat.chart_kinds import kinds_of
from fleetgen.model import Fleet, Team
from fleetgen.model.multikueue import queue_workers
from fleetgen.model.platform import GpuOperator
from fleetgen.render import provenance as prov
from fleetgen.render import volcano
from fleetgen.render.argocd_apps import ARGOCD_NS, IN_CLUSTER, fleet_project, hub, platform_project, team_project
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.multikueue import MANAGER_ACCOUNT
from fleetgen.render.platform import add_ons, argocd_repo_url
from fleetgen.render.provenance import NOWHERE, Recorder

GroupKind = tuple[str, str]

# Cluster-scoped kinds of the fleet's own Application (layout.py's cluster folder, without teams/).
FLEET_CLUSTER_KINDS: tuple[GroupKind, ...] = (
    ("", "Namespace"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),  # each team's registries (render/registries.py)
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("kueue.x-k8s.io", "ClusterQueue"),
    ("kueue.x-k8s.io", "Cohort"),
    ("kueue.x-k8s.io", "ResourceFlavor"),
    ("kueue.x-k8s.io", "Topology"),
    ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    ("scheduling.volcano.sh", "Queue"),
    ("nvidia.com", "NVIDIADriver"),  # one per GPU node pool where the GPU Operator manages drivers per pool
)
# Namespaced kinds of the fleet's Application, and of the Argo CD objects in Argo CD's namespace.
FLEET_NAMESPACED_KINDS: tuple[GroupKind, ...] = (
    ("", "ConfigMap"),
    ("", "Secret"),  # OCI Helm repositories, in Argo CD's namespace only (their Application syncs there)
    ("argoproj.io", "AppProject"),
    ("argoproj.io", "Application"),
    ("argoproj.io", "ApplicationSet"),
    ("monitoring.coreos.com", "PrometheusRule"),
    ("monitoring.coreos.com", "ServiceMonitor"),  # Kueue's metrics (render/kueue_monitor.py)
)
# What MultiKueue adds to the manager and its workers (render/multikueue.py): cluster-scoped, and in Kueue's namespace.
MULTIKUEUE_CLUSTER_KINDS: tuple[GroupKind, ...] = (
    ("kueue.x-k8s.io", "AdmissionCheck"),
    ("kueue.x-k8s.io", "MultiKueueCluster"),
    ("kueue.x-k8s.io", "MultiKueueConfig"),
)
MULTIKUEUE_NAMED_KINDS: tuple[GroupKind, ...] = (  # the manager's access on a worker: these by name only
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
)
MULTIKUEUE_NAMESPACED_KINDS: tuple[GroupKind, ...] = (("", "ServiceAccount"), ("external-secrets.io", "ExternalSecret"))
# What fleetgen renders in a team's namespace (layout.py's clusters/<name>/teams/<team>/).
TEAM_KINDS: tuple[GroupKind, ...] = (
    ("", "LimitRange"),
    ("", "PersistentVolumeClaim"),  # the team's volumes (render/storage.py)
    ("", "ResourceQuota"),
    ("", "ServiceAccount"),  # its default one, with the cluster's pull Secret (render/registries.py)
    ("kueue.x-k8s.io", "LocalQueue"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
)
# The kind of each resource a team's Role lets it create (tenancy.role and the team's own rules, render/volcano.py).
RESOURCE_KINDS: dict[tuple[str, str], str] = {
    ("", "pods"): "Pod",
    ("", "services"): "Service",
    ("", "configmaps"): "ConfigMap",
    ("", "persistentvolumeclaims"): "PersistentVolumeClaim",
    ("batch", "jobs"): "Job",
    ("apps", "deployments"): "Deployment",
    ("apps", "statefulsets"): "StatefulSet",  # a team may add it to its Role (tenancy.role)
    ("batch.volcano.sh", "jobs"): "Job",
}


def created_kinds(rules: tuple[dict[str, Any], ...]) -> list[GroupKind]:
    """The kinds Role `rules` let a subject create (a resource without a known kind is left out)."""
    return [
        (group, RESOURCE_KINDS[(group, resource)])
        for rule in rules
        if "create" in rule["verbs"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        if (group, resource) in RESOURCE_KINDS
    ]


def team_kinds(fleet: Fleet, team: Team, indexes: list[int]) -> list[GroupKind]:
    """What team `team` may deploy on the clusters `indexes`: Volcano Jobs where one of them runs Volcano."""
    on = [fleet.clusters[i] for i in indexes if team in (placed for _, placed in fleet.placements[fleet.clusters[i].name])]
    volcano_clusters = any(c.volcano is not None for c in on)
    rules = tuple(r.body() for r in fleet.access(team).role) + (volcano.VOLCANO_RULES if volcano_clusters else ())
    return sorted({*TEAM_KINDS, *_store_kinds(fleet), *created_kinds(rules)})


def _store_kinds(fleet: Fleet) -> tuple[GroupKind, ...]:
    """The ExternalSecrets that write the Secrets the objects read, where the fleet's Secrets come from a store (secret_store.py)."""
    return (("external-secrets.io", "ExternalSecret"),) if fleet.secrets is not None and fleet.secrets.external_secrets else ()


def _kinds(pairs: list[GroupKind] | tuple[GroupKind, ...]) -> list[dict[str, str]]:
    return [{"group": group, "kind": kind} for group, kind in sorted(pairs)]


def _where(fleet: Fleet, clusters: list[str], namespaces: list[str]) -> list[dict[str, str]]:
    """Destinations: each namespace on each cluster (hub), or on Argo CD's own cluster (in-cluster)."""
    if not hub(fleet):
        return [{"server": IN_CLUSTER, "namespace": ns} for ns in sorted(set(namespaces))]
    return [{"name": c, "namespace": ns} for c in clusters for ns in sorted(set(namespaces))]


def _project(fleet: Fleet, name: str, description: str, spec: dict[str, Any]) -> dict[str, Any]:
    return k8s_object(
        "argoproj.io/v1alpha1", "AppProject", name, fleet_labels(fleet), namespace=ARGOCD_NS, spec={"description": description, **spec}
    )


def _operator_namespaces(fleet: Fleet, indexes: list[int]) -> list[str]:
    """Where the GPU Operator fleetgen installs runs: the DCGM exporter's metrics list is a ConfigMap there (render/dcgm_metrics.py)."""
    return [addon.namespace for i in indexes for _, addon, _ in add_ons(fleet, i) if isinstance(addon, GpuOperator)]


def _multikueue_grants(fleet: Fleet, indexes: list[int]) -> tuple[list[dict[str, str]], list[dict[str, str]], list[GroupKind]]:
    """What the fleet's project must also allow for MultiKueue on the clusters `indexes`: destinations (Kueue's namespace
    on the manager and its workers), cluster-scoped kinds (some by name) and namespaced kinds; nothing without it."""
    mk = fleet.multi_kueue
    if mk is None:
        return [], [], []
    workers = {w for names in queue_workers(mk, fleet.clusters).values() for w in names}
    involved = [fleet.clusters[i] for i in indexes if fleet.clusters[i].name == mk.manager or fleet.clusters[i].name in workers]
    if not involved:
        return [], [], []
    destinations = [d for c in involved for d in _where(fleet, [c.name], [fleet.platform_of(c).kueue.namespace])]
    named = [{"group": group, "kind": kind, "name": MANAGER_ACCOUNT} for group, kind in MULTIKUEUE_NAMED_KINDS]
    return destinations, _kinds(MULTIKUEUE_CLUSTER_KINDS) + named, list(MULTIKUEUE_NAMESPACED_KINDS)


def projects(fleet: Fleet, indexes: list[int], why: Recorder = NOWHERE) -> list[Manifest]:
    """The AppProjects of the clusters `indexes` (every cluster for the hub, one for an in-cluster Argo CD)."""
    names, repo = [fleet.clusters[i].name for i in indexes], fleet.gitops.repository
    argocd_home = [{"server": IN_CLUSTER, "namespace": ARGOCD_NS}]
    mk_destinations, mk_cluster_kinds, mk_namespaced_kinds = _multikueue_grants(fleet, indexes)
    fleet_body = _project(
        fleet,
        fleet_project(fleet),
        f"Fleet {fleet.metadata.name}: what fleetgen renders outside the teams' namespaces",
        {
            "sourceRepos": [repo],
            "destinations": argocd_home
            + _where(fleet, names, ["kube-public", fleet.alerts.namespace, *_operator_namespaces(fleet, indexes)])
            + [d for d in mk_destinations if d not in argocd_home],
            "clusterResourceWhitelist": _kinds(FLEET_CLUSTER_KINDS) + mk_cluster_kinds,
            "namespaceResourceWhitelist": _kinds(sorted({*FLEET_NAMESPACED_KINDS, *mk_namespaced_kinds, *_store_kinds(fleet)})),
        },
    )
    installed = [addon for i in indexes for _, addon, _ in add_ons(fleet, i)]
    charts = sorted({argocd_repo_url(addon.repository) for addon in installed})
    namespaces = sorted({addon.namespace for addon in installed})
    chart_kinds = sorted({kind for addon in installed for kind in kinds_of(addon.chart, addon.version)[0]})
    # CreateNamespace=true: Argo CD creates each add-on's namespace only where the project allows that Namespace.
    own_namespaces = [{"group": "", "kind": "Namespace", "name": ns} for ns in namespaces]
    platform_body = _project(
        fleet,
        platform_project(fleet),
        f"Fleet {fleet.metadata.name}: the add-ons' Helm charts",
        {
            "sourceRepos": charts,
            "destinations": _where(fleet, names, namespaces),
            "clusterResourceWhitelist": _kinds(chart_kinds) + own_namespaces,
        },
    )
    out = [Manifest(fleet_body, ("gitops",)), Manifest(platform_body, ("platform",))]
    placed = {t for i in indexes for t, _ in fleet.placements[fleet.clusters[i].name]}
    for t in sorted(placed):
        team = fleet.teams[t]
        on = [n for n in names if any(placed_t == t for placed_t, _ in fleet.placements[n])]
        body = _project(
            fleet,
            team_project(fleet, team),
            f"Team {team.name}: its namespace on its clusters",
            {
                "sourceRepos": [repo],
                "destinations": _where(fleet, on, [team.namespace]),
                "namespaceResourceWhitelist": _kinds(team_kinds(fleet, team, indexes)),
            },
        )
        out.append(Manifest(body, ("teams", t)))
    if why.on:
        for m in out:
            team_at = m.source if m.source[:1] == ("teams",) else None
            named: prov.Given = (
                ("metadata", "name")
                if m.body["metadata"]["name"] == fleet.metadata.name
                else prov.derived("<fleet>-platform", ("metadata", "name"))
            )
            if team_at:
                named = prov.derived("<fleet>-team-<team>", ("metadata", "name"), (*team_at, "name"))
            why.meta(m.body, named, prov.fleet_labels(), prov.default("Argo CD's namespace"))
            why.set(m.body, ("spec",), prov.default("fleetgen's AppProject: the kinds and places its Applications deploy"))
            why.set(
                m.body,
                ("spec", "sourceRepos"),
                prov.derived("the repository its Applications take their sources from", ("gitops", "repository"), ("platform",)),
            )
            why.set(m.body, ("spec", "destinations"), prov.derived("the clusters and namespaces its Applications deploy to", ("clusters",)))
            why.set(m.body, ("spec", "description"), prov.derived("what the project is for", ("metadata", "name")))
    return out

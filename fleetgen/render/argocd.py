"""Argo CD: how the fleet is bootstrapped and what each cluster's root Application syncs.

Each cluster has a root Application (app of apps) that syncs clusters/<name>/platform/: the
add-ons' Applications (sync waves -2 and -1, project `<fleet>-platform`), the fleet's Application
(wave 0: clusters/<name>/, project `<fleet>`) and one Application per team on the cluster (wave 1:
clusters/<name>/teams/<team>/, project `<fleet>-team-<team>`). argocd-cm's health check of
Applications (argocd_apps.py) makes each wave wait until the one before is healthy: the add-ons'
CRDs and controllers, then the namespaces and queues, then the teams' objects.

- hub (`gitops.argocd.mode`): <path>/argocd/ holds argocd-cm's health check, the AppProjects
  (argocd_projects.py), one ApplicationSet whose list generator has an element per fleet.yaml
  cluster (its name and rollout wave) and whose template is the root Application, and the
  Application `<fleet>-bootstrap`, which syncs that folder itself. `kubectl apply -k argocd` once
  bootstraps the fleet; a cluster added to fleet.yaml is a new element, synced when merged.
  With `progressiveSync`, the ApplicationSet syncs the roots in RollingSync steps, one per wave.
- in-cluster: clusters/<name>/argocd/ holds the same for the cluster's own Argo CD: argocd-cm's
  health check, the projects of that cluster, its root and the bootstrap Application syncing the
  folder itself; `kubectl apply -k clusters/<name>/argocd` once on each cluster.
"""

from __future__ import annotations

from typing import Any

from fleetgen.model import Fleet
from fleetgen.model.multikueue import queue_workers
from fleetgen.render import provenance as prov
from fleetgen.render.argocd_apps import (
    ARGOCD_NS,
    CLUSTER_LABEL,
    IN_CLUSTER,
    PLATFORM_FOLDER,
    SYNC_WAVE,
    WAVE_LABEL,
    app_label_origins,
    app_labels,
    application_health,
    destination,
    fleet_project,
    hub,
    path_origin,
    platform_project,
    repo_path,
    rollout_waves,
    team_project,
)
from fleetgen.render.argocd_projects import projects
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.platform import argocd_add_ons, sync_policy
from fleetgen.render.provenance import NOWHERE, Recorder
from fleetgen.render.secret_store import hub_git_credentials

HUB_FOLDER = "argocd"  # <gitops.path>/argocd/: the hub's bootstrap
TEAMS_FOLDER = "teams"  # clusters/<name>/teams/<team>/: what the team's Application syncs (layout.py)
ENTRY_FOLDER = "argocd"  # clusters/<name>/argocd/: an in-cluster Argo CD's bootstrap
FLEET_APP_NAMESPACE = "kube-public"  # the fleet Application's destination; every object it syncs names its own
# The ApplicationSet's parameters: each list element names a cluster and its rollout wave.
CLUSTER_PARAM, WAVE_PARAM = "cluster", "wave"
APPLICATION_API = "argoproj.io/v1alpha1"
RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"


def _application(fleet: Fleet, name: str, labels: dict[str, str], spec: dict[str, Any], wave: int | None = None) -> dict[str, Any]:
    annotations = {SYNC_WAVE: str(wave)} if wave is not None else None
    return k8s_object(APPLICATION_API, "Application", name, labels, namespace=ARGOCD_NS, annotations=annotations, spec=spec)


def _source(fleet: Fleet, *parts: str) -> dict[str, str]:
    return {"repoURL": fleet.gitops.repository, "targetRevision": fleet.gitops.branch, "path": repo_path(fleet, *parts)}


def _root(fleet: Fleet, cluster: str, labels: dict[str, str]) -> dict[str, Any]:
    """The root Application of cluster `cluster` (a name, or the ApplicationSet's parameter)."""
    policy = sync_policy([])
    if hub(fleet) and fleet.gitops.argocd.progressive_sync:
        policy.pop("automated")  # RollingSync syncs the generated roots itself, one step at a time
    spec = {
        "project": fleet_project(fleet),
        "source": _source(fleet, "clusters", cluster, PLATFORM_FOLDER),
        "destination": {"server": IN_CLUSTER, "namespace": ARGOCD_NS},
        "syncPolicy": policy,
    }
    body = _application(fleet, f"{fleet.metadata.name}-{cluster}-root", labels, spec)
    # Deleting a root (its cluster left fleet.yaml) deletes the child Applications it made; they carry no
    # such finalizer, so the objects on the cluster stay, no longer managed.
    body["metadata"]["finalizers"] = [RESOURCES_FINALIZER]
    return body


def root(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> Manifest:
    """Cluster `index`'s root Application: in-cluster, as rendered; on the hub, as the ApplicationSet generates it."""
    body = _root(fleet, fleet.clusters[index].name, app_labels(fleet, index))
    if why.on:
        named = prov.derived("<fleet>-<cluster>-root", ("metadata", "name"), ("clusters", index, "name"))
        why.meta(body, named, app_label_origins(index), prov.default("Argo CD's namespace"))
        _record(why, body, index, PLATFORM_FOLDER)
        why.set(body, ("metadata", "finalizers"), prov.default("deleting the root deletes its Applications, not the cluster's objects"))
        why.set(body, ("spec", "destination"), prov.default("Argo CD's own cluster and namespace"))
        why.set(
            body, ("spec", "syncPolicy"), prov.derived("RollingSync syncs it when progressive", ("gitops", "argocd", "progressiveSync"))
        )
    return Manifest(body, ("clusters", index))


def _record(why: Recorder, body: dict[str, Any], index: int, *folder: str) -> None:
    why.set(body, ("spec",), prov.default("fleetgen's Application settings"))
    why.set(body, ("spec", "project"), ("metadata", "name"))
    why.set(body, ("spec", "source", "repoURL"), ("gitops", "repository"))
    why.set(body, ("spec", "source", "targetRevision"), ("gitops", "branch"))
    why.set(body, ("spec", "source", "path"), path_origin(index, *folder))
    why.set(body, ("spec", "destination"), prov.derived("the cluster (hub) or Argo CD's own (in-cluster)", ("clusters", index, "name")))


def children(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """What cluster `index`'s root syncs: the add-ons' Applications, the fleet's (wave 0), each team's (wave 1)."""
    cluster, name, labels = fleet.clusters[index], fleet.metadata.name, app_labels(fleet, index)
    spec = {
        "project": fleet_project(fleet),
        "source": _source(fleet, "clusters", cluster.name),
        "destination": destination(fleet, cluster.name, FLEET_APP_NAMESPACE),
        "syncPolicy": sync_policy(["SkipDryRunOnMissingResource=true"]),
    }
    fleet_app = _application(fleet, f"{name}-{cluster.name}", labels, spec, wave=0)
    out = [*argocd_add_ons(fleet, index, platform_project(fleet), why), Manifest(fleet_app, ("clusters", index))]
    if why.on:
        why.meta(fleet_app, prov.derived("<fleet>-<cluster>", ("metadata", "name"), ("clusters", index, "name")), app_label_origins(index))
        why.set(fleet_app, ("metadata", "namespace"), prov.default("Argo CD's namespace"))
        why.set(fleet_app, ("metadata", "annotations"), prov.default("wave 0: after the add-ons are healthy"))
        _record(why, fleet_app, index)
    for t, team in fleet.placements[cluster.name]:
        spec = {
            "project": team_project(fleet, team),
            "source": _source(fleet, "clusters", cluster.name, TEAMS_FOLDER, team.name),
            "destination": destination(fleet, cluster.name, team.namespace),
            "syncPolicy": sync_policy(["SkipDryRunOnMissingResource=true"]),
        }
        app = _application(fleet, f"{name}-{cluster.name}-team-{team.name}", labels, spec, wave=1)
        out.append(Manifest(app, ("teams", t)))
        if why.on:
            named = prov.derived("<fleet>-<cluster>-team-<team>", ("metadata", "name"), ("clusters", index, "name"), ("teams", t, "name"))
            why.meta(app, named, app_label_origins(index), prov.default("Argo CD's namespace"))
            why.set(app, ("metadata", "annotations"), prov.default("wave 1: after the team's namespace and the cluster's queues"))
            _record(why, app, index, TEAMS_FOLDER, "<team>")
            why.set(app, ("spec", "project"), prov.derived("<fleet>-team-<team>", ("metadata", "name"), ("teams", t, "name")))
    return out


def _bootstrap(fleet: Fleet, *folder: str) -> dict[str, Any]:
    """The Application that syncs the folder it is in: its own changes apply from Git."""
    spec = {
        "project": fleet_project(fleet),
        "source": _source(fleet, *folder),
        "destination": {"server": IN_CLUSTER, "namespace": ARGOCD_NS},
        "syncPolicy": sync_policy([]),
    }
    return _application(fleet, f"{fleet.metadata.name}-bootstrap", fleet_labels(fleet), spec)


def entry(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """clusters/<name>/argocd/: an in-cluster Argo CD's bootstrap; nothing on a hub (its roots are generated)."""
    if hub(fleet):
        return []
    bootstrap = _bootstrap(fleet, "clusters", fleet.clusters[index].name, ENTRY_FOLDER)
    if why.on:
        why.meta(
            bootstrap, prov.derived("<fleet>-bootstrap", ("metadata", "name")), prov.fleet_labels(), prov.default("Argo CD's namespace")
        )
        _record(why, bootstrap, index, ENTRY_FOLDER)
        why.set(bootstrap, ("spec", "destination"), prov.default("Argo CD's own cluster and namespace"))
    return [
        *application_health(fleet, why),
        *projects(fleet, [index], why),
        root(fleet, index, why),
        Manifest(bootstrap, ("gitops", "argocd", "mode")),
    ]


def generated(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """The objects Argo CD makes for cluster `index` from the hub's ApplicationSet: its root."""
    return [root(fleet, index, why)] if hub(fleet) else []


def application_set(fleet: Fleet) -> dict[str, Any]:
    """The hub's ApplicationSet: a root Application per element, one element per fleet.yaml cluster."""
    waves = rollout_waves(fleet)
    elements = [{CLUSTER_PARAM: c.name, WAVE_PARAM: str(waves[c.name])} for c in fleet.clusters]
    labels = {**fleet_labels(fleet), "fleetgen/cluster": f"{{{{{CLUSTER_PARAM}}}}}", WAVE_LABEL: f"{{{{{WAVE_PARAM}}}}}"}
    template = _root(fleet, f"{{{{{CLUSTER_PARAM}}}}}", labels)
    metadata = {k: v for k, v in template["metadata"].items() if k != "namespace"}  # generated in the ApplicationSet's namespace
    spec: dict[str, Any] = {"generators": [{"list": {"elements": elements}}]}
    if fleet.gitops.argocd.progressive_sync:
        spec["strategy"] = {"type": "RollingSync", "rollingSync": {"steps": rolling_steps(fleet, waves)}}
    spec["template"] = {"metadata": metadata, "spec": template["spec"]}
    return k8s_object(APPLICATION_API, "ApplicationSet", fleet.metadata.name, fleet_labels(fleet), namespace=ARGOCD_NS, spec=spec)


def rolling_steps(fleet: Fleet, waves: dict[str, int]) -> list[dict[str, Any]]:
    """One RollingSync step per rollout wave. A MultiKueue manager's root syncs in a step of its own after the
    last wave that holds one of its workers (or its own): its queues dispatch only where the workers' namespaces,
    LocalQueues and the manager's account already are."""
    steps = [[{"key": WAVE_LABEL, "operator": "In", "values": [str(wave)]}] for wave in sorted(set(waves.values()))]
    mk = fleet.multi_kueue
    if mk is None or mk.manager not in waves:
        return [{"matchExpressions": step} for step in steps]
    workers = {w for names in queue_workers(mk, fleet.clusters).values() for w in names if w in waves}
    last = max(waves[name] for name in (*workers, mk.manager))
    others = {"key": CLUSTER_LABEL, "operator": "NotIn", "values": [mk.manager]}
    out = [{"matchExpressions": [*step, others]} for step in steps]
    after = sorted(set(waves.values())).index(last) + 1
    out.insert(after, {"matchExpressions": [{"key": CLUSTER_LABEL, "operator": "In", "values": [mk.manager]}]})
    return out


def hub_bootstrap(fleet: Fleet) -> list[Manifest]:
    """<path>/argocd/ of a hub: argocd-cm's health check, the projects, the ApplicationSet, the bootstrap."""
    if fleet.gitops.engine != "argocd" or not hub(fleet):
        return []
    return [
        *application_health(fleet),
        *projects(fleet, list(range(len(fleet.clusters)))),
        Manifest(application_set(fleet), ("clusters",)),
        Manifest(_bootstrap(fleet, HUB_FOLDER), ("gitops", "argocd", "mode")),
        *hub_git_credentials(fleet),
    ]

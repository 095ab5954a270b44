"""What every Argo CD object fleetgen renders shares: where an Application sends its objects, the
labels that name its cluster and rollout wave, the projects' names, and argocd-cm's health check
of Applications, without which sync waves between Applications order only their creation.

Hub mode: the fleet's clusters are registered in one Argo CD under their fleet.yaml names, so a
child Application's destination is `name: <cluster>`. In-cluster mode: each cluster's own Argo CD
deploys to itself, `server: https://kubernetes.default.svc`.
"""

from __future__ import annotations

from posixpath import join, normpath

from fleetgen.model import Fleet, Team
from fleetgen.model.stages import rollout_stages
from fleetgen.render import provenance as prov
from fleetgen.render.health import argocd_checks
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.provenance import NOWHERE, Given, Recorder

ARGOCD_NS = "argocd"
IN_CLUSTER = "https://kubernetes.default.svc"  # the cluster Argo CD itself runs on
CLUSTER_LABEL, WAVE_LABEL = "fleetgen/cluster", "fleetgen/rollout-wave"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
HEALTH_KEY = "resource.customizations.health.argoproj.io_Application"

# argocd-cm's health check of argoproj.io/Application (Lua, run by Argo CD for each child Application
# its parent syncs). Healthy only when the child is synced to its source and its own resources are
# healthy; while it syncs, or before its first assessment, Progressing: so the parent's next sync
# wave starts after the one before has really converged.
APPLICATION_HEALTH_LUA = """\
-- fleetgen: an Application is healthy once it is synced and its resources are healthy
local hs = {status = "Progressing", message = "waiting for the Application's first health assessment"}
if obj.status == nil or obj.status.health == nil or obj.status.health.status == nil then
  return hs
end
local operation = obj.status.operationState
if obj.operation ~= nil or (operation ~= nil and operation.phase == "Running") then
  hs.message = "syncing"
  return hs
end
local health, sync = obj.status.health.status, nil
if obj.status.sync ~= nil then
  sync = obj.status.sync.status
end
if health == "Healthy" and sync ~= "Synced" then
  hs.message = "healthy, but " .. (sync or "not yet compared") .. " with its source"
  return hs
end
hs.status = health
hs.message = obj.status.health.message or ""
return hs
"""


PLATFORM_FOLDER = "platform"  # clusters/<name>/platform/: the add-ons, synced first


def repo_path(fleet: Fleet, *parts: str) -> str:
    """A folder of the rendered tree as the repository names it."""
    return normpath(join(fleet.gitops.path, *parts))


def path_origin(index: int, *rest: str) -> prov.Origin:
    """Where the path of a folder of cluster `index` comes from."""
    return prov.derived("gitops.path/clusters/<cluster>" + "".join(f"/{r}" for r in rest), ("gitops", "path"), ("clusters", index, "name"))


def hub(fleet: Fleet) -> bool:
    return fleet.gitops.argocd.mode == "hub"


def fleet_project(fleet: Fleet) -> str:
    return fleet.metadata.name


def platform_project(fleet: Fleet) -> str:
    return f"{fleet.metadata.name}-platform"


def team_project(fleet: Fleet, team: Team) -> str:
    return f"{fleet.metadata.name}-team-{team.name}"


def destination(fleet: Fleet, cluster: str, namespace: str) -> dict[str, str]:
    """Where an Application of cluster `cluster` deploys: the registered cluster (hub) or Argo CD's own."""
    return {"name": cluster, "namespace": namespace} if hub(fleet) else {"server": IN_CLUSTER, "namespace": namespace}


def rollout_waves(fleet: Fleet) -> dict[str, int]:
    """Cluster name -> its rollout wave, 1 first: the order `fleetgen upgrade plan` moves clusters in."""
    return {name: wave for wave, (_, names) in enumerate(rollout_stages(fleet), start=1) for name in names}


def app_labels(fleet: Fleet, index: int) -> dict[str, str]:
    """The fleet's labels plus the cluster and its rollout wave, on each Application of cluster `index`."""
    name = fleet.clusters[index].name
    return {**fleet_labels(fleet), CLUSTER_LABEL: name, WAVE_LABEL: str(rollout_waves(fleet)[name])}


def app_label_origins(index: int) -> dict[str, Given]:
    wave = prov.derived(
        "the cluster's rollout wave: dev, staging, a production canary, then the rest (as upgrade plan orders them)",
        ("clusters", index, "environment"),
        ("clusters", index, "drPartner"),
        ("rollout", "maxWaveSize"),
    )
    return {**prov.fleet_labels(), CLUSTER_LABEL: ("clusters", index, "name"), WAVE_LABEL: wave}


def application_health(fleet: Fleet, why: Recorder = NOWHERE) -> list[Manifest]:
    """argocd-cm with fleetgen's health checks (Applications, and the GPU objects: render/health.py): applied
    server-side, it adds those keys to the ConfigMap Argo CD's installation made; never pruned or deleted with the
    Application."""
    if fleet.gitops.argocd.application_health != "render":
        return []
    labels = {**fleet_labels(fleet), "app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"}
    body = k8s_object(
        "v1",
        "ConfigMap",
        "argocd-cm",
        labels,
        namespace=ARGOCD_NS,
        annotations={"argocd.argoproj.io/sync-options": "Delete=false,Prune=false,ServerSideApply=true"},
        data={HEALTH_KEY: APPLICATION_HEALTH_LUA, **argocd_checks()},
    )
    if why.on:
        origins: dict[str, Given] = {**prov.fleet_labels(), "app.kubernetes.io/name": prov.default("Argo CD's settings ConfigMap")}
        origins["app.kubernetes.io/part-of"] = prov.default("Argo CD reads only ConfigMaps labelled part-of=argocd")
        why.meta(body, prov.default("Argo CD's settings ConfigMap"), origins, prov.default("Argo CD's namespace"))
        why.set(body, ("metadata", "annotations"), prov.default("add one key server-side; never prune or delete Argo CD's settings"))
        why.set(body, ("data",), prov.derived("sync waves wait for healthy Applications", ("gitops", "argocd", "applicationHealth")))
    return [Manifest(body, ("gitops", "argocd", "applicationHealth"))]

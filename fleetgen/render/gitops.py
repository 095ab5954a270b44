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
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.platform import ARGOCD_NS, FLUX_NS, argocd_add_ons, chart_repositories, flux_add_ons, sync_policy

GitOpsBuilder = Callable[[Fleet, Cluster, int], list[Manifest]]
PLATFORM_FOLDER = "platform"
IN_CLUSTER = "https://kubernetes.default.svc"  # Argo CD's own cluster, where the child Applications live


def repo_path(fleet: Fleet, *parts: str) -> str:
    return normpath(join(fleet.gitops.path, *parts))


def flux(fleet: Fleet, cluster: Cluster, index: int) -> list[Manifest]:
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
    return [*out, Manifest(fleet_sync, ("clusters", index))]


def argocd(fleet: Fleet, cluster: Cluster, index: int) -> list[Manifest]:
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
    return [Manifest(project, ("gitops",)), Manifest(root, ("clusters", index))]


def argocd_children(fleet: Fleet, cluster: Cluster, index: int) -> list[Manifest]:
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
    return [*argocd_add_ons(fleet, index, name), Manifest(fleet_app, ("clusters", index))]


def flux_children(fleet: Fleet, cluster: Cluster, index: int) -> list[Manifest]:
    return flux_add_ons(fleet, index)


# engine -> (entry point folder, its objects, the platform folder's objects)
ENGINES: dict[str, tuple[str, GitOpsBuilder, GitOpsBuilder]] = {
    "flux": ("flux-system", flux, flux_children),
    "argocd": ("argocd", argocd, argocd_children),
}


def gitops_folders(fleet: Fleet, index: int) -> list[tuple[str, str, list[Manifest]]]:
    """(folder under clusters/<name>/, file name, objects): the entry point, then the platform folder if it has objects."""
    folder, entry, children = ENGINES[fleet.gitops.engine]
    cluster = fleet.clusters[index]
    platform = children(fleet, cluster, index)
    return [(folder, "sync.yaml", entry(fleet, cluster, index)), *([(PLATFORM_FOLDER, "platform.yaml", platform)] if platform else [])]


def entry_point(fleet: Fleet, index: int) -> list[Manifest]:
    """The GitOps objects that sync cluster `index`: its entry point and the platform folder it syncs first."""
    return [m for _, _, manifests in gitops_folders(fleet, index) for m in manifests]

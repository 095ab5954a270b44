"""The GitOps entry point of each cluster: Flux sync objects or Argo CD Applications.

These are applied once by hand (or by the engine's bootstrap) and then keep themselves in sync;
the cluster's own kustomization does not include them, so its objects never manage their syncer.
Kueue's CRDs and controller are synced first: a Flux `dependsOn`, or an Argo CD sync wave.
"""

from __future__ import annotations

from collections.abc import Callable
from posixpath import join, normpath

from fleetgen.model import Cluster, Fleet
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object

GitOpsBuilder = Callable[[Fleet, Cluster, int], list[Manifest]]


def repo_path(fleet: Fleet, *parts: str) -> str:
    return normpath(join(fleet.gitops.path, *parts))


def flux(fleet: Fleet, cluster: Cluster, index: int) -> list[Manifest]:
    ops, labels, ns = fleet.gitops, fleet_labels(fleet), "flux-system"
    source = {"kind": "GitRepository", "name": fleet.metadata.name}
    repository = k8s_object(
        "source.toolkit.fluxcd.io/v1",
        "GitRepository",
        fleet.metadata.name,
        labels,
        namespace=ns,
        spec={"interval": ops.interval, "url": ops.repository, "ref": {"branch": ops.branch}},
    )
    kueue = k8s_object(
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        "kueue",
        labels,
        namespace=ns,
        spec={
            "interval": ops.interval,
            "path": "./" + normpath(ops.kueue_path),
            "prune": True,
            "wait": True,  # CRDs established before anything that uses them
            "sourceRef": source,
        },
    )
    fleet_sync = k8s_object(
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        fleet.metadata.name,
        labels,
        namespace=ns,
        spec={
            "dependsOn": [{"name": "kueue"}],
            "interval": ops.interval,
            "path": "./" + repo_path(fleet, "clusters", cluster.name),
            "prune": True,
            "sourceRef": source,
        },
    )
    at = ("gitops",)
    return [Manifest(repository, at), Manifest(kueue, at + ("kueuePath",)), Manifest(fleet_sync, ("clusters", index))]


def argocd(fleet: Fleet, cluster: Cluster, index: int) -> list[Manifest]:
    ops, labels = fleet.gitops, fleet_labels(fleet)

    def application(name: str, path: str, namespace: str, wave: int, options: list[str]) -> dict[str, object]:
        return k8s_object(
            "argoproj.io/v1alpha1",
            "Application",
            name,
            labels,
            namespace="argocd",
            annotations={"argocd.argoproj.io/sync-wave": str(wave)},
            spec={
                "project": "default",
                "source": {"repoURL": ops.repository, "targetRevision": ops.branch, "path": path},
                "destination": {"name": cluster.name, "namespace": namespace},
                "syncPolicy": {"automated": {"prune": True, "selfHeal": True}, **({"syncOptions": options} if options else {})},
            },
        )

    # Kueue's CRDs exceed the client-side apply annotation limit, hence server-side apply.
    kueue = application(
        f"kueue-{cluster.name}", normpath(ops.kueue_path), "kueue-system", -1, ["CreateNamespace=true", "ServerSideApply=true"]
    )
    fleet_app = application(f"{fleet.metadata.name}-{cluster.name}", repo_path(fleet, "clusters", cluster.name), "default", 0, [])
    return [Manifest(kueue, ("gitops", "kueuePath")), Manifest(fleet_app, ("clusters", index))]


def entry_point(fleet: Fleet, index: int) -> list[Manifest]:
    """The GitOps objects that sync cluster `index` (Flux objects or Argo CD Applications)."""
    return ENGINES[fleet.gitops.engine][1](fleet, fleet.clusters[index], index)


ENGINES: dict[str, tuple[str, GitOpsBuilder]] = {
    "flux": ("flux-system", flux),
    "argocd": ("argocd", argocd),
}

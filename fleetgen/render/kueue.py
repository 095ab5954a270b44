"""Fleet-wide and cluster-wide scheduling objects: PriorityClasses, Kueue ResourceFlavors, ClusterQueues."""

from __future__ import annotations

from typing import Any

from fleetgen.errors import Path
from fleetgen.model import COMPONENTS, GPU_RESOURCE, Cluster, Fleet, NodePool
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object, quantity_value

KUEUE_API = "kueue.x-k8s.io/v1beta2"  # served since Kueue v0.15; v1beta1's `cohort` is `cohortName` here


def priority_classes(fleet: Fleet) -> list[Manifest]:
    out = []
    for i, pc in enumerate(fleet.priority_classes):
        body = k8s_object(
            "scheduling.k8s.io/v1",
            "PriorityClass",
            pc.name,
            fleet_labels(fleet),
            value=pc.value,
            globalDefault=pc.global_default,
            preemptionPolicy=pc.preemption_policy,
        )
        if pc.description:
            body["description"] = pc.description
        out.append(Manifest(body, ("priorityClasses", i)))
    return out


def _toleration(key: str, value: str, effect: str) -> dict[str, str]:
    if value:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def version_labels(fleet: Fleet, cluster: Cluster) -> dict[str, str]:
    """The cluster's compatibility-matrix row as labels, e.g. fleetgen/driver: 550.54.15."""
    versions = fleet.version_sets[cluster.version_set]
    return {f"fleetgen/{c}": str(getattr(versions, c)) for c in COMPONENTS}


def fleet_versions(fleet: Fleet, cluster: Cluster, at: Path) -> list[Manifest]:
    """A ConfigMap any controller or person on the cluster can read: which versions it should run."""
    data = {c.removeprefix("fleetgen/"): v for c, v in version_labels(fleet, cluster).items()}
    data |= {"cluster": cluster.name, "versionSet": cluster.version_set, "environment": cluster.environment, "region": cluster.region}
    body = k8s_object("v1", "ConfigMap", "fleet-versions", fleet_labels(fleet), namespace="kube-public", data=dict(sorted(data.items())))
    return [Manifest(body, at + ("versionSet",))]


def resource_flavors(fleet: Fleet, cluster: Cluster, at: Path) -> list[Manifest]:
    out = []
    for p, pool in enumerate(cluster.node_pools):
        spec: dict[str, Any] = {"nodeLabels": dict(sorted(pool.labels.items()))}
        if pool.taints:
            spec["tolerations"] = [_toleration(t.key, t.value, t.effect) for t in pool.taints]
        labels = {**fleet_labels(fleet), **version_labels(fleet, cluster), "fleetgen/gpu-model": pool.gpu_model}
        body = k8s_object(KUEUE_API, "ResourceFlavor", pool.name, labels, spec=spec)
        out.append(Manifest(body, at + ("nodePools", p)))
    return out


def _flavor_quota(pool: NodePool) -> dict[str, Any]:
    return {
        "name": pool.name,
        "resources": [
            {"name": "cpu", "nominalQuota": quantity_value(pool.cpu_per_node * pool.max_nodes)},
            {"name": "memory", "nominalQuota": quantity_value(pool.memory_per_node * pool.max_nodes)},
            {"name": GPU_RESOURCE, "nominalQuota": pool.gpus_per_node * pool.max_nodes},
        ],
    }


def cluster_queues(fleet: Fleet, cluster: Cluster, at: Path) -> list[Manifest]:
    """One ClusterQueue per queue; nominal quotas are the flavors' pools at their maximum size."""
    pools = {p.name: p for p in cluster.node_pools}
    out = []
    for q, queue in enumerate(cluster.queues):
        names = queue.flavors if queue.flavors is not None else tuple(pools)
        spec: dict[str, Any] = {"namespaceSelector": {}}
        if queue.cohort:
            spec["cohortName"] = queue.cohort
        spec["resourceGroups"] = [
            {"coveredResources": ["cpu", "memory", GPU_RESOURCE], "flavors": [_flavor_quota(pools[n]) for n in names]}
        ]
        spec["preemption"] = {
            "withinClusterQueue": queue.preemption.within_cluster_queue,
            "reclaimWithinCohort": queue.preemption.reclaim_within_cohort,
        }
        body = k8s_object(KUEUE_API, "ClusterQueue", queue.name, fleet_labels(fleet), spec=spec)
        out.append(Manifest(body, at + ("queues", q)))
    return out

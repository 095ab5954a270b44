"""Every layer of the quota stack on each cluster, as the operations chapter lists them, for the report.

"Azure subscription: regional vCPU quotas; AKS cluster: node pool scaling limits; namespace: ResourceQuota;
Kueue: ClusterQueue nominal quotas; team: LocalQueue admission. Miss any layer and you'll hit a wall."
Each cell is what the layer holds against what the layer above gives it: the cloud quota's vCPUs in use
by the account's pools in the region (checks/cloud_quota.py), the pools' GPUs at their largest size,
the teams' GPU quotas on the cluster, the queues' own (nominal) GPUs, and the GPU quotas of the teams
whose LocalQueues feed each queue against what that queue owns and may borrow.
"""

from typing import Any, NamedTuple

from fleetgen.checks.cloud_quota import quota_uses
from fleetgen.checks.entitlement import queue_gpus
from fleetgen.model import Fleet
from fleetgen.model.sharing import GPU

HEAD = [
    "Cluster",
    "Cloud quota (vCPUs in the region)",
    "Node pools (GPUs)",
    "Namespace quotas (GPUs)",
    "ClusterQueues nominal",
    "LocalQueues",
]


class ClusterLayers(NamedTuple):
    cluster: str
    cloud: tuple[tuple[str, int, int | None], ...]  # (account/region/family, vCPUs its pools can use, quota)
    pool_gpus: int
    namespace_gpus: int
    nominal_gpus: int
    local_queues: tuple[tuple[str, int, int], ...]  # (ClusterQueue, its teams' GPU quotas, GPUs it owns and may borrow)

    def cells(self) -> list[str]:
        cloud = "; ".join(f"{what} {used}/{limit if limit is not None else '?'}{_percent(used, limit)}" for what, used, limit in self.cloud)
        queues = "; ".join(f"{q} {quotas}/{room}" for q, quotas, room in self.local_queues)
        return [
            self.cluster,
            cloud or "not stated",
            str(self.pool_gpus),
            f"{self.namespace_gpus}/{self.pool_gpus}{_percent(self.namespace_gpus, self.pool_gpus)}",
            f"{self.nominal_gpus}/{self.pool_gpus}{_percent(self.nominal_gpus, self.pool_gpus)}",
            queues or "—",
        ]


def _percent(used: int, limit: int | None) -> str:
    return f" ({100 * used / limit:.0f}%)" if limit else ""


def quota_layers(fleet: Fleet) -> tuple[ClusterLayers, ...]:
    uses, _ = quota_uses(fleet)
    out = []
    for cluster in fleet.clusters:
        cloud = tuple(
            (f"{u.account}/{u.region}/{u.family}", u.vcpus, u.limit) for u in uses if any(c == cluster.name for c, _, _, _ in u.pools)
        )
        whole = [p for p in cluster.node_pools if p.partitioning.kind == "none"]
        queues = [queue_gpus(fleet, cluster, i) for i in range(len(cluster.queues))]
        namespaces = sum(t.quota_on(cluster.name).requests.gpu or 0 for _, t in fleet.placements[cluster.name])
        out.append(
            ClusterLayers(
                cluster.name,
                cloud,
                sum(p.max_nodes * p.gpus_per_node for p in whole),
                namespaces,
                sum(q.owned for q in queues),
                tuple((q.name, q.runnable, q.owned + q.borrowable) for q in queues if q.quotas),
            )
        )
    return tuple(out)


def layers_markdown(layers: tuple[ClusterLayers, ...]) -> list[str]:
    if not layers:
        return []
    lines = ["", "## Quota layers", "", f"Each layer's {GPU} (or the cloud's vCPUs) against the layer above it; a LocalQueue cell is its"]
    lines += ["teams' GPU quotas against what its ClusterQueue owns and may borrow.", ""]
    lines += ["| " + " | ".join(HEAD) + " |", "|---|---|---:|---:|---:|---|"]
    return lines + ["| " + " | ".join(layer.cells()) + " |" for layer in layers]


def layers_json(layers: tuple[ClusterLayers, ...]) -> list[dict[str, Any]]:
    return [
        {
            "cluster": layer.cluster,
            "cloud": [{"quota": what, "vcpus": used, "limit": limit} for what, used, limit in layer.cloud],
            "nodePoolGpus": layer.pool_gpus,
            "namespaceQuotaGpus": layer.namespace_gpus,
            "clusterQueueNominalGpus": layer.nominal_gpus,
            "localQueues": [{"clusterQueue": q, "teamQuotaGpus": quotas, "queueGpus": room} for q, quotas, room in layer.local_queues],
        }
        for layer in layers
    ]

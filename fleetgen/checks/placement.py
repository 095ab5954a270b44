"""Where a team's workloads land on a cluster: its queue named where the choice is ambiguous, CPU-only pools
as CPU-only pools, and a team without GPUs never fed to a queue that hands out GPU nodes.

A LocalQueue feeds one ClusterQueue. On a cluster with one queue the team's choice is obvious; with
several, silently taking the first put teams in queues meant for others, so the placement must say
(a deprecation until 0.2.0, checks/deprecations.py: earlier releases took the first).
Kueue gives a workload the first flavor of its queue with room: a CPU-only pod in a queue whose first
flavor is a GPU pool lands on GPU nodes and holds them, so a team without GPUs there gets no GPU pools.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleetgen.checks.deprecations import check_deprecations
from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import Fleet


def check_pool_kind(fleet: Fleet) -> Iterator[Finding]:
    """A pool with GPUs names their model; a CPU-only pool (gpusPerNode 0) names none: one that does is
    deprecated (checks/deprecations.py), since earlier releases needed a model on every pool."""
    for c, cluster in enumerate(fleet.clusters):
        for p, pool in enumerate(cluster.node_pools):
            here: FieldPath = ("clusters", c, "nodePools", p)
            if pool.gpus_per_node and pool.gpu_model is None:
                # fix: State the pool's gpuModel, or set gpusPerNode: 0 for a CPU-only pool
                yield Finding(here + ("gpusPerNode",), "a pool with GPUs needs gpuModel (T4, A100, H100 ...)")


def check_cpu_only_teams(fleet: Fleet) -> Iterator[Finding]:
    """A team whose GPU quota on a cluster is 0 feeds a queue without GPU pools, so none of its pods holds a GPU node."""
    clusters = {c.name: c for c in fleet.clusters}
    for t, team in enumerate(fleet.teams):
        for name, placement in team.clusters.items():
            cluster = clusters.get(name)
            if cluster is None or team.quota_on(name).requests.gpu != 0:
                continue
            queue = next((q for q in cluster.queues if q.name == team.queue_on(cluster)), None)
            if queue is None:
                continue  # an unknown queue is the reference check's finding
            flavors = queue.flavors if queue.flavors is not None else tuple(p.name for p in cluster.node_pools)
            gpu_pools = [p.name for p in cluster.node_pools if p.name in flavors and p.gpus_per_node]
            if gpu_pools:
                where: FieldPath = ("teams", t, "clusters", name) + (("queue",) if placement and placement.queue else ())
                yield Finding(
                    where,
                    f"team {team.name} has no GPUs on {name}, but its queue {queue.name} hands out GPU pools "
                    f"({', '.join(gpu_pools)}): Kueue would put its CPU-only pods on GPU nodes; give it a queue of CPU-only pools",
                    Severity.WARNING,
                )


PLACEMENT_CHECKS = (check_pool_kind, check_deprecations, check_cpu_only_teams)

"""A driver step on clusters whose GPU Operator manages the driver per node pool moves pools, not clusters.

Where a cluster runs one NVIDIADriver per GPU pool (compat/pool_drivers.py), a new driver of its version set reaches
one pool first: the pool the fleet marks `driver.canary`, else the smallest by GPUs. That pool soaks in its own wave
(it runs the driver as its own, `driver.version`, until then) before the cluster's wave moves the rest. A pool pinned
to a driver of its own keeps it and is not moved; a step that also moves the GPU Operator release is one Helm upgrade
of the whole cluster, and a cluster whose node images carry the driver moves by its images: both keep the cluster as
the unit, as on the ClusterPolicy path.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from fleetgen.compat.pool_drivers import driver_crd_on, gpu_pools, pool_policy, rollover, upgrade_budget
from fleetgen.model import Cluster, Fleet, NodePool, Version


@dataclass(frozen=True)
class PoolMove:
    """One GPU pool a driver wave moves, and what that does to the work on it."""

    cluster: str
    pool: str
    nodes: int  # the pool's most nodes: every one of them gets the new driver
    gpus: int
    queues: tuple[str, ...]  # the ClusterQueues that hand out the pool's capacity: their running work is drained
    drain: bool  # false: the node is not drained, only its GPU pods are deleted
    parallel: int  # nodes upgraded at the same time (upgradePolicy.maxParallelUpgrades)
    budget: datetime.timedelta | None  # the most its upgrade policy lets the move take; None: it waits for running jobs

    @property
    def ref(self) -> str:
        return f"{self.cluster}/{self.pool}"

    @property
    def text(self) -> str:
        work = f"drains the running work of {', '.join(self.queues)}" if self.queues else "no queue hands out its GPUs"
        return f"{self.ref} ({self.gpus} GPUs): {rollover(self.nodes, self.drain, self.parallel, self.budget)}; {work}"


def moving_pools(cluster: Cluster) -> list[NodePool]:
    """The GPU pools a new driver of the cluster's version set moves: those without a driver of their own."""
    return [pool for pool in gpu_pools(cluster) if pool.driver.version is None]


def canary_pool(pools: list[NodePool]) -> NodePool:
    """The fleet's choice (the pool marked `driver.canary`: validate refuses a second), else the smallest by GPUs, the
    first of equals."""
    marked = next((pool for pool in pools if pool.driver.canary), None)
    return marked or min(pools, key=lambda pool: pool.gpus_per_node * pool.max_nodes)


def moves_by_pool(fleet: Fleet, cluster: Cluster, step: tuple[tuple[str, Version], ...]) -> bool:
    """Whether this step moves the cluster pool by pool: the driver alone, per-pool NVIDIADrivers, two pools or more."""
    return tuple(component for component, _ in step) == ("driver",) and driver_crd_on(fleet, cluster) and len(moving_pools(cluster)) > 1


def pool_move(fleet: Fleet, cluster: Cluster, pool: NodePool) -> PoolMove:
    policy = pool_policy(fleet, cluster, pool)
    queues = tuple(q.name for q in cluster.queues if q.flavors is None or pool.name in q.flavors)
    return PoolMove(
        cluster.name,
        pool.name,
        pool.max_nodes,
        pool.gpus_per_node * pool.max_nodes,
        queues,
        policy.drain.enabled,
        policy.max_parallel_upgrades,
        upgrade_budget(fleet, cluster, pool),
    )


def pool_moves(fleet: Fleet, cluster: Cluster, canary: bool | None) -> tuple[PoolMove, ...]:
    """The moves of the cluster's moving pools: only its canary (True), all but it (False), or all (None)."""
    pools = moving_pools(cluster)
    first = canary_pool(pools) if pools else None
    chosen = [p for p in pools if canary is None or (p is first) == canary]
    return tuple(pool_move(fleet, cluster, pool) for pool in chosen)

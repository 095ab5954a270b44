"""What a change does to the GPU nodes of pools with a driver of their own resource (one NVIDIADriver per pool).

"driver 580.173.02 -> 610.57.04 on pool h100-ondemand of training-eastus: 16 nodes drain, 2 at a time, up to ~101h
by its upgrade policy": a new driver version makes the GPU Operator replace the driver on every node of the pool,
draining each (or only deleting its GPU pods where the policy's drain is off), as many at once as the policy allows.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleetgen.compat.pool_drivers import driver_crd_on, pool_driver, pool_policy, upgrade_budget
from fleetgen.model import Cluster, Fleet
from fleetgen.review.change import Change


def pool_drivers(base: Fleet, a: Cluster, head: Fleet, b: Cluster, production: bool) -> Iterator[Change]:
    """One change for each GPU pool of `b` whose driver moves, on a cluster whose operator manages it per pool; and
    the switch to one NVIDIADriver per pool, with a warning where it comes with a new operator release."""
    if driver_crd_on(head, b) and not driver_crd_on(base, a):
        yield _switch(base, a, head, b, production)
    if not driver_crd_on(head, b) or not driver_crd_on(base, a):
        return
    old = {p.name: p for p in a.node_pools}
    index = next(i for i, c in enumerate(head.clusters) if c.name == b.name)
    for number, pool in enumerate(b.node_pools):
        if not pool.gpus_per_node or pool.name not in old or not old[pool.name].gpus_per_node:
            continue
        was, now = pool_driver(base, a, old[pool.name]), pool_driver(head, b, pool)
        if was == now:
            continue
        policy = pool_policy(head, b, pool)
        how = "drain" if policy.drain.enabled else "have their GPU pods deleted, no drain"
        budget = upgrade_budget(head, b, pool)
        took = f"up to ~{budget.total_seconds() / 3600:.0f}h by its upgrade policy" if budget else "no bound: it waits for running jobs"
        text = (
            f"driver {was} -> {now} on pool {pool.name} of {b.name}: {pool.max_nodes} nodes {how}, "
            f"{policy.max_parallel_upgrades} at a time, {took}"
        )
        at = ("clusters", index, "nodePools", number)
        yield Change("versions", text, cluster=b.name, field="driver", old=str(was), new=str(now), production=production, path=at)


def _switch(base: Fleet, a: Cluster, head: Fleet, b: Cluster, production: bool) -> Change:
    """The move from the ClusterPolicy's driver to one NVIDIADriver per pool takes two Helm upgrades: in one that
    also changes the release, the old controller removes the driver pods before the new one owns them."""
    was, now = base.platform_of(a).gpu_operator.version, head.platform_of(b).gpu_operator.version
    text = f"cluster {b.name}: the GPU Operator manages the driver with one NVIDIADriver per pool (driverCrd)"
    warning = None
    if was != now:
        warning = (
            f"cluster {b.name}: this change moves the GPU Operator {was} -> {now} and turns driverCrd on at once; the old "
            f"controller would remove the driver pods before the new one owns them: split it, first the release with "
            f"driverCrd false, then, once {now} runs, driverCrd true"
        )
    return Change("versions", text, cluster=b.name, field="driverCrd", production=production, warning=warning)

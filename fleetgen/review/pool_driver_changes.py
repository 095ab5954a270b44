"""What a change does to the GPU nodes of pools with a driver of their own resource (one NVIDIADriver per pool).

"driver 580.173.02 -> 610.57.04 on pool h100-ondemand of training-eastus: 16 nodes drain, 2 at a time, up to ~101h
by its upgrade policy": a new driver version makes the GPU Operator replace the driver on every node of the pool,
draining each (or only deleting its GPU pods where the policy's drain is off), as many at once as the policy allows.
A change of only the driver pods' labels or annotations (the pool's `driver.podLabels`, `driver.podAnnotations`)
changes the pod template's metadata alone, which GPU Operator v26.7 applies by restarting each driver pod in place,
with no drain: the line says so instead.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleetgen.compat.pool_drivers import driver_crd_at, driver_crd_on, gpu_pools, pool_driver, pool_policy, rollover, upgrade_budget
from fleetgen.errors import FieldPath, Finding
from fleetgen.model import Cluster, Fleet, NodePool
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
        at = ("clusters", index, "nodePools", number)
        if was == now:
            yield from _pod_metadata(old[pool.name], pool, b, production, at)
            continue
        policy = pool_policy(head, b, pool)
        moves = rollover(pool.max_nodes, policy.drain.enabled, policy.max_parallel_upgrades, upgrade_budget(head, b, pool))
        text = f"driver {was} -> {now} on pool {pool.name} of {b.name}: {moves}"
        yield Change("versions", text, cluster=b.name, field="driver", old=str(was), new=str(now), production=production, path=at)


def _pod_metadata(old: NodePool, pool: NodePool, b: Cluster, production: bool, at: FieldPath) -> Iterator[Change]:
    """The driver pods' labels or annotations alone changed on a pool whose driver stays: an in-place restart."""
    changed = [
        words
        for words, x, y in (
            ("labels", old.driver.pod_labels, pool.driver.pod_labels),
            ("annotations", old.driver.pod_annotations, pool.driver.pod_annotations),
        )
        if x != y
    ]
    if changed:
        text = (
            f"driver pod {' and '.join(changed)} on pool {pool.name} of {b.name}: in-place restart, no drain "
            f"({_driver_pods_restart(pool.max_nodes)} with the new metadata)"
        )
        yield Change("node-pool", text, cluster=b.name, field=pool.name, production=production, path=at + ("driver",))


def _switch(base: Fleet, a: Cluster, head: Fleet, b: Cluster, production: bool) -> Change:
    """The move from the ClusterPolicy's driver to one NVIDIADriver per pool takes two Helm upgrades: in one that
    also changes the release, the old controller removes the driver pods before the new one owns them. A pull
    request that does both is refused at the driverCrd it turns on; split, each half passes."""
    was, now = base.platform_of(a).gpu_operator.version, head.platform_of(b).gpu_operator.version
    text = f"cluster {b.name}: the GPU Operator manages the driver with one NVIDIADriver per pool (driverCrd)"
    at = driver_crd_at(next(i for i, c in enumerate(head.clusters) if c.name == b.name), b)
    refusal = None
    if was != now and gpu_pools(b):  # without GPU nodes no driver pod is lost
        refusal = Finding(
            at,
            f"turns driverCrd on for {b.name} in the same pull request that moves its GPU Operator {was} -> {now}: the old "
            f"controller would remove the driver pods before the new one owns them; split it into two pull requests, first "
            f"the release with driverCrd false, then, once {now} runs, driverCrd true",
        )
    return Change("versions", text, cluster=b.name, field="driverCrd", production=production, refusal=refusal, path=at)


def _driver_pods_restart(nodes: int) -> str:
    return "the driver pod of its one node restarts" if nodes == 1 else f"the driver pods of its {nodes} nodes restart"

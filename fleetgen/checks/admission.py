"""What a node, a node pool and a Kueue queue can take of one workload: the arithmetic `job new` refuses by.

A node's stated allocatable (cpuPerNode, memoryPerNode) is not all a workload gets: the DaemonSets
every node runs (the GPU Operator's driver, device plugin, feature discovery and DCGM exporter, the
CNI, kube-proxy, CSI drivers, log and metric agents) request part of it first. SYSTEM_RESERVE is
what fleetgen keeps for them on each node; a pod's CPU and memory come from the rest (`room`).

Kueue gives every pod of a workload's pod set one flavor (node pool), so a job fits a pool when the
pool's nodes hold all its pods and the queue may admit the whole job in that one flavor: its nominal
quota there plus what it may borrow from its cohort.
"""

from fractions import Fraction
from typing import NamedTuple

from fleetgen.checks.sharing import lendable
from fleetgen.compat.partitioning import nominal
from fleetgen.model import Cluster, NodePool
from fleetgen.model.sharing import GPU, RESOURCES

GiB = 1024**3
SYSTEM_RESERVE: dict[str, Fraction] = {"cpu": Fraction(1), "memory": Fraction(4 * GiB)}
"""CPU and memory kept on every node for system DaemonSets; documented in docs/reference/jobs.md."""


class PodSize(NamedTuple):
    """One pod's requests (equal to its limits): GPUs, CPU in cores, memory in bytes."""

    gpus: int  # of `resource`: whole GPUs, or MIG slices or shared GPUs (jobs/slice_asks.py)
    cpu: Fraction
    memory: Fraction
    resource: str = GPU

    def amount(self, resource: str) -> Fraction:
        return {"cpu": self.cpu, "memory": self.memory, self.resource: Fraction(self.gpus)}.get(resource, Fraction(0))


def room(pool: NodePool, resource: str) -> Fraction:
    """What one node of `pool` offers a workload of `resource` after the system reserve (GPUs: all of them)."""
    if resource == GPU:
        return Fraction(pool.gpus_per_node)
    stated = pool.cpu_per_node.value if resource == "cpu" else pool.memory_per_node.value
    return max(Fraction(0), stated - SYSTEM_RESERVE[resource])


def share(pool: NodePool, resource: str, gpus: int) -> Fraction:
    """A pod's share of one node's room: GPUs / gpusPerNode of it, or the whole room for a pod without GPUs."""
    whole = room(pool, resource)
    return whole * gpus / pool.gpus_per_node if gpus and pool.gpus_per_node else whole


def pods_per_node(pool: NodePool, pod: PodSize) -> int:
    """How many such pods one node of `pool` holds side by side."""
    counts = []
    for resource in RESOURCES:
        need = pod.amount(resource)
        if need:
            counts.append(int(room(pool, resource) // need))
    return min(counts) if counts else 0


def node_limit(pool: NodePool, pod: PodSize) -> str:
    """Which of a node's resources holds fewest such pods, in words: "8 GPUs", "63 CPU after the 1 CPU reserve"."""
    best: tuple[int, str] | None = None
    for resource in RESOURCES:
        need = pod.amount(resource)
        if not need:
            continue
        count = int(room(pool, resource) // need)
        if resource == GPU:
            words = f"{pool.gpus_per_node} GPUs"
        elif resource == "cpu":
            words = f"{show(resource, room(pool, resource))} CPU after the {show(resource, SYSTEM_RESERVE[resource])} CPU reserve"
        else:
            words = f"{show(resource, room(pool, resource))} memory after the {show(resource, SYSTEM_RESERVE[resource])} reserve"
        if best is None or count < best[0]:
            best = (count, words)
    return best[1] if best else "nothing"


def queue_room(cluster: Cluster, queue: int, pool: NodePool, resource: str) -> tuple[Fraction, Fraction]:
    """(nominal quota, most it may borrow) of ClusterQueue `queue` in flavor `pool`: Kueue admits no workload above the sum."""
    owner = cluster.queues[queue]
    own = nominal(pool, owner.nominal_quota.get(pool.name), resource)
    if not owner.cohort:
        return own, Fraction(0)
    can = lendable(cluster, queue, pool.name, resource)
    limit = owner.borrowing_limit[pool.name].amount(resource) if pool.name in owner.borrowing_limit else None
    return own, can if limit is None else min(limit, can)


def show(resource: str, value: Fraction) -> str:
    """An amount as a person reads it: 63, 1.5 (CPU), 252Gi, 1500Mi (memory)."""
    if resource == "memory":
        for suffix, unit in (("Gi", GiB), ("Mi", 1024**2)):
            if value and value % unit == 0:
                return f"{value // unit}{suffix}"
        return f"{float(value / 1024**2):.0f}Mi"
    return str(int(value)) if value.denominator == 1 else f"{float(value):g}"

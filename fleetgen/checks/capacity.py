"""The capacity model: what each node pool yields and what the queues, cohorts and quotas guarantee of it.

A pool at its largest has `maxNodes x gpusPerNode` physical GPUs. Kubernetes counts them as the extended
resources the pool yields (fleetgen.compat.partitioning.per_gpu): whole GPUs (`nvidia.com/gpu`), time-sliced
shares (replicas: `nvidia.com/gpu` or `nvidia.com/gpu.shared`) or MIG slices (`nvidia.com/mig-<profile>`).
Rules and cost compare GPU-equivalents: a share is 1/replicas of its GPU, a MIG slice its compute slices
over its layout's (1g.10gb of all-1g.10gb: 1/7). The quota-sum and flavor checks, the change summary and its
approval rules, and the capacity report all count here, so they cannot disagree.
"""

from collections.abc import Iterator
from fractions import Fraction
from typing import Literal, NamedTuple

from fleetgen.compat.partitioning import nominal, per_gpu, pool_yield, share_of_gpu
from fleetgen.errors import FieldPath, Finding
from fleetgen.model import GPU_RESOURCE, Cluster, Fleet, NodePool
from fleetgen.model.partitioning import slice_resource
from fleetgen.model.sharing import pool_total
from fleetgen.model.team import Requests

HOURS_PER_MONTH = 730
PoolKind = Literal["cpu-only", "whole", "time-sliced", "mig"]


def pool_kind(pool: NodePool) -> PoolKind:
    """How the pool hands out its GPUs: none, whole, time-sliced shares or MIG slices."""
    if not pool.gpus_per_node:
        return "cpu-only"
    if pool.partitioning.mig is not None:
        return "mig"
    return "time-sliced" if pool.partitioning.time_slicing is not None else "whole"


class PoolCapacity(NamedTuple):
    """One pool at its largest: physical GPUs, and what Kubernetes counts of them."""

    pool: str
    kind: PoolKind
    nodes: int
    gpus: int  # physical GPUs, whatever they are cut into
    units: dict[str, int]  # extended resource -> count: nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-1g.10gb

    @property
    def whole_gpus(self) -> int:
        """Physical GPUs a pod gets whole (the pool neither time-slices nor cuts them)."""
        return self.gpus if self.kind == "whole" else 0

    @property
    def shares(self) -> int:
        """Time-sliced replicas the pool hands out (each a turn on a GPU, not a GPU)."""
        return sum(self.units.values()) if self.kind == "time-sliced" else 0

    @property
    def slices(self) -> int:
        """MIG slices the pool hands out."""
        return sum(self.units.values()) if self.kind == "mig" else 0


def pool_capacity(pool: NodePool) -> PoolCapacity:
    units = pool_yield(pool) if pool.gpus_per_node else {}
    return PoolCapacity(pool.name, pool_kind(pool), pool.max_nodes, pool.max_nodes * pool.gpus_per_node, units)


def pool_amount(pool: NodePool, resource: str) -> Fraction:
    """The pool at its largest in one resource as Kubernetes counts it: its CPU or memory, or the GPUs, shares or
    slices it advertises (a time-sliced pool's nvidia.com/gpu are its replicas)."""
    if resource in ("cpu", "memory"):
        return pool_total(pool, resource)
    return Fraction(pool_capacity(pool).units.get(resource, 0))


def equivalents(pool: NodePool, resource: str, count: Fraction | int) -> Fraction:
    """`count` units of `resource` of `pool` in GPUs: a share 1/replicas, a MIG slice its share of the layout.
    A resource the pool does not yield counts whole (an nvidia.com/gpu quota names whole GPUs unless a pool cuts them)."""
    return Fraction(count) * (share_of_gpu(pool, resource) if resource in per_gpu(pool) else 1)


def unit_equivalent(cluster: Cluster, resource: str) -> Fraction:
    """One unit of `resource` on `cluster` in GPUs: the average over the pools yielding it, weighted by what each
    yields; 1 for nvidia.com/gpu where whole GPUs exist or nothing yields it (the larger reading, for approvals)."""
    yielding = [(p, n) for p in cluster.node_pools for r, n in pool_yield(p).items() if r == resource and p.gpus_per_node]
    if resource == GPU_RESOURCE and any(pool_kind(p) == "whole" for p, _ in yielding):
        return Fraction(1)
    total = sum(n for _, n in yielding)
    if not total:
        return Fraction(1)
    return sum((n * share_of_gpu(p, resource) for p, n in yielding), Fraction(0)) / total


def requests_equivalents(cluster: Cluster | None, requests: Requests) -> Fraction:
    """A team's GPU and slice quota on `cluster` in GPU-equivalents (28 mig-1g.10gb of all-1g.10gb A100s: 4).
    Without the cluster (a team placed on an unknown one) every unit counts whole."""
    units = {GPU_RESOURCE: requests.gpu or 0, **{slice_resource(n): c for n, c in requests.slices.items()}}
    if cluster is None:
        return Fraction(sum(units.values()))
    return sum((count * unit_equivalent(cluster, resource) for resource, count in units.items() if count), Fraction(0))


class Claim(NamedTuple):
    """Part of a pool a ClusterQueue or Cohort guarantees (its nominal quota) of one resource."""

    owner: str  # "queue gpu-cluster-queue", "cohort training"
    path: FieldPath
    amount: Fraction
    stated: bool  # False: the queue names no nominal quota for the pool, so it owns all of it


def claims(cluster: Cluster, c: int) -> dict[tuple[str, str], list[Claim]]:
    """(pool, resource) -> what each ClusterQueue and Cohort of cluster `c` owns of the pool's GPU resources."""
    pools = {p.name: p for p in cluster.node_pools}
    out: dict[tuple[str, str], list[Claim]] = {}
    for q, queue in enumerate(cluster.queues):
        flavors = queue.flavors if queue.flavors is not None else tuple(pools)
        for f, flavor in enumerate(flavors):
            pool = pools.get(flavor)
            if pool is None or not pool.gpus_per_node:
                continue
            given = queue.nominal_quota.get(flavor)
            for resource in per_gpu(pool):
                stated = given is not None and given.amount(resource) is not None
                where: FieldPath = ("clusters", c, "queues", q)
                where += ("nominalQuota", flavor) if given is not None else ("flavors", f) if queue.flavors is not None else ()
                amount = nominal(pool, given, resource)
                out.setdefault((flavor, resource), []).append(Claim(f"queue {queue.name}", where, amount, stated))
    for k, cohort in enumerate(cluster.cohorts):
        for flavor, given in cohort.nominal_quota.items():
            pool = pools.get(flavor)
            for resource in per_gpu(pool) if pool is not None and pool.gpus_per_node else ():
                held = given.amount(resource)
                if held:
                    where = ("clusters", c, "cohorts", k, "nominalQuota", flavor)
                    out.setdefault((flavor, resource), []).append(Claim(f"cohort {cohort.name}", where, held, True))
    return out


def _count(value: Fraction) -> str:
    return str(int(value)) if value.denominator == 1 else f"{float(value):g}"


def check_flavor_quotas(fleet: Fleet) -> Iterator[Finding]:
    """Per cluster, pool and resource, the nominal quotas of all ClusterQueues and Cohorts fit what the pool yields
    (times capacity.gpuOvercommit): a nominal quota is a guarantee, and two queues cannot both own one GPU."""
    ratio = Fraction(fleet.capacity.gpu_overcommit or 1.0)
    for c, cluster in enumerate(fleet.clusters):
        pools = {p.name: p for p in cluster.node_pools}
        for (flavor, resource), owners in claims(cluster, c).items():
            total = sum((o.amount for o in owners), Fraction(0))
            have = pool_yield(pools[flavor]).get(resource, 0)
            if total <= have * ratio:
                continue
            # point at the owner that did not say how much it owns (the likeliest slip), else the largest
            culprit = next((o for o in reversed(owners) if not o.stated), max(owners, key=lambda o: o.amount))
            each = ", ".join(f"{o.owner} {_count(o.amount)}" + ("" if o.stated else " (all of it: no nominalQuota)") for o in owners)
            pool = pools[flavor]
            allowed = f" x overcommit {float(ratio):g}" if ratio != 1 else ""
            fix = "state each queue's nominalQuota for the pool" if any(not o.stated for o in owners) else "lower the nominal quotas"
            hint = f"; {fix}" + ("" if fleet.capacity.gpu_overcommit else ", or set capacity.gpuOvercommit")
            # fix: State each queue's nominalQuota for the pool so that they add up to what it yields, raise maxNodes, or set
            #   capacity.gpuOvercommit
            yield Finding(
                culprit.path,
                f"the nominal quotas on {cluster.name} guarantee {_count(total)} {resource} of {flavor} ({each}), above the "
                f"{have}{allowed} it yields ({pool.max_nodes} x {pool.gpus_per_node} {pool.gpu_model}{_cut(pool, resource)}){hint}",
            )


def _cut(pool: NodePool, resource: str) -> str:
    """What one GPU of the pool becomes, when not itself: " x 4 replicas", " x 7 mig-1g.10gb"."""
    kind = pool_kind(pool)
    if kind == "whole":
        return ""
    count = per_gpu(pool)[resource]
    return f" x {count} replicas" if kind == "time-sliced" else f" x {count} {resource.removeprefix('nvidia.com/')}"


def check_disjoint_flavors(fleet: Fleet) -> Iterator[Finding]:
    """No pool's labels satisfy another pool's ResourceFlavor: Kueue would place a workload admitted to one flavor on
    the other's nodes (a whole-GPU job on time-shared GPUs, or a MIG job where there is no MIG). A partitioned pool
    always carries the label that selects its configuration (checks.partitioning), so only a pool whose labels hold
    all of another's can be selected by it."""
    for c, cluster in enumerate(fleet.clusters):
        for p, pool in enumerate(cluster.node_pools):
            mine = set(pool.labels.items())
            for o, other in enumerate(cluster.node_pools):
                theirs = set(other.labels.items())
                if o == p or not theirs <= mine:
                    continue
                if theirs == mine:
                    if o < p:  # identical sets: once, at the later pool
                        # fix: Give one of the two pools a label the other's nodes lack
                        yield Finding(
                            ("clusters", c, "nodePools", p, "labels"),
                            f"same labels as node pool {other.name!r}: Kueue could not tell them apart",
                        )
                    continue
                yield Finding(
                    ("clusters", c, "nodePools", p, "labels"),
                    f"node pool {pool.name}'s labels include all of {other.name}'s ({_labels(theirs)}): ResourceFlavor {other.name} "
                    f"also selects {pool.name}'s nodes, so Kueue may run a workload admitted to {other.name} ({pool_kind(other)} GPUs) on "
                    f"{pool.name} ({pool_kind(pool)} GPUs); give {other.name} a label {pool.name}'s nodes lack",
                )


def _labels(items: set[tuple[str, str]]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(items))


def gpu_hour_price(fleet: Fleet, pool: NodePool) -> float | None:
    """One GPU of the pool for one hour: pricing.gpuHour, else its VM's pricing.nodeHour over its GPUs; None for a CPU-only pool."""
    if not pool.gpus_per_node:
        return None
    if pool.vm_size in fleet.pricing.gpu_hour:
        return fleet.pricing.gpu_hour[pool.vm_size]
    node = fleet.pricing.node_hour.get(pool.vm_size)
    return None if node is None else node / pool.gpus_per_node


def node_hour_price(fleet: Fleet, pool: NodePool) -> float | None:
    """One node of the pool for one hour: pricing.nodeHour; a GPU pool's GPU-hour x its GPUs; a CPU-only VM's
    pricing.gpuHour entry (a VM with 0 GPUs has no GPU-hour, so its entry is taken as the node's)."""
    if pool.vm_size in fleet.pricing.node_hour:
        return fleet.pricing.node_hour[pool.vm_size]
    price = fleet.pricing.gpu_hour.get(pool.vm_size)
    if price is None:
        return None
    return price * pool.gpus_per_node if pool.gpus_per_node else price


def pool_monthly_cost(fleet: Fleet, pool: NodePool) -> float | None:
    """The pool at its largest for a month (730 hours); None without a price for its VM size."""
    price = node_hour_price(fleet, pool)
    return None if price is None else price * pool.max_nodes * HOURS_PER_MONTH


CAPACITY_CHECKS = (check_flavor_quotas, check_disjoint_flavors)

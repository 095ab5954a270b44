"""Sharing GPUs between teams on one cluster: Kueue queues, cohorts, borrowing and lending, Volcano.

A queue's nominal quota is, per flavor (node pool), the pool at its maximum size unless the queue
says otherwise; a count of GPUs or slices alone brings the same share of the pool's CPU and memory (what
one unit is, a replica or a MIG slice, is worked out in fleetgen.compat.partitioning). Cross-checks
(borrowing the cohort cannot lend, cohort cycles, Kueue and Volcano on the same pools) live in
fleetgen.checks.sharing.
"""

from fractions import Fraction
from typing import Annotated, Literal

from pydantic import Field

from fleetgen.model.node_pool import NodePool
from fleetgen.model.partitioning import SliceCounts
from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Int, unique_by
from fleetgen.model.types import DnsLabel, DnsSubdomain, Quantity

GPU = "nvidia.com/gpu"
RESOURCES = ("cpu", "memory", GPU)  # the resources every queue and cohort covers, in this order
FIELDS = {"cpu": "cpu", "memory": "memory", GPU: "gpu"}  # resource -> field of FlavorResources


class FlavorResources(Spec):
    """Amounts of one flavor (node pool); a resource left out is not limited by this entry."""

    gpu: Int | None = Field(default=None, ge=0)
    """GPUs (nvidia.com/gpu)."""
    cpu: Quantity | None = None
    """CPU, e.g. 64."""
    memory: Quantity | None = None
    """Memory, e.g. 256Gi."""
    slices: SliceCounts = {}
    """Partitioned GPUs of a partitioned pool by resource name (mig-1g.10gb, gpu.shared); the pool's whole yield when left out."""

    def amount(self, resource: str) -> Fraction | None:
        if resource not in FIELDS:  # a slice: nvidia.com/mig-1g.10gb
            count = self.slices.get(resource.removeprefix("nvidia.com/"))
            return None if count is None else Fraction(count)
        value = getattr(self, FIELDS[resource])
        return None if value is None else Fraction(value) if isinstance(value, int) else value.value


PerFlavor = dict[DnsLabel, FlavorResources]


class BorrowWithinCohort(Spec):
    policy: Literal["Never", "LowerPriority"] = "Never"
    """LowerPriority: a workload that must borrow may preempt lower-priority workloads of other queues in the cohort."""
    max_priority_threshold: Int | None = None
    """Only workloads at or below this priority may be preempted so that another can borrow."""


class Preemption(Spec):
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "LowerPriority"
    """Whether a pending workload may preempt lower-priority workloads of its own queue."""
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    """Whether a queue may preempt borrowers in its cohort to take back its own quota."""
    borrow_within_cohort: BorrowWithinCohort | None = None
    """Preempting in the cohort in order to borrow (classic preemption only: Kueue ignores it under fair sharing)."""


class FlavorFungibility(Spec):
    """How Kueue walks a queue's flavors when the first choice is full."""

    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] | None = None
    """MayStopSearch: borrow in this flavor; TryNextFlavor: first look for a flavor that fits without borrowing."""
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] | None = None
    """MayStopSearch: preempt in this flavor; TryNextFlavor: first look for a flavor that fits without preempting."""
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None
    """Which to prefer when every flavor needs one of them (needs both whenCan... set to TryNextFlavor)."""


class Queue(Spec):
    name: DnsSubdomain = "gpu-cluster-queue"
    """Name of the Kueue ClusterQueue."""
    flavors: Annotated[tuple[DnsLabel, ...], unique_by()] | None = None
    """Node pools whose capacity the queue hands out, in order of preference; all pools when left out."""
    cohort: DnsSubdomain | None = None
    """Kueue cohort for borrowing unused quota between queues."""
    preemption: Preemption = Preemption()
    """Kueue preemption policy of the queue."""
    nominal_quota: PerFlavor = {}
    """What the queue owns of each flavor; a flavor left out is the whole pool; GPUs or slices alone bring their share of CPU and memory."""
    borrowing_limit: PerFlavor = {}
    """Most the queue may borrow from its cohort beyond its nominal quota, per flavor and resource; unlimited when left out."""
    lending_limit: PerFlavor = {}
    """Most of its nominal quota the queue lends to its cohort, per flavor and resource; all of it when left out."""
    fair_sharing_weight: Quantity | None = None
    """Kueue fair sharing weight (when fair sharing is on): a queue of weight 2 gets twice the share of unused quota of one of weight 1."""
    flavor_fungibility: FlavorFungibility | None = None
    """Whether to borrow or preempt in a flavor before trying the next one."""
    admits: Literal["placed-teams", "any-namespace"] = "placed-teams"
    """placed-teams: the queue's namespaceSelector admits only the namespaces of the teams placed on it; any-namespace: every namespace."""


class Cohort(Spec):
    """A Kueue Cohort: a group of queues (and child cohorts) that lend each other unused quota."""

    name: DnsSubdomain
    """Cohort name; queues join it with `cohort`."""
    parent: DnsSubdomain | None = None
    """Parent cohort (hierarchical cohorts): this cohort borrows from and lends to it."""
    nominal_quota: PerFlavor = {}
    """Quota the cohort itself holds for its members to share, per flavor; none when left out."""
    borrowing_limit: PerFlavor = {}
    """Most the cohort may borrow from its parent, per flavor and resource."""
    lending_limit: PerFlavor = {}
    """Most the cohort lends to its parent, per flavor and resource."""
    fair_sharing_weight: Quantity | None = None
    """Kueue fair sharing weight of the cohort among its parent's members."""


class Volcano(Spec):
    """Volcano as the cluster's gang scheduler: one Volcano Queue per team on the cluster."""

    node_pools: Annotated[tuple[DnsLabel, ...], unique_by()] | None = None
    """Node pools Volcano schedules on; Kueue queues may not hand out these pools. All pools when left out."""
    weights: dict[DnsLabel, Int] = {}
    """Share of each team's Volcano queue under contention, by team name (1-65535); 1 when left out."""
    reclaimable: Bool = True
    """Whether other queues may reclaim resources a team's queue uses beyond its guarantee."""
    guarantees: dict[DnsLabel, FlavorResources] = {}
    """What each team's Volcano queue reserves on Volcano's pools (its guarantee), by team name; none when left out, and the
    queue gets its weight's share of what is free. Together they must fit Volcano's pools, each within the team's quota."""

    def weight_of(self, team: str) -> int:
        """The weight of team `team`'s Volcano queue: its own, else 1."""
        return self.weights.get(team, 1)


TRAINING = "training"  # the purpose of a training Job, beside the SLO tiers of inference
NOTEBOOKS = "notebooks"  # the purpose of a JupyterHub notebook (render/notebooks.py)


class Scheduling(Spec):
    workload_priority_classes: Bool = True
    """Render a Kueue WorkloadPriorityClass beside every priority class (same name and value): Kueue orders workloads by it."""
    default_priority_classes: dict[DnsLabel, DnsLabel] = {}
    """The priority class `job new` gives a workload that names none, by purpose: `training`, `notebooks` (JupyterHub's
    notebook profiles), or an SLO tier for inference
    (real-time, near-real-time, batch or one of slo.tiers). A team that may not use it gets the nearest class below it that
    it may use. Without an entry training gets the team's lowest allowed class and inference its highest."""


def pool_total(pool: NodePool, resource: str) -> Fraction:
    """The pool at its maximum size, for one resource."""
    per_node = {"cpu": pool.cpu_per_node.value, "memory": pool.memory_per_node.value, GPU: Fraction(pool.gpus_per_node)}
    return per_node[resource] * pool.max_nodes

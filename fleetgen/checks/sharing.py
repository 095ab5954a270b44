"""Checks of how teams share a cluster's GPUs: Kueue cohorts, borrowing and lending, Volcano's pools.

Each yields findings by fleet.yaml path, like fleetgen.checks.fleet (which runs them). What a queue may
borrow is bounded by what the rest of its cohort tree can lend: every other queue's lending limit
(its nominal quota where it sets none) plus the cohorts' own quotas, for the same flavor and resource.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from fleetgen.checks.capacity import pool_amount
from fleetgen.compat.partitioning import nominal
from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import Cluster, Fleet, NodePool, Queue
from fleetgen.model.partitioning import slice_resource
from fleetgen.model.sharing import FIELDS, GPU, RESOURCES, FlavorResources, PerFlavor

HOSTNAME = "kubernetes.io/hostname"


def _show(resource: str, value: Fraction) -> str:
    if resource == "memory" and value and value % 1024**3 == 0:
        return f"{value // 1024**3}Gi"
    return str(int(value)) if value.denominator == 1 else f"{float(value):g}"


def _flavors(cluster: Cluster, queue: Queue) -> tuple[str, ...]:
    return queue.flavors if queue.flavors is not None else tuple(p.name for p in cluster.node_pools)


def cohort_root(cluster: Cluster, cohort: str) -> str:
    """The top of a cohort's tree through the parents the cluster declares (a cycle stops at the repeat)."""
    parents = {c.name: c.parent for c in cluster.cohorts}
    seen = {cohort}
    while parents.get(cohort) and parents[cohort] not in seen:
        cohort = parents[cohort]  # type: ignore[assignment]
        seen.add(cohort)
    return cohort


def lendable(cluster: Cluster, borrower: int, flavor: str, resource: str) -> Fraction:
    """What the rest of queue `borrower`'s cohort tree can lend it of one flavor and resource."""
    pools = {p.name: p for p in cluster.node_pools}
    root = cohort_root(cluster, cluster.queues[borrower].cohort or "")
    total = Fraction(0)
    for q, queue in enumerate(cluster.queues):
        if q == borrower or not queue.cohort or cohort_root(cluster, queue.cohort) != root or flavor not in _flavors(cluster, queue):
            continue
        limit = queue.lending_limit[flavor].amount(resource) if flavor in queue.lending_limit else None
        total += limit if limit is not None else nominal(pools[flavor], queue.nominal_quota.get(flavor), resource)
    for cohort in cluster.cohorts:
        if cohort_root(cluster, cohort.name) == root and flavor in cohort.nominal_quota:
            total += cohort.nominal_quota[flavor].amount(resource) or 0
    return total


def _keys_are_flavors(here: FieldPath, limits: dict[str, PerFlavor], allowed: tuple[str, ...], what: str) -> Iterator[Finding]:
    """`what`: "a flavor of this queue" or "a node pool of <cluster>"; the message lists the allowed names."""
    for field, per_flavor in limits.items():
        for flavor in per_flavor:
            if flavor not in allowed:
                # fix: Name one of the known pools or cohorts the message lists
                yield Finding(here + (field, flavor), f"{flavor!r} is not {what} (known: {', '.join(allowed) or 'none'})")


def check_cohorts(fleet: Fleet) -> Iterator[Finding]:
    """Duplicate cohorts, parent cycles, cohort quotas on unknown node pools."""
    for c, cluster in enumerate(fleet.clusters):
        pools = tuple(p.name for p in cluster.node_pools)
        parents = {k.name: k.parent for k in cluster.cohorts}
        seen: set[str] = set()
        for k, cohort in enumerate(cluster.cohorts):
            here: FieldPath = ("clusters", c, "cohorts", k)
            if cohort.name in seen:
                # fix: Give each cohort of the cluster its own name
                yield Finding(here + ("name",), f"duplicate cohort {cohort.name!r}")
            seen.add(cohort.name)
            chain, name = [cohort.name], cohort.parent
            while name in parents and name not in chain:
                chain.append(name)
                name = parents[name]
            if name is not None and name == cohort.name:
                # fix: Make one cohort of the cycle the top (drop its parent)
                yield Finding(here + ("parent",), f"cohort cycle: {' -> '.join([*chain, name])}; a cohort tree needs a top")
            limits = {"nominalQuota": cohort.nominal_quota, "borrowingLimit": cohort.borrowing_limit, "lendingLimit": cohort.lending_limit}
            yield from _keys_are_flavors(here, limits, pools, f"a node pool of {cluster.name}")


def _limited(limits: FlavorResources) -> tuple[str, ...]:
    """The resources a limit names: cpu, memory, GPUs, then its slices (nvidia.com/mig-1g.10gb)."""
    return (*RESOURCES, *(slice_resource(name) for name in sorted(limits.slices)))


def _field(resource: str) -> tuple[str, ...]:
    """The fleet.yaml field of a resource within a flavor's entry: ("gpu",), ("slices", "mig-1g.10gb")."""
    return (FIELDS[resource],) if resource in FIELDS else ("slices", resource.removeprefix("nvidia.com/"))


def check_queue_limits(fleet: Fleet) -> Iterator[Finding]:
    """Lending above the nominal quota, borrowing without a cohort or beyond what it can lend, Kueue's preemption rule."""
    for c, cluster in enumerate(fleet.clusters):
        pools = {p.name: p for p in cluster.node_pools}
        for q, queue in enumerate(cluster.queues):
            here: FieldPath = ("clusters", c, "queues", q)
            flavors = tuple(f for f in _flavors(cluster, queue) if f in pools)
            limits = {"nominalQuota": queue.nominal_quota, "borrowingLimit": queue.borrowing_limit, "lendingLimit": queue.lending_limit}
            yield from _keys_are_flavors(here, limits, flavors, "a flavor of this queue")
            for flavor, lend in queue.lending_limit.items():
                for resource in _limited(lend) if flavor in flavors else ():
                    amount, own = lend.amount(resource), nominal(pools[flavor], queue.nominal_quota.get(flavor), resource)
                    if amount is not None and amount > own:
                        # fix: Lower the lendingLimit to the nominal quota or below
                        yield Finding(
                            here + ("lendingLimit", flavor, *_field(resource)),
                            f"lendingLimit {_show(resource, amount)} {resource} of {flavor} is above the queue's nominal quota "
                            f"{_show(resource, own)}: a queue lends only what it owns",
                        )
            for flavor, borrow in queue.borrowing_limit.items():
                for resource in _limited(borrow) if flavor in flavors else ():
                    amount = borrow.amount(resource)
                    if amount is None:
                        continue
                    at = here + ("borrowingLimit", flavor, *_field(resource))
                    if not queue.cohort:
                        # fix: Put the queue in a cohort, or drop borrowingLimit
                        yield Finding(at, "borrowingLimit needs a cohort to borrow from (set cohort)")
                        break
                    can = lendable(cluster, q, flavor, resource)
                    if amount > can:
                        # fix: Lower the borrowingLimit, or let the other queues of the cohort lend more
                        yield Finding(
                            at,
                            f"borrowingLimit {_show(resource, amount)} {resource} of {flavor} exceeds the "
                            f"{_show(resource, can)} that cohort {queue.cohort} can lend",
                        )
            borrow_policy = queue.preemption.borrow_within_cohort
            if borrow_policy and borrow_policy.policy != "Never" and queue.preemption.reclaim_within_cohort == "Never":
                # fix: Set preemption.reclaimWithinCohort to Any or LowerPriority, or drop borrowWithinCohort
                yield Finding(
                    here + ("preemption", "borrowWithinCohort", "policy"),
                    "borrowWithinCohort needs reclaimWithinCohort other than Never (Kueue refuses the queue otherwise)",
                )


def _gpu_reachable(cluster: Cluster, q: int, pools: dict[str, NodePool]) -> bool:
    queue = cluster.queues[q]
    for flavor in _flavors(cluster, queue):
        if flavor not in pools:
            return True  # an unknown node pool is the flavor check's finding; a second one here would only repeat it
        if nominal(pools[flavor], queue.nominal_quota.get(flavor), GPU) > 0:
            return True
        if queue.cohort:
            limit = queue.borrowing_limit[flavor].amount(GPU) if flavor in queue.borrowing_limit else None
            if min(lendable(cluster, q, flavor, GPU), limit if limit is not None else Fraction(10**9)) > 0:
                return True
    return False


def check_team_reaches_gpus(fleet: Fleet) -> Iterator[Finding]:
    """A team with a GPU quota whose queue owns no GPU and cannot borrow one."""
    clusters = {c.name: c for c in fleet.clusters}
    for t, team in enumerate(fleet.teams):
        for name, placement in team.clusters.items():
            cluster = clusters.get(name)
            if cluster is None or not cluster.queues or not team.quota_on(name).requests.gpu:
                continue
            queue = team.queue_on(cluster)
            index = next((q for q, qq in enumerate(cluster.queues) if qq.name == queue), None)
            pools = {p.name: p for p in cluster.node_pools}
            if index is not None and not _gpu_reachable(cluster, index, pools):
                where: FieldPath = ("teams", t, "clusters", name) + (("queue",) if placement and placement.queue else ())
                # fix: Give the queue a GPU nominal quota, or put it in a cohort that lends GPUs
                yield Finding(
                    where,
                    f"team {team.name}'s queue {queue} on {name} cannot reach any GPU: its flavors hold no GPU "
                    "nominal quota and it cannot borrow one from a cohort",
                )


def check_volcano(fleet: Fleet) -> Iterator[Finding]:
    """Volcano's pools and weights refer to what exists; Volcano and Kueue never hand out the same GPUs."""
    for c, cluster in enumerate(fleet.clusters):
        volcano = cluster.volcano
        if volcano is None:
            continue
        here: FieldPath = ("clusters", c, "volcano")
        pools = {p.name: p for p in cluster.node_pools}
        for p, pool in enumerate(volcano.node_pools or ()):
            if pool not in pools:
                # fix: Name a node pool of the cluster
                yield Finding(here + ("nodePools", p), f"unknown node pool {pool!r} of {cluster.name}")
        teams = {team.name for _, team in fleet.placements[cluster.name]}
        for team, weight in volcano.weights.items():
            if team not in teams:
                # fix: Name a team placed on the cluster, or place the team there
                yield Finding(here + ("weights", team), f"team {team!r} is not on {cluster.name}")
            elif not 1 <= weight <= 65535:
                # fix: Use a weight from 1 to 65535
                yield Finding(here + ("weights", team), f"weight {weight} is outside Volcano's 1-65535")
        mine = set(volcano.node_pools) if volcano.node_pools is not None else set(pools)
        yield from _volcano_guarantees(fleet, cluster, here, [pools[p] for p in sorted(mine) if p in pools])
        for queue in cluster.queues:
            shared = [f for f in _flavors(cluster, queue) if f in mine and f in pools and pools[f].gpus_per_node]
            if shared:
                # fix: Split the pools: list them in volcano.nodePools or in the queues' flavors, not both
                yield Finding(
                    here + (("nodePools",) if volcano.node_pools is not None else ()),
                    f"Volcano and Kueue queue {queue.name} both hand out the GPUs of {', '.join(shared)}: "
                    "split the node pools (volcano.nodePools, and flavors on each queue)",
                )


def _volcano_guarantees(fleet: Fleet, cluster: Cluster, here: FieldPath, pools: list[NodePool]) -> Iterator[Finding]:
    """What volcano.guarantees reserves: for teams on the cluster, within each team's quota there, and together within
    Volcano's pools (a guarantee is capacity kept for one team, so no overcommit applies)."""
    volcano = cluster.volcano
    if volcano is None or not volcano.guarantees:
        return
    at = here + ("guarantees",)
    placed = {team.name: team for _, team in fleet.placements[cluster.name]}
    for name, reserved in volcano.guarantees.items():
        team = placed.get(name)
        if team is None:
            # fix: Name a team placed on the cluster, or place the team there
            yield Finding(at + (name,), f"team {name!r} is not on {cluster.name}")
            continue
        quota = team.quota_on(cluster.name).requests
        for resource in RESOURCES:
            field = FIELDS[resource]
            amount, cap = reserved.amount(resource), getattr(quota, field)
            cap_value = None if cap is None else Fraction(cap) if isinstance(cap, int) else cap.value
            if amount is not None and cap_value is not None and amount > cap_value:
                # fix: Lower the guarantee to the team's quota on the cluster, or raise the quota
                yield Finding(
                    at + (name, field),
                    f"guarantee {_show(resource, amount)} {resource} is above team {name}'s quota on {cluster.name} "
                    f"({_show(resource, cap_value)}): its namespace never runs more, so the rest is kept for nobody",
                )
    for resource in RESOURCES:
        given = [(name, r.amount(resource)) for name, r in volcano.guarantees.items() if name in placed]
        amounts = [(name, v) for name, v in given if v is not None]
        total, held = sum((v for _, v in amounts), Fraction(0)), sum((pool_amount(p, resource) for p in pools), Fraction(0))
        if total > held:
            each = ", ".join(f"{name} {_show(resource, v)}" for name, v in amounts)
            sizes = ", ".join(f"{p.name} {p.max_nodes} x {_show(resource, pool_amount(p, resource) / p.max_nodes)}" for p in pools)
            yield Finding(
                at,
                f"the teams' Volcano guarantees on {cluster.name} add up to {_show(resource, total)} {resource} ({each}), more than "
                f"Volcano's node pools hold ({_show(resource, held)}: {sizes or 'none'}): lower the guarantees or give Volcano more pools",
            )


def check_topology(fleet: Fleet) -> Iterator[Finding]:
    """Kueue's Topology rule: kubernetes.io/hostname only as the last level (a repeated level is the model's finding)."""
    for c, cluster in enumerate(fleet.clusters):
        for p, pool in enumerate(cluster.node_pools):
            here: FieldPath = ("clusters", c, "nodePools", p, "topology")
            for i, label in enumerate(pool.topology):
                if label == HOSTNAME and i != len(pool.topology) - 1:
                    # fix: List kubernetes.io/hostname last in the pool's topology levels
                    yield Finding(here + (i,), f"{HOSTNAME} must be the last (narrowest) level")


def check_admission(fleet: Fleet) -> Iterator[Finding]:
    """A queue set to admit only placed teams that has none admits nothing (by default this stays quiet: a new cluster has no teams)."""
    for c, cluster in enumerate(fleet.clusters):
        for q, queue in enumerate(cluster.queues):
            if queue.admits != "placed-teams" or "admits" not in queue.model_fields_set:
                continue
            placed = fleet.queue_teams(cluster, queue.name)
            if not placed:
                # fix: Place a team on the queue (teams[].clusters.CLUSTER.queue), or remove the queue
                yield Finding(
                    ("clusters", c, "queues", q, "admits"), "no team is placed on this queue: it admits nothing", Severity.WARNING
                )


SHARING_CHECKS = (check_cohorts, check_queue_limits, check_team_reaches_gpus, check_volcano, check_topology, check_admission)

"""The capacity and cost report: who holds which GPUs, at what cost, against what capacity.

Capacity is what the node pools can grow to (maxNodes x gpusPerNode); committed is what the teams
hold (fleetgen.checks.entitlement: their share of their queue's own GPUs and their Volcano
guarantees, each within its quota). GPUs a team may only borrow are listed, not held or charged. A
team's GPUs on a cluster cost the average price per GPU-hour of the pools its queue draws from
(weighted by their GPUs), times 730 hours a month.
"""

from collections.abc import Iterator
from typing import NamedTuple

from fleetgen.checks.capacity import HOURS_PER_MONTH, node_hour_price, pool_capacity, pool_monthly_cost
from fleetgen.checks.entitlement import entitlements_on, queue_gpus
from fleetgen.checks.sharing import lendable
from fleetgen.compat.partitioning import nominal, per_gpu
from fleetgen.model import Cluster, Fleet, NodePool
from fleetgen.model.sharing import GPU
from fleetgen.render.volcano import queue_name
from fleetgen.report.fleet_queues import FleetQueue, fleet_queues
from fleetgen.report.quota_layers import ClusterLayers, quota_layers
from fleetgen.report.slices import PoolSlices, TeamSlices, average_price, pool_slices, team_slices

COMPONENT_TITLES = {
    "kubernetes": "Kubernetes",
    "driver": "GPU Driver",
    "cuda": "CUDA Toolkit",
    "cudnn": "cuDNN",
    "containerd": "Container Runtime",
}


class ClusterCapacity(NamedTuple):
    name: str
    environment: str
    gpus: int  # physical GPUs at maxNodes, whatever they are cut into
    committed: int  # nvidia.com/gpu held by teams
    monthly_cost: float | None
    sliced: tuple[str, ...] = ()  # pools whose GPUs become slices, not nvidia.com/gpu: counted in the slices
    gpu_units: int = 0  # nvidia.com/gpu the pools advertise: whole GPUs, time-sliced replicas not renamed, single-strategy slices
    shared_gpus: int = 0  # physical GPUs that are time-sliced
    shares: int = 0  # the replicas they hand out
    mig_gpus: int = 0  # physical GPUs cut into MIG slices
    mig_slices: int = 0  # the slices they hand out

    @property
    def headroom(self) -> int:
        """nvidia.com/gpu not committed: what Kueue and the quotas count, compared in the same unit."""
        return self.gpu_units - self.committed


class Holding(NamedTuple):
    cluster: str
    gpus: int  # held: kept for the team, and charged
    monthly_cost: float | None
    may_borrow: int = 0  # beyond what it holds, through its queue's cohort, within its quota


class TeamCost(NamedTuple):
    team: str
    cost_center: str
    holdings: tuple[Holding, ...]

    @property
    def gpus(self) -> int:
        return sum(h.gpus for h in self.holdings)

    @property
    def monthly_cost(self) -> float | None:
        costs = [h.monthly_cost for h in self.holdings]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


class SliceShare(NamedTuple):
    """A queue's slices of one kind in one flavor (nvidia.com/mig-1g.10gb, nvidia.com/gpu.shared), as FlavorShare's GPUs."""

    resource: str
    nominal: int
    borrow: int | None
    lend: int | None


class FlavorShare(NamedTuple):
    """A queue's GPUs of one flavor, counted as Kueue counts nvidia.com/gpu (a time-sliced pool's replicas; 0 on a pool
    whose GPUs become slices): what it owns, may borrow from its cohort (None: no cohort) and lends at most; then its slices."""

    flavor: str
    gpu_model: str
    nominal: int
    borrow: int | None
    lend: int | None
    unit: str = ""  # what one nvidia.com/gpu of the pool is: "" (a GPU), "replicas", "MIG slices"
    slices: tuple[SliceShare, ...] = ()
    yields_gpus: bool = True  # False: the pool's GPUs are all slices (MIG mixed strategy, renamed shares)

    def amounts(self, amount: str) -> list[str]:
        """One column of the flavor in words: "2 A10G replicas", "14 A100 mig-1g.10gb"; nothing where the value is None."""
        out = []
        value = getattr(self, amount)
        if self.yields_gpus and value is not None:
            out.append(f"{value} {self.gpu_model}" + (f" {self.unit}" if self.unit else ""))
        for piece in self.slices:
            if getattr(piece, amount) is not None:
                out.append(f"{getattr(piece, amount)} {self.gpu_model} {piece.resource.removeprefix('nvidia.com/')}")
        return out


class QueueShare(NamedTuple):
    cluster: str
    queue: str
    teams: tuple[str, ...]
    cohort: str | None
    weight: str | None
    flavors: tuple[FlavorShare, ...]

    def sentences(self) -> list[str]:
        """In the teams' words: "data-science may borrow up to 8 A100s from the training cohort"."""
        who = ", ".join(self.teams) or f"queue {self.queue}"
        out = []
        for f in self.flavors:
            if f.borrow and f.yields_gpus:
                what = f"{f.gpu_model} {f.unit}" if f.unit else f"{f.gpu_model}s"
                out.append(f"{who} may borrow up to {f.borrow} {what} ({f.flavor}) from the {self.cohort} cohort on {self.cluster}")
            for piece in f.slices:
                if piece.borrow:
                    what = f"{f.gpu_model} {piece.resource.removeprefix('nvidia.com/')}"
                    out.append(f"{who} may borrow up to {piece.borrow} {what} ({f.flavor}) from the {self.cohort} cohort on {self.cluster}")
        return out


class VolcanoShare(NamedTuple):
    cluster: str
    queue: str
    team: str
    weight: int
    guarantee: int | None
    capability: int | None


class Report(NamedTuple):
    fleet: str
    currency: str
    clusters: tuple[ClusterCapacity, ...]
    teams: tuple[TeamCost, ...]
    matrix: tuple[tuple[str, tuple[str, ...]], ...]  # component title, value per cluster
    unpriced: tuple[str, ...]  # VM SKUs without a price
    queues: tuple[QueueShare, ...] = ()
    volcano: tuple[VolcanoShare, ...] = ()
    pool_slices: tuple[PoolSlices, ...] = ()
    team_slices: tuple[TeamSlices, ...] = ()
    fleet_queues: tuple[FleetQueue, ...] = ()  # MultiKueue's manager queues (fleet_queues.py)
    layers: tuple[ClusterLayers, ...] = ()  # every layer of the quota stack per cluster (report/quota_layers.py)


def _price(fleet: Fleet, cluster: Cluster, queue: str | None) -> float | None:
    """Average price per GPU-hour of the pools a team reaches (its queue's, and Volcano's), weighted by their GPUs;
    a time-sliced replica costs its share of its GPU."""
    chosen = next((q for q in cluster.queues if q.name == queue), cluster.queues[0])
    names = set(chosen.flavors if chosen.flavors is not None else (p.name for p in cluster.node_pools))
    if cluster.volcano:
        names |= set(cluster.volcano.node_pools if cluster.volcano.node_pools is not None else (p.name for p in cluster.node_pools))
    return average_price(fleet, [p for p in cluster.node_pools if p.name in names], GPU)


def _unit(pool: NodePool) -> str:
    """What one nvidia.com/gpu of the pool is, in the report's words."""
    if pool.partitioning.time_slicing is not None:
        return "replicas"
    return "MIG slices" if pool.partitioning.mig is not None else ""


def _share(cluster: Cluster, q: int, pool: NodePool, resource: str, room: int) -> tuple[int, int | None, int | None]:
    """(owns, may borrow, lends at most) of queue `q` in one resource of `pool`; borrowing stops at `room`."""
    queue = cluster.queues[q]
    owned = int(nominal(pool, queue.nominal_quota.get(pool.name), resource))
    if not queue.cohort:
        return owned, None, None
    limit = queue.borrowing_limit[pool.name].amount(resource) if pool.name in queue.borrowing_limit else None
    can = int(lendable(cluster, q, pool.name, resource))
    lend = queue.lending_limit[pool.name].amount(resource) if pool.name in queue.lending_limit else None
    return owned, min(room, can if limit is None else min(int(limit), can)), owned if lend is None else int(lend)


def _queue_shares(fleet: Fleet, cluster: Cluster) -> Iterator[QueueShare]:
    pools = {p.name: p for p in cluster.node_pools}
    for q, queue in enumerate(cluster.queues):
        gpus = queue_gpus(fleet, cluster, q)
        names = [n for n in (queue.flavors if queue.flavors is not None else tuple(pools)) if n in pools and pools[n].gpus_per_node]
        teams = fleet.queue_teams(cluster, queue.name)
        rooms = {GPU: max(0, gpus.runnable - gpus.owned)}  # borrowing beyond its teams' quotas never runs
        for resource in sorted({r for n in names for r in per_gpu(pools[n])} - {GPU}):
            quotas = sum(t.quota_on(cluster.name).requests.slices.get(resource.removeprefix("nvidia.com/"), 0) for t in teams)
            owned = sum(int(nominal(pools[n], queue.nominal_quota.get(n), resource)) for n in names)
            rooms[resource] = max(0, quotas - owned)
        flavors = []
        for name in names:
            pool = pools[name]
            yielded = per_gpu(pool)
            owned, borrow, lend = _share(cluster, q, pool, GPU, rooms[GPU])
            pieces = tuple(SliceShare(r, *_share(cluster, q, pool, r, rooms[r])) for r in sorted(yielded) if r != GPU)
            flavors.append(FlavorShare(name, pool.gpu_model or "", owned, borrow, lend, _unit(pool), pieces, GPU in yielded))
        weight = None if queue.fair_sharing_weight is None else str(queue.fair_sharing_weight)
        yield QueueShare(cluster.name, queue.name, tuple(t.name for t in teams), queue.cohort, weight, tuple(flavors))


def _volcano_shares(fleet: Fleet, cluster: Cluster) -> Iterator[VolcanoShare]:
    if cluster.volcano is None:
        return
    for _, team in fleet.placements[cluster.name]:
        gpus = team.quota_on(cluster.name).requests.gpu
        weight = cluster.volcano.weight_of(team.name)
        reserved = cluster.volcano.guarantees.get(team.name)
        yield VolcanoShare(cluster.name, queue_name(team.name), team.name, weight, reserved.gpu if reserved else None, gpus)


def build_report(fleet: Fleet) -> Report:
    clusters = []
    held_on = {cluster.name: entitlements_on(fleet, cluster) for cluster in fleet.clusters}
    for cluster in fleet.clusters:
        pools = [pool_capacity(p) for p in cluster.node_pools]
        committed = sum(e.held for e in held_on[cluster.name].values())
        costs = [(p, pool_monthly_cost(fleet, p)) for p in cluster.node_pools]
        # an unpriced CPU-only pool is listed under `unpriced` but never makes its cluster's cost unknown
        cost = None if any(c is None and p.gpus_per_node for p, c in costs) else sum(c or 0.0 for _, c in costs)
        slice_pools = tuple(p.name for p in cluster.node_pools if p.gpus_per_node and set(per_gpu(p)) - {GPU})
        clusters.append(
            ClusterCapacity(
                cluster.name,
                cluster.environment,
                sum(p.gpus for p in pools),
                committed,
                cost,
                slice_pools,
                gpu_units=sum(p.units.get(GPU, 0) for p in pools),
                shared_gpus=sum(p.gpus for p in pools if p.kind == "time-sliced"),
                shares=sum(p.shares for p in pools),
                mig_gpus=sum(p.gpus for p in pools if p.kind == "mig"),
                mig_slices=sum(p.slices for p in pools),
            )
        )
    by_name = {c.name: c for c in fleet.clusters}
    slices_on = {c.name: team_slices(fleet, c) for c in fleet.clusters}
    teams = []
    for team in fleet.teams:
        holdings = []
        for name, placement in team.clusters.items():
            held = held_on[name][team.name]
            price = _price(fleet, by_name[name], placement.queue if placement else None) if held.held else 0.0
            slice_costs = [s.monthly_cost for s in slices_on[name] if s.team == team.name]
            cost = (
                None if price is None or None in slice_costs else held.held * price * HOURS_PER_MONTH + sum(c or 0.0 for c in slice_costs)
            )
            holdings.append(Holding(name, held.held, cost, held.may_borrow))
        teams.append(TeamCost(team.name, team.cost_center, tuple(holdings)))
    matrix = tuple(
        (
            COMPONENT_TITLES[component],
            tuple(
                ("containerd " if component == "containerd" else "") + str(getattr(fleet.version_sets[c.version_set], component))
                for c in fleet.clusters
            ),
        )
        for component in COMPONENT_TITLES
    )
    unpriced = tuple(sorted({p.vm_size for c in fleet.clusters for p in c.node_pools if node_hour_price(fleet, p) is None}))
    queues = tuple(share for cluster in fleet.clusters for share in _queue_shares(fleet, cluster))
    volcano = tuple(share for cluster in fleet.clusters for share in _volcano_shares(fleet, cluster))
    sliced = tuple(s for cluster in fleet.clusters for s in team_slices(fleet, cluster))
    return Report(
        fleet.metadata.name,
        fleet.pricing.currency,
        tuple(clusters),
        tuple(teams),
        matrix,
        unpriced,
        queues,
        volcano,
        pool_slices(fleet),
        sliced,
        fleet_queues(fleet),
        quota_layers(fleet),
    )

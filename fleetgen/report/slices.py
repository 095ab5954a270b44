"""Partitioned GPUs in the capacity report: the slices each pool yields and each team holds, priced as
their share of the GPU-hour (a time-sliced replica 1/replicas, a MIG slice its compute slices over the
layout's: 1g.10gb of all-1g.10gb is 1/7)."""

from typing import NamedTuple

from fleetgen.checks.capacity import HOURS_PER_MONTH, gpu_hour_price
from fleetgen.compat.partitioning import describe, pool_yield, share_of_gpu
from fleetgen.model import Cluster, Fleet, NodePool
from fleetgen.model.partitioning import slice_resource


class PoolSlices(NamedTuple):
    cluster: str
    pool: str
    partitioning: str
    resource: str
    slices: int
    hourly: float | None  # price of one slice for one hour; None without a price for the pool's VM size


class TeamSlices(NamedTuple):
    team: str
    cluster: str
    resource: str
    slices: int
    monthly_cost: float | None


def unit_price(fleet: Fleet, pool: NodePool, resource: str) -> float | None:
    """One unit of `resource` of the pool for one hour: the GPU-hour times the unit's share of its GPU."""
    price = gpu_hour_price(fleet, pool)
    return None if price is None else price * float(share_of_gpu(pool, resource))


def average_price(fleet: Fleet, pools: list[NodePool], resource: str) -> float | None:
    """The price of one unit of `resource` over `pools`, weighted by how many each yields; None if one is unpriced."""
    weighted = [(pool_yield(p)[resource], unit_price(fleet, p, resource)) for p in pools if pool_yield(p).get(resource)]
    count = sum(n for n, _ in weighted)
    if not count or any(price is None for _, price in weighted):
        return None
    return sum(n * (price or 0.0) for n, price in weighted) / count


def pool_slices(fleet: Fleet) -> tuple[PoolSlices, ...]:
    return tuple(
        PoolSlices(cluster.name, pool.name, describe(pool), resource, count, unit_price(fleet, pool, resource))
        for cluster in fleet.clusters
        for pool in cluster.node_pools
        if pool.partitioning.kind != "none"
        for resource, count in sorted(pool_yield(pool).items())
    )


def team_slices(fleet: Fleet, cluster: Cluster) -> tuple[TeamSlices, ...]:
    """What each team on `cluster` holds in slices, at the average price of the pools that yield them."""
    out = []
    for _, team in fleet.placements[cluster.name]:
        for name, count in sorted(team.quota_on(cluster.name).requests.slices.items()):
            price = average_price(fleet, list(cluster.node_pools), slice_resource(name)) if count else 0.0  # none held: nothing to price
            out.append(
                TeamSlices(team.name, cluster.name, slice_resource(name), count, None if price is None else count * price * HOURS_PER_MONTH)
            )
    return tuple(out)


def slices_markdown(pools: tuple[PoolSlices, ...], teams: tuple[TeamSlices, ...], currency: str) -> list[str]:
    if not pools:
        return []

    def money(value: float | None, digits: int) -> str:
        return "n/a" if value is None else f"{value:,.{digits}f} {currency}"

    lines = ["", "## Partitioned GPUs", "", "Each slice is priced as its share of the GPU-hour.", ""]
    lines += ["| Cluster | Node pool | Partitioning | Resource | Slices | Price / slice-hour |", "|---|---|---|---|---:|---:|"]
    lines += [f"| {p.cluster} | {p.pool} | {p.partitioning} | {p.resource} | {p.slices} | {money(p.hourly, 3)} |" for p in pools]
    if teams:
        lines += ["", "| Team | Cluster | Resource | Slices | Cost / month |", "|---|---|---|---:|---:|"]
        lines += [f"| {t.team} | {t.cluster} | {t.resource} | {t.slices} | {money(t.monthly_cost, 0)} |" for t in teams]
    return lines

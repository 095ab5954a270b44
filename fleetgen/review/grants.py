"""Grants in a pull request: each time-bound grant added or changed, with how long, for what, why and at what cost.

The summary and the PR comment show them beside the quota change itself, and the approval rules can
gate them on their duration, their workload, or the monthly budget of the team or its cost centre
(review/approvals.py). A grant's cost is its GPUs at the average price per GPU-hour of the cluster's
whole-GPU pools (pricing.gpuHour, weighted by their GPUs), 730 hours a month, as the report counts.
The duration counts from today (UTC) to the grant's last day, both included.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleetgen.checks.capacity import HOURS_PER_MONTH, gpu_hour_price
from fleetgen.checks.grants import utc_today
from fleetgen.model import Fleet, Team
from fleetgen.review.change import Change


def cluster_gpu_hour(fleet: Fleet, cluster: str) -> float | None:
    """The average price of one whole GPU-hour on `cluster` (capacity.gpu_hour_price per pool, weighted by its GPUs);
    None when a pool of whole GPUs has no price."""
    found = fleet.cluster_named.get(cluster)
    pools = [p for p in (found.node_pools if found else ()) if p.gpus_per_node and p.partitioning.kind == "none"]
    prices = [(p.max_nodes * p.gpus_per_node, gpu_hour_price(fleet, p)) for p in pools]
    if not prices or any(price is None for _, price in prices):
        return None
    return sum(n * (price or 0.0) for n, price in prices) / sum(n for n, _ in prices)


def monthly_cost(fleet: Fleet, team: Team) -> float:
    """What a team's GPU quotas cost a month on every cluster it is on (unpriced clusters count nothing)."""
    return sum((team.quota_on(c).requests.gpu or 0) * (cluster_gpu_hour(fleet, c) or 0.0) * HOURS_PER_MONTH for c in team.clusters)


def _cost_centres(head: Fleet) -> dict[str, float]:
    """What each cost centre's teams' GPU quotas cost a month."""
    centres: dict[str, float] = {}
    for team in head.teams:
        centres[team.cost_center] = centres.get(team.cost_center, 0.0) + monthly_cost(head, team)
    return centres


def grant_changes(base: Fleet, head: Fleet) -> Iterator[Change]:
    before = {t.name: t for t in base.teams}
    centres: dict[str, float] | None = None  # priced on the first grant that changed: most pull requests change none
    today = utc_today()
    for team in head.teams:
        old = before.get(team.name)
        for cluster, placement in team.clusters.items():
            if placement is None or placement.until is None:
                continue
            was = old.clusters.get(cluster) if old else None
            gpus = team.quota_on(cluster).requests.gpu or 0
            if was is not None and (was.until, was.reason, was.workload) == (placement.until, placement.reason, placement.workload):
                if old is not None and (old.quota_on(cluster).requests.gpu or 0) == gpus:
                    continue  # the same grant
            days = (placement.until - today).days + 1
            centres = _cost_centres(head) if centres is None else centres
            price = cluster_gpu_hour(head, cluster)
            cost = None if price is None else gpus * price * HOURS_PER_MONTH
            shown = "unpriced" if cost is None else f"{cost:,.0f} {head.pricing.currency} a month"
            workload = placement.workload or "workload not stated"
            text = f"team {team.name}: grant of {gpus} GPUs on {cluster} until {placement.until} ({days} days), {workload}, {shown}"
            yield Change(
                "grant",
                f"{text}: {placement.reason}" if placement.reason else text,
                team=team.name,
                cluster=cluster,
                field="until",
                new=str(placement.until),
                days=days,
                workload=placement.workload,
                monthly_cost=cost,
                team_monthly=monthly_cost(head, team),
                cost_center=team.cost_center,
                cost_center_monthly=centres[team.cost_center],
            )

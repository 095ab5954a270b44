"""The capacity and cost report: who holds which GPUs, at what cost, against what capacity.

Capacity is what the node pools can grow to (maxNodes x gpusPerNode); committed is the sum of the
teams' GPU quotas. A team's GPUs on a cluster cost the average price per GPU-hour of the pools its
queue draws from (weighted by their GPUs), times 730 hours a month.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

from fleetgen.model import Cluster, Fleet

HOURS_PER_MONTH = 730
COMPONENT_TITLES = {
    "kubernetes": "Kubernetes",
    "driver": "GPU Driver",
    "cuda": "CUDA Toolkit",
    "cudnn": "cuDNN",
    "containerd": "Container Runtime",
}


@dataclass(frozen=True)
class ClusterCapacity:
    name: str
    environment: str
    gpus: int
    committed: int
    monthly_cost: float | None

    @property
    def headroom(self) -> int:
        return self.gpus - self.committed


@dataclass(frozen=True)
class Holding:
    cluster: str
    gpus: int
    monthly_cost: float | None


@dataclass(frozen=True)
class TeamCost:
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


@dataclass(frozen=True)
class Report:
    fleet: str
    currency: str
    clusters: tuple[ClusterCapacity, ...]
    teams: tuple[TeamCost, ...]
    matrix: tuple[tuple[str, tuple[str, ...]], ...]  # component title, value per cluster
    unpriced: tuple[str, ...]  # VM SKUs without a price


def _price(fleet: Fleet, cluster: Cluster, queue: str | None) -> float | None:
    """Average price per GPU-hour of the pools a queue hands out, weighted by their GPUs."""
    chosen = next((q for q in cluster.queues if q.name == queue), cluster.queues[0])
    names = chosen.flavors if chosen.flavors is not None else tuple(p.name for p in cluster.node_pools)
    pools = [p for p in cluster.node_pools if p.name in names and p.gpus_per_node]
    gpus = sum(p.max_nodes * p.gpus_per_node for p in pools)
    prices = [fleet.pricing.gpu_hour.get(p.vm_size) for p in pools]
    if not gpus or any(price is None for price in prices):
        return None
    return sum(p.max_nodes * p.gpus_per_node * price for p, price in zip(pools, prices, strict=True) if price is not None) / gpus


def build_report(fleet: Fleet) -> Report:
    clusters = []
    for cluster in fleet.clusters:
        gpus = sum(p.max_nodes * p.gpus_per_node for p in cluster.node_pools)
        committed = sum(t.quota_on(cluster.name).requests.gpu or 0 for _, t in fleet.placements[cluster.name])
        prices = [fleet.pricing.gpu_hour.get(p.vm_size) for p in cluster.node_pools]
        cost = None
        if all(price is not None for price in prices):
            cost = (
                sum(p.max_nodes * p.gpus_per_node * (price or 0) for p, price in zip(cluster.node_pools, prices, strict=True))
                * HOURS_PER_MONTH
            )
        clusters.append(ClusterCapacity(cluster.name, cluster.environment, gpus, committed, cost))
    by_name = {c.name: c for c in fleet.clusters}
    teams = []
    for team in fleet.teams:
        holdings = []
        for name, placement in team.clusters.items():
            gpus = team.quota_on(name).requests.gpu or 0
            price = _price(fleet, by_name[name], placement.queue if placement else None)
            holdings.append(Holding(name, gpus, None if price is None else gpus * price * HOURS_PER_MONTH))
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
    unpriced = tuple(sorted({p.vm_size for c in fleet.clusters for p in c.node_pools if p.vm_size not in fleet.pricing.gpu_hour}))
    return Report(fleet.metadata.name, fleet.pricing.currency, tuple(clusters), tuple(teams), matrix, unpriced)


def _money(value: float | None, currency: str) -> str:
    return "n/a" if value is None else f"{value:,.0f} {currency}"


def report_markdown(report: Report) -> str:
    cur = report.currency
    lines = [f"# GPU fleet report: {report.fleet}", "", "## Capacity and committed quotas", ""]
    lines += ["| Cluster | Environment | GPUs | Committed | Headroom | Capacity cost / month |", "|---|---|---:|---:|---:|---:|"]
    lines += [
        f"| {c.name} | {c.environment} | {c.gpus} | {c.committed} | {c.headroom} | {_money(c.monthly_cost, cur)} |" for c in report.clusters
    ]
    total_gpus = sum(c.gpus for c in report.clusters)
    total_committed = sum(c.committed for c in report.clusters)
    lines += [f"| **fleet** | | **{total_gpus}** | **{total_committed}** | **{total_gpus - total_committed}** | |", ""]
    lines += ["## GPUs held by team", ""]
    names = [c.name for c in report.clusters]
    lines += ["| Team | Cost centre | " + " | ".join(names) + " | GPUs | Cost / month |", "|---|---|" + "---:|" * (len(names) + 2)]
    for team in report.teams:
        held = {h.cluster: h.gpus for h in team.holdings}
        cells = " | ".join(str(held.get(n, "")) for n in names)
        lines.append(f"| {team.team} | {team.cost_center} | {cells} | {team.gpus} | {_money(team.monthly_cost, cur)} |")
    lines += ["", "## Fleet compatibility matrix", "", "| Component | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    lines += [f"| {title} | " + " | ".join(values) + " |" for title, values in report.matrix]
    if report.unpriced:
        lines += ["", f"No price for: {', '.join(report.unpriced)} (add them under pricing.gpuHour)."]
    return "\n".join(lines) + "\n"


def report_json(report: Report) -> str:
    return json.dumps(
        {
            "version": 1,
            "fleet": report.fleet,
            "currency": report.currency,
            "hoursPerMonth": HOURS_PER_MONTH,
            "clusters": [
                {
                    "name": c.name,
                    "environment": c.environment,
                    "gpus": c.gpus,
                    "committed": c.committed,
                    "headroom": c.headroom,
                    "monthlyCost": c.monthly_cost,
                }
                for c in report.clusters
            ],
            "teams": [
                {
                    "team": t.team,
                    "costCenter": t.cost_center,
                    "gpus": t.gpus,
                    "monthlyCost": t.monthly_cost,
                    "clusters": [{"cluster": h.cluster, "gpus": h.gpus, "monthlyCost": h.monthly_cost} for h in t.holdings],
                }
                for t in report.teams
            ],
            "matrix": {title: dict(zip([c.name for c in report.clusters], values, strict=True)) for title, values in report.matrix},
            "unpriced": list(report.unpriced),
        },
        indent=2,
    )


def _capacity_chart(report: Report) -> str:
    """Horizontal bars: each cluster's GPUs, committed quota drawn over them."""
    widest = max((max(c.gpus, c.committed) for c in report.clusters), default=1) or 1
    row, left, width = 34, 190, 520
    label = "GPU capacity and committed quota per cluster"
    size = f'width="{left + width + 120}" height="{row * len(report.clusters) + 20}"'
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{label}" {size}>']
    for i, c in enumerate(report.clusters):
        y = 10 + i * row
        cap, com = width * c.gpus / widest, width * c.committed / widest
        colour = "#c0392b" if c.committed > c.gpus else "#2e86c1"
        parts += [
            f'<text x="0" y="{y + 17}" font-size="13">{html.escape(c.name)}</text>',
            f'<rect x="{left}" y="{y}" width="{cap:.1f}" height="24" fill="#d6eaf8"><title>{c.gpus} GPUs</title></rect>',
            f'<rect x="{left}" y="{y + 6}" width="{com:.1f}" height="12" fill="{colour}"><title>{c.committed} committed</title></rect>',
            f'<text x="{left + max(cap, com) + 8:.1f}" y="{y + 17}" font-size="12">{c.committed} / {c.gpus}</text>',
        ]
    parts.append("</svg>")
    return "".join(parts)


def report_html(report: Report) -> str:
    def table(head: list[str], rows: list[list[str]]) -> str:
        cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in rows)
        return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"

    cur = report.currency
    names = [c.name for c in report.clusters]
    capacity = table(
        ["Cluster", "Environment", "GPUs", "Committed", "Headroom", "Capacity cost / month"],
        [[c.name, c.environment, str(c.gpus), str(c.committed), str(c.headroom), _money(c.monthly_cost, cur)] for c in report.clusters],
    )
    teams = table(
        ["Team", "Cost centre", *names, "GPUs", "Cost / month"],
        [
            [
                t.team,
                t.cost_center,
                *[str({h.cluster: h.gpus for h in t.holdings}.get(n, "")) for n in names],
                str(t.gpus),
                _money(t.monthly_cost, cur),
            ]
            for t in report.teams
        ],
    )
    matrix = table(["Component", *names], [[title, *values] for title, values in report.matrix])
    title = html.escape(f"GPU fleet report: {report.fleet}")
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px}"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{style}</style></head>'
        f"<body><h1>{title}</h1><h2>Capacity and committed quotas</h2>{_capacity_chart(report)}"
        "<p>Light bar: GPUs the node pools can grow to. Dark bar: GPUs committed to teams (red when above capacity).</p>"
        f"{capacity}"
        f"<h2>GPUs held by team</h2>{teams}<h2>Fleet compatibility matrix</h2>{matrix}</body></html>\n"
    )

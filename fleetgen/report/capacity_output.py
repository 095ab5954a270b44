"""The capacity and cost report as a person reads it: markdown (FLEET.md), JSON (versioned) and HTML."""

from __future__ import annotations

import json

from fleetgen.checks.capacity import HOURS_PER_MONTH
from fleetgen.report.capacity import ClusterCapacity, FlavorShare, Holding, Report
from fleetgen.report.fleet_queues import FLEET_QUEUES_HEAD, fleet_queues_json, fleet_queues_markdown, fleet_queues_rows
from fleetgen.report.quota_layers import HEAD as LAYERS_HEAD
from fleetgen.report.quota_layers import layers_json, layers_markdown
from fleetgen.report.slices import slices_markdown


def _money(value: float | None, currency: str) -> str:
    return "n/a" if value is None else f"{value:,.0f} {currency}"


def _gpus(shares: tuple[FlavorShare, ...], amount: str) -> str:
    """ "16 A100 (a100-spot), 8 A100 (a100-ondemand)" for one column of a queue's flavors, a partitioned pool in what it
    yields ("4 A10G replicas (a10g-shared)", "14 A100 mig-1g.10gb (a100-mig)"); an em dash for none."""
    cells = [f"{', '.join(words)} ({f.flavor})" for f in shares if (words := f.amounts(amount))]
    return ", ".join(cells) or "—"


def _held(holding: Holding) -> str:
    """ "8", or "0 (+8 may borrow)": borrowable GPUs beside the held ones, not counted in them."""
    return f"{holding.gpus} (+{holding.may_borrow} may borrow)" if holding.may_borrow else str(holding.gpus)


SHARING_HEAD = ["Cluster", "Queue", "Teams", "Cohort", "Owns", "May borrow", "Lends at most", "Fair-sharing weight"]
VOLCANO_HEAD = ["Cluster", "Volcano queue", "Team", "Weight", "Guaranteed GPUs", "GPU capability"]


def _sharing_rows(report: Report) -> list[list[str]]:
    return [
        [
            q.cluster,
            q.queue,
            ", ".join(q.teams) or "—",
            q.cohort or "—",
            _gpus(q.flavors, "nominal"),
            _gpus(q.flavors, "borrow"),
            _gpus(q.flavors, "lend"),
            q.weight or "—",
        ]
        for q in report.queues
    ]


def _volcano_rows(report: Report) -> list[list[str]]:
    return [[v.cluster, v.queue, v.team, str(v.weight), str(v.guarantee or 0), str(v.capability or 0)] for v in report.volcano]


def _markdown_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in rows)]


def _sharing_markdown(report: Report) -> list[str]:
    lines = [
        "",
        "## Sharing GPUs",
        "",
        "Kueue queues: what each owns, may borrow from its cohort and lends to it (GPUs; a partitioned pool's replicas or slices).",
        "",
    ]
    lines += _markdown_table(SHARING_HEAD, _sharing_rows(report))
    sentences = [s for q in report.queues for s in q.sentences()]
    if sentences:
        lines += ["", *(f"- {s}" for s in sentences)]
    if report.volcano:
        lines += [
            "",
            "Volcano queues (gang scheduling): the guarantee is what volcano.guarantees keeps for the team, the capability its quota.",
            "",
        ]
        lines += _markdown_table(VOLCANO_HEAD, _volcano_rows(report))
    return lines


def _sliced_note(report: Report) -> list[str]:
    """What the columns count, and which pools yield slices instead of nvidia.com/gpu (see Partitioned GPUs)."""
    sliced = [f"{c.name}: {', '.join(c.sliced)}" for c in report.clusters if c.sliced]
    if not any(c.shares or c.mig_slices for c in report.clusters):
        return []
    lines = [
        "GPUs are physical GPUs; shares and MIG slices are what the partitioned ones hand out. Committed and headroom count "
        "nvidia.com/gpu: whole GPUs, and the replicas of time-sliced pools that advertise them as nvidia.com/gpu."
    ]
    if sliced:
        lines.append(f"These pools yield slices or named shares instead of nvidia.com/gpu (see Partitioned GPUs): {'; '.join(sliced)}.")
    return [*lines, ""]


def _parts(count: int, gpus: int) -> str:
    """ "16 (on 4 GPUs)", or an em dash for none."""
    return f"{count} (on {gpus} GPUs)" if count else "—"


CAPACITY_HEAD = ["Cluster", "Environment", "GPUs", "Time-sliced shares", "MIG slices", "Committed", "Headroom", "Capacity cost / month"]


def _capacity_row(c: ClusterCapacity, currency: str) -> list[str]:
    shares, slices = _parts(c.shares, c.shared_gpus), _parts(c.mig_slices, c.mig_gpus)
    return [c.name, c.environment, str(c.gpus), shares, slices, str(c.committed), str(c.headroom), _money(c.monthly_cost, currency)]


def report_markdown(report: Report) -> str:
    cur = report.currency
    lines = [f"# GPU fleet report: {report.fleet}", "", "## Capacity and committed quotas", ""]
    lines += ["| " + " | ".join(CAPACITY_HEAD) + " |", "|---|---|" + "---:|" * (len(CAPACITY_HEAD) - 2)]
    lines += ["| " + " | ".join(_capacity_row(c, cur)) + " |" for c in report.clusters]
    total = {key: sum(getattr(c, key) for c in report.clusters) for key in ("gpus", "shares", "mig_slices", "committed", "headroom")}
    lines += [
        f"| **fleet** | | **{total['gpus']}** | **{total['shares']}** | **{total['mig_slices']}** | **{total['committed']}** "
        f"| **{total['headroom']}** | |",
        "",
    ]
    lines += _sliced_note(report)
    lines += [
        "## GPUs held by team",
        "",
        "Held: kept for the team and charged. May borrow: through its queue's cohort, not held or charged.",
        "",
    ]
    names = [c.name for c in report.clusters]
    lines += ["| Team | Cost centre | " + " | ".join(names) + " | GPUs | Cost / month |", "|---|---|" + "---:|" * (len(names) + 2)]
    for team in report.teams:
        held = {h.cluster: _held(h) for h in team.holdings}
        cells = " | ".join(str(held.get(n, "")) for n in names)
        lines.append(f"| {team.team} | {team.cost_center} | {cells} | {team.gpus} | {_money(team.monthly_cost, cur)} |")
    lines += slices_markdown(report.pool_slices, report.team_slices, cur)
    lines += _sharing_markdown(report)
    lines += fleet_queues_markdown(report.fleet_queues)
    lines += layers_markdown(report.layers)
    lines += ["", "## Fleet compatibility matrix", "", "| Component | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    lines += [f"| {title} | " + " | ".join(values) + " |" for title, values in report.matrix]
    if report.unpriced:
        lines += ["", f"No price for: {', '.join(report.unpriced)} (add them under pricing.gpuHour, or pricing.nodeHour per node)."]
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
                    "gpuResource": c.gpu_units,
                    "sharedGpus": c.shared_gpus,
                    "shares": c.shares,
                    "migGpus": c.mig_gpus,
                    "migSlices": c.mig_slices,
                    "committed": c.committed,
                    "headroom": c.headroom,
                    "monthlyCost": c.monthly_cost,
                    "slicedPools": list(c.sliced),
                }
                for c in report.clusters
            ],
            "teams": [
                {
                    "team": t.team,
                    "costCenter": t.cost_center,
                    "gpus": t.gpus,
                    "monthlyCost": t.monthly_cost,
                    "clusters": [
                        {"cluster": h.cluster, "gpus": h.gpus, "mayBorrowGpus": h.may_borrow, "monthlyCost": h.monthly_cost}
                        for h in t.holdings
                    ],
                }
                for t in report.teams
            ],
            "slices": {
                "pools": [
                    {
                        "cluster": p.cluster,
                        "pool": p.pool,
                        "partitioning": p.partitioning,
                        "resource": p.resource,
                        "count": p.slices,
                        "pricePerHour": p.hourly,
                    }
                    for p in report.pool_slices
                ],
                "teams": [
                    {"team": t.team, "cluster": t.cluster, "resource": t.resource, "count": t.slices, "monthlyCost": t.monthly_cost}
                    for t in report.team_slices
                ],
            },
            **({"fleetQueues": fleet_queues_json(report.fleet_queues)} if report.fleet_queues else {}),
            "queues": [
                {
                    "cluster": q.cluster,
                    "queue": q.queue,
                    "teams": list(q.teams),
                    "cohort": q.cohort,
                    "fairSharingWeight": q.weight,
                    "flavors": [
                        {
                            "flavor": f.flavor,
                            "gpuModel": f.gpu_model,
                            "nominalGpus": f.nominal,
                            "mayBorrowGpus": f.borrow,
                            "lendsAtMostGpus": f.lend,
                            "slices": [
                                {"resource": p.resource, "nominal": p.nominal, "mayBorrow": p.borrow, "lendsAtMost": p.lend}
                                for p in f.slices
                            ],
                        }
                        for f in q.flavors
                    ],
                    "summary": q.sentences(),
                }
                for q in report.queues
            ],
            "volcano": [
                {
                    "cluster": v.cluster,
                    "queue": v.queue,
                    "team": v.team,
                    "weight": v.weight,
                    "guaranteeGpus": v.guarantee,
                    "capabilityGpus": v.capability,
                }
                for v in report.volcano
            ],
            "matrix": {title: dict(zip([c.name for c in report.clusters], values, strict=True)) for title, values in report.matrix},
            "unpriced": list(report.unpriced),
            "quotaLayers": layers_json(report.layers),
        },
        indent=2,
    )


def _capacity_chart(report: Report) -> str:
    """Horizontal bars: each cluster's GPUs, committed quota drawn over them."""
    import html  # with its table of entities, for the HTML report only (validate writes FLEET.md)

    widest = max((max(c.gpu_units, c.committed) for c in report.clusters), default=1) or 1
    row, left, width = 34, 190, 520
    label = "GPU capacity and committed quota per cluster"
    size = f'width="{left + width + 120}" height="{row * len(report.clusters) + 20}"'
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{label}" {size}>']
    for i, c in enumerate(report.clusters):
        y = 10 + i * row
        cap, com = width * c.gpu_units / widest, width * c.committed / widest
        colour = "#c0392b" if c.committed > c.gpu_units else "#2e86c1"
        parts += [
            f'<text x="0" y="{y + 17}" font-size="13">{html.escape(c.name)}</text>',
            f'<rect x="{left}" y="{y}" width="{cap:.1f}" height="24" fill="#d6eaf8"><title>{c.gpu_units} nvidia.com/gpu</title></rect>',
            f'<rect x="{left}" y="{y + 6}" width="{com:.1f}" height="12" fill="{colour}"><title>{c.committed} committed</title></rect>',
            f'<text x="{left + max(cap, com) + 8:.1f}" y="{y + 17}" font-size="12">{c.committed} / {c.gpu_units}</text>',
        ]
    parts.append("</svg>")
    return "".join(parts)


def report_html(report: Report) -> str:
    import html  # with its table of entities, for the HTML report only (validate writes FLEET.md)

    def table(head: list[str], rows: list[list[str]]) -> str:
        cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in rows)
        return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"

    cur = report.currency
    names = [c.name for c in report.clusters]
    capacity = table(CAPACITY_HEAD, [_capacity_row(c, cur) for c in report.clusters])
    teams = table(
        ["Team", "Cost centre", *names, "GPUs", "Cost / month"],
        [
            [
                t.team,
                t.cost_center,
                *[str({h.cluster: _held(h) for h in t.holdings}.get(n, "")) for n in names],
                str(t.gpus),
                _money(t.monthly_cost, cur),
            ]
            for t in report.teams
        ],
    )
    matrix = table(["Component", *names], [[title, *values] for title, values in report.matrix])
    sentences = "".join(f"<li>{html.escape(s)}</li>" for q in report.queues for s in q.sentences())
    sharing = table(SHARING_HEAD, _sharing_rows(report)) + (f"<ul>{sentences}</ul>" if sentences else "")
    if report.volcano:
        sharing += table(VOLCANO_HEAD, _volcano_rows(report))
    if report.fleet_queues:
        sharing += "<h3>Fleet-wide queues (MultiKueue)</h3>" + table(FLEET_QUEUES_HEAD, fleet_queues_rows(report.fleet_queues))
    sharing += f"<h2>Quota layers</h2>{table(LAYERS_HEAD, [layer.cells() for layer in report.layers])}" if report.layers else ""
    title = html.escape(f"GPU fleet report: {report.fleet}")
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px}"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{style}</style></head>'
        f"<body><h1>{title}</h1><h2>Capacity and committed quotas</h2>{_capacity_chart(report)}"
        "<p>Light bar: nvidia.com/gpu the node pools can grow to. Dark bar: nvidia.com/gpu committed to teams (red when above).</p>"
        f"{capacity}{''.join(f'<p>{html.escape(line)}</p>' for line in _sliced_note(report) if line)}"
        f"<h2>GPUs held by team</h2>{teams}<h2>Sharing GPUs</h2>{sharing}<h2>Fleet compatibility matrix</h2>{matrix}</body></html>\n"
    )

"""The forecast as an HTML page in the style of `report --format html`: a table, and a chart per subject.

Each chart shows the weekly means (dots), the fitted trend through them and on past now (dashed),
the 90% band of the projection, capacity (red line) and the lead time (grey line): where the band
meets the red line before the grey one, the subject is flagged. Flagged subjects come first; past
CHARTS charts the table alone speaks, so a page for a large fleet stays light.
"""

from __future__ import annotations

import html

from fleetgen.forecast.build import Forecast, Row
from fleetgen.forecast.output import STATUS_WORDS, capacity_text, number, runs_out, subject_label
from fleetgen.forecast.trend import CONFIDENCE

CHARTS = 60
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 380, 190, 40, 22, 26


def _chart(forecast: Forecast, row: Row) -> str:
    o, lead = row.outlook, forecast.lead_time_weeks
    start = -float(forecast.lookback_weeks)
    end = float(max(lead + 4, min((o.expected or 0) / 7 + 2, 52)))
    projected = [w for w in (0.0, end)]
    tops = [row.subject.capacity, *row.weekly.gpus.tolist()]
    if o.line is not None:
        level, slope = o.line
        tops += [level + slope * w + o.band_at(w) for w in projected]
    top = max(tops) * 1.1 or 1.0

    def x(week: float) -> float:
        return LEFT + (WIDTH - LEFT - 8) * (week - start) / (end - start)

    def y(gpus: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - max(min(gpus, top), 0) / top)

    flagged = o.within(lead * 7)
    label = html.escape(f"{subject_label(row.subject)}: {STATUS_WORDS[o.status]}")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{label}" width="{WIDTH}" height="{HEIGHT}">',
        f'<text x="4" y="16" font-size="13" font-weight="bold" fill="{"#c0392b" if flagged else "#222"}">'
        f"{html.escape(subject_label(row.subject))}</text>",
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - 8}" y2="{HEIGHT - BOTTOM}" stroke="#999"/>',
        f'<text x="{LEFT - 4}" y="{y(top / 1.1) + 4:.1f}" font-size="10" text-anchor="end">{top / 1.1:.0f}</text>',
        f'<text x="{LEFT - 4}" y="{HEIGHT - BOTTOM + 4}" font-size="10" text-anchor="end">0</text>',
    ]
    if o.line is not None:
        level, slope = o.line
        steps = [i * end / 24 for i in range(25)]
        upper = " ".join(f"{x(w):.1f},{y(level + slope * w + o.band_at(w)):.1f}" for w in steps)
        lower = " ".join(f"{x(w):.1f},{y(level + slope * w - o.band_at(w)):.1f}" for w in reversed(steps))
        parts += [
            f'<polygon points="{upper} {lower}" fill="#aed6f1" opacity="0.6"><title>{CONFIDENCE:.0%} band</title></polygon>',
            f'<line x1="{x(start):.1f}" y1="{y(level + slope * start):.1f}" x2="{x(0):.1f}" y2="{y(level):.1f}" stroke="#2e86c1"/>',
            f'<line x1="{x(0):.1f}" y1="{y(level):.1f}" x2="{x(end):.1f}" y2="{y(level + slope * end):.1f}" '
            'stroke="#2e86c1" stroke-dasharray="5,3"/>',
        ]
    parts += [
        f'<circle cx="{x(float(w)):.1f}" cy="{y(float(g)):.1f}" r="2.5" fill="#1b4f72"><title>{float(g):.1f} GPUs</title></circle>'
        for w, g in zip(row.weekly.weeks, row.weekly.gpus, strict=True)
    ]
    capacity_y = y(row.subject.capacity)
    parts += [
        f'<line x1="{LEFT}" y1="{capacity_y:.1f}" x2="{WIDTH - 8}" y2="{capacity_y:.1f}" stroke="#c0392b" stroke-width="1.5">'
        f"<title>capacity {row.subject.capacity} GPUs</title></line>",
        f'<line x1="{x(0):.1f}" y1="{TOP}" x2="{x(0):.1f}" y2="{HEIGHT - BOTTOM}" stroke="#555"/>',
        f'<text x="{x(0) + 2:.1f}" y="{HEIGHT - 6}" font-size="10">now</text>',
        f'<line x1="{x(lead):.1f}" y1="{TOP}" x2="{x(lead):.1f}" y2="{HEIGHT - BOTTOM}" stroke="#888" stroke-dasharray="2,2"/>',
        f'<text x="{x(lead) - 2:.1f}" y="{HEIGHT - 6}" font-size="10" text-anchor="end">+{lead} weeks</text>',
        f'<text x="{LEFT}" y="{HEIGHT - 6}" font-size="10">{int(start)} weeks</text>',
        "</svg>",
    ]
    return "".join(parts)


def forecast_html(forecast: Forecast) -> str:
    title = html.escape(f"GPU capacity forecast: {forecast.fleet}")
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px}"
        "td.out{color:#c0392b;font-weight:bold}.charts{display:flex;flex-wrap:wrap;gap:12px}"
    )
    lead = forecast.lead_time_weeks * 7
    head = "".join(f"<th>{h}</th>" for h in ("What", "Capacity", "Last week", "Per week", f"Runs out ({CONFIDENCE:.0%} interval)"))
    body = "".join(
        "<tr>"
        f"<td>{html.escape(subject_label(r.subject))}</td><td>{capacity_text(r.subject)}</td>"
        f"<td>{'—' if r.outlook.last_week is None else f'{r.outlook.last_week:.1f}'}</td>"
        f"<td>{number(r.outlook.growth)}</td>"
        f"<td{' class=out' if r.outlook.within(lead) else ''}>{html.escape(runs_out(forecast, r))}</td>"
        "</tr>"
        for r in forecast.rows
    )
    charted = sorted(forecast.rows, key=lambda r: (not r.outlook.within(lead), r.subject))[:CHARTS]
    charts = "".join(_chart(forecast, r) for r in charted if r.weekly.weeks.size)
    more = len(forecast.rows) - len(charted)
    as_of = "no history" if forecast.as_of is None else f"GPUs in use as of {forecast.as_of:%Y-%m-%d %H:%M} UTC"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{style}</style></head>'
        f"<body><h1>{title}</h1><p>{html.escape(as_of)}; weekly means over the last {forecast.lookback_weeks} weeks; "
        f"lead time {forecast.lead_time_weeks} weeks. Red: may run out inside the lead time.</p>"
        f'<h2>When each runs out</h2><div class="charts">{charts}</div>'
        f"{f'<p>{more} more in the table.</p>' if more > 0 else ''}"
        "<p>Dots: weekly means. Line: the fitted trend, dashed past now, in its band. Red line: capacity. Grey: the lead time.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>\n"
    )

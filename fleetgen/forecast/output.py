"""The forecast as text (a table, flagged rows marked) and as JSON (versioned, one object per subject)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from fleetgen.forecast.build import Forecast, Row
from fleetgen.forecast.history import Subject
from fleetgen.forecast.trend import CONFIDENCE

NAMED = 8  # subjects named in a note; JSON lists every one
STATUS_WORDS = {
    "exhausted": "at capacity now",
    "runs-out": "runs out",
    "no-growth": "no upward trend",
    "too-little-history": "too little history",
}


def day(forecast: Forecast, days: float | None) -> str | None:
    """The date `days` after the forecast's now, or None."""
    if days is None or forecast.as_of is None:
        return None
    return (forecast.as_of + timedelta(days=days)).date().isoformat()


def runs_out(forecast: Forecast, row: Row) -> str:
    """ "2027-01-10 (2026-12-28 to 2027-02-01)", "after 2028-11-30", or what stands instead of a date."""
    o = row.outlook
    if o.status == "exhausted":
        return "now"
    if o.status == "too-little-history":
        return f"{STATUS_WORDS[o.status]} ({row.weekly.weeks.size} whole weeks)"
    expected = day(forecast, o.expected) or ("not within 2 years" if o.status == "runs-out" else STATUS_WORDS[o.status])
    earliest, latest = day(forecast, o.earliest), day(forecast, o.latest)
    if earliest is None:
        return expected
    return f"{expected} ({earliest} to {latest or 'beyond 2 years'})"


def subject_label(s: Subject) -> str:
    labels = {"cluster": s.cluster, "pool": f"{s.cluster} pool {s.name}", "team": f"{s.cluster} team {s.name}"}
    return labels.get(s.kind, f"{s.cluster} GPUs busy (%)")


def capacity_text(s: Subject) -> str:
    """A subject's capacity: GPUs, or 100% for a cluster's GPU utilisation."""
    return f"{s.capacity}%" if s.kind == "busy" else str(s.capacity)


def number(value: float | None, sign: bool = True) -> str:
    """One decimal, an em dash for none; a flat trend reads +0.0, never -0.0."""
    if value is None:
        return "—"
    value = round(value, 1) + 0.0
    return f"{value:+.1f}" if sign else f"{value:.1f}"


def forecast_text(forecast: Forecast) -> str:
    if forecast.as_of is None:
        return f"{forecast.fleet}: no GPU allocation history for any cluster, pool or team of fleet.yaml\n"
    head = ["", "What", "Capacity", "Last week", "Per week", f"Runs out ({CONFIDENCE:.0%} interval)"]
    lead = forecast.lead_time_weeks * 7
    rows = [
        [
            "!" if r.outlook.within(lead) else "",
            subject_label(r.subject),
            capacity_text(r.subject),
            number(r.outlook.last_week, sign=False),
            number(r.outlook.growth),
            runs_out(forecast, r),
        ]
        for r in forecast.rows
    ]
    widths = [max(len(line[i]) for line in [head, *rows]) for i in range(len(head))]
    lines = [
        f"{forecast.fleet}: GPUs in use as of {forecast.as_of:%Y-%m-%d %H:%M} UTC, weekly means over the last "
        f"{forecast.lookback_weeks} weeks; lead time {forecast.lead_time_weeks} weeks (! may run out inside it)",
        "",
    ]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in [head, *rows]]
    lines += _notes(forecast)
    return "\n".join(lines) + "\n"


def _notes(forecast: Forecast) -> list[str]:
    notes = []
    if forecast.without_history:
        shown = forecast.without_history[:NAMED]
        more = len(forecast.without_history) - len(shown)
        names = ", ".join(subject_label(s) for s in shown) + (f" and {more} more (all in --format json)" if more else "")
        notes.append(f"No history for {len(forecast.without_history)}: {names}.")
    if forecast.unknown:
        notes.append(f"Not in fleet.yaml, left out: {', '.join(forecast.unknown)}.")
    if forecast.ignored:
        notes.append(f"{forecast.ignored} series of another resource, a hard limit, or naming no cluster, pool or team: left out.")
    return ["", *notes] if notes else []


def _row_json(forecast: Forecast, row: Row) -> dict[str, Any]:
    o, s = row.outlook, row.subject
    return {
        "kind": s.kind,
        "cluster": s.cluster,
        "name": s.name,
        "capacityGpus": s.capacity,
        "status": o.status,
        "insideLeadTime": o.within(forecast.lead_time_weeks * 7),
        "lastWeekGpus": _rounded(o.last_week),
        "growthGpusPerWeek": _rounded(o.growth),
        "runsOut": {"expected": day(forecast, o.expected), "earliest": day(forecast, o.earliest), "latest": day(forecast, o.latest)},
        "weeks": [{"weeksFromNow": float(w), "gpus": round(float(g), 3)} for w, g in zip(row.weekly.weeks, row.weekly.gpus, strict=True)],
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def forecast_json(forecast: Forecast) -> str:
    return json.dumps(
        {
            "version": 1,
            "fleet": forecast.fleet,
            "asOf": None if forecast.as_of is None else forecast.as_of.isoformat().replace("+00:00", "Z"),
            "leadTimeWeeks": forecast.lead_time_weeks,
            "lookbackWeeks": forecast.lookback_weeks,
            "confidence": CONFIDENCE,
            "subjects": [_row_json(forecast, r) for r in forecast.rows],
            "withoutHistory": [{"kind": s.kind, "cluster": s.cluster, "name": s.name} for s in forecast.without_history],
            "notInFleet": list(forecast.unknown),
            "ignoredSeries": forecast.ignored,
        },
        indent=2,
    )

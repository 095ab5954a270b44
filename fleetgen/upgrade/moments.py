"""Moments of an upgrade in UTC, and date arithmetic that ends in a usage error, never an OverflowError."""

from __future__ import annotations

import datetime

from fleetgen.errors import InputError

RANGE = "the dates fleetgen can count with (years 1 to 9999, UTC)"


def as_utc(moment: datetime.datetime) -> datetime.datetime:
    """An aware moment in UTC; a naive one (fleet.yaml's `appliedAt: 2026-11-24T09:00`) is taken as UTC."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=datetime.UTC)
    try:
        return moment.astimezone(datetime.UTC)
    except OverflowError:
        raise InputError(f"{moment.isoformat()} is outside {RANGE}") from None


def later(moment: datetime.datetime, delta: datetime.timedelta, what: str) -> datetime.datetime:
    """moment + delta; past year 9999 (`--start 9999-12-31T23:59Z` plus a 48h soak) is a usage error, not a crash."""
    try:
        return moment + delta
    except OverflowError:
        raise InputError(f"{what} would fall after 9999-12-31, the last of {RANGE}; give an earlier time") from None


def when(moment: datetime.datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "-"


def utc_now() -> datetime.datetime:
    """Now, to the second: what `apply --at` and `status --now` default to."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def readable(delta: datetime.timedelta) -> str:
    """A span as people say it: `1d 6h`, `5h 30m`, `45m` (to the minute, rounded up; `0m` when none is left)."""
    minutes = max(0, -int(-delta.total_seconds() // 60))
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{minutes}m" if minutes and not days else ""]
    return " ".join(p for p in parts if p) or "0m"


def hours(delta: datetime.timedelta) -> str:
    """A configured span as fleet.yaml writes it: 48h."""
    return f"{delta.total_seconds() / 3600:g}h"

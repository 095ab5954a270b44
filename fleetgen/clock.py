"""The clock the checks read, in one place, and the window of time in which a verdict kept for a fleet text holds.

Two checks read the clock (checks/verdict_window.py says which and how); everything else a verdict depends on is
the text, the options and fleetgen's code. A kept verdict carries its window and is read only inside it. This module
builds no model, so the shortcuts that read a kept verdict (check's ledger, validate's report) stay light.
"""

import datetime
from typing import NamedTuple


def utc_today() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


def utc_moment() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class VerdictWindow(NamedTuple):
    """From `since` (None: any moment) through the day `through` (None: no last day), both in UTC."""

    since: datetime.datetime | None
    through: datetime.date | None

    def holds(self) -> bool:
        """Whether a verdict reached inside this window holds now."""
        return self.holds_at(utc_today(), utc_moment())

    def holds_at(self, today: datetime.date, now: datetime.datetime) -> bool:
        return (self.through is None or today <= self.through) and (self.since is None or now >= self.since)

    def to_text(self) -> str:
        return f"{self.since.isoformat() if self.since else '-'} {self.through.isoformat() if self.through else '-'}"

    @staticmethod
    def from_text(text: str) -> "VerdictWindow | None":
        """The window `text` holds, or None for anything that is not exactly what `to_text` writes."""
        parts = text.split(" ")
        if len(parts) != 2:
            return None
        try:
            since = datetime.datetime.fromisoformat(parts[0]) if parts[0] != "-" else None
            through = datetime.date.fromisoformat(parts[1]) if parts[1] != "-" else None
        except ValueError:
            return None
        if since is not None and since.tzinfo is None:
            return None
        return VerdictWindow(since, through)

"""When a verdict on a fleet text holds: the checks that read the clock, as a window of time.

Every check but two is a function of the text alone. A time-bound grant is an error from the day after its
`until` (grants.py), so a text that passes stops passing after its first grant's last day. An upgrade record
time later than now is an error (record_times.py), so a text that passes keeps passing as time goes on, but did
not pass before its latest record time (less the clock-skew allowance). A verdict the cache keeps for a text (it
passed) is read only inside that window, so no kept verdict waves through a grant that has ended since, whatever
run kept it, on whichever day.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from fleetgen.checks import grants
from fleetgen.checks.record_times import CLOCK_SKEW
from fleetgen.model import Fleet


def _utc(moment: datetime.datetime) -> datetime.datetime:
    return moment.replace(tzinfo=datetime.UTC) if moment.tzinfo is None else moment.astimezone(datetime.UTC)


@dataclass(frozen=True)
class VerdictWindow:
    """From the moment the upgrade record's times are all in the past (None: any), through the last day of the first
    grant to end (None: no grant)."""

    since: datetime.datetime | None
    through: datetime.date | None

    @staticmethod
    def of(fleet: Fleet) -> VerdictWindow:
        record = fleet.upgrade
        moments = []
        if record is not None:
            moments = [m for wave in record.waves for m in (wave.applied_at, wave.verified_at) if m]
            moments += [record.closed_at] if record.closed_at is not None else []
        ends = [p.until for team in fleet.teams for p in team.clusters.values() if p is not None and p.until is not None]
        since = max(_utc(m) for m in moments) - CLOCK_SKEW if moments else None
        return VerdictWindow(since, min(ends) if ends else None)

    def holds(self) -> bool:
        """Whether a verdict reached inside this window holds now (the clock the checks read)."""
        return self.holds_at(grants.utc_today(), datetime.datetime.now(datetime.UTC))

    def holds_at(self, today: datetime.date, now: datetime.datetime) -> bool:
        return (self.through is None or today <= self.through) and (self.since is None or now >= self.since)

    def to_text(self) -> str:
        return f"{self.since.isoformat() if self.since else '-'} {self.through.isoformat() if self.through else '-'}"

    @staticmethod
    def from_text(text: str) -> VerdictWindow | None:
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

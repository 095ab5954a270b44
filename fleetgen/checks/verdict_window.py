"""The window of time in which a fleet text's verdict holds: the checks that read the clock.

Every check but two is a function of the text alone. A time-bound grant is an error from the day after its
`until` (grants.py), so a text that passes stops passing after its first grant's last day. An upgrade record
time later than now is an error (record_times.py), so a text that passes keeps passing as time goes on, but did
not pass before its latest record time (less the clock-skew allowance). A verdict the cache keeps for a text (it
passed) is read only inside that window (fleetgen/clock.py), so no kept verdict waves through a grant that has
ended since, whatever run kept it, on whichever day.
"""

from __future__ import annotations

from fleetgen.checks.record_times import CLOCK_SKEW, as_utc
from fleetgen.clock import VerdictWindow
from fleetgen.model import Fleet


def verdict_window(fleet: Fleet) -> VerdictWindow:
    record = fleet.upgrade
    moments = []
    if record is not None:
        moments = [m for wave in record.waves for m in (wave.applied_at, wave.verified_at) if m]
        moments += [record.closed_at] if record.closed_at is not None else []
    ends = [p.until for team in fleet.teams for p in team.clusters.values() if p is not None and p.until is not None]
    since = max(as_utc(m) for m in moments) - CLOCK_SKEW if moments else None
    return VerdictWindow(since, min(ends) if ends else None)

"""The upgrade record holds only what has happened: every appliedAt, verifiedAt and closedAt is in the past.

The soak gate counts from these times, so a time ahead of the clock would let a later `upgrade apply` start a
wave early with no override on record. Clocks of laptops and CI runners disagree by seconds to minutes, so a time
up to CLOCK_SKEW ahead of now is still taken as now. The check takes `now` as an argument (the caller reads the
clock once), so the rest of the checks stay pure.
"""

from __future__ import annotations

import datetime

from fleetgen.errors import Finding
from fleetgen.model import Fleet

CLOCK_SKEW = datetime.timedelta(minutes=5)


def as_utc(moment: datetime.datetime) -> datetime.datetime:
    return moment.replace(tzinfo=datetime.UTC) if moment.tzinfo is None else moment.astimezone(datetime.UTC)


def shown(moment: datetime.datetime) -> str:
    return as_utc(moment).strftime("%Y-%m-%d %H:%M:%S UTC")


def ahead_of(moment: datetime.datetime, now: datetime.datetime) -> bool:
    """Whether `moment` is later than `now` plus the clock-skew allowance."""
    return as_utc(moment) > as_utc(now) + CLOCK_SKEW


def future_records(fleet: Fleet, now: datetime.datetime) -> list[Finding]:
    """An error for each time in the upgrade record later than `now` (plus the allowance)."""
    record = fleet.upgrade
    if record is None:
        return []
    found: list[tuple[tuple[str | int, ...], datetime.datetime]] = []
    for index, wave in enumerate(record.waves):
        found += [
            (("upgrade", "waves", index, key), moment)
            for key, moment in (("appliedAt", wave.applied_at), ("verifiedAt", wave.verified_at))
            if moment
        ]
    if record.closed_at is not None:
        found.append((("upgrade", "closedAt"), record.closed_at))
    return [
        Finding(
            path,
            f"{shown(moment)} is later than now ({shown(now)}): the record says when a wave was applied or seen done, "
            "and the soak counts from it; write the time it happened",
        )
        for path, moment in found
        if ahead_of(moment, now)
    ]

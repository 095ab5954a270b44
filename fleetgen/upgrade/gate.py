"""The seed's promise, kept at `upgrade apply`: a wave starts only after the previous wave has soaked
(`rollout.soak`, counted from that wave's `appliedAt` in the upgrade record), inside a maintenance
window and outside every freeze. A wave refused here says when it may start. An explicit override
of the soak (a reason) lets it start earlier and is written into the record, where status and the
pull request's change summary show it; windows and freezes have no override (edit `rollout`).
"""

from __future__ import annotations

import datetime

from fleetgen.model import Fleet, Upgrade
from fleetgen.upgrade.moments import as_utc, later, when
from fleetgen.upgrade.plan import PlanRefused, earliest_start


def _hours(delta: datetime.timedelta) -> str:
    return f"{delta.total_seconds() / 3600:g}h"


def soak_end(fleet: Fleet, record: Upgrade, number: int) -> datetime.datetime | None:
    """When the soak of the wave before `number` ends; None for wave 1 or when that wave has no appliedAt."""
    if number < 2 or number - 2 >= len(record.waves):
        return None
    previous = record.waves[number - 2].applied_at
    if previous is None:
        return None
    return later(as_utc(previous), fleet.rollout.soak, f"the end of wave {number - 1}'s soak")


def _why_closed(moment: datetime.datetime, fleet: Fleet) -> str:
    freeze = next((f for f in fleet.rollout.freezes if f.start <= moment.date() <= f.end), None)
    if freeze is not None:
        reason = f" ({freeze.reason})" if freeze.reason else ""
        return f"{when(moment)} is inside the freeze {freeze.start} to {freeze.end}{reason} (rollout.freezes)"
    return f"{when(moment)} is outside the maintenance windows (rollout.windows)"


def wave_gate(fleet: Fleet, record: Upgrade, number: int, at: datetime.datetime, override_soak: str | None = None) -> str | None:
    """Refuse wave `number` starting at `at` before its time; return the override reason to record, or None.

    The reason is returned only when it was needed: an override given after the soak ended changes nothing."""
    at = as_utc(at)
    ends = soak_end(fleet, record, number)
    used = None
    if ends is not None and at < ends:
        if override_soak is None:
            opens = earliest_start(ends, fleet.rollout)
            applied = ends - fleet.rollout.soak
            raise PlanRefused(
                [
                    f"wave {number} may start at {when(opens)}: wave {number - 1}, applied {when(applied)}, soaks "
                    f"{_hours(fleet.rollout.soak)} (rollout.soak); wait, or give --override-soak REASON"
                ]
            )
        used = override_soak
    opens = earliest_start(at, fleet.rollout)
    if opens != at:
        raise PlanRefused([f"wave {number} may start at {when(opens)}: {_why_closed(at, fleet)}"])
    return used

"""Time-bound grants: a team's values on one cluster held until a date, with a reason.

The date is compared with today in UTC, read from the clock at the moment the checks run: nothing a
caller passes on the command line moves it, so an expired grant cannot be waved through. Tests give
`today` to check_grants itself. 14 days before a grant ends validate warns; from the day after its
`until` it is an error naming the pull request that ends it.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator

from fleetgen import clock
from fleetgen.errors import Finding, Severity
from fleetgen.model import Fleet

WARN_DAYS = 14


def utc_today() -> datetime.date:
    return clock.utc_today()  # the one clock (fleetgen/clock.py), which kept verdicts read too


def check_grants(fleet: Fleet, today: datetime.date | None = None) -> Iterator[Finding]:
    today = today or utc_today()
    for t, team in enumerate(fleet.teams):
        for name, placement in team.clusters.items():
            if placement is None or placement.until is None:
                continue
            at = ("teams", t, "clusters", name, "until")
            if not placement.reason:
                yield Finding(at, "a time-bound grant says why: add `reason` (the business justification)")
            gpus = team.quota_on(name).requests.gpu or 0
            back = f"{team.quota.requests.gpu or 0} GPUs" if team.quota.requests.gpu is not None else "its default quota"
            undo = (
                f"open the pull request that ends it: drop until and the values that differ from the team's quota under "
                f"teams[{t}].clusters.{name} (back to {back}), or take {team.name} off {name}"
            )
            left = (placement.until - today).days
            if left < 0:
                # fix: Remove the ended grant (or make the change it names permanent in the quota)
                yield Finding(at, f"the grant of {gpus} GPUs to {team.name} on {name} ended on {placement.until}; {undo}")
            elif left <= WARN_DAYS:
                when = "today" if left == 0 else f"in {left} day{'s' if left != 1 else ''}"
                message = f"the grant of {gpus} GPUs to {team.name} on {name} ends {when} ({placement.until}); {undo}"
                # fix: Plan for the end of the grant: extend it in a reviewed pull request, or let it lapse
                yield Finding(at, message, Severity.WARNING)


GRANT_CHECKS = (check_grants,)

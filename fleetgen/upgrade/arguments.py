"""The arguments of `fleetgen upgrade plan|apply|status`, parsed and bounded before any work starts.

Every function here either returns a value the planner can work with in bounded time and memory,
or raises InputError (exit 2) with one line naming the option and what is wrong with it. Whether a
well-formed target is one the compatibility data knows is the planner's call (plan.py), since
that is a finding about the fleet, not a usage error.
"""

from __future__ import annotations

import datetime

from fleetgen.checks.record_times import CLOCK_SKEW, ahead_of
from fleetgen.errors import InputError
from fleetgen.model import UPGRADE_COMPONENTS, Fleet, Version
from fleetgen.upgrade.moments import RANGE, as_utc, readable, when
from fleetgen.upgrade.plan import versions_of

MAX_TEXT = 200  # longer option values are refused before anything parses them
MAX_REASON = 200  # an override reason is one line of fleet.yaml


def _shown(text: str) -> str:
    """The value as an error message quotes it: repr, cut short, one line whatever it holds."""
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."


def parse_moment(text: str | None, option: str) -> datetime.datetime | None:
    """`--start`, `--at`, `--now`: an ISO 8601 date and time, UTC unless it says otherwise; None when not given."""
    if text is None:
        return None
    hint = "expected a date and time such as 2026-11-24T09:00Z"
    if len(text) > MAX_TEXT:
        raise InputError(f"{option} {_shown(text)}: {hint}")
    try:
        moment = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InputError(f"{option} {_shown(text)}: {hint}") from None
    try:
        return as_utc(moment)
    except InputError:
        raise InputError(f"{option} {_shown(text)}: outside {RANGE}") from None


def recorded_moment(text: str | None, option: str, now: datetime.datetime) -> datetime.datetime:
    """`upgrade apply --at`, `upgrade verify --at`: when the wave was applied or seen done, `now` when not given. The
    soak gate counts from these times, so one later than now (beyond the clock-skew allowance) is refused."""
    moment = parse_moment(text, option) or now
    if ahead_of(moment, now):
        raise InputError(
            f"{option} {when(moment)} is later than now ({when(now)}) by more than the {readable(CLOCK_SKEW)} clock-skew "
            "allowance: fleet.yaml records when a wave happened, and the soak counts from it"
        )
    return moment


def requested_versions(fleet: Fleet, sets: tuple[str, ...], to: str | None) -> dict[str, Version]:
    """`--set COMPONENT=VERSION` (repeatable) or `--to VERSION_SET`: the target versions asked for."""
    if sets and to:
        raise InputError("give --set or --to, not both")
    if to is not None:
        if to not in fleet.version_sets:
            raise InputError(f"--to {_shown(to)}: no such version set (known: {', '.join(fleet.version_sets)})")
        return versions_of(fleet.version_sets[to])
    out: dict[str, Version] = {}
    for item in sets:
        component, sep, version = item.partition("=")
        if component == IMAGE:
            continue  # requested_image
        if not sep or component not in UPGRADE_COMPONENTS:
            raise InputError(f"--set {_shown(item)}: expected COMPONENT=VERSION with COMPONENT one of {', '.join(UPGRADE_COMPONENTS)}")
        if component in out:
            raise InputError(f"--set {_shown(item)}: {component} is already set to {out[component]}")
        if len(version) > 40:
            raise InputError(f"--set {_shown(item)}: a version has at most 40 characters")
        try:
            out[component] = Version.parse(version)
        except ValueError as exc:
            raise InputError(f"--set {_shown(item)}: {exc}") from None
    return out


IMAGE = "nodeImage"  # --set nodeImage=IMAGE: not a version, the node image that carries the target driver


def requested_image(sets: tuple[str, ...]) -> str | None:
    """`--set nodeImage=IMAGE`: the node image a driver upgrade rolls out where node images carry the driver."""
    images = [item.partition("=")[2] for item in sets if item.partition("=")[0] == IMAGE]
    if not images:
        return None
    image = images[-1]
    if len(images) > 1 or not image or len(image) > MAX_TEXT or not all(ch.isalnum() or ch in "-_.:/@" for ch in image):
        raise InputError(
            f"--set {IMAGE}={_shown(image)}: give one node image name, e.g. AKSUbuntu-2204gen2containerd-202411.12.0 or ami-0abc"
        )
    return image


def wave_number(number: int) -> int:
    """`--wave N`: a wave counts from 1; how far it may go is the upgrade's business (apply.py)."""
    if number < 1:
        raise InputError(f"--wave {number}: waves count from 1")
    return number


def override_reason(text: str | None) -> str | None:
    """`--override-soak REASON`: one line saying why, written into the upgrade record of fleet.yaml."""
    if text is None:
        return None
    reason = text.strip()
    if not reason:
        raise InputError("--override-soak: give the reason the soak is cut short, e.g. --override-soak 'CVE-2026-1234 fix'")
    if len(reason) > MAX_REASON or any(ch in reason for ch in "\n\r\t\x00\u2028\u2029\x85"):
        raise InputError(f"--override-soak {_shown(text)}: the reason is one line of at most {MAX_REASON} characters")
    return reason

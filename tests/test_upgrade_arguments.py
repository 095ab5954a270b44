"""Upgrade arguments are bounded: versions past the compatibility data, absurd wave numbers and dates
past year 9999 are refused at once with one line (exit 1 or 2), never a runaway or an internal error."""

from __future__ import annotations

import datetime
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from conftest import EXAMPLE, assert_quick, examples, quickly, replace_once
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from node_dumps import verified, wave_evidence

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import FindingsError, FleetgenError, InputError
from fleetgen.model import COMPONENTS, Version
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.arguments import override_reason, parse_moment, requested_versions, wave_number
from fleetgen.upgrade.plan import PlanRefused, plan_upgrade
from fleetgen.upgrade.status import upgrade_status

Run = Callable[..., CompletedProcess[str]]
UTC = datetime.UTC
AT = datetime.datetime(2026, 11, 24, 9, tzinfo=UTC)
DRIVER = {"driver": Version("560.35.03")}
# The example with its GPU Operator off: its v24.3.0 supports no driver above 550.90.07, so a plan to 560.35.03 is
# refused there (tests/test_upgrade_operator.py). The arguments tested here do not depend on it.
EXAMPLE_TEXT = replace_once(EXAMPLE.read_text(), "gpuOperator: {version: v24.3.0}", "gpuOperator: {enabled: false}")
EXAMPLE_LOADED = load_fleet_text(EXAMPLE_TEXT.encode())
FLEET = EXAMPLE_LOADED.fleet
WAVE1 = apply_wave(EXAMPLE_LOADED, 1, DRIVER, AT)


def test_a_kubernetes_target_past_the_compatibility_data_is_refused_before_planning() -> None:
    for target in ("1.100000.0", "1." + "9" * 30, "2.0"):
        with quickly(50, target), pytest.raises(PlanRefused) as caught:
            plan_upgrade(FLEET, {"kubernetes": Version(target)})
        (finding,) = caught.value.findings
        assert "fleetgen's compatibility data knows Kubernetes up to 1.37; update fleetgen first" in finding.message
    assert plan_upgrade(FLEET, {"kubernetes": Version("1.31.2")}).waves  # within the data: planned as before


def test_wave_numbers_far_past_the_upgrade_are_refused_without_counting_to_them() -> None:
    huge = 99999999999999999999
    with pytest.raises(PlanRefused, match="^wave 1 is not in fleet.yaml yet: apply wave 1 first, then the others in order up to 9+$"):
        apply_wave(EXAMPLE_LOADED, huge, DRIVER, AT)
    with pytest.raises(PlanRefused, match=f"^the upgrade has waves 1 to 4, not {huge}$"):
        apply_wave(load_fleet_text(WAVE1.encode()), huge, None, AT)
    for number in (0, -1, -huge):
        with pytest.raises(InputError, match=f"^--wave {number}: waves count from 1$"):
            apply_wave(EXAMPLE_LOADED, number, DRIVER, AT)
    assert wave_number(3) == 3


def test_dates_past_year_9999_are_usage_errors_not_overflows() -> None:
    last = parse_moment("9999-12-31T23:59Z", "--start")
    assert last == datetime.datetime(9999, 12, 31, 23, 59, tzinfo=UTC)
    with pytest.raises(InputError, match="^the end of wave 1's soak would fall after 9999-12-31"):
        plan_upgrade(FLEET, DRIVER, last)
    with pytest.raises(InputError, match=r"^--at '0001-01-01T00:00\+01:00': outside the dates fleetgen can count with"):
        parse_moment("0001-01-01T00:00+01:00", "--at")
    with pytest.raises(InputError, match="^--start 'tomorrow': expected a date and time such as 2026-11-24T09:00Z$"):
        parse_moment("tomorrow", "--start")
    assert parse_moment("2026-11-24T10:00+01:00", "--at") == AT  # other offsets become UTC
    assert parse_moment("2026-11-24T09:00", "--at") == AT  # no offset: UTC
    # an upgrade record near the end of time: status and the next wave say so in one line
    late = datetime.datetime(9999, 12, 31, 9, tzinfo=UTC)
    applied = apply_wave(EXAMPLE_LOADED, 1, DRIVER, late)
    with pytest.raises(InputError, match="^the end of wave 1's soak would fall after 9999-12-31"):
        verified(applied, 1, late)
    record = replace_once(
        applied, "appliedAt: '9999-12-31T09:00:00Z'", "appliedAt: '9999-12-31T09:00:00Z', verifiedAt: '9999-12-31T09:00:00Z'"
    )
    with pytest.raises(InputError, match="after 9999-12-31"):
        upgrade_status(load_fleet_text(record.encode()).fleet, AT)
    evidence = wave_evidence(load_fleet_text(record.encode()).fleet, 1)
    with pytest.raises(InputError, match="after 9999-12-31"):
        apply_wave(load_fleet_text(record.encode()), 2, None, datetime.datetime(9999, 12, 31, 10, tzinfo=UTC), evidence=evidence)


def test_a_freeze_to_the_end_of_time_is_a_usage_error_when_planning_dates() -> None:
    text = EXAMPLE_TEXT + "\nrollout:\n  freezes: [{start: 2026-11-01, end: 9999-12-31, reason: forever}]\n"
    with pytest.raises(InputError, match="^the first start after 2026-11-24 09:00 UTC outside the freezes would fall after 9999-12-31$"):
        plan_upgrade(load_fleet_text(text.encode()).fleet, DRIVER, AT)


@pytest.mark.parametrize("soak", ["9999999999d", "400d"])
def test_a_soak_too_long_to_count_with_is_a_finding_in_fleet_yaml(soak: str) -> None:
    with pytest.raises(FindingsError) as caught:
        load_fleet_text((EXAMPLE_TEXT + f"\nrollout:\n  soak: {soak}\n").encode())
    assert [f.dotted_path for f in caught.value.findings] == ["rollout.soak"]


def test_requested_versions_and_override_reasons_are_checked_with_one_line_each() -> None:
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: requested_versions(FLEET, ("driver=1",), "prod-2024q4"), "give --set or --to, not both"),
        (lambda: requested_versions(FLEET, ("driver=1", "driver=2"), None), "--set 'driver=2': driver is already set to 1"),
        (lambda: requested_versions(FLEET, ("gpu=1",), None), "--set 'gpu=1': expected COMPONENT=VERSION with COMPONENT one of"),
        (lambda: requested_versions(FLEET, ("driver=" + "1" * 41,), None), "a version has at most 40 characters"),
        (lambda: requested_versions(FLEET, (), "no\nsuch"), "--to 'no\\nsuch': no such version set"),
        (lambda: override_reason("  "), "--override-soak: give the reason"),
        (lambda: override_reason("two\nlines"), "the reason is one line of at most 200 characters"),
        (lambda: override_reason("x" * 201), "the reason is one line of at most 200 characters"),
    ]
    for call, expected in cases:
        with pytest.raises(InputError) as caught:
            call()
        assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert requested_versions(FLEET, ("driver=v560.35.03",), None) == DRIVER
    assert override_reason(" CVE fix ") == "CVE fix"


# -- generated garbage ----------------------------------------------------------------------------

# what a command line can carry: no NUL, no lone surrogate (an argv is bytes; a lone surrogate has no
# encoding, so subprocess itself refuses it before fleetgen runs)
_text = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=40)
_version = st.one_of(
    _text,
    st.from_regex(r"v?[0-9]{1,25}(\.[0-9]{1,25}){0,5}", fullmatch=True),
    st.sampled_from(["1.100000.0", "1.37.0", "1.38", "2.0", "1.29.4", "560.35.03", "0", ""]),
)
_component = st.one_of(st.sampled_from(COMPONENTS), _text)
_set = st.one_of(st.builds(lambda c, v: f"{c}={v}", _component, _version), _text)
_moment = st.one_of(
    _text,
    st.sampled_from(["9999-12-31T23:59Z", "0001-01-01T00:00+01:00", "9999-12-31T23:59-12:00", "2026-13-01T00:00Z", "2026-11-24"]),
    st.datetimes(timezones=st.sampled_from([UTC, datetime.timezone(datetime.timedelta(hours=14))])).map(datetime.datetime.isoformat),
)
_wave = st.one_of(st.integers(), st.integers(min_value=10**15), st.just(-(10**30)))
_bad = st.sampled_from(  # one argument sure to be refused, so no example may succeed
    [("--set", "kubernetes=1.100000.0"), ("--set", "gpu=1"), ("--set", "driver=x"), ("--start", "9999-12-31T23:59Z"), ("--start", "soon")]
)


def _not_one(text: str) -> bool:
    try:
        return int(text) != 1
    except ValueError:
        return True


def _check_library(sets: list[str], to: str | None, start: str | None, number: int, at: str | None, reason: str | None) -> None:
    """What `upgrade plan` and `upgrade apply` do with their arguments, without a terminal: each either works or
    raises fleetgen's own error with one-line messages, within a bounded time."""

    def plan() -> object:
        return plan_upgrade(FLEET, requested_versions(FLEET, tuple(sets), to) or DRIVER, parse_moment(start, "--start"))

    def apply() -> object:
        requested = requested_versions(FLEET, tuple(sets), None) or None
        moment = parse_moment(at, "--at") or AT
        return apply_wave(load_fleet_text(WAVE1.encode()), wave_number(number), requested, moment, override_reason(reason))

    for stage in (plan, apply):
        started = time.perf_counter()
        try:
            stage()
        except FindingsError as exc:
            assert exc.findings and all("\n" not in f.message for f in exc.findings)
        except FleetgenError as exc:
            assert str(exc) and "\n" not in str(exc)
        assert_quick(time.perf_counter() - started, 250, stage.__name__)


_library_args = (st.lists(_set, max_size=3), st.one_of(st.none(), _text), st.one_of(st.none(), _moment), _wave)
_library_tail = (st.one_of(st.none(), _moment), st.one_of(st.none(), _text))


@pytest.mark.slow
@examples(400)
@given(*_library_args, *_library_tail)
def test_upgrade_library_refuses_garbage_with_one_line(
    sets: list[str], to: str | None, start: str | None, number: int, at: str | None, reason: str | None
) -> None:
    _check_library(sets, to, start, number, at, reason)


def _cli_args(data: st.DataObject) -> list[str]:
    if data.draw(st.booleans(), label="apply"):
        wave = data.draw(st.one_of(_wave.map(str), _text).filter(_not_one), label="wave")
        args = ["upgrade", "apply", "--no-render", f"--wave={wave}"]
        args += [f"--set={s}" for s in data.draw(st.lists(_set, max_size=2), label="sets")]
        at = data.draw(st.one_of(st.none(), _moment), label="at")
        return args + ([f"--at={at}"] if at is not None else [])
    option, value = data.draw(_bad, label="refused")
    args = ["upgrade", "plan", f"{option}={value}"] + [f"--set={s}" for s in data.draw(st.lists(_set, max_size=2), label="sets")]
    start = data.draw(st.one_of(st.none(), _moment), label="start")
    return args + ([f"--start={start}"] if start is not None and option != "--start" else [])


def _check_cli(cli_run: Run, folder: Path, args: list[str]) -> None:
    shutil.copy(EXAMPLE, folder / "fleet.yaml")
    with quickly(1000, args):
        done = cli_run(*args)
    assert done.returncode in (1, 2), (args, done.stdout, done.stderr)
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    noise = ("Usage:", "Try ")
    problems = [
        line for line in done.stderr.splitlines() if line.strip() and not line.startswith(noise) and not line.endswith("warning(s)")
    ]
    if done.returncode == 2:
        assert len(problems) == 1 and problems[0].startswith(("fleetgen: ", "Error: ")), done.stderr
    else:
        assert problems and all(line.startswith("upgrade: ") for line in problems), done.stderr
    assert (folder / "fleet.yaml").read_bytes() == EXAMPLE.read_bytes()


@pytest.mark.slow
@examples(200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_upgrade_commands_refuse_garbage_with_one_line(tmp_path: Path, cli_run: Run, data: st.DataObject) -> None:
    _check_cli(cli_run, tmp_path, _cli_args(data))

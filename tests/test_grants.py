"""Time-bound, justified grants: a team's values on one cluster until a date, for a reason.

Expiry is a property of (today, until): an error once `until` has passed, a warning from 14 days
before, nothing earlier, whatever the dates; check_grants takes `today` so the property can fix it,
and validate reads the real clock (the tests at fleet.yaml lines use dates far from any boundary).
"""

from __future__ import annotations

import datetime
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import examples, findings_of, git, line_of, replace_once
from generated_fleets import fleet_text, fleets
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen import clock
from fleetgen.checks.grants import WARN_DAYS, check_grants, utc_today
from fleetgen.checks.load import load_fleet_text
from fleetgen.checks.record_times import future_records
from fleetgen.checks.verdict_window import verdict_window
from fleetgen.clock import VerdictWindow
from fleetgen.errors import Severity

Run = Callable[..., subprocess.CompletedProcess[str]]
NLP_TRAINING = "      training-eastus: {queue: gpu-cluster-queue}   # the cluster has two queues: say which"


def _granted(example_text: str, until: datetime.date, reason: str = "LLM pretraining run, Q1 roadmap") -> str:
    grant = (
        f"      training-eastus: {{queue: gpu-cluster-queue, requests: {{gpu: 12}}, until: {until.isoformat()},"
        f" reason: {reason!r}, workload: training}}"
    )
    return replace_once(example_text, NLP_TRAINING, grant)


@settings(deadline=None)
@given(today=st.dates(datetime.date(2020, 1, 1), datetime.date(2040, 1, 1)), offset=st.integers(-400, 400))
def test_a_grant_is_an_error_after_its_day_a_warning_for_the_14_days_before_and_fine_earlier(
    example_text: str, today: datetime.date, offset: int
) -> None:
    fleet = load_fleet_text(_granted(example_text, datetime.date(2030, 6, 15)).encode()).fleet
    until = datetime.date(2030, 6, 15)
    today = until - datetime.timedelta(days=offset)  # offset: days left
    found = list(check_grants(fleet, today))
    severities = [f.severity for f in found]
    expected = [Severity.ERROR] if offset < 0 else [Severity.WARNING] if offset <= WARN_DAYS else []
    assert severities == expected
    for f in found:
        assert f.path == ("teams", 1, "clusters", "training-eastus", "until")
        assert "12 GPUs to nlp on training-eastus" in f.message and "back to 8 GPUs" in f.message


def test_an_ended_grant_fails_validate_at_its_line_naming_the_pull_request(example_text: str) -> None:
    text = _granted(example_text, utc_today() - datetime.timedelta(days=10))
    line = line_of(text, "until:")
    errors = [f for f in findings_of(text) if ".until:" in f]
    assert len(errors) == 1 and errors[0].startswith(f"{line}:")
    assert "teams[1].clusters.training-eastus.until: the grant of 12 GPUs to nlp on training-eastus ended on" in errors[0]
    assert "open the pull request that ends it" in errors[0] and "teams[1].clusters.training-eastus (back to 8 GPUs)" in errors[0]


def test_a_grant_ending_soon_warns_and_a_distant_one_is_quiet(example_text: str) -> None:
    soon = _granted(example_text, utc_today() + datetime.timedelta(days=7))
    warnings = [f for f in findings_of(soon, Severity.WARNING) if ".until:" in f]
    assert len(warnings) == 1 and "ends in 7 days" in warnings[0] and warnings[0].startswith(f"{line_of(soon, 'until:')}:")
    distant = _granted(example_text, utc_today() + datetime.timedelta(days=90))
    assert not [f for s in Severity for f in findings_of(distant, s) if ".until:" in f]


def test_a_grant_without_a_reason_is_refused(example_text: str) -> None:
    text = _granted(example_text, utc_today() + datetime.timedelta(days=90), reason="")
    assert any("a time-bound grant says why: add `reason`" in f for f in findings_of(text))
    wrong = replace_once(example_text, NLP_TRAINING, "      training-eastus: {queue: gpu-cluster-queue, workload: gaming}")
    assert any("workload" in f and "'training', 'inference' or 'notebooks'" in f for f in findings_of(wrong))


def test_what_the_cache_kept_of_a_passing_text_ends_with_its_first_grant(
    example_text: str, cli_run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A render on a grant's last day keeps that the text passed (the verdict check and diff read, check's ledger). The
    next day the same text fails (the grant ended): check and diff must judge it again, not read what the cache kept."""
    (tmp_path / "fleet.yaml").write_text(_granted(example_text, utc_today()))
    assert cli_run("render").returncode == 0
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "fleet")
    assert cli_run("check").returncode == 0  # the same day: the kept ledger answers
    tomorrow = utc_today() + datetime.timedelta(days=1)
    monkeypatch.setattr(clock, "utc_today", lambda: tomorrow)  # the one clock the checks and kept verdicts read
    check = cli_run("check")
    assert check.returncode == 1 and "the grant of 12 GPUs to nlp on training-eastus ended on" in check.stderr, check.stderr
    diff = cli_run("diff", "--base", "HEAD")
    assert diff.returncode == 2 and "fleet.yaml@HEAD: does not render" in diff.stderr and ".until: the grant" in diff.stderr, diff.stderr


@examples(20)
@given(fleet=fleets(), shift=st.integers(-3_000, 30_000), hours=st.integers(0, 23))
def test_a_verdicts_window_is_where_the_checks_that_read_the_clock_pass(fleet: dict[str, Any], shift: int, hours: int) -> None:
    """A generated fleet (grants, an upgrade record) passes the grant and record-time checks on exactly the days and
    moments its verdict window holds, so a verdict kept inside the window is the one the checks would reach."""
    checked = load_fleet_text(fleet_text(fleet).encode()).fleet
    window = verdict_window(checked)
    now = datetime.datetime(2026, 1, 5, tzinfo=datetime.UTC) + datetime.timedelta(days=shift, hours=hours)
    errors = [f for f in check_grants(checked, now.date()) if f.severity is Severity.ERROR] + future_records(checked, now)
    assert window.holds_at(now.date(), now) == (not errors)
    assert VerdictWindow.from_text(window.to_text()) == window

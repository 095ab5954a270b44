"""Time-bound, justified grants: a team's values on one cluster until a date, for a reason.

Expiry is a property of (today, until): an error once `until` has passed, a warning from 14 days
before, nothing earlier, whatever the dates; check_grants takes `today` so the property can fix it,
and validate reads the real clock (the tests at fleet.yaml lines use dates far from any boundary).
"""

from __future__ import annotations

import datetime

from conftest import findings_of, line_of, replace_once
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen.checks.grants import WARN_DAYS, check_grants, utc_today
from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity

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

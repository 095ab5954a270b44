"""Grants in a pull request: the summary shows each grant's duration, workload, reason and cost, and approval rules
gate grants on their duration, their workload and the monthly budget of the team or its cost centre (the base's rules).

nlp's grant: 12 GPUs on training-eastus, whose GPU-hour averages 6.956 USD (16 spot A100s and 8 on-demand A100s
at 3.40, 16 H100s at 12.29): 12 x 6.956 x 730 = 60,935 USD a month.
"""

from __future__ import annotations

import datetime
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import findings_of, git, replace_once
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen.checks.grants import utc_today
from fleetgen.checks.load import load_fleet_text
from fleetgen.model import Fleet
from fleetgen.review.approvals import required_approvals
from fleetgen.review.changes import fleet_changes
from fleetgen.review.grants import grant_changes, monthly_cost

Run = Callable[..., subprocess.CompletedProcess[str]]
NLP_TRAINING = "      training-eastus: {queue: gpu-cluster-queue}   # the cluster has two queues: say which"
RULES_END = "    when: {priorityClasses: true}\n    approvers: [platform-leads]\n"


def _fleet(text: str) -> Fleet:
    return load_fleet_text(text.encode()).fleet


def _head(example_text: str, days: int, workload: str = "training") -> Fleet:
    until = utc_today() + datetime.timedelta(days=days - 1)
    grant = (
        f"      training-eastus: {{queue: gpu-cluster-queue, requests: {{gpu: 12}}, until: {until.isoformat()},"
        f" reason: LLM pretraining run, workload: {workload}}}"
    )
    return _fleet(replace_once(example_text, NLP_TRAINING, grant))


def _with_rule(example_text: str, when: str) -> Fleet:
    return _fleet(replace_once(example_text, RULES_END, RULES_END + f"  - name: grants\n    when: {when}\n    approvers: [finance]\n"))


def _gated(base: Fleet, head: Fleet) -> list[str]:
    changes = fleet_changes(base, head) + list(grant_changes(base, head))
    return [c.text for a in required_approvals(base, changes) if a.rule.name == "grants" for c in a.changes]


def test_the_summary_shows_duration_workload_reason_and_cost(example_text: str) -> None:
    base, head = _fleet(example_text), _head(example_text, 61)
    [grant] = list(grant_changes(base, head))
    until = utc_today() + datetime.timedelta(days=60)
    assert grant.text == (
        f"team nlp: grant of 12 GPUs on training-eastus until {until} (61 days), training, 60,935 USD a month: LLM pretraining run"
    )
    assert grant.monthly_cost == pytest.approx(12 * (16 * 3.40 + 8 * 3.40 + 16 * 12.29) / 40 * 730)
    assert list(grant_changes(head, head)) == []  # the same grant in both revisions is no change


def test_rules_on_duration_and_workload_gate_only_the_grants_they_name(example_text: str) -> None:
    longer = _with_rule(example_text, "{grantLongerThanDays: 30}")
    assert len(_gated(longer, _head(example_text, 61))) == 1
    assert _gated(longer, _head(example_text, 20)) == []
    inference = _with_rule(example_text, "{workload: inference}")
    assert _gated(inference, _head(example_text, 61, "training")) == []
    assert len(_gated(inference, _head(example_text, 61, "inference"))) == 1


@settings(deadline=None)
@given(budget=st.integers(0, 200_000), by_centre=st.booleans())
def test_a_grant_within_its_budget_needs_no_approval_and_above_it_escalates(example_text: str, budget: int, by_centre: bool) -> None:
    head = _head(example_text, 61)
    owner = "{costCenter: cc-4780" if by_centre else "{team: nlp"
    base = _with_rule(example_text, f"{{budget: {owner}, monthly: {budget}}}}}")
    nlp = next(t for t in head.teams if t.name == "nlp")  # the only team of cost centre cc-4780
    spent = monthly_cost(head, nlp)
    assert bool(_gated(base, head)) == (spent > budget)


def test_the_rules_are_the_bases_and_a_budget_names_one_owner(example_text: str) -> None:
    head_rules = _with_rule(example_text, "{budget: {team: nlp, monthly: 1}}")
    granted = replace_once(
        example_text, NLP_TRAINING, "      training-eastus: {queue: gpu-cluster-queue, until: 2099-01-01, reason: x, workload: training}"
    )
    assert _gated(_fleet(example_text), _fleet(granted)) == []  # the base has no such rule
    assert _gated(head_rules, _fleet(granted))  # the base's rule applies
    both = replace_once(
        example_text,
        RULES_END,
        RULES_END + "  - name: grants\n    when: {budget: {team: nlp, costCenter: cc-4780, monthly: 1}}\n    approvers: [finance]\n",
    )
    assert any("a budget belongs to one team or one costCenter: set exactly one" in f for f in findings_of(both))


def test_the_pr_comment_shows_the_grant_and_the_budget_rule_that_gates_it(repo: Path, cli_run: Run) -> None:
    base = replace_once(
        (repo / "fleet.yaml").read_text(),
        RULES_END,
        RULES_END + "  - name: nlp-budget\n    when: {budget: {team: nlp, monthly: 60000}}\n    approvers: [engineering-leadership]\n",
    )
    (repo / "fleet.yaml").write_text(base)
    git(repo, "commit", "-qam", "a GPU budget for nlp")
    until = utc_today() + datetime.timedelta(days=29)
    grant = f"      training-eastus: {{queue: gpu-cluster-queue, requests: {{gpu: 12}}, until: {until}, reason: LLM pretraining run, workload: training}}"
    (repo / "fleet.yaml").write_text(replace_once(base, NLP_TRAINING, grant))
    git(repo, "commit", "-qam", "nlp: 12 GPUs for a month")
    done = cli_run("diff", "--base", "HEAD~1", "--head", "HEAD", "--format", "markdown", cwd=repo)
    assert done.returncode == 1, done.stderr
    assert (
        f"team nlp: grant of 12 GPUs on training-eastus until {until} (30 days), training, 60,935 USD a month: LLM pretraining run"
        in done.stdout
    )
    assert "engineering-leadership (nlp-budget)" in done.stdout  # its quotas now cost well over 60,000 USD a month

"""One model of what a team can run where: quota, queue (owned and borrowable GPUs) and Volcano guarantee against each other.

The shipped fleet changed so that each contradiction appears once, with the exact finding at its line;
the report reads the same model: borrowable GPUs are listed, never held or charged.
"""

from __future__ import annotations

from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.report.capacity import build_report

TEXT = EXAMPLE.read_text(encoding="utf-8")
# data-science's queue may borrow 16 spot A100s: gpu-cluster-queue lends all 16
GENEROUS = replace_once(
    replace_once(TEXT, "lendingLimit: {a100-spot: {gpu: 8}}    # keeps", "lendingLimit: {a100-spot: {gpu: 16}}   # keeps"),
    "borrowingLimit: {a100-spot: {gpu: 8}}",
    "borrowingLimit: {a100-spot: {gpu: 16}}",
)


def holding(text: str, team: str, cluster: str) -> tuple[int, int, float | None]:
    report = build_report(load_fleet_text(text.encode()).fleet)
    held = next(h for t in report.teams if t.team == team for h in t.holdings if h.cluster == cluster)
    return held.gpus, held.may_borrow, held.monthly_cost


def test_a_queue_that_may_admit_more_than_its_teams_quotas_let_run_is_reported_at_each_team() -> None:
    line = line_of(GENEROUS, "training-eastus: {queue: data-science-queue}")
    assert [f for f in findings_of(GENEROUS, Severity.WARNING) if "may admit" in f] == [
        f"{line}:7: teams[0].clusters.training-eastus: queue data-science-queue on training-eastus may admit 16 GPUs (owns 0, "
        "may borrow 16 from cohort training), but the namespace quotas of its teams let them run only 8 (data-science 8): "
        "8 GPU(s) it may borrow never run; raise requests.gpu here (borrowed GPUs are not held or charged) or lower the "
        "queue's borrowingLimit"
    ]
    assert holding(GENEROUS, "data-science", "training-eastus") == (0, 8, 0)  # the report says 8, not 16
    # raising the quota to let the borrowing run holds and charges nothing more: borrowed GPUs are not held GPUs
    raised = replace_once(
        GENEROUS,
        "training-eastus: {queue: data-science-queue}",
        "training-eastus: {queue: data-science-queue, requests: {gpu: 16}, limits: {gpu: 16}}",
    )
    assert [f for f in findings_of(raised, Severity.WARNING) if "may admit" in f] == []
    assert holding(raised, "data-science", "training-eastus") == (0, 16, 0)
    assert [f for f in findings_of(TEXT, Severity.WARNING) if "may admit" in f] == []  # the example's borrowing fits its quota


def test_volcano_guarantees_fit_the_teams_quotas_and_volcanos_pools() -> None:
    above_quota = replace_once(TEXT, "guarantees: {nlp: {gpu: 8}}", "guarantees: {nlp: {gpu: 12}}")
    line = line_of(above_quota, "guarantees: {nlp: {gpu: 12}}")
    assert findings_of(above_quota) == [
        f"{line}:31: clusters[2].volcano.guarantees.nlp.gpu: guarantee 12 nvidia.com/gpu is above team nlp's quota on "
        "training-eastus (8): its namespace never runs more, so the rest is kept for nobody"
    ]
    stranger = replace_once(TEXT, "guarantees: {nlp: {gpu: 8}}", "guarantees: {nlp: {gpu: 8}, vision: {gpu: 1}}")
    assert findings_of(stranger) == [f"{line}:35: clusters[2].volcano.guarantees.vision: team 'vision' is not on training-eastus"]
    # the case: each team's whole quota guaranteed, far above Volcano's pools, is no longer implied by the quotas
    assert build_report(load_fleet_text(TEXT.encode()).fleet).volcano[0].guarantee is None

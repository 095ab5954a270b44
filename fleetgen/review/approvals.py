"""The approval gate: which changes of a diff need whose approval, by the rules in fleet.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from fleetgen.model import ApprovalCondition, ApprovalRule
from fleetgen.review.changes import Change


@dataclass(frozen=True)
class Approval:
    rule: ApprovalRule
    changes: tuple[Change, ...]


def matches(when: ApprovalCondition, change: Change) -> bool:
    if when.gpu_quota_at_least is not None:
        return change.gpus is not None and change.gpus >= when.gpu_quota_at_least
    if when.new_cluster:
        return change.kind == "cluster-added"
    if when.removed_cluster:
        return change.kind == "cluster-removed"
    if when.production_versions:
        return change.kind == "versions" and change.production
    if when.priority_classes:
        return change.kind == "priority-class"
    return False


def required_approvals(rules: tuple[ApprovalRule, ...], changes: list[Change]) -> list[Approval]:
    """Each rule with the changes it gates, in rule order; rules that gate nothing are left out."""
    out = []
    for rule in rules:
        gated = tuple(c for c in changes if matches(rule.when, c))
        if gated:
            out.append(Approval(rule, gated))
    return out

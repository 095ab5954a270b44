"""The approval gate: which changes of a diff need whose approval, by the rules in fleet.yaml and fleetgen's own.

The fleet's rules are its own to write; the built-in rules below are not: they gate the changes
that would weaken the gate for the next pull request (its rules, rollout policy, the upgrade
record, capacity overcommit, the prices the cost rules count with, who the platform owners are), widen what a team may do on shared
nodes, or remove a team's or cluster's namespaces and data. A fleet cannot switch them off, and,
like its own rules, they are taken from the base revision: the base's platform owners approve.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetgen.model import ApprovalCondition, ApprovalRule, Fleet
from fleetgen.review.changes import Change, ChangeKind


@dataclass(frozen=True)
class Gate:
    """A rule as the review shows it: one of the fleet's `approvals`, or one of fleetgen's built-in rules."""

    name: str
    description: str
    approvers: tuple[str, ...]
    kinds: frozenset[ChangeKind] = frozenset()  # a built-in rule gates every change of these kinds
    rule: ApprovalRule | None = None  # a fleet rule

    @property
    def builtin(self) -> bool:
        return self.rule is None


@dataclass(frozen=True)
class Approval:
    rule: Gate
    changes: tuple[Change, ...]


BUILTIN_RULES: tuple[tuple[str, str, frozenset[ChangeKind]], ...] = (  # name, description, kinds of change
    (
        "fleetgen-gate",
        "The approval rules, rollout policy, upgrade record, capacity overcommit, prices, platform owners and the fleet's "
        "own compatibility facts judge every later change",
        frozenset({"policy", "upgrade", "facts", "pricing"}),
    ),
    (
        "fleetgen-tenant-access",
        "More for a team's pods on shared nodes: priority classes, Pod Security level, Service types, Role rules",
        frozenset({"access"}),
    ),
    (
        "fleetgen-removal",
        "A team's namespace leaves a cluster, or a cluster leaves the fleet: volumes and checkpoints stay behind until retired",
        frozenset({"team-removed", "team-renamed", "placement-removed", "cluster-removed"}),
    ),
)


def builtin_gates(base: Fleet) -> tuple[Gate, ...]:
    """fleetgen's own rules, approved by the base revision's platform owners."""
    return tuple(Gate(name, text, base.platform_owners, kinds) for name, text, kinds in BUILTIN_RULES)


def fleet_gate(rule: ApprovalRule) -> Gate:
    return Gate(rule.name, rule.description, rule.approvers, rule=rule)


def matches(when: ApprovalCondition, change: Change) -> bool:
    if when.gpu_quota_at_least is not None:
        return change.gpus is not None and change.gpus >= when.gpu_quota_at_least
    if when.added_gpus_at_least is not None:
        return change.added_gpus >= when.added_gpus_at_least
    if when.added_monthly_cost_at_least is not None:  # an unpriced addition matches: a missing price never skips the gate
        adds = change.added_gpus > 0 or change.added_cost is None or change.added_cost > 0
        return adds and (change.added_cost is None or change.added_cost >= when.added_monthly_cost_at_least)
    if when.new_cluster:
        return change.kind == "cluster-added"
    if when.removed_cluster:
        return change.kind == "cluster-removed"
    if when.production_versions:
        return change.kind == "versions" and change.production
    if when.priority_classes:
        return change.kind == "priority-class"
    if change.kind != "grant":
        return False
    if when.grant_longer_than_days is not None:
        return change.days is not None and change.days > when.grant_longer_than_days
    if when.workload is not None:
        return change.workload == when.workload
    if when.budget is not None:  # within the budget the grant needs no approval from this rule; above it, it escalates
        budget = when.budget
        if budget.team is not None:
            return change.team == budget.team and (change.team_monthly or 0.0) > budget.monthly
        return change.cost_center == budget.cost_center and (change.cost_center_monthly or 0.0) > budget.monthly
    return False


def _gates(gate: Gate, change: Change) -> bool:
    return change.kind in gate.kinds if gate.rule is None else matches(gate.rule.when, change)


def required_approvals(base: Fleet, changes: list[Change]) -> list[Approval]:
    """Each rule of the base (its own, then the built-in ones) with the changes it gates; rules that gate nothing are left out."""
    out = []
    for gate in (*(fleet_gate(r) for r in base.approvals), *builtin_gates(base)):
        gated = tuple(c for c in changes if _gates(gate, c))
        if gated:
            out.append(Approval(gate, gated))
    return out

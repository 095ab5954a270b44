"""One change of fleet.yaml as the summary shows it and the approval gate judges it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from fleetgen.errors import FieldPath, Finding

# Every sort of change the gate can see: a closed type, so a rule or a built-in gate that names a kind mypy does
# not know (a typo) fails the type check instead of silently gating nothing.
ChangeKind = Literal[
    "cluster-added",
    "cluster-removed",
    "cluster",
    "versions",
    "node-pool",  # a pool added, removed, resized or repartitioned (capacity_changes.py)
    "queue",
    "team-added",
    "team-removed",
    "team-renamed",
    "team",
    "placement-added",
    "placement-removed",
    "quota",  # GPU, slice, share, CPU, memory and pod quotas
    "priority-class",
    "fleet",
    "pricing",  # a price per GPU-hour or node-hour (capacity_changes.py)
    "facts",  # the fleet's own compatibility facts file, named or edited (capacity_changes.py)
    "policy",  # policy_changes.py: the gate itself, rollout, overcommit, platform owners
    "upgrade",
    "upgrade-wave",
    "access",
    "access-narrowed",
    "grant",  # a time-bound grant: a team's quota on a cluster with an end date (grants.py)
]


@dataclass(frozen=True)
class Change:
    """One change of the fleet; `kind` says what sort, the other fields what the gate needs."""

    kind: ChangeKind
    text: str
    cluster: str | None = None
    team: str | None = None
    field: str | None = None
    old: str | None = None
    new: str | None = None
    production: bool = False
    gpus: Fraction | None = None  # GPU-equivalents a team's quota on a cluster reaches (new team, placement or raised quota)
    added_gpus: int = 0  # physical GPUs the change adds to the fleet at maxNodes (a pool added or grown, a cluster added)
    added_cost: float | None = 0.0  # monthly cost it adds at maxNodes; None when a price is missing (the cost rule then fires)
    warning: str | None = None  # what to watch for when it is applied
    refusal: Finding | None = None  # why a pull request must not carry it as it is: an error at its head's fleet.yaml path
    path: FieldPath | None = None  # where it stands in the head's fleet.yaml, when the fields above do not say
    # a time-bound grant (grants.py): days to its end, what for, its GPUs' monthly cost, and the monthly cost of the
    # team's and its cost centre's GPU quotas with it, for approval rules on duration, workload and budget
    days: int | None = None
    workload: str | None = None
    monthly_cost: float | None = None
    team_monthly: float | None = None
    cost_center: str | None = None
    cost_center_monthly: float | None = None

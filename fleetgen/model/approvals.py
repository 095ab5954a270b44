"""The approval gate's rules: which changes to fleet.yaml need whose approval."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Float, Identifier, Int, unique_by
from fleetgen.model.types import DnsLabel, Line


def _one_condition(schema: dict[str, Any]) -> None:
    """_exactly_one in the JSON Schema: one condition set (a threshold, or a flag that is true), no other."""
    flags = ("newCluster", "removedCluster", "productionVersions", "priorityClasses")
    chosen: list[dict[str, Any]] = [
        {"required": [name], "properties": {name: {"type": kind}}}
        for name, kind in (("gpuQuotaAtLeast", "integer"), ("addedGpusAtLeast", "integer"), ("addedMonthlyCostAtLeast", "number"))
    ]
    schema["oneOf"] = chosen + [{"required": [flag], "properties": {flag: {"const": True}}} for flag in flags]


class ApprovalCondition(Spec):
    """Which changes a rule gates; exactly one condition per rule."""

    model_config = ConfigDict(**Spec.model_config, json_schema_extra=_one_condition)

    gpu_quota_at_least: Int | None = Field(default=None, ge=1)
    """A team's GPU quota on a cluster raised to (or added at) this many GPU-equivalents or more: whole GPUs, plus MIG
    slices and time-sliced shares at their share of a GPU (28 mig-1g.10gb of all-1g.10gb A100s count 4)."""
    added_gpus_at_least: Int | None = Field(default=None, ge=1)
    """Capacity added by one change: a node pool added or grown, or a cluster added, by this many physical GPUs or more
    (at maxNodes)."""
    added_monthly_cost_at_least: Float | None = Field(default=None, gt=0)
    """Capacity added by one change (a node pool or cluster added, a pool grown or moved to a dearer VM size) costing this
    much a month or more at maxNodes (pricing); a change whose price is missing always matches."""
    new_cluster: Bool = False
    """A cluster added to the fleet."""
    removed_cluster: Bool = False
    """A cluster removed from the fleet."""
    production_versions: Bool = False
    """Any version (Kubernetes, driver, CUDA, cuDNN, containerd) of a production cluster."""
    priority_classes: Bool = False
    """A priority class added, removed or changed."""

    @model_validator(mode="after")
    def _exactly_one(self) -> ApprovalCondition:
        chosen = [name for name, value in self if value not in (None, False)]
        if len(chosen) != 1:
            raise ValueError(
                "set exactly one condition: gpuQuotaAtLeast, addedGpusAtLeast, addedMonthlyCostAtLeast, newCluster, "
                "removedCluster, productionVersions or priorityClasses"
            )
        return self


class ApprovalRule(Spec):
    name: DnsLabel
    """Rule name, shown in the pull-request comment; `fleetgen-` names are fleetgen's built-in rules."""
    description: Line = ""
    """Why the gate exists."""
    when: ApprovalCondition
    """The changes the rule gates."""
    approvers: Annotated[tuple[Identifier, ...], unique_by()] = Field(min_length=1)
    """Groups that must approve such a change (e.g. GitHub teams)."""

    @field_validator("name")
    @classmethod
    def _not_builtin(cls, name: str) -> str:
        if name.startswith("fleetgen-"):  # a rule of the fleet's own must not pass for one fleetgen always applies
            raise ValueError("names starting with 'fleetgen-' are fleetgen's built-in rules (README: Pull requests)")
        return name

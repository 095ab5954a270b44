"""The approval gate's rules: which changes to fleet.yaml need whose approval."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Identifier, Int, unique_by
from fleetgen.model.types import DnsLabel, Line


def _one_condition(schema: dict[str, Any]) -> None:
    """_exactly_one in the JSON Schema: one condition set (a threshold, or a flag that is true), no other."""
    flags = ("newCluster", "removedCluster", "productionVersions", "priorityClasses")
    chosen = [{"required": ["gpuQuotaAtLeast"], "properties": {"gpuQuotaAtLeast": {"type": "integer"}}}]
    schema["oneOf"] = chosen + [{"required": [flag], "properties": {flag: {"const": True}}} for flag in flags]


class ApprovalCondition(Spec):
    """Which changes a rule gates; exactly one condition per rule."""

    model_config = ConfigDict(**Spec.model_config, json_schema_extra=_one_condition)

    gpu_quota_at_least: Int | None = Field(default=None, ge=1)
    """A team's GPU quota on a cluster raised to (or added at) this many GPUs or more."""
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
                "set exactly one condition: gpuQuotaAtLeast, newCluster, removedCluster, productionVersions or priorityClasses"
            )
        return self


class ApprovalRule(Spec):
    name: DnsLabel
    """Rule name, shown in the pull-request comment."""
    description: Line = ""
    """Why the gate exists."""
    when: ApprovalCondition
    """The changes the rule gates."""
    approvers: Annotated[tuple[Identifier, ...], unique_by()] = Field(min_length=1)
    """Groups that must approve such a change (e.g. GitHub teams)."""

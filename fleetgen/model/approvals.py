"""The approval gate's rules: which changes to fleet.yaml need whose approval."""

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Float, Identifier, Int, unique_by
from fleetgen.model.types import DnsLabel, LabelValue, Line


def _one_condition(schema: dict[str, Any]) -> None:
    """_exactly_one in the JSON Schema: one condition set (a threshold, or a flag that is true), no other."""
    flags = ("newCluster", "removedCluster", "productionVersions", "priorityClasses")
    chosen: list[dict[str, Any]] = [
        {"required": [name], "properties": {name: {"type": kind}}}
        for name, kind in (("gpuQuotaAtLeast", "integer"), ("addedGpusAtLeast", "integer"), ("addedMonthlyCostAtLeast", "number"))
    ]
    chosen += [{"required": [name]} for name in ("grantLongerThanDays", "workload", "budget")]
    schema["oneOf"] = chosen + [{"required": [flag], "properties": {flag: {"const": True}}} for flag in flags]


class Budget(Spec):
    """A monthly GPU budget of one team or one cost centre (its teams' GPU quotas at pricing.gpuHour, 730 hours a month)."""

    team: DnsLabel | None = None
    cost_center: LabelValue | None = None
    monthly: Float = Field(ge=0)
    """The budget a month, in pricing.currency."""

    @model_validator(mode="after")
    def _one_owner(self) -> "Budget":
        if (self.team is None) == (self.cost_center is None):
            raise ValueError("a budget belongs to one team or one costCenter: set exactly one")
        return self


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
    """Any version of a production cluster: Kubernetes, driver, CUDA, cuDNN, containerd, and the release of an add-on it
    runs (GPU Operator, Kueue, Volcano, JupyterHub...)."""
    priority_classes: Bool = False
    """A priority class added, removed or changed."""
    grant_longer_than_days: Int | None = Field(default=None, ge=1)
    """A time-bound grant (teams[].clusters.*.until) added or changed that runs longer than this many days from today."""
    workload: Literal["training", "inference", "notebooks"] | None = None
    """A time-bound grant added or changed for this workload."""
    budget: Budget | None = None
    """A time-bound grant that takes its team's (or cost centre's) GPU quotas above a monthly budget: within it, no approval."""

    @model_validator(mode="after")
    def _exactly_one(self) -> "ApprovalCondition":
        chosen = [name for name, value in self if value not in (None, False)]
        if len(chosen) != 1:
            # fix: Keep exactly one condition in the rule (split it into rules of one condition each)
            raise ValueError(
                "set exactly one condition: gpuQuotaAtLeast, addedGpusAtLeast, addedMonthlyCostAtLeast, newCluster, "
                "removedCluster, productionVersions, priorityClasses, grantLongerThanDays, workload or budget"
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
            # fix: Rename the rule
            raise ValueError("names starting with 'fleetgen-' are fleetgen's built-in rules (see the documentation: Review a pull request)")
        return name

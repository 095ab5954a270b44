"""The typed fleet.yaml: frozen pydantic models, camelCase in YAML, unknown fields rejected.

Cross-references, capacity and other checks that span models live in fleetgen.checks, so that
every problem is collected and reported at once with its position.
"""

from __future__ import annotations

import datetime
import re
from functools import cached_property
from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from fleetgen.model.compat import Compatibility
from fleetgen.model.naming import Naming, ObjectNames, TeamNames, names_of
from fleetgen.model.platform import Platform
from fleetgen.model.sharing import Cohort, Queue, Scheduling, Volcano
from fleetgen.model.slo import Endpoint, Slo
from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Float, Identifier, Int, unique_by
from fleetgen.model.types import (
    Date,
    DnsLabel,
    DnsSubdomain,
    HandWrittenPath,
    LabelKey,
    LabelValue,
    Line,
    Quantity,
    Text,
    Timestamp,
    Token,
    Version,
    as_text,
)

API_VERSION = "fleetgen/v1alpha1"
GPU_RESOURCE = "nvidia.com/gpu"


class Metadata(Spec):
    name: DnsLabel
    """Name of the fleet; labels every object fleetgen renders."""
    description: Line = ""
    """One line saying what the fleet is for."""
    owner: DnsLabel = "platform"
    """Team label put on fleet-wide objects (priority classes, cluster queues, flavors)."""
    cost_center: LabelValue
    """Cost centre label put on fleet-wide objects."""


class GitOps(Spec):
    engine: Literal["flux", "argocd"]
    """Which GitOps engine syncs the rendered tree: Flux objects or Argo CD Applications are rendered for it."""
    repository: Token = Field(pattern=r"^(https://|ssh://|git@)\S+$")
    """URL of the Git repository that holds the rendered tree."""
    branch: Identifier = "main"
    """Branch the clusters follow."""
    path: Token = Field(default=".", pattern=r"^\.?[^.\s][^\s]*$|^\.$")
    """Folder in the repository that holds base/ and clusters/ ("." for the top)."""
    interval: Token = Field(default="5m", pattern=r"^(\d+(ms|s|m|h))+$")
    """How often the engine reconciles (a Go duration such as 1m or 10m)."""


class VersionSet(Spec):
    kubernetes: Version
    """Kubernetes version of the cluster's control plane and nodes, e.g. 1.29.4."""
    driver: Version
    """NVIDIA GPU driver version baked into the node image, e.g. 550.54.15."""
    cuda: Version
    """CUDA toolkit version of the platform's images, e.g. 12.4."""
    cudnn: Version
    """cuDNN version, e.g. 9.1.0."""
    containerd: Version
    """containerd version of the nodes, e.g. 1.7."""


class PriorityClass(Spec):
    name: DnsSubdomain = Field(json_schema_extra={"not": {"type": "string", "pattern": "^system-"}})
    """Name pods use in priorityClassName; `system-` names are Kubernetes' own."""
    value: Int = Field(ge=-2_147_483_648, le=1_000_000_000)
    """Scheduling priority; values above one billion are reserved for Kubernetes' own classes."""
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    """Never: pods of this class wait rather than preempt others."""
    global_default: Bool = False
    """The class of pods that name none; at most one class may be the default."""
    description: Text = ""
    """What the class is for; shown by kubectl describe."""

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        # The API server refuses the prefix (pkg/apis/scheduling/validation ValidatePriorityClass); say so here,
        # at the name, rather than at the rendered PriorityClass.
        if name.startswith("system-"):
            raise ValueError("priority class names with 'system-' prefix are reserved for system use only")
        return name


class Taint(Spec):
    key: LabelKey
    """Taint key on the pool's nodes."""
    value: LabelValue = ""
    """Taint value; empty tolerates any value."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """Taint effect."""


class NodePool(Spec):
    name: DnsLabel
    """Node pool name; also the name of its Kueue ResourceFlavor."""
    vm_size: Identifier
    """Cloud VM SKU, e.g. Standard_NC24ads_A100_v4."""
    gpu_model: Token = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*$")
    """GPU model of the nodes: T4, A10G, A100, L4, H100, H200, B200 ..."""
    gpus_per_node: Int = Field(ge=0, le=64)
    """GPUs on each node (nvidia.com/gpu)."""
    cpu_per_node: Quantity
    """CPU a node offers to workloads (allocatable), e.g. 64."""
    memory_per_node: Quantity
    """Memory a node offers to workloads (allocatable), e.g. 256Gi."""
    min_nodes: Int = Field(default=0, ge=0, le=5000)
    """Fewest nodes the autoscaler keeps."""
    max_nodes: Int = Field(ge=1, le=5000)
    """Most nodes the pool can grow to; capacity and Kueue quotas count these."""
    scaling: Literal["spot", "on-demand", "reserved"]
    """How the nodes are bought: spot (preemptible), on-demand, or reserved capacity."""
    labels: dict[LabelKey, LabelValue] = Field(min_length=1)
    """Node labels that select this pool's nodes; Kueue's ResourceFlavor uses them."""
    taints: tuple[Taint, ...] = ()
    """Taints on the pool's nodes; workloads admitted to its flavor get matching tolerations."""
    topology: Annotated[tuple[LabelKey, ...], unique_by()] = ()
    """Node labels of the pool's network topology, broadest first (e.g. block, rack, kubernetes.io/hostname): a Kueue Topology."""


class Cluster(Spec):
    name: DnsLabel
    """Cluster name; its folder is clusters/<name>/."""
    region: DnsLabel
    """Cloud region, e.g. eastus."""
    environment: Literal["dev", "staging", "production"]
    """Environment; labels every object on the cluster and decides upgrade order."""
    purpose: Line = ""
    """What the cluster is for; shown in reports."""
    version_set: DnsLabel
    """Name of an entry of versionSets: the cluster's row of the compatibility matrix."""
    dr_partner: DnsLabel | None = None
    """The cluster that takes over this one's traffic in a disaster (both name each other)."""
    node_pools: Annotated[tuple[NodePool, ...], unique_by("name")] = Field(min_length=1)
    """GPU node pools; each becomes a Kueue ResourceFlavor."""
    queues: Annotated[tuple[Queue, ...], unique_by("name")] = (Queue(),)
    """Kueue ClusterQueues; one queue over all node pools when left out. A team's LocalQueue feeds the first unless it names another."""
    cohorts: Annotated[tuple[Cohort, ...], unique_by("name")] = ()
    """Kueue Cohorts the queues share quota in (a queue may also name a cohort not listed here)."""
    volcano: Volcano | None = None
    """Volcano as the gang scheduler for distributed training, on the node pools Kueue does not hand out."""
    alerts: dict[AlertName, AlertOverride] = {}
    """Changes to the fleet's alerts on this cluster."""
    platform: Platform | None = None
    """Add-on settings that differ on this cluster: only the fields written here replace the fleet's."""
    extra_resources: Annotated[tuple[HandWrittenPath, ...], unique_by()] = ()
    """Hand-written kustomize files or folders in clusters/<name>/ that its kustomization lists; fleetgen never writes or removes them."""


class Resources(Spec):
    cpu: Quantity | None = None
    """CPU, e.g. 64 or 500m."""
    memory: Quantity | None = None
    """Memory, e.g. 256Gi."""
    gpu: Int | None = Field(default=None, ge=0)
    """GPUs (nvidia.com/gpu)."""


class Quota(Spec):
    requests: Resources = Resources()
    """Sum of the requests of the namespace's pods."""
    limits: Resources = Resources()
    """Sum of the limits of the namespace's pods (a GPU limit is not enforced)."""
    pods: Int | None = Field(default=None, ge=0)
    """Number of pods."""

    def over(self, override: Quota) -> Quota:
        """This quota with every value that `override` sets replaced."""

        def merge(base: Resources, top: Resources) -> Resources:
            return base.model_copy(update={k: v for k, v in top if v is not None})

        return Quota(
            requests=merge(self.requests, override.requests),
            limits=merge(self.limits, override.limits),
            pods=override.pods if override.pods is not None else self.pods,
        )


class Placement(Quota):
    """A team on one cluster: quota values that differ from the team's defaults, and its queue."""

    queue: DnsSubdomain | None = None
    """ClusterQueue the team's LocalQueue feeds; the cluster's first queue when left out."""


class Team(Spec):
    name: DnsLabel = Field(max_length=58)
    """Team name; its namespace is team-<name>."""
    group: Identifier
    """Identity-provider group (e.g. a Microsoft Entra ID group object id) bound to the team's Role."""
    cost_center: LabelValue
    """Cost centre label on every object of the team."""
    project: LabelValue
    """Project label on every object of the team."""
    quota: Quota
    """Default quota on every cluster the team is on."""
    clusters: dict[DnsLabel, Placement | None]
    """Clusters the team is on, each with the quota values that differ there (or nothing)."""
    priority_classes: Annotated[tuple[DnsSubdomain, ...], unique_by()] | None = None
    """Priority classes the team's pods may use; all when left out."""
    allowed_ingress_namespaces: Annotated[tuple[DnsLabel, ...], unique_by()] = ()
    """Namespaces, besides the team's own, whose pods may reach the team's pods."""
    alerts: dict[TeamAlertName, AlertOverride] = {}
    """Changes to the team-scoped alerts for this team (on every cluster it is on)."""
    names: TeamNames = TeamNames()
    """The team's own names of its objects, where they differ from the fleet's `naming`."""
    endpoints: Annotated[tuple[Endpoint, ...], unique_by("name")] = ()
    """Inference endpoints the team serves, each with an SLO tier: burn-rate alerts and an error-budget panel."""

    @property
    def namespace(self) -> str:
        return f"team-{self.name}"

    @cached_property
    def quotas(self) -> dict[str, Quota]:
        """The quota on each cluster the team is on, placement values over the defaults; merged once, not per use."""
        return {name: self.quota.over(placement) if placement else self.quota for name, placement in self.clusters.items()}

    def quota_on(self, cluster: str) -> Quota:
        return self.quotas.get(cluster, self.quota)

    def queue_on(self, cluster: Cluster) -> str:
        """The ClusterQueue the team's LocalQueue feeds on `cluster`: its placement's, else the cluster's first."""
        placement = self.clusters.get(cluster.name)
        return placement.queue if placement and placement.queue else cluster.queues[0].name


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


AlertName = Literal[
    "gpuUnderutilized", "gpuMemoryFull", "quotaConsumption", "gpuTemperature", "gpuXidErrors", "gpuEccErrors", "kueuePendingWorkloads"
]
TeamAlertName = Literal["gpuUnderutilized", "gpuMemoryFull", "quotaConsumption"]


class AlertOverride(Spec):
    """Changes to one alert's defaults; anything left out keeps the value from the level above."""

    threshold: Float | None = None
    """The alert's threshold, in the alert's own unit (percent, degrees C, workloads)."""
    for_: Annotated[str | None, Field(alias="for", pattern=r"^\d+[smh]$")] = None
    """How long the condition must hold, e.g. 5m or 1h."""
    severity: Literal["info", "warning", "critical"] | None = None
    enabled: Bool | None = None
    """false turns the alert off at this level."""


class Alerts(Spec):
    namespace: DnsLabel = "monitoring"
    """Namespace of the PrometheusRules and Grafana dashboards (where Prometheus and Grafana's sidecar look)."""
    rule_labels: dict[LabelKey, LabelValue] = {}
    """Extra labels on each PrometheusRule, to match the Prometheus ruleSelector (e.g. release: kube-prometheus-stack)."""
    runbook_base_url: Token = Field(default="", pattern=r"^(https?://\S+)?$")
    """Runbook links are this URL (http:// or https://) plus /<alert-name>; left out, rules carry no runbook_url."""
    rules: dict[AlertName, AlertOverride] = {}
    """Fleet-wide changes to the default alerts."""


class Pricing(Spec):
    currency: Identifier = "USD"
    gpu_hour: dict[Identifier, Annotated[Float, Field(ge=0)]] = {}
    """Price of one GPU for one hour, by VM SKU (a node pool's vmSize)."""


Component = Literal["containerd", "kubernetes", "driver", "cuda", "cudnn"]  # in the order a cluster upgrades them
COMPONENTS: tuple[Component, ...] = get_args(Component)
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def _duration(value: str) -> datetime.timedelta:
    units = {"m": 60, "h": 3600, "d": 86400}
    match = re.fullmatch(r"(\d{1,6})([mhd])", value)  # six digits: no overflow, and more than anyone soaks
    if not match:
        raise ValueError(f"{value!r} is not a duration such as 90m, 48h or 2d")
    return datetime.timedelta(seconds=int(match.group(1)) * units[match.group(2)])


def _as_duration(value: Any) -> Any:
    if isinstance(value, datetime.timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, (str, int)):  # a flag or a fraction is no duration (and crashed the regex)
        raise ValueError("must be a duration such as 90m, 48h or 2d")
    return _duration(as_text(value))


# What _duration reads, up to a year (Rollout.soak's bound) in each unit, at most six digits: for the JSON Schema.
_UP_TO_A_YEAR = (
    "^(0{0,3}([0-9]{1,2}|[12][0-9]{2}|3[0-5][0-9]|36[0-5])d"
    "|0{0,2}([0-9]{1,3}|[0-7][0-9]{3}|8[0-6][0-9]{2}|87[0-5][0-9]|8760)h"
    "|([0-9]{1,5}|[0-4][0-9]{5}|5[01][0-9]{4}|52[0-4][0-9]{3}|525[0-5][0-9]{2}|525600)m)$"
)
Duration = Annotated[
    datetime.timedelta,
    BeforeValidator(_as_duration),
    WithJsonSchema({"type": "string", "pattern": _UP_TO_A_YEAR}),
]
ClockTime = Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")]


class Window(Spec):
    """A maintenance window in UTC: a wave may start only inside one."""

    days: Annotated[tuple[Weekday, ...], unique_by()] = Field(min_length=1)
    """Weekdays the window opens on."""
    start: ClockTime
    """Opening time, HH:MM UTC."""
    end: ClockTime
    """Closing time, HH:MM UTC (after start)."""


class Freeze(Spec):
    """A period in which no wave may start (UTC dates, both inclusive)."""

    start: Date
    end: Date
    reason: Line = ""


class Rollout(Spec):
    soak: Duration = Field(default="48h", validate_default=True, le=datetime.timedelta(days=365))
    """How long a wave runs before the next may start (the seed's 48 hours; at most 365d)."""
    max_wave_size: Int = Field(default=2, ge=1)
    """Most production clusters upgraded in one wave."""
    windows: tuple[Window, ...] = ()
    """Maintenance windows; a wave starts only inside one. Any time when left out."""
    freezes: tuple[Freeze, ...] = ()
    """Change freezes; no wave starts inside one."""


class UpgradeWave(Spec):
    wave: Int = Field(ge=1)
    step: dict[Component, Version] = Field(min_length=1)
    """The versions this wave sets."""
    clusters: Annotated[tuple[DnsLabel, ...], unique_by()] = Field(min_length=1)
    applied_at: Timestamp | None = None
    """When `fleetgen upgrade apply` wrote this wave (set it to the merge time if that differs)."""
    override_soak: Line | None = None
    """Why this wave started before the previous wave's soak ended (`upgrade apply --override-soak REASON`)."""


class Upgrade(Spec):
    """An upgrade in progress, written by `fleetgen upgrade apply`; `fleetgen upgrade status` reads it."""

    target: dict[Component, Version] = Field(min_length=1)
    waves: Annotated[tuple[UpgradeWave, ...], unique_by("wave")] = Field(min_length=1)
    closed_at: Timestamp | None = None
    """When the last wave was applied and the interim version sets folded back; a closed upgrade is history."""

    @property
    def complete(self) -> bool:
        return all(w.applied_at is not None for w in self.waves)


class Capacity(Spec):
    gpu_overcommit: Float | None = Field(default=None, ge=1.0, le=100.0)
    """Allow team GPU quotas on a cluster to add up to this many times its GPUs; without it they must fit."""


class Fleet(Spec):
    api_version: Literal["fleetgen/v1alpha1"]
    """Version of the fleet.yaml format."""
    kind: Literal["Fleet"]
    metadata: Metadata
    """Who the fleet is and who pays for its shared objects."""
    gitops: GitOps
    """How clusters sync the rendered tree."""
    capacity: Capacity = Capacity()
    """Capacity policy."""
    scheduling: Scheduling = Scheduling()
    """Fleet-wide scheduling options."""
    version_sets: dict[DnsLabel, VersionSet] = Field(min_length=1)
    """Named rows of the compatibility matrix; clusters refer to them by name."""
    naming: Naming = Naming()
    """Names of every team's objects (Role, RoleBinding, ResourceQuotas, NetworkPolicy, LocalQueue); fleetgen's own when left out."""
    priority_classes: Annotated[tuple[PriorityClass, ...], unique_by("name")] = ()
    """PriorityClasses rendered on every cluster."""
    clusters: Annotated[tuple[Cluster, ...], unique_by("name")] = Field(min_length=1)
    """The clusters of the fleet."""
    teams: Annotated[tuple[Team, ...], unique_by("name")] = ()
    """The teams and where they run."""
    approvals: Annotated[tuple[ApprovalRule, ...], unique_by("name")] = ()
    """Changes that need approval beyond self-service; a pull request is gated by its base branch's rules."""
    alerts: Alerts = Alerts()
    """GPU alerts and dashboards rendered for every cluster."""
    slo: Slo = Slo()
    """SLO tiers of inference endpoints (teams[].endpoints); the seed's three unless changed here."""
    platform: Platform = Platform()
    """The add-ons the clusters get (Kueue, the NVIDIA GPU Operator, Prometheus Operator CRDs, Volcano), each a pinned Helm chart."""
    pricing: Pricing = Pricing()
    """GPU prices for the cost report."""
    rollout: Rollout = Field(default_factory=Rollout)
    """How version upgrades roll out: soak time, wave size, maintenance windows, freezes."""
    upgrade: Upgrade | None = None
    """The upgrade in progress, as `fleetgen upgrade apply` records it."""
    compatibility: Compatibility = Field(default_factory=Compatibility, description="Compatibility facts of the fleet's own.")

    @cached_property
    def team_object_names(self) -> dict[str, ObjectNames]:
        """Team name -> the names of its objects (naming.object_names), filled once per team."""
        return {team.name: names_of(self.naming, team) for team in self.teams}

    def queue_teams(self, cluster: Cluster, queue: str) -> list[Team]:
        """The teams on `cluster` whose LocalQueue feeds ClusterQueue `queue`, in fleet order."""
        return [team for _, team in self.placements[cluster.name] if team.queue_on(cluster) == queue]

    @cached_property
    def placements(self) -> dict[str, list[tuple[int, Team]]]:
        """Cluster name -> (index, team) of the teams on it, in fleet order; built once, not per cluster."""
        on: dict[str, list[tuple[int, Team]]] = {c.name: [] for c in self.clusters}
        for index, team in enumerate(self.teams):
            for cluster in team.clusters:
                on.setdefault(cluster, []).append((index, team))
        return on

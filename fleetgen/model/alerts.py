"""fleet.yaml's alerts: the GPU alerts every cluster gets, and the changes a cluster or team makes to them."""

from typing import Annotated, Literal

from pydantic import Field

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Float
from fleetgen.model.types import DnsLabel, LabelKey, LabelValue, Token

AlertName = Literal[
    "gpuUnderutilized",
    "gpuMemoryFull",
    "quotaConsumption",
    "gpuTemperature",
    "gpuXidErrors",
    "gpuEccErrors",
    "nodePoolUtilization",
    "kueuePendingWorkloads",
    "multikueueNotAdmitted",
    "multikueueWorkerInactive",
    "quotaConsumptionPlan",
    "quotaConsumptionCritical",
    "clusterQueueQuotaPlan",
    "clusterQueueQuota",
    "clusterQueueQuotaCritical",
    "nodePoolUtilizationPlan",
    "nodePoolUtilizationCritical",
]
TeamAlertName = Literal["gpuUnderutilized", "gpuMemoryFull", "quotaConsumption", "quotaConsumptionPlan", "quotaConsumptionCritical"]


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
    """Extra labels on each PrometheusRule and fleetgen's ServiceMonitors, to match your Prometheus' rule and monitor selectors."""
    runbook_base_url: Token = Field(default="", pattern=r"^(https?://\S+)?$")
    """Runbook links are this URL (http:// or https://) plus /<alert-name>; left out, rules carry no runbook_url."""
    rules: dict[AlertName, AlertOverride] = {}
    """Fleet-wide changes to the default alerts."""

"""The operations chapter's thresholds on every quota layer fleetgen renders alerts for.

"Set alerts when any quota crosses 80% utilization. At 80%, you still have time to request an
increase. At 95%, you're one training job away from a hard stop", and file the increase "when you
hit 60% utilization, not 90%". Each layer gets the three: a team's namespace quota (kube-state-metrics'
kube_resourcequota; the 80% rule is quotaConsumption), a ClusterQueue's nominal GPU quota (Kueue's
kueue_cluster_queue_resource_usage over kueue_cluster_queue_nominal_quota), and a node pool at its
largest size (the warning is nodePoolUtilization, at the seed's 85%). Rows: the fleet.yaml name,
the Prometheus alert, scope, threshold, for, severity, summary, and the query it shares.
"""

from __future__ import annotations

Tier = tuple[str, str, str, float, str, str, str, str]
_PLAN = ": request the increase now: GPU quota increases take days"
_STOP = ": one job from a hard stop"
_TEAM = "{team} has used over {threshold}% of its GPU quota"
_QUEUE = "A cluster queue uses over {threshold}% of its nominal GPU quota"
_POOL = "Over {threshold}% of the GPUs of node pool {pool} at its largest size are in use"

TIERED: tuple[Tier, ...] = (
    ("quotaConsumptionPlan", "GPUQuotaPlanIncrease", "team", 60, "1h", "info", _TEAM + _PLAN, "quotaConsumption"),
    ("quotaConsumptionCritical", "GPUQuotaCritical", "team", 95, "5m", "critical", _TEAM + _STOP, "quotaConsumption"),
    ("clusterQueueQuotaPlan", "ClusterQueueGPUQuotaPlanIncrease", "cluster", 60, "1h", "info", _QUEUE + _PLAN, "clusterQueueQuota"),
    ("clusterQueueQuota", "ClusterQueueGPUQuotaNearlyUsed", "cluster", 80, "15m", "warning", _QUEUE, "clusterQueueQuota"),
    ("clusterQueueQuotaCritical", "ClusterQueueGPUQuotaCritical", "cluster", 95, "5m", "critical", _QUEUE + _STOP, "clusterQueueQuota"),
    ("nodePoolUtilizationPlan", "NodePoolGPUsPlanIncrease", "pool", 60, "1h", "info", _POOL + _PLAN, "nodePoolUtilization"),
    ("nodePoolUtilizationCritical", "NodePoolGPUsCritical", "pool", 95, "5m", "critical", _POOL + _STOP, "nodePoolUtilization"),
)

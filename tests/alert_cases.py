"""For each alert fleetgen renders: the change to a cluster's healthy metrics that fires it, and one that does not.

`CASES` maps each alert name to a builder that reads the rendered rule (its threshold, its `for`,
its team or endpoint) and returns the knobs (alert_world.py) that fire exactly that rule, the
knobs just on the quiet side of it, and the labels the firing alert carries beyond the rule's own.
An alert name with no builder has no firing case: the test fails on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import promql_parser
from alert_world import GPU_QUOTA, Cluster, Endpoint, Gpu, Knobs, threshold, waits, windows
from stored_series import KSM, Labels

# -- a firing case and a quiet case per alert -------------------------------------------------------


@dataclass(frozen=True)
class Case:
    fire: Knobs  # changes to the healthy knobs that fire the rule
    quiet: dict[str, Knobs]  # named changes that leave it silent
    labels: Labels  # the labels the alert gets from its expression
    minutes: int  # when to look
    still_true: dict[str, str] = field(default_factory=dict)  # quiet case -> an expression that must still return a series then
    every: int = 1  # minutes between rule evaluations: burn rates over days need no evaluation each minute


Builder = Callable[[Cluster, dict[str, Any]], Case]


def _team_gpu(c: Cluster, rule: dict[str, Any]) -> Gpu:
    return c.gpu_of(c.namespaces[rule["labels"]["team"]])


def gpu_underutilized(c: Cluster, rule: dict[str, Any]) -> Case:
    gpu, t = _team_gpu(c, rule), threshold(rule)
    namespace = c.namespaces[rule["labels"]["team"]]
    return Case(
        {("util", gpu.unit): max(t - 5, 0)}, {"just busy enough": {("util", gpu.unit): t + 5}}, {"namespace": namespace}, waits(rule) + 10
    )


def gpu_memory_full(c: Cluster, rule: dict[str, Any]) -> Case:
    gpu, t = _team_gpu(c, rule), threshold(rule)
    assert gpu.holder
    namespace, pod, _ = gpu.holder
    return Case(
        {("memory", gpu.unit): (t + 100) / 2},
        {"just under": {("memory", gpu.unit): t - 3}},
        {"namespace": namespace, "pod": pod},
        waits(rule) + 10,
    )


def quota_consumption(c: Cluster, rule: dict[str, Any]) -> Case:
    namespace, t = c.namespaces[rule["labels"]["team"]], threshold(rule)
    name, hard = c.quotas[namespace]
    most = int(t * hard // 100)  # the most GPUs the team may use without passing the threshold
    used = KSM.series("kube_resourcequota", {"namespace": namespace, "resourcequota": name, "resource": GPU_QUOTA, "type": "used"})
    labels = {k: v for k, v in used.items() if k not in ("__name__", "type")}  # what `100 * used / ignoring(type) hard` keeps
    return Case({("quota", namespace): most + 1}, {"at the threshold": {("quota", namespace): most}}, labels, waits(rule) + 10)


def slice_quota_consumption(c: Cluster, rule: dict[str, Any]) -> Case:
    """Like the GPU quota, on the slice quota the rule names (its `resource` label)."""
    namespace, resource, t = c.namespaces[rule["labels"]["team"]], rule["labels"]["resource"], threshold(rule)
    name, hard = c.slice_quotas[(namespace, resource)]
    most = int(t * hard // 100)  # the most slices the team may use without passing the threshold
    used = KSM.series("kube_resourcequota", {"namespace": namespace, "resourcequota": name, "resource": resource, "type": "used"})
    labels = {k: v for k, v in used.items() if k not in ("__name__", "type")}
    knob = ("quota", namespace, resource)
    return Case({knob: most + 1}, {"at the threshold": {knob: most}}, labels, waits(rule) + 10)


def _first_gpu(c: Cluster) -> Gpu:
    return c.gpus[0]


def gpu_temperature(c: Cluster, rule: dict[str, Any]) -> Case:
    gpu, t = _first_gpu(c), threshold(rule)
    return Case(
        {("temp", gpu.uuid): t + 5},
        {"just cool enough": {("temp", gpu.uuid): t - 2}},
        {c.host_label: gpu.node, "gpu": str(gpu.index)},
        waits(rule) + 10,
    )


def gpu_xid(c: Cluster, rule: dict[str, Any]) -> Case:
    gpu, t = _first_gpu(c), threshold(rule)
    fire = 79 if t < 79 else t + 1  # 79: the GPU has fallen off the bus
    return Case(
        {("xid", gpu.uuid): fire}, {"no error": {("xid", gpu.uuid): t}}, {c.host_label: gpu.node, "gpu": str(gpu.index)}, waits(rule) + 10
    )


def gpu_ecc(c: Cluster, rule: dict[str, Any]) -> Case:
    gpu, t, minutes = _first_gpu(c), threshold(rule), waits(rule) + 30
    errors = int(t) + 1
    return Case(
        {("ecc", gpu.uuid): (minutes - 5, errors)},
        {"errors long ago": {("ecc", gpu.uuid): (5, errors)}},  # the counter stays up: only an increase in 10 minutes counts
        {c.host_label: gpu.node, "gpu": str(gpu.index)},
        minutes,
    )


def kueue_pending(c: Cluster, rule: dict[str, Any]) -> Case:
    q, t = c.queues[0], int(threshold(rule))
    return Case(
        {("pending", q): (t - 10, 11)},
        {
            "at the threshold": {("pending", q): (t - 10, 10)},
            "HA: a follower reports the same": {("pending", q): (t - 10, 10), ("follower", q): True},
        },
        {"cluster_queue": q},
        waits(rule) + 10,
    )


def node_pool_utilization(c: Cluster, rule: dict[str, Any]) -> Case:
    pool, t = rule["labels"]["node_pool"], threshold(rule)
    _, most = c.pools[pool]
    busiest = int(t * most // 100)  # the most GPUs in use without passing the threshold
    return Case(
        {("pool", pool): busiest + 1},
        {
            "at the threshold": {("pool", pool): busiest},
            "HA: a follower reports the same": {("pool", pool): busiest, ("follower", pool): True},
        },
        {"flavor": pool},
        waits(rule) + 10,
    )


def cluster_queue_quota(c: Cluster, rule: dict[str, Any]) -> Case:
    """A queue's GPUs in use over its nominal quota; a queue that owns none (it only borrows) never fires, however much it holds."""
    t = threshold(rule)
    owned: dict[str, int] = {}
    for (q, _), (_, nominal) in c.nominal.items():
        owned[q] = owned.get(q, 0) + nominal
    q = next(q for q, nominal in owned.items() if nominal > 0)
    most = int(t * owned[q] // 100)  # the most GPUs in use without passing the threshold
    quiet = {"at the threshold": {("queue", q): most}, "HA: a follower reports the same": {("queue", q): most, ("follower", q): True}}
    quiet |= {f"{borrower} owns nothing": {("queue", borrower): 8} for borrower, nominal in owned.items() if nominal == 0}
    return Case({("queue", q): most + 1}, quiet, {"cluster_queue": q}, waits(rule) + 10)


def _endpoint(c: Cluster, rule: dict[str, Any]) -> Endpoint:
    return next(e for e in c.endpoints if (e.team, e.name) == (rule["labels"]["team"], rule["labels"]["endpoint"]))


def error_budget_burn(c: Cluster, rule: dict[str, Any]) -> Case:
    e, t = _endpoint(c, rule), threshold(rule)
    long, short = windows(rule)
    key = ("errors", e.team, e.name)
    minutes = 2 * short + 30
    recovered = (0.5, minutes - 2 * short)  # failing hard, then fine for twice the short window
    long_side = str(promql_parser.parse(rule["expr"]).lhs)
    return Case(
        {key: 1.25 * t},
        {"burning slightly slower": {key: 0.8 * t}, "recovered": {key: recovered}},
        {},
        minutes,
        {"recovered": long_side},  # the long window still burns: the short one keeps it silent
        every=30 if short >= 30 else 1,  # the alerts have no `for`: only the evaluation at `minutes` counts
    )


def latency_breach(c: Cluster, rule: dict[str, Any]) -> Case:
    e = _endpoint(c, rule)
    key = ("latency", e.team, e.name)
    return Case({key: "slow"}, {"P99 just under": {key: "near"}}, {}, waits(rule) + 10)


CASES: dict[str, Builder] = {
    "GPUUnderutilized": gpu_underutilized,
    "GPUMemoryNearlyFull": gpu_memory_full,
    "GPUQuotaNearlyUsed": quota_consumption,
    "GPUSliceQuotaNearlyUsed": slice_quota_consumption,
    "GPUTemperatureHigh": gpu_temperature,
    "GPUXidError": gpu_xid,
    "GPUDoubleBitECCErrors": gpu_ecc,
    "KueuePendingWorkloadsHigh": kueue_pending,
    "NodePoolGPUsNearlyFull": node_pool_utilization,
    "GPUQuotaPlanIncrease": quota_consumption,  # the chapter's 60%, 80% and 95% on each quota layer (render/alert_tiers.py)
    "GPUQuotaCritical": quota_consumption,
    "ClusterQueueGPUQuotaPlanIncrease": cluster_queue_quota,
    "ClusterQueueGPUQuotaNearlyUsed": cluster_queue_quota,
    "ClusterQueueGPUQuotaCritical": cluster_queue_quota,
    "NodePoolGPUsPlanIncrease": node_pool_utilization,
    "NodePoolGPUsCritical": node_pool_utilization,
    "ErrorBudgetBurn1h": error_budget_burn,
    "ErrorBudgetBurn6h": error_budget_burn,
    "ErrorBudgetBurn1d": error_budget_burn,
    "ErrorBudgetBurn3d": error_budget_burn,
    "LatencySLOBreach": latency_breach,
}

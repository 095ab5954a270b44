"""Alerts of the MultiKueue manager, on the series its Kueue exports (fleetgen/compat/multikueue.yaml).

- MultiKueueWorkloadsNotAdmitted: a worker was sent workloads in the last hour and admitted none of them (full,
  or its LocalQueue, quota or integration is missing): `multikueue_workloads_dispatched_total` against
  `multikueue_workloads_admitted_total`, per manager queue and worker.
- MultiKueueWorkerNotActive: Kueue exports no MultiKueueCluster condition, but it dispatches every workload of a
  queue to each Active worker (AllAtOnce) or to the first workers in order (Incremental: its first batch, 3 by
  default). A worker in that set that got none of what the queue dispatched in the last hour is not Active. One
  rule per such worker; none for an External dispatcher, whose choices fleetgen cannot know.
Both count the leader's copy only (replica_role), as the other Kueue alerts do. `alerts.rules` and the manager's
`alerts` change their thresholds, `for`, severity, or turn them off, under the names multikueueNotAdmitted and
multikueueWorkerInactive.
"""

from __future__ import annotations

from typing import Any

from fleetgen.model import Fleet
from fleetgen.model.multikueue import queue_workers
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.observability import MONITORING_API, Alert, _apply
from fleetgen.render.provenance import NOWHERE, Recorder

DISPATCHED = "multikueue_workloads_dispatched_total"
ADMITTED = "multikueue_workloads_admitted_total"
LEADER = 'replica_role!="follower"'
INCREMENTAL_BATCH = 3  # the Incremental dispatcher's first batch (site/content/en/docs/concepts/multikueue.md)
NOT_ADMITTED = Alert(
    "multikueueNotAdmitted",
    "MultiKueueWorkloadsNotAdmitted",
    "cluster",
    5,
    "15m",
    "warning",
    "A MultiKueue worker was sent over {threshold} workloads in the last hour and admitted none",
)
WORKER_INACTIVE = Alert(
    "multikueueWorkerInactive",
    "MultiKueueWorkerNotActive",
    "cluster",
    0,
    "15m",
    "critical",
    "MultiKueue worker {pool} got none of the workloads its queue dispatched in the last hour: its MultiKueueCluster is not Active",
)


def _effective(fleet: Fleet, index: int, alert: Alert) -> Alert:
    cluster = fleet.clusters[index]
    return _apply(_apply(alert, fleet.alerts.rules.get(alert.name)), cluster.alerts.get(alert.name))  # type: ignore[call-overload]


def _rule(fleet: Fleet, index: int, alert: Alert, expr: str, labels: dict[str, str], worker: str = "") -> dict[str, Any]:
    annotations = {"summary": alert.summary.format(threshold=f"{alert.threshold:g}", pool=worker)}
    if fleet.alerts.runbook_base_url:
        annotations["runbook_url"] = f"{fleet.alerts.runbook_base_url.rstrip('/')}/{alert.alert}"
    rule_labels = {"severity": alert.severity, "team": fleet.metadata.owner, "cluster": fleet.clusters[index].name, **labels}
    return {"alert": alert.alert, "expr": expr, "for": alert.duration, "labels": rule_labels, "annotations": annotations}


def _sum(metric: str, matchers: str, by: str = "cluster_queue, cluster") -> str:
    return f"sum by ({by}) (increase({metric}{{{matchers}}}[1h]))"


def multikueue_rules(fleet: Fleet, index: int) -> list[dict[str, Any]]:
    """The manager's MultiKueue alert rules; none on any other cluster."""
    mk = fleet.multi_kueue
    if mk is None or fleet.clusters[index].name != mk.manager:
        return []
    rules = []
    not_admitted = _effective(fleet, index, NOT_ADMITTED)
    if not_admitted.enabled:
        t = f"{not_admitted.threshold:g}"
        silent = f"({_sum(DISPATCHED, LEADER)} > {t}) unless on (cluster_queue, cluster) ({_sum(ADMITTED, LEADER)} > 0)"
        # Kueue's `cluster` label names the worker; the rule's own `cluster` label names the manager, so keep it as `worker`
        expr = f'label_replace({silent}, "worker", "$1", "cluster", "(.*)")'
        rules.append(_rule(fleet, index, not_admitted, expr, {}))
    inactive = _effective(fleet, index, WORKER_INACTIVE)
    if inactive.enabled and mk.dispatcher != "External":
        t = f"{inactive.threshold:g}"
        for queue, workers in queue_workers(mk, fleet.clusters).items():
            reached = workers if mk.dispatcher == "AllAtOnce" else workers[:INCREMENTAL_BATCH]
            for worker in reached:
                everywhere = _sum(DISPATCHED, f'cluster_queue="{queue}", {LEADER}', "cluster_queue")
                here = _sum(DISPATCHED, f'cluster_queue="{queue}", cluster="{worker}", {LEADER}', "cluster_queue")
                expr = f"({everywhere} > {t}) unless on (cluster_queue) ({here} > 0)"
                rules.append(_rule(fleet, index, inactive, expr, {"cluster_queue": queue, "worker": worker}, worker))
    return rules


def prometheus_rule(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """The manager's PrometheusRule of MultiKueue alerts, beside fleetgen's GPU alerts."""
    rules = multikueue_rules(fleet, index)
    if not rules:
        return []
    labels = {**fleet_labels(fleet), **fleet.alerts.rule_labels}
    spec = {"groups": [{"name": "multikueue", "rules": rules}]}
    body = k8s_object(MONITORING_API, "PrometheusRule", "fleetgen-multikueue-alerts", labels, namespace=fleet.alerts.namespace, spec=spec)
    return [Manifest(body, ("multiKueue",))]

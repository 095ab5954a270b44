"""GPU alerts (PrometheusRule) and Grafana dashboards (sidecar ConfigMaps), from the same model.

Alerts use the metric names of NVIDIA's DCGM exporter (DCGM_FI_DEV_*), kube-state-metrics
(kube_resourcequota) and Kueue (kueue_pending_workloads). Defaults are the seed's: GPU utilization under 20% for 1h, GPU memory over
95%, temperature over 83 C, XID and ECC errors, more than 50 pending workloads, quota consumption over 80%, a node pool's GPUs over 85%
in use; and on every quota layer (namespace, ClusterQueue, pool) the chapter's 60% info and 95% critical (render/alert_tiers.py). Each
level (fleet, cluster, team) may change threshold, duration, severity or switch an alert off. Quota consumption is watched on the
team's GPU quota and, at the same settings, on each slice quota it holds on the cluster (GPUSliceQuotaNearlyUsed, one rule per slice).

The team rules and panels select the labels the series carry once stored: the workload's
`namespace` and `pod` on DCGM's series (the exporter's ServiceMonitor honours them, render/platform.py),
the quota's `namespace` from kube-state-metrics, and Kueue's series through fleetgen's own
ServiceMonitor (render/kueue_monitor.py). A node pool is a Kueue ResourceFlavor of the same name, so its GPUs in
use are the admitted workloads' usage in that flavor (Kueue's optional ClusterQueue resource metrics, which
render/kueue_config.py switches on), against the pool at its largest size. tests/test_alerts_fire.py runs each rule through promtool on
series labelled that way.

Partitioned pools. The exporter reports a MIG GPU per slice (GPU instance): its series carry
GPU_I_PROFILE and GPU_I_ID, and the namespace and pod of the pod holding that slice. A slice has no
DCGM_FI_DEV_GPU_UTIL (older exporters report it as 0), so on a cluster with MIG pools "busy" is
DCGM_FI_DEV_GPU_UTIL of whole GPUs (no GPU_I_ID) together with 100 x DCGM_FI_PROF_GR_ENGINE_ACTIVE of
slices; memory (DCGM_FI_DEV_FB_USED/FREE) is reported per slice already. A time-sliced GPU is one
device to DCGM: every pod sharing it gets a copy of the whole GPU's series (render/dcgm_metrics.py
turns that on), so a team's numbers there are the shared GPU's, not its own pods'.
"""

import hashlib
import json
from typing import Any, NamedTuple

from fleetgen.checks.entitlement import queue_gpus
from fleetgen.compat.dcgm_exporter import OLDEST_LABEL, host_label
from fleetgen.errors import FieldPath
from fleetgen.model import GPU_RESOURCE, Cluster, Fleet, NodePool, Team
from fleetgen.model.alerts import AlertOverride
from fleetgen.model.partitioning import slice_resource
from fleetgen.render import provenance as prov
from fleetgen.render.alert_tiers import TIERED
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object, team_labels
from fleetgen.render.provenance import NOWHERE, Given, Recorder
from fleetgen.render.slo import budget_panel_targets

MONITORING_API = "monitoring.coreos.com/v1"
GPU_QUOTA = "requests.nvidia.com/gpu"
SLICE_QUOTA_ALERT = "GPUSliceQuotaNearlyUsed"  # quotaConsumption on a team's slice quota, one rule per slice
DASHBOARD_LABEL = {"grafana_dashboard": "1"}  # what the Grafana sidecar watches for by default
_QUEUE_GPUS = ("kueue_cluster_queue_resource_usage", "kueue_cluster_queue_nominal_quota")


class Alert(NamedTuple):
    name: str  # the fleet.yaml key
    alert: str  # the Prometheus alert name
    scope: str  # team, cluster, or pool (a rule for each GPU node pool a queue hands out)
    threshold: float
    duration: str
    severity: str
    summary: str
    enabled: bool = True
    query: str = ""  # the alert whose query this one asks at its own threshold (render/alert_tiers.py); its own name when empty

    def expr(
        self, namespace: str | None, pool: NodePool | None = None, mig: bool = False, quota: str = GPU_QUOTA, host: str = OLDEST_LABEL
    ) -> str:
        """The rule's PromQL; `host` is the label the cluster's DCGM exporter names a GPU's node with (compat/dcgm_exporter.py)."""
        if self.query and self.query != self.name:
            return self._replace(name=self.query, query="").expr(namespace, pool, mig, quota, host)
        t = f"{self.threshold:g}"
        ns = {"namespace": namespace} if namespace else {}
        if self.name == "gpuUnderutilized":
            return f"avg by (namespace) ({busy(ns, mig)}) < {t}"
        if self.name == "gpuMemoryFull":
            used, free = _sel("DCGM_FI_DEV_FB_USED", ns), _sel("DCGM_FI_DEV_FB_FREE", ns)
            return f"max by (namespace, pod) (100 * {used} / ({used} + {free})) > {t}"
        if self.name == "quotaConsumption":
            used = _sel("kube_resourcequota", {**ns, "resource": quota, "type": "used"})
            hard = _sel("kube_resourcequota", {**ns, "resource": quota, "type": "hard"})
            return f"100 * {used} / ignoring(type) {hard} > {t}"
        if self.name == "gpuTemperature":
            return f"max by ({host}, gpu) (DCGM_FI_DEV_GPU_TEMP) > {t}"
        if self.name == "gpuXidErrors":
            return f"max by ({host}, gpu) (DCGM_FI_DEV_XID_ERRORS) > {t}"
        if self.name == "gpuEccErrors":
            return f"max by ({host}, gpu) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])) > {t}"
        if self.name == "kueuePendingWorkloads":
            # Active and inadmissible workloads both wait. Every Kueue replica reports the gauge (replica_role tells
            # them apart since v0.16): count the leader's (or a lone replica's), not each replica's copy.
            return f'sum by (cluster_queue) (kueue_pending_workloads{{replica_role!="follower"}}) > {t}'
        if self.name == "clusterQueueQuota":  # a queue that owns nothing (it only borrows) has no share to run out of
            usage, nominal = (f'sum by (cluster_queue) ({m}{{resource="{GPU_RESOURCE}", replica_role!="follower"}})' for m in _QUEUE_GPUS)
            return f"100 * {usage} / ({nominal} > 0) > {t}"
        if self.name == "nodePoolUtilization" and pool is not None:
            # a pool name is a DNS label: nothing to escape; the leader's copy, as for pending workloads
            usage = f'kueue_cluster_queue_resource_usage{{flavor="{pool.name}", resource="{GPU_RESOURCE}", replica_role!="follower"}}'
            return f"100 * sum by (flavor) ({usage}) / {pool.max_nodes * pool.gpus_per_node} > {t}"
        raise ValueError(self.name)


DEFAULT_ALERTS: tuple[Alert, ...] = (
    Alert("gpuUnderutilized", "GPUUnderutilized", "team", 20, "1h", "warning", "GPUs of {team} are under {threshold}% busy: waste"),
    Alert(
        "gpuMemoryFull",
        "GPUMemoryNearlyFull",
        "team",
        95,
        "5m",
        "warning",
        "A pod of {team} uses over {threshold}% of its GPU memory: OOM risk",
    ),
    Alert("quotaConsumption", "GPUQuotaNearlyUsed", "team", 80, "15m", "warning", "{team} has used over {threshold}% of its GPU quota"),
    Alert("gpuTemperature", "GPUTemperatureHigh", "cluster", 83, "5m", "critical", "A GPU is hotter than {threshold} C"),
    Alert("gpuXidErrors", "GPUXidError", "cluster", 0, "1m", "critical", "A GPU reported an XID error"),
    Alert("gpuEccErrors", "GPUDoubleBitECCErrors", "cluster", 0, "1m", "critical", "A GPU reported double-bit ECC errors"),
    Alert(
        "nodePoolUtilization",
        "NodePoolGPUsNearlyFull",
        "pool",
        85,
        "15m",
        "warning",
        "Over {threshold}% of the GPUs of node pool {pool} at its largest size are in use",
    ),
    Alert(
        "kueuePendingWorkloads",
        "KueuePendingWorkloadsHigh",
        "cluster",
        50,
        "15m",
        "warning",
        "More than {threshold} workloads wait in a cluster queue",
    ),
) + tuple(Alert(*row[:7], query=row[7]) for row in TIERED)


def busy(labels: dict[str, str], mig: bool) -> str:
    """The per-device busy percentage: GPU utilisation, and on a cluster with MIG pools each slice's graphics engine activity."""
    if not mig:
        return _sel("DCGM_FI_DEV_GPU_UTIL", labels)
    whole = _sel("DCGM_FI_DEV_GPU_UTIL", {**labels, "GPU_I_ID": ""})
    return f"{whole} or 100 * {_sel('DCGM_FI_PROF_GR_ENGINE_ACTIVE', labels, present=('GPU_I_ID',))}"


def has_mig(cluster: Cluster) -> bool:
    return any(pool.partitioning.kind == "mig" for pool in cluster.node_pools)


def _sel(metric: str, labels: dict[str, str], present: tuple[str, ...] = ()) -> str:
    """A vector selector; label values are escaped, so no value can change the expression. `present`: labels that must be set."""
    if not labels and not present:
        return metric
    matchers = [f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"' for k, v in labels.items()]
    inner = ", ".join(matchers + [f'{k}!=""' for k in present])
    return f"{metric}{{{inner}}}"


def _apply(alert: Alert, override: AlertOverride | None) -> Alert:
    if override is None:
        return alert
    return alert._replace(
        threshold=alert.threshold if override.threshold is None else override.threshold,
        duration=override.for_ or alert.duration,
        severity=override.severity or alert.severity,
        enabled=alert.enabled if override.enabled is None else override.enabled,
    )


def effective_alerts(fleet: Fleet, cluster: Cluster, team: Team | None = None) -> list[Alert]:
    """Defaults, then the fleet's changes, the cluster's, and (for team alerts) the team's."""
    out = []
    for alert in DEFAULT_ALERTS:
        if (team is None) == (alert.scope == "team"):
            continue
        alert = _apply(_apply(alert, fleet.alerts.rules.get(alert.name)), cluster.alerts.get(alert.name))  # type: ignore[call-overload]
        if team is not None:
            alert = _apply(alert, team.alerts.get(alert.name))  # type: ignore[call-overload]
        if alert.enabled:
            out.append(alert)
    return out


def team_alerts(fleet: Fleet, cluster: Cluster, team: Team) -> list[tuple[Alert, str | None]]:
    """The team's rules in order: each team alert once, and quotaConsumption again, at the same settings, for each slice
    quota the team holds on the cluster (GPUSliceQuotaNearlyUsed on requests.nvidia.com/mig-1g.10gb)."""
    out: list[tuple[Alert, str | None]] = []
    for alert in effective_alerts(fleet, cluster, team):
        out.append((alert, None))
        if alert.name == "quotaConsumption":
            for name in sorted(team.quota_on(cluster.name).requests.slices):
                summary = "{team} has used over {threshold}% of its " + slice_resource(name) + " quota"
                out.append((alert._replace(alert=SLICE_QUOTA_ALERT, summary=summary), f"requests.{slice_resource(name)}"))
    return out


def queued_gpu_pools(cluster: Cluster) -> list[NodePool]:
    """The cluster's GPU node pools that some queue hands out: the flavors Kueue reports usage in."""
    named = {f for q in cluster.queues if q.flavors is not None for f in q.flavors}
    every = any(q.flavors is None for q in cluster.queues)
    return [p for p in cluster.node_pools if p.gpus_per_node > 0 and (every or p.name in named)]


def cluster_alerts(fleet: Fleet, cluster: Cluster) -> list[tuple[Alert, NodePool | None]]:
    """The cluster's health rules in order: each cluster alert once, each pool alert once per queued GPU pool."""
    out: list[tuple[Alert, NodePool | None]] = []
    owns_gpus = any(queue_gpus(fleet, cluster, i).owned for i in range(len(cluster.queues)))
    for alert in effective_alerts(fleet, cluster):
        if (alert.query or alert.name) == "clusterQueueQuota" and not owns_gpus:
            continue  # no queue owns whole GPUs (MIG slices only, or borrowers): a rule that could never fire
        out += [(alert, pool) for pool in queued_gpu_pools(cluster)] if alert.scope == "pool" else [(alert, None)]
    return out


def _rule(
    fleet: Fleet, cluster: Cluster, alert: Alert, team: str, namespace: str | None, pool: NodePool | None = None, quota: str | None = None
) -> dict[str, Any]:
    summary = alert.summary.format(team=team, threshold=f"{alert.threshold:g}", pool=pool.name if pool else "")
    annotations = {"summary": summary}
    if fleet.alerts.runbook_base_url:
        annotations["runbook_url"] = f"{fleet.alerts.runbook_base_url.rstrip('/')}/{alert.alert}"
    return {
        "alert": alert.alert,
        "expr": alert.expr(namespace, pool, has_mig(cluster), quota or GPU_QUOTA, host_label(fleet, cluster)),
        "for": alert.duration,
        "labels": {
            "severity": alert.severity,
            "team": team,
            "cluster": cluster.name,
            **({"node_pool": pool.name} if pool else {}),
            **({"resource": quota} if quota else {}),
        },
        "annotations": annotations,
    }


def prometheus_rule(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    cluster = fleet.clusters[index]
    health = [_rule(fleet, cluster, a, fleet.metadata.owner, None, pool) for a, pool in cluster_alerts(fleet, cluster)]
    teams = [
        _rule(fleet, cluster, a, team.name, team.namespace, None, quota)
        for _, team in fleet.placements[cluster.name]
        for a, quota in team_alerts(fleet, cluster, team)
    ]
    groups = [g for g in ({"name": "gpu-health", "rules": health}, {"name": "gpu-teams", "rules": teams}) if g["rules"]]
    labels = {**fleet_labels(fleet), **fleet.alerts.rule_labels}
    body = k8s_object(
        MONITORING_API, "PrometheusRule", "fleetgen-gpu-alerts", labels, namespace=fleet.alerts.namespace, spec={"groups": groups}
    )
    if why.on:
        _record_rules(why, body, fleet, index)
    return [Manifest(body, ("alerts",))]


def _setting(fleet: Fleet, index: int, team: int | None, name: str, attr: str) -> Given:
    """Where an alert's threshold, for or severity comes from: the team's, the cluster's, the fleet's change, or the default."""
    levels: list[tuple[FieldPath, AlertOverride | None]] = [(("alerts", "rules", name), fleet.alerts.rules.get(name))]  # type: ignore[call-overload]
    levels.append((("clusters", index, "alerts", name), fleet.clusters[index].alerts.get(name)))  # type: ignore[call-overload]
    if team is not None:
        levels.append((("teams", team, "alerts", name), fleet.teams[team].alerts.get(name)))  # type: ignore[call-overload]
    for at, override in reversed(levels):
        if override is not None and getattr(override, "for_" if attr == "for" else attr) is not None:
            return at + (attr,)
    return prov.default(f"fleetgen's default {attr} of {name}")


def _record_rules(why: Recorder, body: dict[str, Any], fleet: Fleet, index: int) -> None:
    rule_labels = {k: ("alerts", "ruleLabels", k) for k in fleet.alerts.rule_labels}
    why.meta(body, prov.default("fleetgen's rule name"), {**prov.fleet_labels(), **rule_labels}, ("alerts", "namespace"))
    cluster = fleet.clusters[index]
    health = [(None, a, pool, None) for a, pool in cluster_alerts(fleet, cluster)]
    teams = [(t, a, None, quota) for t, team in fleet.placements[cluster.name] for a, quota in team_alerts(fleet, cluster, team)]
    for g, rules in enumerate(r for r in (health, teams) if r):
        why.set(body, ("spec", "groups", g, "name"), prov.default("fleetgen's rule groups: cluster health, then teams"))
        for k, (t, alert, pool, quota) in enumerate(rules):
            at: tuple[str | int, ...] = ("spec", "groups", g, "rules", k)
            threshold = _setting(fleet, index, t, alert.name, "threshold")
            inputs = [p for p in (threshold,) if not isinstance(p, prov.Origin)] + ([("teams", t, "name")] if t is not None else [])
            if pool is not None:  # the pool's name and its GPUs at its largest size
                pool_at = ("clusters", index, "nodePools", cluster.node_pools.index(pool))
                why.set(body, (*at, "labels", "node_pool"), (*pool_at, "name"))
                inputs += [(*pool_at, "name"), (*pool_at, "maxNodes"), (*pool_at, "gpusPerNode")]
            if quota is not None and t is not None:  # a slice quota of the team's: its value names the resource
                slice_at = prov.quota_path(fleet.teams[t], ("teams", t), cluster.name, quota.replace("nvidia.com/", ""))
                why.set(body, (*at, "labels", "resource"), slice_at)
                inputs.append(slice_at)
            why.set(body, (*at, "alert"), prov.default(f"the Prometheus alert fleetgen names for {alert.name}"))
            why.set(body, (*at, "expr"), prov.derived(f"the {alert.name} query at its threshold {alert.threshold:g}", *inputs))
            why.set(body, (*at, "for"), _setting(fleet, index, t, alert.name, "for"))
            why.set(body, (*at, "labels", "severity"), _setting(fleet, index, t, alert.name, "severity"))
            why.set(body, (*at, "labels", "team"), ("teams", t, "name") if t is not None else ("metadata", "owner"))
            why.set(body, (*at, "labels", "cluster"), ("clusters", index, "name"))
            why.set(body, (*at, "annotations", "summary"), prov.derived(f"the {alert.name} summary at its threshold", *inputs))
            why.set(body, (*at, "annotations", "runbook_url"), prov.derived("runbookBaseUrl/<alert>", ("alerts", "runbookBaseUrl")))


# -- dashboards -------------------------------------------------------------------------------


def _uid(name: str) -> str:
    """Grafana uids are at most 40 characters; long names get a stable hash."""
    return name if len(name) <= 40 else name[:29] + "-" + hashlib.sha256(name.encode()).hexdigest()[:10]


def _panel(number: int, title: str, kind: str, expr: str, legend: str, unit: str, x: int, y: int, w: int = 12) -> dict[str, Any]:
    return {
        "id": number,
        "title": title,
        "type": kind,
        "gridPos": {"x": x, "y": y, "w": w, "h": 8},
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"refId": "A", "expr": expr, "legendFormat": legend}],
    }


def _dashboard(uid: str, title: str, tags: list[str], panels: list[dict[str, Any]]) -> str:
    board = {
        "uid": _uid(uid),
        "title": title,
        "tags": tags,
        "schemaVersion": 39,
        "time": {"from": "now-24h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
        "panels": panels,
    }
    return json.dumps(board, sort_keys=True, separators=(",", ":")) + "\n"  # compact: C encoder, 10x faster


def overview_dashboard(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """Is anything broken, wasted, at risk: endpoints up, a GPU utilization heat map, quota consumption."""
    cluster = fleet.clusters[index]
    used = _sel("kube_resourcequota", {"resource": GPU_QUOTA, "type": "used"})
    hard = _sel("kube_resourcequota", {"resource": GPU_QUOTA, "type": "hard"})
    panels = [
        _panel(1, "Endpoints up (broken?)", "stat", "sum by (job) (up)", "{{job}}", "none", 0, 0),
        _panel(
            2,
            "GPU utilization by namespace (wasted?)",
            "heatmap",
            f"avg by (namespace) ({busy({}, has_mig(cluster))})",
            "{{namespace}}",
            "percent",
            12,
            0,
        ),
        _panel(
            3, "GPU quota consumption (at risk?)", "bargauge", f"100 * {used} / ignoring(type) {hard}", "{{namespace}}", "percent", 0, 8, 24
        ),
    ]
    name = f"fleetgen-{cluster.name}-overview"
    data = {f"{name}.json": _dashboard(name, f"GPU fleet: {cluster.name}", ["fleetgen", "gpu"], panels)}
    body = k8s_object("v1", "ConfigMap", name, {**fleet_labels(fleet), **DASHBOARD_LABEL}, namespace=fleet.alerts.namespace, data=data)
    if why.on:
        named = prov.derived("the cluster's overview dashboard", ("clusters", index, "name"))
        why.meta(body, named, {**prov.fleet_labels(), **DASHBOARD_ORIGIN}, ("alerts", "namespace"))
        why.set(body, ("data",), named)
    return [Manifest(body, ("clusters", index))]


DASHBOARD_ORIGIN: dict[str, Given] = {"grafana_dashboard": prov.default("what Grafana's dashboard sidecar looks for")}


def team_dashboard(fleet: Fleet, team: Team, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    """The team's own view: its namespace is fixed into every query."""
    ns = {"namespace": team.namespace}
    mig = any(has_mig(c) for c in fleet.clusters if c.name in team.clusters)  # the clusters the team is placed on
    used = _sel("kube_resourcequota", {**ns, "resource": GPU_QUOTA, "type": "used"})
    hard = _sel("kube_resourcequota", {**ns, "resource": GPU_QUOTA, "type": "hard"})
    panels = [
        _panel(1, "GPU utilization", "timeseries", f"avg by (pod) ({busy(ns, mig)})", "{{pod}}", "percent", 0, 0),
        _panel(2, "GPU memory used", "timeseries", f"sum by (pod) ({_sel('DCGM_FI_DEV_FB_USED', ns)})", "{{pod}}", "decmbytes", 12, 0),
        _panel(3, "GPU quota used", "gauge", f"100 * {used} / ignoring(type) {hard}", "quota", "percent", 0, 8, 24),
    ]
    if mig:  # the team's MIG slices by profile: which sizes it keeps busy
        slices = _sel("DCGM_FI_PROF_GR_ENGINE_ACTIVE", ns, present=("GPU_I_ID",))
        panels.append(
            _panel(
                4,
                "MIG slices busy by profile",
                "timeseries",
                f"100 * avg by (GPU_I_PROFILE) ({slices})",
                "{{GPU_I_PROFILE}}",
                "percent",
                0,
                24,
                24,
            )
        )
    for n, (title, kind, expr, unit) in enumerate(budget_panel_targets(team)):  # its endpoints' SLOs, if it serves any
        panels.append(_panel(len(panels) + 1, title, kind, expr, "{{cluster}} {{endpoint}}", unit, 12 * n, 16))
    name = f"fleetgen-team-{team.name}"
    data = {f"{name}.json": _dashboard(name, f"GPU team: {team.name}", ["fleetgen", "gpu", f"team-{team.name}"], panels)}
    body = k8s_object("v1", "ConfigMap", name, {**team_labels(fleet, team), **DASHBOARD_LABEL}, namespace=fleet.alerts.namespace, data=data)
    if why.on:
        named = prov.derived("the team's dashboard: its namespace in every query", at + ("name",))
        why.meta(body, named, {**prov.team_labels(at), **DASHBOARD_ORIGIN}, ("alerts", "namespace"))
        why.set(body, ("data",), named)
    return [Manifest(body, at + ("name",))]

"""fleetgen's own ServiceMonitor for Kueue's metrics: what feeds the pending-workloads alert.

The Kueue chart's ServiceMonitor (`enablePrometheus`) carries only the chart's labels, and the
chart has no value to add one, so a kube-prometheus-stack Prometheus, which selects monitors by
its release label, never scrapes it. This one carries the fleet's rule labels (`alerts.ruleLabels`,
the labels the fleet's Prometheus selects its rules and the DCGM ServiceMonitor by) and scrapes the
chart's metrics Service the way the chart's own monitor would.

What it selects is the chart's, at the pinned version (charts/kueue/templates/manager/
auth_proxy_service.yaml and _helpers.tpl at kueue v0.19.2): the Service
`<release>-controller-manager-metrics-service` labelled with the chart name, the release and
`app.kubernetes.io/component: metrics-service`, port `https` (8443). Kueue serves its metrics
over TLS behind an authorization filter: Prometheus sends its own service account token (the
kube-prometheus-stack role may GET /metrics) and, as the chart's monitor does, does not verify
the certificate Kueue signs for itself.
"""

from __future__ import annotations

from fleetgen.model import Fleet
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.platform import RELEASES, add_ons, setting_at
from fleetgen.render.provenance import NOWHERE, Recorder

MONITORING_API = "monitoring.coreos.com/v1"
NAME = "fleetgen-kueue-metrics"
METRICS_COMPONENT = {"app.kubernetes.io/component": "metrics-service"}  # the chart's label on its metrics Service only
METRICS_PORT = "https"  # the chart's metricsService.ports[0].name
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def service_monitor(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """The cluster's Kueue ServiceMonitor, beside its alerts; nothing when the cluster installs no Kueue."""
    found = [(addon, at) for name, addon, at in add_ons(fleet, index) if name == "kueue"]
    if not found:
        return []
    [(kueue, at)] = found
    selector = {"app.kubernetes.io/name": kueue.chart, "app.kubernetes.io/instance": RELEASES["kueue"], **METRICS_COMPONENT}
    endpoint = {
        "port": METRICS_PORT,
        "scheme": "https",
        "path": "/metrics",
        "bearerTokenFile": SERVICE_ACCOUNT_TOKEN,
        "tlsConfig": {"insecureSkipVerify": True},
    }
    spec = {"selector": {"matchLabels": selector}, "namespaceSelector": {"matchNames": [kueue.namespace]}, "endpoints": [endpoint]}
    labels = {**fleet_labels(fleet), **fleet.alerts.rule_labels}
    body = k8s_object(MONITORING_API, "ServiceMonitor", NAME, labels, namespace=fleet.alerts.namespace, spec=spec)
    if why.on:
        rule_labels = {k: ("alerts", "ruleLabels", k) for k in fleet.alerts.rule_labels}
        why.meta(body, prov.default("fleetgen's Kueue ServiceMonitor"), {**prov.fleet_labels(), **rule_labels}, ("alerts", "namespace"))
        why.set(body, ("spec",), prov.default("how the Kueue chart serves its metrics"))
        why.set(body, ("spec", "selector", "matchLabels", "app.kubernetes.io/name"), setting_at(fleet, index, "kueue", "chart"))
        why.set(body, ("spec", "namespaceSelector", "matchNames"), setting_at(fleet, index, "kueue", "namespace"))
    return [Manifest(body, at)]

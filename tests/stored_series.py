"""Series as Prometheus stores them from the exporters fleetgen's alerts and dashboards read.

An exporter exposes each sample with its own labels; Prometheus adds the labels of the target it
scraped. For a ServiceMonitor endpoint the Prometheus Operator makes those job, instance,
namespace, service, endpoint, pod and container. Where the exporter and the target both have a
label, honorLabels decides: true keeps the exporter's value, false (the default) keeps the
target's and stores the exporter's as exported_<name> (Prometheus' scrape `honor_labels`).

Each target here is the one the fleet's cluster really has, read from what fleetgen renders where
fleetgen renders it:
- DCGM exporter: the GPU Operator's ServiceMonitor (assets/state-dcgm-exporter at v24.3.0 and
  v25.10.1: Service and jobLabel `app: nvidia-dcgm-exporter`, port gpu-metrics), with the
  honorLabels fleetgen sets in the chart values (the chart's default when it sets none), in the
  release's namespace. The exporter labels each GPU gpu, UUID, device, modelName, Hostname (the
  node, from NODE_NAME) and DCGM_FI_DRIVER_VERSION, and adds namespace, pod and container only
  while a pod holds the GPU (dcgm-exporter pkg/dcgmexporter/kubernetes.go).
- kube-state-metrics: kube-prometheus-stack's ServiceMonitor, which honours its labels.
- Kueue: a ServiceMonitor among the cluster's rendered objects that the fleet's Prometheus selects
  (it carries `alerts.ruleLabels`) and that selects the Kueue chart's metrics Service and port;
  without one, no Kueue series is stored at all.
- An inference endpoint: the ServiceMonitor and Service `job new` writes for it, in the team's namespace; the
  server itself exposes only its own labels (code, method, le), none of the endpoint's selector.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CHARTS = Path(__file__).resolve().parent / "charts"
Labels = dict[str, str]


def stored(exposed: Labels, target: Labels, honor: bool) -> Labels:
    """The labels Prometheus stores for a sample exposed with `exposed`, scraped from a target labelled `target`."""
    out = dict(exposed)
    for name, value in target.items():
        if exposed.get(name):
            if honor:
                continue
            out["exported_" + name] = exposed[name]
        out[name] = value
    return {k: v for k, v in out.items() if v}


@dataclass(frozen=True)
class Target:
    labels: Labels
    honor: bool

    def series(self, metric: str, exposed: Labels) -> Labels:
        return {"__name__": metric, **stored(exposed, self.labels, self.honor)}


def _monitor(
    labels: Labels, honor: bool, *, job: str, namespace: str, service: str, port: str, pod: str, container: str, ip: str
) -> Target:
    """A ServiceMonitor endpoint's target: the labels the Prometheus Operator's relabelling gives it."""
    address = {"gpu-metrics": 9400, "https": 8443, "http": 8080}[port]
    own = {"job": job, "instance": f"{ip}:{address}", "namespace": namespace, "service": service, "endpoint": port}
    return Target({**own, "pod": pod, "container": container, **labels}, honor)


# -- the DCGM exporter, through the GPU Operator -----------------------------------------------

DCGM_SERVICE = "nvidia-dcgm-exporter"  # the operator's Service, its `app` label (the monitor's jobLabel) and DaemonSet


def chart_default(chart: str, *path: str) -> Any:
    value: Any = yaml.safe_load((CHARTS / chart / "values.yaml").read_text(encoding="utf-8"))
    for key in path:
        value = value[key]
    return value


def release_of(platform: list[dict[str, Any]], release: str) -> tuple[str, dict[str, Any]]:
    """(namespace, values) of a chart release as the cluster's GitOps objects install it (Flux or Argo CD)."""
    for body in platform:
        if body["kind"] == "HelmRelease" and body["spec"]["releaseName"] == release:
            return body["spec"]["targetNamespace"], body["spec"]["values"]
        if body["kind"] == "Application" and body["spec"]["source"].get("helm", {}).get("releaseName") == release:
            return body["spec"]["destination"]["namespace"], body["spec"]["source"]["helm"]["valuesObject"]
    raise AssertionError(f"no release {release} among the platform objects")


def dcgm_targets(platform: list[dict[str, Any]], nodes: list[str], honor: bool | None = None) -> dict[str, Target]:
    """The exporter pod's target on each GPU node; `honor` overrides what the rendered values say."""
    namespace, values = release_of(platform, "gpu-operator")
    monitor = values.get("dcgmExporter", {}).get("serviceMonitor", {})
    assert monitor.get("enabled", chart_default("gpu-operator", "dcgmExporter", "serviceMonitor", "enabled")), "nothing scrapes DCGM"
    if honor is None:
        honor = monitor.get("honorLabels", chart_default("gpu-operator", "dcgmExporter", "serviceMonitor", "honorLabels"))
    return {
        node: _monitor(
            {},
            bool(honor),
            job=DCGM_SERVICE,
            namespace=namespace,
            service=DCGM_SERVICE,
            port="gpu-metrics",
            pod=f"{DCGM_SERVICE}-{n:05x}",
            container=DCGM_SERVICE,
            ip=f"10.244.{n}.7",
        )
        for n, node in enumerate(nodes, start=1)
    }


# -- kube-state-metrics, through kube-prometheus-stack ------------------------------------------

KSM = _monitor(
    {},
    True,  # kube-prometheus-stack scrapes kube-state-metrics with honorLabels: the object's namespace stays
    job="kube-state-metrics",
    namespace="monitoring",
    service="kube-prometheus-stack-kube-state-metrics",
    port="http",
    pod="kube-prometheus-stack-kube-state-metrics-6c9f8d7b5-q2w4e",
    container="kube-state-metrics",
    ip="10.244.0.12",
)


# -- Kueue ----------------------------------------------------------------------------------------


def kueue_service_labels(chart: str, release: str, version: str) -> Labels:
    """The labels of the Kueue chart's metrics Service (kueue.metricsService.labels in the chart's _helpers.tpl)."""
    return {
        "helm.sh/chart": f"{chart}-{version}",
        "app.kubernetes.io/name": chart,
        "app.kubernetes.io/instance": release,
        "control-plane": "controller-manager",
        "app.kubernetes.io/version": f"v{version}",
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/component": "metrics-service",
    }


def kueue_target(objects: list[dict[str, Any]], selected_by: Labels, namespace: str, chart: str, version: str) -> Target | None:
    """The Kueue controller's target if a ServiceMonitor the fleet's Prometheus selects scrapes it, else None."""
    release = "kueue"  # fleetgen's release name; the chart's full name is then "kueue"
    service = f"{release}-controller-manager-metrics-service"
    service_labels = kueue_service_labels(chart, release, version)
    ports = {p["name"] for p in chart_default("kueue", "metricsService", "ports")}
    for body in objects:
        if body["kind"] != "ServiceMonitor" or not selected_by.items() <= body["metadata"].get("labels", {}).items():
            continue
        spec = body["spec"]
        where = spec.get("namespaceSelector", {})
        in_namespace = where.get("any") or namespace in where.get("matchNames", [body["metadata"]["namespace"]])
        if not in_namespace or not spec["selector"].get("matchLabels", {}).items() <= service_labels.items():
            continue
        for endpoint in spec["endpoints"]:
            if endpoint.get("port") in ports:
                honor = endpoint.get("honorLabels", False)
                pod, ip = f"{release}-controller-manager-7f8b9c6d4-h5j6k", "10.244.0.31"
                return _monitor(
                    {}, honor, job=service, namespace=namespace, service=service, port="https", pod=pod, container="manager", ip=ip
                )
    return None


# -- an inference endpoint, as `job new` deploys it -------------------------------------------------


def service_monitor_target(monitor: dict[str, Any], service: dict[str, Any], pod: str, ip: str) -> Target:
    """The target the Prometheus Operator makes of `monitor`'s endpoint on `service` (prometheus-operator
    pkg/prometheus/promcfg.go, generateServiceMonitorConfig): job (the Service name), instance, namespace, service, pod,
    container, endpoint (the port name); the Service labels `targetLabels` names; then the endpoint's relabelings in
    order, so they win. Only the relabelings fleetgen writes (replace with a fixed value) are modelled; any other fails."""
    meta = service["metadata"]
    assert monitor["metadata"]["namespace"] == meta["namespace"], "a ServiceMonitor selects Services in its own namespace"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= meta["labels"].items(), "the ServiceMonitor selects no Service"
    [endpoint] = monitor["spec"]["endpoints"]
    port = next(p for p in service["spec"]["ports"] if p["name"] == endpoint["port"])
    labels = {
        "job": meta["name"],
        "instance": f"{ip}:{port['port']}",
        "namespace": meta["namespace"],
        "service": meta["name"],
        "pod": pod,
        "container": "server",
        "endpoint": port["name"],
    }
    labels |= {key: meta["labels"][key] for key in monitor["spec"].get("targetLabels", []) if key in meta["labels"]}
    for relabel in endpoint.get("relabelings", []):
        assert relabel["action"] == "replace" and "sourceLabels" not in relabel, f"not modelled: {relabel}"
        labels[relabel["targetLabel"]] = relabel["replacement"]
    return Target(labels, endpoint.get("honorLabels", False))

"""The inference golden path: a Deployment and what keeps it serving and measured.

- Deployment: the server at its SLO tier's priority, probes on the server's own paths (the startup
  probe waits out the model's load time), replicas spread over nodes (a hard rule: one node's loss
  or drain takes at most its share) and zones (a preference), and a rolling update that surges
  only when the team's quota holds one more pod (else it would stall at the quota).
- Service: the server's `http` port, which the ServiceMonitor scrapes.
- ServiceMonitor: labelled with `alerts.ruleLabels`, which the fleet's Prometheus selects monitors
  by. The Prometheus Operator labels each series with the target's namespace, service, pod,
  container, endpoint (the port name), job and instance; its relabelings, applied after those, set
  every label of the endpoint's `metrics.selector` to its value, so the series carry exactly the
  labels the SLO rules select (namespace is the team's, where the Deployment runs).
- PodDisruptionBudget: the GPU Operator drains a quarter of the nodes at a time for a driver
  upgrade (`maxUnavailable: 25%`), and the replicas are spread over nodes, so the budget lets a
  quarter of the replicas go at once (at least one, or the drain never ends) and the rest serve.
  A pod that is not ready may always be evicted, so a crashing replica never blocks a drain.
  A single replica cannot both serve and be drained: `job new` warns about it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from fleetgen.errors import InputError
from fleetgen.jobs.job_target import Target
from fleetgen.model import Fleet
from fleetgen.render.manifest import k8s_object

SLO_TIER_LABEL = "fleetgen/slo-tier"
APP_LABEL = "app.kubernetes.io/name"
MONITORING_API = "monitoring.coreos.com/v1"
PORT_NAME = "http"
DRAIN_SHARE = 4  # the GPU Operator's driver upgrade drains 1 node in 4 at a time (its maxUnavailable: 25%)

# The seed's probes for model serving; the startup probe's failureThreshold comes from the load time.
LIVENESS: dict[str, Any] = {"initialDelaySeconds": 120, "periodSeconds": 30, "failureThreshold": 3}
READINESS: dict[str, Any] = {"initialDelaySeconds": 60, "periodSeconds": 10, "failureThreshold": 2}
STARTUP_PERIOD = 10  # seconds between startup probes
STARTUP: dict[str, Any] = {"initialDelaySeconds": 30, "periodSeconds": STARTUP_PERIOD}


@dataclass(frozen=True)
class Serving:
    """An inference endpoint: its SLO tier, how long its model takes to load, how it is reached, probed and scraped."""

    tier: str
    load_time: int  # seconds
    port: int = 8080
    replicas: int = 2
    health_path: str = "/health"  # liveness and startup
    ready_path: str = "/ready"
    metrics_path: str = "/metrics"
    selector: dict[str, str] = field(default_factory=dict)  # the endpoint's metrics.selector, which its series must carry


def startup_failure_threshold(load_time: int) -> int:
    """Startup probe failures allowed: ceil(load time / periodSeconds), so the probe waits out the model's load."""
    return max(1, math.ceil(load_time / STARTUP_PERIOD))


def disruption_budget(replicas: int) -> int:
    """Replicas that may be evicted at once: a quarter (the share of nodes a driver upgrade drains), at least one."""
    return max(1, replicas // DRAIN_SHARE)


def serving_warnings(serving: Serving) -> list[str]:
    if serving.replicas == 1:
        return [
            "1 replica cannot serve while its node drains (the GPU Operator drains nodes for driver upgrades): "
            "the endpoint is down until its pod runs again elsewhere; ask for --replicas 2 or more"
        ]
    return []


def server_container(name: str, image: str, command: tuple[str, ...], serving: Serving) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "server", "image": image}
    if command:
        container["command"] = list(command)
    container["ports"] = [{"name": PORT_NAME, "containerPort": serving.port}]

    def probe(path: str, settings: dict[str, Any], **extra: int) -> dict[str, Any]:
        return {"httpGet": {"path": path, "port": PORT_NAME}, **settings, **extra}

    container["livenessProbe"] = probe(serving.health_path, LIVENESS)
    container["readinessProbe"] = probe(serving.ready_path, READINESS)
    threshold = startup_failure_threshold(serving.load_time)
    container["startupProbe"] = probe(serving.health_path, STARTUP, failureThreshold=threshold)
    return container


def serving_objects(
    fleet: Fleet, name: str, target: Target, pod: dict[str, Any], serving: Serving, labels: dict[str, str], queue: str | None
) -> list[dict[str, Any]]:
    """Deployment, Service, ServiceMonitor and PodDisruptionBudget of the endpoint; `queue`: the LocalQueue that admits its
    pods where Kueue manages Deployments."""
    ns = target.team.namespace
    selector = {APP_LABEL: name}
    labels = labels | selector | {SLO_TIER_LABEL: serving.tier}
    spread = [
        _spread("kubernetes.io/hostname", "DoNotSchedule", selector),  # the cluster autoscaler adds a node for it
        _spread("topology.kubernetes.io/zone", "ScheduleAnyway", selector),
    ]
    template = {"metadata": {"labels": dict(sorted(labels.items()))}, "spec": {**pod, "topologySpreadConstraints": spread}}
    spec = {"replicas": serving.replicas, "selector": {"matchLabels": selector}, "strategy": _strategy(target, serving)}
    spec["template"] = template
    deployment_labels = labels | {"kueue.x-k8s.io/queue-name": queue} if queue else labels
    service = {"selector": selector, "ports": [{"name": PORT_NAME, "port": serving.port, "targetPort": PORT_NAME}]}
    budget = {"maxUnavailable": disruption_budget(serving.replicas), "selector": {"matchLabels": selector}}
    budget["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    monitor_labels = labels | dict(fleet.alerts.rule_labels)
    return [
        k8s_object("apps/v1", "Deployment", name, deployment_labels, namespace=ns, spec=spec),
        k8s_object("v1", "Service", name, labels, namespace=ns, spec=service),
        k8s_object(MONITORING_API, "ServiceMonitor", name, monitor_labels, namespace=ns, spec=_monitor(ns, serving, selector)),
        k8s_object("policy/v1", "PodDisruptionBudget", name, labels, namespace=ns, spec=budget),
    ]


def _spread(key: str, when: str, selector: dict[str, str]) -> dict[str, Any]:
    # pod-template-hash: count only this revision's pods, so a rolling update is not held back by the old ones
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": selector},
        "matchLabelKeys": ["pod-template-hash"],
    }


def _strategy(target: Target, serving: Serving) -> dict[str, Any]:
    """Surge one pod when the team's quota there holds one more; else replace one at a time (a surge pod the quota refuses
    would stall the rollout for good)."""
    quota = target.team.quota_on(target.cluster.name)
    gpus, pods = quota.requests.gpu, quota.pods
    room = (gpus is None or (serving.replicas + 1) * target.pod.gpus <= gpus) and (pods is None or serving.replicas + 1 <= pods)
    surge = {"maxSurge": 1, "maxUnavailable": 0} if room else {"maxSurge": 0, "maxUnavailable": 1}
    return {"type": "RollingUpdate", "rollingUpdate": surge}


def _monitor(namespace: str, serving: Serving, selector: dict[str, str]) -> dict[str, Any]:
    wanted = dict(serving.selector)
    if wanted.pop("namespace", namespace) != namespace:
        raise InputError(
            f"the endpoint's metrics.selector names namespace {serving.selector['namespace']}, but its server runs in {namespace}"
        )
    endpoint: dict[str, Any] = {"port": PORT_NAME, "path": serving.metrics_path}
    if wanted:  # after the operator's own target labels, so these win (service included)
        endpoint["relabelings"] = [{"action": "replace", "targetLabel": k, "replacement": v} for k, v in sorted(wanted.items())]
    return {"selector": {"matchLabels": selector}, "endpoints": [endpoint]}

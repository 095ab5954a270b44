"""Golden paths: the objects a data scientist submits, built from the fleet so that the cluster admits them.

`job_objects` turns an ask (team, cluster, GPUs, image ...) into a Kueue-queued Job, an indexed Job
for several nodes, a Volcano gang Job on a Volcano cluster, or an inference Deployment. Names come
from the render (namespace, LocalQueue, Volcano queue, tolerations, cost labels), so a job always
matches the rendered tree. An ask the cluster would refuse is refused here first (RefusedAsk, exit 1):
GPUs above the team's quota, a GPU model the team cannot get there, a priority class it may not use.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from fleetgen.checks.admission import PodSize
from fleetgen.errors import InputError, Severity
from fleetgen.model import Cluster, Fleet, Team
from fleetgen.render import kueue as kueue_objects
from fleetgen.render.job_target import Ask, Target, resolve
from fleetgen.render.kueue_config import kueue_admits_deployments
from fleetgen.render.layout import cluster_labels
from fleetgen.render.manifest import MANAGED_BY, k8s_object, team_labels
from fleetgen.validation.rendered_objects import Schemas, _problems

GPU = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # Kueue manages a Job that carries it, in the LocalQueue it names
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"  # a WorkloadPriorityClass for the Job's workload
SLO_TIER_LABEL = "fleetgen/slo-tier"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"  # set by the Job controller on its pods
MAX_NAME = 50  # pod names and hostnames add "-worker-12" or a hash; they must stay DNS labels (63)
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

# The seed's probes for model serving; the startup probe's failureThreshold comes from the load time.
LIVENESS: dict[str, Any] = {"path": "/health", "initialDelaySeconds": 120, "periodSeconds": 30, "failureThreshold": 3}
READINESS: dict[str, Any] = {"path": "/ready", "initialDelaySeconds": 60, "periodSeconds": 10, "failureThreshold": 2}
STARTUP_PERIOD = 10  # seconds between startup probes
STARTUP: dict[str, Any] = {"path": "/health", "initialDelaySeconds": 30, "periodSeconds": STARTUP_PERIOD}


@dataclass(frozen=True)
class Serving:
    """An inference endpoint: its SLO tier, how long its model takes to load, its port and replicas."""

    tier: str
    load_time: int  # seconds
    port: int = 8080
    replicas: int = 1


@dataclass(frozen=True)
class Built:
    objects: list[dict[str, Any]]
    summary: str


def startup_failure_threshold(load_time: int) -> int:
    """Startup probe failures allowed: ceil(load time / periodSeconds), so the probe waits out the model's load."""
    return max(1, math.ceil(load_time / STARTUP_PERIOD))


def job_objects(fleet: Fleet, ask: Ask, schemas: Schemas, serving: Serving | None = None) -> Built:
    """The objects of the ask, checked against the cluster's schemas; raises RefusedAsk or InputError."""
    _check_names(ask)
    pods = serving.replicas if serving else ask.nodes
    target = resolve(fleet, ask, pods, gang=serving is None and ask.nodes > 1, queued=serving is None)
    pod = _pod_spec(fleet, ask, target, pods, serving)
    if serving:
        objects = [_deployment(fleet, ask, target, pod, serving)]
    elif target.volcano:
        objects = [_volcano_job(fleet, ask, target, pod)]
    else:
        objects = _kueue_job(fleet, ask, target, pod)
    kubernetes = fleet.version_sets[target.cluster.version_set].kubernetes
    for body in objects:
        lookup = schemas.lookup(body["apiVersion"], body["kind"], kubernetes)
        problems = [text for text, severity in _problems(lookup, body, True) if severity is Severity.ERROR]
        if problems:
            raise InputError(f"the {body['kind']} built for this ask is not valid: {'; '.join(problems)}")
    if serving:
        queued = QUEUE_LABEL in objects[0]["metadata"]["labels"]
        where = f"LocalQueue {target.queue} (Kueue admits each pod)" if queued else "scheduled directly, not queued by Kueue"
    else:
        where = f"Volcano queue {target.queue}" if target.volcano else f"LocalQueue {target.queue}"
    priority = f", priority {target.priority.name}" if target.priority else ""
    what = f"{ask.gpus} {target.gpu_model} GPU(s)" if target.gpu_model else "CPU only"
    summary = f"{objects[0]['kind']} {target.team.namespace}/{ask.name} on {target.cluster.name}: {pods} pod(s) x {what}, {where}{priority}"
    return Built(objects, summary)


def _check_names(ask: Ask) -> None:
    if len(ask.name) > MAX_NAME or not _NAME.fullmatch(ask.name):
        raise InputError(f"--name {ask.name!r}: a lowercase DNS label of at most {MAX_NAME} characters (a-z, 0-9, '-')")
    if not ask.image or any(ch.isspace() or not ch.isprintable() for ch in ask.image):
        raise InputError(f"--image {ask.image!r}: an image reference without spaces, e.g. registry.example.com/trainer:v1")


def cost_labels(fleet: Fleet, team: Team, cluster: Cluster) -> dict[str, str]:
    """The team's cost labels and the cluster's environment, without fleetgen's managed-by (drift would call the job extra)."""
    labels = {k: v for k, v in team_labels(fleet, team).items() if k not in MANAGED_BY}
    return dict(sorted({**labels, **cluster_labels(cluster)}.items()))


def _resources(pod: PodSize) -> dict[str, Any]:
    """The pod's requests, and limits equal to them (a GPU cannot be shared, CPU and memory are not overcommitted)."""
    amount: dict[str, Any] = {"cpu": _cpu_text(pod.cpu), "memory": _memory_text(pod.memory)}
    if pod.gpus:
        amount[GPU] = pod.gpus
    return {"requests": dict(amount), "limits": dict(amount)}


def _cpu_text(value: Fraction) -> int | str:
    millis = math.floor(value * 1000)
    return millis // 1000 if millis % 1000 == 0 else f"{millis}m"


def _memory_text(value: Fraction) -> str:
    mebibytes = math.floor(value / 1024**2)
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"


def _placement(target: Target) -> dict[str, Any]:
    """nodeSelector: the labels every chosen pool shares (else an affinity naming each pool); tolerations of their taints."""
    common = dict(target.pools[0].labels)
    for pool in target.pools[1:]:
        common = {k: v for k, v in common.items() if pool.labels.get(k) == v}
    out: dict[str, Any] = {}
    if common:
        out["nodeSelector"] = dict(sorted(common.items()))
    else:
        terms = [
            {"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(pool.labels.items())]}
            for pool in target.pools
        ]
        out["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    tolerations: list[dict[str, str]] = []
    for pool in target.pools:
        for taint in pool.taints:
            toleration = kueue_objects._toleration(taint.key, taint.value, taint.effect)
            if toleration not in tolerations:
                tolerations.append(toleration)
    if tolerations:
        out["tolerations"] = tolerations
    return out


def _pod_spec(fleet: Fleet, ask: Ask, target: Target, pods: int, serving: Serving | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "server" if serving else "trainer", "image": ask.image}
    if ask.command:
        container["command"] = list(ask.command)
    if serving is None and ask.nodes > 1:
        env = [{"name": "WORLD_SIZE", "value": str(ask.nodes)}]
        if not target.volcano:  # indexed Job: pod 0 answers at <name>-0.<name> through the headless Service
            env.append({"name": "MASTER_ADDR", "value": f"{ask.name}-0.{ask.name}"})
        container["env"] = env
    container["resources"] = _resources(target.pod)
    if serving:
        container["ports"] = [{"name": "http", "containerPort": serving.port}]
        container |= _probes(serving)
    spec: dict[str, Any] = {}
    if serving is None:
        spec["restartPolicy"] = "OnFailure" if target.volcano else "Never"
    if target.priority:
        spec["priorityClassName"] = target.priority.name
    spec |= _placement(target)
    spec["containers"] = [container]
    return spec


def _probes(serving: Serving) -> dict[str, Any]:
    def probe(settings: dict[str, Any], **extra: int) -> dict[str, Any]:
        fields = {k: v for k, v in settings.items() if k != "path"}
        return {"httpGet": {"path": settings["path"], "port": serving.port}, **fields, **extra}

    return {
        "livenessProbe": probe(LIVENESS),
        "readinessProbe": probe(READINESS),
        "startupProbe": probe(STARTUP, failureThreshold=startup_failure_threshold(serving.load_time)),
    }


def _job_labels(fleet: Fleet, target: Target) -> dict[str, str]:
    labels = cost_labels(fleet, target.team, target.cluster) | {QUEUE_LABEL: target.queue}
    if target.priority and fleet.scheduling.workload_priority_classes:
        labels[WORKLOAD_PRIORITY_LABEL] = target.priority.name
    return labels


def _kueue_job(fleet: Fleet, ask: Ask, target: Target, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """A suspended Job in the team's LocalQueue; for several nodes an indexed Job (Kueue admits all its pods at once)
    and the headless Service that gives each pod a stable name."""
    labels = cost_labels(fleet, target.team, target.cluster)
    ns = target.team.namespace
    spec: dict[str, Any] = {"suspend": True}
    if ask.nodes > 1:
        spec |= {"completionMode": "Indexed", "completions": ask.nodes, "parallelism": ask.nodes}
        pod = {"subdomain": ask.name, **pod}
    spec["template"] = {"metadata": {"labels": labels}, "spec": pod}
    objects = [k8s_object("batch/v1", "Job", ask.name, _job_labels(fleet, target), namespace=ns, spec=spec)]
    if ask.nodes > 1:
        service = {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {JOB_NAME_LABEL: ask.name}}
        objects.append(k8s_object("v1", "Service", ask.name, labels, namespace=ns, spec=service))
    return objects


def _volcano_job(fleet: Fleet, ask: Ask, target: Target, pod: dict[str, Any]) -> dict[str, Any]:
    """The seed's gang Job: Volcano starts all `nodes` workers together or none (minAvailable), in the team's Volcano queue."""
    labels = cost_labels(fleet, target.team, target.cluster)
    spec: dict[str, Any] = {"minAvailable": ask.nodes, "schedulerName": "volcano", "queue": target.queue}
    if target.priority:
        spec["priorityClassName"] = target.priority.name
    spec["plugins"] = {"env": [], "svc": ["--publish-not-ready-addresses"]}
    spec["tasks"] = [{"name": "worker", "replicas": ask.nodes, "template": {"metadata": {"labels": labels}, "spec": pod}}]
    return k8s_object("batch.volcano.sh/v1alpha1", "Job", ask.name, labels, namespace=target.team.namespace, spec=spec)


def _deployment(fleet: Fleet, ask: Ask, target: Target, pod: dict[str, Any], serving: Serving) -> dict[str, Any]:
    selector = {"app.kubernetes.io/name": ask.name}
    labels = cost_labels(fleet, target.team, target.cluster) | selector | {SLO_TIER_LABEL: serving.tier}
    spec = {
        "replicas": serving.replicas,
        "selector": {"matchLabels": selector},
        "template": {"metadata": {"labels": dict(sorted(labels.items()))}, "spec": pod},
    }
    # Where Kueue manages Deployments (and holds back pods that name no queue), the team's LocalQueue admits each pod.
    if kueue_admits_deployments(fleet, fleet.clusters.index(target.cluster)):
        labels = labels | {QUEUE_LABEL: target.queue}
    return k8s_object("apps/v1", "Deployment", ask.name, labels, namespace=target.team.namespace, spec=spec)

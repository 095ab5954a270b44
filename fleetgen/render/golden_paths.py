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

from fleetgen.errors import InputError, RefusedAsk, Severity
from fleetgen.model import Cluster, Fleet, NodePool, PriorityClass, Team
from fleetgen.render import kueue as kueue_objects
from fleetgen.render import slice_asks
from fleetgen.render.kueue_config import kueue_admits_deployments
from fleetgen.render.layout import cluster_labels
from fleetgen.render.manifest import MANAGED_BY, k8s_object, team_labels
from fleetgen.render.volcano import queue_name as volcano_queue_name
from fleetgen.validation.rendered_objects import Schemas, _problems
from fleetgen.workflows import cluster_index

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
class Ask:
    """What the scientist asks for; `gpus` is per pod (per node for a multi-node job)."""

    team: str
    cluster: str
    name: str
    image: str
    gpus: int
    nodes: int = 1
    gpu_model: str | None = None
    priority: str | None = None
    command: tuple[str, ...] = ()
    gpu_slice: str | None = None  # MIG slices or shared GPUs instead of whole GPUs (render/slice_asks.py); `gpus` counts them


@dataclass(frozen=True)
class Serving:
    """An inference endpoint: its SLO tier, how long its model takes to load, its port and replicas."""

    tier: str
    load_time: int  # seconds
    port: int = 8080
    replicas: int = 1


@dataclass(frozen=True)
class Target:
    """Where the ask lands: the team, the cluster, the pools it may use and the queue that admits it."""

    team: Team
    cluster: Cluster
    pools: tuple[NodePool, ...]  # of the asked GPU model, each with room for the pod's GPUs
    gpu_model: str
    queue: str  # the LocalQueue (Kueue) or the Volcano queue
    volcano: bool
    priority: PriorityClass | None
    resource: str = GPU  # what each pod requests `gpus` of: nvidia.com/gpu or a slice


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
    target = resolve(fleet, ask, pods, gang=serving is None and ask.nodes > 1)
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
    units = f"{target.gpu_model} GPU(s)" if target.resource == GPU else f"{target.resource} ({target.gpu_model})"
    summary = f"{objects[0]['kind']} {target.team.namespace}/{ask.name} on {target.cluster.name}: {pods} pod(s) x {ask.gpus} {units}, "
    summary += f"{where}{priority}"
    return Built(objects, summary)


def resolve(fleet: Fleet, ask: Ask, pods: int, *, gang: bool) -> Target:
    """Team, cluster, pools, queue and priority class of the ask; each refusal says what is allowed."""
    teams = {t.name: (i, t) for i, t in enumerate(fleet.teams)}
    if ask.team not in teams:
        raise InputError(f"--team {ask.team}: no such team (known: {', '.join(teams) or 'none'})")
    index, team = teams[ask.team]
    cluster = fleet.clusters[cluster_index(fleet, ask.cluster, f"--cluster {ask.cluster}")]
    if cluster.name not in team.clusters:
        raise RefusedAsk(f"team {team.name} is not on {cluster.name}; it is on {', '.join(team.clusters)}")
    volcano = cluster.volcano if gang else None  # a gang on a Volcano cluster goes to Volcano, everything else to Kueue
    if volcano is not None:
        names = volcano.node_pools
        scheduler, queue = f"Volcano on {cluster.name}", volcano_queue_name(team.name)
    else:
        cluster_queue = fleet.teams[index].queue_on(cluster)
        names = next(q.flavors for q in cluster.queues if q.name == cluster_queue)
        scheduler, queue = f"team {team.name}'s queue {cluster_queue} on {cluster.name}", fleet.object_names(team).local_queue
    resource = slice_asks.resource_of(ask.gpu_slice)
    reachable = [p for p in cluster.node_pools if slice_asks.units_per_node(p, resource) and (names is None or p.name in names)]
    if resource != GPU:
        model, pools = slice_asks.slice_pools(cluster, reachable, resource, ask.gpus, scheduler)
        slice_asks.check_slice_quota(team, cluster, resource, pods, ask.gpus)
        return Target(team, cluster, pools, model, queue, volcano is not None, _priority(fleet, team, ask.priority), resource)
    model, pools = _gpu_pools(cluster, reachable, ask, scheduler)
    quota = team.quota_on(cluster.name).requests.gpu
    if quota is not None and pods * ask.gpus > quota:
        raise RefusedAsk(
            f"team {team.name}'s GPU quota on {cluster.name} is {quota}; this asks for {pods * ask.gpus} ({pods} x {ask.gpus}): "
            f"ask for at most {quota}"
        )
    return Target(team, cluster, pools, model, queue, volcano is not None, _priority(fleet, team, ask.priority))


def _gpu_pools(cluster: Cluster, reachable: list[NodePool], ask: Ask, scheduler: str) -> tuple[str, tuple[NodePool, ...]]:
    models = list(dict.fromkeys(p.gpu_model for p in reachable))
    if not models:
        raise RefusedAsk(f"{scheduler} hands out no GPUs")
    model = models[0] if ask.gpu_model is None else next((m for m in models if m.lower() == ask.gpu_model.lower()), None)
    if model is None:
        everywhere = list(dict.fromkeys(p.gpu_model for p in cluster.node_pools if p.gpus_per_node))
        if all(m.lower() != str(ask.gpu_model).lower() for m in everywhere):
            raise RefusedAsk(f"{cluster.name} has no {ask.gpu_model} GPUs; it has {', '.join(everywhere)}")
        raise RefusedAsk(f"{scheduler} hands out no {ask.gpu_model} GPUs; it hands out {', '.join(models)}")
    of_model = [p for p in reachable if p.gpu_model == model]
    fitting = tuple(p for p in of_model if p.gpus_per_node >= ask.gpus)
    if not fitting:
        most = max(p.gpus_per_node for p in of_model)
        raise RefusedAsk(
            f"{model} nodes on {cluster.name} have at most {most} GPU(s) each; "
            f"ask for at most {most} per node (--gpus) on more nodes (--nodes)"
        )
    return model, fitting


def _priority(fleet: Fleet, team: Team, asked: str | None) -> PriorityClass | None:
    """The asked class, or the team's lowest allowed one; None when the fleet has no priority classes."""
    allowed = sorted(
        (pc for pc in fleet.priority_classes if pc.name in fleet.access(team).priority_classes),
        key=lambda pc: (pc.value, pc.name),
    )
    if asked is None:
        if fleet.priority_classes and not allowed:  # the pod would get the global default, which the team's quota bars
            raise RefusedAsk(f"team {team.name} may use none of the fleet's priority classes; list some in its priorityClasses")
        return allowed[0] if allowed else None
    for pc in allowed:
        if pc.name == asked:
            return pc
    listed = ", ".join(f"{pc.name} ({pc.value})" for pc in allowed) or "none"
    raise RefusedAsk(f"team {team.name} may not use priority class {asked}; allowed: {listed}")


def _check_names(ask: Ask) -> None:
    if len(ask.name) > MAX_NAME or not _NAME.fullmatch(ask.name):
        raise InputError(f"--name {ask.name!r}: a lowercase DNS label of at most {MAX_NAME} characters (a-z, 0-9, '-')")
    if not ask.image or any(ch.isspace() or not ch.isprintable() for ch in ask.image):
        raise InputError(f"--image {ask.image!r}: an image reference without spaces, e.g. registry.example.com/trainer:v1")


def cost_labels(fleet: Fleet, team: Team, cluster: Cluster) -> dict[str, str]:
    """The team's cost labels and the cluster's environment, without fleetgen's managed-by (drift would call the job extra)."""
    labels = {k: v for k, v in team_labels(fleet, team).items() if k not in MANAGED_BY}
    return dict(sorted({**labels, **cluster_labels(cluster)}.items()))


def _resources(target: Target, gpus: int, pods: int) -> dict[str, Any]:
    """GPUs as asked; CPU and memory the pods' share of the smallest node, at most what the team's quota leaves each pod."""
    quota = target.team.quota_on(target.cluster.name)
    amounts: dict[str, Fraction] = {}
    for resource in ("cpu", "memory"):
        caps = [_per_node(pool, resource) * gpus * slice_asks.node_share(pool, target.resource) for pool in target.pools]
        caps += [q.value / pods for q in (getattr(quota.requests, resource), getattr(quota.limits, resource)) if q is not None]
        amounts[resource] = min(caps)
    amount = {"cpu": _cpu_text(amounts["cpu"]), "memory": _memory_text(amounts["memory"]), target.resource: gpus}
    return {"requests": dict(amount), "limits": dict(amount)}


def _per_node(pool: NodePool, resource: str) -> Fraction:
    return pool.cpu_per_node.value if resource == "cpu" else pool.memory_per_node.value


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
    container["resources"] = _resources(target, ask.gpus, pods)
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

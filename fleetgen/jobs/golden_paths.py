"""Golden paths: the objects a data scientist submits, built from the fleet so that the cluster admits them.

`job_objects` turns an ask (team, cluster, GPUs, image ...) into a Kueue-queued Job, an indexed Job
for several nodes, a Volcano gang Job on a Volcano cluster, or an inference Deployment with its
Service, ServiceMonitor and PodDisruptionBudget (serving.py). Names come from the render (namespace,
LocalQueue, Volcano queue, tolerations, cost labels), so a job always matches the rendered tree; the
pod is the one job_pod.py builds (restricted, /dev/shm, sized after the system reserve). An ask the
cluster would refuse is refused here first (RefusedAsk, exit 1, job_target.py), and every object is
checked like a rendered one: the schema of the cluster's Kubernetes version or the CRD, its CEL rules
and the API server's own rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from fleetgen.errors import InputError, RefusedAsk, Severity
from fleetgen.jobs.job_dispatch import resolve_anywhere
from fleetgen.jobs.job_pod import cost_labels, memory_text, pod_spec, shm_size, topology_request
from fleetgen.jobs.job_target import Ask, Target
from fleetgen.jobs.serving import Serving, server_container, serving_objects, serving_warnings
from fleetgen.model import Fleet
from fleetgen.model.registries import image_allowed
from fleetgen.model.sharing import GPU, TRAINING
from fleetgen.model.storage import Volume
from fleetgen.render.kueue_config import kueue_admits_deployments
from fleetgen.render.manifest import k8s_object
from fleetgen.validation.rendered_objects import Schemas, object_problems

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # Kueue manages a Job that carries it, in the LocalQueue it names
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"  # a WorkloadPriorityClass for the Job's workload
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"  # set by the Job controller on its pods
MAX_NAME = 50  # pod names and hostnames add "-worker-12" or a hash; they must stay DNS labels (63)
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@dataclass(frozen=True)
class Built:
    objects: list[dict[str, Any]]
    summary: str
    warnings: list[str] = field(default_factory=list)  # the ask is admitted, but something about it deserves a second look


def job_objects(fleet: Fleet, ask: Ask, schemas: Schemas, serving: Serving | None = None, shm: Fraction | None = None) -> Built:
    """The objects of the ask, checked against the cluster's schemas; raises RefusedAsk or InputError.

    `shm`: the size of the pod's /dev/shm in bytes; a quarter of its memory when None."""
    _check_names(ask)
    pods = serving.replicas if serving else ask.nodes
    purpose = serving.tier if serving else TRAINING
    target = resolve_anywhere(fleet, ask, pods, gang=serving is None and ask.nodes > 1, queued=serving is None, purpose=purpose)
    _check_registry(fleet, ask, target)
    claims = _claims(ask, target, pods)
    if shm is not None and shm > target.pod.memory:
        memory = memory_text(target.pod.memory)
        raise InputError(f"--shm {memory_text(shm)}: at most the pod's memory ({memory}), which /dev/shm counts against")
    warnings: list[str] = []
    if serving:
        queue = target.queue if kueue_admits_deployments(fleet, fleet.clusters.index(target.cluster)) else None
        pod = pod_spec(target, server_container(ask.name, ask.image, ask.command, serving), shm_size(target.pod, shm), claims=claims)
        labels = cost_labels(fleet, target.team, target.cluster)
        objects = serving_objects(fleet, ask.name, target, pod, serving, labels, queue)
        warnings += serving_warnings(serving)
    elif target.volcano:
        objects = [_volcano_job(fleet, ask, target, _trainer_pod(ask, target, shm, "OnFailure", claims))]
    else:
        objects = _kueue_job(fleet, ask, target, _trainer_pod(ask, target, shm, "Never", claims))
    _check_objects(fleet, target, objects, schemas)
    if serving:
        where = f"LocalQueue {target.queue} (Kueue admits each pod)" if queue else "scheduled directly, not queued by Kueue"
    else:
        where = f"Volcano queue {target.queue}" if target.volcano else f"LocalQueue {target.queue}"
    priority = f", priority {target.priority.name}" if target.priority else ""
    if target.pod.resource != GPU:
        what = f"{ask.gpus} {target.pod.resource} ({target.gpu_model})"
    else:
        what = f"{ask.gpus} {target.gpu_model} GPU(s)" if target.gpu_model else "CPU only"
    also = ", ".join(f"{o['kind']} {o['metadata']['name']}" for o in objects[1:])
    summary = f"{objects[0]['kind']} {target.team.namespace}/{ask.name} on {target.cluster.name}: {pods} pod(s) x {what}, {where}{priority}"
    if target.workers:
        summary += f", dispatched to a worker that admits it ({', '.join(target.workers)})"
    return Built(objects, summary + (f"; with {also}" if also else ""), warnings)


def _check_objects(fleet: Fleet, target: Target, objects: list[dict[str, Any]], schemas: Schemas) -> None:
    """Each object against what the cluster checks: its schema (or CRD), CEL rules and the API server's own rules."""
    kubernetes = fleet.version_sets[target.cluster.version_set].kubernetes
    for body in objects:
        lookup = schemas.lookup(body["apiVersion"], body["kind"], kubernetes)
        problems = [text for text, severity in object_problems(lookup, body, True) if severity is Severity.ERROR]
        if problems:
            raise InputError(f"the {body['kind']} built for this ask is not valid: {'; '.join(problems)}")


def _check_names(ask: Ask) -> None:
    # Every name the ask gives is echoed by some refusal: one with a newline or a control character would break
    # the error's one line (a team or cluster named so is no name fleet.yaml can hold, so nothing is lost).
    named = [("--team", ask.team), ("--cluster", ask.cluster), ("--gpu-model", ask.gpu_model), ("--gpu-slice", ask.gpu_slice)]
    for flag, value in [*named, *(("--volume", v) for v in ask.volumes), ("--priority", ask.priority)]:
        if value is not None and not value.isprintable():
            raise InputError(f"{flag} {value!r}: not a name (it holds a line break or a control character)")
    if len(ask.name) > MAX_NAME or not _NAME.fullmatch(ask.name):
        raise InputError(f"--name {ask.name!r}: a lowercase DNS label of at most {MAX_NAME} characters (a-z, 0-9, '-')")
    if not ask.image or any(ch.isspace() or not ch.isprintable() for ch in ask.image):
        raise InputError(f"--image {ask.image!r}: an image reference without spaces, e.g. registry.example.com/trainer:v1")


def _check_registry(fleet: Fleet, ask: Ask, target: Target) -> None:
    """The image comes from the team's registries, as the cluster's admission policy (render/registries.py) will insist."""
    registries = fleet.registries_of(target.team)
    if registries and not image_allowed(ask.image, registries):
        raise RefusedAsk(
            f"--image {ask.image}: not from the registries of team {target.team.name} ({', '.join(registries)}); "
            "name the registry in full, e.g. " + f"{registries[0]}/trainer:v1"
        )


def _claims(ask: Ask, target: Target, pods: int) -> tuple[Volume, ...]:
    """The team's volumes the ask mounts; a volume one node mounts at a time is refused to a job of several pods."""
    volumes = {v.name: v for v in target.team.volumes_on(target.cluster.name)}
    out: list[Volume] = []
    for name in dict.fromkeys(ask.volumes):
        if name not in volumes:
            has = ", ".join(volumes) or "none"
            raise RefusedAsk(f"--volume {name}: team {target.team.name} has no such volume on {target.cluster.name} (it has: {has})")
        volume = volumes[name]
        if pods > 1 and volume.access_mode in ("ReadWriteOnce", "ReadWriteOncePod"):
            raise RefusedAsk(
                f"--volume {name}: {volume.access_mode}, so one node mounts it at a time, and this runs {pods} pods that may land on "
                "different nodes; give the team a ReadWriteMany volume for shared checkpoints"
            )
        out.append(volume)
    return tuple(out)


def _trainer_pod(ask: Ask, target: Target, shm: Fraction | None, restart_policy: str, claims: tuple[Volume, ...]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "trainer", "image": ask.image}
    if ask.command:
        container["command"] = list(ask.command)
    if ask.nodes > 1:
        env = [{"name": "WORLD_SIZE", "value": str(ask.nodes)}]
        if not target.volcano:  # indexed Job: pod 0 answers at <name>-0.<name> through the headless Service
            env.append({"name": "MASTER_ADDR", "value": f"{ask.name}-0.{ask.name}"})
        container["env"] = env
    return pod_spec(target, container, shm_size(target.pod, shm), restart_policy=restart_policy, claims=claims)


def _job_labels(fleet: Fleet, target: Target) -> dict[str, str]:
    labels = cost_labels(fleet, target.team, target.cluster) | {QUEUE_LABEL: target.queue}
    if target.priority and fleet.scheduling.workload_priority_classes:
        labels[WORKLOAD_PRIORITY_LABEL] = target.priority.name
    return labels


def _kueue_job(fleet: Fleet, ask: Ask, target: Target, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """A suspended Job in the team's LocalQueue; for several nodes an indexed Job (Kueue admits all its pods at once)
    and the headless Service that gives each pod a stable name. On pools with a Topology its pods ask to be close."""
    labels = cost_labels(fleet, target.team, target.cluster)
    ns = target.team.namespace
    spec: dict[str, Any] = {"suspend": True}
    if ask.nodes > 1:
        spec |= {"completionMode": "Indexed", "completions": ask.nodes, "parallelism": ask.nodes}
        pod = {"subdomain": ask.name, **pod}
    metadata: dict[str, Any] = {"labels": labels}
    topology = topology_request(target, ask.nodes)
    if topology:
        metadata["annotations"] = topology
    spec["template"] = {"metadata": metadata, "spec": pod}
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

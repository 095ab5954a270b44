"""Where an ask of `job new` lands, or why it never would: team, cluster, queue, node pools, pod size, priority.

A refusal (RefusedAsk, exit 1) names the limit and what would be allowed. In order: the team is on the
cluster; its namespace quota there holds every pod (GPUs, CPU, memory, pod count); its scheduler (the
team's Kueue ClusterQueue, Volcano for gangs on a Volcano cluster) hands out pools of the asked kind
(a GPU model, or CPU-only pools for --gpus 0); a node fits one pod after the system reserve; the pools
hold all the pods; and for Kueue, one flavor of the queue may admit the whole job (its nominal quota
plus what it may borrow), since Kueue gives all pods of a job one flavor.

A slice ask (--gpu-slice: MIG slices or shared GPUs, jobs/slice_asks.py) is held to the team's slice
quota, to what one node of the pools that yield the slice offers, and gets the slice's share of a
node's room; it is not yet put through the queue's per-flavor room as whole GPUs are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from fleetgen.checks.admission import PodSize, node_limit, pods_per_node, queue_room, room, share, show
from fleetgen.errors import InputError, RefusedAsk
from fleetgen.jobs import slice_asks
from fleetgen.model import Cluster, Fleet, NodePool, PriorityClass, Quantity, Team
from fleetgen.model.fleet import cluster_index
from fleetgen.model.sharing import GPU, RESOURCES, TRAINING
from fleetgen.render.volcano import queue_name as volcano_queue_name

MiB = 1024**2


@dataclass(frozen=True)
class Ask:
    """What the scientist asks for; `gpus`, `cpu` and `memory` are per pod (per node for a multi-node job)."""

    team: str
    cluster: str
    name: str
    image: str
    gpus: int
    nodes: int = 1
    gpu_model: str | None = None
    priority: str | None = None
    command: tuple[str, ...] = ()
    cpu: Quantity | None = None  # None: the pod's GPU share of a node's room
    memory: Quantity | None = None
    gpu_slice: str | None = None  # MIG slices or shared GPUs instead of whole GPUs (jobs/slice_asks.py); `gpus` counts them
    volumes: tuple[str, ...] = ()  # the team's volumes on the cluster to mount (fleet.yaml teams[].clusters.<c>.volumes)


@dataclass(frozen=True)
class Target:
    """Where the ask lands: the team, the cluster, the pools it may use and the queue that admits it."""

    team: Team
    cluster: Cluster
    pools: tuple[NodePool, ...]  # of the asked GPU model (or CPU-only), each able to hold the job
    gpu_model: str | None  # None: CPU-only pools
    queue: str  # the LocalQueue (Kueue) or the Volcano queue
    volcano: bool
    priority: PriorityClass | None
    pod: PodSize
    workers: tuple[str, ...] = ()  # a MultiKueue manager's Job: the workers that could run it (jobs/job_dispatch.py)


@dataclass(frozen=True)
class _Scheduler:
    words: str  # "team nlp's queue gpu-cluster-queue on training-eastus"
    queue: str  # the LocalQueue or Volcano queue the workload names
    flavors: tuple[str, ...] | None  # the node pools it hands out; None: all
    cluster_queue: int | None  # index of the Kueue ClusterQueue that must admit the whole job in one flavor


def resolve(fleet: Fleet, ask: Ask, pods: int, *, gang: bool, queued: bool = True, purpose: str = TRAINING) -> Target:
    """Team, cluster, pools, queue and priority class of the ask; each refusal says what is allowed.

    `queued` is False for a Deployment, which the scheduler places without a Kueue queue's admission; `purpose` is
    training or the SLO tier an inference Deployment serves, whose default priority class it gets."""
    teams = {t.name: t for t in fleet.teams}
    if ask.team not in teams:
        raise InputError(f"--team {ask.team}: no such team (known: {', '.join(teams) or 'none'})")
    team = teams[ask.team]
    cluster = fleet.clusters[cluster_index(fleet, ask.cluster, f"--cluster {ask.cluster}")]
    if cluster.name not in team.clusters:
        raise RefusedAsk(f"team {team.name} is not on {cluster.name}; it is on {', '.join(team.clusters)}")
    if ask.gpus == 0 and ask.gpu_model is not None:
        raise InputError("--gpu-model: only with --gpus 1 or more")
    scheduler = _scheduler(fleet, team, cluster, gang, queued)
    _check_counts(team, cluster, ask, pods)
    reachable = [p for p in cluster.node_pools if scheduler.flavors is None or p.name in scheduler.flavors]
    resource = slice_asks.resource_of(ask.gpu_slice)
    if resource != GPU:
        yielding = [p for p in reachable if slice_asks.units_per_node(p, resource)]
        sliced_model, sliced = slice_asks.slice_pools(cluster, yielding, resource, ask.gpus, scheduler.words)
        slice_asks.check_slice_quota(team, cluster, resource, pods, ask.gpus)
        pod = _pod_size(team, cluster, list(sliced), ask, pods, resource)
        volcano = scheduler.cluster_queue is None and gang
        return Target(team, cluster, sliced, sliced_model, scheduler.queue, volcano, _priority(fleet, team, ask.priority, purpose), pod)
    refusals: list[RefusedAsk] = []
    for model, pools in _candidates(cluster, reachable, ask, scheduler):
        try:
            chosen, pod = _fit(team, cluster, pools, ask, pods, scheduler, model)
        except RefusedAsk as refused:
            refusals.append(refused)
            continue
        volcano = scheduler.cluster_queue is None and gang
        return Target(team, cluster, chosen, model, scheduler.queue, volcano, _priority(fleet, team, ask.priority, purpose), pod)
    raise refusals[0]


def _scheduler(fleet: Fleet, team: Team, cluster: Cluster, gang: bool, queued: bool) -> _Scheduler:
    volcano = cluster.volcano if gang else None  # a gang on a Volcano cluster goes to Volcano, everything else to Kueue
    if volcano is not None:
        return _Scheduler(f"Volcano on {cluster.name}", volcano_queue_name(team.name), volcano.node_pools, None)
    name = team.queue_on(cluster)
    index = next(q for q, queue in enumerate(cluster.queues) if queue.name == name)
    words = f"team {team.name}'s queue {name} on {cluster.name}"
    return _Scheduler(words, fleet.object_names(team).local_queue, cluster.queues[index].flavors, index if queued else None)


def _check_counts(team: Team, cluster: Cluster, ask: Ask, pods: int) -> None:
    """The namespace quota holds every pod: GPUs, the pod count, and CPU and memory asked for explicitly."""
    quota = team.quota_on(cluster.name)
    gpus = quota.requests.gpu
    if gpus is not None and ask.gpu_slice is None and pods * ask.gpus > gpus:  # slices: check_slice_quota
        raise RefusedAsk(
            f"team {team.name}'s GPU quota on {cluster.name} is {gpus}; this asks for {pods * ask.gpus} ({pods} x {ask.gpus}): "
            f"ask for at most {gpus}"
        )
    if quota.pods is not None and pods > quota.pods:
        raise RefusedAsk(f"team {team.name}'s pod quota on {cluster.name} is {quota.pods}; this asks for {pods} pods")
    for resource, asked in (("cpu", ask.cpu), ("memory", ask.memory)):
        caps = [q for q in (getattr(quota.requests, resource), getattr(quota.limits, resource)) if q is not None]
        if asked is not None and caps and pods * asked.value > min(c.value for c in caps):
            cap = min(caps, key=lambda c: c.value)
            raise RefusedAsk(
                f"team {team.name}'s {resource} quota on {cluster.name} is {cap}; this asks for {pods} x {asked}: "
                f"ask for at most {show(resource, cap.value / pods)} per pod (--{resource})"
            )


def _candidates(cluster: Cluster, reachable: list[NodePool], ask: Ask, scheduler: _Scheduler) -> list[tuple[str | None, list[NodePool]]]:
    """The pools to try, by GPU model in the scheduler's order (the asked model only), or the CPU-only pools."""
    if ask.gpus == 0:
        cpu_only = [p for p in reachable if not p.gpus_per_node]
        if not cpu_only:
            raise RefusedAsk(f"{scheduler.words} hands out no CPU-only node pool; ask for GPUs (--gpus) or use another cluster")
        return [(None, cpu_only)]
    with_gpus = [p for p in reachable if slice_asks.units_per_node(p, GPU)]  # a mixed-strategy MIG pool has no whole GPUs
    models = list(dict.fromkeys(p.gpu_model or "" for p in with_gpus))
    if not models:
        raise RefusedAsk(f"{scheduler.words} hands out no GPUs")
    if ask.gpu_model is not None:
        model = next((m for m in models if m.lower() == ask.gpu_model.lower()), None)
        if model is None:
            everywhere = list(dict.fromkeys(p.gpu_model or "" for p in cluster.node_pools if p.gpus_per_node))
            if all(m.lower() != ask.gpu_model.lower() for m in everywhere):
                raise RefusedAsk(f"{cluster.name} has no {ask.gpu_model} GPUs; it has {', '.join(everywhere)}")
            raise RefusedAsk(f"{scheduler.words} hands out no {ask.gpu_model} GPUs; it hands out {', '.join(models)}")
        models = [model]
    return [(m, [p for p in with_gpus if p.gpu_model == m]) for m in models]


def _fit(
    team: Team, cluster: Cluster, pools: list[NodePool], ask: Ask, pods: int, scheduler: _Scheduler, model: str | None
) -> tuple[tuple[NodePool, ...], PodSize]:
    """The pools that hold the whole job, and the pod's size; RefusedAsk naming the limit when none does."""
    kind = model or "CPU-only"
    wide = [p for p in pools if p.gpus_per_node >= ask.gpus]
    if not wide:
        most = max(p.gpus_per_node for p in pools)
        raise RefusedAsk(
            f"{model} nodes on {cluster.name} have at most {most} GPU(s) each; "
            f"ask for at most {most} per node (--gpus) on more nodes (--nodes)"
        )
    pod = _pod_size(team, cluster, wide, ask, pods, GPU)
    fits = [p for p in wide if pods_per_node(p, pod)]
    if not fits:
        larger = [f"{p.name}: {node_limit(p, pod)}" for p in wide]
        raise RefusedAsk(
            f"a pod of {_pod_words(pod)} is larger than any {kind} node of {scheduler.words} holds ({'; '.join(larger)}); "
            "ask for less CPU (--cpu) or memory (--memory)"
        )
    flag = "--nodes" if scheduler.cluster_queue is not None or ask.nodes > 1 else "--replicas"
    holds = {p.name: p.max_nodes * pods_per_node(p, pod) for p in fits}
    if scheduler.cluster_queue is None:  # Volcano and Deployments spread pods over every pool of the model
        if sum(holds.values()) < pods:
            each = "; ".join(_room_words(p, pod, holds[p.name]) for p in fits)
            raise RefusedAsk(
                f"{scheduler.words} has no room for {pods} pod(s) of {_pod_words(pod)} on its {kind} nodes ({each}): "
                f"ask for at most {sum(holds.values())} ({flag})"
            )
        return tuple(fits), pod
    problems = []
    chosen = []
    for pool in fits:
        if holds[pool.name] < pods:
            problems.append(_room_words(pool, pod, holds[pool.name]))
            continue
        admitted = _queue_problem(cluster, scheduler.cluster_queue, pool, pod, pods)
        if admitted:
            problems.append(admitted)
            continue
        chosen.append(pool)
    if not chosen:
        most = max(min(holds[p.name], _queue_pods(cluster, scheduler.cluster_queue, p, pod)) for p in fits)
        hint = f"ask for at most {most} ({flag})" if most else "it runs none of them"
        raise RefusedAsk(f"{scheduler.words} cannot run {pods} pod(s) of {_pod_words(pod)} in one flavor ({'; '.join(problems)}): {hint}")
    return tuple(chosen), pod


def _pod_size(team: Team, cluster: Cluster, pools: list[NodePool], ask: Ask, pods: int, resource: str) -> PodSize:
    """CPU and memory as asked, else the pod's share of the smallest node's room, at most what the quota leaves each pod.

    A unit of `resource` takes its share of a node (slice_asks.node_share): a GPU's, a time-sliced replica's, a MIG slice's."""
    quota = team.quota_on(cluster.name)
    amounts: dict[str, Fraction] = {}
    for kind, asked in (("cpu", ask.cpu), ("memory", ask.memory)):
        if asked is not None:
            amounts[kind] = asked.value
            continue
        caps = [room(p, kind) * ask.gpus * slice_asks.node_share(p, resource) if ask.gpus else share(p, kind, 0) for p in pools]
        caps += [q.value / pods for q in (getattr(quota.requests, kind), getattr(quota.limits, kind)) if q is not None]
        amounts[kind] = min(caps)
    cpu = Fraction(math.floor(amounts["cpu"] * 1000), 1000)  # millicores and mebibytes, rounded down: never above the share
    memory = Fraction(math.floor(amounts["memory"] / MiB) * MiB)
    return PodSize(ask.gpus, cpu, memory, resource)


def _queue_pods(cluster: Cluster, queue: int, pool: NodePool, pod: PodSize) -> int:
    """How many such pods the queue may admit in `pool`'s flavor at once."""
    counts = []
    for resource in RESOURCES:
        need = pod.amount(resource)
        if need:
            own, borrow = queue_room(cluster, queue, pool, resource)
            counts.append(int((own + borrow) // need))
    return min(counts) if counts else 0


def _queue_problem(cluster: Cluster, queue: int, pool: NodePool, pod: PodSize, pods: int) -> str | None:
    for resource in (GPU, "cpu", "memory"):
        need = pod.amount(resource) * pods
        own, borrow = queue_room(cluster, queue, pool, resource)
        if need > own + borrow:
            what = {GPU: "GPUs", "cpu": "CPU", "memory": "memory"}[resource]
            name = cluster.queues[queue].cohort
            cohort = f", may borrow {show(resource, borrow)} from cohort {name}" if name else ""
            return (
                f"it may admit at most {show(resource, own + borrow)} {what} of {pool.name} (owns {show(resource, own)}{cohort}), "
                f"this needs {show(resource, need)}"
            )
    return None


def _room_words(pool: NodePool, pod: PodSize, hold: int) -> str:
    per_node = pods_per_node(pool, pod)
    limit = f", each node holds {per_node} ({node_limit(pool, pod)})" if per_node * max(pod.gpus, 1) < max(pool.gpus_per_node, 1) else ""
    return f"{pool.name} has {pool.max_nodes} node(s) x {pool.gpus_per_node} GPUs{limit}: room for {hold} such pod(s)"


def _pod_words(pod: PodSize) -> str:
    gpus = f"{pod.gpus} GPU(s), " if pod.gpus else ""
    return f"{gpus}{show('cpu', pod.cpu)} CPU, {show('memory', pod.memory)}"


def _priority(fleet: Fleet, team: Team, asked: str | None, purpose: str) -> PriorityClass | None:
    """The asked class, else the purpose's default (`scheduling.defaultPriorityClasses`) or the nearest class below it the
    team may use; without a default, training gets the team's lowest class (preemptible) and inference its highest (serving
    should not wait behind training). None when the fleet has no priority classes."""
    allowed = sorted(
        (pc for pc in fleet.priority_classes if pc.name in fleet.access(team).priority_classes),
        key=lambda pc: (pc.value, pc.name),
    )
    if asked is None:
        if fleet.priority_classes and not allowed:  # the pod would get the global default, which the team's quota bars
            raise RefusedAsk(f"team {team.name} may use none of the fleet's priority classes; list some in its priorityClasses")
        if not allowed:
            return None
        default = next((pc for pc in fleet.priority_classes if pc.name == fleet.scheduling.default_priority_classes.get(purpose)), None)
        if default is None:
            return allowed[0] if purpose == TRAINING else allowed[-1]
        below = [pc for pc in allowed if pc.value <= default.value]
        return below[-1] if below else allowed[0]
    for pc in allowed:
        if pc.name == asked:
            return pc
    listed = ", ".join(f"{pc.name} ({pc.value})" for pc in allowed) or "none"
    raise RefusedAsk(f"team {team.name} may not use priority class {asked}; allowed: {listed}")

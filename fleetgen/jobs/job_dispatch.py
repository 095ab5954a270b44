"""`job new` on a MultiKueue manager: the Job goes into the team's LocalQueue there, and one of the queue's
workers runs it. The ask is held to each worker as if it were asked there (the team's quota, the worker's queue
and pools of the manager queue's GPU model); it is refused only when no worker could admit it, naming each
worker's reason. The pod is the same on every worker: CPU and memory default to the smallest share among the
workers that admit it, and the workers that still admit a pod of that size are the ones it may run on.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from fleetgen.checks.admission import PodSize
from fleetgen.errors import InputError, RefusedAsk
from fleetgen.jobs.job_target import Ask, Target, resolve
from fleetgen.model import Fleet, Quantity
from fleetgen.model.multikueue import dispatching_queues, queue_workers
from fleetgen.model.sharing import GPU, TRAINING


def resolve_anywhere(fleet: Fleet, ask: Ask, pods: int, *, gang: bool, queued: bool = True, purpose: str = TRAINING) -> Target:
    """Where the ask lands: on its cluster, or, on a MultiKueue manager queue, on the workers that could admit it."""
    mk = fleet.multi_kueue
    teams = {t.name: t for t in fleet.teams}
    team = teams.get(ask.team)
    manager = next((c for c in fleet.clusters if mk is not None and c.name == mk.manager), None)
    if mk is None or manager is None or team is None or ask.cluster != manager.name or manager.name not in team.clusters:
        return resolve(fleet, ask, pods, gang=gang, queued=queued, purpose=purpose)
    queue_name = team.queue_on(manager)
    if queue_name not in dispatching_queues(mk, manager.name):
        return resolve(fleet, ask, pods, gang=gang, queued=queued, purpose=purpose)
    queue = next(q for q in mk.queues if q.name == queue_name)
    if not queued:
        raise RefusedAsk(f"{queue.name} on {manager.name} dispatches Jobs; serve a Deployment on a cluster of its own (--cluster)")
    if ask.gpu_slice is not None or ask.gpus == 0:
        raise RefusedAsk(f"{queue.name} on {manager.name} dispatches whole {queue.gpu_model} GPUs; ask for --gpus 1 or more")
    if ask.gpu_model is not None and ask.gpu_model.lower() != queue.gpu_model.lower():
        raise RefusedAsk(f"team {team.name}'s queue {queue.name} on {manager.name} dispatches {queue.gpu_model} GPUs, not {ask.gpu_model}")
    workers = queue_workers(mk, fleet.clusters)[queue.name]
    on_worker = replace(ask, gpu_model=queue.gpu_model)
    # An indexed Job, never a Volcano gang: MultiKueue dispatches the Job as the manager holds it.
    first = _each_worker(fleet, on_worker, workers, pods, purpose)
    admitted = [t for t in first.values() if isinstance(t, Target)]
    if not admitted:
        reasons = "; ".join(f"{name}: {reason}" for name, reason in first.items())
        raise RefusedAsk(f"no worker of {queue.name} could admit it ({reasons})")
    pod = PodSize(ask.gpus, min(t.pod.cpu for t in admitted), min(t.pod.memory for t in admitted), GPU)
    sized = replace(on_worker, cpu=ask.cpu or _exactly(pod.cpu), memory=ask.memory or _exactly(pod.memory))
    runs = [t for t in _each_worker(fleet, sized, [t.cluster.name for t in admitted], pods, purpose).values() if isinstance(t, Target)]
    base = runs[0]  # the smallest share fits where the larger did, so at least the worker that set it stays
    pools = tuple(p for t in runs for p in t.pools)
    return Target(team, manager, pools, queue.gpu_model, base.queue, False, base.priority, pod, tuple(t.cluster.name for t in runs))


def _each_worker(fleet: Fleet, ask: Ask, workers: list[str] | tuple[str, ...], pods: int, purpose: str) -> dict[str, Target | str]:
    out: dict[str, Target | str] = {}
    for name in workers:
        try:
            out[name] = resolve(fleet, replace(ask, cluster=name), pods, gang=False, queued=True, purpose=purpose)
        except (RefusedAsk, InputError) as refused:
            out[name] = str(refused)
    return out


def _exactly(amount: Fraction) -> Quantity:
    """A computed amount as a Quantity (job_target rounds CPU to millicores and memory to mebibytes)."""
    return Quantity(str(amount.numerator) if amount.denominator == 1 else f"{int(amount * 1000)}m")

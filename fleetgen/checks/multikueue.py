"""MultiKueue refusals, each at its fleet.yaml field: what Kueue would refuse, ignore or run wrongly.

The manager as its own worker (Kueue does not support it), unknown workers and workers without pools of
the queue's GPU model, more than the 20 workers a MultiKueueConfig holds, a Path kubeconfig outside the
folder Kueue 0.19 reads, a Kueue pin older than what a queue uses, and a team whose LocalQueue on a
worker could not admit what the manager dispatches there. Facts and sources: fleetgen/compat/multikueue.yaml.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import Cluster, Fleet, Version
from fleetgen.model.multikueue import KUBECONFIG_DIR, MAX_WORKERS, MultiKueue, queue_workers, worker_queue_for

HERE: FieldPath = ("multiKueue",)
QUOTA_AUTOMATION = Version("0.18")  # MultiKueueConfig.spec.quotaManagement and its feature gate
CONFIG_ORDER = Version("0.19")  # the Incremental dispatcher follows spec.clusters' order (before: alphabetical)


def _kueue_release(fleet: Fleet, cluster: Cluster) -> tuple[int, int]:
    version = fleet.platform_of(cluster).kueue.version
    return Version.parse(version.lstrip("v").split("-")[0].split("+")[0]).minor


def check_manager_and_workers(fleet: Fleet) -> Iterator[Finding]:
    mk = fleet.multi_kueue
    if mk is None:
        return
    clusters = {c.name: c for c in fleet.clusters}
    manager = clusters.get(mk.manager)
    if manager is None:
        # fix: Name a cluster fleet.yaml declares as the manager
        yield Finding(HERE + ("manager",), f"unknown cluster {mk.manager!r} (known: {', '.join(sorted(clusters))})")
        return
    own = {q.name for q in manager.queues}
    workers = queue_workers(mk, fleet.clusters)
    for q, queue in enumerate(mk.queues):
        at = HERE + ("queues", q)
        if queue.name in own:
            # fix: Rename the manager queue or the cluster's own queue
            yield Finding(at + ("name",), f"{mk.manager} has a queue {queue.name!r} of its own; a manager queue needs a name of its own")
        chosen = workers[queue.name]
        if queue.workers is not None:
            for k, name in enumerate(queue.workers):
                yield from _worker_problems(at + ("workers", k), name, queue.gpu_model, mk, clusters)
        elif not chosen:
            # fix: Add workers with node pools of that model, or widen the queue's select
            yield Finding(at + ("select",), f"no cluster but the manager has node pools of GPU model {queue.gpu_model} and matches")
        if len(chosen) > MAX_WORKERS:
            listed = at + (("workers",) if queue.workers is not None else ("select",))
            # fix: Split the queue into queues of 20 workers or fewer
            yield Finding(listed, f"{len(chosen)} workers; a MultiKueueConfig holds at most {MAX_WORKERS}: split the queue")
        if queue.quota_management == "Automated" and _kueue_release(fleet, manager) < QUOTA_AUTOMATION.minor:
            # fix: Raise the manager's platform.kueue.version, or drop quotaManagement: Automated
            yield Finding(
                at + ("quotaManagement",),
                f"quotaManagement Automated needs Kueue {QUOTA_AUTOMATION} or later on {mk.manager} "
                f"(platform.kueue.version is {fleet.platform_of(manager).kueue.version})",
            )
    if mk.dispatcher == "Incremental" and _kueue_release(fleet, manager) < CONFIG_ORDER.minor:
        # fix: Raise the manager's platform.kueue.version, or use AllAtOnce
        yield Finding(
            HERE + ("dispatcher",),
            f"Kueue before {CONFIG_ORDER} dispatches Incremental in the workers' alphabetical order, not the order listed "
            f"(platform.kueue.version on {mk.manager} is {fleet.platform_of(manager).kueue.version})",
        )
    every = {w for names in workers.values() for w in names}
    for name, worker in mk.workers.items():
        if name not in every:
            # fix: Add the worker to a queue, or remove its entry under workers
            yield Finding(
                HERE + ("workers", name), f"{name!r} is not a worker of any queue (workers: {', '.join(sorted(every)) or 'none'})"
            )
        path = worker.kubeconfig.path
        if path is not None and not _under_kubeconfig_dir(path):
            # fix: Give a kubeconfig Secret instead (kubeconfig.secret), or a path under that folder
            yield Finding(
                HERE + ("workers", name, "kubeconfig", "path"),
                f"{path!r} is outside {KUBECONFIG_DIR}: Kueue 0.19 reads Path kubeconfigs only there (and a Secret is the way "
                "for anything but development)",
            )


def _under_kubeconfig_dir(path: str) -> bool:
    normal = posixpath.normpath(path)
    return path.startswith(KUBECONFIG_DIR) and normal.startswith(KUBECONFIG_DIR) and normal != KUBECONFIG_DIR.rstrip("/")


def _worker_problems(at: FieldPath, name: str, gpu_model: str, mk: MultiKueue, clusters: dict[str, Cluster]) -> Iterator[Finding]:
    if name == mk.manager:
        # fix: Drop the manager from the queue's workers
        yield Finding(at, f"{name} is the manager; Kueue does not run a manager as a worker of itself")
    elif name not in clusters:
        # fix: Name a cluster fleet.yaml declares
        yield Finding(at, f"unknown cluster {name!r} (known: {', '.join(sorted(clusters))})")
    elif not any(p.gpu_model == gpu_model for p in clusters[name].node_pools):
        models = sorted({p.gpu_model for p in clusters[name].node_pools if p.gpu_model})
        # fix: Drop the worker from the queue, or add a node pool of that model to it
        yield Finding(at, f"{name} has no node pool of GPU model {gpu_model} (its models: {', '.join(models) or 'none'})")
    elif worker_queue_for(clusters[name], gpu_model) is None:
        queues = ", ".join(q.name for q in clusters[name].queues) or "none"
        # fix: Give the worker a queue with that model's pools among its flavors (clusters[].queues), or drop the worker
        yield Finding(
            at,
            f"{name} has no queue with pools of GPU model {gpu_model} (its queues: {queues}): nothing dispatched there could be admitted",
        )


def check_teams_on_workers(fleet: Fleet) -> Iterator[Finding]:
    """A team's LocalQueue on each worker feeds a queue with pools of the manager queue's GPU model, and its quota there
    lets a dispatched job start (fleetgen renders the namespace and LocalQueue; a team's own values there can break it)."""
    mk = fleet.multi_kueue
    clusters = {c.name: c for c in fleet.clusters}
    if mk is None or mk.manager not in clusters:
        return
    manager = clusters[mk.manager]
    workers = queue_workers(mk, fleet.clusters)
    models = {q.name: q.gpu_model for q in mk.queues}
    for t, team in enumerate(fleet.teams):
        if mk.manager not in team.clusters or team.queue_on(manager) not in models:
            continue
        queue = team.queue_on(manager)
        yield from _placed_without_listing(fleet, t, mk.manager, queue)
        for name in workers[queue]:
            worker = clusters.get(name)
            if worker is None or name == mk.manager or worker_queue_for(worker, models[queue]) is None:
                continue  # reported at the queue's workers
            at: FieldPath = ("teams", t, "clusters", name)
            feeds = next((q for q in worker.queues if q.name == team.queue_on(worker)), None)
            pools = {p.name: p for p in worker.node_pools}
            if feeds is not None and not any(pools[f].gpu_model == models[queue] for f in (feeds.flavors or tuple(pools)) if f in pools):
                # fix: Name the worker's queue that has the model (teams[].clusters.WORKER.queue)
                yield Finding(
                    at + ("queue",),
                    f"team {team.name}'s LocalQueue on {name} feeds {feeds.name}, which has no pool of GPU model {models[queue]}: "
                    f"what {queue} dispatches there would never be admitted (queue {worker_queue_for(worker, models[queue])} has them)",
                )
            if team.quota_on(name).requests.gpu == 0:
                # fix: Give the team a GPU quota on the worker, or drop the worker from the queue
                yield Finding(
                    at,
                    f"team {team.name} has no GPU quota on {name}, a worker of {queue}: the jobs dispatched there could never start",
                )


def _placed_without_listing(fleet: Fleet, t: int, manager: str, queue: str) -> Iterator[Finding]:
    """Workers a team lands on that it never listed get its quota and its cost: one note says where, at its manager entry."""
    team = fleet.teams[t]
    placed = fleet.placed_on_workers(team.name)
    if not placed:
        return
    quota = ", ".join(f"{team.quota_on(w).requests.gpu} GPUs" + (f" on {w}" if len(placed) > 1 else "") for w in placed)
    yield Finding(
        ("teams", t, "clusters", manager),
        f"team {team.name}'s jobs in {queue} are dispatched to {', '.join(placed)}, which it does not list: fleetgen places it "
        f"there at its default quota ({quota}), counted in its cost; list a worker under its clusters to set its own values",
        Severity.NOTE,
    )


MULTIKUEUE_CHECKS = (check_manager_and_workers, check_teams_on_workers)

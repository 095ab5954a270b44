"""Fleet-wide queues in the capacity report: what each MultiKueue manager queue can hand out across its workers, and
what each team on it can get there (on each worker, the smaller of the team's GPU quota and the worker's GPUs of the
queue's model, summed over the workers)."""

from typing import Any, NamedTuple

from fleetgen.compat.partitioning import pool_yield
from fleetgen.model import Fleet
from fleetgen.model.multikueue import queue_workers
from fleetgen.model.sharing import GPU


class FleetQueue(NamedTuple):
    manager: str
    queue: str
    gpu_model: str
    workers: tuple[tuple[str, int], ...]  # in dispatch order, each with its GPUs of the model
    teams: tuple[tuple[str, int], ...]  # each team on the queue and the GPUs it can get across the workers

    @property
    def gpus(self) -> int:
        return sum(g for _, g in self.workers)


def fleet_queues(fleet: Fleet) -> tuple[FleetQueue, ...]:
    mk = fleet.multi_kueue
    clusters = {c.name: c for c in fleet.clusters}
    if mk is None or mk.manager not in clusters:
        return ()
    out = []
    workers = queue_workers(mk, fleet.clusters)
    for queue in mk.queues:
        held = [
            (w, sum(pool_yield(p).get(GPU, 0) for p in clusters[w].node_pools if p.gpu_model == queue.gpu_model))
            for w in workers[queue.name]
            if w in clusters
        ]
        teams = []
        for team in fleet.queue_teams(clusters[mk.manager], queue.name):
            reach = sum(min(g, q) if (q := team.quota_on(w).requests.gpu) is not None else g for w, g in held)
            teams.append((team.name, reach))
        out.append(FleetQueue(mk.manager, queue.name, queue.gpu_model, tuple(held), tuple(teams)))
    return tuple(out)


FLEET_QUEUES_HEAD = ["Queue", "GPU model", "Workers", "GPUs", "Teams (GPUs each can get)"]


def fleet_queues_rows(queues: tuple[FleetQueue, ...]) -> list[list[str]]:
    return [
        [q.queue, q.gpu_model, ", ".join(f"{w} {g}" for w, g in q.workers), str(q.gpus), ", ".join(f"{t} {g}" for t, g in q.teams) or "—"]
        for q in queues
    ]


def fleet_queues_markdown(queues: tuple[FleetQueue, ...]) -> list[str]:
    if not queues:
        return []
    lines = ["", "## Fleet-wide queues (MultiKueue)", ""]
    lines += [f"Teams submit on {queues[0].manager}; each queue sends a job to a worker that admits it, in this order.", ""]
    lines += ["| " + " | ".join(FLEET_QUEUES_HEAD) + " |", "|---|---|---|---:|---|"]
    return lines + ["| " + " | ".join(row) + " |" for row in fleet_queues_rows(queues)]


def fleet_queues_json(queues: tuple[FleetQueue, ...]) -> list[dict[str, Any]]:
    return [
        {
            "manager": q.manager,
            "queue": q.queue,
            "gpuModel": q.gpu_model,
            "gpus": q.gpus,
            "workers": [{"cluster": w, "gpus": g} for w, g in q.workers],
            "teams": [{"team": t, "gpus": g} for t, g in q.teams],
        }
        for q in queues
    ]

"""MultiKueue in a diff: a worker added to or removed from a manager queue changes what every team on that queue can
get across the fleet, so each such team gets a capacity change the gate judges like a raised GPU quota
(`gpuQuotaAtLeast` gates the fleet-wide total). The team's namespace arriving on or leaving the worker is a
placement change of its own (changes.py), which the removal rule gates."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from fleetgen.model import Fleet
from fleetgen.model.multikueue import queue_workers
from fleetgen.review.changes import Change


def _gpus(fleet: Fleet, workers: tuple[str, ...], gpu_model: str) -> int:
    clusters = {c.name: c for c in fleet.clusters}
    return sum(p.gpus_per_node * p.max_nodes for w in workers if w in clusters for p in clusters[w].node_pools if p.gpu_model == gpu_model)


def _queues(fleet: Fleet) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Manager queue -> (GPU model, workers); none without MultiKueue."""
    mk = fleet.multi_kueue
    if mk is None:
        return {}
    workers = queue_workers(mk, fleet.clusters)
    return {q.name: (q.gpu_model, workers[q.name]) for q in mk.queues}


def multikueue_changes(base: Fleet, head: Fleet) -> Iterator[Change]:
    old, new = _queues(base), _queues(head)
    manager = head.multi_kueue.manager if head.multi_kueue else None
    for name in sorted(old.keys() | new.keys()):
        model, before = old.get(name, (new.get(name, ("", ()))[0], ()))
        model, after = new.get(name, (model, ()))
        added, removed = [w for w in after if w not in before], [w for w in before if w not in after]
        if not added and not removed:
            continue
        was, now = _gpus(base, before, model), _gpus(head, after, model)
        moved = ", ".join([f"worker {w} added" for w in added] + [f"worker {w} removed" for w in removed])
        on = [
            t
            for t in head.teams
            if manager and manager in t.clusters and t.queue_on(next(c for c in head.clusters if c.name == manager)) == name
        ]
        for team in on:
            yield Change(
                "quota",
                f"team {team.name}: {model} GPUs across the fleet through {name} {was} -> {now} ({moved})",
                team=team.name,
                cluster=manager,
                field="multiKueue",
                old=str(was),
                new=str(now),
                production=any(c.name == w and c.environment == "production" for w in (*added, *removed) for c in head.clusters),
                gpus=Fraction(now) if now > was else None,
            )

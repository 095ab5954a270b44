"""`fleetgen migrate`: rewrite fleet.yaml in place for every deprecation it uses (checks/deprecations.py),
keeping its comments and layout, so the next fleetgen release accepts it.

The rewrite is computed from the fleet as it loads and handed back with what it changed, one line per place
(`fleet.yaml:42:9: clusters[0].nodePools[2].gpuModel: dropped (...)`); the caller validates it before writing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap

from fleetgen.checks.deprecations import DEPRECATIONS
from fleetgen.checks.load import LoadedFleet
from fleetgen.errors import FieldPath, format_path
from fleetgen.model import Fleet
from fleetgen.source.edit import RoundTrip, flow_map


@dataclass(frozen=True)
class Migration:
    text: str  # the rewritten fleet.yaml (the same text when nothing is deprecated)
    changes: tuple[str, ...]  # one line per place rewritten


def migrate(loaded: LoadedFleet) -> Migration:
    document = RoundTrip(loaded.source.text)
    changes: list[str] = []
    for deprecation in DEPRECATIONS:
        for at, what in deprecation.places(loaded.fleet):
            location = loaded.source.locate(at)
            done = REWRITES[deprecation.name](document.data, at, loaded.fleet)
            changes.append(f"{location}: {format_path(at)}: {done} ({what}; refused from fleetgen {deprecation.refused_in})")
    if not changes:
        return Migration(loaded.source.text, ())
    return Migration(document.text(), tuple(changes))


def _parent(data: Any, at: FieldPath) -> Any:
    node = data
    for step in at[:-1]:
        node = node[step]
    return node


def _drop(data: Any, at: FieldPath, fleet: Fleet) -> str:
    del _parent(data, at)[at[-1]]
    return "dropped"


def _name_first_queue(data: Any, at: FieldPath, fleet: Fleet) -> str:
    """`training-eastus:` becomes `training-eastus: {queue: gpu-cluster-queue}`: the queue it joined so far."""
    cluster = next(c for c in fleet.clusters if c.name == at[-1])
    queue = cluster.queues[0].name
    parent = _parent(data, at)
    placement = parent[at[-1]]
    if isinstance(placement, CommentedMap):
        placement.insert(0, "queue", queue)
    else:
        parent[at[-1]] = flow_map({"queue": queue})
    return f"queue: {queue}"


# How migrate rewrites each deprecation of checks/deprecations.py, by name: (document, place, fleet) -> what it did.
REWRITES: dict[str, Callable[[Any, FieldPath, Fleet], str]] = {
    "cpu-pool-gpu-model": _drop,
    "unnamed-queue-choice": _name_first_queue,
}

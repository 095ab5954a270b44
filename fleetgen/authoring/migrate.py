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
from fleetgen.source.edit import RoundTrip, delete_defined, flow_map


@dataclass(frozen=True)
class Migration:
    text: str  # the rewritten fleet.yaml (the same text when nothing is deprecated)
    changes: tuple[str, ...]  # one line per place rewritten


def migrate(loaded: LoadedFleet) -> Migration:
    """The rewrite of every deprecated place. A node written once and used in several places (an anchor and its aliases,
    a merge key's source) is rewritten once, where it is written; a place whose rewrite the shared node cannot hold
    (another queue than its other uses name) gets a node of its own."""
    document = RoundTrip(loaded.source.text)
    changes: list[str] = []
    for deprecation in DEPRECATIONS:
        for at, what in deprecation.places(loaded.fleet):
            location = loaded.source.locate(at)
            done = REWRITES[deprecation.name](document.data, at, loaded.fleet)
            if done is not None:
                changes.append(f"{location}: {format_path(at)}: {done} ({what}; refused from fleetgen {deprecation.refused_in})")
    if not changes:
        return Migration(loaded.source.text, ())
    return Migration(document.text(), tuple(changes))


def _parent(data: Any, at: FieldPath) -> Any:
    node = data
    for step in at[:-1]:
        node = node[step]
    return node


def _drop(data: Any, at: FieldPath, fleet: Fleet) -> str | None:
    parent = _parent(data, at)
    if at[-1] not in parent:
        return None  # dropped already, where the node is written: this place uses it by an alias or a merge key
    delete_defined(parent, str(at[-1]))
    return "dropped"


def _name_first_queue(data: Any, at: FieldPath, fleet: Fleet) -> str | None:
    """`training-eastus:` becomes `training-eastus: {queue: gpu-cluster-queue}`: the queue it joined so far."""
    cluster = next(c for c in fleet.clusters if c.name == at[-1])
    queue = cluster.queues[0].name
    parent = _parent(data, at)
    placement = parent[at[-1]]
    if not isinstance(placement, CommentedMap):
        parent[at[-1]] = flow_map({"queue": queue})
    elif "queue" not in placement:
        placement.insert(0, "queue", queue)  # a node shared by an alias gets it once, for every use
    elif placement["queue"] == queue:
        return None  # named already, in the node this place shares with another
    else:  # the shared node names another cluster's first queue: this place gets a node of its own
        own = CommentedMap([("queue", queue), *((k, v) for k, v in placement.items() if k != "queue")])
        if placement.fa.flow_style():
            own.fa.set_flow_style()
        parent[at[-1]] = own
    return f"queue: {queue}"


# How migrate rewrites each deprecation of checks/deprecations.py, by name: (document, place, fleet) -> what it did, or
# None when an earlier rewrite of the node this place shares did it already.
REWRITES: dict[str, Callable[[Any, FieldPath, Fleet], str | None]] = {
    "cpu-pool-gpu-model": _drop,
    "unnamed-queue-choice": _name_first_queue,
}

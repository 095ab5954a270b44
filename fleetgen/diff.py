"""Semantic diff of two renders: per cluster, the objects added, removed and changed, field by field.

Objects are keyed by (kind, namespace, name). Lists whose items all carry a `name` are matched by
name, not position; quantities are compared by value (1Gi == 1024Mi), with deepdiff doing the
walking.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from deepdiff import DeepDiff
from deepdiff.operator import BaseOperator

from fleetgen.approvals import Approval, required_approvals
from fleetgen.changes import Change, fleet_changes
from fleetgen.model import Fleet, Quantity
from fleetgen.render import cluster_objects
from fleetgen.render.gitops import entry_point

ObjectKey = tuple[str, str, str]
ABSENT = "(absent)"


@dataclass(frozen=True)
class FieldChange:
    path: str
    old: Any
    new: Any


@dataclass(frozen=True)
class ObjectChange:
    kind: str
    namespace: str
    name: str
    state: str  # added, removed, changed
    fields: tuple[FieldChange, ...] = ()

    @property
    def title(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass(frozen=True)
class ClusterDiff:
    cluster: str
    environment: str
    state: str  # added, removed, changed
    objects: tuple[ObjectChange, ...]


@dataclass
class FleetDiff:
    base: str
    head: str
    changes: list[Change]
    approvals: list[Approval]
    clusters: list[ClusterDiff]
    warnings: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.clusters and not self.changes


class _SameQuantity(BaseOperator):  # type: ignore[misc]
    """Quota values and nominal quotas that differ only in how they are written are equal."""

    def __init__(self) -> None:
        super().__init__(regex_paths=[r"\['hard'\]\['[^']+'\]$", r"\['nominalQuota'\]$"])

    def give_up_diffing(self, level: Any, diff_instance: Any) -> bool:
        try:
            return bool(Quantity.parse(level.t1) == Quantity.parse(level.t2))
        except ValueError:
            return False


ORDER = "(order)"


def _by_name(value: Any) -> Any:
    """Lists of named items become mappings keyed by name, so they are matched by name.

    Their order stays visible under "(order)": Kueue reads a queue's flavors as a preference order.
    """
    if isinstance(value, dict):
        return {k: _by_name(v) for k, v in value.items()}
    if isinstance(value, list):
        names = [item.get("name") for item in value if isinstance(item, dict)]
        if value and len(names) == len(value) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
            return {ORDER: names, **{n: _by_name(item) for n, item in zip(names, value, strict=True)}}
        return [_by_name(v) for v in value]
    return value


def _path(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int) or any(ch in str(part) for ch in "./"):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def object_diff(old: dict[str, Any], new: dict[str, Any]) -> list[FieldChange]:
    tree = DeepDiff(_by_name(old), _by_name(new), view="tree", custom_operators=[_SameQuantity()])
    changes = []
    for report, items in tree.items():
        for item in items:
            t1 = ABSENT if "added" in report else item.t1
            t2 = ABSENT if "removed" in report else item.t2
            changes.append(FieldChange(_path(item.path(output_format="list")), t1, t2))
    return sorted(changes, key=lambda c: c.path)


def rendered_objects(fleet: Fleet, index: int) -> dict[ObjectKey, dict[str, Any]]:
    """What cluster `index` runs plus its GitOps entry point, keyed by (kind, namespace, name)."""
    return {m.key: m.body for m in cluster_objects(fleet, index) + entry_point(fleet, index)}


def diff_objects(old: dict[ObjectKey, dict[str, Any]], new: dict[ObjectKey, dict[str, Any]]) -> list[ObjectChange]:
    out = []
    for key in sorted(old.keys() | new.keys()):
        if key not in new:
            out.append(ObjectChange(*key, state="removed"))
        elif key not in old:
            out.append(ObjectChange(*key, state="added"))
        elif old[key] != new[key]:
            fields = object_diff(old[key], new[key])
            if fields:
                out.append(ObjectChange(*key, state="changed", fields=tuple(fields)))
    return out


def diff_fleets(base: Fleet, head: Fleet, base_name: str, head_name: str) -> FleetDiff:
    """Summary, approvals (by the base's rules, so a change cannot relax its own gate) and per-cluster objects."""
    changes = fleet_changes(base, head)
    approvals = required_approvals(base.approvals, changes)
    old_index = {c.name: i for i, c in enumerate(base.clusters)}
    new_index = {c.name: i for i, c in enumerate(head.clusters)}
    clusters = []
    for name in [*old_index, *(n for n in new_index if n not in old_index)]:
        old = rendered_objects(base, old_index[name]) if name in old_index else {}
        new = rendered_objects(head, new_index[name]) if name in new_index else {}
        objects = diff_objects(old, new)
        if objects:
            state = "added" if not old else "removed" if not new else "changed"
            env = (head.clusters[new_index[name]] if name in new_index else base.clusters[old_index[name]]).environment
            clusters.append(ClusterDiff(name, env, state, tuple(objects)))
    warnings = [c.warning for c in changes if c.warning]
    return FleetDiff(base_name, head_name, changes, approvals, clusters, warnings)


def show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)

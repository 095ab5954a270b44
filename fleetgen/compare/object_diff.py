"""The object diff every feature uses: two sets of objects, keyed by (kind, namespace, name), field by field.

Lists whose items all carry a `name` are matched by name, not position; quantities are compared
by value (1Gi == 1024Mi; which fields are quantities comes from the kind's schema,
validation/quantity_fields.py); where Kubernetes gives order or grouping no meaning (RBAC rules,
NetworkPolicy rules and peers, binding subjects), both sides are compared in the canonical form of
semantics.py. deepdiff does the walking. `check`, `diff`, `drift` and `import` all read their
changes from here.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from fleetgen.compare.semantics import canonical
from fleetgen.render.manifest import ObjectKey
from fleetgen.validation.quantity_fields import aligned, quantity_fields

__all__ = ["ABSENT", "FieldChange", "ObjectChange", "ObjectKey", "diff_objects", "json_value", "object_diff", "object_lines", "show"]

ABSENT = "(absent)"


@dataclass(frozen=True)
class FieldChange:
    path: str
    old: Any
    new: Any
    parts: tuple[Any, ...] = field(default=(), compare=False)  # the path's steps; a named list's items by name


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


# Array libraries deepdiff imports when they are installed, to compare their arrays and frames. fleetgen compares plain
# YAML data only, and numpy is installed beside it (forecast uses it): with numpy, importing deepdiff took 0.21 s of CPU
# and 0.4 s of wall time on a busy 2-core machine, against 0.12 s and 0.25 s without.
_ARRAY_LIBRARIES = ("numpy", "pandas", "polars")


@cache
def _deepdiff() -> Any:
    """DeepDiff, imported on the first diff (render, validate and explain, which never diff, do not pay for it), without
    the array libraries: while it imports, importing one of those not yet imported raises ImportError, which deepdiff
    takes as the library being absent. One imported already stays in use."""
    blocked = [name for name in _ARRAY_LIBRARIES if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # Python's own way to make an import of it fail
    try:
        from deepdiff import DeepDiff
    finally:
        for name in blocked:
            del sys.modules[name]
    return DeepDiff


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


def object_diff(old: dict[str, Any], new: dict[str, Any], kind: str = "") -> list[FieldChange]:
    """The fields that differ between two versions of one object of `kind` (its canonical form when it has one)."""
    deep_diff = _deepdiff()
    # quantities equal by value (the kind's schema says which fields are quantities) are written alike first
    fields = quantity_fields(str(old.get("apiVersion") or new.get("apiVersion") or ""), kind or str(old.get("kind", "")))
    before, after = _by_name(canonical(kind, old)), _by_name(canonical(kind, aligned(old, new, fields)))
    # threshold_to_diff_deeper=0: a mapping whose keys all changed (a Role whose every grant did) is
    # still reported key by key, never as one replaced value
    tree = deep_diff(before, after, view="tree", threshold_to_diff_deeper=0)
    changes = []
    for report, items in tree.items():
        for item in items:
            t1 = ABSENT if "added" in report else item.t1
            t2 = ABSENT if "removed" in report else item.t2
            parts = item.path(output_format="list")
            changes.append(FieldChange(_path(parts), t1, t2, tuple(parts)))
    return sorted(changes, key=_path_order)


def _path_order(change: FieldChange) -> tuple[tuple[int, int, str], ...]:
    """Paths in document order: a list's items by position (rules[8] before rules[10]), keys by name."""
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, str(part)) for part in change.parts)


def diff_objects(old: dict[ObjectKey, dict[str, Any]], new: dict[ObjectKey, dict[str, Any]]) -> list[ObjectChange]:
    out = []
    for key in sorted(old.keys() | new.keys()):
        if key not in new:
            out.append(ObjectChange(*key, state="removed"))
        elif key not in old:
            out.append(ObjectChange(*key, state="added"))
        elif old[key] != new[key]:
            fields = object_diff(old[key], new[key], key[0])
            if fields:
                out.append(ObjectChange(*key, state="changed", fields=tuple(fields)))
    return out


def show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def object_lines(objects: tuple[ObjectChange, ...], indent: str = "  ") -> list[str]:
    """Object changes as text lines: a sign and the object, then its changed fields."""
    sign = {"added": "+", "removed": "-", "changed": "~", "missing": "-", "missing (kind not served)": "-", "extra": "+"}
    lines = []
    for obj in objects:
        lines.append(f"{indent}{sign[obj.state]} {obj.title}" + ("" if obj.state == "changed" else f" ({obj.state})"))
        lines += [f"{indent}    {f.path}: {show(f.old)} -> {show(f.new)}" for f in obj.fields]
    return lines


def json_value(value: Any) -> Any:
    """A field value for JSON output: an absent side is null."""
    return None if value == ABSENT else value

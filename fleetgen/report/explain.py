"""`explain`: each field of one rendered object, with the fleet.yaml value it comes from.

The builders record an Origin per field as they build (render/provenance.py); here each leaf of
the object is given the origin of its longest recorded prefix and every model path is resolved
to `fleet.yaml:LINE:COL` through the loader's positions. A model path that is not written in
fleet.yaml is the model's default: it is reported as `default`, at its nearest written parent.

JSON shape, version 1 (`fleetgen explain --format json`, schemas/output/explain.schema.json):
  {"version": 1, "cluster": str, "kind": str, "namespace": str, "name": str,
   "fields": [{"path": str, "value": any, "origin": str, "note": str,
               "sources": [{"path": str, "file": str, "line": int, "column": int, "written": bool}]}]}
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fleetgen.compare.object_diff import ORDER, FieldChange, ObjectChange, show
from fleetgen.errors import FieldPath, InputError, Location, format_path
from fleetgen.render.manifest import ObjectKey
from fleetgen.render.provenance import Origin, Pointer, Provenance
from fleetgen.render.rendered import Rendered
from fleetgen.source.reader import Source


@dataclass(frozen=True)
class ValueAt:
    """One model value an explained field comes from, and where it stands in fleet.yaml."""

    path: FieldPath
    location: Location
    written: bool  # false: the model's default, placed at its nearest written parent


@dataclass(frozen=True)
class Explained:
    pointer: Pointer
    value: Any
    kind: str  # default, derived, team, override, fleet
    note: str
    sources: tuple[ValueAt, ...] = ()

    @property
    def field(self) -> str:
        return format_pointer(self.pointer)


def leaves(value: Any, pointer: Pointer = ()) -> Iterator[tuple[Pointer, Any]]:
    """Every leaf of a rendered object (an empty map or list is a leaf), in document order."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*pointer, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, (*pointer, index))
    else:
        yield pointer, value


def format_pointer(pointer: Pointer) -> str:
    """spec.hard[requests.nvidia.com/gpu], spec.rules[0].verbs[1]: as `diff` writes paths."""
    out = ""
    for part in pointer:
        if isinstance(part, int) or any(ch in part for ch in "./[]"):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def explain_object(provenance: Provenance, key: ObjectKey, body: dict[str, Any], source: Source) -> list[Explained]:
    """Each leaf of `body` with its origin resolved to fleet.yaml positions."""
    out = []
    for pointer, value in leaves(body):
        found = provenance.origin(key, pointer)
        if found is None:
            out.append(Explained(pointer, value, "unknown", "no origin recorded"))
            continue
        origin, rest = found
        sources = _sources(origin, rest, source)
        kind, note = origin.kind, origin.note
        if kind not in ("default", "derived") and not all(s.written for s in sources):
            kind, note = "default", "model default: not written in fleet.yaml"
        out.append(Explained(pointer, value, kind, note, sources))
    return out


def _sources(origin: Origin, rest: Pointer, source: Source) -> tuple[ValueAt, ...]:
    paths = ((*origin.paths[0], *rest),) if origin.mirror and origin.paths else origin.paths
    return tuple(ValueAt(p, _position(source, p), p in source.values) for p in paths)


def _position(source: Source, path: FieldPath) -> Location:
    """Where `path` is written; for a model default, the key of its nearest written parent."""
    if path in source.values:
        return source.locate(path)
    for end in range(len(path) - 1, 0, -1):
        if path[:end] in source.keys:
            return source.keys[path[:end]]
    return source.locate(path)


def find_object(keys: list[ObjectKey], ref: str, cluster: str) -> ObjectKey:
    """The object `KIND/NAME` or `KIND/NAMESPACE/NAME` names (kind in any case); InputError when none or several do."""
    parts = ref.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise InputError(f"{ref!r}: expected KIND/NAME or KIND/NAMESPACE/NAME, e.g. ResourceQuota/team-nlp/gpu-quota")
    kind, name, namespace = parts[0].lower(), parts[-1], parts[1] if len(parts) == 3 else None
    found = [k for k in keys if k.kind.lower() == kind and k.name == name and namespace in (None, k.namespace)]
    if len(found) == 1:
        return found[0]
    if found:
        raise InputError(f"{ref}: {len(found)} objects on {cluster} match; name one: " + ", ".join(_ref(k) for k in found))
    close = difflib.get_close_matches(ref, [_ref(k) for k in keys], n=1, cutoff=0.6)
    raise InputError(f"{ref}: no such object on {cluster}" + (f"; did you mean {close[0]}?" if close else ""))


def _ref(key: ObjectKey) -> str:
    return "/".join(p for p in key if p)


def select(fields: list[Explained], path: str | None) -> list[Explained]:
    """The fields at or below `--field PATH`; InputError when the object has none there."""
    if path is None:
        return fields
    chosen = [f for f in fields if f.field == path or f.field.startswith((path + ".", path + "["))]
    if not chosen:
        raise InputError(f"--field {path}: the object has no such field (fields: {', '.join(_tops(fields))})")
    return chosen


def _tops(fields: list[Explained]) -> list[str]:
    return list(dict.fromkeys(format_pointer(f.pointer[:1]) for f in fields))


def where(field: Explained) -> str:
    """`fleet.yaml:LINE:COL path` of each source, comma-separated."""
    return ", ".join(f"{s.location} {format_path(s.path)}" for s in field.sources)


def explain_text(cluster: str, key: ObjectKey, fields: list[Explained]) -> str:
    lines = [f"{key.title} on {cluster}:"]
    for f in fields:
        value = show(f.value)
        value = value if len(value) <= 60 else value[:57] + "..."
        origin = f.kind + (f" ({f.note})" if f.note else "")
        lines.append(f"  {f.field}: {value}\n      {origin}" + (f" from {where(f)}" if f.sources else ""))
    return "\n".join(lines)


def pointer_in(body: Any, parts: tuple[Any, ...]) -> Pointer:
    """A diff path's steps (a named list's items by name) as a pointer into `body`, as far as `body` has them."""
    out: list[str | int] = []
    for part in parts:
        if isinstance(body, list) and isinstance(part, str):
            names = [item.get("name") if isinstance(item, dict) else None for item in body]
            if part == ORDER or part not in names:
                break
            part = names.index(part)
        if isinstance(body, dict) and part in body or isinstance(body, list) and isinstance(part, int) and 0 <= part < len(body):
            out.append(part)
            body = body[part]
        else:
            break
    return tuple(out)


def diff_sources(rendered: Rendered, source: Source, file: str) -> Callable[[str, ObjectChange, FieldChange], str]:
    """For the PR comment: `fleet.yaml:LINE` of the head value(s) each changed field comes from."""
    indexes = {c.name: i for i, c in enumerate(rendered.fleet.clusters)}

    def lines(cluster: str, obj: ObjectChange, change: FieldChange) -> str:
        if cluster not in indexes:
            return ""
        objects, provenance = rendered.explained(indexes[cluster])
        key = ObjectKey(obj.kind, obj.namespace, obj.name)
        if key not in objects:
            return ""
        pointer = pointer_in(objects[key], change.parts)
        found = provenance.origin(key, pointer)
        below = [(o, ()) for p, o in provenance.objects.get(key, {}).items() if p[: len(pointer)] == pointer]
        values = [value for origin, rest in ([found] if found else below) for value in _sources(origin, rest, source)]
        shown = [f"{file}:{v.location.line}" + ("" if v.written else " (default)") for v in values]
        return ", ".join(dict.fromkeys(shown)) or "fleetgen default"

    return lines


def explain_json(cluster: str, key: ObjectKey, fields: list[Explained]) -> str:
    payload = {
        "version": 1,
        "cluster": cluster,
        "kind": key.kind,
        "namespace": key.namespace,
        "name": key.name,
        "fields": [
            {
                "path": f.field,
                "value": f.value,
                "origin": f.kind,
                "note": f.note,
                "sources": [
                    {
                        "path": format_path(s.path),
                        "file": s.location.file,
                        "line": s.location.line,
                        "column": s.location.column,
                        "written": s.written,
                    }
                    for s in f.sources
                ],
            }
            for f in fields
        ],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)

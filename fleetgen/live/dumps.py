"""Live dumps are untrusted input: read through the same YAML reader as fleet.yaml, then a typed boundary.

`kubectl get ... -o yaml` output (a List, or many documents) is read with fleet.yaml's YAML 1.2
reader and its limits on size, depth and alias expansion, without recording positions (a dump
of 20,000 objects has millions of values). Each object must then have the shape the comparison
relies on: a non-empty string kind, a metadata map with a string name, string-to-string labels
and annotations, and the fields each kind is read for in the shape shapes.py declares (a ResourceQuota's
`spec.hard` a map of quantities, a Node's taints a list of maps ...). A dump that fails is read again with
positions, and its first problem is reported in one line at its file:line:column and path, e.g.
`live.yaml:12:5: items[3].metadata.labels: expected a map, got a string`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fleetgen.errors import FieldPath, Finding, FindingsError, InputError
from fleetgen.live.shapes import kind_of, shape_problems
from fleetgen.source.collector import collector_paused
from fleetgen.source.reader import Source, parse_documents, read_bytes
from fleetgen.source.yaml_nodes import Limits

# A dump of 20,000 objects with managedFields is about 50 MB and 1.5 million values; CRDs nest ~40 deep.
LIVE_LIMITS = Limits(bytes=256 * 1024 * 1024, values=20_000_000, depth=128)
SUFFIXES = (".yaml", ".yml", ".json")


def read_live(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Objects from `kubectl get -o yaml` dumps: files or folders of them, Lists flattened."""
    objects: list[dict[str, Any]] = []
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()) if path.is_dir() else [path]
        for file in files:
            objects += live_objects(read_bytes(file, LIVE_LIMITS, "a live dump"), str(file))
    return objects


def live_objects(raw: bytes, file: str) -> list[dict[str, Any]]:
    """The objects of one dump; InputError (exit 2) naming the first problem at its file:line:column."""
    try:
        # The shape check walks millions of values just built: with the collector on, its passes walk them too.
        with collector_paused():
            documents = parse_documents(raw, file, LIVE_LIMITS, positions=False)
            problems = [f for doc in documents for f in object_problems(doc.data, ())]
            if not problems:
                return [obj for doc in documents for obj in _flatten(doc.data)]
        placed = _placed(parse_documents(raw, file, LIVE_LIMITS, positions=True))
    except FindingsError as exc:
        placed = exc.findings
    first = placed[0]
    more = f" (and {len(placed) - 1} more problem{'s' if len(placed) > 2 else ''})" if len(placed) > 1 else ""
    where = f"{first.location}: " if first.location else f"{file}: "
    path = f"{first.dotted_path}: " if first.path else ""
    raise InputError(f"{where}{path}{first.message}{more}")


def _placed(documents: list[Source]) -> list[Finding]:
    return [doc.place(f) for doc in documents for f in object_problems(doc.data, ())]


def _flatten(doc: Any) -> Iterator[dict[str, Any]]:
    if doc is None:
        return
    if _is_list(doc):
        for item in doc["items"]:
            yield from _flatten(item)
    else:
        yield doc


def _is_list(doc: dict[str, Any]) -> bool:
    kind = doc.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in doc


def object_problems(doc: Any, path: FieldPath) -> Iterator[Finding]:
    """What keeps `doc` (a document, or an item of a List) from being a Kubernetes object or a List of them."""
    if doc is None and not path:
        return  # an empty document
    if not isinstance(doc, dict):
        # fix: Give kubectl get -o yaml output (a List or Kubernetes objects), unedited
        yield Finding(path, f"expected a Kubernetes object (a map), got {kind_of(doc)}")
        return
    kind = doc.get("kind")
    if "kind" not in doc:
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(path + ("kind",), "required field is missing")
    elif not isinstance(kind, str) or not kind.strip():
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(path + ("kind",), f"expected a kind such as ConfigMap, got {kind_of(kind)}")
    if "apiVersion" in doc and not isinstance(doc["apiVersion"], str):
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(path + ("apiVersion",), f"expected a string, got {kind_of(doc['apiVersion'])}")
    if _is_list(doc):
        items = doc["items"]
        if not isinstance(items, list):
            # fix: Give kubectl get -o yaml output, unedited
            yield Finding(path + ("items",), f"expected a list, got {kind_of(items)}")
            return
        for index, item in enumerate(items):
            if item is None:
                # fix: Give kubectl get -o yaml output (no empty documents), unedited
                yield Finding(path + ("items", index), "expected a Kubernetes object (a map), got null")
            else:
                yield from object_problems(item, path + ("items", index))
        return
    yield from _metadata_problems(doc, path)
    yield from shape_problems(doc, kind if isinstance(kind, str) else "", path)


def _metadata_problems(doc: dict[str, Any], path: FieldPath) -> Iterator[Finding]:
    here = path + ("metadata",)
    meta = doc.get("metadata")
    if meta is None:
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(here, "required field is missing" if "metadata" not in doc else "expected a map, got null")
        return
    if not isinstance(meta, dict):
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(here, f"expected a map, got {kind_of(meta)}")
        return
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(here + ("name",), "required field is missing" if "name" not in meta else f"expected a name, got {kind_of(name)}")
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(here + ("namespace",), f"expected a string, got {kind_of(namespace)}")
    for field in ("labels", "annotations"):  # maps of strings; null counts as absent
        values = meta.get(field)
        yield from _expect_map(values, here + (field,))
        if isinstance(values, dict):
            for key, value in values.items():
                if not isinstance(value, str):
                    # fix: Give kubectl get -o yaml output, unedited
                    yield Finding(here + (field, key), f"expected a string, got {kind_of(value)}")


def _expect_map(value: Any, path: FieldPath) -> Iterator[Finding]:
    if value is not None and not isinstance(value, dict):
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(path, f"expected a map, got {kind_of(value)}")

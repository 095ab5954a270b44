"""Which fields of an object hold Kubernetes quantities, read from the schemas fleetgen ships.

The API server stores a quantity in its canonical form (`0.5` as `500m`, `1024Mi` as `1Gi`), and a
controller's webhook that decodes into `resource.Quantity` writes custom resources back the same way,
so every comparison of what fleetgen renders with what a cluster or another revision holds (drift,
diff, check, import) takes these fields at their value. Which fields they are is not a list kept by
hand: a core kind's field is one whose schema is `io.k8s.apimachinery.pkg.api.resource.Quantity`
(kubernetes-validate's schemas), a custom resource's one that is `x-kubernetes-int-or-string` with
the quantity pattern the CRD generator writes for `resource.Quantity` (schemas/crds). Each kind's
fields are computed once, on first use.

A field is a path of property names, `*` for any key of a map (`spec.hard.*`) and `[]` for any item
of a list (`spec.resourceGroups.[].flavors.[].resources.[].nominalQuota`).
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from fleetgen.model import Quantity

ANY_KEY = "*"
ITEM = "[]"
Steps = tuple[str, ...]

_QUANTITY_DEFINITION = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_QUANTITY_PATTERN = "[KMGTPE]i"  # the binary suffixes, which only the quantity pattern of the CRD generator holds
_STRICT_DIR = re.compile(r"v(\d+)\.(\d+)\.\d+-local-strict")
# What a schema file can be named for: a group of DNS labels, a version and a kind that are identifiers, short enough
# together for a file name (no shipped schema's is a third of it). Anything else (an object from a dump or a pull request
# may say anything) has no schema: no file is looked up.
_NAME_LENGTH = 200
_API_VERSION = re.compile(r"(?:[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?/)?[a-z0-9]{1,63}")
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")


class QuantityFields:
    """The quantity fields of one kind, and whether a path of an object of that kind is one."""

    def __init__(self, patterns: frozenset[Steps]):
        self.patterns = patterns
        self._lengths = frozenset(len(p) for p in patterns)

    def holds(self, path: Steps) -> bool:
        """Is the value at `path` (property names and map keys, `[]` for a list item) a quantity?"""
        if len(path) not in self._lengths:
            return False
        return any(_matches(p, path) for p in self.patterns if len(p) == len(path))


def _matches(pattern: Steps, path: Steps) -> bool:
    """`*` stands for any key of a map, never for a list's item."""
    return all(want in (got, ANY_KEY) and (want != ANY_KEY or got != ITEM) for want, got in zip(pattern, path, strict=True))


@cache
def quantity_fields(api_version: str, kind: str) -> QuantityFields:
    """The quantity fields of `kind` in `api_version`; none for a kind fleetgen ships no schema for."""
    schema, definitions = _schema(api_version, kind)
    found: set[Steps] = set()
    if schema is not None:
        _walk(schema, (), definitions, {}, found)
    return QuantityFields(frozenset(found))


def _walk(node: Any, path: Steps, definitions: dict[str, Any], done: dict[str, frozenset[Steps]], found: set[Steps]) -> None:
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        found.update((*path, *rest) for rest in _definition(name, definitions, done))
        return
    if node.get("x-kubernetes-int-or-string") and _QUANTITY_PATTERN in str(node.get("pattern", "")):
        found.add(path)
        return
    for name, sub in (node.get("properties") or {}).items():
        _walk(sub, (*path, name), definitions, done, found)
    if isinstance(node.get("additionalProperties"), dict):
        _walk(node["additionalProperties"], (*path, ANY_KEY), definitions, done, found)
    if isinstance(node.get("items"), dict):
        _walk(node["items"], (*path, ITEM), definitions, done, found)
    for combinator in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(combinator) or []:
            _walk(sub, path, definitions, done, found)


def _definition(name: str, definitions: dict[str, Any], done: dict[str, frozenset[Steps]]) -> frozenset[Steps]:
    """The quantity paths inside one core definition, relative to it; a definition that reaches itself
    (JSONSchemaProps) adds nothing the second time round."""
    if name == _QUANTITY_DEFINITION:
        return frozenset({()})
    if name not in done:
        done[name] = frozenset()  # while it is walked: a cycle back to it finds nothing new
        inner: set[Steps] = set()
        _walk(definitions.get(name), (), definitions, done, inner)
        done[name] = frozenset(inner)
    return done[name]


def _schema(api_version: str, kind: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """A custom resource's shipped schema, else the core kind's in the newest Kubernetes fleetgen has, with its definitions;
    none for an apiVersion or kind no schema file can be named for."""
    if len(api_version) + len(kind) > _NAME_LENGTH or not (_API_VERSION.fullmatch(api_version) and _KIND.fullmatch(kind)):
        return None, {}
    shipped = resources.files("fleetgen") / "schemas" / "crds" / f"{api_version.replace('/', '_')}_{kind}.json"
    if shipped.is_file():
        return json.loads(shipped.read_text(encoding="utf-8")), {}
    folder = _core_folder()
    group, _, version = api_version.rpartition("/")
    name = f"{kind.lower()}-{group.split('.')[0]}-{version}.json" if group else f"{kind.lower()}-{version}.json"
    if folder is None or not (folder / name).is_file():
        return None, {}
    return json.loads((folder / name).read_text(encoding="utf-8")), _core_definitions(folder)


@cache
def _core_folder() -> Path | None:
    spec = importlib.util.find_spec("kubernetes_validate")  # its files only: importing it costs 30 ms
    if spec is None or spec.origin is None:  # pragma: no cover - a dependency of fleetgen
        return None
    root = Path(spec.origin).parent / "kubernetes-json-schema"
    minors = sorted(((int(m.group(1)), int(m.group(2))), d) for d in root.iterdir() if (m := _STRICT_DIR.fullmatch(d.name)))
    return minors[-1][1] if minors else None


@cache
def _core_definitions(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    return loaded


def same_quantity(one: Any, other: Any) -> bool:
    """Two spellings of one quantity (`0.5` and `500m`, 256Gi and 262144Mi); never a bool, never text that does not parse."""
    if one == other or isinstance(one, bool) or isinstance(other, bool):
        return False
    try:
        return bool(Quantity.parse(str(one)) == Quantity.parse(str(other)))
    except ValueError:
        return False


def aligned(old: Any, new: Any, fields: QuantityFields, path: Steps = ()) -> Any:
    """`new` with each quantity that equals `old`'s by value written as `old` writes it, so that a field by
    field comparison sees only real changes (lists of named items matched by name, others by position)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: aligned(old[k], v, fields, (*path, k)) if k in old else v for k, v in new.items()}
    if isinstance(old, list) and isinstance(new, list):
        named = {item.get("name"): item for item in old if isinstance(item, dict) and isinstance(item.get("name"), str)}
        out = []
        for index, item in enumerate(new):
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str) and named:
                before = named.get(name)
            else:
                before = old[index] if index < len(old) else None
            out.append(item if before is None else aligned(before, item, fields, (*path, ITEM)))
        return out
    return old if fields.holds(path) and same_quantity(old, new) else new

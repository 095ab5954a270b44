"""The shape of every live kind fleetgen reads beyond its metadata, and the typed readers that rely on it.

A live dump is untrusted: a ResourceQuota whose `spec.hard` is a list must be refused where the dump is
read (dumps.py), with its object and field, not meet `quota_impacts` as a list. So each kind whose fields
fleetgen reads declares them here (KIND_SHAPES), every object's are checked when the dump is read, and
the readers below (and nodes.py's node_facts) take only objects that passed. Reading a kind through
`of_kind` is how a new reader enrolls: a kind without declared fields is refused there, so it cannot be
read unchecked.

What Kubernetes itself writes: resource lists (`spec.hard`, `status.used`, a Node's `allocatable`) map a
resource name to a quantity string; `data` of a ConfigMap and a Node's `nodeInfo` map names to strings;
taints, conditions and managedFields are lists of maps. Anything else in those places is not what an API
server printed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from fleetgen.errors import FieldPath, Finding
from fleetgen.model import Quantity

Shape = Literal["map", "strings", "quantities", "items", "names", "string", "quantity", "integer", "boolean", "tree"]


@dataclass(frozen=True)
class Field:
    """A field of a live object and the shape fleetgen reads it as; an absent or null field is fine."""

    path: tuple[str, ...]
    shape: Shape
    strings: tuple[str, ...] = ()  # for "items": the fields of each item that must be strings when present
    each: tuple[Field, ...] = ()  # for "items": fields of each item (paths relative to it)


QUOTA_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")  # of a ClusterQueue's flavor resource
# Every object: its status maps (read, when present, by the quota and node readers) and the field managers drift reads.
EVERY_KIND = (
    Field(("spec",), "map"),
    Field(("status",), "map"),
    *(Field(("status", name), "map") for name in ("used", "hard", "allocatable", "capacity", "nodeInfo")),
    Field(("metadata", "managedFields"), "items", ("manager", "operation", "subresource"), (Field(("fieldsV1",), "tree"),)),
)
KIND_SHAPES: dict[str, tuple[Field, ...]] = {
    "ResourceQuota": (
        Field(("spec", "hard"), "quantities"),
        Field(("status", "hard"), "quantities"),
        Field(("status", "used"), "quantities"),
        Field(("spec", "scopeSelector"), "map"),
        Field(("spec", "scopeSelector", "matchExpressions"), "items", ("scopeName", "operator"), (Field(("values",), "names"),)),
    ),
    "Node": (
        Field(("status", "allocatable"), "quantities"),
        Field(("status", "capacity"), "quantities"),
        Field(("status", "nodeInfo"), "strings"),
        Field(("status", "conditions"), "items", ("type", "status")),
        Field(("spec", "taints"), "items", ("key", "value", "effect")),
    ),
    "ConfigMap": (Field(("data",), "strings"),),
    # What `import` reads of a repository's objects beyond these (the same shapes a cluster serves them in).
    "ClusterQueue": (
        Field(("spec", "cohort"), "string"),
        Field(("spec", "cohortName"), "string"),
        Field(("spec", "preemption"), "map"),
        Field(
            ("spec", "resourceGroups"),
            "items",
            each=(
                Field(
                    ("flavors",),
                    "items",
                    ("name",),
                    (Field(("resources",), "items", ("name",), tuple(Field((q,), "quantity") for q in QUOTA_FIELDS)),),
                ),
            ),
        ),
    ),
    "LocalQueue": (Field(("spec", "clusterQueue"), "string"),),
    "PriorityClass": (
        Field(("value",), "integer"),
        Field(("globalDefault",), "boolean"),
        Field(("preemptionPolicy",), "string"),
        Field(("description",), "string"),
    ),
    "RoleBinding": (Field(("subjects",), "items", ("kind", "name", "apiGroup", "namespace")), Field(("roleRef",), "strings")),
    "NetworkPolicy": (
        Field(("spec", "podSelector"), "map"),
        Field(
            ("spec", "ingress"),
            "items",
            each=(
                Field(
                    ("from",),
                    "items",
                    each=(Field(("namespaceSelector",), "map"), Field(("namespaceSelector", "matchLabels"), "strings")),
                ),
            ),
        ),
    ),
    "ResourceFlavor": (
        Field(("spec", "nodeLabels"), "strings"),
        Field(("spec", "nodeTaints"), "items", ("key", "value", "effect")),
        Field(("spec", "tolerations"), "items", ("key", "operator", "value", "effect")),
    ),
    # The engine objects whose record of the revision they applied drift reads (committed.py).
    "Kustomization": (Field(("status", "lastAppliedRevision"), "string"),),
    "Application": (Field(("status", "sync"), "map"), Field(("status", "sync", "revision"), "string")),
}


def fields_of(kind: str) -> tuple[Field, ...]:
    """The checked fields of an object of `kind`: every kind's, with the kind's own taking their place."""
    own = KIND_SHAPES.get(kind, ())
    paths = {f.path for f in own}
    return tuple(f for f in EVERY_KIND if f.path not in paths) + own


def shape_problems(doc: dict[str, Any], kind: str, path: FieldPath) -> Iterator[Finding]:
    """What keeps `doc`, an object of `kind`, from having the shape fleetgen reads it as."""
    for field in fields_of(kind):
        value = _at(doc, field.path)
        if value is not None:
            yield from _problems(value, field, path + field.path)


def _at(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = doc
    for part in path:
        if not isinstance(value, dict):
            return None  # the parent is wrong: that is the parent's finding
        value = value.get(part)
    return value


def _problems(value: Any, field: Field, here: FieldPath) -> Iterator[Finding]:
    if field.shape == "string":
        if not isinstance(value, str):
            # fix: Give kubectl get -o yaml output, unedited
            yield Finding(here, f"expected a string, got {kind_of(value)}")
        return
    if field.shape in ("integer", "boolean"):
        expected = bool if field.shape == "boolean" else int
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            # fix: Give kubectl get -o yaml output, unedited
            yield Finding(here, f"expected {'a boolean' if expected is bool else 'an integer'}, got {kind_of(value)}")
        return
    if field.shape == "quantity":
        yield from _quantity_problems(value, here)
        return
    if field.shape == "tree":  # fieldsV1: maps of maps all the way down (`f:spec: {f:hard: {.: {}}}`)
        if not isinstance(value, dict):
            # fix: Give kubectl get -o yaml output, unedited
            yield Finding(here, f"expected a map, got {kind_of(value)}")
            return
        for key, inner in value.items():
            yield from _problems(inner, field, here + (str(key),))
        return
    if field.shape == "names":
        if not isinstance(value, list):
            # fix: Give kubectl get -o yaml output, unedited
            yield Finding(here, f"expected a list, got {kind_of(value)}")
            return
        for index, item in enumerate(value):
            if not isinstance(item, str):
                # fix: Give kubectl get -o yaml output, unedited
                yield Finding(here + (index,), f"expected a string, got {kind_of(item)}")
        return
    if field.shape == "items":
        if not isinstance(value, list):
            # fix: Give kubectl get -o yaml output, unedited
            yield Finding(here, f"expected a list, got {kind_of(value)}")
            return
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                # fix: Give kubectl get -o yaml output, unedited
                yield Finding(here + (index,), f"expected a map, got {kind_of(item)}")
                continue
            for name in field.strings:
                if item.get(name) is not None and not isinstance(item[name], str):
                    # fix: Give kubectl get -o yaml output, unedited
                    yield Finding(here + (index, name), f"expected a string, got {kind_of(item[name])}")
            for inner in field.each:
                found = _at(item, inner.path)
                if found is not None:
                    yield from _problems(found, inner, here + (index, *inner.path))
        return
    if not isinstance(value, dict):
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(here, f"expected a map, got {kind_of(value)}")
        return
    for key, item in value.items():
        if field.shape == "strings" and not isinstance(item, str):
            # fix: Give kubectl get -o yaml output, unedited
            yield Finding(here + (str(key),), f"expected a string, got {kind_of(item)}")
        elif field.shape == "quantities":
            yield from _quantity_problems(item, here + (str(key),))


def _quantity_problems(value: Any, here: FieldPath) -> Iterator[Finding]:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(here, f"expected a quantity such as 500m or 8Gi, got {kind_of(value)}")
        return
    try:
        Quantity.parse(str(value))
    except ValueError as exc:
        # fix: Give kubectl get -o yaml output, unedited
        yield Finding(here, str(exc))


def quantity(value: Any) -> Quantity:
    """A quantity of a resource list that passed shape_problems (so it parses)."""
    return Quantity.parse(str(value))


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of `kind`, which must be a kind whose fields are declared (and so were checked when read)."""
    if kind not in KIND_SHAPES:
        raise KeyError(f"{kind} is read from live objects but has no shape in KIND_SHAPES")
    return [o for o in objects if o.get("kind") == kind]


@dataclass(frozen=True)
class LiveQuota:
    """A live ResourceQuota as drift and diff read it: what it sets (spec.hard) and what is used (status.used)."""

    namespace: str
    name: str
    hard: dict[str, Quantity]
    used: dict[str, Quantity]


def live_quotas(objects: list[dict[str, Any]]) -> list[LiveQuota]:
    out = []
    for obj in of_kind(objects, "ResourceQuota"):
        meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
        hard = {str(k): quantity(v) for k, v in (spec.get("hard") or {}).items()}
        used = {str(k): quantity(v) for k, v in (status.get("used") or {}).items()}
        out.append(LiveQuota(str(meta.get("namespace") or ""), meta["name"], hard, used))
    return out


def kind_of(value: Any) -> str:
    """How a value's type reads in a message: `a string`, `null`, `a list` ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    return "a list" if isinstance(value, list) else "a map"

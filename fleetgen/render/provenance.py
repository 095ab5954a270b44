"""Provenance: which fleet.yaml value each field of a rendered object comes from.

The builders in render/ record it as they set fields, into a `Recorder` they are handed. The normal
render hands them `NOWHERE`, whose methods do nothing and whose `on` is false, so a builder guards
its recording with `if why.on:` and a render that explains nothing pays for one attribute test per
object (benchmarks/bench.py: within noise). `explain` and `diff --format markdown` render the
clusters they need again with a `Provenance`, which keeps, per object key, field pointer -> Origin.

A field pointer is the path of a field inside the object, as a tuple: ("spec", "hard", "pods").
A record may cover a whole subtree (the `rules` of a Role are one fleetgen default); a leaf's
origin is the record of its longest recorded prefix. A `mirror` record says the subtree has the
shape of the model value it comes from (node labels, rule labels), so a leaf below it comes from
the model path plus the rest of its pointer: one line per label, not one per map.

An Origin is what the builder knows: `default` (a fleetgen constant, with its note), `derived`
(computed from the model paths it lists, with a note saying how), or a model path. A model path
is a team value (`teams[2].quota...`), a per-cluster override (`teams[2].clusters.<c>...`, a
cluster's own `platform` or `alerts`) or a fleet value (the rest). Whether that value was written
in fleet.yaml or is the model's default is the loader's knowledge, not the builder's:
fleetgen/report/explain.py asks the Source and reports an unwritten one as a model default, at the key of
its nearest written parent. This module only records; it knows no positions.
"""

from typing import Any, NamedTuple

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from fleetgen.errors import FieldPath
from fleetgen.model import Fleet, Team
from fleetgen.render.manifest import ObjectKey

Pointer = tuple[str | int, ...]  # a field inside a rendered object: ("spec", "hard", "pods")


class Origin(NamedTuple):
    kind: str  # default, derived, team, override, fleet
    paths: tuple[FieldPath, ...] = ()
    note: str = ""
    mirror: bool = False  # the subtree has the model value's shape: a leaf's model path is paths[0] + its rest


def default(note: str = "fleetgen default") -> Origin:
    return Origin("default", (), note)


def derived(note: str, *paths: FieldPath) -> Origin:
    return Origin("derived", paths, note)


def value_kind(path: FieldPath) -> str:
    """team, override (a team's value on one cluster, a cluster's own platform or alerts) or fleet."""
    if path[:1] == ("teams",):
        return "override" if path[2:3] == ("clusters",) and len(path) > 3 else "team"
    if path[:1] == ("clusters",) and path[2:3] in (("platform",), ("alerts",)):
        return "override"
    return "fleet"


def from_model(path: FieldPath, *, mirror: bool = False) -> Origin:
    return Origin(value_kind(path), (path,), "", mirror)


Given = FieldPath | Origin  # what a builder records: a model path, or an Origin it made


class Recorder:
    """Records nothing: what the normal render passes. `Provenance` is the one that keeps."""

    on = False

    def set(self, body: dict[str, Any], pointer: Pointer, given: Given, *, mirror: bool = False) -> None:
        """`pointer` of `body` (and all below it) comes from `given`."""

    def meta(self, body: dict[str, Any], name: Given, labels: dict[str, Given], namespace: Given | None = None) -> None:
        """apiVersion and kind (fleetgen's), the name, namespace and each label of `labels`."""


NOWHERE = Recorder()
MANAGED = default("fleetgen marks every object it renders")


def team_labels(at: FieldPath) -> dict[str, Given]:
    """Where render.manifest.team_labels takes each label from (team `at`)."""
    return {
        "team": at + ("name",),
        "project": at + ("project",),
        "cost-center": at + ("costCenter",),
        "app.kubernetes.io/part-of": ("metadata", "name"),
        "app.kubernetes.io/managed-by": MANAGED,
    }


def fleet_labels() -> dict[str, Given]:
    """Where render.manifest.fleet_labels takes each label from."""
    return {
        "team": ("metadata", "owner"),
        "project": ("metadata", "name"),
        "cost-center": ("metadata", "costCenter"),
        "app.kubernetes.io/part-of": ("metadata", "name"),
        "app.kubernetes.io/managed-by": MANAGED,
    }


class Provenance(Recorder):
    """Origins of the fields of one cluster's objects, by object key and field pointer."""

    on = True

    def __init__(self) -> None:
        self.objects: dict[ObjectKey, dict[Pointer, Origin]] = {}

    def set(self, body: dict[str, Any], pointer: Pointer, given: Given, *, mirror: bool = False) -> None:
        origin = given if isinstance(given, Origin) else from_model(given, mirror=mirror)
        self.objects.setdefault(ObjectKey.of(body), {})[pointer] = origin

    def meta(self, body: dict[str, Any], name: Given, labels: dict[str, Given], namespace: Given | None = None) -> None:
        self.set(body, ("apiVersion",), default("the API version fleetgen renders this kind at"))
        self.set(body, ("kind",), default("the kind fleetgen renders"))
        self.set(body, ("metadata", "name"), name)
        if namespace is not None:
            self.set(body, ("metadata", "namespace"), namespace)
        for label, given in labels.items():
            self.set(body, ("metadata", "labels", label), given)

    def origin(self, key: ObjectKey, pointer: Pointer) -> tuple[Origin, Pointer] | None:
        """The record covering `pointer` and the rest of the pointer below it; None when nothing covers it."""
        records = self.objects.get(key, {})
        for end in range(len(pointer), 0, -1):
            found = records.get(pointer[:end])
            if found is not None:
                return found, pointer[end:]
        return None


def written(model: BaseModel, *aliases: str) -> bool:
    """Whether the field at `aliases` (fleet.yaml names) below `model` was written in fleet.yaml."""
    value: Any = model
    for alias in aliases:
        if not isinstance(value, BaseModel):
            return False
        names = {(f.alias or n): n for n, f in type(value).model_fields.items()}
        if names.get(alias) not in value.model_fields_set:
            return False
        value = getattr(value, names[alias])
    return True


def object_name(fleet: Fleet, at: FieldPath, field: str) -> Origin:
    """Where the name of team `at`'s object `field` (a model.naming field) comes from: the team's own
    name for it, the fleet's naming template, or fleetgen's default template."""
    team, alias = fleet.teams[int(at[1])], to_camel(field)
    if written(team, "names", alias):
        return derived("the team's own name for this object", at + ("names", alias), at + ("name",))
    template = getattr(fleet.naming, field)
    source: FieldPath = ("naming", alias)
    if not written(fleet, "naming", alias):
        if "{" not in template:
            return default(f"fleetgen's default name {template}")
        return derived(f"fleetgen's default name {template}", at + ("name",))
    return derived(f"the fleet's name template {template}", source, at + ("name",)) if "{" in template else from_model(source)


def quota_path(team: Team, at: FieldPath, cluster: str | None, field: str) -> FieldPath:
    """Where team `at`'s quota value `field` (requests.gpu, limits.cpu, pods) on `cluster` is written:
    the team's placement on the cluster when it sets it, else the team's default quota."""
    scope, _, name = field.partition(".")
    placement = team.clusters.get(cluster) if cluster is not None else None
    if scope == "requests" and name not in ("", "cpu", "memory", "gpu"):  # a slice: requests.slices.<name>
        own = placement is not None and name in placement.requests.slices
        return (*at, "clusters", str(cluster), "requests", "slices", name) if own else (*at, "quota", "requests", "slices", name)
    overridden = getattr(placement, scope, None) if placement is not None else None
    if name:
        overridden = getattr(overridden, name, None) if overridden is not None else None
    parts: FieldPath = (scope, name) if name else (scope,)
    return (*at, "clusters", str(cluster), *parts) if overridden is not None else (*at, "quota", *parts)


def tenancy(fleet: Fleet, at: FieldPath, alias: str) -> FieldPath:
    """Where team `at`'s tenancy value `alias` (podSecurity, serviceTypes) comes from: its own, else the fleet's."""
    team = fleet.teams[int(at[1])]
    return (*at, "tenancy", alias) if written(team, "tenancy", alias) else ("tenancy", alias)


def class_list(fleet: Fleet, at: FieldPath) -> FieldPath:
    """Where the list of team `at`'s priority classes comes from: its own, else the fleet's default set."""
    team = fleet.teams[int(at[1])]
    return (*at, "priorityClasses") if team.priority_classes is not None else ("tenancy", "priorityClasses")


def role_rules(fleet: Fleet, at: FieldPath) -> list[tuple[Given, bool]]:
    """Where each rule of team `at`'s Role comes from, and whether it mirrors its model value: the fleet's
    `tenancy.role` (or fleetgen's default Role), pods/exec for `podExec`, then the team's own rules."""
    team = fleet.teams[int(at[1])]
    out: list[tuple[Given, bool]] = []
    if written(fleet, "tenancy", "role"):
        out += [(("tenancy", "role", r), True) for r in range(len(fleet.tenancy.role))]
    else:
        out += [(default("fleetgen's team Role: the seed's workloads, their logs and events, Kueue workloads"), False)] * len(
            fleet.tenancy.role
        )
    if team.tenancy.pod_exec:
        out.append((derived("pods/exec for podExec", (*at, "tenancy", "podExec")), False))
    out += [((*at, "tenancy", "role", r), True) for r in range(len(team.tenancy.role))]
    return out

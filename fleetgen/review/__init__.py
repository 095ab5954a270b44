"""The pull-request review: what a change to fleet.yaml does to each cluster, and who must approve it.

`diff_fleets` compares two renders (the base branch's and the pull request's) per cluster with
the object diff, summarises the change in fleet.yaml's own terms and applies the approval gate of
the base branch, so a change cannot relax its own gate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleetgen.compare.object_diff import ObjectChange, diff_objects
from fleetgen.errors import FieldPath, Finding
from fleetgen.model import Fleet
from fleetgen.render.provenance import quota_path
from fleetgen.render.rendered import Rendered
from fleetgen.review.approvals import Approval, required_approvals
from fleetgen.review.changes import Change, fleet_changes
from fleetgen.review.grants import grant_changes
from fleetgen.review.multikueue_changes import multikueue_changes
from fleetgen.review.offboarding import removal_warnings
from fleetgen.review.policy_changes import policy_changes


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
    # what the pull request must not do as it is, each an error at its fleet.yaml path in the head (change.refusal);
    # the workflow locates them (diff prints file:line:column) and the pull-request check fails on any
    refusals: list[Finding] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.clusters and not self.changes


def all_changes(base: Fleet, head: Fleet, facts: tuple[bytes | None, bytes | None] = (None, None)) -> list[Change]:
    """Every change of fleet.yaml from `base` to `head`, as the summary lists it and the approval gate judges it."""
    return [*policy_changes(base, head), *fleet_changes(base, head, facts), *multikueue_changes(base, head), *grant_changes(base, head)]


def diff_fleets(
    base_render: Rendered, head_render: Rendered, base_name: str, head_name: str, facts: tuple[bytes | None, bytes | None] = (None, None)
) -> FleetDiff:
    """Summary, approvals (by the base's rules, so a change cannot relax its own gate) and per-cluster objects;
    `facts`: each side's own facts file (compatibility.factsFile), whose edits are changes too."""
    base, head = base_render.fleet, head_render.fleet
    changes = all_changes(base, head, facts)
    approvals = required_approvals(base, changes)
    old_index = {c.name: i for i, c in enumerate(base.clusters)}
    new_index = {c.name: i for i, c in enumerate(head.clusters)}
    clusters = []
    for name in [*old_index, *(n for n in new_index if n not in old_index)]:
        if old_index.get(name) == new_index.get(name) and head_render.same_as(base_render, new_index[name]):
            continue  # the same inputs at the same position: the same objects
        old = base_render.keyed(old_index[name]) if name in old_index else {}
        new = head_render.keyed(new_index[name]) if name in new_index else {}
        objects = diff_objects(old, new)
        if objects:
            state = "added" if not old else "removed" if not new else "changed"
            env = (head.clusters[new_index[name]] if name in new_index else base.clusters[old_index[name]]).environment
            clusters.append(ClusterDiff(name, env, state, tuple(objects)))
    warnings = [c.warning for c in changes if c.warning] + removal_warnings(base, head)
    refusals = [c.refusal for c in changes if c.refusal is not None]
    return FleetDiff(base_name, head_name, changes, approvals, clusters, warnings, refusals)


def change_path(change: Change, fleet: Fleet) -> FieldPath:
    """The fleet.yaml path a change stands at in `fleet` (the head): the team, cluster, set or field it names.

    A change whose subject is gone from the head (a removed team) points at the list it left."""
    if change.path is not None:
        return change.path
    if change.kind == "priority-class":
        names = [p.name for p in fleet.priority_classes]
        return ("priorityClasses", names.index(str(change.field))) if change.field in names else ("priorityClasses",)
    if change.kind in ("fleet", "pricing", "facts") and change.field:
        return tuple(change.field.split("."))
    if change.team is not None:
        teams = [t.name for t in fleet.teams]
        if change.team not in teams:
            return ("teams",)
        index = teams.index(change.team)
        at: FieldPath = ("teams", index)
        if change.kind == "quota" and change.cluster is not None and change.field:
            return quota_path(fleet.teams[index], at, change.cluster, change.field)
        return (*at, "clusters", change.cluster) if change.cluster is not None else at
    if change.cluster is not None:
        clusters = [c.name for c in fleet.clusters]
        if change.cluster not in clusters:
            return ("clusters",)
        index = clusters.index(change.cluster)
        if change.kind == "versions":
            return ("versionSets", fleet.clusters[index].version_set)
        return ("clusters", index)
    return ()

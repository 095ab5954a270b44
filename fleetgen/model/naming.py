"""Names of a team's objects: fleet-wide name templates, and a team's own names where they differ.

A GitOps rename is a delete and a create (a team's RoleBinding vanishes for one sync), so a fleet
that adopts fleetgen keeps the names its repository already uses. The defaults are fleetgen's own
names. `{team}` stands for the team's name, `{namespace}` for its namespace (team-<name>).
"""

from typing import NamedTuple

from pydantic.alias_generators import to_camel

from fleetgen.model.spec import Spec
from fleetgen.model.types import NameTemplate, fill_name

NAMED_OBJECTS = ("role", "role_binding", "resource_quota", "priority_class_quota", "network_policy", "local_queue", "limit_range")


class Naming(Spec):
    """Fleet-wide names of every team's objects."""

    role: NameTemplate = "gpu-workload-role"
    """The team's Role."""
    role_binding: NameTemplate = "gpu-workload-role"
    """The RoleBinding of the team's group to its Role."""
    resource_quota: NameTemplate = "gpu-quota"
    """The team's ResourceQuota."""
    priority_class_quota: NameTemplate = "disallowed-priority-classes"
    """The zero ResourceQuota on the priority classes the team may not use."""
    network_policy: NameTemplate = "deny-other-namespaces"
    """The NetworkPolicy that denies other namespaces."""
    local_queue: NameTemplate = "team-{team}-queue"
    """The team's Kueue LocalQueue."""
    limit_range: NameTemplate = "container-defaults"
    """The LimitRange that gives containers the team's default requests and limits."""


class TeamNames(Spec):
    """A team's own names, where they differ from the fleet's `naming`."""

    role: NameTemplate | None = None
    """The team's Role."""
    role_binding: NameTemplate | None = None
    """The RoleBinding of the team's group to its Role."""
    resource_quota: NameTemplate | None = None
    """The team's ResourceQuota."""
    priority_class_quota: NameTemplate | None = None
    """The zero ResourceQuota on the priority classes the team may not use."""
    network_policy: NameTemplate | None = None
    """The NetworkPolicy that denies other namespaces."""
    local_queue: NameTemplate | None = None
    """The team's Kueue LocalQueue."""
    limit_range: NameTemplate | None = None
    """The LimitRange that gives containers the team's default requests and limits."""


class ObjectNames(NamedTuple):
    """The names of one team's objects, placeholders filled in."""

    role: str
    role_binding: str
    resource_quota: str
    priority_class_quota: str
    network_policy: str
    local_queue: str
    limit_range: str


def names_of(naming: Naming, own: TeamNames, team: str) -> ObjectNames:
    """The names of team `team`'s objects: its own names where it has them, else the fleet's."""
    chosen = {field: getattr(own, field) or getattr(naming, field) for field in NAMED_OBJECTS}
    return ObjectNames(**{field: fill_name(template, team) for field, template in chosen.items()})


def name_source(own: TeamNames, team_index: int, field: str) -> tuple[str | int, ...]:
    """The fleet.yaml field a team's object name comes from: its own `names`, else the fleet's `naming`."""
    if getattr(own, field) is not None:
        return ("teams", team_index, "names", to_camel(field))
    return ("naming", to_camel(field))

"""What fleetgen models, picked out of one cluster's built objects; the rest is listed as unmodelled.

A team is a Namespace `team-<name>` labelled `team: <name>`; in it, one Role, one RoleBinding of a
group to that Role, its ResourceQuota (and the zero quota on barred priority classes), one
NetworkPolicy and one LocalQueue. Cluster-wide: PriorityClasses, Kueue ResourceFlavors and
ClusterQueues, and the `kube-public/fleet-info` ConfigMap of the cluster's facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetgen.importer.build import Built

FLEET_INFO = ("ConfigMap", "kube-public", "fleet-info")
TEAM_KINDS = ("Role", "RoleBinding", "ResourceQuota", "NetworkPolicy", "LocalQueue")
CLUSTER_KINDS = ("PriorityClass", "ResourceFlavor", "ClusterQueue")
MULTIKUEUE_KINDS = ("AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster")  # the manager's (importer/multikueue.py)
MANAGER_ACCOUNT_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Secret")  # a worker's, for the manager
MANAGER_ACCOUNT = "multikueue-manager"


@dataclass(frozen=True)
class Unmodelled:
    """An object fleet.yaml cannot hold, with the file that declares it."""

    file: str
    kind: str
    namespace: str
    name: str
    why: str
    body: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)  # as built

    @property
    def title(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass
class TeamView:
    """One team's objects on one cluster, by kind (the barred-priority-class quota under its own key)."""

    name: str
    namespace: Built
    objects: dict[str, Built] = field(default_factory=dict)


@dataclass
class ClusterView:
    name: str
    info: Built | None = None
    teams: dict[str, TeamView] = field(default_factory=dict)
    cluster_wide: dict[str, list[Built]] = field(default_factory=lambda: {k: [] for k in CLUSTER_KINDS})
    unmodelled: list[Unmodelled] = field(default_factory=list)
    modelled: list[Built] = field(default_factory=list)  # every object import turned into fleet.yaml
    multikueue: list[Built] = field(default_factory=list)  # MultiKueue's objects, and a worker's account for the manager


def _key(body: dict[str, Any]) -> tuple[str, str, str]:
    meta = body.get("metadata") or {}
    return (str(body.get("kind", "")), str(meta.get("namespace", "") or ""), str(meta.get("name", "")))


def is_priority_quota(body: dict[str, Any]) -> bool:
    """The zero quota that bars priority classes: pods 0, scoped to PriorityClass In [...]."""
    spec = body.get("spec") or {}
    expressions = (spec.get("scopeSelector") or {}).get("matchExpressions") or []
    return (
        spec.get("hard") == {"pods": "0"}
        and len(expressions) == 1
        and expressions[0].get("scopeName") == "PriorityClass"
        and expressions[0].get("operator") == "In"
    )


def recognise(cluster: str, objects: list[Built]) -> ClusterView:
    view = ClusterView(cluster)
    later: list[Built] = []
    for obj in objects:
        kind, namespace, name = _key(obj.body)
        labels = (obj.body.get("metadata") or {}).get("labels") or {}
        if (kind, namespace, name) == FLEET_INFO:
            view.info = obj
            view.modelled.append(obj)
        elif kind == "Namespace" and name == f"team-{labels.get('team')}":
            view.teams[str(labels["team"])] = TeamView(str(labels["team"]), obj)
            view.modelled.append(obj)
        elif kind in CLUSTER_KINDS and not namespace:
            view.cluster_wide[kind].append(obj)
            view.modelled.append(obj)
        elif kind in MULTIKUEUE_KINDS or (kind in MANAGER_ACCOUNT_KINDS and name == MANAGER_ACCOUNT):
            view.multikueue.append(obj)
            view.modelled.append(obj)
        else:
            later.append(obj)
    by_namespace = {team.namespace.body["metadata"]["name"]: team for team in view.teams.values()}
    for obj in later:
        kind, namespace, name = _key(obj.body)
        team = by_namespace.get(namespace)
        slot = "PriorityQuota" if kind == "ResourceQuota" and is_priority_quota(obj.body) else kind
        why = _why_not(obj.body, team, slot)
        if why:
            view.unmodelled.append(Unmodelled(obj.file, kind, namespace, name, why, obj.body))
            continue
        assert team is not None
        team.objects[slot] = obj
        view.modelled.append(obj)
    return view


def _why_not(body: dict[str, Any], team: TeamView | None, slot: str) -> str:
    """Why an object cannot become part of a team, or "" when it can."""
    kind = body.get("kind", "")
    if kind == "Namespace":
        return "a namespace that is not a team's (team-<name> labelled team: <name>)"
    if kind not in TEAM_KINDS:
        return "a kind fleetgen does not model"
    if team is None:
        return "not in a team namespace"
    if slot in team.objects:
        return f"a second {kind} in the team's namespace (fleetgen renders one)"
    if kind == "RoleBinding":
        subjects = body.get("subjects") or []
        if len(subjects) != 1 or subjects[0].get("kind") != "Group" or (body.get("roleRef") or {}).get("kind") != "Role":
            return "a RoleBinding that does not bind one group to a Role"
    return ""

"""The edits the summary has no words of its own for: each other changed field of fleet.yaml, as its path and values.

The summary says in words what the approval gate judges (quotas, pools, versions, access, grants, prices). Other
edits still change what a cluster gets (a team's registries, an endpoint's selector, a cohort's quota, the driver
upgrade policy), and a review that read "0 change(s)" beside a changed tree would hide them. Each part of fleet.yaml
lists what its own readers say; every other field that differs is a change here, so what is not listed is never lost:
a field added to the model later shows up here until a reader gives it words.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from fleetgen.compare.object_diff import ABSENT, ORDER, object_diff, show
from fleetgen.model import Cluster, Fleet, Team
from fleetgen.model.platform import ADD_ONS
from fleetgen.model.team import Placement
from fleetgen.review.change import Change, ChangeKind

# what the summary's readers say of each part (fleet.yaml names): changes.py, policy_changes.py, capacity_changes.py,
# multikueue_changes.py, grants.py; a version set reaches the summary through the clusters that use it
SAID_OF_FLEET = frozenset(
    {
        "apiVersion",
        "kind",
        "metadata",
        "gitops",
        "capacity",
        "versionSets",
        "priorityClasses",
        "clusters",
        "teams",
        "tenancy",
        "approvals",
        "pricing",
        "rollout",
        "upgrade",
        "multiKueue",
    }
)
SAID_OF_CLUSTER = frozenset({"name", "region", "environment", "purpose", "versionSet", "drPartner", "nodePools", "queues", "volcano"})
SAID_OF_TEAM = frozenset({"name", "group", "costCenter", "project", "priorityClasses", "tenancy", "allowedIngressNamespaces"})
SAID_OF_QUOTA = frozenset({"requests", "limits", "pods"})  # a team's and a placement's: changes.py's quota changes
SAID_OF_PLACEMENT = SAID_OF_QUOTA | {"queue", "until", "reason", "workload"}  # and the grant a placement is (grants.py)
NO_OVERRIDES = Placement()  # a placement written as `cluster: {}` or with no value
# an add-on's release is a version change of the cluster (changes.py), the driver's move to one NVIDIADriver per pool
# is a change of each cluster's pools (pool_driver_changes.py), and the fleet's facts file has its own reader
SAID_PATHS = frozenset(
    {*(("platform", name, "version") for name, _ in ADD_ONS), ("platform", "gpuOperator", "driverCrd"), ("compatibility", "factsFile")}
)


def fleet_field_changes(base: Fleet, head: Fleet) -> Iterator[Change]:
    """The fleet-wide sections no reader describes (alerts, naming, registries, secrets, slo, the platform's settings...)."""
    yield from _unsaid("fleet", "", base, head, SAID_OF_FLEET)


def cluster_field_changes(a: Cluster, b: Cluster, production: bool) -> Iterator[Change]:
    """A cluster's own fields no reader describes: cohorts, alerts, storage classes, its platform's settings..."""
    yield from _unsaid("cluster", f"cluster {b.name}:", a, b, SAID_OF_CLUSTER, cluster=b.name, production=production)


def team_field_changes(a: Team, b: Team) -> Iterator[Change]:
    """A team's fields no reader describes: endpoints, registries, alerts, names, and the storage, claims and volumes
    of its quota and placements."""
    yield from _unsaid("team", f"team {b.name}:", a, b, SAID_OF_TEAM | {"quota", "clusters"}, team=b.name)
    yield from _unsaid("team", f"team {b.name}: quota", a.quota, b.quota, SAID_OF_QUOTA, team=b.name)
    for cluster in [c for c in b.clusters if c in a.clusters]:
        old, new = a.clusters[cluster] or NO_OVERRIDES, b.clusters[cluster] or NO_OVERRIDES
        subject = f"team {b.name}: on {cluster}"
        yield from _unsaid("team", subject, old, new, SAID_OF_PLACEMENT, team=b.name, cluster=cluster)


def _unsaid(kind: ChangeKind, subject: str, old: BaseModel, new: BaseModel, said: frozenset[str], **context: Any) -> Iterator[Change]:
    if old == new:
        return
    fields = [n for n, f in type(new).model_fields.items() if (f.alias or n) not in said and getattr(old, n) != getattr(new, n)]
    if not fields:
        return
    before, after = (model.model_dump(mode="json", by_alias=True, include=set(fields)) for model in (old, new))
    found = [f for f in object_diff(before, after) if not any(tuple(f.parts[: len(p)]) == p for p in SAID_PATHS)]
    grown = {f.parts[:-1] for f in found if ABSENT in (f.old, f.new)}
    for change in found:
        if ORDER in change.parts and change.parts[: change.parts.index(ORDER)] in grown:
            continue  # an entry added or removed moves the order too: the entry's own line says it
        old_value, new_value = _value(change.old), _value(change.new)
        if ABSENT in (change.old, change.new):
            text = f"{subject} {change.path} {'added' if change.old == ABSENT else 'removed'}"
        else:
            text = f"{subject} {change.path}: {old_value} -> {new_value}"
        text = text.lstrip()  # a fleet-wide field has no subject
        yield Change(kind, text, field=change.path, old=old_value, new=new_value, **context)


def _value(value: Any) -> str:
    """A field's value as the summary's JSON carries it: a whole section added or removed is named, not printed."""
    return "(a section)" if isinstance(value, dict | list) and value else show(value)

"""A team of the imported fleet: its group, labels, quotas per cluster, queue, priority classes,
allowed ingress and names, from the objects each cluster builds for it."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pydantic.alias_generators import to_camel

from fleetgen.errors import FieldPath
from fleetgen.importer.imported import Imported, mode, number, or_placeholder
from fleetgen.importer.recognise import ClusterView, TeamView
from fleetgen.model import Quantity
from fleetgen.model.naming import Naming
from fleetgen.model.tenancy import SERVICE_QUOTA
from fleetgen.model.types import fill_name

QUOTA_KEYS = {
    "requests.cpu": ("requests", "cpu"),
    "requests.memory": ("requests", "memory"),
    "requests.nvidia.com/gpu": ("requests", "gpu"),
    "limits.cpu": ("limits", "cpu"),
    "limits.memory": ("limits", "memory"),
    "limits.nvidia.com/gpu": ("limits", "gpu"),
    "pods": ("pods",),
}
NAME_SLOTS = {  # naming field -> the object kind (slot) it names
    "role": "Role",
    "role_binding": "RoleBinding",
    "resource_quota": "ResourceQuota",
    "priority_class_quota": "PriorityQuota",
    "network_policy": "NetworkPolicy",
    "local_queue": "LocalQueue",
}


def _generalise(name: str, team: str, default: str) -> str:
    """A team's object name as a template: fleetgen's own, else team-<team> becomes {namespace}, <team> {team}."""
    if fill_name(default, team) == name:
        return default
    if f"team-{team}" in name:
        return name.replace(f"team-{team}", "{namespace}")
    parts = name.split("-")
    return "-".join("{team}" if p == team else p for p in parts)


def naming(views: list[ClusterView], teams: list[str]) -> dict[str, str]:
    """Fleet-wide names that differ from fleetgen's: the template most teams' names fit."""
    defaults = Naming()
    naming: dict[str, str] = {}
    for field_name, slot in NAME_SLOTS.items():
        templates, default = [], getattr(defaults, field_name)
        for team in teams:
            used = _team_names(views, team, slot)
            if used:
                templates.append(_generalise(mode(used), team, default))
        if not templates:
            continue
        counts = Counter(templates)
        best = max(counts, key=lambda t: (counts[t], t == default, -templates.index(t)))
        if best != default and counts[best] > counts.get(default, 0):
            naming[to_camel(field_name)] = best
    return naming


def _team_names(views: list[ClusterView], team: str, slot: str) -> list[str]:
    return [v.teams[team].objects[slot].body["metadata"]["name"] for v in views if team in v.teams and slot in v.teams[team].objects]


def _hard(view: TeamView) -> dict[str, Any]:
    quota = view.objects.get("ResourceQuota")
    return ((quota.body.get("spec") or {}).get("hard") or {}) if quota else {}


def team(
    out: Imported, t: int, name: str, views: list[ClusterView], clusters: list[dict[str, Any]], naming: dict[str, str], classes: list[str]
) -> dict[str, Any]:
    here: FieldPath = ("teams", t)
    on = [v for v in views if name in v.teams]
    mine = [v.teams[name] for v in on]
    labels = [tv.namespace.body["metadata"].get("labels") or {} for tv in mine]
    team: dict[str, Any] = {"name": name}
    out.notes[here + ("name",)] = f"from {mine[0].namespace.file}"
    groups = [tv.objects["RoleBinding"].body["subjects"][0].get("name") for tv in mine if "RoleBinding" in tv.objects]
    team["group"] = or_placeholder(
        out, here + ("group",), mode(groups) if groups else None, "unknown", "no RoleBinding names the team's group"
    )
    if groups:
        out.notes[here + ("group",)] = f"from {next(tv.objects['RoleBinding'].file for tv in mine if 'RoleBinding' in tv.objects)}"
    team["costCenter"] = mode([str(lab.get("cost-center", "")) for lab in labels])
    team["project"] = mode([str(lab.get("project", "")) for lab in labels])
    # quotas: the most common value of each entry is the default; a cluster that differs overrides it
    hards = [_hard(tv) for tv in mine]
    default: dict[str, Any] = {}
    for key in QUOTA_KEYS:
        values = [Quantity.parse(h[key]) if key in h else None for h in hards]
        common = mode([v.value if v else None for v in values])
        if common is not None:
            default[key] = next(v.text for v in values if v and v.value == common)
    team["quota"] = _quota(default)
    if "ResourceQuota" in mine[0].objects:
        out.notes[here + ("quota",)] = f"from {mine[0].objects['ResourceQuota'].file}"
    placements: dict[str, Any] = {}
    for view, tv, hard in zip(on, mine, hards, strict=True):
        differ = {
            k: v for k, v in hard.items() if k in QUOTA_KEYS and (k not in default or Quantity.parse(v) != Quantity.parse(default[k]))
        }
        placement = _quota(differ)
        cluster = next(c for c in clusters if c["name"] == view.name)
        queue = tv.objects.get("LocalQueue")
        queues = cluster.get("queues") or [{"name": "gpu-cluster-queue"}]
        first = queues[0]["name"] if len(queues) == 1 else None  # with several queues, fleet.yaml names the team's
        if queue and (queue.body.get("spec") or {}).get("clusterQueue") not in (None, first):
            placement["queue"] = queue.body["spec"]["clusterQueue"]
        placements[view.name] = placement or None
        if differ:
            out.notes[here + ("clusters", view.name)] = f"what kustomize builds on {view.name} differs here"
    team["clusters"] = placements
    barred = [
        tv.objects["PriorityQuota"].body["spec"]["scopeSelector"]["matchExpressions"][0].get("values") or []
        for tv in mine
        if "PriorityQuota" in tv.objects
    ]
    if barred:
        team["priorityClasses"] = [c for c in classes if c not in mode([tuple(b) for b in barred])]
    elif classes:  # nothing barred: every class, which a team that lists none no longer gets
        team["priorityClasses"] = list(classes)
    team["tenancy"] = _tenancy(mine, hards)
    if any(u.kind == "LimitRange" and u.namespace == f"team-{name}" for v in on for u in v.unmodelled):
        team["tenancy"]["limitRange"] = False  # two LimitRanges in a namespace default containers unpredictably
        out.notes[here + ("tenancy", "limitRange")] = "the repository's own LimitRange gives the defaults"
    policy = next((tv.objects["NetworkPolicy"].body for tv in mine if "NetworkPolicy" in tv.objects), None)
    if policy:
        peers = [p for rule in (policy.get("spec") or {}).get("ingress") or [] for p in rule.get("from") or []]
        allowed = [((p.get("namespaceSelector") or {}).get("matchLabels") or {}).get("kubernetes.io/metadata.name") for p in peers]
        if any(allowed):
            team["allowedIngressNamespaces"] = [a for a in allowed if a]
    names = {}
    for field_name, slot in NAME_SLOTS.items():
        used = _team_names(views, name, slot)
        template = naming.get(to_camel(field_name), getattr(Naming(), field_name))
        if used and fill_name(template, name) != mode(used):
            names[to_camel(field_name)] = mode(used)
    if names:
        team["names"] = names
    return team


ENFORCE = "pod-security.kubernetes.io/enforce"


def _tenancy(mine: list[TeamView], hards: list[dict[str, Any]]) -> dict[str, Any]:
    """The team's Pod Security level (none enforced: privileged), the Service types its quota does not hold at
    zero, and its Role's rules (None without a Role); infer.py keeps only what differs from the fleet's."""
    levels = [(tv.namespace.body["metadata"].get("labels") or {}).get(ENFORCE, "privileged") for tv in mine]
    zero = {key: mode([key in h and Quantity.parse(str(h[key])).value == 0 for h in hards]) for key in SERVICE_QUOTA.values()}
    roles = [json.dumps(tv.objects["Role"].body.get("rules") or []) for tv in mine if "Role" in tv.objects]
    return {
        "podSecurity": mode(levels),
        "serviceTypes": [kind for kind, key in SERVICE_QUOTA.items() if not zero[key]],
        "role": json.loads(mode(roles)) if roles else None,
    }


def _quota(hard: dict[str, Any]) -> dict[str, Any]:
    quota: dict[str, Any] = {}
    for key, value in hard.items():
        if key not in QUOTA_KEYS:
            continue
        *scope, resource = QUOTA_KEYS[key]
        target = quota.setdefault(scope[0], {}) if scope else quota
        target[resource] = int(value) if resource in ("gpu", "pods") and str(value).isdigit() else number(value)
    return {k: quota[k] for k in ("requests", "limits", "pods") if k in quota}

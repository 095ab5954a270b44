"""From what each cluster builds to, the fleet that renders it: teams, placements, overrides and queues.

A value that differs between clusters becomes the team's default (the most common value) plus
per-cluster overrides; names that differ from fleetgen's become `naming` (the most common name)
plus a team's own `names`. What no object says comes from the cluster's `kube-public/fleet-info`
ConfigMap (or --fact); what nothing says becomes the placeholder TODO(import), which validate
rejects, with a comment saying what to fill in.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pydantic.alias_generators import to_camel

from fleetgen.errors import FieldPath
from fleetgen.importer.recognise import ClusterView, TeamView
from fleetgen.model import API_VERSION, COMPONENTS, Quantity
from fleetgen.model.naming import Naming
from fleetgen.model.types import fill_name

PLACEHOLDER = "TODO(import)"
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
POOL_FACTS = {  # fleet-info key suffix -> node pool field, and whether it is a whole number
    "vm-size": ("vmSize", False),
    "gpu-model": ("gpuModel", False),
    "gpus-per-node": ("gpusPerNode", True),
    "min-nodes": ("minNodes", True),
    "max-nodes": ("maxNodes", True),
    "scaling": ("scaling", False),
    "cpu-per-node": ("cpuPerNode", False),
    "memory-per-node": ("memoryPerNode", False),
}


@dataclass
class Imported:
    """fleet.yaml as plain data, the comment for some of its values, and where its placeholders stand."""

    document: dict[str, Any]
    notes: dict[FieldPath, str] = field(default_factory=dict)
    placeholders: dict[FieldPath, Any] = field(default_factory=dict)  # path -> a valid stand-in, for verification


@dataclass(frozen=True)
class Given:
    """What the command line adds: fleet-wide values and per-cluster facts (fleet-info keys)."""

    name: str | None = None
    cost_center: str | None = None
    engine: str | None = None
    repository: str | None = None
    facts: dict[str, dict[str, str]] = field(default_factory=dict)


def infer(views: list[ClusterView], given: Given) -> Imported:
    out = Imported({})
    facts = {v.name: _facts(v, given) for v in views}
    doc = out.document
    doc["apiVersion"], doc["kind"] = API_VERSION, "Fleet"
    names = {f.get("fleet") for f in facts.values()} - {None}
    fleet_name = given.name or (names.pop() if len(names) == 1 else None)
    wide = [b for v in views for kind in ("PriorityClass", "ClusterQueue", "ResourceFlavor") for b in v.cluster_wide[kind]]
    centres = {((b.body["metadata"].get("labels") or {}).get("cost-center")) for b in wide} - {None}
    doc["metadata"] = {
        "name": _value(out, ("metadata", "name"), fleet_name, "imported", "fleet name unknown: add `fleet` to fleet-info or pass --name"),
        "costCenter": _value(
            out,
            ("metadata", "costCenter"),
            given.cost_center or (centres.pop() if len(centres) == 1 else None),
            "cc-0",
            "cost centre of fleet-wide objects unknown: pass --cost-center",
        ),
    }
    doc["gitops"] = {
        "engine": _value(out, ("gitops", "engine"), given.engine, "flux", "GitOps engine unknown: flux or argocd (--engine)"),
        "repository": _value(
            out, ("gitops", "repository"), given.repository, "https://example.invalid/fleet", "repository URL unknown (--repository)"
        ),
    }
    doc["versionSets"], version_set_of = _version_sets(out, views, facts)
    doc["priorityClasses"] = _priority_classes(out, views)
    doc["clusters"] = [_cluster(out, c, view, facts[view.name], version_set_of[view.name]) for c, view in enumerate(views)]
    teams = sorted({t for v in views for t in v.teams})
    naming = _naming(views, teams)
    if naming:
        doc["naming"] = naming
    classes = [p["name"] for p in doc["priorityClasses"]]
    doc["teams"] = [_team(out, t, name, views, doc["clusters"], naming, classes) for t, name in enumerate(teams)]
    order = ["apiVersion", "kind", "metadata", "gitops", "versionSets", "priorityClasses", "naming", "clusters", "teams"]
    out.document = {k: doc[k] for k in order if k in doc and doc[k] != []}
    return out


def _facts(view: ClusterView, given: Given) -> dict[str, str]:
    data = (view.info.body.get("data") or {}) if view.info else {}
    return {**{str(k): str(v) for k, v in data.items()}, **given.facts.get(view.name, {})}


def _value(out: Imported, path: FieldPath, value: Any, stand_in: Any, why: str) -> Any:
    """`value`, or the placeholder (with its TODO comment and a valid stand-in for verification)."""
    if value is not None:
        return value
    out.placeholders[path] = stand_in
    out.notes[path] = f"TODO(import): {why}"
    return PLACEHOLDER


def _mode(values: list[Any]) -> Any:
    """The most common value; among equally common ones, the first seen."""
    counts = Counter(values)
    return max(counts, key=lambda v: (counts[v], -values.index(v)))


def _version_sets(out: Imported, views: list[ClusterView], facts: dict[str, dict[str, str]]) -> tuple[dict[str, Any], dict[str, str]]:
    sets: dict[str, Any] = {}
    rows: dict[tuple[str | None, ...], str] = {}
    of: dict[str, str] = {}
    for view in views:
        row = tuple(facts[view.name].get(c) for c in COMPONENTS)
        if row not in rows or None in row:
            base = facts[view.name].get("environment", "versions")
            name = base if base not in sets else f"{base}-{len(sets) + 1}"
            rows[row] = name
            stand_ins = {"containerd": "2.0", "kubernetes": "1.32.0", "driver": "570.195.03", "cuda": "12.8", "cudnn": "9.8.0"}
            sets[name] = {
                c: _value(out, ("versionSets", name, c), v, stand_ins[c], f"{c} version unknown: add `{c}` to fleet-info")
                for c, v in zip(COMPONENTS, row, strict=True)
            }
            sets[name] = {c: sets[name][c] for c in ("kubernetes", "driver", "cuda", "cudnn", "containerd")}
            if view.info:
                out.notes.setdefault(("versionSets", name), f"from {view.info.file}")
        of[view.name] = rows[row]
    return sets, of


def _priority_classes(out: Imported, views: list[ClusterView]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for view in views:
        for built in view.cluster_wide["PriorityClass"]:
            body = built.body
            name = body["metadata"]["name"]
            if name in seen:
                continue
            entry: dict[str, Any] = {"name": name, "value": body.get("value", 0)}
            if body.get("preemptionPolicy", "PreemptLowerPriority") != "PreemptLowerPriority":
                entry["preemptionPolicy"] = body["preemptionPolicy"]
            if body.get("globalDefault"):
                entry["globalDefault"] = True
            if body.get("description"):
                entry["description"] = body["description"]
            seen[name] = entry
    ordered = sorted(seen.values(), key=lambda e: (-e["value"], e["name"]))
    if ordered:
        first = next(b for v in views for b in v.cluster_wide["PriorityClass"])
        out.notes[("priorityClasses",)] = f"from {first.file}"
    return ordered


def _quantity_text(value: Fraction, memory: bool) -> str | int:
    """An amount per node as Kubernetes writes it: whole CPUs or millicores, memory in the largest binary unit."""
    if memory:
        whole = int(value)
        for suffix, unit in (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
            if whole and whole % unit == 0:
                return f"{whole // unit}{suffix}"
        return whole
    return int(value) if value.denominator == 1 else f"{int(value * 1000)}m"


def _flavor_quota(queue: dict[str, Any], flavor: str) -> dict[str, Any]:
    """A ClusterQueue's resources of one flavor: resource name -> its entry."""
    for group in (queue.get("spec") or {}).get("resourceGroups") or []:
        for entry in group.get("flavors") or []:
            if entry.get("name") == flavor:
                return {r.get("name"): r for r in entry.get("resources") or []}
    return {}


def _cluster(out: Imported, c: int, view: ClusterView, facts: dict[str, str], version_set: str) -> dict[str, Any]:
    here: FieldPath = ("clusters", c)
    hint = f"add it to {view.info.file}" if view.info else f"add a kube-public/fleet-info ConfigMap to clusters/{view.name}/"
    cluster: dict[str, Any] = {"name": view.name}
    out.notes[here + ("name",)] = f"from {view.info.file}" if view.info else f"built from clusters/{view.name}"
    cluster["region"] = _value(out, here + ("region",), facts.get("region"), "unknown", f"region unknown: {hint} or pass --fact")
    cluster["environment"] = _value(out, here + ("environment",), facts.get("environment"), "dev", f"environment unknown: {hint}")
    if facts.get("purpose"):
        cluster["purpose"] = facts["purpose"]
    cluster["versionSet"] = version_set
    if facts.get("dr-partner"):
        cluster["drPartner"] = facts["dr-partner"]
    queues = [b.body for b in view.cluster_wide["ClusterQueue"]]
    flavors = {b.body["metadata"]["name"]: b for b in view.cluster_wide["ResourceFlavor"]}
    order = [f.get("name") for q in queues for g in (q.get("spec") or {}).get("resourceGroups") or [] for f in g.get("flavors") or []]
    pool_names = list(dict.fromkeys([n for n in order if n in flavors] + sorted(flavors)))
    pools = [_pool(out, here + ("nodePools", p), flavors[n], facts, queues, hint) for p, n in enumerate(pool_names)]
    cluster["nodePools"] = pools
    if queues:
        cluster["queues"] = [_queue(q, pools, pool_names) for q in queues]
        out.notes[here + ("queues",)] = f"from {view.cluster_wide['ClusterQueue'][0].file}"
    return cluster


def _pool(out: Imported, at: FieldPath, flavor: Any, facts: dict[str, str], queues: list[dict[str, Any]], hint: str) -> dict[str, Any]:
    name = flavor.body["metadata"]["name"]
    spec = flavor.body.get("spec") or {}
    pool: dict[str, Any] = {"name": name}
    out.notes[at + ("name",)] = f"from {flavor.file}"
    stand_ins = {"vmSize": "unknown", "gpuModel": "A100", "gpusPerNode": 1, "minNodes": 0, "maxNodes": 1, "scaling": "on-demand"}
    for key, (field_name, whole) in POOL_FACTS.items():
        raw = facts.get(f"nodepool.{name}.{key}")
        value: Any = int(raw) if (whole or key == "cpu-per-node") and raw is not None and raw.isdigit() else raw
        if field_name in stand_ins and (value is not None or field_name != "minNodes"):
            why = f"nodepool.{name}.{key} unknown: {hint}"
            pool[field_name] = _value(out, at + (field_name,), value, stand_ins[field_name], why)
        elif value is not None:
            pool[field_name] = value
    quota = next((_flavor_quota(q, name) for q in queues if _flavor_quota(q, name)), {})
    for resource, field_name in (("cpu", "cpuPerNode"), ("memory", "memoryPerNode")):
        if field_name in pool:
            continue
        per_node = None
        nominal = (quota.get(resource) or {}).get("nominalQuota")
        if nominal is not None and isinstance(pool.get("maxNodes"), int) and pool["maxNodes"] > 0:
            per_node = _quantity_text(Quantity.parse(nominal).value / pool["maxNodes"], resource == "memory")
            out.notes[at + (field_name,)] = "the ClusterQueue's nominal quota / maxNodes"
        pool[field_name] = _value(out, at + (field_name,), per_node, "1", f"nodepool.{name}.{resource}-per-node unknown: {hint}")
    pool["labels"] = dict(sorted((spec.get("nodeLabels") or {}).items()))
    taints = []
    for toleration in spec.get("tolerations") or []:
        taint: dict[str, Any] = {"key": toleration.get("key")}
        if toleration.get("operator", "Equal") == "Equal" and toleration.get("value"):
            taint["value"] = toleration["value"]
        if toleration.get("effect", "NoSchedule") != "NoSchedule":
            taint["effect"] = toleration["effect"]
        taints.append(taint)
    if taints:
        pool["taints"] = taints
    return {k: pool[k] for k in ("name", *(f for f, _ in POOL_FACTS.values()), "labels", "taints") if k in pool}


def _queue(body: dict[str, Any], pools: list[dict[str, Any]], pool_names: list[str]) -> dict[str, Any]:
    spec = body.get("spec") or {}
    queue: dict[str, Any] = {"name": body["metadata"]["name"]}
    names = [f.get("name") for g in spec.get("resourceGroups") or [] for f in g.get("flavors") or []]
    if names != pool_names:
        queue["flavors"] = names
    cohort = spec.get("cohortName") or spec.get("cohort")
    if cohort:
        queue["cohort"] = cohort
    preemption = spec.get("preemption") or {}
    chosen = {}
    if preemption.get("withinClusterQueue", "Never") != "LowerPriority":
        chosen["withinClusterQueue"] = preemption.get("withinClusterQueue", "Never")
    if preemption.get("reclaimWithinCohort", "Never") != "Never":
        chosen["reclaimWithinCohort"] = preemption["reclaimWithinCohort"]
    if chosen:
        queue["preemption"] = chosen
    by_name = {p["name"]: p for p in pools}
    nominal: dict[str, Any] = {}
    borrowing: dict[str, Any] = {}
    lending: dict[str, Any] = {}
    for flavor in names:
        resources = _flavor_quota(body, flavor)
        stated = {
            f: (resources.get(r) or {}).get("nominalQuota") for r, f in (("nvidia.com/gpu", "gpu"), ("cpu", "cpu"), ("memory", "memory"))
        }
        if _amounts(stated) != _pool_total(by_name.get(flavor, {})):
            nominal[flavor] = {k: _number(v) for k, v in stated.items() if v is not None}
        for limit, into in (("borrowingLimit", borrowing), ("lendingLimit", lending)):
            pairs = (("nvidia.com/gpu", "gpu"), ("cpu", "cpu"), ("memory", "memory"))
            given = {f: resources[r][limit] for r, f in pairs if (resources.get(r) or {}).get(limit) is not None}
            if given:
                into[flavor] = {k: _number(v) for k, v in given.items()}
    for key, value in (("nominalQuota", nominal), ("borrowingLimit", borrowing), ("lendingLimit", lending)):
        if value:
            queue[key] = value
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is not None:
        queue["fairSharingWeight"] = weight
    if spec.get("namespaceSelector") == {}:  # every namespace; a non-empty one is taken as fleetgen's default, the placed teams'
        queue["admits"] = "any-namespace"
    return queue


def _amounts(stated: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return {k: Quantity.parse(v).value for k, v in stated.items()}
    except ValueError:
        return None


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, str) and value.isdigit() else value


def _pool_total(pool: dict[str, Any]) -> dict[str, Any] | None:
    """What the rendered queue holds of a pool when it states nothing: the pool at its maximum size."""
    try:
        nodes = int(pool["maxNodes"])
        return {
            "gpu": Quantity.parse(pool["gpusPerNode"]).value * nodes,
            "cpu": Quantity.parse(pool["cpuPerNode"]).value * nodes,
            "memory": Quantity.parse(pool["memoryPerNode"]).value * nodes,
        }
    except (KeyError, ValueError, TypeError):
        return None


def _generalise(name: str, team: str, default: str) -> str:
    """A team's object name as a template: fleetgen's own, else team-<team> becomes {namespace}, <team> {team}."""
    if fill_name(default, team) == name:
        return default
    if f"team-{team}" in name:
        return name.replace(f"team-{team}", "{namespace}")
    parts = name.split("-")
    return "-".join("{team}" if p == team else p for p in parts)


def _naming(views: list[ClusterView], teams: list[str]) -> dict[str, str]:
    """Fleet-wide names that differ from fleetgen's: the template most teams' names fit."""
    defaults = Naming()
    naming: dict[str, str] = {}
    for field_name, slot in NAME_SLOTS.items():
        templates, default = [], getattr(defaults, field_name)
        for team in teams:
            used = _team_names(views, team, slot)
            if used:
                templates.append(_generalise(_mode(used), team, default))
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


def _team(
    out: Imported, t: int, name: str, views: list[ClusterView], clusters: list[dict[str, Any]], naming: dict[str, str], classes: list[str]
) -> dict[str, Any]:
    here: FieldPath = ("teams", t)
    on = [v for v in views if name in v.teams]
    mine = [v.teams[name] for v in on]
    labels = [tv.namespace.body["metadata"].get("labels") or {} for tv in mine]
    team: dict[str, Any] = {"name": name}
    out.notes[here + ("name",)] = f"from {mine[0].namespace.file}"
    groups = [tv.objects["RoleBinding"].body["subjects"][0].get("name") for tv in mine if "RoleBinding" in tv.objects]
    team["group"] = _value(out, here + ("group",), _mode(groups) if groups else None, "unknown", "no RoleBinding names the team's group")
    if groups:
        out.notes[here + ("group",)] = f"from {next(tv.objects['RoleBinding'].file for tv in mine if 'RoleBinding' in tv.objects)}"
    team["costCenter"] = _mode([str(lab.get("cost-center", "")) for lab in labels])
    team["project"] = _mode([str(lab.get("project", "")) for lab in labels])
    # quotas: the most common value of each entry is the default; a cluster that differs overrides it
    hards = [_hard(tv) for tv in mine]
    default: dict[str, Any] = {}
    for key in QUOTA_KEYS:
        values = [Quantity.parse(h[key]) if key in h else None for h in hards]
        common = _mode([v.value if v else None for v in values])
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
        first = (cluster.get("queues") or [{"name": "gpu-cluster-queue"}])[0]["name"]
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
        team["priorityClasses"] = [c for c in classes if c not in _mode([tuple(b) for b in barred])]
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
        if used and fill_name(template, name) != _mode(used):
            names[to_camel(field_name)] = _mode(used)
    if names:
        team["names"] = names
    return team


def _quota(hard: dict[str, Any]) -> dict[str, Any]:
    quota: dict[str, Any] = {}
    for key, value in hard.items():
        if key not in QUOTA_KEYS:
            continue
        *scope, resource = QUOTA_KEYS[key]
        target = quota.setdefault(scope[0], {}) if scope else quota
        target[resource] = int(value) if resource in ("gpu", "pods") and str(value).isdigit() else _number(value)
    return {k: quota[k] for k in ("requests", "limits", "pods") if k in quota}

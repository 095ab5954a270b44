"""From what each cluster builds to, the fleet that renders it: teams, placements, overrides and queues.

A value that differs between clusters becomes the team's default (the most common value) plus
per-cluster overrides; names that differ from fleetgen's become `naming` (the most common name)
plus a team's own `names`. What no object says comes from the cluster's `kube-public/fleet-info`
ConfigMap (or --fact); what nothing says becomes the placeholder TODO(import), which validate
rejects, with a comment saying what to fill in.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from pydantic import ValidationError

from fleetgen.errors import FieldPath
from fleetgen.importer.imported import Given, Imported, mode, number, or_placeholder
from fleetgen.importer.multikueue import dispatching, multikueue_section
from fleetgen.importer.recognise import ClusterView
from fleetgen.importer.teams import naming as team_naming
from fleetgen.importer.teams import team as team_of
from fleetgen.model import API_VERSION, COMPONENTS, Quantity
from fleetgen.model.tenancy import DEFAULT_ROLE, RoleRule

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
        "name": or_placeholder(
            out, ("metadata", "name"), fleet_name, "imported", "fleet name unknown: add `fleet` to fleet-info or pass --name"
        ),
        "costCenter": or_placeholder(
            out,
            ("metadata", "costCenter"),
            given.cost_center or (centres.pop() if len(centres) == 1 else None),
            "cc-0",
            "cost centre of fleet-wide objects unknown: pass --cost-center",
        ),
    }
    doc["gitops"] = {
        "engine": or_placeholder(out, ("gitops", "engine"), given.engine, "flux", "GitOps engine unknown: flux or argocd (--engine)"),
        "repository": or_placeholder(
            out, ("gitops", "repository"), given.repository, "https://example.invalid/fleet", "repository URL unknown (--repository)"
        ),
    }
    doc["versionSets"], version_set_of = _version_sets(out, views, facts)
    doc["priorityClasses"] = _priority_classes(out, views)
    doc["clusters"] = [_cluster(out, c, view, facts[view.name], version_set_of[view.name]) for c, view in enumerate(views)]
    teams = sorted({t for v in views for t in v.teams})
    naming = team_naming(views, teams)
    if naming:
        doc["naming"] = naming
    classes = [p["name"] for p in doc["priorityClasses"]]
    doc["teams"] = [team_of(out, t, name, views, doc["clusters"], naming, classes) for t, name in enumerate(teams)]
    doc["tenancy"] = _tenancy(out, doc["teams"])
    doc["multiKueue"] = multikueue_section(out, views) or {}
    order = ["apiVersion", "kind", "metadata", "gitops", "versionSets", "priorityClasses", "naming", "clusters", "multiKueue", "tenancy"]
    order += ["teams"]
    out.document = {k: doc[k] for k in order if k in doc and doc[k] not in ([], {})}
    return out


def _modelled(rules: list[Any]) -> bool:
    """Whether fleet.yaml can hold these Role rules as they are (no wildcard, no resourceNames, known verbs)."""
    try:
        return [RoleRule.model_validate(rule).body() for rule in rules] == rules
    except (ValidationError, TypeError):
        return False


def _role(out: Imported, teams: list[dict[str, Any]]) -> dict[str, Any]:
    """The Role most teams have becomes the fleet's `tenancy.role` (when it is not fleetgen's); a team whose Role
    adds rules to it keeps them as its own. A Role fleet.yaml cannot hold stays fleetgen's, and verify says so."""
    roles = [team["tenancy"].pop("role") for team in teams]
    present = [r for r in roles if r is not None]
    fleet: dict[str, Any] = {}
    template = [rule.body() for rule in DEFAULT_ROLE]
    if present:
        common = json.loads(mode([json.dumps(r) for r in present]))
        if common != template and _modelled(common):
            fleet["role"] = template = common
            out.notes[("tenancy", "role")] = "the Role most teams have in the repository"
    for team, role in zip(teams, roles, strict=True):
        if role and role != template and role[: len(template)] == template and _modelled(role[len(template) :]):
            team["tenancy"]["role"] = role[len(template) :]
    return fleet


def _tenancy(out: Imported, teams: list[dict[str, Any]]) -> dict[str, Any]:
    """The fleet's tenancy defaults: what most teams have; each team keeps only what differs from them.

    What the repository does not enforce is written as it is, with a comment: import adopts, it does not tighten."""
    fleet: dict[str, Any] = _role(out, teams)
    for field, default in (("podSecurity", "restricted"), ("serviceTypes", [])):
        values = [team["tenancy"][field] for team in teams]
        common = mode([tuple(v) if isinstance(v, list) else v for v in values]) if values else None
        common = list(common) if isinstance(common, tuple) else common
        for team in teams:
            if team["tenancy"][field] == common:
                del team["tenancy"][field]
        if common is not None and common != default:
            fleet[field] = common
    for team in teams:
        if not team["tenancy"]:
            del team["tenancy"]
    if fleet.get("podSecurity") == "privileged":
        out.notes[("tenancy", "podSecurity")] = (
            "no pod-security.kubernetes.io/enforce label in the repository: restricted once its pods meet it"
        )
    if fleet.get("serviceTypes"):
        out.notes[("tenancy", "serviceTypes")] = "the repository's quotas do not hold them at zero"
    return fleet


def _facts(view: ClusterView, given: Given) -> dict[str, str]:
    data = (view.info.body.get("data") or {}) if view.info else {}
    return {**{str(k): str(v) for k, v in data.items()}, **given.facts.get(view.name, {})}


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
                c: or_placeholder(out, ("versionSets", name, c), v, stand_ins[c], f"{c} version unknown: add `{c}` to fleet-info")
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
    cluster["region"] = or_placeholder(out, here + ("region",), facts.get("region"), "unknown", f"region unknown: {hint} or pass --fact")
    cluster["environment"] = or_placeholder(out, here + ("environment",), facts.get("environment"), "dev", f"environment unknown: {hint}")
    if facts.get("purpose"):
        cluster["purpose"] = facts["purpose"]
    cluster["versionSet"] = version_set
    if facts.get("dr-partner"):
        cluster["drPartner"] = facts["dr-partner"]
    dispatched, manager_flavors = dispatching(view)  # MultiKueue's: the multiKueue section's (importer/multikueue.py)
    queues = [b.body for b in view.cluster_wide["ClusterQueue"] if b.body not in dispatched]
    flavors = {
        b.body["metadata"]["name"]: b for b in view.cluster_wide["ResourceFlavor"] if b.body["metadata"]["name"] not in manager_flavors
    }
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
            pool[field_name] = or_placeholder(out, at + (field_name,), value, stand_ins[field_name], why)
        elif value is not None:
            pool[field_name] = value
    if pool.get("gpusPerNode") == 0 and pool.get("gpuModel") == "none":  # a CPU-only pool, as render writes its facts
        del pool["gpuModel"]
    quota = next((_flavor_quota(q, name) for q in queues if _flavor_quota(q, name)), {})
    for resource, field_name in (("cpu", "cpuPerNode"), ("memory", "memoryPerNode")):
        if field_name in pool:
            continue
        per_node = None
        nominal = (quota.get(resource) or {}).get("nominalQuota")
        if nominal is not None and isinstance(pool.get("maxNodes"), int) and pool["maxNodes"] > 0:
            per_node = _quantity_text(Quantity.parse(nominal).value / pool["maxNodes"], resource == "memory")
            out.notes[at + (field_name,)] = "the ClusterQueue's nominal quota / maxNodes"
        pool[field_name] = or_placeholder(out, at + (field_name,), per_node, "1", f"nodepool.{name}.{resource}-per-node unknown: {hint}")
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
            nominal[flavor] = {k: number(v) for k, v in stated.items() if v is not None}
        for limit, into in (("borrowingLimit", borrowing), ("lendingLimit", lending)):
            pairs = (("nvidia.com/gpu", "gpu"), ("cpu", "cpu"), ("memory", "memory"))
            given = {f: resources[r][limit] for r, f in pairs if (resources.get(r) or {}).get(limit) is not None}
            if given:
                into[flavor] = {k: number(v) for k, v in given.items()}
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

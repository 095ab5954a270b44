"""Does the imported fleet render what the repository builds to? The modelled view of both, compared.

The modelled view keeps what fleet.yaml decides: kinds, namespaces and names; a team namespace's
team, project and cost-center labels and its Pod Security level; Role rules; RoleBinding subjects and roleRef; quotas (by
value); NetworkPolicy specs; priority values; flavors' node labels and tolerations; ClusterQueue
quotas, cohort and preemption (Kueue's defaults filled in); LocalQueues' ClusterQueue; the
fleet-info ConfigMap's keys. Labels fleetgen adds and apiVersions (Kueue v1beta1 or v1beta2) are
not part of it. The comparison is objdiff's, so rules, peers and subjects that differ only in
order or grouping (semantics.py) are equal, as they are for check, diff and drift.
"""

from __future__ import annotations

import copy
from typing import Any

from fleetgen.compare.object_diff import ObjectChange, ObjectKey, diff_objects
from fleetgen.importer.addons import install_changes
from fleetgen.importer.build import Built
from fleetgen.render.gitops import entry_point
from fleetgen.render.layout import cluster_objects
from fleetgen.validation.quantity_fields import aligned, quantity_fields

MODELLED_KINDS = (
    "Namespace",
    "Role",
    "RoleBinding",
    "ResourceQuota",
    "NetworkPolicy",
    "PriorityClass",
    "ResourceFlavor",
    "ClusterQueue",
    "LocalQueue",
    "AdmissionCheck",  # MultiKueue's, and the worker's account for the manager (importer/multikueue.py)
    "MultiKueueConfig",
    "MultiKueueCluster",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Secret",
)
FLEET_INFO = ObjectKey("ConfigMap", "kube-public", "fleet-info")


def modelled_view(objects: list[dict[str, Any]]) -> dict[ObjectKey, dict[str, Any]]:
    """Each modelled object (and fleet-info) of one cluster, reduced to what fleet.yaml decides."""
    out = {}
    for body in objects:
        key = _key(body)
        if key.kind in MODELLED_KINDS or key == FLEET_INFO:
            out[key] = _view(body)
    return out


def _key(body: dict[str, Any]) -> ObjectKey:
    meta = body.get("metadata") or {}
    return ObjectKey(body.get("kind", ""), meta.get("namespace", "") or "", meta.get("name", ""))


def _view(body: dict[str, Any]) -> dict[str, Any]:
    kind, spec = body["kind"], copy.deepcopy(body.get("spec") or {})
    labels = (body.get("metadata") or {}).get("labels") or {}
    if kind == "Namespace":  # and the Pod Security level it enforces (privileged without the label)
        view = {k: labels[k] for k in ("team", "project", "cost-center") if k in labels}
        return view | {"podSecurity": labels.get("pod-security.kubernetes.io/enforce", "privileged")}
    if kind == "Role":
        return {"rules": body.get("rules") or []}
    if kind == "RoleBinding":
        return {"subjects": body.get("subjects") or [], "roleRef": body.get("roleRef") or {}}
    if kind == "PriorityClass":
        return {
            "value": body.get("value", 0),
            "globalDefault": bool(body.get("globalDefault", False)),
            "preemptionPolicy": body.get("preemptionPolicy", "PreemptLowerPriority"),
            "description": body.get("description", ""),
        }
    if kind == "ResourceFlavor":
        return {"nodeLabels": spec.get("nodeLabels") or {}, "tolerations": spec.get("tolerations") or []}
    if kind == "ClusterQueue":
        if "cohort" in spec:
            spec["cohortName"] = spec.pop("cohort")
        preemption = spec["preemption"] = dict(spec.get("preemption") or {})  # null, as absent, is Kueue's defaults
        preemption.setdefault("withinClusterQueue", "Never")
        preemption.setdefault("reclaimWithinCohort", "Never")
        return spec
    if kind in ("ClusterRole", "ServiceAccount", "ClusterRoleBinding", "Secret"):
        return {k: v for k, v in body.items() if k not in ("apiVersion", "kind", "metadata")}
    if kind == "ConfigMap":
        return {"data": {str(k): str(v) for k, v in (body.get("data") or {}).items()}}
    if kind == "NetworkPolicy":
        return {"spec": spec}  # where objdiff's canonical form of its rules looks for them
    return spec


def _written_as_rendered(original: list[dict[str, Any]], rendered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The repository's objects with each quantity that equals the render's by value written as the render writes
    it (`262144Mi` for `256Gi`): the views below drop apiVersion, which says which fields are quantities."""
    by_key = {_key(body): body for body in rendered}
    out = []
    for body in original:
        twin = by_key.get(_key(body))
        fields = quantity_fields(str(body.get("apiVersion", "")), str(body.get("kind", "")))
        out.append(body if twin is None else aligned(twin, body, fields))
    return out


def unreproduced(original: list[dict[str, Any]], fleet: Any, index: int) -> list[ObjectChange]:
    """What the imported fleet renders differently on cluster `index` from what the repository builds to, and how
    it installs the add-ons differently (addons.py)."""
    rendered = [m.body for m in cluster_objects(fleet, index)]
    before = modelled_view(_written_as_rendered(original, rendered))
    after = modelled_view(rendered)
    if FLEET_INFO in before and FLEET_INFO in after:  # fleet-info: the keys the repository states
        stated = before[FLEET_INFO]["data"]
        after[FLEET_INFO] = {"data": {k: v for k, v in after[FLEET_INFO]["data"].items() if k in stated}}
    elif FLEET_INFO in after:
        del after[FLEET_INFO]
    add_ons = install_changes([Built(b, "") for b in original], [m.body for m in entry_point(fleet, index)])
    return diff_objects(before, after) + add_ons

"""Live objects as `kubectl get ... -o yaml` shows them on a cluster that Flux 2.x or Argo CD 3.x syncs.

Each rendered object is taken through what happens to it on its way into a real cluster, in order:

- the engine adds its tracking metadata before applying. Flux's kustomize-controller labels every object
  `kustomize.toolkit.fluxcd.io/name` and `kustomize.toolkit.fluxcd.io/namespace` (its Kustomization) and applies
  server-side as field manager `kustomize-controller`. Argo CD 3.x annotates `argocd.argoproj.io/tracking-id:
  <app>:<group>/<kind>:<namespace>/<name>` (annotation tracking, its default since 3.0; the namespace of a
  cluster-scoped object is the Application's destination namespace), adds the `app.kubernetes.io/instance` label
  with annotation+label or label tracking, and applies client-side by default (the
  `kubectl.kubernetes.io/last-applied-configuration` annotation, field manager `argocd-controller`, operation
  Update), or server-side with the ServerSideApply=true sync option (operation Apply);
- the API server fills in defaults: a PriorityClass's preemptionPolicy, a Namespace's `kubernetes` finalizer and
  `kubernetes.io/metadata.name` label, every `default:` of a custom resource's CRD (the vendored tests/crds), and
  drops false booleans (`omitempty`); Kueue's webhook writes quantities back as strings;
- controllers add what they own: Kueue's `kueue.x-k8s.io/resource-in-use` finalizer on ClusterQueues and
  ResourceFlavors, and status everywhere it applies;
- the server's bookkeeping: uid, resourceVersion, generation, creationTimestamp, managedFields (fieldsV1).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml

CRDS = Path(__file__).parent / "crds"
CREATED = "2026-11-01T10:00:00Z"
RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"  # Kueue's finalizer (ResourceInUseFinalizerName)
MAP_LISTS = {"flavors", "resources", "resourceGroups"}  # Kueue's listType=map lists (by name); the rest are atomic


@cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the openAPIV3Schema of the vendored upstream CRDs."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(CRDS.rglob("*.yaml")):
        for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = doc["spec"]["group"], doc["spec"]["names"]["kind"]
            for version in doc["spec"]["versions"]:
                out[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return out


def _defaulted(value: Any, schema: dict[str, Any]) -> Any:
    """What the API server stores for `value` under a structural schema: each absent property with a default gets it."""
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = _defaulted(value[name], sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_defaulted(item, schema["items"]) for item in value]
    return value


def fields_v1(value: Any) -> dict[str, Any]:
    """The fieldsV1 set a manager owns when it applies `value` (maps by field, Kueue's map-lists by name)."""
    out: dict[str, Any] = {}
    if not isinstance(value, dict):
        return out
    for key, item in value.items():
        if isinstance(item, dict) and item:
            out[f"f:{key}"] = {".": {}, **fields_v1(item)} if key in ("labels", "annotations") else fields_v1(item)
        elif isinstance(item, list) and key in MAP_LISTS and all(isinstance(i, dict) and "name" in i for i in item):
            out[f"f:{key}"] = {f'k:{{"name":{json.dumps(i["name"])}}}': {".": {}, **fields_v1(i)} for i in item}
        else:
            out[f"f:{key}"] = {}
    return out


def _quantities_as_strings(value: Any, path: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _quantities_as_strings(v, (*path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_quantities_as_strings(v, path) for v in value]
    quantity = path and (path[-1] in ("nominalQuota", "borrowingLimit", "lendingLimit") or {"capability", "guarantee"} & set(path))
    return str(value) if quantity and isinstance(value, int) and not isinstance(value, bool) else value


def _api_group(obj: dict[str, Any]) -> str:
    return str(obj["apiVersion"]).rpartition("/")[0]


def applied(obj: dict[str, Any], engine: str, *, tracking: str = "annotation", ssa: bool = False) -> dict[str, Any]:
    """The object as the engine sends it: its tracking metadata added (engine: flux or argocd)."""
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    if engine == "flux":
        meta["labels"] |= {"kustomize.toolkit.fluxcd.io/name": "contoso-ai", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
        return out
    app, namespace = "contoso-ai-dev-eastus", meta.get("namespace", "default")  # the Application's destination namespace
    if tracking in ("annotation", "annotation+label"):
        tracking_id = f"{app}:{_api_group(out)}/{out['kind']}:{namespace}/{meta['name']}"
        meta["annotations"] = {**meta.get("annotations", {}), "argocd.argoproj.io/tracking-id": tracking_id}
    if tracking in ("label", "annotation+label"):
        meta["labels"]["app.kubernetes.io/instance"] = app
    if not ssa:
        last = json.dumps(out, separators=(",", ":"), sort_keys=True)
        meta["annotations"] = {**meta.get("annotations", {}), "kubectl.kubernetes.io/last-applied-configuration": last + "\n"}
    return out


def stored(sent: dict[str, Any], engine: str, number: int, *, ssa: bool = True) -> dict[str, Any]:
    """What the cluster shows for an object the engine sent: defaults, controllers' additions, bookkeeping."""
    obj = copy.deepcopy(sent)
    meta, kind = obj["metadata"], obj["kind"]
    schema = crd_schemas().get((obj["apiVersion"], kind))
    if schema is not None:
        obj = _defaulted(obj, schema)
        meta = obj["metadata"]
    if kind == "Namespace":
        meta["labels"]["kubernetes.io/metadata.name"] = meta["name"]
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
    if kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        if obj.get("globalDefault") is False:
            del obj["globalDefault"]  # omitempty
    if kind == "ResourceQuota":
        hard = {k: str(v) for k, v in obj["spec"]["hard"].items()}
        obj["spec"]["hard"] = hard
        obj["status"] = {"hard": dict(hard), "used": dict.fromkeys(hard, "0")}
    if kind in ("ClusterQueue", "ResourceFlavor"):
        meta["finalizers"] = [RESOURCE_IN_USE]
    if kind in ("ClusterQueue", "Cohort", "Queue"):
        obj["spec"] = _quantities_as_strings(obj["spec"], ())  # Kueue's and Volcano's webhooks write Quantities back as strings
    if kind == "Queue":
        obj["status"] = {"state": "Open", "allocated": {"cpu": "0", "memory": "0"}}
    if kind == "ClusterQueue":
        obj["status"] = {
            "admittedWorkloads": 0,
            "pendingWorkloads": 0,
            "reservingWorkloads": 0,
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads"}],
        }
    if kind == "LocalQueue":
        obj["status"] = {"admittedWorkloads": 0, "pendingWorkloads": 0, "reservingWorkloads": 0}
    operation = "Apply" if ssa or engine == "flux" else "Update"
    manager = "kustomize-controller" if engine == "flux" else "argocd-controller"
    meta.update(uid=f"6f1c0d6e-0000-4000-8000-{number:012d}", resourceVersion=str(48_000 + number), creationTimestamp=CREATED)
    if schema is not None or kind in ("NetworkPolicy", "PriorityClass"):
        meta["generation"] = 1
    meta["managedFields"] = [
        {
            "apiVersion": obj["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1({k: v for k, v in sent.items() if k not in ("apiVersion", "kind")}),
            "manager": manager,
            "operation": operation,
            "time": CREATED,
        }
    ]
    if kind in ("ClusterQueue", "ResourceFlavor"):
        meta["managedFields"].append(
            {
                "apiVersion": obj["apiVersion"],
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, f'v:"{RESOURCE_IN_USE}"': {}}}},
                "manager": "kueue",
                "operation": "Update",
                "time": CREATED,
            }
        )
    if "status" in obj and kind != "Namespace":
        meta["managedFields"].append(
            {
                "apiVersion": obj["apiVersion"],
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": fields_v1(obj["status"])},
                "manager": "kueue" if schema is not None else "kube-controller-manager",
                "operation": "Update",
                "subresource": "status",
                "time": CREATED,
            }
        )
    return obj


def cluster_dump(objects: list[dict[str, Any]], engine: str, *, tracking: str = "annotation", ssa: bool = False) -> dict[str, Any]:
    """`kubectl get <every rendered kind> -A -o yaml` of a cluster the engine synced from these rendered objects."""
    items = [stored(applied(o, engine, tracking=tracking, ssa=ssa), engine, n, ssa=ssa) for n, o in enumerate(objects)]
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}

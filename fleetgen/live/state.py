"""Live cluster state: reading it, stripping what the server adds, and comparing with the render.

Live objects come from `kubectl get ... -o yaml` output (a List or many documents), or, with
--context, from kubectl itself. That second path is a thin adapter: no Kubernetes API server runs
where fleetgen is tested, so everything after "the YAML kubectl printed" is the tested code.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from fleetgen.errors import InputError
from fleetgen.live.dumps import live_objects
from fleetgen.live.dumps import read_live as read_live  # the entry point for dumps given as files
from fleetgen.live.kubectl import kubectl
from fleetgen.model import Quantity
from fleetgen.render.manifest import MANAGED_BY
from fleetgen.review.object_diff import ObjectChange, ObjectKey, diff_objects

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


def live_from_context(context: str) -> list[dict[str, Any]]:
    """The live objects through the Kubernetes API, via kubectl and the user's kubeconfig."""
    command = [kubectl("--context"), "--context", context, "get", ",".join(RENDERED_RESOURCES), "--all-namespaces", "-o", "yaml"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"kubectl --context {context}: {exc}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"kubectl --context {context} failed: {first}")
    return live_objects(done.stdout.encode("utf-8", "surrogateescape"), f"kubectl --context {context}")


def key_of(obj: dict[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return ObjectKey(str(obj["kind"]), str(meta.get("namespace", "") or ""), str(meta.get("name", "")))


def normalize(live: dict[str, Any], rendered: dict[str, Any] | None) -> dict[str, Any]:
    """`live` without what the server sets: status, bookkeeping metadata, and defaults fleetgen left out.

    Only the maps on the way to what is dropped are copied (a deep copy of every object was most of
    drift's time); the result shares the rest with `live`, so neither may be changed afterwards.
    """
    obj = {k: v for k, v in live.items() if k != "status"}
    meta = {k: v for k, v in (live.get("metadata") or {}).items() if k not in SERVER_METADATA}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in SERVER_ANNOTATIONS}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    rendered_labels = ((rendered or {}).get("metadata") or {}).get("labels") or {}
    dropped = [n for n in SERVER_LABELS.get(obj["kind"], ()) if rendered is None or n not in rendered_labels]
    if dropped and meta.get("labels"):
        meta["labels"] = {k: v for k, v in meta["labels"].items() if k not in dropped}
    obj["metadata"] = meta
    for (kind, path), default in DEFAULTS.items():
        if kind == obj["kind"] and _get(obj, path) == default and _get(rendered or {}, path) is None:
            obj = _without(obj, path)
    return obj


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _without(obj: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """A copy of `obj` without the value at `path`, and without the maps that leaves empty; `obj` is not changed."""
    out = dict(obj)
    head, rest = path[0], path[1:]
    child = out.get(head)
    if not rest:
        out.pop(head, None)
    elif isinstance(child, dict):
        child = _without(child, rest)
        if child:
            out[head] = child
        else:
            out.pop(head)
    return out


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

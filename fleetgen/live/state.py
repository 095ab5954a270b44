"""Live cluster state: reading it, seeing it as far as fleetgen manages it (managed.py), comparing with the render.

Live objects come from `kubectl get ... -o yaml` output (a List or many documents), or, with
--context, from kubectl itself. That second path is a thin adapter: no Kubernetes API server runs
where fleetgen is tested, so everything after "the YAML kubectl printed" is the tested code.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from fleetgen.compare.object_diff import ObjectChange, ObjectKey, diff_objects
from fleetgen.errors import InputError
from fleetgen.live.dumps import live_objects
from fleetgen.live.dumps import read_live as read_live  # the entry point for dumps given as files
from fleetgen.live.kubectl import kubectl, last_line
from fleetgen.live.managed import managed_view
from fleetgen.live.node_checks import NodeEvidence
from fleetgen.live.shapes import live_quotas
from fleetgen.model import Quantity
from fleetgen.render.manifest import MANAGED_BY
from fleetgen.source.collector import collector_paused


def resources_of(rendered: dict[ObjectKey, dict[str, Any]]) -> list[str]:
    """`kind.group` of every rendered kind (`clusterqueue.kueue.x-k8s.io`, `namespace`), which kubectl resolves, and
    the Nodes, the evidence of what the cluster runs."""
    out = {"node"}
    for body in rendered.values():
        group = str(body.get("apiVersion", "")).rpartition("/")[0]
        out.add(f"{body['kind'].lower()}.{group}" if group else body["kind"].lower())
    return sorted(out)


@dataclass(frozen=True)
class QuotaImpact:
    """A quota the render sets below what the namespace already uses: nothing is evicted, new pods are refused."""

    namespace: str
    resource: str
    used: str
    hard: str  # what the render sets
    live: str | None = None  # what the cluster has now (its spec.hard), when the dump says


@dataclass(frozen=True)
class Drift:
    missing: tuple[ObjectChange, ...]
    extra: tuple[ObjectChange, ...]
    changed: tuple[ObjectChange, ...]
    impacts: tuple[QuotaImpact, ...]
    nodes: NodeEvidence | None = None  # when the live objects hold the cluster's Nodes
    against: str = ""  # what the live objects were compared with: "the tree committed at 1a2b3c4d5e6f (...)"
    stale: str = ""  # one line when fleet.yaml (or this fleetgen) renders that tree differently: not drift
    unread: tuple[tuple[str, str], ...] = ()  # (kind, why) of kinds the cluster would not list: their objects are not judged

    @property
    def found(self) -> bool:
        return bool(self.missing or self.extra or self.changed or self.unread) or (self.nodes is not None and self.nodes.found)


def live_from_context(context: str, resources: list[str]) -> list[dict[str, Any]]:
    """The live objects of these kinds (resources_of) through the Kubernetes API, via kubectl and the user's kubeconfig."""
    command = [kubectl("--context"), "--context", context, "get", ",".join(resources), "--all-namespaces", "-o", "yaml"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"kubectl --context {context}: {exc}") from None
    if done.returncode != 0:
        raise InputError(f"kubectl --context {context} failed: {last_line(done.stderr)}")
    return live_objects(done.stdout, f"kubectl --context {context}")


def key_of(obj: dict[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return ObjectKey(str(obj["kind"]), str(meta.get("namespace", "") or ""), str(meta.get("name", "")))


def quota_impacts(rendered: dict[ObjectKey, dict[str, Any]], live: list[dict[str, Any]]) -> list[QuotaImpact]:
    """Quotas the render sets below what their namespace uses; `live` as live_objects read it (its shapes checked)."""
    out = []
    for quota in live_quotas(live):
        key = ObjectKey("ResourceQuota", quota.namespace, quota.name)
        if key not in rendered:
            continue
        for resource, hard in rendered[key].get("spec", {}).get("hard", {}).items():
            used = quota.used.get(resource)
            if used is not None and Quantity.parse(hard) < used:
                now = quota.hard.get(resource)
                out.append(QuotaImpact(key[1], resource, used.text, str(hard), None if now is None else now.text))
    return out


def compare(rendered: dict[ObjectKey, dict[str, Any]], live: list[dict[str, Any]]) -> Drift:
    with collector_paused():  # a dump holds millions of values: the collector's passes would walk them all, often
        live_by_key = {key_of(obj): obj for obj in live}
        stored = store_targets(rendered)
        owned = {k: o for k, o in live_by_key.items() if _managed(o) and k not in stored}
        present = {k: managed_view(live_by_key[k], rendered[k]) for k in rendered if k in live_by_key}
        return Drift(
            missing=tuple(ObjectChange(*k, state="missing") for k in sorted(rendered.keys() - live_by_key.keys())),
            extra=tuple(ObjectChange(*k, state="extra") for k in sorted(owned.keys() - rendered.keys())),
            changed=tuple(diff_objects({k: rendered[k] for k in present}, present)),
            impacts=tuple(quota_impacts(rendered, live)),
        )


def store_targets(rendered: dict[ObjectKey, dict[str, Any]]) -> set[ObjectKey]:
    """The Secrets the rendered ExternalSecrets write: their data is the store's, never drift, whatever labels they carry."""
    out = set()
    for (kind, namespace, name), body in rendered.items():
        target = (body.get("spec") or {}).get("target") if kind == "ExternalSecret" else None
        if isinstance(target, dict):
            out.add(ObjectKey("Secret", namespace, str(target.get("name") or name)))
    return out


def _managed(obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in MANAGED_BY.items())

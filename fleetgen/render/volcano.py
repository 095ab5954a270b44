"""Volcano on a cluster that chooses it as its gang scheduler: one Volcano Queue per team placed there."""

from __future__ import annotations

from typing import Any

from fleetgen.errors import FieldPath
from fleetgen.model import GPU_RESOURCE, Cluster, Fleet
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, k8s_object, quantity_value, team_labels
from fleetgen.render.provenance import NOWHERE, Recorder

VOLCANO_API = "scheduling.volcano.sh/v1beta1"

# What a team may do with Volcano in its own namespace (added to its Role on Volcano clusters only).
VOLCANO_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get", "list", "watch", "create", "delete"]},
    {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": ["get", "list", "watch"]},
)


def queue_name(team_name: str) -> str:
    return f"team-{team_name}"


def volcano_queues(fleet: Fleet, cluster: Cluster, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    """Guarantee: what volcano.guarantees reserves for the team (none by default); capability: its quota on the cluster, limits
    where set (GPUs: requests, the only enforced ones)."""
    if cluster.volcano is None:
        return []
    out = []
    for t, team in fleet.placements[cluster.name]:
        quota = team.quota_on(cluster.name)
        reserved = cluster.volcano.guarantees.get(team.name)
        guarantee: dict[str, int | str] = {}
        capability: dict[str, int | str] = {}
        for resource in ("cpu", "memory"):
            request, limit = getattr(quota.requests, resource), getattr(quota.limits, resource)
            if reserved is not None and getattr(reserved, resource) is not None:
                guarantee[resource] = quantity_value(getattr(reserved, resource))
            if (limit or request) is not None:
                capability[resource] = quantity_value(limit or request)
        if reserved is not None and reserved.gpu is not None:
            guarantee[GPU_RESOURCE] = reserved.gpu
        if quota.requests.gpu is not None:
            capability[GPU_RESOURCE] = quota.requests.gpu
        spec: dict[str, Any] = {"weight": cluster.volcano.weight_of(team.name), "reclaimable": cluster.volcano.reclaimable}
        if capability:
            spec["capability"] = capability
        if guarantee:
            spec["guarantee"] = {"resource": guarantee}
        source = ("teams", t, "clusters", cluster.name) if team.clusters.get(cluster.name) else ("teams", t, "quota")
        out.append(Manifest(k8s_object(VOLCANO_API, "Queue", queue_name(team.name), team_labels(fleet, team), spec=spec), source))
        if why.on:
            body, team_at = out[-1].body, ("teams", t)
            why.meta(body, prov.derived("team-<name>", team_at + ("name",)), prov.team_labels(team_at))
            weight = at + ("volcano", "weights", team.name) if team.name in cluster.volcano.weights else prov.default("weight 1")
            why.set(body, ("spec", "weight"), weight)
            why.set(body, ("spec", "reclaimable"), at + ("volcano", "reclaimable"))
            for resource, field in (("cpu", "cpu"), ("memory", "memory"), (GPU_RESOURCE, "gpu")):
                request = prov.quota_path(team, team_at, cluster.name, f"requests.{field}")
                limit = prov.quota_path(team, team_at, cluster.name, f"limits.{field}")
                has_limit = field != "gpu" and getattr(quota.limits, field) is not None
                why.set(body, ("spec", "guarantee", "resource", resource), at + ("volcano", "guarantees", team.name, field))
                why.set(body, ("spec", "capability", resource), limit if has_limit else request)
    return out

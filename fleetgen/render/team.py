"""A team's objects in one cluster: namespace, RBAC, quotas, network policy and Kueue LocalQueue."""

from __future__ import annotations

from typing import Any

from fleetgen.errors import FieldPath
from fleetgen.model import Fleet, Quota, Team
from fleetgen.render.manifest import Manifest, k8s_object, team_labels

ROLE = "gpu-workload-role"
QUOTA = "gpu-quota"
PRIORITY_QUOTA = "disallowed-priority-classes"
NETWORK_POLICY = "deny-other-namespaces"

# The seed's namespace-scoped Role: workloads in the team's own namespace, no wildcards.
ROLE_RULES: tuple[dict[str, Any], ...] = (
    {
        "apiGroups": [""],
        "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
        "verbs": ["get", "list", "create", "delete", "watch"],
    },
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "create", "delete"]},
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "create", "update", "delete"]},
)


def local_queue_name(team: Team) -> str:
    return f"team-{team.name}-queue"


def namespace(fleet: Fleet, team: Team, at: FieldPath) -> list[Manifest]:
    return [Manifest(k8s_object("v1", "Namespace", team.namespace, team_labels(fleet, team)), at + ("name",))]


def rbac(fleet: Fleet, team: Team, at: FieldPath, extra_rules: tuple[dict[str, Any], ...] = ()) -> list[Manifest]:
    """The team's Role and RoleBinding; `extra_rules` adds what the cluster's own schedulers need (Volcano jobs)."""
    labels, ns = team_labels(fleet, team), team.namespace
    rules = [dict(r) for r in ROLE_RULES + extra_rules]
    role = k8s_object("rbac.authorization.k8s.io/v1", "Role", ROLE, labels, namespace=ns, rules=rules)
    binding = k8s_object(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        ROLE,
        labels,
        namespace=ns,
        subjects=[{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": team.group}],
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE},
    )
    return [Manifest(role, at + ("name",)), Manifest(binding, at + ("group",))]


def quota_hard(quota: Quota) -> dict[str, str]:
    """ResourceQuota `hard` in the seed's order; only the values the fleet sets."""
    hard: dict[str, str] = {}
    for scope, resources in (("requests", quota.requests), ("limits", quota.limits)):
        for field, resource in (("cpu", "cpu"), ("memory", "memory"), ("gpu", "nvidia.com/gpu")):
            value = getattr(resources, field)
            if value is not None:
                hard[f"{scope}.{resource}"] = str(value)
    if quota.pods is not None:
        hard["pods"] = str(quota.pods)
    return hard


def resource_quotas(fleet: Fleet, team: Team, at: FieldPath, quota: Quota, quota_at: FieldPath) -> list[Manifest]:
    labels, ns = team_labels(fleet, team), team.namespace
    hard = {"hard": quota_hard(quota)}
    out = [Manifest(k8s_object("v1", "ResourceQuota", QUOTA, labels, namespace=ns, spec=hard), quota_at)]
    if team.priority_classes is not None:
        # Pods of a class the team may not use are refused by a zero quota scoped to those classes.
        barred = [p.name for p in fleet.priority_classes if p.name not in team.priority_classes]
        if barred:
            spec = {
                "hard": {"pods": "0"},
                "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": barred}]},
            }
            out.append(
                Manifest(
                    k8s_object("v1", "ResourceQuota", PRIORITY_QUOTA, labels, namespace=ns, spec=spec),
                    at + ("priorityClasses",),
                )
            )
    return out


def network_policy(fleet: Fleet, team: Team, at: FieldPath) -> list[Manifest]:
    peers: list[dict[str, Any]] = [{"podSelector": {}}]
    peers += [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": other}}} for other in team.allowed_ingress_namespaces]
    spec = {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": peers}]}
    body = k8s_object(
        "networking.k8s.io/v1", "NetworkPolicy", NETWORK_POLICY, team_labels(fleet, team), namespace=team.namespace, spec=spec
    )
    return [Manifest(body, at + ("allowedIngressNamespaces",))]


def local_queue(fleet: Fleet, team: Team, cluster_queue: str, at: FieldPath) -> list[Manifest]:
    body = k8s_object(
        "kueue.x-k8s.io/v1beta2",
        "LocalQueue",
        local_queue_name(team),
        team_labels(fleet, team),
        namespace=team.namespace,
        spec={"clusterQueue": cluster_queue},
    )
    return [Manifest(body, at)]

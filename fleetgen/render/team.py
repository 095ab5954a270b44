"""A team's objects in one cluster: namespace, RBAC, quotas, network policy and Kueue LocalQueue."""

from __future__ import annotations

from typing import Any

from fleetgen.compat.partitioning import describe, pool_yield
from fleetgen.errors import FieldPath
from fleetgen.model import Fleet, Quota, Team
from fleetgen.model.partitioning import slice_resource
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, k8s_object, team_labels
from fleetgen.render.provenance import NOWHERE, Given, Recorder

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


def namespace(fleet: Fleet, team: Team, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    body = k8s_object("v1", "Namespace", team.namespace, team_labels(fleet, team))
    if why.on:
        why.meta(body, in_namespace(at), prov.team_labels(at))
    return [Manifest(body, at + ("name",))]


def in_namespace(at: FieldPath) -> Given:
    """The origin of a team's namespace name."""
    return prov.derived("team-<name>", at + ("name",))


def rbac(
    fleet: Fleet, team: Team, at: FieldPath, extra_rules: tuple[dict[str, Any], ...] = (), why: Recorder = NOWHERE, extra_at: FieldPath = ()
) -> list[Manifest]:
    """The team's Role and RoleBinding; `extra_rules` adds what the cluster's own schedulers need (Volcano jobs)."""
    labels, ns, names = team_labels(fleet, team), team.namespace, fleet.object_names(team)
    rules = [dict(r) for r in ROLE_RULES + extra_rules]
    role = k8s_object("rbac.authorization.k8s.io/v1", "Role", names.role, labels, namespace=ns, rules=rules)
    binding = k8s_object(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        names.role_binding,
        labels,
        namespace=ns,
        subjects=[{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": team.group}],
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.role},
    )
    if why.on:
        why.meta(role, prov.object_name(fleet, at, "role"), prov.team_labels(at), in_namespace(at))
        why.meta(binding, prov.object_name(fleet, at, "role_binding"), prov.team_labels(at), in_namespace(at))
        why.set(role, ("rules",), prov.default("the seed's Role: workloads in the team's own namespace"))
        for r in range(len(ROLE_RULES), len(rules)):
            why.set(role, ("rules", r), prov.derived("what the cluster's scheduler needs (Volcano jobs)", extra_at))
        why.set(binding, ("subjects",), prov.default("the team's group, bound to its Role"))
        why.set(binding, ("subjects", 0, "name"), at + ("group",))
        why.set(binding, ("roleRef",), prov.default("the team's Role"))
        why.set(binding, ("roleRef", "name"), prov.object_name(fleet, at, "role"))
    return [Manifest(role, at + ("name",)), Manifest(binding, at + ("group",))]


def quota_hard(quota: Quota) -> dict[str, str]:
    """ResourceQuota `hard` in the seed's order; only the values the fleet sets."""
    hard: dict[str, str] = {}
    for scope, resources in (("requests", quota.requests), ("limits", quota.limits)):
        for field, resource in (("cpu", "cpu"), ("memory", "memory"), ("gpu", "nvidia.com/gpu")):
            value = getattr(resources, field)
            if value is not None:
                hard[f"{scope}.{resource}"] = str(value)
        if scope == "requests":  # partitioned GPUs: MIG slices, renamed time-sliced GPUs
            hard |= {f"requests.{slice_resource(name)}": str(count) for name, count in sorted(quota.requests.slices.items())}
    if quota.pods is not None:
        hard["pods"] = str(quota.pods)
    return hard


def resource_quotas(
    fleet: Fleet, team: Team, at: FieldPath, quota: Quota, quota_at: FieldPath, why: Recorder = NOWHERE, cluster_at: FieldPath = ()
) -> list[Manifest]:
    labels, ns, names = team_labels(fleet, team), team.namespace, fleet.object_names(team)
    hard = {"hard": quota_hard(quota)}
    out = [Manifest(k8s_object("v1", "ResourceQuota", names.resource_quota, labels, namespace=ns, spec=hard), quota_at)]
    if why.on:
        body, cluster = out[0].body, str(quota_at[-1]) if quota_at[-2:-1] == ("clusters",) else None
        why.meta(body, prov.object_name(fleet, at, "resource_quota"), prov.team_labels(at), in_namespace(at))
        for key in hard["hard"]:
            scope, _, resource = key.partition(".")
            field = f"{scope}.{resource.removeprefix('nvidia.com/')}" if resource else scope
            why.set(body, ("spec", "hard", key), prov.quota_path(team, at, cluster, field))
        for name in quota.requests.slices:
            _record_slice(fleet, body, at, team, cluster, name, cluster_at, why)
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
                    k8s_object("v1", "ResourceQuota", names.priority_class_quota, labels, namespace=ns, spec=spec),
                    at + ("priorityClasses",),
                )
            )
            if why.on:
                body = out[-1].body
                why.meta(body, prov.object_name(fleet, at, "priority_class_quota"), prov.team_labels(at), in_namespace(at))
                why.set(body, ("spec",), prov.default("no pods of a barred priority class"))
                barred_from = prov.derived(
                    "the fleet's priority classes the team may not use", ("priorityClasses",), at + ("priorityClasses",)
                )
                why.set(body, ("spec", "scopeSelector", "matchExpressions", 0, "values"), barred_from)
    return out


def _record_slice(
    fleet: Fleet, body: dict[str, Any], at: FieldPath, team: Team, cluster: str | None, name: str, cluster_at: FieldPath, why: Recorder
) -> None:
    """A slice quota names the team's value and, on a cluster, the partitioning line of each pool that yields the slice."""
    given = prov.quota_path(team, at, cluster, f"requests.{name}")
    if len(cluster_at) != 2:
        return
    index = int(cluster_at[1])
    pools = [
        (cluster_at + ("nodePools", p, "partitioning"), pool)
        for p, pool in enumerate(fleet.clusters[index].node_pools)
        if slice_resource(name) in pool_yield(pool)
    ]
    note = "the team's quota of a slice its pools yield: " + "; ".join(f"{pool.name} {describe(pool)}" for _, pool in pools)
    why.set(body, ("spec", "hard", f"requests.{slice_resource(name)}"), prov.derived(note, given, *(path for path, _ in pools)))


def network_policy(fleet: Fleet, team: Team, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    peers: list[dict[str, Any]] = [{"podSelector": {}}]
    peers += [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": other}}} for other in team.allowed_ingress_namespaces]
    spec = {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": peers}]}
    body = k8s_object(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        fleet.object_names(team).network_policy,
        team_labels(fleet, team),
        namespace=team.namespace,
        spec=spec,
    )
    if why.on:
        why.meta(body, prov.object_name(fleet, at, "network_policy"), prov.team_labels(at), in_namespace(at))
        why.set(body, ("spec",), prov.default("the seed's policy: only the team's own pods may reach them"))
        for n in range(len(team.allowed_ingress_namespaces)):
            why.set(body, ("spec", "ingress", 0, "from", n + 1, "namespaceSelector", "matchLabels"), at + ("allowedIngressNamespaces", n))
    return [Manifest(body, at + ("allowedIngressNamespaces",))]


def local_queue(
    fleet: Fleet, team: Team, cluster_queue: str, at: FieldPath, why: Recorder = NOWHERE, queue_at: Given = ()
) -> list[Manifest]:
    body = k8s_object(
        "kueue.x-k8s.io/v1beta2",
        "LocalQueue",
        fleet.object_names(team).local_queue,
        team_labels(fleet, team),
        namespace=team.namespace,
        spec={"clusterQueue": cluster_queue},
    )
    if why.on:
        team_at = at[:2]
        why.meta(body, prov.object_name(fleet, team_at, "local_queue"), prov.team_labels(team_at), in_namespace(team_at))
        why.set(body, ("spec", "clusterQueue"), queue_at)
    return [Manifest(body, at)]

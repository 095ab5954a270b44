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

PSA = "pod-security.kubernetes.io/"  # Pod Security Admission's namespace labels
# What keeps a team's namespace, and the volumes and checkpoints in it, when fleet.yaml drops the team:
# each engine's own "never delete this" annotation (docs/reference/team.md, "When a team leaves").
KEEP = {
    "flux": {"kustomize.toolkit.fluxcd.io/prune": "disabled"},
    "argocd": {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"},
}


def pod_security_labels(level: str) -> dict[str, str]:
    """The level Pod Security Admission enforces; below restricted, warnings and audit entries say what restricted would refuse."""
    labels = {PSA + "enforce": level}
    if level != "restricted":
        labels |= {PSA + "warn": "restricted", PSA + "audit": "restricted"}
    return labels


def namespace(fleet: Fleet, team: Team, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    labels = team_labels(fleet, team) | pod_security_labels(fleet.access(team).pod_security)
    body = k8s_object("v1", "Namespace", team.namespace, labels, annotations=KEEP[fleet.gitops.engine])
    if why.on:
        kept = prov.derived("the engine's prune protection: a removed team's namespace and its data stay", ("gitops", "engine"))
        why.set(body, ("metadata", "annotations"), kept)
        why.meta(body, in_namespace(at), prov.team_labels(at))
        why.set(body, ("metadata", "labels", PSA + "enforce"), prov.tenancy(fleet, at, "podSecurity"))
        for mode in ("warn", "audit"):
            why.set(body, ("metadata", "labels", PSA + mode), prov.default("what the restricted level would refuse, shown, not enforced"))
    return [Manifest(body, at + ("name",))]


def in_namespace(at: FieldPath) -> Given:
    """The origin of a team's namespace name."""
    return prov.derived("team-<name>", at + ("name",))


def rbac(
    fleet: Fleet, team: Team, at: FieldPath, extra_rules: tuple[dict[str, Any], ...] = (), why: Recorder = NOWHERE, extra_at: FieldPath = ()
) -> list[Manifest]:
    """The team's Role and RoleBinding; `extra_rules` adds what the cluster's own schedulers need (Volcano jobs)."""
    labels, ns, names = team_labels(fleet, team), team.namespace, fleet.object_names(team)
    access = fleet.access(team)
    rules = [r.body() for r in access.role] + [dict(r) for r in extra_rules]
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
        for r, (given, mirror) in enumerate(prov.role_rules(fleet, at)):
            why.set(role, ("rules", r), given, mirror=mirror)
        for r in range(len(access.role), len(rules)):
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
    hard |= {storage_key(name): str(size) for name, size in sorted(quota.storage.items())}
    if quota.persistent_volume_claims is not None:
        hard["persistentvolumeclaims"] = str(quota.persistent_volume_claims)
    return hard


def storage_key(storage_class: str) -> str:
    """ResourceQuota's name for the storage that claims of one class request."""
    return f"{storage_class}.storageclass.storage.k8s.io/requests.storage"


def resource_quotas(
    fleet: Fleet, team: Team, at: FieldPath, quota: Quota, quota_at: FieldPath, why: Recorder = NOWHERE, cluster_at: FieldPath = ()
) -> list[Manifest]:
    labels, ns, names = team_labels(fleet, team), team.namespace, fleet.object_names(team)
    access = fleet.access(team)
    hard = {"hard": quota_hard(quota) | access.barred_services}
    out = [Manifest(k8s_object("v1", "ResourceQuota", names.resource_quota, labels, namespace=ns, spec=hard), quota_at)]
    if why.on:
        body, cluster = out[0].body, str(quota_at[-1]) if quota_at[-2:-1] == ("clusters",) else None
        why.meta(body, prov.object_name(fleet, at, "resource_quota"), prov.team_labels(at), in_namespace(at))
        for key in hard["hard"]:
            if key in access.barred_services:
                no_services = prov.derived("none of this Service type", prov.tenancy(fleet, at, "serviceTypes"))
                why.set(body, ("spec", "hard", key), no_services)
                continue
            if key.endswith(".storageclass.storage.k8s.io/requests.storage") or key == "persistentvolumeclaims":
                why.set(body, ("spec", "hard", key), _storage_source(team, at, cluster, key))
                continue
            scope, _, resource = key.partition(".")
            field = f"{scope}.{resource.removeprefix('nvidia.com/')}" if resource else scope
            why.set(body, ("spec", "hard", key), prov.quota_path(team, at, cluster, field))
        for name in quota.requests.slices:
            _record_slice(fleet, body, at, team, cluster, name, cluster_at, why)
    # Pods of a class the team may not use are refused by a zero quota scoped to those classes.
    barred = [p.name for p in fleet.priority_classes if p.name not in access.priority_classes]
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
                "the fleet's priority classes the team may not use", ("priorityClasses",), prov.class_list(fleet, at)
            )
            why.set(body, ("spec", "scopeSelector", "matchExpressions", 0, "values"), barred_from)
    return out


def _storage_source(team: Team, at: FieldPath, cluster: str | None, key: str) -> FieldPath:
    """Where a storage quota value comes from: the team's placement on `cluster` when it sets it, else its default quota."""
    placement = team.clusters.get(cluster) if cluster is not None else None
    if key == "persistentvolumeclaims":
        own = placement is not None and placement.persistent_volume_claims is not None
        return (*at, "clusters", str(cluster), "persistentVolumeClaims") if own else (*at, "quota", "persistentVolumeClaims")
    name = key.split(".storageclass.", 1)[0]
    own = placement is not None and name in placement.storage
    return (*at, "clusters", str(cluster), "storage", name) if own else (*at, "quota", "storage", name)


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

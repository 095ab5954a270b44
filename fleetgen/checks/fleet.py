"""Checks that span the model: names, cross-references, capacity. Each yields findings by path.

Paths use fleet.yaml's own spelling (camelCase, list indices) so the loader can point at them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from fleetgen.checks.capacity import CAPACITY_CHECKS, pool_capacity
from fleetgen.checks.cloud_quota import CLOUD_QUOTA_CHECKS
from fleetgen.checks.entitlement import ENTITLEMENT_CHECKS
from fleetgen.checks.grants import GRANT_CHECKS
from fleetgen.checks.multikueue import MULTIKUEUE_CHECKS
from fleetgen.checks.onboarding import ONBOARDING_CHECKS
from fleetgen.checks.partitioning import PARTITIONING_CHECKS
from fleetgen.checks.placement import PLACEMENT_CHECKS
from fleetgen.checks.platform import PLATFORM_CHECKS
from fleetgen.checks.sharing import SHARING_CHECKS
from fleetgen.checks.slo import SLO_CHECKS
from fleetgen.checks.tenancy import TENANCY_CHECKS
from fleetgen.compat import Facts, check_compatibility, check_fleet_policy
from fleetgen.compat.partitioning import per_gpu
from fleetgen.compat.pool_drivers import check_pool_drivers
from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import GPU_RESOURCE, Fleet, NodePool, Quota
from fleetgen.model.multikueue import dispatching_queues
from fleetgen.model.sharing import NOTEBOOKS, TRAINING
from fleetgen.model.types import LARGEST_QUANTITY

Check = Callable[[Fleet], Iterator[Finding]]


def check_references(fleet: Fleet) -> Iterator[Finding]:
    clusters = {c.name: c for c in fleet.clusters}
    classes = {p.name for p in fleet.priority_classes}
    for i, cluster in enumerate(fleet.clusters):
        here: FieldPath = ("clusters", i)
        if cluster.version_set not in fleet.version_sets:
            # fix: Name a version set from versionSets
            yield Finding(
                here + ("versionSet",),
                f"unknown version set {cluster.version_set!r}{_known(fleet.version_sets)}",
            )
        partner = cluster.dr_partner
        if partner is not None:
            if partner == cluster.name:
                # fix: Name another production cluster as drPartner, or drop it
                yield Finding(here + ("drPartner",), "a cluster cannot be its own DR partner")
            elif partner not in clusters:
                # fix: Name a cluster fleet.yaml declares
                yield Finding(here + ("drPartner",), f"unknown cluster {partner!r}{_known(clusters)}")
            elif clusters[partner].dr_partner != cluster.name:
                # fix: Set drPartner on both clusters of the pair, each naming the other
                yield Finding(
                    here + ("drPartner",),
                    f"{partner!r} does not name {cluster.name!r} as its drPartner; DR pairs name each other",
                )
        pools = {p.name for p in cluster.node_pools}
        for q, queue in enumerate(cluster.queues):
            for f, flavor in enumerate(queue.flavors or ()):
                if flavor not in pools:
                    # fix: Name a node pool of that cluster
                    yield Finding(here + ("queues", q, "flavors", f), f"unknown node pool {flavor!r} of {cluster.name}{_known(pools)}")
    for t, team in enumerate(fleet.teams):
        here = ("teams", t)
        for name, placement in team.clusters.items():
            if name not in clusters:
                # fix: Name a cluster fleet.yaml declares
                yield Finding(here + ("clusters", name), f"unknown cluster {name!r}{_known(clusters)}")
            elif placement and placement.queue:
                queues = {q.name for q in clusters[name].queues} | dispatching_queues(fleet.multi_kueue, name)
                if placement.queue not in queues:
                    # fix: Name a queue of that cluster (clusters[].queues)
                    yield Finding(
                        here + ("clusters", name, "queue"),
                        f"unknown queue {placement.queue!r} on {name}{_known(queues)}",
                    )
        for p, cls in enumerate(team.priority_classes or ()):
            if cls not in classes:
                # fix: Name a class from priorityClasses
                yield Finding(here + ("priorityClasses", p), f"unknown priority class {cls!r}{_known(classes)}")
    purposes = [TRAINING, NOTEBOOKS, *fleet.slo.all_tiers]
    for purpose, cls in fleet.scheduling.default_priority_classes.items():
        at: FieldPath = ("scheduling", "defaultPriorityClasses", purpose)
        if purpose not in purposes:
            # fix: Use training, notebooks or an SLO tier fleet.yaml declares
            yield Finding(at, f"unknown purpose {purpose!r}: training, notebooks or an SLO tier ({', '.join(purposes[2:])})")
        if cls not in classes:
            # fix: Name a class from priorityClasses
            yield Finding(at, f"unknown priority class {cls!r}{_known(classes)}")


def check_priority_classes(fleet: Fleet) -> Iterator[Finding]:
    defaults = [i for i, p in enumerate(fleet.priority_classes) if p.global_default]
    for i in defaults[1:]:
        # fix: Keep globalDefault: true on one priority class only
        yield Finding(
            ("priorityClasses", i, "globalDefault"),
            f"a second global default (priorityClasses[{defaults[0]}] is one); at most one class may be",
        )


def check_quotas(fleet: Fleet) -> Iterator[Finding]:
    for t, team in enumerate(fleet.teams):
        if team.quota.requests.gpu is None:
            # fix: Give the team a GPU quota (quota.requests.gpu, 0 for none)
            yield Finding(("teams", t, "quota", "requests"), "a GPU quota (gpu) is required: without one a team may take every GPU")
        yield from _limits_cover_requests(team.quota, ("teams", t, "quota"), {"cpu", "memory", "gpu"})
        for cluster, placement in team.clusters.items():
            if placement:  # only what the placement itself sets; the defaults were checked above
                own = {
                    r
                    for r in ("cpu", "memory", "gpu")
                    if getattr(placement.requests, r) is not None or getattr(placement.limits, r) is not None
                }
                yield from _limits_cover_requests(team.quota_on(cluster), ("teams", t, "clusters", cluster), own)


def check_object_names(fleet: Fleet) -> Iterator[Finding]:
    """A team's two ResourceQuotas (its quota and the zero quota on barred priority classes) need two names."""
    classes = [p.name for p in fleet.priority_classes]
    for t, team in enumerate(fleet.teams):
        barred = len(fleet.access(team).priority_classes) < len(classes)
        names = fleet.object_names(team)
        if barred and names.resource_quota == names.priority_class_quota:
            # fix: Give one of the two ResourceQuotas another name (naming.resourceQuota or teams[].names)
            yield Finding(
                fleet.name_source(t, "priority_class_quota"),
                f"ResourceQuota name {names.resource_quota!r} in {team.namespace} is also the team's resourceQuota; "
                "two objects of one kind in a namespace need different names",
            )


def check_gpu_limits(fleet: Fleet) -> Iterator[Finding]:
    """A GPU limit in a quota is accepted and ignored: only requests.nvidia.com/gpu is enforced."""
    for t, team in enumerate(fleet.teams):
        places: list[tuple[FieldPath, Quota]] = [(("teams", t, "quota"), team.quota)]
        places += [(("teams", t, "clusters", name), p) for name, p in team.clusters.items() if p]
        for where, quota in places:
            if quota.limits.gpu is not None:
                yield Finding(
                    where + ("limits", "gpu"),
                    "limits.nvidia.com/gpu is accepted by the API server but never enforced: for extended resources "
                    "only requests.nvidia.com/gpu counts; drop the GPU limit",
                    Severity.WARNING,
                )


def _limits_cover_requests(quota: Quota, where: FieldPath, resources: set[str]) -> Iterator[Finding]:
    for resource in ("cpu", "memory", "gpu"):
        request, limit = getattr(quota.requests, resource), getattr(quota.limits, resource)
        if resource in resources and request is not None and limit is not None and limit < request:
            # fix: Raise the limit to at least the request, or lower the request
            yield Finding(where + ("limits", resource), f"limit {limit} is below the request {request}")


def check_node_pools(fleet: Fleet) -> Iterator[Finding]:
    for c, cluster in enumerate(fleet.clusters):
        for p, pool in enumerate(cluster.node_pools):  # pools Kueue cannot tell apart: checks.capacity
            here: FieldPath = ("clusters", c, "nodePools", p)
            if pool.min_nodes > pool.max_nodes:
                # fix: Lower minNodes to maxNodes or below
                yield Finding(here + ("minNodes",), f"minNodes {pool.min_nodes} is above maxNodes {pool.max_nodes}")
            for field, per_node in (("cpuPerNode", pool.cpu_per_node), ("memoryPerNode", pool.memory_per_node)):
                if per_node.value * pool.max_nodes > LARGEST_QUANTITY:  # the pool's total is a quantity Kueue is given
                    # fix: Lower maxNodes or the per-node amount
                    yield Finding(
                        here + (field,), f"{per_node} x maxNodes {pool.max_nodes} is larger than Kubernetes' largest quantity, 2^63-1"
                    )


def check_gpu_capacity(fleet: Fleet) -> Iterator[Finding]:
    """Per cluster, the teams' GPU quotas must fit its pools' GPUs (times the overcommit ratio)."""
    ratio = fleet.capacity.gpu_overcommit or 1.0
    for cluster in fleet.clusters:
        counted = [p for p in cluster.node_pools if GPU_RESOURCE in per_gpu(p)]  # a MIG pool of mig-* slices yields none
        gpus = sum(pool_capacity(p).units.get(GPU_RESOURCE, 0) for p in counted)  # what Kubernetes counts: replicas of shared GPUs
        allowed = gpus * ratio
        # a team on a MultiKueue manager queue runs nothing there: its jobs wait suspended, the workers' quotas count
        dispatching = dispatching_queues(fleet.multi_kueue, cluster.name)
        on = [(t, team) for t, team in fleet.placements[cluster.name] if team.queue_on(cluster) not in dispatching]
        held = [(t, team.name, team.quota_on(cluster.name).requests.gpu or 0) for t, team in on]
        total = sum(gpu for _, _, gpu in held)
        if total <= allowed:
            continue
        largest = max(held, key=lambda item: item[2])[0]  # point at the largest holder, the likeliest fix
        pools = ", ".join(f"{p.name} {p.max_nodes} x {p.gpus_per_node}{_shares(p)}" for p in counted)
        ceiling = f"{gpus} GPUs ({pools})"
        if ratio != 1.0:
            ceiling += f" x overcommit {ratio:g} = {allowed:g}"
        hint = "" if fleet.capacity.gpu_overcommit else "; set capacity.gpuOvercommit to allow it"
        # fix: Lower the teams' GPU quotas on the cluster, grow its node pools, or set capacity.gpuOvercommit
        yield Finding(
            ("teams", largest, "clusters", cluster.name),
            f"GPU quotas on {cluster.name} add up to {total} ({', '.join(f'{n} {g}' for _, n, g in held)}), above its {ceiling}{hint}",
        )


def _shares(pool: NodePool) -> str:
    """How a partitioned pool multiplies its GPUs: " x 4 replicas", " x 7 MIG slices"; nothing for whole GPUs."""
    count = per_gpu(pool)[GPU_RESOURCE]
    if pool.partitioning.time_slicing is not None:
        return f" x {count} replicas"
    return f" x {count} MIG slices" if pool.partitioning.mig is not None else ""


def check_rollout(fleet: Fleet) -> Iterator[Finding]:
    """Windows that open before they close; an upgrade record whose waves are numbered 1..n over known clusters."""
    for w, window in enumerate(fleet.rollout.windows):
        if window.start >= window.end:
            # fix: Make the window end after it starts
            yield Finding(("rollout", "windows", w, "end"), f"the window closes ({window.end}) before it opens ({window.start})")
    canary = fleet.rollout.production_canary
    production = [c.name for c in fleet.clusters if c.environment == "production"]
    if canary is not None and canary not in production:
        known = {c.name for c in fleet.clusters}
        why = "is not a production cluster" if canary in known else "is not a cluster of the fleet"
        # fix: Name a production cluster outside a DR pair as rollout.productionCanary
        yield Finding(("rollout", "productionCanary"), f"{canary} {why}; production clusters: {', '.join(production) or 'none'}")
    if fleet.upgrade is None:
        return
    names = {c.name for c in fleet.clusters}
    for index, wave in enumerate(fleet.upgrade.waves):
        if wave.wave != index + 1:
            # fix: Number the waves 1, 2, ... in the order they run
            yield Finding(("upgrade", "waves", index, "wave"), f"waves are numbered 1, 2, ... in order; this one should be {index + 1}")
        for c, cluster in enumerate(wave.clusters):
            if cluster not in names:
                # fix: Name a cluster fleet.yaml declares
                yield Finding(("upgrade", "waves", index, "clusters", c), f"unknown cluster {cluster!r}{_known(names)}")


CHECKS: tuple[Check, ...] = (
    check_references,
    check_priority_classes,
    check_quotas,
    check_object_names,
    check_gpu_limits,
    check_node_pools,
    check_gpu_capacity,
    check_compatibility,
    check_pool_drivers,
    check_fleet_policy,
    check_rollout,
    *SHARING_CHECKS,
    *PLACEMENT_CHECKS,
    *ENTITLEMENT_CHECKS,
    *SLO_CHECKS,
    *PLATFORM_CHECKS,
    *TENANCY_CHECKS,
    *PARTITIONING_CHECKS,
    *CAPACITY_CHECKS,
    *MULTIKUEUE_CHECKS,
    *ONBOARDING_CHECKS,
    *CLOUD_QUOTA_CHECKS,
    *GRANT_CHECKS,
)


def run_checks(fleet: Fleet, data: Facts | None = None) -> list[Finding]:
    """Every check; compatibility against `data` (the shipped facts merged with the fleet's own) when given."""
    with_data: dict[Check, Check] = {
        check_compatibility: lambda f: check_compatibility(f, data),
        check_pool_drivers: lambda f: check_pool_drivers(f, data),
    }
    checks = [with_data.get(check, check) for check in CHECKS]
    return [finding for check in checks for finding in check(fleet)]


def _known(names: object) -> str:
    listed = sorted(names)  # type: ignore[call-overload]
    return f" (known: {', '.join(listed)})" if listed else " (none defined)"

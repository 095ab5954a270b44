"""Fleet-wide and cluster-wide scheduling objects: PriorityClasses, Kueue ResourceFlavors, Topologies, Cohorts, ClusterQueues."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from fleetgen.checks.sharing import cohort_root
from fleetgen.compat.partitioning import describe, nominal, pool_yield, stated_gpus
from fleetgen.compat.pool_drivers import driver_crd_on
from fleetgen.errors import FieldPath
from fleetgen.model import COMPONENTS, GPU_RESOURCE, Cluster, Fleet, NodePool, Queue
from fleetgen.model.sharing import FIELDS, RESOURCES, Cohort, FlavorResources, PerFlavor
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object, quantity_value
from fleetgen.render.provenance import NOWHERE, Recorder

KUEUE_API = "kueue.x-k8s.io/v1beta2"  # served since Kueue v0.15; v1beta1's `cohort` is `cohortName` here


def priority_classes(fleet: Fleet, why: Recorder = NOWHERE) -> list[Manifest]:
    out = []
    for i, pc in enumerate(fleet.priority_classes):
        body = k8s_object(
            "scheduling.k8s.io/v1",
            "PriorityClass",
            pc.name,
            fleet_labels(fleet),
            value=pc.value,
            globalDefault=pc.global_default,
            preemptionPolicy=pc.preemption_policy,
        )
        if pc.description:
            body["description"] = pc.description
        out.append(Manifest(body, ("priorityClasses", i)))
        _record_fields(why, body, ("priorityClasses", i), ("value", "globalDefault", "preemptionPolicy", "description"))
    if fleet.scheduling.workload_priority_classes:
        for i, pc in enumerate(fleet.priority_classes):
            fields: dict[str, Any] = {"value": pc.value}
            if pc.description:
                fields["description"] = pc.description
            body = k8s_object(KUEUE_API, "WorkloadPriorityClass", pc.name, fleet_labels(fleet), **fields)
            out.append(Manifest(body, ("priorityClasses", i)))
            _record_fields(why, body, ("priorityClasses", i), ("value", "description"))
    return out


def _record_fields(why: Recorder, body: dict[str, Any], at: FieldPath, fields: tuple[str, ...]) -> None:
    """A fleet-wide object named by `at`.name whose top-level `fields` are the model's fields of the same name."""
    if why.on:
        why.meta(body, at + ("name",), prov.fleet_labels())
        for name in fields:
            why.set(body, (name,), at + (name,))


def _toleration(key: str, value: str, effect: str) -> dict[str, str]:
    if value:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def version_labels(fleet: Fleet, cluster: Cluster) -> dict[str, str]:
    """The cluster's compatibility-matrix row as labels, e.g. fleetgen/driver: 550.54.15."""
    versions = fleet.version_sets[cluster.version_set]
    return {f"fleetgen/{c}": str(getattr(versions, c)) for c in COMPONENTS}


def fleet_versions(fleet: Fleet, cluster: Cluster, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    """A ConfigMap any controller or person on the cluster can read: which versions it should run."""
    data = {c.removeprefix("fleetgen/"): v for c, v in version_labels(fleet, cluster).items()}
    data |= {"cluster": cluster.name, "versionSet": cluster.version_set, "environment": cluster.environment, "region": cluster.region}
    body = k8s_object("v1", "ConfigMap", "fleet-versions", fleet_labels(fleet), namespace="kube-public", data=dict(sorted(data.items())))
    if why.on:
        why.meta(
            body, prov.default("fleetgen's versions ConfigMap"), prov.fleet_labels(), prov.default("readable by anyone on the cluster")
        )
        for c in COMPONENTS:
            why.set(body, ("data", c), ("versionSets", cluster.version_set, c))
        for key, field in (("cluster", "name"), ("versionSet", "versionSet"), ("environment", "environment"), ("region", "region")):
            why.set(body, ("data", key), at + (field,))
    return [Manifest(body, at + ("versionSet",))]


def resource_flavors(fleet: Fleet, cluster: Cluster, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    out = []
    for p, pool in enumerate(cluster.node_pools):
        spec: dict[str, Any] = {"nodeLabels": dict(sorted(pool.labels.items()))}
        if pool.taints:
            spec["tolerations"] = [_toleration(t.key, t.value, t.effect) for t in pool.taints]
        if pool.topology:
            spec["topologyName"] = pool.name
        labels = {**fleet_labels(fleet), **version_labels(fleet, cluster), "fleetgen/gpu-model": pool.gpu_model or "none"}
        if pool.driver.version is not None and driver_crd_on(fleet, cluster):  # the pool runs a driver of its own
            labels["fleetgen/driver"] = str(pool.driver.version)
        body = k8s_object(KUEUE_API, "ResourceFlavor", pool.name, labels, spec=spec)
        out.append(Manifest(body, at + ("nodePools", p)))
        if why.on:
            pool_at = at + ("nodePools", p)
            versions: dict[str, FieldPath] = {f"fleetgen/{c}": ("versionSets", cluster.version_set, c) for c in COMPONENTS}
            if labels["fleetgen/driver"] != str(fleet.version_sets[cluster.version_set].driver):
                versions["fleetgen/driver"] = pool_at + ("driver", "version")
            why.meta(body, pool_at + ("name",), {**prov.fleet_labels(), **versions, "fleetgen/gpu-model": pool_at + ("gpuModel",)})
            why.set(body, ("spec", "nodeLabels"), pool_at + ("labels",), mirror=True)
            for k in range(len(pool.taints)):
                why.set(body, ("spec", "tolerations", k), pool_at + ("taints", k), mirror=True)
                why.set(
                    body, ("spec", "tolerations", k, "operator"), prov.derived("Equal with a value, else Exists", pool_at + ("taints", k))
                )
            why.set(body, ("spec", "topologyName"), pool_at + ("name",))
    return out


def topologies(fleet: Fleet, cluster: Cluster, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    """A Kueue Topology per node pool that declares its network topology labels (named after the pool)."""
    out = []
    for p, pool in enumerate(cluster.node_pools):
        if pool.topology:
            spec = {"levels": [{"nodeLabel": label} for label in pool.topology]}
            out.append(
                Manifest(k8s_object(KUEUE_API, "Topology", pool.name, fleet_labels(fleet), spec=spec), at + ("nodePools", p, "topology"))
            )
            if why.on:
                why.meta(out[-1].body, at + ("nodePools", p, "name"), prov.fleet_labels())
                for k in range(len(pool.topology)):
                    why.set(out[-1].body, ("spec", "levels", k, "nodeLabel"), at + ("nodePools", p, "topology", k))
    return out


def amount_text(resource: str, value: Fraction) -> int | str:
    """A computed amount as Kubernetes writes it: whole CPUs or millicores, memory in the largest binary unit that divides it."""
    if resource == "memory":
        whole = int(value)  # bytes, rounded down
        for suffix, unit in (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
            if whole and whole % unit == 0:
                return f"{whole // unit}{suffix}"
        return whole
    if value.denominator == 1:
        return int(value)
    return f"{int(value * 1000)}m"  # millicores, rounded down


def _given(resource: str, entry: FlavorResources) -> int | str | None:
    if resource not in FIELDS:  # a slice of a partitioned pool
        amount = entry.amount(resource)
        return None if amount is None else int(amount)
    value = getattr(entry, FIELDS[resource])
    return None if value is None else value if isinstance(value, int) else quantity_value(value)


def _limits(resource: str, flavor: str, borrowing: PerFlavor, lending: PerFlavor) -> dict[str, int | str]:
    out: dict[str, int | str] = {}
    for field, limits in (("borrowingLimit", borrowing), ("lendingLimit", lending)):
        value = _given(resource, limits[flavor]) if flavor in limits else None
        if value is not None:
            out[field] = value
    return out


def covered(pools: list[NodePool]) -> list[str]:
    """A queue's covered resources: cpu, memory, GPUs, then the slices its partitioned pools yield (MIG, shared GPUs)."""
    return [*RESOURCES, *sorted({name for pool in pools for name in pool_yield(pool)} - set(RESOURCES))]


def tree_covered(cluster: Cluster, cohort: str) -> list[str]:
    """What every ClusterQueue and Cohort of `cohort`'s tree covers: the resources of every pool a member hands out or
    names, so that a flavor they share has the same resources in each (a slice a member's pools lack at 0 there)."""
    root, pools = cohort_root(cluster, cohort), {p.name: p for p in cluster.node_pools}
    names: set[str] = set()
    for queue in cluster.queues:
        if queue.cohort and cohort_root(cluster, queue.cohort) == root:
            names |= set(queue.flavors if queue.flavors is not None else pools)
    for member in cluster.cohorts:
        if cohort_root(cluster, member.name) == root:
            names |= member.nominal_quota.keys() | member.borrowing_limit.keys() | member.lending_limit.keys()
    return covered([pools[n] for n in sorted(names) if n in pools])


def _flavor_quota(pool: NodePool, queue: Queue | None = None, resources_of: list[str] | None = None) -> dict[str, Any]:
    """A queue's resources of one flavor: the pool at its maximum size unless the queue gives its own nominal quota.

    GPUs and slices of a partitioned pool are what it yields (time-sliced replicas, MIG slices); 0 of what it does not.
    GPUs or slices stated alone bring CPU and memory at their share of the pool's GPUs (a replica is 1/replicas of a GPU)."""
    given = queue.nominal_quota.get(pool.name) if queue else None
    resources, yielded = [], pool_yield(pool)
    for resource in resources_of or list(RESOURCES):
        stated = _given(resource, given) if given is not None else None
        value: int | str
        if resource not in ("cpu", "memory"):
            value = stated if stated is not None else yielded.get(resource, 0)
        elif given is None:
            full = {"cpu": pool.cpu_per_node * pool.max_nodes, "memory": pool.memory_per_node * pool.max_nodes}
            value = quantity_value(full[resource])
        else:
            value = stated if stated is not None else amount_text(resource, nominal(pool, given, resource))
        entry: dict[str, Any] = {"name": resource, "nominalQuota": value}
        if queue:
            entry |= _limits(resource, pool.name, queue.borrowing_limit, queue.lending_limit)
        resources.append(entry)
    return {"name": pool.name, "resources": resources}


def _fair_sharing(weight: Any) -> dict[str, Any]:
    return {"fairSharing": {"weight": quantity_value(weight)}} if weight is not None else {}


def _cohort_resource(cohort: Cohort, flavor: str, resource: str) -> dict[str, Any]:
    """A cohort's own quota holds only what it states (0 otherwise), then its limits towards its parent."""
    stated = _given(resource, cohort.nominal_quota[flavor]) if flavor in cohort.nominal_quota else None
    entry = {"name": resource, "nominalQuota": 0 if stated is None else stated}
    return entry | _limits(resource, flavor, cohort.borrowing_limit, cohort.lending_limit)


def cohorts(fleet: Fleet, cluster: Cluster, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    """A Kueue Cohort per cohort the cluster lists: its parent, its own quota and limits, its fair-sharing weight."""
    out = []
    for c, cohort in enumerate(cluster.cohorts):
        spec: dict[str, Any] = {}
        if cohort.parent:
            spec["parentName"] = cohort.parent
        named = cohort.nominal_quota.keys() | cohort.borrowing_limit.keys() | cohort.lending_limit.keys()
        kinds = tree_covered(cluster, cohort.name)
        flavors = [
            {"name": pool.name, "resources": [_cohort_resource(cohort, pool.name, resource) for resource in kinds]}
            for pool in cluster.node_pools
            if pool.name in named
        ]
        if flavors:
            spec["resourceGroups"] = [{"coveredResources": kinds, "flavors": flavors}]
        spec |= _fair_sharing(cohort.fair_sharing_weight)
        out.append(Manifest(k8s_object(KUEUE_API, "Cohort", cohort.name, fleet_labels(fleet), spec=spec), at + ("cohorts", c)))
        if why.on:
            body, cohort_at = out[-1].body, at + ("cohorts", c)
            why.meta(body, cohort_at + ("name",), prov.fleet_labels())
            why.set(body, ("spec",), prov.derived("the cohort sets no parent, quota or weight", cohort_at))
            why.set(body, ("spec", "parentName"), cohort_at + ("parent",))
            why.set(body, ("spec", "fairSharing", "weight"), cohort_at + ("fairSharingWeight",))
            for f, flavor in enumerate(flavors):
                _record_resources(why, body, ("spec", "resourceGroups", 0, "flavors", f), cohort_at, cohort, str(flavor["name"]), None)
                _record_cohort_slices(why, body, ("spec", "resourceGroups", 0, "flavors", f), cohort_at, cohort, str(flavor["name"]), kinds)
    return out


def _record_resources(
    why: Recorder,
    body: dict[str, Any],
    pointer: tuple[str | int, ...],
    owner_at: FieldPath,
    owner: Queue | Cohort,
    flavor: str,
    pool_at: FieldPath | None,
    pool: NodePool | None = None,
) -> None:
    """Origins of one flavor of a queue's or cohort's resource group: its name, nominal quotas and limits.

    `pool_at` is the node pool of a queue's flavor (`pool`), whose size makes the quota a queue does not state."""
    why.set(body, (*pointer[:-2], "coveredResources"), prov.default("fleetgen covers cpu, memory and GPUs in every group"))
    why.set(body, (*pointer, "name"), pool_at + ("name",) if pool_at else prov.derived("a flavor the cohort names", owner_at))
    stated = owner.nominal_quota.get(flavor)
    for r, resource in enumerate(RESOURCES):
        field, at = FIELDS[resource], (*pointer, "resources", r)
        why.set(body, (*at, "name"), prov.default("fleetgen covers cpu, memory and GPUs"))
        per_node = {"cpu": "cpuPerNode", "memory": "memoryPerNode"}.get(resource, "gpusPerNode")
        if stated is not None and getattr(stated, field) is not None:
            why.set(body, (*at, "nominalQuota"), owner_at + ("nominalQuota", flavor, field))
        elif pool_at is None or pool is None:
            why.set(body, (*at, "nominalQuota"), prov.default("0: a cohort holds only what it states"))
        elif stated is None or resource == GPU_RESOURCE or stated_gpus(pool, stated) is None:
            whole = "the pool at its maximum size: maxNodes x " + per_node
            why.set(body, (*at, "nominalQuota"), prov.derived(whole, pool_at + ("maxNodes",), pool_at + (per_node,)))
        else:
            share = "the queue's share of the pool at its maximum size: the GPUs and slices it states, each at its share of a GPU"
            inputs = (
                owner_at + ("nominalQuota", flavor),
                pool_at + ("gpusPerNode",),
                pool_at + ("maxNodes",),
                pool_at + (per_node,),
                pool_at + ("partitioning",),
            )
            why.set(body, (*at, "nominalQuota"), prov.derived(share, *inputs))
        for limit in ("borrowingLimit", "lendingLimit"):
            why.set(body, (*at, limit), owner_at + (limit, flavor, field))


def _record_cohort_slices(
    why: Recorder, body: dict[str, Any], pointer: tuple[str | int, ...], cohort_at: FieldPath, cohort: Cohort, flavor: str, kinds: list[str]
) -> None:
    """Origins of a cohort's slice resources: what it states of each, else 0; its limits."""
    why.set(body, (*pointer[:-2], "coveredResources"), prov.default("what every queue and cohort of the cohort's tree covers"))
    for r, resource in enumerate(kinds):
        if resource in RESOURCES:
            continue
        at, name = (*pointer, "resources", r), resource.removeprefix("nvidia.com/")
        why.set(body, (*at, "name"), prov.derived("a slice a pool of the cohort's tree yields", cohort_at))
        for field, per_flavor in (
            ("nominalQuota", cohort.nominal_quota),
            ("borrowingLimit", cohort.borrowing_limit),
            ("lendingLimit", cohort.lending_limit),
        ):
            if flavor in per_flavor and name in per_flavor[flavor].slices:
                why.set(body, (*at, field), cohort_at + (field, flavor, "slices", name))
            elif field == "nominalQuota":
                why.set(body, (*at, field), prov.default("0: a cohort holds only what it states"))


def _record_partitioned(
    why: Recorder,
    body: dict[str, Any],
    pointer: tuple[str | int, ...],
    queue_at: FieldPath,
    queue: Queue,
    pool: NodePool,
    pool_at: FieldPath,
    kinds: list[str],
) -> None:
    """Origins of a partitioned pool's GPUs and of every slice resource: what the pool's partitioning yields."""
    why.set(body, (*pointer[:-2], "coveredResources"), prov.default("cpu, memory, GPUs, then the slices the queue's pools yield"))
    stated = queue.nominal_quota.get(pool.name)
    for r, resource in enumerate(kinds):
        if resource in ("cpu", "memory") or (resource in RESOURCES and pool.partitioning.kind == "none"):
            continue
        at = (*pointer, "resources", r)
        why.set(body, (*at, "name"), prov.derived("a resource a pool of the queue yields", pool_at + ("partitioning",)))
        if stated is not None and stated.amount(resource) is not None:
            field = "gpu" if resource in RESOURCES else "slices"
            why.set(body, (*at, "nominalQuota"), queue_at + ("nominalQuota", pool.name, field))
            continue
        note = f"what the pool at its maximum size yields ({describe(pool)})"
        inputs = (pool_at + ("maxNodes",), pool_at + ("gpusPerNode",), pool_at + ("partitioning",))
        why.set(body, (*at, "nominalQuota"), prov.derived(note, *inputs))


def _namespace_selector(fleet: Fleet, cluster: Cluster, queue: Queue) -> dict[str, Any]:
    if queue.admits == "any-namespace":
        return {}
    teams = sorted(team.name for team in fleet.queue_teams(cluster, queue.name))
    if not teams:  # a selector that matches no namespace
        return {"matchExpressions": [{"key": "team", "operator": "Exists"}, {"key": "team", "operator": "DoesNotExist"}]}
    return {"matchExpressions": [{"key": "team", "operator": "In", "values": teams}]}


def cluster_queues(fleet: Fleet, cluster: Cluster, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    """One ClusterQueue per queue, with its cohort, quotas and limits, preemption and fair-sharing weight."""
    pools = {p.name: p for p in cluster.node_pools}
    out = []
    for q, queue in enumerate(cluster.queues):
        names = queue.flavors if queue.flavors is not None else tuple(pools)
        spec: dict[str, Any] = {"namespaceSelector": _namespace_selector(fleet, cluster, queue)}
        if queue.cohort:
            spec["cohortName"] = queue.cohort
        kinds = tree_covered(cluster, queue.cohort) if queue.cohort else covered([pools[n] for n in names])
        spec["resourceGroups"] = [{"coveredResources": kinds, "flavors": [_flavor_quota(pools[n], queue, kinds) for n in names]}]
        preemption = queue.preemption
        spec["preemption"] = {
            "withinClusterQueue": preemption.within_cluster_queue,
            "reclaimWithinCohort": preemption.reclaim_within_cohort,
        }
        if preemption.borrow_within_cohort:
            borrow: dict[str, Any] = {"policy": preemption.borrow_within_cohort.policy}
            if preemption.borrow_within_cohort.max_priority_threshold is not None:
                borrow["maxPriorityThreshold"] = preemption.borrow_within_cohort.max_priority_threshold
            spec["preemption"]["borrowWithinCohort"] = borrow
        spec |= _fair_sharing(queue.fair_sharing_weight)
        if queue.flavor_fungibility:
            spec["flavorFungibility"] = queue.flavor_fungibility.model_dump(by_alias=True, exclude_none=True)
        body = k8s_object(KUEUE_API, "ClusterQueue", queue.name, fleet_labels(fleet), spec=spec)
        out.append(Manifest(body, at + ("queues", q)))
        if why.on:
            queue_at, position = at + ("queues", q), {p.name: k for k, p in enumerate(cluster.node_pools)}
            why.meta(body, queue_at + ("name",), prov.fleet_labels())
            admits = "the namespaces of the teams placed on this queue" if queue.admits == "placed-teams" else "any namespace"
            why.set(body, ("spec", "namespaceSelector"), prov.derived(admits, queue_at + ("admits",), ("teams",)))
            why.set(body, ("spec", "cohortName"), queue_at + ("cohort",))
            for f, name in enumerate(names):
                pool_at = at + ("nodePools", position[name])
                _record_resources(why, body, ("spec", "resourceGroups", 0, "flavors", f), queue_at, queue, name, pool_at, pools[name])
                _record_partitioned(why, body, ("spec", "resourceGroups", 0, "flavors", f), queue_at, queue, pools[name], pool_at, kinds)
                if queue.flavors is not None:
                    why.set(body, ("spec", "resourceGroups", 0, "flavors", f, "name"), queue_at + ("flavors", f))
            why.set(body, ("spec", "preemption"), queue_at + ("preemption",), mirror=True)
            why.set(body, ("spec", "fairSharing", "weight"), queue_at + ("fairSharingWeight",))
            why.set(body, ("spec", "flavorFungibility"), queue_at + ("flavorFungibility",), mirror=True)
    return out

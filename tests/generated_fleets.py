"""A hypothesis strategy of valid fleets that use every section of fleet.yaml at once, shared by the property tests.

The capacity core: 1-5 clusters of 1-4 node pools each, mixing whole GPUs, MIG layouts taken from fleetgen's own
partitioning facts (a named profile everywhere, or the GPU's balanced mix) and time-sliced pools (renamed or not), a
CPU-only pool now and then; 1-3 ClusterQueues per cluster that split each pool's GPUs, shares and slices between
them, sometimes in a cohort (or a cohort under a parent) that holds a share too; teams with GPU and slice quotas on
the clusters they are on, within what their queue owns.

Around it, everything else fleet.yaml can say: a MultiKueue manager without GPUs and its workers, Argo CD as well as
Flux, pools shared between clusters (a YAML alias) or derived from another (a `<<:` merge key), team values shared by
an alias, cloud accounts that leave a cluster out, prices by GPU and by node, every kind of approval rule, grants,
notebooks, slice defaults, registries, storage and volumes, tenancy, endpoints and SLO tiers, alerts, rollout,
scheduling, naming, the platform's add-ons, an upgrade's history, a facts file of the fleet's own, and the forms a
later release will refuse (which `migrate` rewrites). `tests/test_generator_coverage.py` fails when fleet.yaml's
schema has a field this strategy never writes.

The fleet is a plain dict (as fleet.yaml's YAML would load); `fleet_text` turns it into the text validate reads
(a dict used twice becomes an anchor and its aliases, a `Merged` dict a merge key), and `write_fleet` writes it with
the files it names.
"""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from fleetgen.compat.partitioning import MigGpu, partitioning_facts
from fleetgen.model.platform import Platform

VERSIONS = {"kubernetes": "1.35.2", "driver": "580.82.07", "cuda": "13.0", "cudnn": "9.17.0", "containerd": "2.2.1"}
NEXT_CUDA = ("12.8", "12.9", "13.0")  # what a second version set may name: every CUDA the driver runs has an image
WHOLE_MODELS = ("T4", "A10G", "L4", "A100", "H100")
SHARED_MODELS = ("T4", "A10G", "L4")  # GPUs without MIG: time-slicing is how they are shared
GROUPS = ("5f0c8d2e-3b1a-4c7e-9d2f-6a8b1c3e4d5f", "0a7d3f91-2c4b-4e8a-b6d1-93f2e5c7a810", "c3e1b7a4-8f2d-4a6b-9e5c-1d7f3a9b2e64")
GPU = "nvidia.com/gpu"
GPU_HOUR = {"Standard_NC24ads_A100_v4": 3.67, "Standard_ND96isr_H100_v5": 12.29, "Standard_NC4as_T4_v3": 0.53}
NODE_HOUR = {"Standard_D16s_v5": 0.77}
UNPRICED = "VM_Unpriced"  # a VM size no table knows: its pools say their vCPUs and family themselves
MANAGER = "mk-manager"
FACTS_FILE = "fleet-facts.yaml"
HAND_WRITTEN = "hand-written/extra.yaml"
REGIONS = ("eastus", "westus2")
PRIORITY_CLASSES = (
    {"name": "production-inference", "value": 1000000, "description": "Serving; never preempted by training."},
    {"name": "scheduled-training", "value": 100000, "preemptionPolicy": "PreemptLowerPriority"},
)
NOTEBOOK = {"name": "PyTorch", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "cuda": "12.8"}
ROLE_RULE = {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["get", "list", "watch"]}


class Merged(dict[str, Any]):
    """A mapping written as a merge key (`<<: *base`) and the keys where it differs from `base`; as a dict it holds
    the merged values, as a YAML reader sees them."""

    base: dict[str, Any]


def merged(base: dict[str, Any], **own: Any) -> Merged:
    out = Merged({**base, **own})
    out.base = base
    return out


def mig_layouts() -> list[tuple[MigGpu, dict[str, int]]]:
    """Every layout the facts name: each GPU cut into one profile (at NVIDIA's count), or its balanced mix."""
    out = []
    for row in partitioning_facts().mig_gpus:
        out += [(row, {profile: count}) for profile, count in row.profiles.items() if "+" not in profile]
        out.append((row, dict(row.balanced)))
    return out


LAYOUTS = mig_layouts()


def units(pool: dict[str, Any]) -> dict[str, int]:
    """What the pool yields at maxNodes, by extended resource, worked out here from the dict (not by fleetgen)."""
    gpus = pool["gpusPerNode"] * pool["maxNodes"]
    parts = pool.get("partitioning", {})
    if "timeSlicing" in parts:
        name = "nvidia.com/gpu.shared" if parts["timeSlicing"]["rename"] else GPU
        return {name: gpus * parts["timeSlicing"]["replicas"]}
    if "mig" in parts:
        return {f"nvidia.com/mig-{p}": gpus * n for p, n in parts["mig"]["layout"].items()}
    return {GPU: gpus} if gpus else {}


@st.composite
def node_pool(draw: st.DrawFn, name: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(("whole", "whole", "mig", "time-sliced", "cpu-only")))
    pool: dict[str, Any] = {
        "name": name,
        "vmSize": draw(st.sampled_from(("Standard_NC24ads_A100_v4", "Standard_ND96isr_H100_v5", "Standard_NC4as_T4_v3", UNPRICED))),
        "gpusPerNode": draw(st.sampled_from((1, 2, 4, 8))),
        "cpuPerNode": 32,
        "memoryPerNode": "256Gi",
        "maxNodes": draw(st.integers(1, 6)),
        "scaling": draw(st.sampled_from(("spot", "on-demand", "reserved"))),
        "labels": {"fleetgen.test/pool": name},  # one label per pool: no pool's labels hold another's
    }
    if pool["vmSize"] == UNPRICED:
        pool |= {"vmFamily": "unpricedFamily", "vcpusPerNode": 36}
    if draw(st.booleans()):
        pool["minNodes"] = draw(st.integers(0, pool["maxNodes"]))
    if draw(st.booleans()):
        pool["taints"] = [{"key": "fleetgen.test/sku", "value": "gpu", "effect": draw(st.sampled_from(("NoSchedule", "PreferNoSchedule")))}]
    if draw(st.booleans()):
        pool["topology"] = ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]
    if kind == "cpu-only":
        pool["gpusPerNode"] = 0
        if draw(st.integers(0, 3)) == 0:
            pool["gpuModel"] = "none"  # how a CPU pool was written before gpuModel became optional: `migrate` drops it
    elif kind == "mig":
        row, layout = draw(st.sampled_from(LAYOUTS))
        mig: dict[str, Any] = {"layout": layout}
        if draw(st.booleans()):
            mig["strategy"] = "mixed"
        pool |= {"gpuModel": row.gpu, "gpuMemory": row.memory, "partitioning": {"mig": mig}}
        pool["labels"]["nvidia.com/mig.config"] = name
    elif kind == "time-sliced":
        replicas, rename = draw(st.integers(2, 8)), draw(st.booleans())
        pool |= {
            "gpuModel": draw(st.sampled_from(SHARED_MODELS)),
            "partitioning": {"timeSlicing": {"replicas": replicas, "rename": rename}},
        }
        pool["labels"]["nvidia.com/device-plugin.config"] = name
    else:
        pool["gpuModel"] = draw(st.sampled_from(WHOLE_MODELS))
    return pool


def derived_pool(base: dict[str, Any], name: str, max_nodes: int) -> Merged:
    """A pool written as another's merge key with its own name, labels and size."""
    labels = {k: name if v == base["name"] else v for k, v in base["labels"].items()}
    return merged(base, name=name, labels=labels, maxNodes=max(max_nodes, base.get("minNodes", 0)))


def _entry(resource: str, amount: int) -> dict[str, Any]:
    return {"gpu": amount} if resource == GPU else {"slices": {resource.removeprefix("nvidia.com/"): amount}}


def _zeroes(entry: dict[str, Any]) -> dict[str, Any]:
    """A limit of nothing on every resource `entry` names, CPU and memory too."""
    out: dict[str, Any] = {"cpu": 0, "memory": 0}
    if "gpu" in entry:
        out["gpu"] = 0
    if entry.get("slices"):
        out["slices"] = dict.fromkeys(entry["slices"], 0)
    return out


@st.composite
def cluster(draw: st.DrawFn, index: int, earlier: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    """A cluster; with `earlier` pools of the clusters before it, it may share one (an alias) or derive one (a merge key)."""
    name = f"c{index}"
    pools = [draw(node_pool(f"p{index}-{p}")) for p in range(draw(st.integers(1, 4)))]
    if earlier and draw(st.booleans()):
        reused = draw(st.sampled_from(earlier))
        pools.append(reused if draw(st.booleans()) else derived_pool(reused, f"p{index}-d", draw(st.integers(1, 6))))
    volcano_pool = None
    whole = [p for p in pools if p["gpusPerNode"] and not p.get("partitioning")]
    if len(pools) > 1 and whole and draw(st.integers(0, 3)) == 0:
        volcano_pool = whole[-1]  # Volcano gang-schedules on a pool Kueue does not hand out
    kueue_pools = [p for p in pools if p is not volcano_pool]
    queues: list[dict[str, Any]] = [{"name": f"q{q}", "flavors": []} for q in range(draw(st.integers(1, 3)))]
    depth = draw(st.integers(0, 2))  # no cohort, one, or one under a parent (a cohort tree)
    cohort = "shared" if depth else None
    cohorts: list[dict[str, Any]] = [{"name": "shared"}, {"name": "root"}][:depth]
    if depth == 2:
        cohorts[0]["parent"] = "root"
    for pool in kueue_pools:
        takers = draw(st.lists(st.sampled_from(range(len(queues))), min_size=1, max_size=len(queues), unique=True))
        for q in takers:
            queues[q]["flavors"].append(pool["name"])
        for resource, count in units(pool).items():
            share = count // (len(takers) + depth)  # each cohort of the tree holds a share too
            for q in takers:
                entry = queues[q].setdefault("nominalQuota", {}).setdefault(pool["name"], {})
                _merge(entry, _entry(resource, share))
            for held in cohorts:
                _merge(held.setdefault("nominalQuota", {}).setdefault(pool["name"], {"cpu": 0, "memory": 0}), _entry(resource, share))
    for queue in queues:
        if cohort:
            queue["cohort"] = cohort
        if not queue["flavors"]:
            queue["flavors"] = [kueue_pools[0]["name"]]
            entry: dict[str, Any] = {"gpu": 0, "cpu": 0, "memory": 0}  # owns nothing: every resource the pool yields at 0
            for resource in units(kueue_pools[0]):
                _merge(entry, _entry(resource, 0))
            queue.setdefault("nominalQuota", {})[kueue_pools[0]["name"]] = entry
        draw(queue_options(queue, bool(cohort)))
    for held in cohorts:
        if draw(st.booleans()):
            held["fairSharingWeight"] = draw(st.sampled_from((1, 2, "500m")))
        quota = held.get("nominalQuota", {})
        if quota and draw(st.booleans()):
            flavor, entry = next(iter(quota.items()))
            held[draw(st.sampled_from(("lendingLimit", "borrowingLimit")))] = {flavor: _zeroes(entry)}
    out: dict[str, Any] = {
        "name": name,
        "region": draw(st.sampled_from(REGIONS)),
        "environment": draw(st.sampled_from(("dev", "staging", "production"))),
        "versionSet": draw(st.sampled_from(("current", "next"))),
        "nodePools": pools,
        "queues": queues,
    }
    if cohorts:
        out["cohorts"] = cohorts
    if volcano_pool is not None:
        out["volcano"] = {"nodePools": [volcano_pool["name"]], "reclaimable": draw(st.booleans())}
    if draw(st.booleans()):
        out["purpose"] = draw(st.sampled_from(("Training", "Serving: real-time", "Dev/test, notebooks")))
    if draw(st.booleans()):
        out["imagePullSecret"] = "registry-pull"
    if draw(st.booleans()):
        out["storageClasses"] = [
            {"name": "managed-csi-premium", "default": True},
            {"name": "azurefile-csi-premium", "accessModes": ["ReadWriteOnce", "ReadWriteMany"]},
        ]
    if draw(st.booleans()):
        out["alerts"] = {"gpuUnderutilized": {"enabled": False}, "gpuTemperature": {"threshold": 85, "for": "10m", "severity": "warning"}}
    if any(p["gpusPerNode"] for p in pools) and draw(st.booleans()):
        out["platform"] = {"jupyterhub": {"enabled": True}}
        if draw(st.booleans()):  # every add-on's every field, as a cluster that pins its own would write them
            out["platform"] = platform_defaults()
            out["platform"]["jupyterhub"] |= {"enabled": True, "images": [NOTEBOOK]}
    return out


@st.composite
def queue_options(draw: st.DrawFn, queue: dict[str, Any], in_cohort: bool) -> None:
    """What else a ClusterQueue may say: who it admits, how it preempts, how it picks flavors, its fair share, limits."""
    if draw(st.booleans()):
        queue["admits"] = draw(st.sampled_from(("placed-teams", "any-namespace")))
    if draw(st.booleans()):
        preemption: dict[str, Any] = {"withinClusterQueue": draw(st.sampled_from(("Never", "LowerPriority", "LowerOrNewerEqualPriority")))}
        if in_cohort:
            preemption["reclaimWithinCohort"] = draw(st.sampled_from(("Never", "LowerPriority", "Any")))
            if preemption["reclaimWithinCohort"] != "Never":  # Kueue refuses borrowWithinCohort without it
                preemption["borrowWithinCohort"] = {"policy": "LowerPriority", "maxPriorityThreshold": 1000}
        queue["preemption"] = preemption
    if draw(st.booleans()):
        queue["flavorFungibility"] = draw(
            st.sampled_from(
                (
                    {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
                    {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor", "preference": "BorrowingOverPreemption"},
                )
            )
        )
    if in_cohort and draw(st.booleans()):
        queue["fairSharingWeight"] = draw(st.sampled_from((1, 2, "1500m")))
    quota = queue.get("nominalQuota", {})
    if in_cohort and quota and draw(st.booleans()):
        flavor, entry = next(iter(quota.items()))
        queue[draw(st.sampled_from(("lendingLimit", "borrowingLimit")))] = {flavor: _zeroes(entry)}


def _merge(entry: dict[str, Any], add: dict[str, Any]) -> None:
    if "slices" in add:
        entry.setdefault("slices", {}).update(add["slices"])
    else:
        entry.update(add)


def queue_owns(cluster_: dict[str, Any], queue: str) -> dict[str, int]:
    """What a generated queue owns, by resource, over its flavors."""
    pools = {p["name"]: p for p in cluster_["nodePools"]}
    found = next(q for q in cluster_["queues"] if q["name"] == queue)
    owned: dict[str, int] = {}
    for flavor, entry in found.get("nominalQuota", {}).items():
        if not pools[flavor]["gpusPerNode"]:
            continue
        if "gpu" in entry and GPU in units(pools[flavor]):
            owned[GPU] = owned.get(GPU, 0) + entry["gpu"]
        for name, count in entry.get("slices", {}).items():
            owned[f"nvidia.com/{name}"] = owned.get(f"nvidia.com/{name}", 0) + count
    return owned


def queue_workers(queue: dict[str, Any], clusters: list[dict[str, Any]]) -> list[str]:
    """The workers of a generated manager queue: as listed, or what its selector matches."""
    if "workers" in queue:
        return list(queue["workers"])
    chosen = queue["select"]
    return [
        c["name"]
        for c in clusters
        if c["name"] != MANAGER
        and any(p.get("gpuModel") == queue["gpuModel"] for p in c["nodePools"])
        and c["region"] in chosen["regions"]
        and c["environment"] in chosen["environments"]
    ]


def _reaches(cluster_: dict[str, Any], model: str) -> bool:
    """Whether the queue a team placed by MultiKueue joins on `cluster_` (its first with pools of `model`) owns whole GPUs of them."""
    pools = {p["name"]: p for p in cluster_["nodePools"]}
    for queue in cluster_["queues"]:
        mine = [f for f in queue["flavors"] if pools[f].get("gpuModel") == model]
        if mine:
            return any(not pools[f].get("partitioning") and queue.get("nominalQuota", {}).get(f, {}).get("gpu", 0) >= 3 for f in mine)
    return False


def manager_cluster(deprecated_model: bool) -> dict[str, Any]:
    """A MultiKueue manager: CPU nodes only (it runs no dispatched job), and a local queue that owns nothing."""
    pool: dict[str, Any] = {
        "name": "system",
        "vmSize": "Standard_D16s_v5",
        "gpusPerNode": 0,
        "cpuPerNode": 15,
        "memoryPerNode": "56Gi",
        "maxNodes": 3,
        "scaling": "on-demand",
        "labels": {"fleetgen.test/pool": "system"},
    }
    if deprecated_model:
        pool["gpuModel"] = "none"  # how a CPU pool was written before gpuModel became optional
    return {
        "name": MANAGER,
        "region": "eastus",
        "environment": "production",
        "purpose": "MultiKueue manager; teams submit here",
        "versionSet": "current",
        "nodePools": [pool],
        "queues": [{"name": "local", "flavors": ["system"], "nominalQuota": {"system": {"gpu": 0, "cpu": 0, "memory": 0}}}],
    }


@st.composite
def multi_kueue(draw: st.DrawFn, clusters: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Manager queues, one per GPU model of the workers (named or selected), and how the manager reaches them."""
    models = sorted({p["gpuModel"] for c in clusters for p in c["nodePools"] if p["gpusPerNode"] and not p.get("partitioning")})
    if not models:
        return None
    queues = []
    for model in draw(st.lists(st.sampled_from(models), min_size=1, max_size=2, unique=True)):
        having = [c for c in clusters if any(p.get("gpuModel") == model for p in c["nodePools"])]
        able = [c for c in having if _reaches(c, model)]
        if not able:
            continue
        queue: dict[str, Any] = {"name": f"fleet-{model.lower()}", "gpuModel": model}
        select = {"regions": sorted({c["region"] for c in able}), "environments": sorted({c["environment"] for c in able})}
        queue["select"] = select
        if len(queue_workers(queue, clusters)) > len(able) or draw(st.booleans()):  # the selector would take one that cannot
            del queue["select"]
            queue["workers"] = [c["name"] for c in draw(st.permutations(able))]
        if draw(st.booleans()):
            queue["quotaManagement"] = draw(st.sampled_from(("Manual", "Automated")))
        queues.append(queue)
    if not queues:
        return None
    out: dict[str, Any] = {"manager": MANAGER, "queues": queues}
    dispatcher = draw(st.sampled_from(("AllAtOnce", "Incremental", "External", None)))
    if dispatcher:
        out["dispatcher"] = dispatcher
    if dispatcher == "External":
        out["externalDispatcher"] = "example.com/cheapest-first"
    kubeconfigs = (
        {"secret": "worker-kubeconfig"},
        {"externalSecret": {"store": "vault", "storeKind": "ClusterSecretStore", "key": "kubeconfigs/worker", "property": "value"}},
        {"path": "/etc/multikueue/kubeconfigs/worker"},
    )
    workers = sorted({w for q in queues for w in queue_workers(q, clusters)})
    chosen = draw(st.lists(st.sampled_from(workers), min_size=1, max_size=3, unique=True))
    if chosen:
        out["workers"] = {w: {"kubeconfig": draw(st.sampled_from(kubeconfigs))} for w in chosen}
    return out


@st.composite
def team_extras(draw: st.DrawFn, document: dict[str, Any], on: list[dict[str, Any]], classes: list[str], tiers: list[str]) -> None:
    """What a team may say beyond its quotas: ingress, alerts, names, endpoints, registries, tenancy, priority classes."""
    if draw(st.booleans()):
        document["allowedIngressNamespaces"] = ["monitoring"]
    if draw(st.booleans()):
        document["alerts"] = {
            "gpuUnderutilized": {"threshold": 10, "for": "2h", "severity": "info"},
            "quotaConsumption": {"enabled": False},
        }
    if draw(st.booleans()):
        document["names"] = {
            "role": "{team}-work",
            "roleBinding": "{team}-work",
            "resourceQuota": "{team}-quota",
            "priorityClassQuota": "{team}-no-priority",
            "networkPolicy": "{team}-isolate",
            "localQueue": "{namespace}-jobs",
            "limitRange": "{team}-defaults",
        }
    if draw(st.booleans()):
        document["registries"] = [f"ghcr.io/contoso-{document['name']}"]
    if draw(st.booleans()):
        document["tenancy"] = {
            "podSecurity": draw(st.sampled_from(("baseline", "restricted"))),
            "serviceTypes": draw(st.sampled_from(([], ["NodePort"], ["NodePort", "LoadBalancer"]))),
            "podExec": draw(st.booleans()),
            "role": [ROLE_RULE],
            "limitRange": draw(st.booleans()),
        }
    if draw(st.booleans()):
        document["priorityClasses"] = sorted(draw(st.sets(st.sampled_from(classes), min_size=1)))
    serving = [c["name"] for c in on if c["name"] != MANAGER]
    if serving and draw(st.booleans()):
        metrics = {
            "requests": "http_requests_total",
            "errors": {"code": "5.."},
            "latency": "http_request_duration_seconds",
            "selector": {"service": "a"},
        }
        endpoints: list[dict[str, Any]] = [{"name": "a", "tier": draw(st.sampled_from(tiers)), "clusters": serving[:1], "metrics": metrics}]
        if draw(st.booleans()):
            endpoints[0]["runbookUrl"] = "https://runbooks.example/a"
        if draw(st.booleans()):  # another endpoint's metrics: the first's by a merge key, its own selector
            endpoints.append(
                {
                    "name": "b",
                    "tier": draw(st.sampled_from(tiers)),
                    "clusters": serving,
                    "metrics": merged(metrics, selector={"service": "b"}),
                }
            )
        document["endpoints"] = endpoints


PER_POOL_OPERATOR = "v26.7.0"  # the first GPU Operator release fleetgen renders an NVIDIADriver per node pool for
PER_POOL_DRIVERS = ("580.173.02", "595.91.07")  # drivers it lists that run CUDA 13.0


@st.composite
def drivers_per_pool(draw: st.DrawFn, fleet: dict[str, Any]) -> dict[str, Any]:
    """Half the fleets run the GPU Operator that manages the driver with one NVIDIADriver per GPU pool: every version
    set on a driver it lists, the fleet's upgrade policy, and on some pools a driver of their own and fields of the
    policy of their own."""
    if not draw(st.booleans()):
        return fleet
    for versions in fleet["versionSets"].values():
        versions["driver"] = PER_POOL_DRIVERS[0]
        if "gpuOperator" in versions:
            versions["gpuOperator"] = PER_POOL_OPERATOR
    wait = {"kueueJobs": draw(st.booleans()), "timeoutSeconds": draw(st.sampled_from([0, 3600, 86400]))}
    policy = {
        "maxParallelUpgrades": draw(st.integers(1, 4)),
        "maxUnavailable": draw(st.sampled_from([1, "25%", "50%"])),
        "drain": {"enabled": draw(st.booleans()), "timeoutSeconds": draw(st.sampled_from([300, 1800])), "deleteEmptyDir": True},
        "waitForCompletion": wait,
        "podDeletion": {"timeoutSeconds": 600, "force": draw(st.booleans()), "deleteEmptyDir": draw(st.booleans())},
    }
    operator: dict[str, Any] = {"version": PER_POOL_OPERATOR, "driverCrd": True, "driverUpgrade": policy}
    fleet["platform"] = {**fleet.get("platform", {}), "gpuOperator": operator}
    if "upgrade" in fleet:  # the finished upgrade moved the drivers to where they are now, a canary pool first or not
        first = fleet["clusters"][0]
        gpu_pools = [p["name"] for p in first["nodePools"] if p["gpusPerNode"]]
        canary = draw(st.sampled_from([None, *gpu_pools]))
        fleet["upgrade"] = upgrade_history(first["name"], PER_POOL_DRIVERS[0], canary)
    shared = Counter(id(pool) for cluster_ in fleet["clusters"] for pool in cluster_["nodePools"])
    for cluster_ in fleet["clusters"]:
        cluster_.get("platform", {}).pop("gpuOperator", None)  # the fleet's operator everywhere
        gpu = [p for p in cluster_["nodePools"] if p["gpusPerNode"]]
        for pool in gpu:
            driver: dict[str, Any] = {}
            if draw(st.integers(0, 2)) == 0:
                driver["version"] = draw(st.sampled_from(PER_POOL_DRIVERS))
            if draw(st.integers(0, 3)) == 0:  # a few fields of its own, or every one (the fleet's policy, written out)
                short = {"maxParallelUpgrades": draw(st.integers(1, 8)), "drain": {"force": draw(st.booleans())}}
                driver["upgrade"] = draw(st.sampled_from([short, policy]))
            if draw(st.integers(0, 3)) == 0:  # metadata of its driver pods: what a team's monitoring selects them by
                driver["podLabels"] = {"fleetgen.test/driver-pool": pool["name"]}
                driver["podAnnotations"] = {"fleetgen.test/owner": draw(st.sampled_from(["platform", "gpu team"]))}
            if driver:
                pool["driver"] = driver
        # the fleet names the pool a new driver reaches first, or leaves it to the smallest: one pool a cluster (validate
        # refuses a second), so never a pool another cluster lists too (one object, written as a YAML alias)
        own = [p for p in gpu if shared[id(p)] == 1]
        if own and draw(st.booleans()) and not any(p.get("driver", {}).get("canary") for p in gpu):
            own[draw(st.integers(0, len(own) - 1))].setdefault("driver", {})["canary"] = True
    return fleet


@st.composite
def secret_stores(draw: st.DrawFn, engine: str = "flux") -> dict[str, Any] | None:
    """A `secrets` section (the External Secrets Operator's store, or SOPS with Flux), or None: created by hand."""
    choices: list[dict[str, Any] | None] = [None, {"externalSecrets": {"clusterSecretStore": "fleet-store"}}]
    choices.append({"externalSecrets": {"clusterSecretStore": "vault", "keyPrefix": "fleet/", "refreshInterval": "15m"}})
    if engine == "flux":
        choices.append({"sops": {"secretName": draw(st.sampled_from(["sops-age", "sops-gpg"]))}})
    return draw(st.sampled_from(choices))


@st.composite
def fleets(draw: st.DrawFn, files: bool = False) -> dict[str, Any]:
    """A valid fleet as a dict. With `files`, it may name files beside fleet.yaml too (its own facts, hand-written
    resources), which `write_fleet` writes."""
    clusters: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 5))):
        clusters.append(draw(cluster(i, tuple(p for c in clusters for p in c["nodePools"] if not isinstance(p, Merged)))))
    mk = draw(multi_kueue(clusters)) if draw(st.booleans()) else None
    if mk is not None:
        clusters.append(manager_cluster(draw(st.booleans())))
    production = [c for c in clusters if c["environment"] == "production"]
    for c in production:
        c["versionSet"] = "current"  # production clusters run one row of the matrix
    if len(production) >= 2 and draw(st.booleans()):
        production[0]["drPartner"], production[1]["drPartner"] = production[1]["name"], production[0]["name"]
    if files and draw(st.booleans()):
        clusters[0]["extraResources"] = [HAND_WRITTEN]
    priority_classes = [
        {"name": "exploratory", "value": 1000, "globalDefault": True, "preemptionPolicy": "Never"},
        *draw(st.lists(st.sampled_from(PRIORITY_CLASSES), unique_by=lambda p: p["name"])),
    ]
    classes = [p["name"] for p in priority_classes]
    tiers = ["real-time", "near-real-time", "batch", "offline"]
    default_slice = draw(st.sampled_from([None, *sorted({r[11:] for c in clusters for p in c["nodePools"] for r in units(p) if r != GPU})]))
    teams = []
    for t in range(draw(st.integers(1, 3))):
        on = draw(st.lists(st.sampled_from(range(len(clusters))), min_size=1, max_size=len(clusters), unique=True))
        teams.append({"name": f"team{t}", "on": sorted(on), "queues": {}})
    for team in teams:
        for c in team["on"]:
            team["queues"][c] = draw(st.sampled_from(_queues_of(clusters[c], mk)))
        if mk is not None and len(clusters) - 1 in team["on"]:  # on the manager: its queue's workers take the defaults
            queue = next(q for q in mk["queues"] if q["name"] == team["queues"][len(clusters) - 1])
            team["on"] = [c for c in team["on"] if clusters[c]["name"] not in queue_workers(queue, clusters)]
        team["names"] = [clusters[c]["name"] for c in team["on"]]
    shared_quota: dict[str, Any] = {"requests": {"cpu": 4, "memory": "16Gi", "gpu": 0}, "pods": 20}
    if default_slice:
        shared_quota["requests"]["slices"] = {default_slice: 0}  # a slice default every placement overrides
    documents = []
    for t, team in enumerate(teams):
        quota: dict[str, Any] = shared_quota  # the same defaults for every team: one anchor, aliased
        if mk is not None and len(clusters) - 1 in team["on"]:  # a GPU on each worker its manager queue places it on
            quota = merged(quota, requests={**quota["requests"], "gpu": 1})
        gpu_limits = draw(st.booleans())  # GPU limits equal to the requests (the API server wants them equal), everywhere
        if gpu_limits:
            quota = merged(quota, limits={"cpu": 8, "memory": "32Gi", "gpu": quota["requests"]["gpu"]}, persistentVolumeClaims=4)
        placements: dict[str, Any] = {}
        for c in team["on"]:
            placements[clusters[c]["name"]] = draw(placement(clusters[c], team, teams, c, mk, default_slice, gpu_limits))
        _share_alike(placements, draw)
        if all("storageClasses" in clusters[c] for c in team["on"]) and draw(st.booleans()):
            quota = merged(quota, storage={"managed-csi-premium": "1Ti"})
        document = {
            "name": f"team{t}",
            "group": GROUPS[t],
            "costCenter": f"cc-{1000 + t}",
            "project": f"project-{t}",
            "quota": quota,
            "clusters": placements,
        }
        draw(team_extras(document, [clusters[c] for c in team["on"]], classes, tiers))
        documents.append(document)
    for c, cluster_ in enumerate(clusters):
        placed = [f"team{t}" for t, team in enumerate(teams) if c in team["on"]]
        if "volcano" in cluster_ and placed:  # Volcano's queue of each team there: its weight, and a guarantee of nothing
            cluster_["volcano"]["weights"] = {placed[0]: 2}
            cluster_["volcano"]["guarantees"] = {placed[0]: {"gpu": 0, "cpu": 0, "memory": 0, "slices": {}}}
    fleet: dict[str, Any] = {
        "apiVersion": "fleetgen/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "generated", "owner": "platform", "costCenter": "cc-1000"},
        "gitops": draw(gitops()),
        "versionSets": {
            "current": dict(VERSIONS),
            "next": dict(VERSIONS, cuda=draw(st.sampled_from(NEXT_CUDA)), gpuOperator="v25.10.1"),
        },
        "priorityClasses": priority_classes,
        "clusters": clusters,
        "teams": documents,
        "pricing": {"gpuHour": dict(GPU_HOUR), "nodeHour": dict(NODE_HOUR)},
        "approvals": [
            {"name": "large-gpu-allocation", "when": {"gpuQuotaAtLeast": 8}, "approvers": ["platform-leads"]},
            {"name": "more-capacity", "when": {"addedGpusAtLeast": 8}, "approvers": ["finance"]},
            {"name": "dearer", "when": {"addedMonthlyCostAtLeast": 10000}, "approvers": ["finance"]},
            *OTHER_RULES,
        ],
    }
    if mk is not None:
        fleet["multiKueue"] = mk
    secrets = draw(secret_stores(fleet["gitops"]["engine"]))
    if secrets is not None:
        fleet["secrets"] = secrets
        if draw(st.booleans()):
            clusters[0]["imagePullSecret"] = "registry-pull"  # the store writes it in each team namespace there
    draw(fleet_sections(fleet, files))
    return draw(drivers_per_pool(fleet))


# Rules the capacity oracle does not model: each fires on another kind of change.
OTHER_RULES = (
    {"name": "new-cluster", "description": "A cluster is a budget line", "when": {"newCluster": True}, "approvers": ["platform-leads"]},
    {"name": "removed-cluster", "when": {"removedCluster": True}, "approvers": ["platform-leads"]},
    {"name": "production-versions", "when": {"productionVersions": True}, "approvers": ["platform-leads"]},
    {"name": "priority-classes", "when": {"priorityClasses": True}, "approvers": ["platform-leads"]},
    {"name": "long-grants", "when": {"grantLongerThanDays": 90}, "approvers": ["platform-leads"]},
    {"name": "training-grants", "when": {"workload": "training"}, "approvers": ["platform-leads"]},
    {"name": "team-budget", "when": {"budget": {"team": "team0", "monthly": 50000}}, "approvers": ["finance"]},
    {"name": "centre-budget", "when": {"budget": {"costCenter": "cc-1001", "monthly": 50000}}, "approvers": ["finance"]},
)


def _queues_of(cluster_: dict[str, Any], mk: dict[str, Any] | None) -> list[str]:
    if mk is not None and cluster_["name"] == MANAGER:
        return [q["name"] for q in mk["queues"]]
    return [q["name"] for q in cluster_["queues"]]


@st.composite
def placement(
    draw: st.DrawFn,
    cluster_: dict[str, Any],
    team: dict[str, Any],
    teams: list[dict[str, Any]],
    c: int,
    mk: dict[str, Any] | None,
    default_slice: str | None,
    gpu_limits: bool,
) -> dict[str, Any]:
    """A team on one cluster: its even share of what its queue owns, and now and then storage, volumes or a grant."""
    queue = team["queues"][c]
    out: dict[str, Any] = {"queue": queue}
    if mk is not None and cluster_["name"] == MANAGER:
        return out  # the manager's queues hand out the workers' GPUs: the team's defaults go to the workers
    sharing = sum(1 for other in teams if c in other["on"] and other["queues"][c] == queue)
    if mk is not None and any("select" in q or cluster_["name"] in q["workers"] for q in mk["queues"]):
        sharing += sum(1 for other in teams if MANAGER in other["names"])  # room for the GPU each team on the manager gets here
    owned = queue_owns(cluster_, queue)  # each team's quota: its even share of what its queue owns
    requests: dict[str, Any] = {"gpu": owned.get(GPU, 0) // sharing}
    slices = {r.removeprefix("nvidia.com/"): n // sharing for r, n in owned.items() if r != GPU and n // sharing}
    if default_slice:
        slices.setdefault(default_slice, 0)
    if slices:
        requests["slices"] = slices
    if draw(st.booleans()):
        requests |= {"cpu": 4, "memory": "16Gi"}
    out["requests"] = requests
    if queue == cluster_["queues"][0]["name"] and len(cluster_["queues"]) > 1 and draw(st.integers(0, 3)) == 0:
        del out["queue"]  # joins the first queue without saying so: deprecated, `migrate` names it
    if gpu_limits:
        out["limits"] = {"gpu": requests["gpu"]}
    if draw(st.booleans()):
        out |= {"limits": {"cpu": 16, "memory": "64Gi", **out.get("limits", {})}, "pods": 40}
    if "storageClasses" in cluster_ and draw(st.booleans()):
        out |= {"storage": {"managed-csi-premium": "2Ti", "azurefile-csi-premium": "1Ti"}, "persistentVolumeClaims": 4}
        out["volumes"] = [
            {"name": "datasets", "size": "500Gi"},
            {
                "name": "checkpoints",
                "size": "1Ti",
                "storageClass": "azurefile-csi-premium",
                "accessMode": "ReadWriteMany",
                "mountPath": "/ckpt",
            },
        ]
    if draw(st.integers(0, 3)) == 0:  # a time-bound grant, far ahead of any run of the suite
        out |= {
            "until": "2099-12-31",
            "reason": "Quarterly retraining",
            "workload": draw(st.sampled_from(("training", "inference", "notebooks"))),
        }
    return out


def _share_alike(placements: dict[str, Any], draw: st.DrawFn) -> None:
    """Placements that are the same written once and aliased, as a platform team writes shared values."""
    names = list(placements)
    for i, name in enumerate(names):
        for earlier in names[:i]:
            if placements[earlier] == placements[name] and placements[earlier] is not placements[name] and draw(st.booleans()):
                placements[name] = placements[earlier]
                break


@st.composite
def git_credentials(draw: st.DrawFn, engines: tuple[str, ...] = ("flux", "argocd")) -> dict[str, Any]:
    """A `gitops` section: a public repository, or a private one with a credential whose kind fits the URL and engine."""
    engine = draw(st.sampled_from(engines))
    kinds = [None, "basic-auth", "ssh", "github-app", *(["bearer-token"] if engine == "flux" else [])]
    kind = draw(st.sampled_from(kinds))
    url = "ssh://git@github.com/contoso/generated" if kind == "ssh" else "https://github.com/contoso/generated"
    gitops: dict[str, Any] = {"engine": engine, "repository": url}
    if kind is not None:
        credentials = {"kind": kind, "secretName": draw(st.sampled_from(["fleet-git", "git-credentials"]))}
        if engine == "argocd":
            credentials["argocdSecretType"] = draw(st.sampled_from(["repository", "repo-creds"]))
        gitops["credentials"] = credentials
    return gitops


@st.composite
def gitops(draw: st.DrawFn) -> dict[str, Any]:
    """Flux or Argo CD (a hub or one per cluster), a public or private repository, and where the tree sits in it."""
    out: dict[str, Any] = draw(git_credentials())
    if draw(st.booleans()):
        out |= {"branch": "main", "path": draw(st.sampled_from((".", "fleet"))), "interval": draw(st.sampled_from(("5m", "1m30s")))}
    if out["engine"] == "argocd" and draw(st.booleans()):
        mode = draw(st.sampled_from(("hub", "in-cluster")))
        argocd: dict[str, Any] = {"mode": mode, "applicationHealth": draw(st.sampled_from(("render", "yours")))}
        if mode == "hub":
            argocd["progressiveSync"] = draw(st.booleans())
        out["argocd"] = argocd
    return out


def platform_defaults() -> dict[str, Any]:
    """Every add-on with every field written out, at fleetgen's defaults."""
    return Platform().model_dump(mode="json", by_alias=True)


@st.composite
def fleet_sections(draw: st.DrawFn, fleet: dict[str, Any], files: bool) -> None:
    """The fleet-wide sections around the clusters and teams."""
    clusters, teams = fleet["clusters"], fleet["teams"]
    classes = [p["name"] for p in fleet["priorityClasses"]]
    if draw(st.booleans()):
        fleet["metadata"] |= {"description": "A generated fleet", "platformOwners": ["platform-leads"]}
    if draw(st.booleans()):
        fleet["capacity"] = {"gpuOvercommit": 1.0, "leadTimeWeeks": draw(st.integers(4, 26))}
    if draw(st.booleans()):
        fleet["scheduling"] = {
            "workloadPriorityClasses": draw(st.booleans()),
            "defaultPriorityClasses": {"training": draw(st.sampled_from(classes)), "notebooks": "exploratory", "real-time": classes[-1]},
        }
    if draw(st.booleans()):
        fleet["naming"] = {
            "role": "gpu-work",
            "roleBinding": "gpu-work",
            "resourceQuota": "quota",
            "priorityClassQuota": "no-priority",
            "networkPolicy": "isolate",
            "localQueue": "{team}-queue",
            "limitRange": "defaults",
        }
    if any("registries" in t for t in teams) or draw(st.booleans()):  # a team's own registries add to these
        fleet["registries"] = ["contosoai.azurecr.io", "nvcr.io/nvidia"]
    if draw(st.booleans()):
        fleet["tenancy"] = {
            "podSecurity": draw(st.sampled_from(("restricted", "baseline"))),
            "serviceTypes": draw(st.sampled_from(([], ["NodePort", "LoadBalancer"]))),
            "priorityClasses": ["exploratory"],
            "role": [ROLE_RULE, {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "create", "delete"]}],
            "limitRange": draw(st.booleans()),
        }
    if draw(st.booleans()):
        fleet["alerts"] = {
            "namespace": "monitoring",
            "ruleLabels": {"release": "kube-prometheus-stack"},
            "runbookBaseUrl": "https://runbooks.example/gpu",
            "rules": {"gpuTemperature": {"threshold": 83, "for": "5m", "severity": "critical", "enabled": True}},
        }
    uses_offline = any(e["tier"] == "offline" for t in teams for e in t.get("endpoints", ()))
    if uses_offline or draw(st.booleans()):
        fleet["slo"] = {"tiers": {"offline": {"availability": 99.0, "latencyP99": "2h"}}}
    if draw(st.booleans()):
        platform = platform_defaults()
        platform["gpuOperator"]["driverSource"] = draw(st.sampled_from(("operator", "node-image")))
        platform["kueue"]["fairSharing"] = draw(st.booleans())
        platform["jupyterhub"]["images"] = [NOTEBOOK]
        fleet["platform"] = platform
    if any(c.get("platform") for c in clusters) and "platform" not in fleet:
        fleet["platform"] = {"jupyterhub": {"images": [NOTEBOOK]}}
    if draw(st.booleans()):
        fleet["pricing"]["currency"] = "USD"
    if draw(st.booleans()):
        fleet["cloudAccounts"] = [cloud_account(clusters[: draw(st.integers(1, len(clusters)))])]  # the rest in no account
    if draw(st.booleans()):
        fleet["rollout"] = draw(rollout(clusters))
    if draw(st.booleans()):
        fleet["upgrade"] = upgrade_history(clusters[0]["name"])
    if files and draw(st.booleans()):
        fleet["compatibility"] = {"factsFile": FACTS_FILE}


def cloud_account(clusters: list[dict[str, Any]]) -> dict[str, Any]:
    """One account over `clusters`, its quotas roomy enough for every pool there at its largest."""
    families = {
        "StandardNCADSA100v4Family": {"vcpus": 100000, "gpus": 10000},
        "standardNDSH100v5Family": {"vcpus": 100000},
        "Standard NCASv3_T4 Family": {"vcpus": 100000},
        "unpricedFamily": {"vcpus": 100000},
    }
    regions = {r: {"families": families, "spotVcpus": 1000000} for r in sorted({c["region"] for c in clusters})}
    return {"name": "contoso-ai", "clusters": [c["name"] for c in clusters], "regions": regions}


@st.composite
def rollout(draw: st.DrawFn, clusters: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "soak": draw(st.sampled_from(("48h", "2d", "90m"))),
        "maxWaveSize": draw(st.integers(1, 3)),
        "windows": [{"days": ["tue", "wed", "thu"], "start": "09:00", "end": "17:00"}],
        "freezes": [{"start": "2026-12-20", "end": "2027-01-03", "reason": "Holidays"}],
    }
    canaries = [c["name"] for c in clusters if c["environment"] == "production" and any(p["gpusPerNode"] for p in c["nodePools"])]
    if canaries and draw(st.integers(0, 3)):
        out["productionCanary"] = draw(st.sampled_from(canaries))
    return out


def upgrade_history(cluster_name: str, driver: str = VERSIONS["driver"], canary_pool: str | None = None) -> dict[str, Any]:
    """A finished upgrade, as `upgrade apply` leaves it: the versions every cluster runs now. With `canary_pool`, the
    driver reached that pool of the cluster a wave ahead of the rest of its pools (a driver per pool)."""
    wave = {
        "wave": 1,
        "step": {"driver": driver},
        "clusters": [cluster_name],
        "appliedAt": "2026-01-05T10:00:00Z",
        "verifiedAt": "2026-01-05T12:00:00Z",
        "overrideSoak": "the only wave",
    }
    waves = [wave]
    if canary_pool is not None:
        ahead = wave | {"pools": [f"{cluster_name}/{canary_pool}"], "overrideSoak": "the canary pool's wave"}
        waves = [ahead, wave | {"wave": 2, "appliedAt": "2026-01-05T13:00:00Z", "verifiedAt": "2026-01-05T15:00:00Z"}]
    return {
        "target": {"driver": driver},
        "nodeImage": "ubuntu-2404-gpu-580",
        "waves": waves,
        "closedAt": "2026-01-06T10:00:00Z",
    }


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]  # libyaml's emitter: ten times as fast
    """PyYAML's safe dumper, writing a `Merged` mapping as a merge key and its own keys."""


def _represent_merged(dumper: Any, data: Merged) -> yaml.Node:
    base = data.base
    if any(key not in data for key in base):
        return dumper.represent_dict(dict(data))  # a key dropped since: the merge would bring it back
    own = {k: v for k, v in data.items() if k not in base or base[k] != v}
    node = dumper.represent_dict(own)
    node.value.insert(0, (yaml.ScalarNode("tag:yaml.org,2002:merge", "<<"), dumper.represent_data(base)))
    return node


_Dumper.add_representer(Merged, _represent_merged)


def fleet_text(fleet: dict[str, Any]) -> str:
    return yaml.dump(fleet, Dumper=_Dumper, sort_keys=False, allow_unicode=True)


def write_fleet(folder: Path, fleet: dict[str, Any]) -> Path:
    """fleet.yaml in `folder`, with every file it names: the fleet's own facts, hand-written cluster resources."""
    path = folder / "fleet.yaml"
    path.write_text(fleet_text(fleet), encoding="utf-8")
    if fleet.get("compatibility", {}).get("factsFile"):
        (folder / fleet["compatibility"]["factsFile"]).write_text("# no facts of the fleet's own yet\n{}\n", encoding="utf-8")
    for cluster_ in fleet["clusters"]:
        for extra in cluster_.get("extraResources", ()):
            target = folder / "clusters" / cluster_["name"] / extra
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: extra-{cluster_['name']}, namespace: default}}\n", encoding="utf-8"
            )
    return path


def edited(fleet: dict[str, Any]) -> dict[str, Any]:
    """A deep copy to mutate (values shared by an alias stay shared)."""
    return copy.deepcopy(fleet)


FIXED = ("apiVersion", "kind")  # what every fleet.yaml says alike: no pull request edits it


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every place in a fleet dict with what it holds, containers and leaves, in document order."""
    found = [(path, value)] if path else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if not (path == () and key in FIXED):
            found += _places(item, (*path, key))
    return found


def _holder(fleet: dict[str, Any], path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        fleet = fleet[key]
    return fleet


@st.composite
def pull_requests(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """A generated fleet (the base), the same fleet after a pull request of 1-3 edits anywhere in it (the head), and
    what each edit did: a number moved, a flag flipped, a string swapped for one the same field holds elsewhere, or an
    entry dropped from a list or mapping. Edits reach every section, shared ones (prices, priority classes, version
    sets, the platform) as well as a team or a cluster; an edit to a value shared by an alias moves it everywhere, as
    an edit to an anchor does. Not every head is valid: a test keeps the pairs whose both sides load."""
    base = draw(fleets())
    head = edited(base)
    done = []
    for _ in range(draw(st.integers(1, 3))):
        places = _places(head)
        path, value = draw(st.sampled_from(places), label="place")
        holder, key = _holder(head, path), path[-1]
        if isinstance(value, bool):
            holder[key] = not value
        elif isinstance(value, int):
            holder[key] = max(0, value + draw(st.sampled_from((-1, 1, 8))))
        elif isinstance(value, float):
            holder[key] = value * draw(st.sampled_from((0.5, 2.0)))
        elif isinstance(value, str):
            others = sorted({v for p, v in places if isinstance(v, str) and p[-1] == key and v != value})
            if not others:
                continue
            holder[key] = draw(st.sampled_from(others))
        else:  # a list or a mapping: drop one of its entries
            entries = list(range(len(value))) if isinstance(value, list) else list(value)
            if not entries:
                continue
            dropped = draw(st.sampled_from(entries))
            del value[dropped]
            done.append(f"{'.'.join(map(str, path))}: {dropped!r} dropped")
            continue
        done.append(f"{'.'.join(map(str, path))}: {value!r} -> {holder[key]!r}")
    return base, head, done

"""A hypothesis strategy of valid fleets with the variants real fleets have, shared by the property tests.

1-5 clusters of 1-4 node pools each, mixing whole GPUs, MIG layouts taken from fleetgen's own partitioning
facts (a named profile everywhere, or the GPU's balanced mix) and time-sliced pools (renamed or not), a
CPU-only pool now and then; 1-3 ClusterQueues per cluster that split each pool's GPUs, shares and slices
between them, sometimes in a cohort (or a cohort under a parent) that holds a share too; teams with GPU and slice quotas on
the clusters they are on, within what their queue owns. The fleet is a plain dict (as fleet.yaml's YAML
would load); `fleet_text` turns it into the text validate reads.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import strategies as st

from fleetgen.compat.partitioning import MigGpu, partitioning_facts

VERSIONS = {"kubernetes": "1.35.2", "driver": "580.82.07", "cuda": "13.0", "cudnn": "9.17.0", "containerd": "2.2.1"}
WHOLE_MODELS = ("T4", "A10G", "L4", "A100", "H100")
SHARED_MODELS = ("T4", "A10G", "L4")  # GPUs without MIG: time-slicing is how they are shared
GROUPS = ("5f0c8d2e-3b1a-4c7e-9d2f-6a8b1c3e4d5f", "0a7d3f91-2c4b-4e8a-b6d1-93f2e5c7a810", "c3e1b7a4-8f2d-4a6b-9e5c-1d7f3a9b2e64")
GPU = "nvidia.com/gpu"


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
        "vmSize": draw(st.sampled_from(("Standard_NC24ads_A100_v4", "Standard_ND96isr_H100_v5", "Standard_NC4as_T4_v3", "VM_Unpriced"))),
        "gpusPerNode": draw(st.sampled_from((1, 2, 4, 8))),
        "cpuPerNode": 32,
        "memoryPerNode": "256Gi",
        "maxNodes": draw(st.integers(1, 6)),
        "scaling": draw(st.sampled_from(("spot", "on-demand", "reserved"))),
        "labels": {"fleetgen.test/pool": name},  # one label per pool: no pool's labels hold another's
    }
    if kind == "cpu-only":
        pool["gpusPerNode"] = 0
    elif kind == "mig":
        row, layout = draw(st.sampled_from(LAYOUTS))
        pool |= {"gpuModel": row.gpu, "gpuMemory": row.memory, "partitioning": {"mig": {"layout": layout}}}
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


def _entry(resource: str, amount: int) -> dict[str, Any]:
    return {"gpu": amount} if resource == GPU else {"slices": {resource.removeprefix("nvidia.com/"): amount}}


@st.composite
def cluster(draw: st.DrawFn, index: int) -> dict[str, Any]:
    name = f"c{index}"
    pools = [draw(node_pool(f"p{index}-{p}")) for p in range(draw(st.integers(1, 4)))]
    queues: list[dict[str, Any]] = [{"name": f"q{q}", "flavors": []} for q in range(draw(st.integers(1, 3)))]
    depth = draw(st.integers(0, 2))  # no cohort, one, or one under a parent (a cohort tree)
    cohort = "shared" if depth else None
    cohorts: list[dict[str, Any]] = [{"name": "shared"}, {"name": "root"}][:depth]
    if depth == 2:
        cohorts[0]["parent"] = "root"
    for pool in pools:
        takers = draw(st.lists(st.sampled_from(range(len(queues))), min_size=1, max_size=len(queues), unique=True))
        for q in takers:
            queues[q]["flavors"].append(pool["name"])
        for resource, count in units(pool).items():
            share = count // (len(takers) + depth)  # each cohort of the tree holds a share too
            for q in takers:
                entry = queues[q].setdefault("nominalQuota", {}).setdefault(pool["name"], {})
                _merge(entry, _entry(resource, share))
            for held in cohorts:
                _merge(held.setdefault("nominalQuota", {}).setdefault(pool["name"], {}), _entry(resource, share))
    for queue in queues:
        if cohort:
            queue["cohort"] = cohort
        if not queue["flavors"]:
            queue["flavors"] = [pools[0]["name"]]
            entry: dict[str, Any] = {"gpu": 0, "cpu": 0, "memory": 0}  # owns nothing: every resource the pool yields at 0
            for resource in units(pools[0]):
                _merge(entry, _entry(resource, 0))
            queue.setdefault("nominalQuota", {})[pools[0]["name"]] = entry
    out: dict[str, Any] = {
        "name": name,
        "region": "eastus",
        "environment": draw(st.sampled_from(("dev", "staging", "production"))),
        "versionSet": "current",
        "nodePools": pools,
        "queues": queues,
    }
    if cohorts:
        out["cohorts"] = cohorts
    return out


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


PER_POOL_OPERATOR = "v26.7.0"  # the first GPU Operator release fleetgen renders an NVIDIADriver per node pool for
PER_POOL_DRIVERS = ("580.173.02", "595.91.07")  # drivers it lists that run CUDA 13.0


@st.composite
def drivers_per_pool(draw: st.DrawFn, fleet: dict[str, Any]) -> dict[str, Any]:
    """Half the fleets run the GPU Operator that manages the driver with one NVIDIADriver per GPU pool: the version set
    on a driver it lists, the fleet's upgrade policy, on some pools a driver of their own and fields of the policy
    of their own, and in some clusters a canary pool."""
    if not draw(st.booleans()):
        return fleet
    fleet["versionSets"]["current"]["driver"] = PER_POOL_DRIVERS[0]
    wait = {"kueueJobs": draw(st.booleans()), "timeoutSeconds": draw(st.sampled_from([0, 3600, 86400]))}
    policy = {
        "maxParallelUpgrades": draw(st.integers(1, 4)),
        "maxUnavailable": draw(st.sampled_from([1, "25%", "50%"])),
        "drain": {"enabled": draw(st.booleans()), "timeoutSeconds": draw(st.sampled_from([300, 1800]))},
        "waitForCompletion": wait,
        "podDeletion": {"timeoutSeconds": 600, "force": draw(st.booleans()), "deleteEmptyDir": draw(st.booleans())},
    }
    operator: dict[str, Any] = {"version": PER_POOL_OPERATOR, "driverCrd": True, "driverUpgrade": policy}
    fleet["platform"] = {"gpuOperator": operator}
    for cluster_ in fleet["clusters"]:
        gpu = [p for p in cluster_["nodePools"] if p["gpusPerNode"]]
        for pool in gpu:
            driver: dict[str, Any] = {}
            if draw(st.integers(0, 2)) == 0:
                driver["version"] = draw(st.sampled_from(PER_POOL_DRIVERS))
            if draw(st.integers(0, 3)) == 0:
                driver["upgrade"] = {"maxParallelUpgrades": draw(st.integers(1, 8)), "drain": {"force": draw(st.booleans())}}
            if driver:
                pool["driver"] = driver
        if gpu and draw(st.booleans()):  # the fleet names the pool a new driver reaches first, or leaves it to the smallest
            gpu[draw(st.integers(0, len(gpu) - 1))].setdefault("driver", {})["canary"] = True
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
def fleets(draw: st.DrawFn) -> dict[str, Any]:
    """A valid fleet as a dict."""
    clusters = [draw(cluster(i)) for i in range(draw(st.integers(1, 5)))]
    teams = []
    for t in range(draw(st.integers(1, 3))):
        on = draw(st.lists(st.sampled_from(range(len(clusters))), min_size=1, max_size=len(clusters), unique=True))
        teams.append({"name": f"team{t}", "on": sorted(on), "queues": {}})
    for team in teams:
        for c in team["on"]:
            team["queues"][c] = draw(st.sampled_from([q["name"] for q in clusters[c]["queues"]]))
    documents = []
    for t, team in enumerate(teams):
        placements: dict[str, Any] = {}
        for c in team["on"]:
            queue = team["queues"][c]
            sharing = sum(1 for other in teams if c in other["on"] and other["queues"][c] == queue)
            owned = queue_owns(clusters[c], queue)  # each team's quota: its even share of what its queue owns
            requests: dict[str, Any] = {"gpu": owned.get(GPU, 0) // sharing}
            slices = {r.removeprefix("nvidia.com/"): n // sharing for r, n in owned.items() if r != GPU and n // sharing}
            if slices:
                requests["slices"] = slices
            placements[clusters[c]["name"]] = {"queue": queue, "requests": requests}
        documents.append(
            {
                "name": f"team{t}",
                "group": GROUPS[t],
                "costCenter": f"cc-{1000 + t}",
                "project": f"project-{t}",
                "quota": {"requests": {"cpu": 4, "memory": "16Gi", "gpu": 0}, "pods": 20},
                "clusters": placements,
            }
        )
    secrets = draw(secret_stores())
    if secrets is not None and draw(st.booleans()):
        clusters[0]["imagePullSecret"] = "registry-pull"  # the store writes it in each team namespace there
    fleet = {
        "apiVersion": "fleetgen/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "generated", "owner": "platform", "costCenter": "cc-1000"},
        "gitops": draw(git_credentials(engines=("flux",))),
        **({"secrets": secrets} if secrets is not None else {}),
        "versionSets": {"current": dict(VERSIONS)},
        "priorityClasses": [{"name": "exploratory", "value": 1000, "globalDefault": True, "preemptionPolicy": "Never"}],
        "clusters": clusters,
        "teams": documents,
        "pricing": {
            "gpuHour": {"Standard_NC24ads_A100_v4": 3.67, "Standard_ND96isr_H100_v5": 12.29, "Standard_NC4as_T4_v3": 0.53},
            "nodeHour": {"Standard_D16s_v5": 0.77},
        },
        "approvals": [
            {"name": "large-gpu-allocation", "when": {"gpuQuotaAtLeast": 8}, "approvers": ["platform-leads"]},
            {"name": "more-capacity", "when": {"addedGpusAtLeast": 8}, "approvers": ["finance"]},
            {"name": "dearer", "when": {"addedMonthlyCostAtLeast": 10000}, "approvers": ["finance"]},
        ],
    }
    return draw(drivers_per_pool(fleet))


def fleet_text(fleet: dict[str, Any]) -> str:
    return yaml.safe_dump(fleet, sort_keys=False)


def edited(fleet: dict[str, Any]) -> dict[str, Any]:
    """A deep copy to mutate."""
    return copy.deepcopy(fleet)

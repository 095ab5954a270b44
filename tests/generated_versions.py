"""Fleets generated for the upgrade promises: several clusters a stage, DR pairs, version sets with their own GPU
Operator pins, and the upgrade targets a platform team asks for.

Each fleet is a fleet.yaml text that validates: its version rows come from combinations the compatibility facts
accept (a driver its GPU Operator release lists, a CUDA the driver runs), so a property over these fleets tests
the planner, not the validator. What varies is what made the planner's order, downgrades and evidence go wrong:
how many clusters a stage has, which production clusters are DR partners, which version set (and so which
driver, Kubernetes patch and operator pin) each cluster is on, and the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import strategies as st

# Version rows the facts accept with the GPU Operator release pinned beside them (None: the fleet's platform
# release, v24.3.0, installs the driver). Kubernetes patches differ inside a minor on purpose.
ROWS: tuple[dict[str, str], ...] = (
    {"kubernetes": "1.29.4", "driver": "550.54.15", "cuda": "12.4", "cudnn": "9.1.0", "containerd": "1.7"},
    {"kubernetes": "1.29.10", "driver": "550.90.07", "cuda": "12.4", "cudnn": "9.1.0", "containerd": "1.7"},
    {"kubernetes": "1.30.1", "driver": "550.90.07", "cuda": "12.4", "cudnn": "9.1.0", "containerd": "1.7"},
    {"kubernetes": "1.30.5", "driver": "550.90.07", "cuda": "12.4", "cudnn": "9.1.0", "containerd": "1.7", "gpuOperator": "v24.6.1"},
    {"kubernetes": "1.30.1", "driver": "550.54.15", "cuda": "12.4", "cudnn": "9.1.0", "containerd": "1.7", "gpuOperator": "v24.3.0"},
)
# Targets that some generated fleets can reach: a driver that needs a newer operator on some sets, Kubernetes
# patches and minors (one below some clusters' patch, to test downgrades), and images.
TARGETS: tuple[dict[str, str], ...] = (
    {"driver": "560.35.03"},
    {"driver": "550.90.07"},
    {"kubernetes": "1.30.5"},
    {"kubernetes": "1.30"},
    {"kubernetes": "1.31.2"},
    {"kubernetes": "1.30.1"},
    {"cuda": "12.4", "cudnn": "9.3.0"},
)
STAGES = ("dev", "staging", "production")
POOLS = (
    {"vmSize": "Standard_NC4as_T4_v3", "gpuModel": "T4", "gpusPerNode": 1, "cpuPerNode": 3, "memoryPerNode": "24Gi"},
    {"vmSize": "Standard_NV36ads_A10_v5", "gpuModel": "A10G", "gpusPerNode": 1, "cpuPerNode": 34, "memoryPerNode": "400Gi"},
    {"vmSize": "Standard_NC24ads_A100_v4", "gpuModel": "A100", "gpusPerNode": 1, "cpuPerNode": 22, "memoryPerNode": "200Gi"},
)


@dataclass(frozen=True)
class VersionFleet:
    text: str  # fleet.yaml
    environments: dict[str, str]  # cluster -> dev, staging or production
    partners: dict[str, str]  # cluster -> its DR partner, both ways
    rows: dict[str, dict[str, str]]  # cluster -> the versions it runs (gpuOperator only where its set pins one)


OWN_PIN = "v24.6.1"  # a cluster's own platform.gpuOperator.version: it lists 550.90.07 and 560.35.03


def _fleet(
    environments: list[str], sets: list[int], pools: list[int], pairs: int, wave_size: int, pins: list[bool] | None = None
) -> VersionFleet:
    names = [f"{env}-{n}" for n, env in enumerate(environments)]
    production = [name for name, env in zip(names, environments, strict=True) if env == "production"]
    partners: dict[str, str] = {}
    for first, second in list(zip(production[0::2], production[1::2], strict=False))[:pairs]:
        partners |= {first: second, second: first}
    used = sorted(set(sets))
    version_sets = {f"set-{i}": ROWS[i] for i in used}
    clusters: list[dict[str, Any]] = []
    for n, name in enumerate(names):
        pool = {
            "name": "gpu",
            **POOLS[pools[n]],
            "maxNodes": 2,
            "scaling": "spot",
            "labels": {"accelerator": POOLS[pools[n]]["gpuModel"].lower()},
        }
        cluster: dict[str, Any] = {
            "name": name,
            "region": "eastus" if n % 2 == 0 else "westeurope",
            "environment": environments[n],
            "versionSet": f"set-{sets[n]}",
            "nodePools": [pool],
        }
        if name in partners:
            cluster["drPartner"] = partners[name]
        if pins and pins[n] and environments[n] != "production" and ROWS[sets[n]]["driver"] == "550.90.07":
            cluster["platform"] = {"gpuOperator": {"version": OWN_PIN}}
        clusters.append(cluster)
    fleet = {
        "apiVersion": "fleetgen/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "generated", "owner": "platform", "costCenter": "cc-1000"},
        "gitops": {"engine": "flux", "repository": "https://github.com/contoso/generated"},
        "platform": {"gpuOperator": {"version": "v24.3.0"}},
        "versionSets": version_sets,
        "priorityClasses": [{"name": "exploratory", "value": 1000, "globalDefault": True}],
        "rollout": {"maxWaveSize": wave_size},
        "clusters": clusters,
    }
    rows = {
        name: {"gpuOperator": "platform" in cluster and OWN_PIN or "v24.3.0", **ROWS[sets[n]]}
        for n, (name, cluster) in enumerate(zip(names, clusters, strict=True))
    }
    return VersionFleet(yaml.safe_dump(fleet, sort_keys=False), dict(zip(names, environments, strict=True)), partners, rows)


@st.composite
def version_fleets(draw: st.DrawFn) -> VersionFleet:
    """1 to 6 clusters over dev, staging and production (several a stage), up to two DR pairs among the
    production clusters, dev and staging clusters each on one of up to three version sets with their own operator
    pins, production on one of them; some dev and staging clusters pin their own GPU Operator release."""
    count = draw(st.integers(1, 6))
    environments = draw(st.lists(st.sampled_from(STAGES), min_size=count, max_size=count))
    chosen = draw(st.lists(st.integers(0, len(ROWS) - 1), min_size=1, max_size=3, unique=True))
    production_set = draw(st.sampled_from(chosen))  # validate: production clusters run identical versions
    sets = [production_set if env == "production" else draw(st.sampled_from(chosen)) for env in environments]
    pools = draw(st.lists(st.integers(0, len(POOLS) - 1), min_size=count, max_size=count))
    pins = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    return _fleet(environments, sets, pools, draw(st.integers(0, 2)), draw(st.integers(1, 3)), pins)


def targets() -> st.SearchStrategy[dict[str, str]]:
    return st.sampled_from(TARGETS)

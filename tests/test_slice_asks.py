"""`fleetgen job new --gpu-slice`: a Job that asks for MIG slices or shared GPUs, checked like whole GPUs are.

Each test runs the installed `fleetgen` on the partitioned test fleets (tests/cases) and checks what
it prints against the tree the same fleet renders: the team's ResourceQuota and the ClusterQueue
flavors that hand the slice out, and kubernetes-validate strict at the cluster's version.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from test_golden_paths import Run, Schemas, check_schema, job_new, printed, rendered

from fleetgen.checks.load import load_fleet
from fleetgen.jobs.slice_asks import node_share

MIG = REPO / "tests" / "cases" / "mig-a100-inference" / "fleet.yaml"
T4 = REPO / "tests" / "cases" / "timesliced-t4-dev" / "fleet.yaml"


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = job["spec"]["template"]["spec"]
    return spec


def _flavors_handing_out(tree: dict[tuple[str, str, str], dict[str, Any]], ns: str, resource: str) -> dict[str, int]:
    """Flavor -> nominal quota of `resource` in the ClusterQueue of the namespace's LocalQueue."""
    [local] = [body for (kind, namespace, _), body in tree.items() if kind == "LocalQueue" and namespace == ns]
    queue = tree[("ClusterQueue", "", local["spec"]["clusterQueue"])]
    return {
        flavor["name"]: int(r["nominalQuota"])
        for group in queue["spec"]["resourceGroups"]
        for flavor in group["flavors"]
        for r in flavor["resources"]
        if r["name"] == resource
    }


@pytest.mark.parametrize(
    ("fleet_file", "cluster", "team", "asked", "resource", "pools", "cpu", "memory"),
    [
        # 1g.10gb is 1 of the 7 compute slices of either A100 layout, of a node's room after the system reserve
        # (1 CPU, 4Gi): 21 CPUs / 7, 196Gi / 7
        (MIG, "inference-eastus", "search", "mig-1g.10gb", "nvidia.com/mig-1g.10gb", ["a100-mig", "a100-mixed"], "3", "28Gi"),
        # 3g.40gb is 3 of 7 on the mixed layout only: 21 x 3/7 CPUs; its memory share (84Gi) is capped by the quota's 64Gi
        (MIG, "inference-eastus", "ranking", "3g.40gb", "nvidia.com/mig-3g.40gb", ["a100-mixed"], "9", "64Gi"),
        # a renamed T4 share is a quarter of a 3-CPU, 24Gi node's room: 2 CPUs, 20Gi
        (T4, "dev-eastus", "notebooks", "gpu.shared", "nvidia.com/gpu.shared", ["t4-shared"], "500m", "5Gi"),
    ],
    ids=["mig-1g-two-pools", "mig-3g-mixed-pool", "time-sliced-renamed"],
)
def test_a_slice_job_requests_the_slice_on_the_pools_that_yield_it(
    cli_run: Run,
    crd_schemas: Schemas,
    fleet_file: Path,
    cluster: str,
    team: str,
    asked: str,
    resource: str,
    pools: list[str],
    cpu: str,
    memory: str,
) -> None:
    fleet = load_fleet(fleet_file).fleet
    done = job_new(cli_run, fleet_file, "--team", team, "--cluster", cluster, "--name", "nb", "--gpu-slice", asked)
    [job] = printed(done)
    check_schema(job, fleet, cluster, crd_schemas)
    [container] = _pod(job)["containers"]
    assert container["resources"]["requests"] == {"cpu": _text(cpu), "memory": memory, resource: 1}
    assert container["resources"]["limits"] == container["resources"]["requests"]
    assert "nvidia.com/gpu" not in container["resources"]["requests"] or resource == "nvidia.com/gpu"
    # the pod may land only on the pools that yield the slice, and the team's queue hands each of them out
    by_name = {p.name: p for c in fleet.clusters for p in c.node_pools}
    pod = _pod(job)
    if "nodeSelector" in pod:
        landing = [name for name in by_name if pod["nodeSelector"].items() <= by_name[name].labels.items()]
    else:
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        landing = [
            name for name in by_name for t in terms if all(by_name[name].labels.get(e["key"]) in e["values"] for e in t["matchExpressions"])
        ]
    assert sorted(landing) == sorted(pools)
    tree = rendered(fleet, cluster)
    ns = f"team-{team}"
    handed = _flavors_handing_out(tree, ns, resource)
    assert all(handed[pool] > 0 for pool in pools), handed
    hard = tree[("ResourceQuota", ns, "gpu-quota")]["spec"]["hard"]
    assert int(hard[f"requests.{resource}"]) >= 1
    assert f"1 pod(s) x 1 {resource} ({by_name[pools[0]].gpu_model})" in done.stderr


def _text(cpu: str) -> int | str:
    return int(cpu) if cpu.isdigit() else cpu


@pytest.mark.parametrize(
    ("fleet_file", "args", "message"),
    [
        (
            MIG,
            ["--team", "search", "--gpu-slice", "mig-1g.10gb", "--nodes", "8"],
            "team search's mig-1g.10gb quota on inference-eastus is 7; this asks for 8 (8 x 1): ask for at most 7",
        ),
        (
            MIG,
            ["--team", "ranking", "--gpu-slice", "mig-3g.40gb", "--gpus", "2"],
            "a node of inference-eastus yields at most 1 nvidia.com/mig-3g.40gb; ask for at most 1 per pod (--gpus)",
        ),
        (
            MIG,
            ["--team", "search", "--gpu-slice", "2g.20gb"],
            "team search has no mig-2g.20gb quota on inference-eastus (its slice quotas: mig-1g.10gb); add slices: {mig-2g.20gb: N}",
        ),
        (
            MIG,
            # mixed MIG pools yield slices only, so the fleet cannot give a team whole GPUs there: its quota says so first
            ["--team", "search", "--gpus", "1"],
            "team search's GPU quota on inference-eastus is 0; this asks for 1 (1 x 1): ask for at most 0",
        ),
        (
            T4,
            ["--team", "notebooks", "--gpu-slice", "mig-1g.10gb"],
            "team notebooks's queue gpu-cluster-queue on dev-eastus hands out no nvidia.com/mig-1g.10gb: no pool of dev-eastus "
            "yields it (slices on dev-eastus: nvidia.com/gpu.shared)",
        ),
    ],
    ids=["above-slice-quota", "more-than-a-node-yields", "no-quota-of-that-slice", "whole-gpus-on-mig-pools", "slice-nowhere"],
)
def test_refused_slice_asks_exit_1_saying_what_is_allowed(cli_run: Run, fleet_file: Path, args: list[str], message: str) -> None:
    cluster = "inference-eastus" if fleet_file == MIG else "dev-eastus"
    done = job_new(cli_run, fleet_file, "--cluster", cluster, "--name", "nb", *args)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"fleetgen: {message}\n")


def test_a_slice_name_that_is_neither_mig_nor_shared_is_a_usage_error(cli_run: Run) -> None:
    done = job_new(cli_run, MIG, "--team", "search", "--cluster", "inference-eastus", "--name", "nb", "--gpu-slice", "half")
    assert done.returncode == 2 and "--gpu-slice 'half': a MIG profile (mig-1g.10gb, 1g.10gb) or gpu.shared" in done.stderr
    done = job_new(cli_run, MIG, "--team", "search", "--cluster", "inference-eastus", "--name", "nb")
    assert done.returncode == 2 and "--gpus: how many GPUs per pod" in done.stderr


def test_cpu_follows_the_units_share_of_a_node() -> None:
    """3g.40gb takes 3 of the mixed layout's 7 compute slices: 3/7 of a one-GPU node."""
    fleet = load_fleet(MIG).fleet
    mixed = next(p for p in fleet.clusters[0].node_pools if p.name == "a100-mixed")
    assert node_share(mixed, "nvidia.com/mig-3g.40gb") == Fraction(3, 7)
    assert node_share(mixed, "nvidia.com/mig-1g.10gb") == Fraction(1, 7)
    t4 = next(p for p in load_fleet(T4).fleet.clusters[0].node_pools if p.name == "t4-shared")
    assert node_share(t4, "nvidia.com/gpu.shared") == Fraction(1, 4)

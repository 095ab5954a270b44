"""The nodes as evidence (`kubectl get nodes -o yaml`, tests/node_dumps.py): a cluster whose nodes run what
fleet.yaml says shows nothing, and each change planted in its nodes is exactly one finding."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE
from gitops_dumps import cluster_dump
from node_dumps import gfd_labels, node, nodes_dump

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.live.node_checks import judge_nodes
from fleetgen.live.nodes import nodes_in
from fleetgen.render.rendered import Rendered

Run = Callable[..., CompletedProcess[str]]
LOADED = load_fleet_text(EXAMPLE.read_bytes())
FLEET = LOADED.fleet


def judged(cluster: str, dump: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...], str]]:
    found = judge_nodes(FLEET, next(c for c in FLEET.clusters if c.name == cluster), nodes_in(dump["items"]))
    return [(f.severity.value, f.pool, f.nodes, f.message) for f in found.findings]


def gpu_node(dump: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return [o for o in dump["items"] if "nvidia.com/gpu.present" in o["metadata"]["labels"]][index]


@pytest.mark.parametrize("cluster", [c.name for c in FLEET.clusters])
def test_nodes_that_run_what_fleet_yaml_says_show_nothing(cluster: str) -> None:
    assert judged(cluster, nodes_dump(FLEET, cluster)) == []


def set_driver(dump: dict[str, Any]) -> None:
    gpu_node(dump)["metadata"]["labels"].update(gfd_labels("550.54.15"))  # dev's set says 550.90.07


def lose_a_gpu(dump: dict[str, Any]) -> None:
    gpu_node(dump)["status"]["allocatable"]["nvidia.com/gpu"] = "0"


def drop_taint(dump: dict[str, Any]) -> None:
    del gpu_node(dump)["spec"]["taints"]


def old_kubelet(dump: dict[str, Any]) -> None:
    gpu_node(dump)["status"]["nodeInfo"]["kubeletVersion"] = "v1.30.0"


def other_runtime(dump: dict[str, Any]) -> None:
    gpu_node(dump)["status"]["nodeInfo"]["containerRuntimeVersion"] = "cri-o://1.30.4"


def failed_upgrade(dump: dict[str, Any]) -> None:
    gpu_node(dump)["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-failed"


def wrong_gpu(dump: dict[str, Any]) -> None:
    gpu_node(dump)["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-L4"


def stray_gpu_node(dump: dict[str, Any]) -> None:
    stray = node(FLEET, "dev-eastus", "t4-spot", 40)
    stray["metadata"]["labels"]["accelerator"] = "nvidia-l4"
    dump["items"].append(stray)


def old_cuda(dump: dict[str, Any]) -> None:
    gpu_node(dump)["metadata"]["labels"]["nvidia.com/cuda.runtime-version.full"] = "11.8"


def too_many_nodes(dump: dict[str, Any]) -> None:
    dump["items"] += [node(FLEET, "dev-eastus", "a10g-spot", 50 + n) for n in range(3)]  # 5 of at most 4


PLANTED = {
    "driver": (set_driver, "error", "t4-spot", "driver 550.54.15, the version set says 550.90.07"),
    "allocatable GPUs": (lose_a_gpu, "error", "t4-spot", "allocatable nvidia.com/gpu 0, the pool's nodes have 1 (gpusPerNode)"),
    "taint": (
        drop_taint,
        "error",
        "t4-spot",
        "no taint kubernetes.azure.com/scalesetpriority=spot:NoSchedule, which the pool's nodes carry",
    ),
    "kubelet": (old_kubelet, "error", "t4-spot", "kubelet 1.30.0, the version set says Kubernetes 1.30.1"),
    "runtime": (other_runtime, "error", "t4-spot", "container runtime cri-o://1.30.4, the version set says containerd 1.7"),
    "failed driver upgrade": (
        failed_upgrade,
        "error",
        "t4-spot",
        "driver upgrade failed (nvidia.com/gpu-driver-upgrade-state=upgrade-failed); to retry, fix the cause, then kubectl label "
        "node NODE nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite; a node whose driver pod comes up Ready on "
        "the new driver moves on by itself",
    ),
    "CUDA": (old_cuda, "error", "t4-spot", "its driver runs CUDA up to 11.8, and cannot run the images' CUDA 12.6"),
    "GPU model": (wrong_gpu, "error", "t4-spot", "GPU NVIDIA-L4, the pool's gpuModel is T4"),
    "node of no pool": (stray_gpu_node, "warning", "", "GPU nodes whose labels match no node pool"),
    "pool size": (too_many_nodes, "error", "a10g-spot", "5 node(s), above maxNodes 4"),
}


@pytest.mark.parametrize("change", PLANTED)
def test_each_planted_node_change_is_exactly_one_finding(change: str) -> None:
    plant, severity, pool, message = PLANTED[change]
    dump = nodes_dump(FLEET, "dev-eastus")
    plant(dump)
    [(found_severity, found_pool, _, found_message)] = judged("dev-eastus", dump)
    assert (found_severity, found_pool, found_message) == (severity, pool, message)


def test_a_pool_below_its_minimum_and_many_nodes_on_one_driver_are_one_line_each() -> None:
    dump = nodes_dump(FLEET, "prod-inference-eastus", driver="550.90.07")  # every node; the set says 550.54.15
    dump["items"].remove(gpu_node(dump))  # a100-reserved keeps 4 nodes at least
    assert judged("prod-inference-eastus", dump) == [
        (
            "error",
            "a100-reserved",
            tuple(sorted(n["metadata"]["name"] for n in dump["items"][1:4])),
            "driver 550.90.07, the version set says 550.54.15",
        ),
        (
            "error",
            "a10g-reserved",
            tuple(sorted(n["metadata"]["name"] for n in dump["items"][4:])),
            "driver 550.90.07, the version set says 550.54.15",
        ),
        ("error", "a100-reserved", (), "3 node(s), below minNodes 4"),
    ]


def test_the_compatibility_matrix_is_applied_to_what_the_nodes_run() -> None:
    """A T4 node on driver 535.x is the wrong driver, and runs CUDA 12.6 images on a driver too old for them."""
    dump = nodes_dump(FLEET, "dev-eastus")
    labels = gpu_node(dump)["metadata"]["labels"]
    labels.update(gfd_labels("550.54.15"))
    labels["nvidia.com/cuda.driver-version.full"] = "520.61.05"
    found = judged("dev-eastus", dump)
    assert [m for _, _, _, m in found] == [
        "driver 520.61.05, the version set says 550.90.07",
        "what it runs breaks the compatibility matrix: driver 520.61.05 is too old for CUDA 12.6: it needs 560.28.03 or later "
        "[NVIDIA CUDA Toolkit Release Notes, Table 3]",
    ]


def test_drift_reads_the_nodes_from_the_dump(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    objects = cluster_dump(list(Rendered(FLEET).keyed(3).values()), "flux")
    nodes = nodes_dump(FLEET, "dev-eastus")
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "objects.yaml").write_text(yaml.safe_dump(objects))
    (tmp_path / "live" / "nodes.yaml").write_text(yaml.safe_dump(nodes))
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", "live", "--against", "fleet.yaml")
    assert (done.returncode, done.stdout) == (0, "dev-eastus: no drift (nodes: t4-spot 2, a10g-spot 2)\n"), done.stderr
    failed_upgrade(nodes)
    (tmp_path / "live" / "nodes.yaml").write_text(yaml.safe_dump(nodes))
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", "live", "--against", "fleet.yaml")
    name = gpu_node(nodes)["metadata"]["name"]
    assert done.returncode == 1 and done.stdout.splitlines() == [
        "dev-eastus: 0 missing, 0 extra, 0 changed; 1 node finding(s)",
        "nodes: t4-spot 2, a10g-spot 2",
        "  error: t4-spot: driver upgrade failed (nvidia.com/gpu-driver-upgrade-state=upgrade-failed); to retry, fix the cause, "
        "then kubectl label node NODE nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite; a node whose driver pod "
        f"comes up Ready on the new driver moves on by itself ({name})",
    ]
    report = json.loads(cli_run("drift", "--cluster", "dev-eastus", "--live", "live", "--against", "fleet.yaml", "--format", "json").stdout)
    assert report["drift"] is True and report["nodes"]["findings"][0]["nodes"] == [name]
    assert [p["name"] for p in report["nodes"]["pools"]] == ["t4-spot", "a10g-spot"]
    assert Severity.ERROR.value == report["nodes"]["findings"][0]["severity"]

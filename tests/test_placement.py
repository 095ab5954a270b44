"""Where a team's pods land: the queue named where a cluster has several, CPU-only pools as such, CPU-only teams off GPU nodes.

Each test changes the shipped fleet so that one contradiction appears, and requires the exact finding
at its fleet.yaml line and column; `job new --gpus 0` then runs on the CPU-only pool and nowhere else.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml
from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.errors import Severity

Run = Callable[..., subprocess.CompletedProcess[str]]

CPU_POOL = """      - name: cpu-general
        vmSize: Standard_D16ds_v5
        gpusPerNode: 0
        cpuPerNode: 16
        memoryPerNode: 64Gi
        maxNodes: 6
        scaling: on-demand
        labels: {pool: cpu-general}
    queues:
      - {name: gpu-queue, flavors: [t4-spot, a10g-spot]}
      - {name: cpu-queue, flavors: [cpu-general]}

# What teams may do"""
WEB_TEAM = """  - name: web
    group: 9a1b2c3d-0000-4000-8000-00000000abcd
    costCenter: cc-7000
    project: portal
    quota: {requests: {cpu: 32, memory: 64Gi, gpu: 0}}
    clusters:
      dev-eastus: {queue: cpu-queue}

# GPU alerts"""


def with_cpu_pool(text: str) -> str:
    """dev-eastus gains a CPU-only pool and two queues (GPU and CPU); team web, without GPUs, joins the CPU queue."""
    text = replace_once(text, "\n# What teams may do", "\n" + CPU_POOL)  # after the last cluster, dev-eastus
    text = replace_once(text, "\n# GPU alerts", "\n" + WEB_TEAM)
    text = replace_once(
        text,
        "      dev-eastus:\n        requests: {gpu: 2}\n",
        "      dev-eastus:\n        queue: gpu-queue\n        requests: {gpu: 2}\n",
    )
    text = replace_once(text, "      dev-eastus: {requests: {gpu: 2}}\n", "      dev-eastus: {queue: gpu-queue, requests: {gpu: 2}}\n")
    return replace_once(text, "      dev-eastus:\n    priorityClasses", "      dev-eastus: {queue: gpu-queue}\n    priorityClasses")


def test_a_team_on_a_cluster_with_several_queues_names_its_queue() -> None:
    text = with_cpu_pool(EXAMPLE.read_text(encoding="utf-8"))
    assert findings_of(text) == []
    silent = replace_once(text, "      dev-eastus: {queue: gpu-queue}\n    priorityClasses", "      dev-eastus:\n    priorityClasses")
    line = line_of(silent, "priorityClasses: [scheduled-training, exploratory]") - 1  # robotics' placement, above its classes
    assert findings_of(silent) == []  # a deprecation until 0.2.0 (tests/test_migrate.py): earlier releases joined the first
    assert (
        f"{line}:7: teams[2].clusters.dev-eastus: deprecated since fleetgen 0.1.0: dev-eastus has 2 queues (gpu-queue, cpu-queue) and "
        + (
            "team robotics's LocalQueue joins the first, gpu-queue; fleetgen 0.2.0 will refuse it. Fix: name the queue the team's LocalQueue "
            "feeds there (queue: the first keeps today's choice) (fleetgen migrate does)"
        )
        in findings_of(silent, Severity.WARNING)
    )


def test_cpu_only_pools_name_no_gpu_model_and_gpu_pools_need_one() -> None:
    text = with_cpu_pool(EXAMPLE.read_text(encoding="utf-8"))
    fake = replace_once(text, "        gpusPerNode: 0\n", "        gpuModel: none\n        gpusPerNode: 0\n")
    assert findings_of(fake) == []  # accepted before 0.1.0: a deprecation until 0.2.0 (tests/test_migrate.py)
    assert f"{line_of(fake, 'gpuModel: none')}:19: clusters[3].nodePools[2].gpuModel: deprecated since fleetgen 0.1.0: a CPU-only pool " + (
        "(gpusPerNode 0) names GPU model 'none'; fleetgen 0.2.0 will refuse it. Fix: drop gpuModel from the CPU-only pool (fleetgen migrate does)"
    ) in findings_of(fake, Severity.WARNING)
    nameless = replace_once(text, "        gpuModel: T4\n", "")
    assert findings_of(nameless) == [
        f"{line_of(nameless, 'gpusPerNode: 1', 3)}:22: clusters[3].nodePools[0].gpusPerNode: a pool with GPUs needs gpuModel (T4, A100, H100 ...)"
    ]


def test_a_team_without_gpus_never_feeds_a_queue_of_gpu_pools() -> None:
    text = replace_once(
        with_cpu_pool(EXAMPLE.read_text(encoding="utf-8")), "      dev-eastus: {queue: cpu-queue}", "      dev-eastus: {queue: gpu-queue}"
    )
    assert [f for f in findings_of(text, Severity.WARNING) if "no GPUs" in f] == [
        f"{line_of(text, '      dev-eastus: {queue: gpu-queue}', 2)}:27: teams[3].clusters.dev-eastus.queue: team web has no GPUs on dev-eastus, "
        "but its queue gpu-queue hands out GPU pools (t4-spot, a10g-spot): Kueue would put its CPU-only pods on GPU nodes; "
        "give it a queue of CPU-only pools"
    ]


def test_job_new_puts_a_cpu_only_job_on_the_cpu_only_pool(cli_run: Run, tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(with_cpu_pool(EXAMPLE.read_text(encoding="utf-8")), encoding="utf-8")
    base = ["job", "new", "--fleet", str(path), "--cluster", "dev-eastus", "--name", "etl", "--image", "contosoai.azurecr.io/etl:1"]
    done = cli_run(*base, "--team", "web", "--gpus", "0")
    assert done.returncode == 0, done.stderr
    [job] = [d for d in yaml.safe_load_all(done.stdout) if d]
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "cpu-general"} and "tolerations" not in pod
    assert pod["containers"][0]["resources"]["requests"] == {"cpu": 15, "memory": "60Gi"}  # a node less the reserve, no GPU
    assert done.stderr == "Job team-web/etl on dev-eastus: 1 pod(s) x CPU only, LocalQueue team-web-queue, priority exploratory\n"
    refused = cli_run(*base, "--team", "web", "--gpus", "1")
    assert (refused.returncode, refused.stderr) == (
        1,
        "fleetgen: team web's GPU quota on dev-eastus is 0; this asks for 1 (1 x 1): ask for at most 0\n",
    )
    gpu_team = cli_run(*base, "--team", "nlp", "--gpus", "0")
    assert (gpu_team.returncode, gpu_team.stderr) == (
        1,
        "fleetgen: team nlp's queue gpu-queue on dev-eastus hands out no CPU-only node pool; ask for GPUs (--gpus) or use another cluster\n",
    )

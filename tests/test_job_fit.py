"""`job new` refuses what Kueue would never admit or the nodes never hold, naming the limit; it accepts everything else.

Small fleets where each limit appears once (the pool's nodes, a node after the system reserve, the
queue's flavors and quota, the team's quota), and a property test: random asks against random node
pools, accepted exactly when an independent count says they fit.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml
from conftest import examples
from hypothesis import HealthCheck, example, given
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import RefusedAsk
from fleetgen.jobs.golden_paths import job_objects
from fleetgen.jobs.job_target import Ask
from fleetgen.model import Quantity
from fleetgen.validation.rendered_objects import Schemas

Run = Callable[..., subprocess.CompletedProcess[str]]
GiB = 1024**3

HEAD = """apiVersion: fleetgen/v1alpha1
kind: Fleet
metadata: {name: mini, costCenter: cc-1000}
gitops: {engine: flux, repository: https://github.com/example/fleet}
platform: {gpuOperator: {version: v24.3.0}}
capacity: {gpuOvercommit: 100}
versionSets:
  v1: {kubernetes: 1.30.1, driver: 550.90.07, cuda: "12.6", cudnn: 9.3.0, containerd: "1.7"}
priorityClasses:
  - {name: exploratory, value: 1000, globalDefault: true}
"""


def pool(name: str, model: str, gpus: int, nodes: int, cpu: int = 96, memory: str = "1800Gi") -> dict[str, Any]:
    return {
        "name": name,
        "vmSize": f"vm-{name}",
        "gpuModel": model,
        "gpusPerNode": gpus,
        "cpuPerNode": cpu,
        "memoryPerNode": memory,
        "maxNodes": nodes,
        "scaling": "on-demand",
        "labels": {"pool": name},
    }


def fleet_text(pools: list[dict[str, Any]], quota: dict[str, Any], queues: list[dict[str, Any]] | None = None) -> str:
    cluster: dict[str, Any] = {"name": "gpu-east", "region": "eastus", "environment": "dev", "versionSet": "v1", "nodePools": pools}
    if queues:
        cluster["queues"] = queues
    team = {
        "name": "llm-core",
        "group": "g-llm-core",
        "costCenter": "cc-2000",
        "project": "llm",
        "quota": quota,
        "clusters": {"gpu-east": {"queue": queues[0]["name"]} if queues else None},
    }
    return HEAD + yaml.safe_dump({"clusters": [cluster], "teams": [team]}, sort_keys=False)


TWO_POOLS = fleet_text(
    [pool("h100", "H100", 8, 2), pool("a100", "A100", 8, 4, memory="900Gi")],
    {"requests": {"cpu": 800, "memory": "16000Gi", "gpu": 40}, "pods": 20},
)


def ask(cli_run: Run, tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    base = ["job", "new", "--fleet", str(path), "--team", "llm-core", "--cluster", "gpu-east", "--name", "big", "--image", "r/i:1"]
    return cli_run(*base, *args)


def refused(done: subprocess.CompletedProcess[str]) -> str:
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    return done.stderr.removeprefix("fleetgen: ").rstrip("\n")


def test_more_pods_than_the_pool_holds_is_refused_naming_the_pool(cli_run: Run, tmp_path: Path) -> None:
    """The team's 40 GPUs would allow 5 x 8, but the H100 pool has 2 nodes: Kueue would admit it and it would never run."""
    done = ask(cli_run, tmp_path, TWO_POOLS, "--gpu-model", "H100", "--nodes", "5", "--gpus", "8")
    assert refused(done) == (
        "team llm-core's queue gpu-cluster-queue on gpu-east cannot run 5 pod(s) of 8 GPU(s), 95 CPU, 1796Gi in one flavor "
        "(h100 has 2 node(s) x 8 GPUs: room for 2 such pod(s)): ask for at most 2 (--nodes)"
    )
    fits = ask(cli_run, tmp_path, TWO_POOLS, "--gpu-model", "H100", "--nodes", "2", "--gpus", "8")
    assert fits.returncode == 0, fits.stderr
    # without a model, the first one whose pool holds the job: four A100 nodes
    [job, _service] = [d for d in yaml.safe_load_all(ask(cli_run, tmp_path, TWO_POOLS, "--nodes", "4", "--gpus", "8").stdout) if d]
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "a100"}


def test_a_pod_is_sized_to_a_node_after_the_system_reserve(cli_run: Run, tmp_path: Path) -> None:
    done = ask(cli_run, tmp_path, TWO_POOLS, "--gpu-model", "H100", "--gpus", "8", "--cpu", "96")
    assert refused(done) == (
        "a pod of 8 GPU(s), 96 CPU, 1796Gi is larger than any H100 node of team llm-core's queue gpu-cluster-queue on gpu-east "
        "holds (h100: 95 CPU after the 1 CPU reserve); ask for less CPU (--cpu) or memory (--memory)"
    )
    [job] = [d for d in yaml.safe_load_all(ask(cli_run, tmp_path, TWO_POOLS, "--gpu-model", "H100", "--gpus", "4").stdout) if d]
    requests = job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "47500m", "memory": "898Gi", "nvidia.com/gpu": 4}  # half of (96 - 1) CPU and (1800 - 4) Gi
    # two such pods per node, not three: 4 pods of 4 GPUs with 60 CPU each need 4 nodes
    done = ask(cli_run, tmp_path, TWO_POOLS, "--gpu-model", "H100", "--gpus", "4", "--nodes", "4", "--cpu", "60")
    assert refused(done).endswith(
        "(h100 has 2 node(s) x 8 GPUs, each node holds 1 (95 CPU after the 1 CPU reserve): room for 2 such pod(s)): ask for at most 2 (--nodes)"
    )


def test_the_queues_flavors_and_quota_bound_what_kueue_admits(cli_run: Run, tmp_path: Path) -> None:
    queues = [{"name": "llm", "flavors": ["h100"], "nominalQuota": {"h100": {"gpu": 8}}}]
    text = fleet_text([pool("h100", "H100", 8, 2), pool("a100", "A100", 8, 4)], {"requests": {"gpu": 40}}, queues)
    done = ask(cli_run, tmp_path, text, "--gpus", "8", "--nodes", "2")
    assert refused(done) == (
        "team llm-core's queue llm on gpu-east cannot run 2 pod(s) of 8 GPU(s), 95 CPU, 1796Gi in one flavor "
        "(it may admit at most 8 GPUs of h100 (owns 8), this needs 16): ask for at most 1 (--nodes)"
    )
    done = ask(cli_run, tmp_path, text, "--gpus", "1", "--gpu-model", "A100")
    assert refused(done) == "team llm-core's queue llm on gpu-east hands out no A100 GPUs; it hands out H100"


def test_the_teams_quota_bounds_gpus_pods_and_cpu(cli_run: Run, tmp_path: Path) -> None:
    text = fleet_text([pool("a100", "A100", 8, 4)], {"requests": {"cpu": 100, "gpu": 16}, "pods": 3})
    assert refused(ask(cli_run, tmp_path, text, "--gpus", "8", "--nodes", "3")) == (
        "team llm-core's GPU quota on gpu-east is 16; this asks for 24 (3 x 8): ask for at most 16"
    )
    assert refused(ask(cli_run, tmp_path, text, "--gpus", "1", "--nodes", "4")) == (
        "team llm-core's pod quota on gpu-east is 3; this asks for 4 pods"
    )
    assert refused(ask(cli_run, tmp_path, text, "--gpus", "4", "--nodes", "2", "--cpu", "60")) == (
        "team llm-core's cpu quota on gpu-east is 100; this asks for 2 x 60: ask for at most 50 per pod (--cpu)"
    )


SCHEMAS = Schemas()


@st.composite
def pools_and_asks(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any], Ask]:
    count = draw(st.integers(1, 3))
    pools = [
        pool(
            f"p{i}",
            draw(st.sampled_from(["A100", "H100"])),
            draw(st.sampled_from([1, 2, 4, 8])),
            draw(st.integers(1, 3)),
            cpu=draw(st.integers(2, 96)),
            memory=f"{draw(st.integers(8, 1024))}Gi",
        )
        for i in range(count)
    ]
    quota: dict[str, Any] = {"requests": {"gpu": draw(st.integers(1, 16) | st.just(64))}}  # 0: a CPU-only team, off GPU queues
    pods_quota = draw(st.none() | st.integers(1, 8))  # none first: most asks meet only the GPU quota
    if pods_quota is not None:
        quota["pods"] = pods_quota
    cpu = draw(st.none() | st.integers(1, 100))
    the_ask = Ask(
        "llm-core",
        "gpu-east",
        "job",
        "r/i:1",
        gpus=draw(st.sampled_from([1, 3, 2, 6, 4, 8])),
        nodes=draw(st.integers(1, 6)),
        gpu_model=draw(st.none() | st.sampled_from(["A100", "H100"])),
        cpu=None if cpu is None else Quantity(str(cpu)),
    )
    return pools, quota, the_ask


def fits(pools: list[dict[str, Any]], quota: dict[str, Any], the_ask: Ask) -> bool:
    """An independent count: the quota holds every pod, and one pool of the model holds them all, a node after a 1-CPU reserve."""
    pods, gpus = the_ask.nodes, the_ask.gpus
    if pods * gpus > quota["requests"]["gpu"] or pods > quota.get("pods", pods):
        return False
    models = list(dict.fromkeys(p["gpuModel"] for p in pools))
    wanted = models if the_ask.gpu_model is None else [the_ask.gpu_model]
    for model in wanted:
        wide = [p for p in pools if p["gpuModel"] == model and p["gpusPerNode"] >= gpus]
        if not wide:
            continue
        if the_ask.cpu is None:
            # the pod's share of the smallest node, rounded down to millicores: a node always holds gpusPerNode // gpus of them
            cpu = min(Fraction((p["cpuPerNode"] - 1) * gpus, p["gpusPerNode"]) for p in wide)
            cpu = Fraction(int(cpu * 1000), 1000)
        else:
            cpu = the_ask.cpu.value
        for p in wide:
            per_node = min(p["gpusPerNode"] // gpus, int((p["cpuPerNode"] - 1) // cpu))
            if per_node * p["maxNodes"] >= pods:
                return True
    return False


@examples(300, suppress_health_check=[HealthCheck.too_slow])
@given(pools_and_asks())
@example(  # 5 pods of 3 GPUs: the queue's 16 GPUs would admit them, but a node of 8 holds only 2 such pods
    ([pool("p0", "A100", 8, 2)], {"requests": {"gpu": 64}}, Ask("llm-core", "gpu-east", "job", "r/i:1", gpus=3, nodes=5))
)
def test_job_new_accepts_exactly_the_asks_that_fit(case: tuple[list[dict[str, Any]], dict[str, Any], Ask]) -> None:
    pools, quota, the_ask = case
    fleet = load_fleet_text(fleet_text(pools, quota).encode()).fleet
    try:
        built = job_objects(fleet, the_ask, SCHEMAS)
    except RefusedAsk as refusal:
        assert not fits(pools, quota, the_ask), f"refused an ask that fits: {refusal}"
        return
    assert fits(pools, quota, the_ask), f"accepted an ask that does not fit: {built.summary}"
    pod = built.objects[0]["spec"]["template"]["spec"]
    terms = pod.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", {})
    named = {e["values"][0] for t in terms.get("nodeSelectorTerms", []) for e in t["matchExpressions"] if e["key"] == "pool"}
    named |= {pod["nodeSelector"]["pool"]} if "pool" in pod.get("nodeSelector", {}) else set()
    assert named, pod
    for name in named:  # Kueue gives the job one of these flavors: each must hold it alone
        assert fits([p for p in pools if p["name"] == name], quota, the_ask), (name, pod)

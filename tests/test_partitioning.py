"""GPU partitioning end to end: two golden fleets (a time-sliced T4 dev pool, an A100 MIG inference pool),
the trees they render built with the real kustomize, and every partitioning check at its line and column.

The golden trees are tests/cases/<name>/expected/. Regenerate them after a deliberate change with
`python -m pytest tests/test_partitioning.py --regenerate` and review the diff.
"""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import REPO, findings_of, line_of, regenerated, replace_once

from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.compat.partitioning import nominal, stated_gpus
from fleetgen.errors import Severity
from fleetgen.model.sharing import FlavorResources
from fleetgen.render.rendered import Rendered
from fleetgen.report.capacity import build_report
from fleetgen.validation.rendered_objects import Schemas, validate_rendered

CASES = REPO / "tests" / "cases"
T4 = CASES / "timesliced-t4-dev"
MIG = CASES / "mig-a100-inference"
MULTIKUEUE = CASES / "multikueue-two-models"  # its own tests: tests/test_multikueue.py
PRIVATE = [CASES / "private-repo-flux", CASES / "private-repo-argocd"]  # their own tests: tests/test_git_credentials.py
POOL_DRIVERS = CASES / "pool-drivers"  # its own tests: tests/test_pool_drivers.py
Run = Callable[..., subprocess.CompletedProcess[str]]


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", [T4, MIG, MULTIKUEUE, *PRIVATE, POOL_DRIVERS], ids=lambda p: p.name)
def test_golden_tree(case: Path, tmp_path: Path, cli_run: Run, regenerate: bool) -> None:
    if regenerate:
        done = cli_run("render", "fleet.yaml", "--out", "expected", cwd=case)
        assert done.returncode == 0, done.stderr
        regenerated(case / "expected")
    shutil.copy(case / "fleet.yaml", tmp_path / "fleet.yaml")
    done = cli_run("render", "fleet.yaml", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    mine, golden = _files(tmp_path / "out"), _files(case / "expected")
    assert sorted(mine) == sorted(golden)
    for path, body in golden.items():
        if mine[path] != body:
            diff = difflib.unified_diff(body.decode().splitlines(), mine[path].decode().splitlines(), f"expected/{path}", path, lineterm="")
            pytest.fail("\n".join(diff))


def _built(kustomize: Callable[[Path], list[dict[str, Any]]], case: Path, cluster: str) -> list[dict[str, Any]]:
    return kustomize(case / "expected" / "clusters" / cluster)


def _one(objects: list[dict[str, Any]], kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name and o["metadata"].get("namespace") == namespace]
    return found


def test_time_sliced_pools_build_to_quotas_and_flavors_on_the_shared_resources(kustomize: Any) -> None:
    objects = _built(kustomize, T4, "dev-eastus")
    quota = _one(objects, "ResourceQuota", "gpu-quota", "team-notebooks")["spec"]["hard"]
    assert quota["requests.nvidia.com/gpu.shared"] == "8" and quota["requests.nvidia.com/gpu"] == "2"
    flavor = _one(objects, "ResourceFlavor", "t4-shared")
    assert flavor["spec"]["nodeLabels"]["nvidia.com/device-plugin.config"] == "t4-shared"  # Kueue lands pods on the sliced nodes
    [group] = _one(objects, "ClusterQueue", "gpu-cluster-queue")["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu", "nvidia.com/gpu.shared"]
    quotas = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}
    assert quotas["t4-shared"]["nvidia.com/gpu.shared"] == 16 and quotas["t4-shared"]["nvidia.com/gpu"] == 0  # 4 nodes x 4, renamed
    assert quotas["a10g-shared"]["nvidia.com/gpu"] == 4 and quotas["a10g-shared"]["nvidia.com/gpu.shared"] == 0  # 2 x 2 replicas


def test_mig_pools_build_to_quotas_and_flavors_on_the_slices(kustomize: Any) -> None:
    objects = _built(kustomize, MIG, "inference-eastus")
    quota = _one(objects, "ResourceQuota", "gpu-quota", "team-ranking")["spec"]["hard"]
    assert (quota["requests.nvidia.com/mig-1g.10gb"], quota["requests.nvidia.com/mig-3g.40gb"]) == ("7", "1")
    [group] = _one(objects, "ClusterQueue", "gpu-cluster-queue")["spec"]["resourceGroups"]
    quotas = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}
    assert quotas["a100-mig"]["nvidia.com/mig-1g.10gb"] == 14  # 2 GPUs x 7
    assert [quotas["a100-mixed"][f"nvidia.com/mig-{p}"] for p in ("1g.10gb", "2g.20gb", "3g.40gb")] == [2, 1, 1]
    assert all(q["nvidia.com/gpu"] == 0 for q in quotas.values())  # mixed strategy: no whole GPU is left


def _values(case: Path, cluster: str) -> dict[str, Any]:
    docs = yaml.safe_load_all((case / "expected" / "clusters" / cluster / "platform" / "platform.yaml").read_text())
    release = next(d for d in docs if d and d["kind"] == "HelmRelease" and d["metadata"]["name"] == "gpu-operator")
    values: dict[str, Any] = release["spec"]["values"]
    return values


def test_device_plugin_configuration_per_pool() -> None:
    config = _values(T4, "dev-eastus")["devicePlugin"]["config"]
    assert (config["create"], config["name"], config["default"]) == (True, "time-slicing-config", "default")
    t4 = yaml.safe_load(config["data"]["t4-shared"])
    assert t4["sharing"]["timeSlicing"] == {"renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
    assert yaml.safe_load(config["data"]["a10g-shared"])["sharing"]["timeSlicing"]["renameByDefault"] is False
    assert "sharing" not in yaml.safe_load(config["data"]["default"])  # every other node keeps whole GPUs
    assert "mig" not in _values(T4, "dev-eastus")


def test_mig_manager_configuration_per_pool() -> None:
    values = _values(MIG, "inference-eastus")
    assert values["mig"] == {"strategy": "mixed"}
    config = values["migManager"]["config"]
    assert (config["name"], config["default"]) == ("fleetgen-mig-config", "all-disabled")
    layouts = yaml.safe_load(config["data"]["config.yaml"])["mig-configs"]
    assert layouts["all-1g.10gb"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    assert layouts["a100-mixed"][0]["mig-devices"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert layouts["all-disabled"] == [{"devices": "all", "mig-enabled": False}]


# Each check, at its line and column: (case, edit, needle of the line, column, message start, severity).
def _edit(case: Path, old: str, new: str) -> str:
    return replace_once((case / "fleet.yaml").read_text(), old, new)


T4_POOL = "        partitioning: {timeSlicing: {replicas: 4, rename: true}}   # pods ask for nvidia.com/gpu.shared\n"
MIG_LAYOUT = "        partitioning: {mig: {layout: all-1g.10gb}}                              # 7 x 1g.10gb per GPU\n"


def _finding(text: str, needle: str, severity: Severity = Severity.ERROR) -> list[str]:
    return [f for f in findings_of(text, severity) if needle in f]


def test_mig_on_a_gpu_without_mig() -> None:
    text = _edit(T4, T4_POOL, "        partitioning: {mig: {layout: all-1g.10gb}}\n")
    text = replace_once(text, "nvidia.com/device-plugin.config: t4-shared}", "nvidia.com/mig.config: all-1g.10gb}")
    line = line_of(text, "partitioning: {mig:")
    [found] = _finding(text, "has no MIG")
    assert found.startswith(f"{line}:24: clusters[0].nodePools[0].partitioning.mig: T4 has no MIG (NVIDIA MIG User Guide")


def test_unknown_profile_and_a_layout_that_does_not_fit() -> None:
    text = _edit(MIG, MIG_LAYOUT, "        partitioning: {mig: {layout: all-1g.5gb}}\n")
    text = replace_once(text, "nvidia.com/mig.config: all-1g.10gb}", "nvidia.com/mig.config: all-1g.5gb}")
    [found] = _finding(text, "unknown MIG profile")
    assert found == (
        f"{line_of(text, 'layout: all-1g.5gb')}:38: clusters[0].nodePools[0].partitioning.mig.layout: unknown MIG profile "
        "'1g.5gb' of A100 80GB (profiles: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)"
    )
    text = _edit(MIG, "{3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}", "{3g.40gb: 2, 1g.10gb: 1}")
    [found] = _finding(text, "does not fit")
    assert found.endswith("the layout does not fit one A100 80GB: it takes 9 memory slices, a A100 80GB has 8")
    text = _edit(MIG, "{3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}", "{1g.20gb: 5}")
    [found] = _finding(text, "does not fit")
    assert "5 x 1g.20gb is more than the 4 a A100 80GB holds" in found and "10 memory slices" in found


def test_a_gpu_that_comes_in_two_sizes_needs_its_memory() -> None:
    text = _edit(MIG, "        gpuMemory: 80                 # A100 80GB: its profiles are 1g.10gb ... 7g.80gb\n", "")
    [found] = _finding(text, "whose MIG profiles differ")
    assert found == f"{line_of(text, 'gpuModel: A100')}:19: clusters[0].nodePools[0].gpuModel: A100 comes in 40 and 80 GB, " + (
        "whose MIG profiles differ: set gpuMemory"
    )


def test_slice_quotas_above_what_the_pools_yield() -> None:
    text = _edit(MIG, "slices: {mig-1g.10gb: 7, mig-3g.40gb: 1}", "slices: {mig-1g.10gb: 9, mig-3g.40gb: 2}")
    found = _finding(text, "quotas on inference-eastus")
    line = line_of(text, "mig-1g.10gb: 9")
    assert found == [  # mig-1g.10gb: 7 + 9 = 16, exactly what the pools yield
        f"{line}:87: teams[1].quota.requests.slices.mig-3g.40gb: mig-3g.40gb quotas on inference-eastus add up to 2 (ranking 2), "
        "above the 1 its pools' GPUs yield (a100-mixed 1)"
    ]
    text = _edit(MIG, "slices: {mig-1g.10gb: 7}}", "slices: {mig-1g.10gb: 7, mig-7g.80gb: 1}}")
    [found] = _finding(text, "mig-7g.80gb quotas")
    assert found.endswith("above the 0 its pools' GPUs yield (no pool yields it)")


def test_time_slicing_on_a_training_pool_is_a_warning() -> None:
    text = _edit(T4, "pricing:\n", "pricing:\n")
    text = replace_once(
        text,
        "        labels: {accelerator: nvidia-a10g,",
        "        topology: [kubernetes.io/hostname]\n        labels: {accelerator: nvidia-a10g,",
    )
    [found] = _finding(text, "multi-GPU training", Severity.WARNING)
    line = line_of(text, "partitioning: {timeSlicing: {replicas: 2}}")
    assert found.startswith(
        f"{line}:24: clusters[0].nodePools[1].partitioning.timeSlicing: time-slicing on a pool used for multi-GPU training "
        "(its Kueue Topology packs multi-node training jobs; teams on dev-eastus: notebooks, research): no memory isolation:"
    )
    assert "no fault isolation" in found


def test_a_pool_partitioned_two_ways() -> None:
    text = _edit(T4, T4_POOL, "        partitioning: {timeSlicing: {replicas: 4}, mig: {layout: all-balanced}}\n")
    [found] = _finding(text, "partitioned two ways")
    assert found.startswith(f"{line_of(text, 'mig: {layout: all-balanced}')}:52: clusters[0].nodePools[0].partitioning.mig:")
    text = _edit(
        T4, "nvidia.com/device-plugin.config: a10g-shared}", "nvidia.com/device-plugin.config: a10g-shared, nvidia.com/mig.config: x}"
    )
    [found] = _finding(text, "partitioned two ways")
    assert "clusters[0].nodePools[1].labels.nvidia.com/mig.config: label nvidia.com/mig.config=x selects a MIG layout" in found


def test_the_pool_label_that_selects_the_configuration_is_required() -> None:
    text = _edit(T4, "nvidia.com/device-plugin.config: t4-shared}", "nvidia.com/device-plugin.config: t4}")
    [found] = _finding(text, "the pool's labels need")
    assert found == (
        f"{line_of(text, 'config: t4}')}:75: clusters[0].nodePools[0].labels.nvidia.com/device-plugin.config: the pool's labels need "
        "nvidia.com/device-plugin.config: t4-shared (it has 't4'): the node label picks the configuration fleetgen renders for this "
        "pool; set it on the cloud node pool too"
    )


def test_mig_needs_an_operator_that_creates_its_configmap() -> None:
    text = _edit(MIG, "gitops: {", "platform: {gpuOperator: {version: v24.3.0}}\ngitops: {")
    text = text.replace("580.82.07", "550.90.07").replace('cuda: "13.0", cudnn: 9.17.0', 'cuda: "12.4", cudnn: 9.1.0')
    found = _finding(text, "cannot create the MIG manager's ConfigMap")
    assert len(found) == 2 and "migManager.config.create arrived in 24.6" in found[0]


def test_time_slicing_on_an_operator_whose_exporter_labels_one_sharing_pod_is_a_warning() -> None:
    text = _edit(T4, "gitops: {", "platform: {gpuOperator: {version: v24.9.2}}\ngitops: {")
    text = text.replace("580.82.07", "550.127.05").replace('cuda: "13.0", cudnn: 9.17.0', 'cuda: "12.4", cudnn: 9.1.0')
    found = _finding(text, "labels only one of the pods sharing a GPU", Severity.WARNING)
    assert [f.split(": ")[1] for f in found] == [f"clusters[0].nodePools[{p}].partitioning.timeSlicing" for p in (0, 1)]
    assert "GPU Operator v24.9.2" in found[0] and "every pod from 25.3 on" in found[0]
    assert not _finding(_edit(T4, "pricing:\n", "pricing:\n"), "labels only one of the pods", Severity.WARNING)  # v25.10.1


def test_cluster_capacity_counts_time_sliced_replicas() -> None:
    text = _edit(
        T4,
        "requests: {cpu: 16, memory: 64Gi, gpu: 2, slices: {gpu.shared: 4}}",
        "requests: {cpu: 16, memory: 64Gi, gpu: 3, slices: {gpu.shared: 4}}",
    )
    [found] = _finding(text, "GPU quotas on dev-eastus")
    assert "above its 4 GPUs (a10g-shared 2 x 1 x 2 replicas)" in found


def test_the_golden_fleets_validate_with_no_error() -> None:
    for case in (T4, MIG):
        loaded = load_fleet(case / "fleet.yaml")
        assert all(f.severity is not Severity.ERROR for f in loaded.warnings)


def test_the_report_counts_slices_per_pool_and_team_and_prices_a_slice_as_its_share(cli_run: Run) -> None:
    done = cli_run("report", str(MIG / "fleet.yaml"), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    pools = {(p["pool"], p["resource"]): p for p in report["slices"]["pools"]}
    assert pools[("a100-mig", "nvidia.com/mig-1g.10gb")]["count"] == 14
    assert pools[("a100-mig", "nvidia.com/mig-1g.10gb")]["pricePerHour"] == pytest.approx(3.67 / 7)  # 1 of 7 slices
    assert pools[("a100-mixed", "nvidia.com/mig-3g.40gb")]["pricePerHour"] == pytest.approx(3.67 * 3 / 7)  # 3 of 7 compute slices
    teams = {(t["team"], t["resource"]): t for t in report["slices"]["teams"]}
    assert teams[("ranking", "nvidia.com/mig-3g.40gb")]["monthlyCost"] == pytest.approx(3.67 * 3 / 7 * 730)
    ranking = next(t for t in report["teams"] if t["team"] == "ranking")
    assert ranking["monthlyCost"] == pytest.approx((7 * 3.67 / 7 + 3.67 * 3 / 7) * 730)  # its slices, no whole GPU
    done = cli_run("report", str(T4 / "fleet.yaml"), "--format", "json")
    shared = {(p["pool"], p["resource"]): p for p in json.loads(done.stdout)["slices"]["pools"]}
    assert shared[("t4-shared", "nvidia.com/gpu.shared")]["pricePerHour"] == pytest.approx(0.53 / 4)  # a quarter of a T4-hour
    dev = json.loads(done.stdout)["clusters"][0]
    assert (dev["gpus"], dev["shares"], dev["gpuResource"]) == (
        6,
        20,
        4,
    )  # 6 physical GPUs; a10g-shared's 2 x 2 replicas are nvidia.com/gpu


PLAIN_CLUSTER = """  - name: plain-westus
    region: westus
    environment: production
    versionSet: prod
    nodePools:
      - {name: a100, vmSize: Standard_NC24ads_A100_v4, gpuModel: A100, gpuMemory: 80, gpusPerNode: 1, cpuPerNode: 22,
         memoryPerNode: 200Gi, maxNodes: 2, scaling: reserved, labels: {accelerator: nvidia-a100}}
teams:
"""


@pytest.mark.parametrize("slices", ["{}", "{mig-1g.10gb: 0}"])
def test_a_placement_clears_a_default_slice_quota_on_a_cluster_without_the_slice_and_costs_nothing_there(slices: str) -> None:
    """`slices: {}` clears the team's default slice quotas on that cluster, and a zero quota of a slice the cluster
    does not yield costs zero: the team's cost stays a number (it was n/a), and the cluster's quota holds no such slice."""
    text = replace_once((MIG / "fleet.yaml").read_text(), "teams:\n", PLAIN_CLUSTER)
    text = replace_once(
        text,
        "    clusters: {inference-eastus: }\n    priorityClasses: [production-inference]   # serves on the MIG slices: the fleet's one class preempts, so it is granted\n  - name: ranking",
        f"    clusters: {{inference-eastus: , plain-westus: {{requests: {{slices: {slices}}}}}}}\n    priorityClasses: [production-inference]\n  - name: ranking",
    )
    assert findings_of(text) == []
    fleet = load_fleet_text(text.encode()).fleet
    search = next(t for t in build_report(fleet).teams if t.team == "search")
    assert [(h.cluster, h.monthly_cost) for h in search.holdings] == [
        ("inference-eastus", pytest.approx(7 * 3.67 / 7 * 730)),
        ("plain-westus", 0.0),
    ]
    quota = fleet.teams[0].quota_on("plain-westus").requests.slices
    assert quota == ({} if slices == "{}" else {"mig-1g.10gb": 0})


def test_explain_names_the_pools_partitioning_line_for_a_slice_quota(cli_run: Run) -> None:
    text = (MIG / "fleet.yaml").read_text()
    done = cli_run("explain", "inference-eastus", "ResourceQuota/team-ranking/gpu-quota", "--field", "spec.hard", cwd=MIG)
    assert done.returncode == 0, done.stderr
    slice_line = done.stdout.splitlines()[done.stdout.splitlines().index("  spec.hard[requests.nvidia.com/mig-3g.40gb]: 1") + 1]
    assert f"fleet.yaml:{line_of(text, 'mig-3g.40gb: 1')}:87 teams[1].quota.requests.slices.mig-3g.40gb" in slice_line
    assert f"fleet.yaml:{line_of(text, 'partitioning: {mig: {layout: {3g.40gb')}:9 clusters[0].nodePools[1].partitioning" in slice_line
    assert "clusters[0].nodePools[0].partitioning" not in slice_line  # a100-mig yields no 3g.40gb


def _queue_quotas(kustomize: Any, tmp_path: Path, cli_run: Run, case: Path, cluster: str, text: str) -> dict[str, dict[str, Any]]:
    """The nominal quotas per flavor and resource of the cluster's gpu-cluster-queue, once `text` is rendered and built."""
    (tmp_path / "fleet.yaml").write_text(text)
    done = cli_run("render", "fleet.yaml", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [group] = _one(kustomize(tmp_path / "out" / "clusters" / cluster), "ClusterQueue", "gpu-cluster-queue")["spec"]["resourceGroups"]
    return {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}


def test_a_queues_replicas_and_slices_bring_cpu_and_memory_at_their_share_of_a_gpu(kustomize: Any, tmp_path: Path, cli_run: Run) -> None:
    queue = (
        "    queues:\n"
        "      - name: gpu-cluster-queue\n"
        "        nominalQuota: {a10g-shared: {gpu: 1}, t4-shared: {slices: {gpu.shared: 4}}}\n"
        "    nodePools:\n"
    )
    text = replace_once((T4 / "fleet.yaml").read_text(), "    nodePools:\n", queue)
    quotas = _queue_quotas(kustomize, tmp_path, cli_run, T4, "dev-eastus", text)
    # a10g-shared: 2 GPUs x 2 replicas; 1 replica is a quarter of the pool (68 CPU, 800Gi), not half of it
    assert quotas["a10g-shared"] == {"cpu": 17, "memory": "200Gi", "nvidia.com/gpu": 1, "nvidia.com/gpu.shared": 0}
    # t4-shared: 4 GPUs x 4 shares; 4 shares are one GPU of four (12 CPU, 96Gi), no longer the whole pool
    assert quotas["t4-shared"] == {"cpu": 3, "memory": "24Gi", "nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 4}
    queue = "    queues:\n      - name: gpu-cluster-queue\n        nominalQuota: {a100-mig: {slices: {mig-1g.10gb: 7}}}\n    nodePools:\n"
    text = replace_once((MIG / "fleet.yaml").read_text(), "    nodePools:\n", queue)
    quotas = _queue_quotas(kustomize, tmp_path, cli_run, MIG, "inference-eastus", text)
    assert (quotas["a100-mig"]["cpu"], quotas["a100-mig"]["memory"]) == (22, "200Gi")  # 7 of 14 1g.10gb slices: one of two GPUs
    assert (quotas["a100-mixed"]["cpu"], quotas["a100-mixed"]["memory"]) == (22, "200Gi")  # not stated: the whole pool


def test_a_mig_slice_takes_its_compute_slices_share_of_a_gpu() -> None:
    pool = next(p for p in load_fleet(MIG / "fleet.yaml").fleet.clusters[0].node_pools if p.name == "a100-mixed")
    given = FlavorResources(slices={"mig-3g.40gb": 1, "mig-1g.10gb": 2})
    assert stated_gpus(pool, given) == Fraction(5, 7)  # 3 + 1 + 1 of the layout's 7 compute slices
    assert nominal(pool, given, "cpu") == Fraction(22 * 5, 7)


def test_the_report_counts_a_partitioned_pools_queue_quota_in_what_it_yields(cli_run: Run) -> None:
    done = cli_run("report", str(MIG / "fleet.yaml"), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["clusters"][0]["slicedPools"] == ["a100-mig", "a100-mixed"]  # its GPUs column leaves them out
    [queue] = report["queues"]
    flavors = {f["flavor"]: f for f in queue["flavors"]}
    assert flavors["a100-mig"]["nominalGpus"] == 0  # the ClusterQueue's nvidia.com/gpu: a mixed MIG pool yields none
    assert flavors["a100-mig"]["slices"] == [{"resource": "nvidia.com/mig-1g.10gb", "nominal": 14, "mayBorrow": None, "lendsAtMost": None}]
    assert [s["resource"] for s in flavors["a100-mixed"]["slices"]] == [f"nvidia.com/mig-{p}" for p in ("1g.10gb", "2g.20gb", "3g.40gb")]
    done = cli_run("report", str(MIG / "fleet.yaml"))
    assert "| 14 A100 mig-1g.10gb (a100-mig), 2 A100 mig-1g.10gb, 1 A100 mig-2g.20gb, 1 A100 mig-3g.40gb (a100-mixed) |" in done.stdout
    assert "instead of nvidia.com/gpu (see Partitioned GPUs): inference-eastus: a100-mig, a100-mixed." in done.stdout
    done = cli_run("report", str(T4 / "fleet.yaml"))
    assert "| 16 T4 gpu.shared (t4-shared), 4 A10G replicas (a10g-shared) |" in done.stdout  # not 4 T4 and 2 A10G GPUs
    shared = json.loads(cli_run("report", str(T4 / "fleet.yaml"), "--format", "json").stdout)["queues"][0]["flavors"]
    assert [(f["flavor"], f["nominalGpus"]) for f in shared] == [("t4-shared", 0), ("a10g-shared", 4)]  # as the ClusterQueue states


@pytest.mark.parametrize("case", [T4, MIG], ids=lambda p: p.name)
def test_the_reports_slices_are_in_its_schema_which_refuses_a_missing_or_mistyped_entry(case: Path, cli_run: Run) -> None:
    schema = json.loads((REPO / "schemas" / "output" / "report.schema.json").read_text())
    done = cli_run("report", str(case / "fleet.yaml"), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    jsonschema.validate(report, schema)
    assert report["slices"]["pools"] and report["slices"]["teams"]
    broken: list[Callable[[dict[str, Any]], None]] = [
        lambda r: r.pop("slices"),
        lambda r: r["slices"].pop("teams"),
        lambda r: r["slices"]["pools"][0].pop("pricePerHour"),
        lambda r: r["slices"]["pools"][0].update(count="14"),
        lambda r: r["slices"]["pools"][0].update(resource="mig-1g.10gb"),  # not the extended resource's name
        lambda r: r["slices"]["teams"][0].update(slices=3),  # a key the report does not write
        lambda r: r["slices"]["teams"][0].update(count=-1),
        lambda r: r["clusters"][0].pop("slicedPools"),
        lambda r: r["queues"][0]["flavors"][0].pop("slices"),
        lambda r: r["queues"][0]["flavors"][0]["slices"].append({"resource": "nvidia.com/gpu.shared", "nominal": "4"}),
    ]
    for k, breaking in enumerate(broken):
        wrong = json.loads(done.stdout)
        breaking(wrong)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, schema)
            pytest.fail(f"mutation {k} validates")


SLICE_COHORT = (
    "    cohorts:\n"
    "      - name: inference\n"
    "        nominalQuota: {a100-mig: {slices: {mig-1g.10gb: 2}}}          # held by the cohort, for its queues to share\n"
    "    queues:\n"
    "      - name: search-queue\n"
    "        flavors: [a100-mig, a100-mixed]\n"
    "        cohort: inference\n"
    "        nominalQuota: {a100-mig: {slices: {mig-1g.10gb: 7}}}\n"
    "        lendingLimit: {a100-mig: {slices: {mig-1g.10gb: 4}}}\n"
    "      - name: ranking-queue\n"
    "        flavors: [a100-mig]\n"
    "        cohort: inference\n"
    "        nominalQuota: {a100-mig: {slices: {mig-1g.10gb: 5}}}          # 7 + 5 + the cohort's 2: the pool's 14\n"
    "        borrowingLimit: {a100-mig: {slices: {mig-1g.10gb: 6}}}   # search lends 4, the cohort holds 2\n"
    "    nodePools:\n"
)


def _slice_cohort_fleet() -> str:
    text = replace_once((MIG / "fleet.yaml").read_text(), "    nodePools:\n", SLICE_COHORT)
    text = text.replace("    clusters: {inference-eastus: }\n", "    clusters: {inference-eastus: {queue: search-queue}}\n", 1)
    text = replace_once(text, "slices: {mig-1g.10gb: 7, mig-3g.40gb: 1}}\n", "slices: {mig-1g.10gb: 9}}\n")
    return replace_once(text, "    clusters: {inference-eastus: }\n", "    clusters: {inference-eastus: {queue: ranking-queue}}\n")


def test_a_cohort_lends_and_borrows_slices_and_its_members_cover_the_same_resources(
    tmp_path: Path, kustomize: Any, crd_schemas: dict[tuple[str, str], dict[str, Any]], cli_run: Run
) -> None:
    text = _slice_cohort_fleet()
    assert findings_of(text) == []
    fleet = load_fleet_text(text.encode()).fleet
    found = validate_rendered(Rendered(fleet), Schemas(crds=crd_schemas), strict=True)  # the upstream CRDs' schemas and CEL
    assert [f.message for f in found if f.severity is not Severity.NOTE] == []
    (tmp_path / "fleet.yaml").write_text(text)
    done = cli_run("render", "fleet.yaml", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    objects = kustomize(tmp_path / "out" / "clusters" / "inference-eastus")
    slices = ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"]
    groups = {
        name: _one(objects, kind, name)["spec"]["resourceGroups"]
        for kind, name in (("Cohort", "inference"), ("ClusterQueue", "search-queue"), ("ClusterQueue", "ranking-queue"))
    }
    for name, [group] in groups.items():  # every member of the tree covers the slices of every pool the tree hands out
        assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu", *slices], name

    def resources(name: str, flavor: str) -> dict[str, dict[str, Any]]:
        [group] = groups[name]
        return {r["name"]: r for f in group["flavors"] if f["name"] == flavor for r in f["resources"]}

    assert resources("inference", "a100-mig")["nvidia.com/mig-1g.10gb"] == {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 2}
    assert resources("inference", "a100-mig")["cpu"]["nominalQuota"] == 0
    lent = resources("search-queue", "a100-mig")
    assert lent["nvidia.com/mig-1g.10gb"] == {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 7, "lendingLimit": 4}
    assert (lent["nvidia.com/mig-3g.40gb"]["nominalQuota"], lent["cpu"]["nominalQuota"]) == (0, 22)  # a100-mig yields no 3g.40gb
    borrowed = resources("ranking-queue", "a100-mig")["nvidia.com/mig-1g.10gb"]
    assert borrowed == {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 5, "borrowingLimit": 6}
    done = cli_run("report", "fleet.yaml", "--format", "json", cwd=tmp_path)
    queues = {q["queue"]: {f["flavor"]: f for f in q["flavors"]} for q in json.loads(done.stdout)["queues"]}
    [ranking] = queues["ranking-queue"]["a100-mig"]["slices"]
    assert (ranking["nominal"], ranking["mayBorrow"]) == (5, 4)  # it may borrow 6, its team's quota runs 9 of them
    [search, *_] = queues["search-queue"]["a100-mig"]["slices"]
    assert (search["resource"], search["lendsAtMost"]) == ("nvidia.com/mig-1g.10gb", 4)
    assert "ranking may borrow up to 4 A100 mig-1g.10gb (a100-mig) from the inference cohort" in cli_run("report", cwd=tmp_path).stdout


def test_slice_limits_are_held_to_what_the_queue_owns_and_the_cohort_lends() -> None:
    lending = replace_once(
        _slice_cohort_fleet(),
        "lendingLimit: {a100-mig: {slices: {mig-1g.10gb: 4}}}",
        "lendingLimit: {a100-mig: {slices: {mig-1g.10gb: 8}}}",
    )
    assert findings_of(lending) == [
        f"{line_of(lending, 'lendingLimit: {a100-mig')}:57: clusters[0].queues[0].lendingLimit.a100-mig.slices.mig-1g.10gb: lendingLimit 8 "
        "nvidia.com/mig-1g.10gb of a100-mig is above the queue's nominal quota 7: a queue lends only what it owns"
    ]
    borrowing = replace_once(
        _slice_cohort_fleet(),
        "borrowingLimit: {a100-mig: {slices: {mig-1g.10gb: 6}}}",
        "borrowingLimit: {a100-mig: {slices: {mig-1g.10gb: 7}}}",
    )
    assert findings_of(borrowing) == [
        f"{line_of(borrowing, 'borrowingLimit: {a100-mig')}:59: clusters[0].queues[1].borrowingLimit.a100-mig.slices.mig-1g.10gb: "
        "borrowingLimit 7 nvidia.com/mig-1g.10gb of a100-mig exceeds the 6 that cohort inference can lend"
    ]

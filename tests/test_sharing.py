"""Sharing GPUs between teams: Kueue cohorts, borrowing and lending, fair sharing, Volcano queues.

Every new fleet.yaml field goes through the real `kubectl kustomize` and the upstream Kueue and
Volcano CRDs; every new check is pinned to its line and column.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.load import load_fleet_text
from fleetgen.render import cluster_objects, files_of, plan
from fleetgen.review.changes import fleet_changes
from fleetgen.tree import Tree

Build = Callable[[Path], list[dict[str, Any]]]
TEXT = EXAMPLE.read_text(encoding="utf-8")
TRAINING_QUEUES = """    queues:
      - name: gpu-cluster-queue
        flavors: [a100-spot, a100-ondemand]   # spot first, on-demand when spot is full
        cohort: training
        fairSharingWeight: 2
        preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
"""
# training-eastus with every sharing field: a cohort tree with its own quota, limits both ways,
# fungibility, borrowWithinCohort, topology, and Volcano on the H100 pool (the H100 queue moved off it).
SHARED = (
    replace_once(
        replace_once(
            replace_once(
                TEXT,
                TRAINING_QUEUES,
                TRAINING_QUEUES
                + """        lendingLimit: {a100-spot: {gpu: 12}}
        borrowingLimit: {a100-ondemand: {gpu: 4, cpu: 32}}
        flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, preference: BorrowingOverPreemption}
      - name: nlp-queue
        flavors: [a100-ondemand]
        cohort: research
        nominalQuota: {a100-ondemand: {gpu: 4}}
        preemption: {reclaimWithinCohort: LowerPriority, borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 1000}}
        admits: placed-teams
""",
            ),
            "      - name: training\n",
            """      - name: training
        parent: research
        fairSharingWeight: 3
        lendingLimit: {a100-spot: {gpu: 4}}
      - name: research
        nominalQuota: {a100-ondemand: {gpu: 2}}
""",
        ),
        "      - name: h100-queue\n        flavors: [h100-ondemand]\n",
        """      - name: h100-queue
        flavors: [a100-ondemand]
    volcano: {nodePools: [h100-ondemand], weights: {nlp: 3}, reclaimable: false}
""",
    )
    .replace(
        "        labels: {accelerator: nvidia-h100}\n",
        "        labels: {accelerator: nvidia-h100}\n        topology: [example.com/block, kubernetes.io/hostname]\n",
    )
    .replace(
        "      training-eastus:\n      prod-inference-eastus: {requests: {gpu: 4}}",
        "      training-eastus: {queue: nlp-queue}\n      prod-inference-eastus: {requests: {gpu: 4}}",
    )
    .replace("capacity:\n", "capacity:\n")
    .replace("versionSets:\n", "scheduling: {workloadPriorityClasses: true}\n\nversionSets:\n", 1)
)


def _load(text: str) -> Any:
    return load_fleet_text(text.encode()).fleet


@pytest.fixture(scope="module")
def shared_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shared")
    Tree(root).write(files_of(plan(_load(SHARED))))
    return root


def _by_key(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}


def test_sharing_objects_build_with_kustomize_and_pass_the_upstream_crds(
    shared_tree: Path, kustomize: Build, crd_schemas: dict[tuple[str, str], dict[str, Any]]
) -> None:
    fleet = _load(SHARED)
    index = [c.name for c in fleet.clusters].index("training-eastus")
    built = kustomize(shared_tree / "clusters" / "training-eastus")
    assert _by_key(built) == _by_key([m.body for m in cluster_objects(fleet, index)])
    kinds = {"Cohort", "ClusterQueue", "ResourceFlavor", "Topology", "WorkloadPriorityClass", "Queue", "LocalQueue"}
    checked = set()
    for obj in built:
        if obj["kind"] in kinds:
            jsonschema.Draft7Validator(crd_schemas[(obj["apiVersion"], obj["kind"])]).validate(obj)
            checked.add(obj["kind"])
    assert checked == kinds


def test_cohorts_limits_weights_and_preemption_are_rendered(shared_tree: Path, kustomize: Build) -> None:
    objects = _by_key(kustomize(shared_tree / "clusters" / "training-eastus"))
    training, research = objects[("Cohort", "", "training")]["spec"], objects[("Cohort", "", "research")]["spec"]
    assert training["parentName"] == "research" and training["fairSharing"] == {"weight": 3}
    spot = training["resourceGroups"][0]["flavors"][0]
    assert spot["name"] == "a100-spot"
    assert spot["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 0, "lendingLimit": 4}
    assert research["resourceGroups"][0]["flavors"][0]["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 2}
    shared = objects[("ClusterQueue", "", "gpu-cluster-queue")]["spec"]
    spot, ondemand = shared["resourceGroups"][0]["flavors"]
    assert spot["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 16, "lendingLimit": 12}
    assert ondemand["resources"][0] == {"name": "cpu", "nominalQuota": 64, "borrowingLimit": 32}
    assert shared["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "BorrowingOverPreemption",
    }
    assert shared["fairSharing"] == {"weight": 2}
    nlp = objects[("ClusterQueue", "", "nlp-queue")]["spec"]
    # 4 of the pool's 8 GPUs bring half its CPU and memory
    assert nlp["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "cpu", "nominalQuota": 32},
        {"name": "memory", "nominalQuota": "128Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": 4},
    ]
    assert nlp["preemption"]["borrowWithinCohort"] == {"policy": "LowerPriority", "maxPriorityThreshold": 1000}
    assert nlp["namespaceSelector"] == {"matchExpressions": [{"key": "team", "operator": "In", "values": ["nlp"]}]}
    assert objects[("ClusterQueue", "", "h100-queue")]["spec"]["namespaceSelector"] == {}


def test_topology_and_workload_priority_classes(shared_tree: Path, kustomize: Build) -> None:
    objects = _by_key(kustomize(shared_tree / "clusters" / "training-eastus"))
    assert objects[("Topology", "", "h100-ondemand")]["spec"]["levels"] == [
        {"nodeLabel": "example.com/block"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]
    assert objects[("ResourceFlavor", "", "h100-ondemand")]["spec"]["topologyName"] == "h100-ondemand"
    assert "topologyName" not in objects[("ResourceFlavor", "", "a100-spot")]["spec"]
    classes = {name: o["value"] for (kind, _, name), o in objects.items() if kind == "PriorityClass"}
    workload = {name: o["value"] for (kind, _, name), o in objects.items() if kind == "WorkloadPriorityClass"}
    assert workload == classes and len(workload) == 3


def test_volcano_queues_and_roles_only_on_the_volcano_cluster(shared_tree: Path, kustomize: Build) -> None:
    objects = _by_key(kustomize(shared_tree / "clusters" / "training-eastus"))
    nlp = objects[("Queue", "", "team-nlp")]["spec"]
    assert nlp == {
        "weight": 3,
        "reclaimable": False,
        "capability": {"cpu": 128, "memory": "512Gi", "nvidia.com/gpu": 8},
        "guarantee": {"resource": {"cpu": 64, "memory": "256Gi", "nvidia.com/gpu": 8}},
    }
    assert objects[("Queue", "", "team-robotics")]["spec"]["weight"] == 1
    rules = objects[("Role", "team-nlp", "gpu-workload-role")]["rules"]
    assert {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get", "list", "watch", "create", "delete"]} in rules
    assert any(r["apiGroups"] == ["scheduling.volcano.sh"] and r["resources"] == ["podgroups"] for r in rules)
    dev = _by_key(kustomize(shared_tree / "clusters" / "dev-eastus"))
    assert not any(kind == "Queue" for kind, _, _ in dev)
    assert all("volcano" not in str(r["apiGroups"]) for r in dev[("Role", "team-nlp", "gpu-workload-role")]["rules"])


def test_existing_fleets_render_as_before() -> None:
    """The example without sharing fields: no Cohort, Topology, WorkloadPriorityClass or Volcano Queue."""
    fleet = _load(TEXT)
    for index in range(len(fleet.clusters)):
        kinds = {m.body["kind"] for m in cluster_objects(fleet, index)}
        assert not kinds & {"Topology", "WorkloadPriorityClass", "Queue"}


@pytest.mark.parametrize(
    ("old", "new", "needle", "column", "message"),
    [
        (
            "        lendingLimit: {a100-spot: {gpu: 12}}\n",
            "        lendingLimit: {a100-spot: {gpu: 20}}\n",
            "lendingLimit: {a100-spot: {gpu: 20}}",
            41,
            "lendingLimit 20 nvidia.com/gpu of a100-spot is above the queue's nominal quota 16: a queue lends only what it owns",
        ),
        (
            "        borrowingLimit: {a100-ondemand: {gpu: 4, cpu: 32}}\n",
            "        borrowingLimit: {a100-ondemand: {gpu: 9, cpu: 32}}\n",
            "borrowingLimit: {a100-ondemand: {gpu: 9",
            47,
            "borrowingLimit 9 nvidia.com/gpu of a100-ondemand exceeds the 6 that cohort training can lend",
        ),
        (
            "      - name: research\n",
            "      - name: research\n        parent: training\n",
            "        parent: training",
            17,
            "cohort cycle: research -> training -> research; a cohort tree needs a top",
        ),
        (
            "    volcano: {nodePools: [h100-ondemand]",
            "    volcano: {nodePools: [a100-ondemand]",
            "    volcano: {nodePools:",
            15,
            "Volcano and Kueue queue gpu-cluster-queue both hand out the GPUs of a100-ondemand: "
            "split the node pools (volcano.nodePools, and flavors on each queue)",
        ),
        (
            "        nominalQuota: {a100-ondemand: {gpu: 4}}\n",
            "        nominalQuota: {a100-ondemand: {gpu: 0}}\n        borrowingLimit: {a100-ondemand: {gpu: 0}}\n",
            "training-eastus: {queue: nlp-queue}",
            32,
            "team nlp's queue nlp-queue on training-eastus cannot reach any GPU: its flavors hold no GPU nominal quota "
            "and it cannot borrow one from a cohort",
        ),
        (
            "        cohort: research\n",
            "        borrowingLimit: {a100-ondemand: {gpu: 2}}\n",
            "borrowingLimit: {a100-ondemand: {gpu: 2}}",
            47,
            "borrowingLimit needs a cohort to borrow from (set cohort)",
        ),
    ],
)
def test_sharing_checks_point_at_the_field(old: str, new: str, needle: str, column: int, message: str) -> None:
    text = replace_once(SHARED, old, new)
    found = findings_of(text)
    line = line_of(text, needle)
    assert any(f.startswith(f"{line}:{column}: ") and f.endswith(f": {message}") for f in found), found


def test_the_shared_fleet_and_the_example_pass_every_check() -> None:
    assert findings_of(SHARED) == []
    assert findings_of(TEXT) == []


def test_a_borrowing_limit_change_is_summarised_in_sharing_terms() -> None:
    head = replace_once(TEXT, "borrowingLimit: {a100-spot: {gpu: 8}}", "borrowingLimit: {a100-spot: {gpu: 12}}")
    summaries = [c.text for c in fleet_changes(_load(TEXT), _load(head))]
    assert "cluster training-eastus: data-science may borrow up to 12 (was 8) A100 GPUs of a100-spot from cohort training" in summaries

"""The capacity model: each bug of issue 40's capacity half reproduced on the example, then its fix pinned.

Quota sums per pool and resource, flavors that select each other's nodes, GPU-equivalents of slices and
shares, and a CPU-only pool's price. The properties over generated fleets are in test_capacity_properties.py.
"""

from __future__ import annotations

from fractions import Fraction

from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.checks.capacity import equivalents, pool_capacity, requests_equivalents
from fleetgen.checks.load import load_fleet_text

TEXT = EXAMPLE.read_text(encoding="utf-8")
DEV_TWO_QUEUES = replace_once(
    replace_once(
        replace_once(
            TEXT,
            "      dev-eastus: {requests: {gpu: 2}, limits: {gpu: 2}}\n",
            "      dev-eastus: {requests: {gpu: 2}, limits: {gpu: 2}, queue: gpu-cluster-queue}\n",
        ),
        "        taints: [{key: kubernetes.azure.com/scalesetpriority, value: spot}]\n\n# What teams",
        "        taints: [{key: kubernetes.azure.com/scalesetpriority, value: spot}]\n    queues: [{name: gpu-cluster-queue}, {name: notebooks-queue}]\n\n# What teams",
    ),
    "      dev-eastus: {requests: {gpu: 2}}\n",
    "      dev-eastus: {requests: {gpu: 2}, queue: notebooks-queue}\n",
).replace(
    "      dev-eastus:\n    priorityClasses: [scheduled-training",
    "      dev-eastus: {queue: gpu-cluster-queue}\n    priorityClasses: [scheduled-training",
)


def test_two_queues_over_one_pool_cannot_both_own_it() -> None:
    """Issue 40: two ClusterQueues without nominal quotas each owned the whole of dev-eastus' pools (24 GPUs of
    guarantees on 12), and validate said nothing."""
    found = findings_of(DEV_TWO_QUEUES)
    line = line_of(DEV_TWO_QUEUES, "queues: [{name: gpu-cluster-queue}, {name: notebooks-queue}]")
    assert f"{line}:41: clusters[3].queues[1]: the nominal quotas on dev-eastus guarantee 16 nvidia.com/gpu of t4-spot " in "\n".join(found)
    assert any(
        "(queue gpu-cluster-queue 8 (all of it: no nominalQuota), queue notebooks-queue 8 (all of it: no nominalQuota))" in f for f in found
    )
    assert any("guarantee 8 nvidia.com/gpu of a10g-spot" in f and "above the 4 it yields" in f for f in found)
    assert len(found) == 2


def test_split_nominal_quotas_fit_and_overcommit_is_the_opt_in() -> None:
    split = DEV_TWO_QUEUES.replace(
        "queues: [{name: gpu-cluster-queue}, {name: notebooks-queue}]",
        "queues:\n      - {name: gpu-cluster-queue, nominalQuota: {t4-spot: {gpu: 6}, a10g-spot: {gpu: 2}}}\n"
        "      - {name: notebooks-queue, nominalQuota: {t4-spot: {gpu: 2}, a10g-spot: {gpu: 2}}}",
    )
    assert findings_of(split) == []
    over = DEV_TWO_QUEUES.replace("# capacity:\n#   gpuOvercommit: 1.5 ", "capacity:\n  gpuOvercommit: 2.0 ")
    assert findings_of(over) == []
    short = DEV_TWO_QUEUES.replace("# capacity:\n#   gpuOvercommit: 1.5 ", "capacity:\n  gpuOvercommit: 1.5 ")
    assert any("above the 8 x overcommit 1.5 it yields" in f for f in findings_of(short))


def test_a_stated_nominal_quota_above_its_pool_is_refused() -> None:
    """Issue 40: a queue's explicit nominalQuota of 240 H200s on a 128-GPU pool validated."""
    text = replace_once(
        TEXT, "        nominalQuota: {a100-spot: {gpu: 0}}    # nothing", "        nominalQuota: {a100-spot: {gpu: 40}}    # nothing"
    )
    text = replace_once(
        text,
        "        lendingLimit: {a100-spot: {gpu: 8}}    # keeps",
        "        nominalQuota: {a100-spot: {gpu: 200}}\n        lendingLimit: {a100-spot: {gpu: 8}}    # keeps",
    )
    text = replace_once(text, "        borrowingLimit: {a100-spot: {gpu: 8}}\n", "")
    found = findings_of(text)
    line = line_of(text, "nominalQuota: {a100-spot: {gpu: 200}}")
    assert found[0].startswith(
        f"{line}:24: clusters[2].queues[0].nominalQuota.a100-spot: the nominal quotas on training-eastus guarantee 240 "
    )
    assert (
        "(queue gpu-cluster-queue 200, queue data-science-queue 40), above the 16 it yields (2 nodes x 8 A100); lower the nominal quotas, or set capacity.gpuOvercommit"
        in found[0]
    )


def test_a_cohort_quota_counts_with_the_queues() -> None:
    text = replace_once(
        TEXT,
        "    cohorts:\n      - name: training\n",
        "    cohorts:\n      - name: training\n        nominalQuota: {a100-spot: {gpu: 4}}\n",
    )
    found = findings_of(text)
    assert any("cohorts[0].nominalQuota.a100-spot" not in f and "guarantee 20 nvidia.com/gpu of a100-spot" in f for f in found)
    assert any("cohort training 4" in f for f in found)


L4_POOLS = """      - name: l4
        vmSize: Standard_NV36ads_A10_v5
        gpuModel: L4
        gpusPerNode: 1
        cpuPerNode: 34
        memoryPerNode: 400Gi
        maxNodes: 4
        scaling: spot
        labels: {accelerator: nvidia-l4}
      - name: l4-shared
        vmSize: Standard_NV36ads_A10_v5
        gpuModel: L4
        gpusPerNode: 1
        cpuPerNode: 34
        memoryPerNode: 400Gi
        maxNodes: 4
        scaling: spot
        partitioning: {timeSlicing: {replicas: 4}}
        labels: {accelerator: nvidia-l4, sharing: shared, nvidia.com/device-plugin.config: l4-shared}
"""


def test_a_pool_whose_labels_hold_another_pools_flavor_is_refused() -> None:
    """Issue 40: only identical label sets were caught; a superset let Kueue place a whole-GPU workload on shared GPUs."""
    text = replace_once(
        TEXT,
        "      - name: a10g-spot\n        vmSize: Standard_NV36ads_A10_v5\n",
        L4_POOLS + "      - name: a10g-spot\n        vmSize: Standard_NV36ads_A10_v5\n",
    )
    line = line_of(text, "labels: {accelerator: nvidia-l4, sharing: shared")
    assert [f for f in findings_of(text) if "labels" in f.split(": ")[1]] == [
        f"{line}:9: clusters[3].nodePools[2].labels: node pool l4-shared's labels include all of l4's (accelerator=nvidia-l4): "
        "ResourceFlavor l4 also selects l4-shared's nodes, so Kueue may run a workload admitted to l4 (whole GPUs) on l4-shared "
        "(time-sliced GPUs); give l4 a label l4-shared's nodes lack"
    ]
    apart = text.replace("labels: {accelerator: nvidia-l4}\n", "labels: {accelerator: nvidia-l4, sharing: whole}\n")
    assert [f for f in findings_of(apart) if "labels" in f.split(": ")[1]] == []


def test_identical_labels_are_still_reported_once() -> None:
    text = replace_once(
        TEXT,
        "        labels: {accelerator: nvidia-a10g}\n        taints: [{key: kubernetes.azure.com/scalesetpriority",
        "        labels: {accelerator: nvidia-t4}\n        taints: [{key: kubernetes.azure.com/scalesetpriority",
    )
    assert [f.split(": ", 2)[1:] for f in findings_of(text)] == [
        ["clusters[3].nodePools[1].labels", "same labels as node pool 't4-spot': Kueue could not tell them apart"]
    ]


def test_slices_and_shares_count_as_their_share_of_a_gpu() -> None:
    fleet = load_fleet_text((EXAMPLE.parent / "tests" / "cases" / "mig-a100-inference" / "fleet.yaml").read_bytes()).fleet
    cluster = fleet.clusters[0]
    mig = next(p for p in cluster.node_pools if p.partitioning.mig is not None and p.partitioning.mig.layout == "all-1g.10gb")
    assert equivalents(mig, "nvidia.com/mig-1g.10gb", 28) == 4
    capacity = pool_capacity(mig)
    assert capacity.kind == "mig" and capacity.slices == 7 * capacity.gpus and capacity.whole_gpus == 0
    shared = load_fleet_text((EXAMPLE.parent / "tests" / "cases" / "timesliced-t4-dev" / "fleet.yaml").read_bytes()).fleet
    dev = shared.clusters[0]
    t4 = dev.node_pools[0]
    assert pool_capacity(t4).gpus == 4 and pool_capacity(t4).shares == 16
    notebooks = shared.teams[0].quota_on("dev-eastus").requests  # gpu 2 (a10g replicas, 1/2 each), gpu.shared 8 (1/4 each)
    assert requests_equivalents(dev, notebooks) == Fraction(2, 2) + Fraction(8, 4)

"""The capacity model: each bug of issue 40's capacity half reproduced on the example, then its fix pinned.

Quota sums per pool and resource, flavors that select each other's nodes, GPU-equivalents of slices and
shares, and a CPU-only pool's price. The properties over generated fleets are in test_capacity_properties.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import get_args

import pytest
from conftest import EXAMPLE, findings_of, git, line_of, replace_once

from fleetgen.authoring.scaffold import workflow
from fleetgen.checks.capacity import equivalents, pool_capacity, requests_equivalents
from fleetgen.checks.load import load_fleet_text
from fleetgen.model import Fleet
from fleetgen.model.compat import Compatibility
from fleetgen.report.capacity import build_report
from fleetgen.report.capacity_output import report_json, report_markdown
from fleetgen.review.approvals import BUILTIN_RULES, required_approvals
from fleetgen.review.changes import ChangeKind, fleet_changes

Run = Callable[..., subprocess.CompletedProcess[str]]
TEXT = EXAMPLE.read_text(encoding="utf-8")
DEV_TWO_QUEUES = replace_once(
    replace_once(
        replace_once(
            TEXT,
            "      dev-eastus:\n        requests: {gpu: 2}\n        limits: {gpu: 2}\n",
            "      dev-eastus:\n        queue: gpu-cluster-queue\n        requests: {gpu: 2}\n        limits: {gpu: 2}\n",
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
        "(queue gpu-cluster-queue 200, queue data-science-queue 40), above the 16 it yields (2 x 8 A100); lower the nominal quotas, or set capacity.gpuOvercommit"
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


MIG_TEXT = (EXAMPLE.parent / "tests" / "cases" / "mig-a100-inference" / "fleet.yaml").read_text(encoding="utf-8")
RULES = """approvals:
  - {name: large-gpu-allocation, when: {gpuQuotaAtLeast: 8}, approvers: [platform-leads]}
  - {name: more-gpus, when: {addedGpusAtLeast: 8}, approvers: [finance]}
  - {name: dearer, when: {addedMonthlyCostAtLeast: 10000}, approvers: [finance]}
"""


def _mig_fleet(search_slices: int, max_nodes: int = 18, extra: str = "") -> Fleet:
    text = replace_once(MIG_TEXT, "        minNodes: 2\n        maxNodes: 2\n", f"        minNodes: 2\n        maxNodes: {max_nodes}\n")
    text = replace_once(text, "slices: {mig-1g.10gb: 7}}\n    clusters", f"slices: {{mig-1g.10gb: {search_slices}}}}}\n    clusters")
    return load_fleet_text((text + RULES + extra).encode()).fleet


def _gated(base: Fleet, head: Fleet) -> tuple[list[str], dict[str, list[str]]]:
    changes = fleet_changes(base, head)
    return [c.text for c in changes], {a.rule.name: [c.text for c in a.changes] for a in required_approvals(base, changes)}


def test_a_slice_quota_raise_is_a_change_the_gpu_rule_counts_in_gpu_equivalents() -> None:
    """Issue 40: raising a team's MIG quota from 28 to 112 mig-1g.10gb (16 GPUs' worth) gave 0 changes and no approval."""
    texts, gated = _gated(_mig_fleet(28), _mig_fleet(112))
    change = "team search: nvidia.com/mig-1g.10gb quota on inference-eastus 28 -> 112 (16 GPU-equivalents in all)"
    assert texts == [change]
    assert gated == {"large-gpu-allocation": [change]}
    assert _gated(_mig_fleet(28), _mig_fleet(49))[1] == {}  # 7 GPU-equivalents: under the rule's 8


def test_a_node_pool_added_or_grown_is_gated_by_gpus_and_monthly_cost() -> None:
    """Issue 40: adding a GPU node pool (tens of thousands a month) needed no approval."""
    base = _mig_fleet(28)
    grown = _mig_fleet(28, max_nodes=26)
    texts, gated = _gated(base, grown)
    assert texts == [
        "cluster inference-eastus: node pool a100-mig maxNodes 18 -> 26 (now 26 x 1 A100, MIG all-1g.10gb (7 x 1g.10gb) per GPU, mixed strategy; +8 GPUs, +21,433 USD/month)"
    ]
    assert set(gated) == {"more-gpus", "dearer"}
    pool = "      - name: h100\n        vmSize: Standard_ND96isr_H100_v5\n        gpuModel: H100\n        gpusPerNode: 8\n        cpuPerNode: 88\n        memoryPerNode: 1600Gi\n        maxNodes: 1\n        scaling: on-demand\n        labels: {accelerator: nvidia-h100}\n"
    added = load_fleet_text((replace_once(MIG_TEXT, "    nodePools:\n", "    nodePools:\n" + pool) + RULES).encode()).fleet
    base = load_fleet_text((MIG_TEXT + RULES).encode()).fleet
    texts, gated = _gated(base, added)
    assert texts == ["cluster inference-eastus: node pool h100 added (1 x 8 H100, cost unknown: no price for its VM size)"]
    assert set(gated) == {"more-gpus", "dearer"}  # no price for its VM size: the cost rule fires rather than skips


def test_prices_partitioning_and_the_facts_file_are_changes_and_the_facts_are_gated() -> None:
    base = load_fleet_text((MIG_TEXT + RULES).encode()).fleet
    dearer = load_fleet_text(
        (MIG_TEXT + RULES).replace("Standard_NC24ads_A100_v4: 3.67}", "Standard_NC24ads_A100_v4: 3.90}").encode()
    ).fleet
    assert [c.text for c in fleet_changes(base, dearer)] == ["pricing.gpuHour Standard_NC24ads_A100_v4: 3.67 -> 3.9"]
    recut = load_fleet_text(
        (MIG_TEXT + RULES).replace("{mig: {layout: {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}}}", "{mig: {layout: {3g.40gb: 2}}}").encode()
    ).fleet
    assert [c.text for c in fleet_changes(base, recut)] == [
        "cluster inference-eastus: node pool a100-mixed partitioning MIG a100-mixed (2 x 1g.10gb, 1 x 2g.20gb, 1 x 3g.40gb) per GPU, "
        "mixed strategy -> MIG a100-mixed (2 x 3g.40gb) per GPU, mixed strategy (now 1 x 1 A100, MIG a100-mixed (2 x 3g.40gb) per GPU, "
        "mixed strategy; +0 GPUs, +0 USD/month)"
    ]
    named = base.model_copy(update={"compatibility": Compatibility(facts_file="extra-facts.yaml")})
    rows = b"gpuModels:\n  - {gpu: X1, computeCapability: '9.0', firstCuda: '12.4', minDriver: 550.54.14, source: s, url: https://example.com}\n"
    changes = fleet_changes(named, named, (None, rows))
    assert [c.text for c in changes] == ["facts file extra-facts.yaml: gpuModels 1 row(s) added or changed, 0 removed or changed"]
    assert [a.rule.name for a in required_approvals(named, changes)] == ["fleetgen-gate"]
    changes = fleet_changes(base, named, (None, rows))
    assert changes[0].text == "compatibility.factsFile: none -> extra-facts.yaml" and changes[0].kind == "facts"


def test_the_workflow_runs_on_an_edit_to_any_facts_file() -> None:
    """Issue 40: a pull request that only edited the facts file did not trigger the scaffolded workflow. It now runs
    on every pull request, with no path filter that a facts file of any name could fall outside of."""
    trigger = workflow(".")["on"]
    assert trigger["pull_request"] == {}
    assert trigger["push"] == {"branches": ["main"]}  # the base branch's run, which leaves fleetgen's cache: no path filter either


def test_change_kinds_are_a_closed_type() -> None:
    """A typo in a kind is a type error, not a rule that silently gates nothing."""
    kinds = set(get_args(ChangeKind))
    assert {k for _, _, ks in BUILTIN_RULES for k in ks} <= kinds
    assert {"facts", "pricing", "node-pool", "quota"} <= kinds


CPU_POOL = """      - name: cpu
        vmSize: Standard_D16s_v5
        gpusPerNode: 0
        cpuPerNode: 15
        memoryPerNode: 56Gi
        maxNodes: 3
        scaling: on-demand
        labels: {pool: cpu}
"""


def test_the_report_keeps_physical_gpus_apart_from_shares_and_slices() -> None:
    """Issue 40: the report counted time-sliced replicas as GPUs."""
    shared = build_report(load_fleet_text((EXAMPLE.parent / "tests" / "cases" / "timesliced-t4-dev" / "fleet.yaml").read_bytes()).fleet)
    [dev] = shared.clusters
    assert (dev.gpus, dev.shared_gpus, dev.shares, dev.mig_gpus, dev.mig_slices) == (6, 6, 20, 0, 0)
    data = json.loads(report_json(shared))["clusters"][0]
    assert (data["gpus"], data["shares"], data["migSlices"], data["gpuResource"]) == (6, 20, 0, 4)
    assert "| dev-eastus | dev | 6 | 20 (on 6 GPUs) | — |" in report_markdown(shared)
    mig = build_report(load_fleet_text(MIG_TEXT.encode()).fleet)
    assert (mig.clusters[0].gpus, mig.clusters[0].mig_slices, mig.clusters[0].gpu_units) == (3, 18, 0)


def test_a_cpu_only_pool_is_priced_per_node_hour_and_never_makes_a_cost_unknown() -> None:
    """Issue 40: a CPU-only pool without a pricing.gpuHour entry made its cluster's cost n/a."""
    text = replace_once(
        TEXT,
        "      - name: a10g-spot\n        vmSize: Standard_NV36ads_A10_v5\n",
        CPU_POOL + "      - name: a10g-spot\n        vmSize: Standard_NV36ads_A10_v5\n",
    )
    before = {c.name: c.monthly_cost for c in build_report(load_fleet_text(TEXT.encode()).fleet).clusters}
    unpriced = build_report(load_fleet_text(text.encode()).fleet)
    assert {c.name: c.monthly_cost for c in unpriced.clusters} == before  # counted 0, not n/a
    assert unpriced.unpriced == ("Standard_D16s_v5",)
    priced = text.replace("    Standard_NC4as_T4_v3: 0.53\n", "    Standard_NC4as_T4_v3: 0.53\n  nodeHour:\n    Standard_D16s_v5: 0.77\n")
    report = build_report(load_fleet_text(priced.encode()).fleet)
    dev = {c.name: c for c in report.clusters}["dev-eastus"]
    assert dev.monthly_cost == pytest.approx((before["dev-eastus"] or 0) + 3 * 0.77 * 730)
    assert report.unpriced == ()
    by_gpu_table = text.replace(
        "    Standard_NC4as_T4_v3: 0.53\n", "    Standard_NC4as_T4_v3: 0.53\n    Standard_D16s_v5: 0.77   # 0 GPUs: the node's price\n"
    )
    dev = {c.name: c for c in build_report(load_fleet_text(by_gpu_table.encode()).fleet).clusters}["dev-eastus"]
    assert dev.monthly_cost == pytest.approx((before["dev-eastus"] or 0) + 3 * 0.77 * 730)


def test_a_queues_slice_quota_is_summarised_in_its_slices() -> None:
    queue = "    queues: [{name: gpu-cluster-queue, nominalQuota: {a100-mig: {slices: {mig-1g.10gb: 14}}}}]\n    nodePools:\n"
    base = load_fleet_text(replace_once(MIG_TEXT, "    nodePools:\n", queue).encode()).fleet
    head = load_fleet_text(replace_once(MIG_TEXT, "    nodePools:\n", queue.replace("10gb: 14", "10gb: 10")).encode()).fleet
    assert [c.text for c in fleet_changes(base, head)] == [
        "cluster inference-eastus: queue gpu-cluster-queue changed",
        "cluster inference-eastus: search, ranking owns 10 A100 mig-1g.10gb of a100-mig (was 14)",
    ]


def test_the_diff_schema_names_every_kind_of_change() -> None:
    schema = json.loads((EXAMPLE.parent / "schemas" / "output" / "diff.schema.json").read_text(encoding="utf-8"))
    assert schema["properties"]["summary"]["items"]["properties"]["kind"]["enum"] == list(get_args(ChangeKind))


def test_a_pull_request_that_only_edits_the_facts_file_is_reviewed_and_gated(repo: Path, cli_run: Run) -> None:
    """Issue 40: editing only the facts file changed what validate and the planner accept, unreviewed."""
    text = replace_once(TEXT, "\nversionSets:\n", "\ncompatibility:\n  factsFile: extra-facts.yaml\n\nversionSets:\n")
    (repo / "fleet.yaml").write_text(text, encoding="utf-8")
    row = '  - {cuda: "12.6", minDriver: "550.90.07", source: "Our driver qualification", url: "https://wiki.example.com/gpu/drivers"}\n'
    (repo / "extra-facts.yaml").write_text("cudaDriver:\n" + row, encoding="utf-8")
    git(repo, "add", "fleet.yaml", "extra-facts.yaml")
    git(repo, "commit", "-qm", "own facts")
    (repo / "extra-facts.yaml").write_text("cudaDriver:\n" + row.replace("550.90.07", "550.54.15"), encoding="utf-8")
    done = cli_run("diff", "--base", "main", "--format", "json", cwd=repo)
    assert done.returncode == 1, done.stderr
    review = json.loads(done.stdout)
    assert [s["text"] for s in review["summary"]] == [
        "facts file extra-facts.yaml: cudaDriver 1 row(s) added or changed, 1 removed or changed"
    ]
    assert [a["rule"] for a in review["approvals"]] == ["fleetgen-gate"]


def test_a_cluster_added_carries_its_gpus_and_cost_to_the_rules() -> None:
    head = load_fleet_text(TEXT.encode()).fleet
    base = head.model_copy(update={"clusters": head.clusters[:3]})  # the example before dev-eastus joined
    changes = fleet_changes(base, head)
    [added] = [c for c in changes if c.kind == "cluster-added"]
    assert (added.added_gpus, round(added.added_cost or 0)) == (12, round((8 * 0.53 + 4 * 3.20) * 730))
    gated = {a.rule.name: [c.kind for c in a.changes] for a in required_approvals(base, changes)}
    assert gated["added-capacity"] == ["cluster-added"] and gated["new-cluster"] == ["cluster-added"]


def test_a_copy_of_a_fleet_with_other_clusters_looks_its_own_up() -> None:
    """The copy above, once the head has been looked into: pydantic copied the head's cached lookups with it."""
    head = load_fleet_text(TEXT.encode()).fleet
    assert "dev-eastus" in head.cluster_named and head.team_access  # cached on the head first
    base = head.model_copy(update={"clusters": head.clusters[:3]})
    assert sorted(base.cluster_named) == sorted(c.name for c in head.clusters[:3])
    assert [c.kind for c in fleet_changes(base, head) if c.kind == "cluster-added"] == ["cluster-added"]


def test_a_copy_of_a_team_with_other_placements_works_its_quotas_out_again() -> None:
    """The same for every model: a team copied with other clusters (as MultiKueue places teams on workers) kept the
    quotas cached on the original."""
    team = load_fleet_text(TEXT.encode()).fleet.teams[0]
    assert team.quotas  # cached on the original first
    moved = team.model_copy(update={"clusters": {"dev-eastus": None}})
    assert list(moved.quotas) == ["dev-eastus"] and moved.quota_on("training-eastus") == team.quota
    assert list(team.model_copy().quotas) == list(team.quotas)  # a plain copy keeps what it had


def test_volcano_guarantees_count_what_the_pools_advertise() -> None:
    """Volcano guarantees nvidia.com/gpu as Kubernetes counts it: a time-sliced pool's replicas, not its physical GPUs."""
    text = replace_once(
        TEXT,
        "        labels: {accelerator: nvidia-a100, kubernetes.azure.com/scalesetpriority: regular}\n",
        "        partitioning: {timeSlicing: {replicas: 2}}\n"
        "        labels: {accelerator: nvidia-a100, kubernetes.azure.com/scalesetpriority: regular, "
        "nvidia.com/device-plugin.config: a100-ondemand}\n",
    )
    text = replace_once(
        text, "      guarantees: {nlp: {gpu: 8}}", "      guarantees: {nlp: {gpu: 16}, robotics: {gpu: 4}, data-science: {gpu: 8}}"
    )
    text = replace_once(
        text,
        "      training-eastus: {queue: gpu-cluster-queue}   # the cluster",
        "      training-eastus: {queue: gpu-cluster-queue, requests: {gpu: 16}}   # the cluster",
    )
    assert findings_of(text) == []  # 28 guaranteed: above the 24 physical GPUs, within the 32 nvidia.com/gpu advertised
    whole = replace_once(text, "        partitioning: {timeSlicing: {replicas: 2}}\n", "")
    over = replace_once(whole, ", nvidia.com/device-plugin.config: a100-ondemand}", "}")  # the same guarantees on whole GPUs
    assert any(
        "Volcano guarantees on training-eastus add up to 28 nvidia.com/gpu" in f and "(24: a100-ondemand 1 x 8, h100-ondemand 2 x 8)" in f
        for f in findings_of(over)
    )


def test_a_gpu_vm_priced_per_node_hour_costs_the_same_as_per_gpu_hour() -> None:
    per_gpu = build_report(load_fleet_text(TEXT.encode()).fleet)
    a100 = "    Standard_ND96asr_v4: 3.40\n"  # 8 GPUs a node: 27.20 a node-hour
    per_node = replace_once(replace_once(TEXT, a100, ""), "  gpuHour:\n", "  nodeHour: {Standard_ND96asr_v4: 27.20}\n  gpuHour:\n")
    report = build_report(load_fleet_text(per_node.encode()).fleet)
    assert [c.monthly_cost for c in report.clusters] == pytest.approx([c.monthly_cost for c in per_gpu.clusters])
    assert [t.monthly_cost for t in report.teams] == pytest.approx([t.monthly_cost for t in per_gpu.teams])

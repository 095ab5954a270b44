"""Sharing GPUs between teams: Kueue cohorts, borrowing and lending, fair sharing, Volcano queues.

Every new fleet.yaml field goes through the real `kubectl kustomize` and the upstream Kueue and
Volcano CRDs; every new check is pinned to its line and column.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import EXAMPLE, REPO, findings_of, git, line_of, replace_once

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.output.emit import files_of
from fleetgen.output.tree import Tree
from fleetgen.render import cluster_objects, plan
from fleetgen.render.rendered import Rendered
from fleetgen.review.changes import fleet_changes
from fleetgen.validation.rendered_objects import Schemas, validate_rendered

Build = Callable[[Path], list[dict[str, Any]]]
Run = Callable[..., subprocess.CompletedProcess[str]]
TEXT = EXAMPLE.read_text(encoding="utf-8")
EXAMPLE_SHARING = TEXT[TEXT.index("    cohorts:\n      - name: training\n") : TEXT.index("  - name: dev-eastus")]
# training-eastus with every sharing field: a cohort tree with its own quota, limits both ways, fungibility,
# borrowWithinCohort, a queue open to any namespace, and Volcano (weights, not reclaimable) on the on-demand pools.
SHARED = (
    replace_once(
        TEXT,
        EXAMPLE_SHARING,
        """    cohorts:
      - name: training
        parent: research
        fairSharingWeight: 3
        lendingLimit: {a100-spot: {gpu: 4}}
      - name: research
        nominalQuota: {a100-spot: {gpu: 2}}
    queues:
      - name: gpu-cluster-queue
        flavors: [a100-spot]
        cohort: training
        lendingLimit: {a100-spot: {gpu: 12}}
        fairSharingWeight: 2
        preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
        flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, preference: BorrowingOverPreemption}
      - name: data-science-queue
        flavors: [a100-spot]
        cohort: training
        nominalQuota: {a100-spot: {gpu: 0}}
        borrowingLimit: {a100-spot: {gpu: 8, cpu: 32}}
      - name: nlp-queue
        flavors: [a100-spot]
        cohort: research
        nominalQuota: {a100-spot: {gpu: 4}}
        preemption: {reclaimWithinCohort: LowerPriority, borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 1000}}
        admits: placed-teams
      - name: open-queue
        flavors: [a100-spot]
        admits: any-namespace
    volcano: {nodePools: [a100-ondemand, h100-ondemand], weights: {nlp: 3}, reclaimable: false}

""",
    )
    .replace(
        "# capacity:\n#   gpuOvercommit: 1.5       # allow team GPU quotas to add up to 1.5x a cluster's GPUs",
        "capacity:  # the open queue owns all of a100-spot beside the others: overcommitted guarantees, the opt-in says so\n  gpuOvercommit: 3.0",
    )
    .replace(
        "      training-eastus: {queue: gpu-cluster-queue}   # the cluster has two queues: say which\n      prod-inference-eastus: {requests: {gpu: 4}}",
        "      training-eastus: {queue: nlp-queue}\n      prod-inference-eastus: {requests: {gpu: 4}}",
    )
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


def _crd_and_cel_problems(fleet: Any, crd_schemas: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """Every problem the upstream CRDs (structural schema and CEL rules) find in what the fleet renders."""
    found = validate_rendered(Rendered(fleet), Schemas(crds=crd_schemas), strict=True)
    return [f.message for f in found if f.severity is not Severity.NOTE]  # the transition-rule note is not a problem


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
    assert _crd_and_cel_problems(fleet, crd_schemas) == []


def test_the_example_shows_every_sharing_object_and_each_passes_its_crd_and_cel_rules(
    tmp_path: Path, kustomize: Build, crd_schemas: dict[tuple[str, str], dict[str, Any]]
) -> None:
    fleet = _load(TEXT)
    Tree(tmp_path).write(files_of(plan(fleet)))
    training = _by_key(kustomize(tmp_path / "clusters" / "training-eastus"))
    kinds = {kind for kind, _, _ in training}
    assert {"Cohort", "ClusterQueue", "Topology", "WorkloadPriorityClass", "Queue"} <= kinds
    # a WorkloadPriorityClass for every PriorityClass, same value, on every cluster
    for cluster in fleet.clusters:
        objects = _by_key(kustomize(tmp_path / "clusters" / cluster.name))
        classes = {name: o["value"] for (kind, _, name), o in objects.items() if kind == "PriorityClass"}
        assert {name: o["value"] for (kind, _, name), o in objects.items() if kind == "WorkloadPriorityClass"} == classes
        assert len(classes) == 3
    # the multi-node spot A100 pool declares its topology: a Kueue Topology, and its flavor names it
    assert training[("Topology", "", "a100-spot")]["spec"]["levels"] == [
        {"nodeLabel": "topology.kubernetes.io/zone"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]
    assert training[("ResourceFlavor", "", "a100-spot")]["spec"]["topologyName"] == "a100-spot"
    queues = {name: o["spec"] for (kind, _, name), o in training.items() if kind == "ClusterQueue"}
    assert {name: q["fairSharing"]["weight"] for name, q in queues.items()} == {"gpu-cluster-queue": 2, "data-science-queue": 1}
    assert {name: q["cohortName"] for name, q in queues.items()} == {"gpu-cluster-queue": "training", "data-science-queue": "training"}
    # Volcano gang-schedules on the on-demand pools: one queue per team on the cluster, nlp weighted 2
    volcano = {name: o["spec"] for (kind, _, name), o in training.items() if kind == "Queue"}
    assert {name: q["weight"] for name, q in volcano.items()} == {"team-data-science": 1, "team-nlp": 2, "team-robotics": 1}
    assert "guarantee" not in volcano["team-robotics"]  # only what volcano.guarantees keeps: 8 GPUs for nlp
    assert volcano["team-nlp"]["guarantee"] == {"resource": {"nvidia.com/gpu": 8}}
    assert volcano["team-robotics"]["capability"] == {"cpu": 64, "memory": "256Gi", "nvidia.com/gpu": 4}
    assert _crd_and_cel_problems(fleet, crd_schemas) == []


def test_cohorts_limits_weights_and_preemption_are_rendered(shared_tree: Path, kustomize: Build) -> None:
    objects = _by_key(kustomize(shared_tree / "clusters" / "training-eastus"))
    training, research = objects[("Cohort", "", "training")]["spec"], objects[("Cohort", "", "research")]["spec"]
    assert training["parentName"] == "research" and training["fairSharing"] == {"weight": 3}
    spot = training["resourceGroups"][0]["flavors"][0]
    assert spot["name"] == "a100-spot"
    assert spot["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 0, "lendingLimit": 4}
    assert research["resourceGroups"][0]["flavors"][0]["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 2}
    shared = objects[("ClusterQueue", "", "gpu-cluster-queue")]["spec"]
    [spot] = shared["resourceGroups"][0]["flavors"]
    assert spot["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 16, "lendingLimit": 12}
    assert shared["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "BorrowingOverPreemption",
    }
    assert shared["fairSharing"] == {"weight": 2}
    borrower = objects[("ClusterQueue", "", "data-science-queue")]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert borrower[0] == {"name": "cpu", "nominalQuota": 0, "borrowingLimit": 32}
    nlp = objects[("ClusterQueue", "", "nlp-queue")]["spec"]
    # 4 of the pool's 16 GPUs bring a quarter of its CPU and memory
    assert nlp["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "cpu", "nominalQuota": 32},
        {"name": "memory", "nominalQuota": "128Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": 4},
    ]
    assert nlp["preemption"]["borrowWithinCohort"] == {"policy": "LowerPriority", "maxPriorityThreshold": 1000}


def test_a_queue_admits_only_the_namespaces_of_its_teams_unless_it_says_any(shared_tree: Path, kustomize: Build) -> None:
    objects = _by_key(kustomize(shared_tree / "clusters" / "training-eastus"))
    selectors = {name: o["spec"]["namespaceSelector"] for (kind, _, name), o in objects.items() if kind == "ClusterQueue"}
    assert selectors == {
        "gpu-cluster-queue": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["robotics"]}]},  # the default
        "data-science-queue": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["data-science"]}]},
        "nlp-queue": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["nlp"]}]},
        "open-queue": {},  # admits: any-namespace
    }
    # the selector matches the label every team namespace carries
    assert objects[("Namespace", "", "team-robotics")]["metadata"]["labels"]["team"] == "robotics"
    assert "team" not in objects[("Namespace", "", "team-robotics")]["metadata"].get("annotations", {})


def test_a_queue_that_admits_only_placed_teams_but_has_none_is_a_warning() -> None:
    text = replace_once(SHARED, "        admits: any-namespace\n", "        admits: placed-teams\n")
    line = line_of(text, "admits: placed-teams", 2)
    assert f"{line}:17: clusters[2].queues[3].admits: no team is placed on this queue: it admits nothing" in findings_of(
        text, Severity.WARNING
    )

    def messages(text: str) -> list[str]:
        return [f.split(": ", 1)[1] for f in findings_of(text, Severity.WARNING)]

    fix = "raise requests.gpu here (borrowed GPUs are not held or charged) or lower the queue's borrowingLimit"
    shared, example = messages(SHARED), messages(TEXT)
    ignored = [m for m in shared if "Kueue ignores borrowWithinCohort under fair sharing" in m]
    assert len(ignored) == 1  # SHARED's borrowWithinCohort beside the example's fair-sharing weights (platform_checks.py)
    assert [m for m in shared if m not in example and m not in ignored] == [  # each team whose queue may admit more than the quotas let run
        "teams[1].clusters.training-eastus: queue nlp-queue on training-eastus may admit 18 GPUs (owns 4, may borrow 14 from "
        f"cohort research), but the namespace quotas of its teams let them run only 8 (nlp 8): 10 GPU(s) it may borrow never run; {fix}",
        "teams[2].clusters.training-eastus: queue gpu-cluster-queue on training-eastus may admit 22 GPUs (owns 16, may borrow 6 "
        f"from cohort training), but the namespace quotas of its teams let them run only 4 (robotics 4): 6 GPU(s) it may borrow never run; {fix}",
    ]
    assert [m for m in shared if m in example] == example  # queues that admit placed teams by default stay quiet


def test_topology_and_workload_priority_classes(shared_tree: Path, kustomize: Build) -> None:
    objects = _by_key(kustomize(shared_tree / "clusters" / "training-eastus"))
    assert "topologyName" not in objects[("ResourceFlavor", "", "h100-ondemand")]["spec"]
    off = _load(replace_once(SHARED, "scheduling:\n", "scheduling:\n  workloadPriorityClasses: false\n"))
    assert not any(m.body["kind"] == "WorkloadPriorityClass" for m in cluster_objects(off, 2))


def test_volcano_queues_and_roles_only_on_the_volcano_cluster(shared_tree: Path, kustomize: Build) -> None:
    objects = _by_key(kustomize(shared_tree / "clusters" / "training-eastus"))
    nlp = objects[("Queue", "", "team-nlp")]["spec"]
    assert nlp == {
        "weight": 3,
        "reclaimable": False,
        "capability": {"cpu": 128, "memory": "512Gi", "nvidia.com/gpu": 8},
    }
    assert objects[("Queue", "", "team-robotics")]["spec"]["weight"] == 1
    rules = objects[("Role", "team-nlp", "gpu-workload-role")]["rules"]
    assert {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get", "list", "watch", "create", "delete"]} in rules
    assert any(r["apiGroups"] == ["scheduling.volcano.sh"] and r["resources"] == ["podgroups"] for r in rules)
    dev = _by_key(kustomize(shared_tree / "clusters" / "dev-eastus"))
    assert not any(kind == "Queue" for kind, _, _ in dev)
    assert all("volcano" not in str(r["apiGroups"]) for r in dev[("Role", "team-nlp", "gpu-workload-role")]["rules"])


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
            "        borrowingLimit: {a100-spot: {gpu: 8, cpu: 32}}\n",
            "        borrowingLimit: {a100-spot: {gpu: 19, cpu: 32}}\n",
            "borrowingLimit: {a100-spot: {gpu: 19",
            43,
            # gpu-cluster-queue lends 12; the parent cohort research holds 2 and nlp-queue's 4
            "borrowingLimit 19 nvidia.com/gpu of a100-spot exceeds the 18 that cohort training can lend",
        ),
        (
            "      - name: research\n",
            "      - name: research\n        parent: training\n",
            "        parent: training",
            17,
            "cohort cycle: research -> training -> research; a cohort tree needs a top",
        ),
        (
            "    volcano: {nodePools: [a100-ondemand, h100-ondemand]",
            "    volcano: {nodePools: [a100-spot, h100-ondemand]",
            "    volcano: {nodePools:",
            15,
            "Volcano and Kueue queue gpu-cluster-queue both hand out the GPUs of a100-spot: "
            "split the node pools (volcano.nodePools, and flavors on each queue)",
        ),
        (
            "    volcano: {nodePools: [a100-ondemand, h100-ondemand],",
            "    volcano: {nodePools: [a100-ondemand], guarantees: {nlp: {gpu: 8}, robotics: {gpu: 4}},",
            "    volcano: {nodePools:",
            43,
            "the teams' Volcano guarantees on training-eastus add up to 12 nvidia.com/gpu (nlp 8, robotics 4), more than "
            "Volcano's node pools hold (8: a100-ondemand 1 x 8): lower the guarantees or give Volcano more pools",
        ),
        (
            "        nominalQuota: {a100-spot: {gpu: 4}}\n",
            "        nominalQuota: {a100-spot: {gpu: 0}}\n        borrowingLimit: {a100-spot: {gpu: 0}}\n",
            "training-eastus: {queue: nlp-queue}",
            32,
            "team nlp's queue nlp-queue on training-eastus cannot reach any GPU: its flavors hold no GPU nominal quota "
            "and it cannot borrow one from a cohort",
        ),
        (
            "        admits: any-namespace\n",
            "        admits: any-namespace\n        borrowingLimit: {a100-spot: {gpu: 2}}\n",
            "borrowingLimit: {a100-spot: {gpu: 2}}",
            43,
            "borrowingLimit needs a cohort to borrow from (set cohort)",
        ),
        (
            "        preemption: {reclaimWithinCohort: LowerPriority, borrowWithinCohort",
            "        preemption: {reclaimWithinCohort: Never, borrowWithinCohort",
            "reclaimWithinCohort: Never, borrowWithinCohort",
            79,
            "borrowWithinCohort needs reclaimWithinCohort other than Never (Kueue refuses the queue otherwise)",
        ),
        (
            "    volcano: {nodePools: [a100-ondemand, h100-ondemand], weights: {nlp: 3}",
            "    volcano: {nodePools: [a100-ondemand, h100-ondemand], weights: {vision: 3}",
            "weights: {vision: 3}",
            76,
            "team 'vision' is not on training-eastus",
        ),
        (
            "weights: {nlp: 3}",
            "weights: {nlp: 70000}",
            "weights: {nlp: 70000}",
            73,
            "weight 70000 is outside Volcano's 1-65535",
        ),
        (
            "volcano: {nodePools: [a100-ondemand, h100-ondemand]",
            "volcano: {nodePools: [a100-ondemand, h100-ondemand, b200-ondemand]",
            "b200-ondemand",
            57,
            "unknown node pool 'b200-ondemand' of training-eastus",
        ),
        (
            "        topology: [topology.kubernetes.io/zone, kubernetes.io/hostname]",
            "        topology: [kubernetes.io/hostname, topology.kubernetes.io/zone]",
            "topology: [kubernetes.io/hostname",
            20,
            "kubernetes.io/hostname must be the last (narrowest) level",
        ),
        (
            "        nominalQuota: {a100-spot: {gpu: 2}}\n",
            "        nominalQuota: {a100-spot: {gpu: 2}, b200-spot: {gpu: 2}}\n",
            "b200-spot: {gpu: 2}",
            45,
            "'b200-spot' is not a node pool of training-eastus (known: a100-spot, a100-ondemand, h100-ondemand)",
        ),
        (
            "        borrowingLimit: {a100-spot: {gpu: 8, cpu: 32}}\n",
            "        borrowingLimit: {a100-spot: {gpu: 8, cpu: 32}, h100-ondemand: {gpu: 1}}\n",
            "h100-ondemand: {gpu: 1}",
            56,
            "'h100-ondemand' is not a flavor of this queue (known: a100-spot)",
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


def test_a_borrowing_limit_change_is_summarised_in_sharing_terms(repo: Path, cli_run: Run) -> None:
    head = replace_once(TEXT, "borrowingLimit: {a100-spot: {gpu: 8}}", "borrowingLimit: {a100-spot: {gpu: 4}}")
    head = replace_once(head, "lendingLimit: {a100-spot: {gpu: 8}}", "lendingLimit: {a100-spot: {gpu: 6}}")
    (repo / "fleet.yaml").write_text(head)
    git(repo, "commit", "-qam", "data-science borrows less")
    done = cli_run("diff", "--base", "HEAD~1", "--head", "HEAD", "--format", "markdown", cwd=repo)
    assert done.returncode == 1, done.stderr
    assert "training-eastus: data-science may borrow up to 4 A100s of a100-spot from the training cohort (was 8)" in done.stdout
    assert "queue gpu-cluster-queue (nlp, robotics) lends at most 6 A100s of a100-spot to the training cohort (was 8)" in done.stdout
    assert (
        "<code>spec.resourceGroups[0].flavors.a100-spot.resources[nvidia.com/gpu].borrowingLimit</code> | <code>8</code> | <code>4</code>"
        in (done.stdout)
    )


def test_volcano_changes_are_summarised() -> None:
    head = replace_once(TEXT, "weights: {nlp: 2}", "weights: {nlp: 3}")
    head = replace_once(
        head, "nodePools: [a100-ondemand, h100-ondemand]", "nodePools: [a100-ondemand, h100-ondemand]\n      reclaimable: false"
    )
    summaries = [c.text for c in fleet_changes(_load(TEXT), _load(head))]
    assert summaries == [
        "cluster training-eastus: Volcano queue of team nlp: weight 2 -> 3",
        "cluster training-eastus: Volcano queues now not reclaimable",
    ]


def test_the_capacity_report_speaks_sharing_terms(tmp_path: Path, cli_run: Run) -> None:
    (tmp_path / "fleet.yaml").write_text(TEXT)
    done = cli_run("report")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "- data-science may borrow up to 8 A100s (a100-spot) from the training cohort on training-eastus" in text
    assert (
        "| training-eastus | gpu-cluster-queue | nlp, robotics | training | 16 A100 (a100-spot) | 0 A100 (a100-spot) | 8 A100 (a100-spot) | 2 |"
        in text
    )
    assert "| training-eastus | data-science-queue | data-science | training | 0 A100 (a100-spot) | 8 A100 (a100-spot) |" in text
    assert "| prod-inference-westeu | gpu-cluster-queue | nlp | — | 4 A100 (a100-reserved), 4 A10G (a10g-reserved) | — | — | — |" in text
    assert (
        "| training-eastus | team-nlp | nlp | 2 | 8 | 8 |" in text and "| training-eastus | team-robotics | robotics | 1 | 0 | 4 |" in text
    )
    data = json.loads(cli_run("report", "--format", "json").stdout)
    jsonschema.validate(data, json.loads((REPO / "schemas" / "output" / "report.schema.json").read_text()))
    [borrower] = [q for q in data["queues"] if q["queue"] == "data-science-queue"]
    assert borrower["flavors"] == [
        {"flavor": "a100-spot", "gpuModel": "A100", "nominalGpus": 0, "mayBorrowGpus": 8, "lendsAtMostGpus": 0, "slices": []}
    ]
    assert borrower["summary"] == ["data-science may borrow up to 8 A100s (a100-spot) from the training cohort on training-eastus"]
    assert {v["team"]: v["guaranteeGpus"] for v in data["volcano"]} == {"data-science": None, "nlp": 8, "robotics": None}
    assert "<h2>Sharing GPUs</h2>" in cli_run("report", "--format", "html").stdout

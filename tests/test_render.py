"""The rendered objects of the example fleet, field by field against the seed, and the tree's rules."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, REPO, replace_once
from ruamel.yaml import YAML

from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.errors import InputError
from fleetgen.model.types import RENDERED_IN_CLUSTER
from fleetgen.output.tree import JOURNAL, LEDGER, Tree, write_new_files
from fleetgen.render import cluster_objects
from fleetgen.workflows.tree_files import render_files


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return render_files(load_fleet(EXAMPLE).fleet)


def docs(files: dict[str, bytes], path: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(files[path]))


def cluster(name: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    fleet = load_fleet(EXAMPLE).fleet
    index = [c.name for c in fleet.clusters].index(name)
    return {m.key: m.body for m in cluster_objects(fleet, index)}


def test_seed_resource_quota_of_data_science(files: dict[str, bytes]) -> None:
    quota, limit_range = docs(files, "base/resource-quotas/data-science/resource-quotas.yaml")
    assert limit_range["kind"] == "LimitRange"  # tests/test_roles.py checks its values
    assert quota["apiVersion"] == "v1" and quota["kind"] == "ResourceQuota"
    assert quota["metadata"]["namespace"] == "team-data-science" and quota["metadata"]["name"] == "gpu-quota"
    assert quota["spec"] == {
        "hard": {
            "requests.cpu": "64",
            "requests.memory": "256Gi",
            "requests.nvidia.com/gpu": "8",
            "limits.cpu": "128",
            "limits.memory": "512Gi",
            "limits.nvidia.com/gpu": "8",
            "pods": "50",
            "services.loadbalancers": "0",  # tenancy.serviceTypes: no LoadBalancer or NodePort Service
            "services.nodeports": "0",
        }
    }


def test_seed_labels_role_binding_and_network_policy(files: dict[str, bytes]) -> None:
    [namespace] = docs(files, "base/namespaces/data-science/namespace.yaml")
    labels = namespace["metadata"]["labels"]
    assert {k: labels[k] for k in ("team", "project", "cost-center")} == {
        "team": "data-science",
        "project": "recommendation-engine",
        "cost-center": "cc-4521",
    }
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    role, binding = docs(files, "base/rbac/data-science/rbac.yaml")
    assert role["kind"] == "Role" and role["metadata"] == {**role["metadata"], "namespace": "team-data-science"}
    assert role["rules"][0] == {  # the seed's first rule with the verbs of daily work (tests/test_roles.py: the rest)
        "apiGroups": [""],
        "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    }
    assert binding["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "5f0c8d2e-3b1a-4c7e-9d2f-6a8b1c3e4d5f"}
    ]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]}
    [policy] = docs(files, "base/network-policies/nlp/network-policy.yaml")
    assert policy["metadata"]["name"] == "deny-other-namespaces"
    assert policy["spec"] == {
        "podSelector": {},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {"podSelector": {}},
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
                ]
            }
        ],
    }


def test_seed_priority_classes(files: dict[str, bytes]) -> None:
    written = docs(files, "base/priority-classes/priority-classes.yaml")
    classes = {d["metadata"]["name"]: d for d in written if d["kind"] == "PriorityClass"}
    # Kueue orders and preempts workloads by a WorkloadPriorityClass of the same name and value
    assert {d["metadata"]["name"]: d["value"] for d in written if d["kind"] == "WorkloadPriorityClass"} == {
        name: c["value"] for name, c in classes.items()
    }
    assert [(c["value"], c["globalDefault"], c["preemptionPolicy"]) for c in classes.values()] == [
        (1000000, False, "PreemptLowerPriority"),
        (100000, False, "PreemptLowerPriority"),
        (1000, True, "Never"),
    ]
    assert list(classes) == ["production-inference", "scheduled-training", "exploratory"]
    assert classes["exploratory"]["description"] == "Interactive notebooks, experiments — can be preempted."


def test_seed_cluster_queue_on_training(files: dict[str, bytes]) -> None:
    queues = {d["metadata"]["name"]: d for d in docs(files, "clusters/training-eastus/cluster.yaml") if d["kind"] == "ClusterQueue"}
    queue = queues["gpu-cluster-queue"]
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    # it admits only the namespaces of the teams placed on it
    assert queue["spec"]["namespaceSelector"] == {"matchExpressions": [{"key": "team", "operator": "In", "values": ["nlp", "robotics"]}]}
    assert queue["spec"]["cohortName"] == "training"
    assert queue["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority"
    assert queue["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [
                {
                    "name": "a100-spot",
                    "resources": [
                        {"name": "cpu", "nominalQuota": 128},
                        {"name": "memory", "nominalQuota": "512Gi"},
                        {"name": "nvidia.com/gpu", "nominalQuota": 16, "lendingLimit": 8},
                    ],
                },
            ],
        }
    ]
    flavors = {d["metadata"]["name"]: d for d in docs(files, "clusters/training-eastus/cluster.yaml") if d["kind"] == "ResourceFlavor"}
    assert set(flavors) == {"a100-spot", "a100-ondemand", "h100-ondemand"}
    assert flavors["a100-spot"]["spec"]["nodeLabels"] == {
        "accelerator": "nvidia-a100",
        "kubernetes.azure.com/scalesetpriority": "spot",
    }
    assert {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in flavors["a100-spot"]["spec"]["tolerations"]


def test_each_cluster_gets_only_its_teams_with_its_values() -> None:
    westeu = cluster("prod-inference-westeu")
    namespaces = sorted(name for kind, _, name in westeu if kind == "Namespace")
    assert namespaces == ["team-nlp"]
    quota = westeu[("ResourceQuota", "team-nlp", "gpu-quota")]["spec"]["hard"]
    assert (quota["requests.nvidia.com/gpu"], quota["requests.cpu"]) == ("4", "64")  # override, then default
    assert westeu[("Namespace", "", "team-nlp")]["metadata"]["labels"]["environment"] == "production"
    training = cluster("training-eastus")
    assert training[("LocalQueue", "team-robotics", "team-robotics-queue")]["spec"] == {"clusterQueue": "gpu-cluster-queue"}
    assert training[("LocalQueue", "team-data-science", "team-data-science-queue")]["spec"] == {"clusterQueue": "data-science-queue"}
    assert training[("LocalQueue", "team-nlp", "team-nlp-queue")]["spec"] == {"clusterQueue": "gpu-cluster-queue"}
    barred = training[("ResourceQuota", "team-robotics", "disallowed-priority-classes")]["spec"]
    assert barred["hard"] == {"pods": "0"}
    assert barred["scopeSelector"]["matchExpressions"] == [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["production-inference"]}
    ]
    assert cluster("dev-eastus")[("Namespace", "", "team-robotics")]["metadata"]["labels"]["environment"] == "dev"


def test_kustomizations_use_labels_and_patches(files: dict[str, bytes]) -> None:
    [overlay] = docs(files, "clusters/prod-inference-eastus/kustomization.yaml")
    assert "commonLabels" not in overlay and "patchesStrategicMerge" not in overlay
    assert overlay["labels"] == [{"pairs": {"environment": "production"}, "includeSelectors": False}]
    assert "teams/nlp" in overlay["resources"]  # each team's namespaced objects and their patches: its own folder
    [team] = docs(files, "clusters/prod-inference-eastus/teams/nlp/kustomization.yaml")
    assert team["labels"] == overlay["labels"] and team["patches"] == [{"path": "patches/team-nlp-resourcequota-gpu-quota.yaml"}]
    assert all(not r.startswith("/") for r in overlay["resources"] + team["resources"])


def test_every_file_has_the_header_and_reads_the_same_in_yaml_1_1_and_1_2(files: dict[str, bytes]) -> None:
    yaml_files = {p: d for p, d in files.items() if p.endswith(".yaml")}
    assert set(files) - set(yaml_files) == {"FLEET.md"}
    assert files["FLEET.md"].startswith(b"<!-- Generated by fleetgen from fleet.yaml. Do not edit. -->\n")
    assert all(data.startswith(b"# Generated by fleetgen from fleet.yaml. Do not edit.\n") for data in yaml_files.values())
    yaml12 = YAML(typ="safe", pure=True)
    for path, data in yaml_files.items():
        assert list(yaml.safe_load_all(data)) == list(yaml12.load_all(data)), path
    assert b"requests.cpu: '32'" in files["base/resource-quotas/robotics/resource-quotas.yaml"]


def test_render_is_byte_identical_across_runs_and_hash_seeds(tmp_path: Path) -> None:
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(
            [sys.executable, "-m", "fleetgen", "render", str(EXAMPLE), "--out", str(out)], check=True, env=env, capture_output=True
        )
        outputs.append({p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert outputs[0] == outputs[1] and len(outputs[0]) > 40


def test_committed_tree_is_a_fresh_render_of_the_example(files: dict[str, bytes]) -> None:
    """The repository's base/ and clusters/ are what `fleetgen render` makes (re-run it after editing fleet.yaml)."""
    tree = Tree(REPO)
    changes, _ = tree.changes(files)
    assert changes.empty, f"stale rendered tree: run `fleetgen render`: {changes}"


def write_example(tmp_path: Path, text: str | None = None) -> Tree:
    fleet = load_fleet_text((text or EXAMPLE.read_text()).encode()).fleet
    tree = Tree(tmp_path)
    tree.write(render_files(fleet))
    return tree


def test_second_render_writes_nothing(tmp_path: Path) -> None:
    tree = write_example(tmp_path)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    changes = tree.write(render_files(load_fleet(EXAMPLE).fleet))
    assert changes.empty
    assert before == {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}


def test_hand_written_file_survives_and_pruned_team_goes(tmp_path: Path) -> None:
    tree = write_example(tmp_path)
    notes = tmp_path / "base" / "rbac" / "NOTES.md"
    notes.write_text("hand written\n")
    extra = tmp_path / "clusters" / "dev-eastus" / "extra.yaml"
    extra.write_text("kind: ConfigMap\n")
    text = EXAMPLE.read_text()
    without_robotics = text[: text.index("  - name: robotics")]
    changes = tree.write(render_files(load_fleet_text(without_robotics.encode()).fleet))
    assert "base/rbac/robotics/rbac.yaml" in changes.removed
    assert all("robotics" in path for path in changes.removed)
    assert notes.read_text() == "hand written\n" and extra.exists()
    assert not list(tmp_path.rglob("*robotics*"))  # files and their emptied folders are gone
    assert "robotics" not in (tmp_path / LEDGER).read_text()
    assert (tmp_path / "base" / "rbac" / "nlp" / "rbac.yaml").exists()


def test_render_refuses_to_overwrite_a_file_it_does_not_own(tmp_path: Path) -> None:
    mine = tmp_path / "base" / "priority-classes" / "priority-classes.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("# my own\n")
    with pytest.raises(InputError, match="was not generated by fleetgen"):
        write_example(tmp_path)
    assert mine.read_text() == "# my own\n" and not (tmp_path / LEDGER).exists()


@pytest.mark.parametrize("path", ["notes/mine.md", "base/priority-classes/priority-classes.yaml"], ids=["dropped", "rendered"])
def test_a_ledger_entry_alone_does_not_make_a_file_fleetgens(tmp_path: Path, path: str) -> None:
    """The ledger is committed, so a pull request can list any file in it: fleetgen removes or
    overwrites only a file with its header or with the bytes the ledger recorded."""
    write_example(tmp_path)
    mine = tmp_path / path
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("# my own\n")
    ledger = (tmp_path / LEDGER).read_text()
    (tmp_path / LEDGER).write_text(ledger + f"{'0' * 64}  {path}\n" if path not in ledger else ledger)
    with pytest.raises(InputError, match=f"^{re.escape(str(mine))}: exists and was not generated by fleetgen"):
        write_example(tmp_path)
    assert mine.read_text() == "# my own\n"

    # With the bytes the ledger recorded, a file is fleetgen's even without its header.
    entries = [line for line in (tmp_path / LEDGER).read_text().splitlines() if not line.endswith(f"  {path}")]
    (tmp_path / LEDGER).write_text("\n".join([*entries, f"{hashlib.sha256(mine.read_bytes()).hexdigest()}  {path}"]) + "\n")
    write_example(tmp_path)
    assert not mine.exists() if path.startswith("notes/") else mine.read_text().startswith("# Generated by fleetgen")


def test_only_a_staging_folder_fleetgen_could_have_left_is_removed(tmp_path: Path) -> None:
    left = tmp_path / ".fleetgen-staging-ab12"  # as a render killed before its commit point leaves it
    (left / "0").mkdir(parents=True)
    (left / "0" / "7").write_bytes(b"staged")
    (left / "8").write_bytes(b"staged")
    kept = tmp_path / ".fleetgen-staging-notes"
    kept.mkdir()
    (kept / "todo.txt").write_text("mine\n")
    write_example(tmp_path)
    assert not left.exists() and (kept / "todo.txt").read_text() == "mine\n"


@pytest.mark.parametrize("entry", ["/etc/passwd", "../outside.yaml", "base/../../outside.yaml", "base/./x.yaml"])
def test_ledger_entries_that_leave_the_tree_are_refused(tmp_path: Path, entry: str) -> None:
    (tmp_path / LEDGER).write_text(f"{'0' * 64}  {entry}\n")
    with pytest.raises(InputError, match="refusing path"):
        write_example(tmp_path)


def test_ledger_entry_through_a_symlink_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "x").mkdir(parents=True)
    (outside / "x" / "victim.yaml").write_text("keep me\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "base").symlink_to(outside)
    (repo / LEDGER).write_text(f"{'0' * 64}  base/x/victim.yaml\n")
    with pytest.raises(InputError, match="symbolic link"):
        write_example(repo)
    assert (outside / "x" / "victim.yaml").read_text() == "keep me\n"


def test_invalid_fleet_leaves_the_tree_untouched(tmp_path: Path, cli_run: Any) -> None:
    out = tmp_path / "tree"
    write_example(out)
    snapshot = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    broken = tmp_path / "fleet.yaml"
    broken.write_text(replace_once(EXAMPLE.read_text(), "cpu: 32, memory: 128Gi, gpu: 4}", "cpu: 32, memory: 128Gi, gpu: many}"))
    done = cli_run("render", str(broken), "--out", str(out))
    assert done.returncode == 1 and "Input should be a valid integer" in done.stderr
    assert snapshot == {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}


@pytest.mark.parametrize("first", [False, True], ids=["one-change", "whole-tree"])
def test_interrupted_render_is_finished_by_the_next_command(tmp_path: Path, first: bool) -> None:
    """A render killed after its commit point: the journal rolls the tree forward, never half-way.

    A whole tree is staged by several threads, each in a folder of its own; one change by one."""
    text = replace_once(EXAMPLE.read_text(), "requests: {cpu: 32, memory: 128Gi, gpu: 4}", "requests: {cpu: 32, memory: 128Gi, gpu: 3}")
    new_files = render_files(load_fleet_text(text.encode()).fleet)
    if not first:
        write_example(tmp_path)

    class KilledAfterCommit(Tree):
        def recover(self) -> None:  # the process dies before replaying its journal
            if (self.root / JOURNAL).exists():
                raise SystemExit("killed")
            super().recover()

    with pytest.raises(SystemExit):
        KilledAfterCommit(tmp_path).write(new_files)
    assert (tmp_path / JOURNAL).exists()
    journal = json.loads((tmp_path / JOURNAL).read_text())
    staged_in = {staged.partition("/")[0] for staged, _ in journal["moves"]}
    assert len(staged_in) > 1 if first and (os.cpu_count() or 1) > 1 else len(staged_in) == 1
    staged_name, moved = journal["moves"][0]  # a replay that died after its first move
    (tmp_path / moved).parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp_path / journal["staging"] / staged_name, tmp_path / moved)
    Tree(tmp_path).recover()
    assert not (tmp_path / JOURNAL).exists() and not list(tmp_path.glob(".fleetgen-staging-*"))
    assert Tree(tmp_path).changes(new_files)[0].empty


@pytest.mark.parametrize(
    ("journal", "why"),
    [
        ({"moves": []}, "it must name staging, moves and removes"),
        ({"staging": ".fleetgen-staging-ab", "moves": 7, "removes": []}, "it must name staging, moves and removes"),
        ({"staging": "../outside", "moves": [], "removes": []}, "'../outside' is not a staging folder's name"),
        ({"staging": ".fleetgen-staging-ab", "moves": [["../../outside/secret", "x.yaml"]], "removes": []}, "is not a move"),
        ({"staging": ".fleetgen-staging-ab", "moves": [["0"]], "removes": []}, "is not a move"),
        ({"staging": ".fleetgen-staging-ab", "moves": [["0/1", "../x.yaml"]], "removes": []}, "refusing path '../x.yaml'"),
        ({"staging": ".fleetgen-staging-ab", "moves": [], "removes": ["/etc/hostname"]}, "refusing path '/etc/hostname'"),
        ({"staging": ".fleetgen-staging-ab", "moves": [["0/1", "x.yaml"]], "removes": []}, "is a symbolic link"),
    ],
)
def test_a_journal_fleetgen_did_not_write_moves_and_removes_nothing(tmp_path: Path, journal: dict[str, Any], why: str) -> None:
    """The journal lies in the output folder, which a pull request can fill: a forged one must not
    move a file in from outside the tree, through a link or not, nor remove one."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (outside / "0").mkdir(parents=True)
    (outside / "secret").write_text("mine\n")
    (outside / "0" / "1").write_text("mine too\n")
    tree.mkdir()
    (tree / ".fleetgen-staging-ab").symlink_to(outside)  # used by the last case only: a linked staging folder
    (tree / JOURNAL).write_text(json.dumps(journal))
    with pytest.raises(InputError) as refused:
        Tree(tree).recover()
    assert str(refused.value).startswith(f"{tree / JOURNAL}: ") and why in str(refused.value)
    assert (outside / "secret").read_text() == "mine\n" and (outside / "0" / "1").read_text() == "mine too\n"
    assert sorted(p.name for p in tree.iterdir()) == sorted([".fleetgen-staging-ab", JOURNAL])


WESTEU_POOLS = "nodePools: [*a100-reserved, *a10g-reserved]   # YAML anchors: same pools as East US\n"


def _with_extra(path: str) -> str:
    return replace_once(EXAMPLE.read_text(), WESTEU_POOLS, f"{WESTEU_POOLS}    extraResources: [{path}]\n")


def test_extra_resources_are_listed_built_and_never_owned(tmp_path: Path, cli_run: Any, kustomize: Any) -> None:
    (tmp_path / "fleet.yaml").write_text(_with_extra("hand-written/limits.yaml"))
    missing = cli_run("render", "fleet.yaml")
    assert missing.returncode == 1 and not (tmp_path / LEDGER).exists()
    line = _with_extra("hand-written/limits.yaml").splitlines().index("    extraResources: [hand-written/limits.yaml]") + 1
    assert missing.stderr.startswith(
        f"fleet.yaml:{line}:22: clusters[1].extraResources[0]: hand-written/limits.yaml: no such file or folder in clusters/prod-inference-westeu"
    )
    refused = cli_run("check", "fleet.yaml")
    assert refused.returncode == 1 and "extraResources[0]: hand-written/limits.yaml: no such file or folder" in refused.stderr
    mine = tmp_path / "clusters/prod-inference-westeu/hand-written/limits.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text(
        "# mine\napiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: team-nlp}\nspec: {limits: [{type: Container}]}\n"
    )
    assert cli_run("render", "fleet.yaml").returncode == 0
    overlay = yaml.safe_load((tmp_path / "clusters/prod-inference-westeu/kustomization.yaml").read_text())
    assert overlay["resources"][-1] == "hand-written/limits.yaml"
    assert "hand-written" not in (tmp_path / LEDGER).read_text()
    built = {(o["kind"], o["metadata"]["name"]): o for o in kustomize(tmp_path / "clusters/prod-inference-westeu")}
    assert built[("LimitRange", "defaults")]["metadata"]["labels"] == {"environment": "production"}
    assert cli_run("check", "fleet.yaml").returncode == 0
    (tmp_path / "fleet.yaml").write_text(EXAMPLE.read_text())  # dropped from fleet.yaml: still never removed
    assert cli_run("render", "fleet.yaml").returncode == 0 and cli_run("check", "fleet.yaml").returncode == 0
    assert mine.read_text().startswith("# mine\n")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../x.yaml", "is not a path inside the cluster's folder"),
        ("/etc/passwd", "is not a path inside the cluster's folder"),
        ("a//b.yaml", "is not a path inside the cluster's folder"),
        ("a/./b.yaml", "is not a path inside the cluster's folder"),
        ("cluster.yaml", "cluster.yaml is render's; keep hand-written files elsewhere, e.g. hand-written/"),
        ("patches/x.yaml", "patches is render's"),
    ],
)
def test_extra_resources_outside_the_cluster_folder_or_render_s_are_refused(tmp_path: Path, cli_run: Any, path: str, message: str) -> None:
    (tmp_path / "fleet.yaml").write_text(_with_extra(path))
    done = cli_run("validate", "fleet.yaml")
    assert done.returncode == 1
    [error] = [line for line in done.stderr.splitlines() if "extraResources" in line]
    assert error.startswith("fleet.yaml:") and "clusters[1].extraResources[0]:" in error and message in error


def test_render_s_names_in_a_cluster_folder_are_the_ones_extra_resources_may_not_use(files: dict[str, bytes]) -> None:
    assert {p.split("/")[2] for p in files if p.startswith("clusters/")} <= set(RENDERED_IN_CLUSTER)
    assert {"flux-system", "argocd", "patches", "teams"} <= set(RENDERED_IN_CLUSTER)


def test_kept_files_are_written_only_where_nothing_else_stands_and_never_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = tmp_path / "repo"
    (repo / "clusters/a").mkdir(parents=True)
    (repo / "clusters/a/hand-written").symlink_to(outside)
    files = {"clusters/b/hand-written/x.yaml": b"kind: X\n", "clusters/a/hand-written/y.yaml": b"kind: Y\n"}
    with pytest.raises(InputError, match="refusing to write through a symbolic link"):
        write_new_files(repo, files)
    assert not list(outside.iterdir()) and not (repo / "clusters/b").exists()  # nothing written
    del files["clusters/a/hand-written/y.yaml"]
    write_new_files(repo, files)
    write_new_files(repo, files)  # the same bytes again: fine
    assert (repo / "clusters/b/hand-written/x.yaml").read_bytes() == b"kind: X\n"

"""The pull-request workflow and day one: workflows, action, pre-commit, init, team onboarding, docs."""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import yaml
from conftest import EXAMPLE, REPO, on_terminal

from fleetgen.authoring.scaffold import WORKFLOW_PATH, workflow_text
from fleetgen.checks.load import load_fleet
from fleetgen.cli import cli
from fleetgen.model.reference_doc import reference_markdown
from fleetgen.output.generated_paths import REFERENCE_PATH

Run = Callable[..., CompletedProcess[str]]
CHECKER = str(Path(sys.executable).parent / "check-jsonschema")


def schema_check(schema: str, *files: Path) -> CompletedProcess[str]:
    return subprocess.run([CHECKER, "--builtin-schema", schema, *map(str, files)], capture_output=True, text=True, check=False)


def test_workflows_and_action_pass_githubs_schemas(tmp_path: Path) -> None:
    workflows = sorted((REPO / ".github" / "workflows").glob("*.yml"))
    assert {p.name for p in workflows} == {"explore.yml", "fleetgen.yml", "tests.yml"}
    done = schema_check("vendor.github-workflows", *workflows)
    assert done.returncode == 0, done.stdout + done.stderr
    action = schema_check("vendor.github-actions", REPO / "action.yml")
    assert action.returncode == 0, action.stdout + action.stderr
    broken = yaml.safe_load((REPO / WORKFLOW_PATH).read_text())
    broken["jobs"]["fleet"]["steps"] = "not a list"
    (tmp_path / "broken.yml").write_text(yaml.safe_dump(broken))
    assert schema_check("vendor.github-workflows", tmp_path / "broken.yml").returncode == 1  # the check can fail


def test_this_repositorys_workflow_is_the_one_init_writes() -> None:
    """Regenerate with: python -c "from fleetgen.authoring.scaffold import workflow_text; open('.github/workflows/fleetgen.yml','wb').write(workflow_text('.'))" """
    assert (REPO / WORKFLOW_PATH).read_bytes() == workflow_text(".")
    steps = yaml.safe_load(workflow_text("fleetgen==0.1.0"))["jobs"]["fleet"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "fleetgen validate --format github" in runs and "fleetgen check" in runs
    assert "--format github --markdown-file fleetgen-diff.md" in runs  # one diff: the gate's annotations and the comment
    comment = next(s for s in steps if s.get("name") == "Comment on the pull request")
    assert "<!-- fleetgen-diff -->" in comment["with"]["script"]  # one comment, updated in place
    # after the comment, the job fails while the diff refuses a change (the gate step's `refused` output)
    assert steps[-1]["if"] == "steps.gate.outputs.refused == 'true'" and steps[-1]["run"].rstrip().endswith("exit 1")


def test_pre_commit_hooks_run_validate_and_check() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"]: h["entry"] for h in hooks} == {"fleetgen-validate": "fleetgen validate", "fleetgen-check": "fleetgen check"}
    assert all(h["language"] == "python" and h["pass_filenames"] is False for h in hooks)


def test_init_then_team_add_then_validate_and_check(tmp_path: Path, cli_run: Run, fleetgen_repository: tuple[Path, str]) -> None:
    fleet_repo = tmp_path / "fleet"
    source = f"file://localhost{fleetgen_repository[0]}@v0.1.0"
    created = cli_run(
        "init", str(fleet_repo), "--name", "acme", "--repository", "https://example.com/acme/fleet.git", "--fleetgen-source", source,
        "--allow-local-source", "--no-git",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    for path in (
        "fleet.yaml",
        WORKFLOW_PATH,
        ".github/CODEOWNERS",
        ".pre-commit-config.yaml",
        "README.md",
        "schemas/fleet.schema.json",
        "FLEET.md",
        "clusters/dev/kustomization.yaml",
    ):
        assert (fleet_repo / path).exists(), path
    assert schema_check("vendor.github-workflows", fleet_repo / WORKFLOW_PATH).returncode == 0
    assert "name: acme" in (fleet_repo / "fleet.yaml").read_text()
    added = cli_run(
        "team",
        "add",
        "vision",
        "--group",
        "2b5e0c3a-1111-4222-8333-944455556666",
        "--cost-center",
        "cc-6100",
        "--cluster",
        "dev",
        "--gpu",
        "2",
        cwd=fleet_repo,
    )
    assert added.returncode == 0, added.stderr
    assert cli_run("validate", cwd=fleet_repo).returncode == 0
    assert cli_run("check", cwd=fleet_repo).returncode == 0
    assert (fleet_repo / "base" / "namespaces" / "vision" / "namespace.yaml").exists()
    again = cli_run("init", str(fleet_repo), "--fleetgen-source", source, "--allow-local-source")
    assert again.returncode == 2 and "refusing to overwrite" in again.stderr


def test_team_add_keeps_comments_and_layout_and_remove_undoes_it(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    before = EXAMPLE.read_text()
    done = cli_run(
        "team",
        "add",
        "vision",
        "--group",
        "g-vision",
        "--cost-center",
        "cc-6100",
        "--cluster",
        "dev-eastus",
        "--cluster",
        "training-eastus",
        "--gpu",
        "2",
        "--cpu",
        "16",
        "--memory",
        "64Gi",
        "--queue",
        "training-eastus=gpu-cluster-queue",  # the cluster has two queues: the team names its own
    )
    assert done.returncode == 0, done.stderr
    after = (tmp_path / "fleet.yaml").read_text()
    added = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line.startswith("+") and not line.startswith("+++")
    ]
    assert sorted(added) == sorted(
        [
            "+",
            "+  - name: vision",
            "+    group: g-vision",
            "+    costCenter: cc-6100",
            "+    project: vision",
            "+    quota:",
            "+      requests: {gpu: 2, cpu: '16', memory: 64Gi}",
            "+    clusters:",
            "+      dev-eastus: {}",
            "+      training-eastus: {queue: gpu-cluster-queue}",
        ]
    )
    assert not [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line.startswith("-") and not line.startswith("---")
    ]
    assert cli_run("check").returncode == 0
    assert cli_run("team", "remove", "vision").returncode == 0
    assert (tmp_path / "fleet.yaml").read_text() == before


def test_team_add_gives_the_team_its_registries_storage_and_volumes(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    asked = ["team", "add", "vision", "--group", "g-vision", "--cost-center", "cc-6100", "--cluster", "dev-eastus", "--gpu", "1"]
    asked += ["--queue", "dev-eastus=gpu-cluster-queue", "--registry", "ghcr.io/contoso-vision", "--registry", "docker.io/library"]
    asked += ["--storage", "azurefile-csi-premium=1Ti", "--volume", "dev-eastus:data=200Gi"]
    asked += ["--volume", "dev-eastus:checkpoints=500Gi,storageClass=azurefile-csi-premium,accessMode=ReadWriteMany,mountPath=/ckpt"]
    done = cli_run(*asked)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "fleet.yaml").read_text()
    assert "    registries: [ghcr.io/contoso-vision, docker.io/library]\n" in text
    assert "      storage: {azurefile-csi-premium: 1Ti}\n" in text
    assert (
        "      dev-eastus: {queue: gpu-cluster-queue, volumes: [{name: data, size: 200Gi}, {name: checkpoints, size: 500Gi, "
        "storageClass: azurefile-csi-premium, accessMode: ReadWriteMany, mountPath: /ckpt}]}\n"
    ) in text
    team = next(t for t in load_fleet(tmp_path / "fleet.yaml").fleet.teams if t.name == "vision")
    assert [v.name for v in team.volumes_on("dev-eastus")] == ["data", "checkpoints"] and team.volumes_on("dev-eastus")[
        1
    ].mount_at == "/ckpt"
    documents = [d for f in tmp_path.rglob("*.yaml") if "schemas" not in f.parts for d in yaml.safe_load_all(f.read_text()) if d]
    claims = {
        d["metadata"]["name"]
        for d in documents
        if d.get("kind") == "PersistentVolumeClaim" and d["metadata"].get("namespace") == "team-vision"
    }
    assert claims == {"data", "checkpoints"}
    assert cli_run("check").returncode == 0


@pytest.mark.parametrize(
    ("volume", "why"),
    [
        ("data=200Gi", "CLUSTER:NAME=SIZE"),
        ("training-eastus:data=200Gi", "for a cluster given with --cluster"),
        ("dev-eastus:data", "CLUSTER:NAME=SIZE"),
        ("dev-eastus:data=200Gi,colour=red", "unknown field 'colour'"),
    ],
)
def test_team_add_refuses_a_volume_it_cannot_read(tmp_path: Path, cli_run: Run, volume: str, why: str) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    done = cli_run(
        "team", "add", "vision", "--group", "g", "--cost-center", "cc-1", "--cluster", "dev-eastus", "--gpu", "1", "--volume", volume
    )
    assert done.returncode == 2 and why in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert (tmp_path / "fleet.yaml").read_text() == EXAMPLE.read_text()


def test_team_add_is_refused_like_validate_refuses(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    done = cli_run("team", "add", "greedy", "--group", "g", "--cost-center", "cc-1", "--cluster", "prod-inference-westeu", "--gpu", "8")
    assert done.returncode == 1
    assert "teams[3].clusters.prod-inference-westeu: GPU quotas on prod-inference-westeu add up to 12" in done.stderr
    assert (tmp_path / "fleet.yaml").read_text() == EXAMPLE.read_text()
    assert cli_run("team", "add", "nlp", "--group", "g", "--cost-center", "cc-1", "--cluster", "dev-eastus", "--gpu", "1").returncode == 2
    assert cli_run("team", "remove", "nobody").returncode == 2


def test_reference_docs_are_fresh() -> None:
    """Regenerate with `fleetgen docs`."""
    assert (REPO / REFERENCE_PATH).read_text() == reference_markdown()
    text = reference_markdown()
    assert "| `maxNodes` | integer | yes |" in text and "## VersionSet" in text


def test_every_command_shows_an_example_and_completion_is_documented() -> None:
    def commands(group: object, prefix: str = "") -> list[tuple[str, object]]:
        out = []
        for name, command in getattr(group, "commands", {}).items():
            out.append((f"{prefix}{name}", command))
            out += commands(command, f"{prefix}{name} ")
        return out

    for name, command in commands(cli):
        if not getattr(command, "commands", None):  # leaf commands run something
            assert "Example: fleetgen " in (getattr(command, "epilog", "") or ""), name
    readme = (REPO / "README.md").read_text()
    assert "_FLEETGEN_COMPLETE=bash_source fleetgen" in readme


def test_progress_shows_on_a_terminal_and_not_in_a_pipe(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    piped = cli_run("render")
    assert "rendering (" not in piped.stderr
    terminal = {k: v for k, v in os.environ.items() if k != "CI"} | {"XDG_CACHE_HOME": str(tmp_path / "terminal-cache")}
    _, output = on_terminal(["render"], tmp_path, terminal)
    assert b"checking what 4 cluster(s) get (" in output and b"writing " in output
    _, output = on_terminal(["render"], tmp_path, terminal)  # the same text again: written from the files the first run kept
    assert b"checking what" not in output and b"writing 92 files (" in output


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_scripts_are_produced(shell: str) -> None:
    exe = str(Path(sys.executable).parent / "fleetgen")
    done = subprocess.run([exe], env={**os.environ, "_FLEETGEN_COMPLETE": f"{shell}_source"}, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "fleetgen" in done.stdout and len(done.stdout) > 200

"""Every command's `--help` example runs, as printed, on the shipped fleet.

The examples are read from the commands themselves (click's epilog), so an example changed or added
is tested without touching this file. They run in one fleet repository made from the shipped
fleet.yaml (rendered and committed, `origin/main` pointing at it), beside the files they name: a live
dump for drift, a nodes dump for upgrade verify, the upstream CRDs for `--crd crds/`, and a hand-written fleet repository to import.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import yaml
from conftest import EXAMPLE, REPO, UPSTREAM_CRDS, git
from node_dumps import evidence_of

from fleetgen.checks.load import load_fleet
from fleetgen.cli import cli
from fleetgen.render.rendered import Rendered

# Examples that end in a finding on the shipped fleet, on purpose, and why; every other example exits 0.
FINDINGS = {
    "import": "the repository it imports (tests/import_repo) keeps a LimitRange on purpose, which fleet.yaml cannot hold",
}
# The order they run in: later examples build on earlier ones (team remove removes the team team add made).
ORDER = ["render", "validate", "check", "migrate", "explain", "report", "diff", "drift", "job new", "upgrade plan", "upgrade apply"]
ORDER += [
    "upgrade verify",
    "upgrade status",
    "schema",
    "docs",
    "init",
    "doctor",
    "import",
    "team add",
    "team remove",
    "team devcontainer",
    "forecast",
    "",
]


def examples() -> dict[str, str]:
    """Command path ("" for the top) -> the example its --help prints."""
    found: dict[str, str] = {}

    def walk(command: click.Command, path: str) -> None:
        match = re.search(r"Example: (fleetgen .*?)(?:\n\n|$)", command.epilog or "", re.S)
        group = isinstance(command, click.Group)
        assert match or (group and path), f"`fleetgen {path} --help` shows no example"
        if match:
            found[path] = match.group(1).split("   (")[0].strip()  # drift's example ends with a note on live.yaml
        if group:
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}".strip())

    walk(cli, "")
    return found


def sandbox(tmp_path: Path) -> Path:
    """The fleet repository the examples run in, and the files beside it that they name."""
    repo = tmp_path / "fleet"
    repo.mkdir()
    shutil.copy(EXAMPLE, repo / "fleet.yaml")
    for name in ("base", "clusters", "FLEET.md", ".fleetgen-ledger"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, repo / name)
    shutil.copytree(UPSTREAM_CRDS, repo / "crds")
    fleet = load_fleet(EXAMPLE).fleet
    index = [c.name for c in fleet.clusters].index("dev-eastus")
    live = list(Rendered(fleet).keyed(index).values())  # the whole cluster with its entry point and platform, as it runs: no drift
    (repo / "live.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": live}), encoding="utf-8")
    # upgrade verify's nodes dump: dev-eastus once wave 1 of the apply example is on its nodes and synced
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    shutil.copy(EXAMPLE, scratch / "fleet.yaml")
    apply = [str(Path(sys.executable).parent / "fleetgen"), "upgrade", "apply", "--wave", "1", "--set", "driver=560.35.03", "--no-render"]
    subprocess.run(apply, cwd=scratch, check=True, capture_output=True)
    nodes = evidence_of(load_fleet(scratch / "fleet.yaml").fleet, "dev-eastus")
    (repo / "dev-nodes.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}), encoding="utf-8")
    sys.path.insert(0, str(REPO / "benchmarks"))
    from synth_history import answer_text, gpus_in_use

    # forecast's history: the A100 spot pool of training-eastus, half full and growing slowly (nothing inside the lead time)
    pool = {"cluster": "training-eastus", "flavor": "a100-spot", "resource": "nvidia.com/gpu"}
    (repo / "gpu-history.json").write_text(answer_text([(pool, gpus_in_use(90 * 24, 8, 0.1, weekly=2))]), encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "fleet.yaml", "base", "clusters", "FLEET.md", ".fleetgen-ledger")
    git(repo, "commit", "-qm", "fleet")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    shutil.copytree(REPO / "tests" / "import_repo", tmp_path / "fleet-config")  # `import ../fleet-config`
    return repo


def test_every_commands_help_example_runs_on_the_shipped_fleet(tmp_path: Path, fleetgen_repository: tuple[Path, str]) -> None:
    shown = examples()
    assert sorted(shown) == sorted(ORDER), "a command was added or removed: give its example a place in ORDER"
    repo = sandbox(tmp_path)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    for path in ORDER:
        cwd = repo
        if path == "import":  # it writes fleet.yaml: a folder of its own, beside the repository it imports
            cwd = tmp_path / "adopt"
            cwd.mkdir()
        command = shown[path]
        if path == "init":  # the fleetgen under test runs from a folder: init pins it to a git source, here a local mirror
            command += f" --fleetgen-source file://localhost{fleetgen_repository[0]}@v0.1.0 --allow-local-source --no-git"
        done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, check=False)
        expected = 1 if path in FINDINGS else 0
        assert done.returncode == expected, f"`{shown[path]}` exited {done.returncode}:\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr

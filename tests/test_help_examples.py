"""Every command's `--help` example runs, as printed, on the shipped fleet.

The examples are read from the commands themselves (click's epilog), so an example changed or added
is tested without touching this file. They run in one fleet repository made from the shipped
fleet.yaml (rendered and committed, `origin/main` pointing at it), beside the files they name: a live
dump for drift, a nodes dump for upgrade verify, the upstream CRDs for `--crd crds/`, and a hand-written fleet repository to import.
Each runs in this process, as bash would run the line (`&&`, `||` and `> file` included): starting the
console script costs more than most of these commands, and its start-up is tested on its own.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import yaml
from conftest import EXAMPLE, REPO, UPSTREAM_CRDS, git, run_cli
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
    applied = run_cli("upgrade", "apply", "--wave", "1", "--set", "driver=560.35.03", "--no-render", cwd=scratch)
    assert applied.returncode == 0, applied.stderr
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


def run_line(line: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run an example as bash runs the line: `fleetgen` commands joined by `&&` and `||` (left to right, each
    run or skipped by the exit code so far), each maybe with `> file`. (The line's exit code, what it wrote to stderr.)"""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    commands: list[tuple[str, list[str]]] = [("", [])]  # (the operator before it, its words)
    for token in tokens:
        if token in ("&&", "||"):
            commands.append((token, []))
        else:
            commands[-1][1].append(token)
    code, stderr = 0, ""
    for operator, words in commands:
        if (operator == "&&" and code != 0) or (operator == "||" and code == 0):
            continue
        target = None
        if len(words) > 2 and words[-2] == ">":
            words, target = words[:-2], words[-1]
        unknown = [w for w in words if w and set(w) <= set("();<>|&")]
        assert words[:1] == ["fleetgen"] and not unknown, f"`{line}`: shell syntax this test does not run in process"
        done = run_cli(*words[1:], cwd=cwd, env=env)
        if target is not None:
            (cwd / target).write_text(done.stdout, encoding="utf-8")
        code, stderr = done.returncode, stderr + done.stderr
    return code, stderr


def test_an_example_line_runs_as_bash_runs_it(tmp_path: Path) -> None:
    """The runner's `&&`, `||` and `>`, against bash on the same lines (version prints, an unknown option is exit 2)."""
    env = {"PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    for line in (
        "fleetgen --version > v.txt",
        "fleetgen --nope || fleetgen --version > w.txt",
        "fleetgen --nope && fleetgen --version > x.txt",
    ):
        code, _ = run_line(line, tmp_path, env)
        by_bash = subprocess.run(["bash", "-c", line.replace(".txt", ".bash")], cwd=tmp_path, env={**os.environ, **env}, check=False)
        assert code == by_bash.returncode, line
    for name in ("v", "w", "x"):
        made, by_bash = tmp_path / f"{name}.txt", tmp_path / f"{name}.bash"
        assert made.exists() == by_bash.exists(), name
        assert not made.exists() or made.read_text() == by_bash.read_text(), name


def test_every_commands_help_example_runs_on_the_shipped_fleet(tmp_path: Path, fleetgen_repository: tuple[Path, str]) -> None:
    shown = examples()
    assert sorted(shown) == sorted(ORDER), "a command was added or removed: give its example a place in ORDER"
    repo = sandbox(tmp_path)
    env = {"PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    for path in ORDER:
        cwd = repo
        if path == "import":  # it writes fleet.yaml: a folder of its own, beside the repository it imports
            cwd = tmp_path / "adopt"
            cwd.mkdir()
        command = shown[path]
        if path == "init":  # the fleetgen under test runs from a folder: init pins it to a git source, here a local mirror
            command += f" --fleetgen-source file://localhost{fleetgen_repository[0]}@v0.1.0 --allow-local-source --no-git"
        code, stderr = run_line(command, cwd, env)
        expected = 1 if path in FINDINGS else 0
        assert code == expected, f"`{shown[path]}` exited {code}:\n{stderr[-2000:]}"
        assert "Traceback" not in stderr

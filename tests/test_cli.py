"""The installed `fleetgen` command: exit codes, output formats, one-line errors."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

from conftest import EXAMPLE, line_of, replace_once

from fleetgen.load import load_fleet
from fleetgen.rendered import render_files

Run = Callable[..., CompletedProcess[str]]


def broken_fleet(tmp_path: Path) -> Path:
    text = replace_once(EXAMPLE.read_text(), "environment: dev", "environment: develop")
    text = replace_once(
        text,
        "versionSet: prod-2024q4\n    drPartner: prod-inference-westeu",
        "versionSet: prod-2024q4\n    drPartner: prod-inference-westeu\n    colour: red",
    )
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return path


def test_validate_the_example_exits_0(cli_run: Run) -> None:
    done = cli_run("validate", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    assert "valid (4 clusters, 3 teams; 0 error(s), 8 warning(s))" in done.stdout
    assert "warning: versionSets.dev-2024q4.driver: driver 550.90.07 runs CUDA 12.6 only through minor-version" in done.stderr


def test_validate_reports_every_error_as_file_line_column_path(tmp_path: Path, cli_run: Run) -> None:
    fleet = broken_fleet(tmp_path)
    done = cli_run("validate", "fleet.yaml", cwd=tmp_path)
    text = fleet.read_text()
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"fleet.yaml:{line_of(text, 'colour: red')}:5: clusters[0].colour: unknown field; did you mean 'cohorts'?",
        f"fleet.yaml:{line_of(text, 'environment: develop')}:18: clusters[3].environment: "
        "Input should be 'dev', 'staging' or 'production', got 'develop'",
        "2 error(s), 0 warning(s)",
    ]
    assert "Traceback" not in done.stderr + done.stdout


def test_validate_json_and_github_formats(tmp_path: Path, cli_run: Run) -> None:
    broken_fleet(tmp_path)
    as_json = cli_run("validate", "--format", "json", cwd=tmp_path)
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["version"] == 1
    assert [(f["path"], f["severity"], f["column"]) for f in report["findings"]] == [
        ("clusters[0].colour", "error", 5),
        ("clusters[3].environment", "error", 18),
    ]
    github = cli_run("validate", "--format", "github", cwd=tmp_path)
    first = github.stdout.splitlines()[0]
    assert first.startswith("::error file=fleet.yaml,line=") and ",col=5,title=clusters[0].colour::" in first


def test_usage_and_io_trouble_exit_2(tmp_path: Path, cli_run: Run) -> None:
    missing = cli_run("validate", "nope.yaml")
    assert missing.returncode == 2 and missing.stderr.strip() == "fleetgen: nope.yaml: no such file"
    assert cli_run("validate", "--format", "xml", str(EXAMPLE)).returncode == 2
    assert cli_run("frobnicate").returncode == 2
    (tmp_path / "fleet.yaml").write_bytes(b"\xff\xfe")
    bad_bytes = cli_run("validate")
    assert bad_bytes.returncode == 1 and bad_bytes.stderr.startswith("fleet.yaml:1:1: (document): not valid UTF-8")


def test_debug_shows_the_traceback(tmp_path: Path, cli_run: Run) -> None:
    done = cli_run("--debug", "validate", "nope.yaml")
    assert done.returncode != 0 and "Traceback" in done.stderr and "InputError" in done.stderr


def test_render_writes_beside_the_fleet_then_nothing(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    count = len(render_files(load_fleet(EXAMPLE).fleet))
    first = cli_run("render")
    assert first.returncode == 0, first.stderr
    assert first.stderr.strip().endswith(f": {count} written, 0 removed, 0 unchanged")
    assert (tmp_path / "clusters" / "dev-eastus" / "kustomization.yaml").exists()
    second = cli_run("render")
    assert second.stderr.strip().endswith(f": 0 written, 0 removed, {count} unchanged")


def test_help_shows_examples_and_exit_codes(cli_run: Run) -> None:
    top = cli_run("--help").stdout
    assert "Example:" in top and "Exit codes: 0 fine, 1 findings" in top
    for command in ("validate", "render"):
        assert "Example: fleetgen " + command in cli_run(command, "--help").stdout

"""The installed `fleetgen` command: exit codes, output formats, one-line errors."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

from conftest import EXAMPLE, line_of, replace_once

from fleetgen.checks.load import load_fleet
from fleetgen.workflows.tree_files import render_files

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


def test_validate_the_example_exits_0(console_run: Run) -> None:
    done = console_run("validate", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    assert "valid (4 clusters, 3 teams; 0 error(s), 11 warning(s))" in done.stdout
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


def test_usage_and_io_trouble_exit_2(tmp_path: Path, console_run: Run) -> None:
    missing = console_run("validate", "nope.yaml")
    assert missing.returncode == 2 and missing.stderr.strip() == "fleetgen: nope.yaml: no such file"
    assert console_run("validate", "--format", "xml", str(EXAMPLE)).returncode == 2
    assert console_run("frobnicate").returncode == 2
    (tmp_path / "fleet.yaml").write_bytes(b"\xff\xfe")
    bad_bytes = console_run("validate")
    assert bad_bytes.returncode == 1 and bad_bytes.stderr.startswith("fleet.yaml:1:1: (document): not valid UTF-8")


def test_debug_shows_the_traceback(tmp_path: Path, console_run: Run) -> None:
    done = console_run("--debug", "validate", "nope.yaml")
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


def test_repeated_findings_are_counted_in_text_and_kept_in_json(tmp_path: Path, cli_run: Run) -> None:
    """The benchmark fleet repeats one warning 2,400 times: text lists a few and counts the rest; --all and JSON keep each."""
    import sys

    sys.path.insert(0, str(EXAMPLE.parent / "benchmarks"))
    from synth import synthetic_fleet

    (tmp_path / "fleet.yaml").write_text(synthetic_fleet(100, 400, 10))
    text = cli_run("validate", "fleet.yaml", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    lines = text.stderr.splitlines()
    assert len(lines) < 300
    gpu_limit = [line for line in lines if "drop the GPU limit" in line]
    assert len(gpu_limit) == 3 + 1  # the first three, then the one-line summary of the rule
    assert "  ... and 2,397 more like this; --all to list" in lines
    assert lines[-1].startswith("2,400 warnings of this kind: limits.nvidia.com/gpu is accepted")
    assert lines[-1].endswith("(first at fleet.yaml:3223:12: teams[0].quota.limits.gpu)")
    every = cli_run("validate", "fleet.yaml", "--all", cwd=tmp_path)
    assert len(every.stderr.splitlines()) == 2404 + 1  # and the one note on transition rules
    as_json = cli_run("validate", "fleet.yaml", "--format", "json", cwd=tmp_path)
    severities = [f["severity"] for f in json.loads(as_json.stdout)["findings"]]
    assert (severities.count("warning"), severities.count("note"), len(severities)) == (2404, 1, 2405)
    assert "valid (100 clusters, 400 teams; 0 error(s), 2404 warning(s))" in text.stdout


def test_failing_findings_are_counted_too_and_a_few_repeats_are_listed() -> None:
    from fleetgen.errors import Finding, Location
    from fleetgen.output.findings import format_findings

    def at(line: int, message: str) -> Finding:
        return Finding(("teams", line), message, location=Location("fleet.yaml", line, 3))

    many = [at(n, f"quota {n} exceeds 16 GPUs") for n in range(1, 8)]
    few = [at(n, "unknown field") for n in range(20, 24)]
    lines = format_findings(many + few, "text").splitlines()
    assert lines == [
        "fleet.yaml:1:3: teams[1]: quota 1 exceeds 16 GPUs",
        "fleet.yaml:2:3: teams[2]: quota 2 exceeds 16 GPUs",
        "fleet.yaml:3:3: teams[3]: quota 3 exceeds 16 GPUs",
        "  ... and 4 more like this; --all to list",
        *(f"fleet.yaml:{n}:3: teams[{n}]: unknown field" for n in range(20, 24)),
        "7 errors of this kind: quota 1 exceeds 16 GPUs (first at fleet.yaml:1:3: teams[1])",
    ]
    assert len(format_findings(many + few, "text", every=True).splitlines()) == 11
    assert len(format_findings(many + few, "github").splitlines()) == 11


def test_the_counted_kinds_are_summed_up_in_the_order_they_first_appear() -> None:
    """The same findings print the same text on every run: the one-line summaries follow the findings' order, not
    the order a set of messages happens to take under the run's string hashing."""
    from fleetgen.errors import Finding, Location
    from fleetgen.output.findings import format_findings

    kinds = ["quota", "limit", "queue", "flavor", "cohort", "volume", "registry"]
    findings = [
        Finding(("teams", n), f"{kind} {n} is wrong", location=Location("fleet.yaml", 10 * k + n, 3))
        for k, kind in enumerate(kinds)
        for n in range(1, 6)
    ]
    summaries = [line for line in format_findings(findings, "text").splitlines() if "of this kind" in line]
    assert [line.split(": ")[1].split()[0] for line in summaries] == kinds

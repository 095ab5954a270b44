"""`validate`'s shortcut: a fleet text validated (or rendered) before today is answered with the report kept for it.

The promise: what `validate` prints and its exit code are the same with the shortcut as without it,
on every generated fleet and every option; only a passing run without --crd and without a facts file
of the fleet's own is kept; and a report is never read for another text, file name, option or day.
"""

from __future__ import annotations

import datetime
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE, examples, run_cli
from generated_fleets import fleets, write_fleet
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from fleetgen.cache import Cache
from fleetgen.errors import Finding, Location, Severity
from fleetgen.validation.known_reports import KnownReport, KnownReports, utc_date

OPTIONS = ([], ["--strict"], ["--fail-on", "warning"], ["--format", "json"], ["--format", "github", "--all"])


def _run(command: str, folder: Path, cache: Path, options: list[str]) -> tuple[int, str, str]:
    result = run_cli(command, *options, cwd=folder, env={"XDG_CACHE_HOME": str(cache)})
    return result.returncode, result.stdout, result.stderr


def _validate(folder: Path, cache: Path, options: list[str]) -> tuple[int, str, str]:
    return _run("validate", folder, cache, options)


def _kept(folder: Path, cache: Path, strict: bool = False, fail_on: Severity = Severity.ERROR) -> KnownReport | None:
    """The report kept for `fleetgen validate` run in `folder` (its findings name the file as it was given)."""
    before = Path.cwd()
    os.chdir(folder)
    try:
        return KnownReports(Cache(cache / "fleetgen")).get(Path("fleet.yaml"), strict, fail_on, utc_date())
    finally:
        os.chdir(before)


@examples(10, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(fleet=fleets(files=True), options=st.sampled_from(OPTIONS), first=st.sampled_from(["validate", "render"]))
def test_the_shortcut_prints_what_the_full_validation_prints(
    tmp_path_factory: pytest.TempPathFactory, fleet: dict[str, Any], options: list[str], first: str
) -> None:
    folder = tmp_path_factory.mktemp("fleet")
    write_fleet(folder, fleet)
    full = _validate(folder, tmp_path_factory.mktemp("cold"), options)
    warm = tmp_path_factory.mktemp("warm")
    # What the hook's validate follows: a validate with the same options, or a render (which checks with the defaults).
    _run(first, folder, warm, options if first == "validate" else [])
    kept = _kept(folder, warm, "--strict" in options, Severity.WARNING if "warning" in options else Severity.ERROR)
    passed = full[0] == 0 and not (fleet.get("compatibility") or {}).get("factsFile")  # a fleet with its own facts: never kept
    default_checks = "--strict" not in options and "--fail-on" not in options
    assert (kept is not None) == (passed and (first == "validate" or default_checks))
    assert _validate(folder, warm, options) == full  # the shortcut (or the full way, where nothing was kept) says the same


def test_the_example_is_answered_without_the_model(tmp_path: Path) -> None:
    """The pre-commit hook's validate after a render of the same text prints the kept report."""
    folder = tmp_path / "example"
    folder.mkdir()
    shutil.copy2(EXAMPLE, folder / "fleet.yaml")
    cold = _validate(folder, tmp_path / "cold", [])
    assert cold[0] == 0 and "valid (" in cold[1]
    _run("render", folder, tmp_path / "warm", [])
    assert _kept(folder, tmp_path / "warm") is not None
    assert _validate(folder, tmp_path / "warm", []) == cold


def test_a_report_is_read_only_for_its_text_name_options_and_day(tmp_path: Path) -> None:
    store = KnownReports(Cache(tmp_path / "cache"))
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("kind: Fleet\n")
    today = datetime.date(2026, 11, 28)
    report = KnownReport((Finding(("teams", 0), "a warning", Severity.WARNING, Location(str(fleet), 3, 5)),), 2, 3)
    store.record(fleet.read_bytes(), str(fleet), False, Severity.ERROR, today, report)
    assert store.get(fleet, False, Severity.ERROR, today) == report
    assert store.get(fleet, True, Severity.ERROR, today) is None
    assert store.get(fleet, False, Severity.WARNING, today) is None
    assert store.get(fleet, False, Severity.ERROR, today + datetime.timedelta(days=1)) is None
    assert store.get(tmp_path / "other.yaml", False, Severity.ERROR, today) is None  # no such file: the full way says so
    fleet.write_text("kind: Fleet\n# edited\n")
    assert store.get(fleet, False, Severity.ERROR, today) is None


def test_a_failing_fleet_or_a_crd_run_is_never_kept(tmp_path: Path) -> None:
    folder = tmp_path / "example"
    folder.mkdir()
    text = (EXAMPLE).read_text()
    (folder / "fleet.yaml").write_text(text.replace("apiVersion:", "apiVersionn:", 1))
    cache = tmp_path / "cache"
    assert _validate(folder, cache, [])[0] == 1
    assert _kept(folder, cache) is None
    (folder / "fleet.yaml").write_text(text)
    crds = tmp_path / "crds"
    crds.mkdir()
    assert _validate(folder, cache, ["--crd", str(crds)])[0] == 0
    assert _kept(folder, cache) is None

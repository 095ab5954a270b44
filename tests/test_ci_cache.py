"""fleetgen's cache between CI runs: the pull-request workflow and the action restore it and keep it (actions/cache).

The promise: a cache restored from an earlier run changes how long a job takes, never what it says. Every step that
runs fleetgen keeps the same output and exit code whether the cache is empty or holds what the base branch's run
left; and only runs of the base branch can fill the scope a pull request restores from.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from conftest import EXAMPLE, REPO, git, replace_once

from fleetgen.authoring.scaffold import workflow
from fleetgen.cache import _package_files, code_salt

Run = Callable[..., subprocess.CompletedProcess[str]]


def _steps_of_both() -> list[tuple[str, list[dict[str, Any]]]]:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    return [("workflow", workflow("fleetgen==0.1.0")["jobs"]["fleet"]["steps"]), ("action", action["runs"]["steps"])]


def test_the_workflow_and_the_action_restore_the_cache_first_and_keep_it_last() -> None:
    for where, steps in _steps_of_both():
        runs = [str(s.get("run", "")) for s in steps]
        folder = next(i for i, run in enumerate(runs) if run.startswith('python -m fleetgen.cache >> "$GITHUB_OUTPUT"'))
        restore = next(i for i, s in enumerate(steps) if s.get("uses") == "actions/cache/restore@v5")
        save = next(i for i, s in enumerate(steps) if s.get("uses") == "actions/cache/save@v5")
        fleetgen = [i for i, run in enumerate(runs) if re.search(r"(^|\n)fleetgen (validate|check|diff) ", run)]
        assert folder < restore < min(fleetgen) and max(fleetgen) < save, where  # restored before fleetgen runs, kept after
        key = "${{ steps.cache.outputs.key }}-${{ github.sha }}"
        assert steps[restore]["with"] == {
            "path": "${{ steps.cache.outputs.folder }}",
            "key": key,
            "restore-keys": "${{ steps.cache.outputs.key }}-",  # this branch's last run, else the base branch's
        }, where
        assert steps[save]["with"] == {"path": "${{ steps.cache.outputs.folder }}", "key": key}, where
        # Only a push's run keeps or reads it: a pull request's run could read what an earlier run of the same pull
        # request, with a workflow it edited, saved into its scope (GitHub restores that scope first)
        for step in (steps[folder], steps[restore], steps[save]):
            assert "github.event_name == 'push'" in step["if"].split(" && "), (where, step)
        assert "||" not in steps[restore]["if"] and "steps.restore.outputs.cache-hit != 'true'" in steps[save]["if"], where
    trigger = workflow(".")["on"]
    assert set(trigger) == {"pull_request", "push"} and "pull_request_target" not in trigger  # the base branch's runs keep it


def test_the_folder_and_key_a_job_keeps_are_fleetgens(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    done = subprocess.run([sys.executable, "-m", "fleetgen.cache"], env=env, capture_output=True, text=True, check=True)
    lines = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert lines["folder"] == str(tmp_path / "xdg" / "fleetgen")
    # fleetgen's version and its salt (its code, data and the installed distributions): another fleetgen restores nothing
    assert lines["key"] == f"fleetgen-0.1.0-{code_salt()[:16]}"
    relative = {**os.environ, "XDG_CACHE_HOME": "relative", "HOME": str(tmp_path)}  # a relative XDG_CACHE_HOME is ignored
    done = subprocess.run([sys.executable, "-m", "fleetgen.cache"], env=relative, capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[0] == f"folder={tmp_path / '.cache' / 'fleetgen'}"


def test_a_restored_cache_changes_how_long_a_pull_requests_job_takes_never_what_it_says(cli_run: Run, tmp_path: Path) -> None:
    """The base branch's run (validate, check) fills a cache; a pull request's job restores it (a copy, times kept, as
    actions/cache does) and runs validate, check and both diffs. Each prints and exits as on an empty cache."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(EXAMPLE, repo / "fleet.yaml")
    git(repo, "init", "-q", "-b", "main")
    base_cache = {"XDG_CACHE_HOME": str(tmp_path / "base")}
    assert cli_run("render", cwd=repo, env=base_cache).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    for command in (["validate", "--format", "github"], ["check"]):  # the base branch's push run
        assert cli_run(*command, cwd=repo, env=base_cache).returncode == 0
    text = (repo / "fleet.yaml").read_text()
    (repo / "fleet.yaml").write_text(replace_once(text, "{requests: {gpu: 4}, limits: {gpu: 4}}", "{requests: {gpu: 3}, limits: {gpu: 3}}"))
    assert cli_run("render", cwd=repo, env={"XDG_CACHE_HOME": str(tmp_path / "author")}).returncode == 0  # the author's laptop
    git(repo, "commit", "-qam", "one team's quota")
    job = [["validate", "--format", "github"], ["check"], ["diff", "--base", "HEAD~1", "--format", "markdown"]]
    job += [["diff", "--base", "HEAD~1", "--format", "github"], ["diff", "--base", "HEAD~1", "--format", "json"]]
    shutil.copytree(tmp_path / "base", tmp_path / "restored")
    kept = [p for p in (tmp_path / "restored").rglob("*") if p.is_file()]
    for entry in kept:  # an hour old: an entry read by the job is touched (the prune keeps what is read)
        os.utime(entry, (entry.stat().st_mtime - 3600, entry.stat().st_mtime - 3600))
    old = {entry: entry.stat().st_mtime for entry in kept}
    said = {}
    for cache in ("restored", "empty"):
        env = {"XDG_CACHE_HOME": str(tmp_path / cache)}
        said[cache] = [(r.returncode, r.stdout, r.stderr) for r in (cli_run(*command, cwd=repo, env=env) for command in job)]
    assert said["restored"] == said["empty"]
    read = {entry.parent.name for entry in kept if entry.stat().st_mtime > old[entry]}
    assert {"fleet-passed", "cluster-files", "cluster-verdict"} <= read  # the base's verdict, files and clusters' verdicts
    assert [code for code, _, _ in said["empty"]] == [0, 0, 1, 1, 1]
    assert "nvidia.com/gpu" in said["empty"][2][1]


def test_the_salt_reads_each_file_of_the_package_whole_by_content(tmp_path: Path) -> None:
    """What the salt hashes is each file's name and bytes (an empty file, one larger than a read's first guess, a folder
    reached through a link), never __pycache__: a checkout elsewhere, with other file times, gets the same key."""
    package = tmp_path / "package"
    (package / "data").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "m.cpython.pyc").write_bytes(b"compiled")
    (package / "empty.py").write_bytes(b"")
    (package / "data" / "large.json").write_bytes(bytes(range(256)) * 1500)
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "a.json").write_text("{}")
    (package / "schemas").symlink_to("../schemas")
    expected = [("data/large.json", bytes(range(256)) * 1500), ("empty.py", b""), ("schemas/a.json", b"{}")]
    assert _package_files(package) == expected
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(package, elsewhere, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    os.utime(elsewhere / "empty.py", (0, 0))
    assert _package_files(elsewhere) == expected

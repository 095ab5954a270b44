"""The benchmarks' fleets are valid: a benchmark of a fleet fleetgen refuses would time the refusal."""

from __future__ import annotations

import subprocess
import sys

import yaml
from conftest import REPO

from fleetgen import workflows
from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity

sys.path.insert(0, str(REPO / "benchmarks"))

from example_fleet import MANAGER, example_fleet  # the benchmarks folder is no package


def test_the_replicated_example_with_every_feature_is_valid() -> None:
    fleet = example_fleet(3)
    checked = workflows.checked(load_fleet_text(yaml.safe_dump(fleet, sort_keys=False).encode()))  # raises on an error
    assert not [f for f in checked.findings if f.severity is Severity.ERROR]
    assert len(checked.fleet.clusters) == 3 * 4 + 1 and checked.fleet.clusters[0].name == MANAGER
    files = checked.tree.files
    assert any("MultiKueueCluster" in text.decode() for text in files.values())  # the manager dispatches to the replicas
    assert any("ExternalSecret" in text.decode() for text in files.values())  # the Secrets come from the store
    assert any(path.endswith("/notebooks.yaml") for path in files)  # the example's notebooks, on every replica


def test_the_render_benchmark_runs_on_a_small_fleet() -> None:
    """bench.py calls fleetgen's stages directly (load, render, each kind's validator): a change of their interface
    fails here, not on the next person to time the fleet."""
    command = [sys.executable, str(REPO / "benchmarks" / "bench.py"), "--clusters", "2", "--teams", "4", "--clusters-per-team", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "schema validation per object" in done.stdout and "peak memory" in done.stdout

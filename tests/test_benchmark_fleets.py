"""The benchmarks' fleets are valid: a benchmark of a fleet fleetgen refuses would time the refusal."""

from __future__ import annotations

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

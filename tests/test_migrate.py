"""fleetgen's own versions: a rule that refuses what the previous release accepted is first a warning that names
the field, the release that will refuse it and the fix, and `fleetgen migrate` rewrites fleet.yaml for it in
place, comments kept, without changing what the fleet renders.

tests/previous_release holds fleet.yaml files that fleetgen accepted at the commit in their name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen import __version__
from fleetgen.authoring.migrate import REWRITES, migrate
from fleetgen.checks.deprecations import DEPRECATIONS
from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.model import Version
from fleetgen.workflows.tree_files import render_files

Run = Callable[..., subprocess.CompletedProcess[str]]
PREVIOUS = sorted((Path(__file__).parent / "previous_release").glob("fleet-*.yaml"))


def test_every_deprecation_has_a_rewrite_a_changelog_entry_and_a_release_still_to_come() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    deprecated = changelog.split("### Deprecated", 1)[1].split("\n## ", 1)[0]
    for deprecation in DEPRECATIONS:
        assert deprecation.name in REWRITES, deprecation.name
        assert f"`{deprecation.name}`" in deprecated and f"refused in {deprecation.refused_in}" in deprecated, deprecation.name
        # a release that has reached refused_in must refuse: the entry moves to Breaking and its check becomes an error
        assert Version(__version__) < Version(deprecation.refused_in) and Version(deprecation.deprecated_in) <= Version(__version__)


@pytest.mark.slow  # migrates, renders twice and validates through the command: about 15 s
@pytest.mark.parametrize("path", PREVIOUS, ids=[p.name for p in PREVIOUS])
def test_a_previous_releases_fleet_validates_with_warnings_migrates_and_renders_the_same(path: Path, tmp_path: Path, cli_run: Run) -> None:
    text = path.read_text(encoding="utf-8")
    loaded = load_fleet_text(text.encode(), "fleet.yaml")  # raises on an error: the previous release's fleet still loads
    warned = [f for f in loaded.warnings if "deprecated since fleetgen" in f.message]
    assert warned and all(f.severity is Severity.WARNING for f in warned)
    for finding in warned:  # the field, the release that will refuse it, and the fix
        assert finding.location is not None and re.search(r"will refuse it\. Fix: .+ \(fleetgen migrate does\)$", finding.message)
    shutil.copy(path, tmp_path / "fleet.yaml")
    assert cli_run("migrate", "--check").returncode == 1
    done = cli_run("migrate")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == len(warned) + 1
    migrated = (tmp_path / "fleet.yaml").read_text(encoding="utf-8")
    # comments and layout stay: only the lines of the deprecated fields change
    kept = [line for line in text.splitlines() if "gpuModel: none" not in line and not line.rstrip().endswith("training-eastus:")]
    assert [line for line in migrated.splitlines() if line in kept] == kept
    assert "# this release needed a GPU model on every pool" not in migrated  # the dropped field's own comment goes with it
    assert "# YAML anchors: same pools as East US" in migrated
    after = load_fleet_text(migrated.encode(), "fleet.yaml")
    assert not [f for f in after.warnings if "deprecated" in f.message]
    assert render_files(after.fleet) == render_files(loaded.fleet)  # the fleet runs as it ran
    validated = cli_run("validate")
    assert validated.returncode == 0, validated.stdout + validated.stderr
    again = cli_run("migrate")
    assert (again.returncode, again.stdout) == (0, "fleet.yaml: nothing deprecated\n")


CPU_POOL = """      - name: cpu-{n}
        vmSize: Standard_D16s_v5
{model}        gpusPerNode: 0
        cpuPerNode: 15
        memoryPerNode: 56Gi
        minNodes: 1
        maxNodes: 2
        scaling: on-demand
        labels: {{pool: cpu-{n}}}
"""


@pytest.mark.slow
@settings(deadline=None)  # each example loads the whole example fleet twice
@given(models=st.lists(st.sampled_from([None, "none", "NONE", "cpu", "n-a"]), min_size=1, max_size=3))
def test_migrate_drops_exactly_the_gpu_models_of_cpu_only_pools(models: list[str | None]) -> None:
    text = (REPO / "fleet.yaml").read_text(encoding="utf-8")
    anchor = "        taints: [{key: sku, value: gpu, effect: NoSchedule}]\n\n  - name: prod-inference-westeu"
    assert text.count(anchor) == 1
    pools = "".join(CPU_POOL.format(n=n, model=f"        gpuModel: {m}\n" if m else "") for n, m in enumerate(models))
    text = text.replace(anchor, anchor.split("\n")[0] + "\n" + pools + "\n  - name: prod-inference-westeu")
    loaded = load_fleet_text(text.encode())
    result = migrate(loaded)
    assert len(result.changes) == sum(m is not None for m in models)
    after = load_fleet_text(result.text.encode())
    assert [p.gpu_model for p in after.fleet.clusters[0].node_pools if not p.gpus_per_node] == [None] * len(models)
    assert result.text.count("\n") == text.count("\n") - len(result.changes)

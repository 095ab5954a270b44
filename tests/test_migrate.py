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
from conftest import REPO, replace_once
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


def _migrated_alike(text: str) -> str:
    """migrate's output for `text`, checked: it loads with no deprecation left and renders what `text` renders."""
    loaded = load_fleet_text(text.encode())
    result = migrate(loaded)
    assert result.changes
    after = load_fleet_text(result.text.encode())
    assert not [f for f in after.warnings if "deprecated" in f.message], [f.message for f in after.warnings]
    assert render_files(after.fleet) == render_files(loaded.fleet)
    return result.text


def test_migrate_rewrites_an_anchored_cpu_pool_once_where_it_is_defined() -> None:
    # one CPU pool written once with the old `gpuModel: none`, used by an alias and by a merge key in other clusters
    text = (REPO / "fleet.yaml").read_text(encoding="utf-8")
    pool = CPU_POOL.format(n=0, model="        gpuModel: none\n").replace("      - name: cpu-0", "      - &cpu-pool\n        name: cpu-0")
    anchor = "        taints: [{key: sku, value: gpu, effect: NoSchedule}]\n\n  - name: prod-inference-westeu"
    text = text.replace(anchor, anchor.split("\n")[0] + "\n" + pool + "\n  - name: prod-inference-westeu")
    text = replace_once(text, "nodePools: [*a100-reserved, *a10g-reserved]", "nodePools: [*a100-reserved, *a10g-reserved, *cpu-pool]")
    text = replace_once(
        text,
        "      - name: a100-ondemand\n",
        "      - {<<: *cpu-pool, name: cpu-1, labels: {pool: cpu-1}}\n      - name: a100-ondemand\n",
    )
    migrated = _migrated_alike(text)
    assert "gpuModel: none" not in migrated and migrated.count("*cpu-pool") == 2


def test_migrate_names_the_queue_of_a_placement_shared_by_an_alias_for_each_cluster() -> None:
    text = (REPO / "tests" / "cases" / "multikueue-two-models" / "fleet.yaml").read_text(encoding="utf-8")
    two_queues = (
        "    queues:\n"
        "      - {{name: {a}, flavors: [{pool}], nominalQuota: {{{pool}: {{gpu: 8}}}}}}\n"
        "      - {{name: {b}, flavors: [{pool}], nominalQuota: {{{pool}: {{gpu: 8}}}}}}\n"
    )
    east = "        labels: {accelerator: nvidia-a100}\n  - name: training-westus2"
    east_queues = two_queues.format(a="east-first", b="east-other", pool="a100").replace("[a100]", "[h100, a100]", 1)
    east_queues = east_queues.replace("{a100: {gpu: 8}}}", "{h100: {gpu: 32}, a100: {gpu: 8}}}", 1)
    text = replace_once(text, east, "        labels: {accelerator: nvidia-a100}\n" + east_queues + "  - name: training-westus2")
    west = "        scaling: on-demand\n        labels: {accelerator: nvidia-a100}\nmultiKueue:"
    text = replace_once(
        text, west, west.removesuffix("multiKueue:") + two_queues.format(a="west-first", b="west-other", pool="a100") + "multiKueue:"
    )
    # team values written once and shared by an alias; each cluster has two queues and the team names neither
    text = replace_once(
        text,
        "      training-eastus: {requests: {gpu: 8}}",
        "      training-eastus: &shared {requests: {gpu: 4}}\n      training-westus2: *shared",
    )
    migrated = _migrated_alike(text)
    fleet = load_fleet_text(migrated.encode()).fleet
    vision = next(t for t in fleet.teams if t.name == "vision")
    queues = {name: p.queue for name, p in vision.clusters.items() if p is not None}
    assert queues == {"dispatch-eastus": "fleet-a100", "training-eastus": "east-first", "training-westus2": "west-first"}

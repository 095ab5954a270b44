"""The upgrade planner with the facts validate uses, and the GPU Operator's driver limits.

The operator cases are generated from compat/gpu_operator.yaml: every listed driver plans without moving the release,
and a driver the release lacks moves the cluster to the first later release that lists it, in the same step, or is
refused. The fleet's own facts file is tested through the real CLI.
"""

from __future__ import annotations

import datetime
import difflib
import re
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import yaml
from conftest import EXAMPLE, replace_once
from node_dumps import verified, wave_evidence
from test_compat_facts import below

from fleetgen.checks.load import load_fleet_text
from fleetgen.compat.gpu_operator import OperatorRelease, operator_facts
from fleetgen.model import Fleet, Version
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.operator import cluster_versions, release_for
from fleetgen.upgrade.plan import PlanRefused, plan_upgrade

Run = Callable[..., CompletedProcess[str]]
RELEASES = operator_facts().releases
OPERATOR_LINE = "gpuOperator: {version: v24.3.0}"


def _key(release: OperatorRelease) -> tuple[int, ...]:
    return tuple(int(p) for p in release.series.split("."))


def fleet_on(release: OperatorRelease, driver: Version) -> Fleet:
    """The example on this GPU Operator release, every version set on `driver`."""
    text = replace_once(EXAMPLE.read_text(), OPERATOR_LINE, f"gpuOperator: {{version: {release.documents}}}")
    for old in ("driver: 550.54.15", "driver: 550.90.07"):  # the production and the dev set
        text = replace_once(text, old, "driver: NEW")
    text = text.replace("driver: NEW", f"driver: {driver}")
    # without notebooks: their images need a driver that fully supports their CUDA, which these drivers need not
    text = replace_once(text, "    platform: {jupyterhub: {enabled: true}}   # scientists' notebooks run here\n", "")
    return load_fleet_text(text.encode()).fleet


def lowest_cuda12_driver(release: OperatorRelease) -> Version | None:
    """The release's lowest driver that runs the example's CUDA 12 images (minor-version compatibility: 525.60.13)."""
    usable = sorted(d for d in release.drivers if d >= Version("525.60.13"))
    return usable[0] if usable else None


CASES = [
    (release, base, driver)
    for release in RELEASES
    if (base := lowest_cuda12_driver(release)) is not None
    for driver in release.drivers
    if driver > base
]


@pytest.mark.parametrize(("release", "base", "driver"), CASES, ids=[f"{r.series}-{d}" for r, _, d in CASES])
def test_a_driver_the_operator_lists_plans_without_moving_it_and_one_patch_below_moves_or_is_refused(
    release: OperatorRelease, base: Version, driver: Version
) -> None:
    fleet = fleet_on(release, base)
    plan = plan_upgrade(fleet, {"driver": driver})
    assert plan.waves and all(dict(w.step) == {"driver": driver} for w in plan.waves)  # the release lists it: it stays
    lower = Version(below(driver))
    if lower in release.drivers or lower <= base:
        return
    later = release_for(lower, Version.parse(release.documents))
    if later is not None:  # a later release lists it: each cluster moves to that release with the driver
        assert {dict(w.step)["gpuOperator"] for w in plan_upgrade(fleet, {"driver": lower}).waves} == {Version.parse(later.documents)}
        return
    with pytest.raises(PlanRefused) as caught:
        plan_upgrade(fleet, {"driver": lower})
    about = [
        f.message for f in caught.value.findings if f"driver {lower} is not supported by GPU Operator {release.documents}" in f.message
    ]
    assert sorted(m.split(" ")[0] for m in about) == sorted(c.name for c in fleet.clusters)


MOVES = [
    (release, base, target)
    for release in RELEASES
    if (base := lowest_cuda12_driver(release)) is not None
    for target in sorted({d for r in RELEASES for d in r.drivers})
    if target > base and target not in release.drivers
]


@pytest.mark.parametrize(("release", "base", "target"), MOVES, ids=[f"{r.series}-{b}-{t}" for r, b, t in MOVES])
def test_a_driver_the_release_lacks_moves_the_release_with_it_and_every_state_is_supported(
    release: OperatorRelease, base: Version, target: Version
) -> None:
    """The cluster's release and driver change in one step (one Helm upgrade): the state after it, not a driver the
    two releases share, is what the rule judges; a target no later release lists is refused with the rule."""
    fleet = fleet_on(release, base)
    supports = {Version.parse(r.documents): set(r.drivers) for r in RELEASES}
    first = release_for(target, Version.parse(release.documents))
    if first is None:
        with pytest.raises(PlanRefused, match=f"driver {target} is not supported by GPU Operator {release.documents}"):
            plan_upgrade(fleet, {"driver": target})
        return
    plan = plan_upgrade(fleet, {"driver": target})
    moved = Version.parse(first.documents)
    assert plan.target == {"driver": target, "gpuOperator": moved}
    assert [dict(w.step) for w in plan.waves] == [{"driver": target, "gpuOperator": moved}] * len(plan.waves)
    skipped = [r for r in RELEASES if _key(release) <= _key(r) < _key(first)]
    assert target in supports[moved] and not any(target in r.drivers for r in skipped)  # the smallest move that lists it


def test_the_shipped_example_plans_560_and_580_moving_the_gpu_operator_with_the_driver(cli_run: Run, tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(EXAMPLE.read_text())
    for driver, operator in (("560.35.03", "v24.6.1"), ("580.65.06", "v25.3.4")):
        done = cli_run("upgrade", "plan", "--set", f"driver={driver}")
        assert done.returncode == 0, done.stderr
        assert f"implied: GPU Operator v24.3.0 does not list driver {driver}; {operator} is the first release that does" in done.stdout
        steps = re.findall(r"^\d +(.+?)  +(?:canary|production)", done.stdout, re.MULTILINE)
        assert steps == [f"driver {driver}, gpuOperator {operator}"] * 4, done.stdout
    assert cli_run("upgrade", "plan", "--set", "driver=550.90.07").returncode == 0  # one 24.3 lists: the operator stays
    pinned = cli_run("upgrade", "plan", "--set", "driver=580.65.06", "--set", "gpuOperator=v24.9.2")
    assert pinned.returncode == 1
    assert "after driver 580.65.06, gpuOperator v24.9.2: driver 580.65.06 is not supported by GPU Operator v24.9.2" in pinned.stderr


def test_an_implied_driver_is_one_every_operator_supports() -> None:
    """CUDA 12.6 needs 560.28.03 or later; GPU Operator 24.6 lists 560.35.03 but not 560.28.03."""
    release = next(r for r in RELEASES if r.series == "24.6")
    fleet = fleet_on(release, Version("550.90.07"))
    plan = plan_upgrade(fleet, {"cuda": Version("12.6"), "cudnn": Version("9.3.0")})
    assert plan.implied == [
        "CUDA 12.6 needs driver 560.28.03 or later, and 560.35.03 is the first a GPU Operator release lists: the driver moves first"
    ]
    assert plan.target["driver"] == Version("560.35.03") and "gpuOperator" not in plan.target


# --- the fleet's own facts file, through the real CLI ------------------------------------------------------------

OWN_ROW = '{cuda: "12.6", minDriver: "560.35.03", source: "Our driver qualification", url: "https://wiki.example.com/gpu/drivers"}'


@pytest.mark.parametrize("own_facts", [False, True])
def test_plan_uses_the_fleets_own_facts(cli_run: Run, tmp_path: Path, own_facts: bool) -> None:
    text = replace_once(EXAMPLE.read_text(), OPERATOR_LINE, "gpuOperator: {enabled: false}")
    if own_facts:
        text = replace_once(text, "\nversionSets:\n", "\ncompatibility:\n  factsFile: extra-facts.yaml\n\nversionSets:\n")
        (tmp_path / "extra-facts.yaml").write_text(f"cudaDriver:\n  - {OWN_ROW}\n")
    (tmp_path / "fleet.yaml").write_text(text)
    done = cli_run("upgrade", "plan", "--set", "cuda=12.6", "--set", "cudnn=9.3.0")
    assert done.returncode == 0, done.stderr
    needed = "560.35.03" if own_facts else "560.28.03"  # the user's row replaces the shipped one for CUDA 12.6
    assert f"CUDA 12.6 needs driver {needed} or later: the driver moves first" in done.stdout
    assert re.search(rf"^1 +driver {needed} +canary \(dev\) +dev-eastus ", done.stdout, re.MULTILINE), done.stdout


# --- applying waves that move the GPU Operator with the driver ----------------------------------------------------


def _changed(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def _gpu_operator_release(tree: Path, cluster: str) -> tuple[str, str]:
    """The chart version and driver.version of the cluster's rendered GPU Operator HelmRelease."""
    docs = yaml.safe_load_all((tree / "clusters" / cluster / "platform" / "platform.yaml").read_text())
    release = next(d for d in docs if d["kind"] == "HelmRelease" and d["metadata"]["name"] == "gpu-operator")
    return release["spec"]["chart"]["spec"]["version"], release["spec"]["values"]["driver"]["version"]


def test_wave_1_moves_dev_to_the_release_and_the_driver_and_the_tree_installs_both(cli_run: Run, tmp_path: Path) -> None:
    before = EXAMPLE.read_text()
    (tmp_path / "fleet.yaml").write_text(before)
    done = cli_run("upgrade", "apply", "--wave", "1", "--set", "driver=560.35.03", "--at", "2026-11-24T09:00Z")
    assert done.returncode == 0, done.stderr
    after = (tmp_path / "fleet.yaml").read_text()
    assert _changed(before, after)[:3] == ["-    driver: 550.90.07", "+    driver: 560.35.03", "+    gpuOperator: v24.6.1"]
    assert "    - {wave: 1, step: {driver: 560.35.03, gpuOperator: v24.6.1}, clusters: [dev-eastus]" in after
    assert _gpu_operator_release(tmp_path, "dev-eastus") == ("v24.6.1", "560.35.03")
    assert _gpu_operator_release(tmp_path, "training-eastus") == ("v24.3.0", "550.54.15")  # not in this wave
    assert cli_run("check").returncode == 0


def test_every_wave_keeps_each_cluster_supported_and_the_last_folds_the_release_into_the_sets() -> None:
    """training-eastus names its own GPU Operator release: its wave moves that line."""
    text = replace_once(
        EXAMPLE.read_text(),
        "    purpose: Training, fine-tuning\n",
        "    purpose: Training, fine-tuning\n    platform: {gpuOperator: {version: v24.3.0}}\n",
    )
    at = datetime.datetime(2026, 11, 24, 9, tzinfo=datetime.UTC)
    texts = [verified(apply_wave(load_fleet_text(text.encode()), 1, {"driver": Version("580.65.06")}, at), 1, at)]
    for number in range(2, 5):
        when = at + datetime.timedelta(days=2 * (number - 1))
        evidence = wave_evidence(load_fleet_text(texts[-1].encode()).fleet, number - 1)  # its nodes on 580.65.06
        texts.append(verified(apply_wave(load_fleet_text(texts[-1].encode()), number, None, when, evidence=evidence), number, when))
        fleet = load_fleet_text(texts[-1].encode()).fleet  # validates: every cluster's release lists its driver
        moved = {c for w in fleet.upgrade.waves[:number] for c in w.clusters}  # type: ignore[union-attr]
        for cluster in fleet.clusters:
            versions = cluster_versions(fleet, cluster)
            expected = (Version("580.65.06"), Version("25.3.4")) if cluster.name in moved else (versions["driver"], Version("24.3.0"))
            assert (versions["driver"], versions["gpuOperator"]) == expected, cluster.name
    assert "platform: {gpuOperator: {version: v25.3.4}}" in texts[1]  # wave 2 is training-eastus's
    final = load_fleet_text(texts[-1].encode()).fleet
    assert {n: (str(v.driver), str(v.gpu_operator)) for n, v in final.version_sets.items()} == {
        "prod-2024q4": ("580.65.06", "25.3.4"),
        "dev-2024q4": ("580.65.06", "25.3.4"),
    }


def test_explain_names_the_version_set_as_the_source_of_the_release(cli_run: Run, tmp_path: Path) -> None:
    at = datetime.datetime(2026, 11, 24, 9, tzinfo=datetime.UTC)
    (tmp_path / "fleet.yaml").write_text(apply_wave(load_fleet_text(EXAMPLE.read_bytes()), 1, {"driver": Version("560.35.03")}, at))
    done = cli_run("explain", "dev-eastus", "HelmRelease/flux-system/gpu-operator", "--field", "spec.chart.spec.version")
    assert done.returncode == 0, done.stderr
    assert "spec.chart.spec.version: v24.6.1" in done.stdout and "versionSets.dev-2024q4.gpuOperator" in done.stdout


def test_a_waves_gpu_operator_move_is_a_production_version_change_in_the_pull_request() -> None:
    from fleetgen.review.changes import fleet_changes

    at = datetime.datetime(2026, 11, 24, 9, tzinfo=datetime.UTC)
    before = load_fleet_text(EXAMPLE.read_bytes()).fleet
    after = load_fleet_text(apply_wave(load_fleet_text(EXAMPLE.read_bytes()), 1, {"driver": Version("560.35.03")}, at).encode()).fleet
    moved = [c for c in fleet_changes(before, after) if c.field == "gpuOperator"]
    assert [(c.text, c.production) for c in moved] == [("cluster dev-eastus: GPU Operator v24.3.0 -> v24.6.1", False)]

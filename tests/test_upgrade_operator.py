"""The upgrade planner with the facts validate uses, and the GPU Operator's driver limits.

The operator cases are generated from compat/gpu_operator.yaml: every listed driver plans, one patch below it is
refused, and every piece of ordering advice names only states the data supports. The fleet's own facts file is
tested through the real CLI.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from conftest import EXAMPLE, replace_once
from test_compat_facts import below

from fleetgen.checks.load import load_fleet_text
from fleetgen.compat.gpu_operator import OperatorRelease, driver_move, operator_facts
from fleetgen.model import Fleet, Version
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
def test_a_driver_the_operator_lists_plans_and_one_patch_below_is_refused(release: OperatorRelease, base: Version, driver: Version) -> None:
    fleet = fleet_on(release, base)
    assert plan_upgrade(fleet, {"driver": driver}).waves
    lower = Version(below(driver))
    if lower in release.drivers or lower <= base:
        return
    with pytest.raises(PlanRefused) as caught:
        plan_upgrade(fleet, {"driver": lower})
    about = [
        f.message for f in caught.value.findings if f"driver {lower} is not supported by GPU Operator {release.documents}" in f.message
    ]
    assert sorted(m.split(":")[0] for m in about) == sorted(c.name for c in fleet.clusters)


MOVES = [
    (release, current, target)
    for release in RELEASES
    for current in release.drivers
    for target in sorted({d for r in RELEASES for d in r.drivers})
    if target > current and target not in release.drivers
]


@pytest.mark.parametrize(("release", "current", "target"), MOVES, ids=[f"{r.series}-{c}-{t}" for r, c, t in MOVES])
def test_ordering_advice_names_only_supported_states(release: OperatorRelease, current: Version, target: Version) -> None:
    """Each state the advice passes through (driver, operator release) is one the data supports."""
    advice = driver_move(release.documents, current, target)
    assert advice is not None and advice.startswith(f"driver {target} is not supported by GPU Operator {release.documents}")
    supports = {r.documents: set(r.drivers) for r in RELEASES}
    later = [r for r in sorted(RELEASES, key=_key) if _key(r) > _key(release)]
    first = next((r for r in later if target in r.drivers), None)
    if first is None:
        assert "nor by any later release fleetgen knows" in advice
        return
    operator = re.search(r"the GPU Operator to (v[\d.]+)", advice)
    step = re.search(r"move the driver to ([\d.]+) first", advice)
    if operator is None:
        assert "no order of upgrades keeps the cluster supported" in advice
        assert current not in first.drivers and not any(current < d < target for d in set(release.drivers) & set(first.drivers))
        return
    new = operator.group(1)
    assert target in supports[new]
    held = Version(step.group(1)) if step else current  # the driver while the operator moves
    assert held in supports[release.documents] and held in supports[new] and current <= held < target


def test_the_examples_operator_blocks_560_with_the_order_that_works(cli_run: Run, tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(EXAMPLE.read_text())
    done = cli_run("upgrade", "plan", "--set", "driver=560.35.03")
    assert done.returncode == 1 and done.stdout == ""
    assert (
        "upgrade: dev-eastus: driver 560.35.03 is not supported by GPU Operator v24.3.0; upgrade the GPU Operator to v24.6.1 "
        "first (it supports both 550.90.07 and 560.35.03), then the driver"
    ) in done.stderr
    assert (
        "upgrade: training-eastus: driver 560.35.03 is not supported by GPU Operator v24.3.0, and v24.6.1, the first release "
        "that supports it, does not support the current driver 550.54.15: move the driver to 550.90.07 first (both releases "
        "support it), then the GPU Operator to v24.6.1, then the driver to 560.35.03"
    ) in done.stderr
    assert cli_run("upgrade", "plan", "--set", "driver=550.90.07").returncode == 0  # one 24.3 supports: planned


def test_an_implied_driver_is_one_every_operator_supports() -> None:
    """CUDA 12.6 needs 560.28.03 or later; GPU Operator 24.6 lists 560.35.03 but not 560.28.03."""
    release = next(r for r in RELEASES if r.series == "24.6")
    fleet = fleet_on(release, Version("550.90.07"))
    plan = plan_upgrade(fleet, {"cuda": Version("12.6"), "cudnn": Version("9.3.0")})
    assert plan.implied == [
        "CUDA 12.6 needs driver 560.28.03 or later, and 560.35.03 is the first the clusters' GPU Operators support: the driver moves first"
    ]
    assert plan.target["driver"] == Version("560.35.03")


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

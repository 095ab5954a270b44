"""The upgrade bugs of issue 40, each reproduced on the example first: canary order under any hash seed, Kubernetes
patch downgrades, patch-less intermediate minors, `1.30` against `1.30.0`, and a clock the caller gives."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from conftest import EXAMPLE, line_of, replace_once

from fleetgen.checks.load import load_fleet_text
from fleetgen.checks.record_times import CLOCK_SKEW, future_records
from fleetgen.compat import facts
from fleetgen.errors import InputError
from fleetgen.model import Version
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.arguments import recorded_moment
from fleetgen.upgrade.plan import PlanRefused, cluster_steps, plan_upgrade, step_label

Run = Callable[..., CompletedProcess[str]]
UTC = datetime.UTC
TEXT = EXAMPLE.read_text()
# The dev version set pins the GPU Operator release that lists 560.35.03; production's platform release does not:
# production's driver step carries the operator along, dev's does not, and the two steps used to tie.
DEV_PINNED = replace_once(TEXT, "    driver: 550.90.07\n", "    driver: 550.90.07\n    gpuOperator: v24.6.1\n")


def plan_cli(text: str, folder: Path, seed: int, *args: str) -> str:
    """`fleetgen upgrade plan` in a process of its own with PYTHONHASHSEED=seed; its output."""
    (folder / "fleet.yaml").write_text(text)
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-m", "fleetgen", "upgrade", "plan", *args], cwd=folder, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_the_plan_is_the_same_under_every_hash_seed_and_dev_goes_first(tmp_path: Path) -> None:
    outputs = {plan_cli(DEV_PINNED, tmp_path, seed, "--set", "driver=560.35.03") for seed in (0, 1, 2, 3)}
    assert len(outputs) == 1
    waves = [line.split()[0:1] + line.split()[-3:-2] for line in outputs.pop().splitlines() if line[:1].isdigit()]
    assert waves == [["1", "dev-eastus"], ["2", "training-eastus"], ["3", "prod-inference-eastus"], ["4", "prod-inference-westeu"]]


def test_a_driver_step_with_and_without_the_operator_is_one_phase_in_stage_order() -> None:
    plan = plan_upgrade(load_fleet_text(DEV_PINNED.encode()).fleet, {"driver": Version("560.35.03")})
    assert [(step_label(w.step), w.stage) for w in plan.waves] == [
        ("driver 560.35.03", "canary (dev)"),
        ("driver 560.35.03, gpuOperator 24.6.1".replace("gpuOperator 24", "gpuOperator v24"), "production canary"),
        ("driver 560.35.03, gpuOperator v24.6.1", "production"),
        ("driver 560.35.03, gpuOperator v24.6.1", "production"),
    ]


def refused(text: str, allow_downgrade: bool = False, **target: str) -> list[str]:
    with pytest.raises(PlanRefused) as caught:
        plan_upgrade(load_fleet_text(text.encode()).fleet, {k: Version(v) for k, v in target.items()}, allow_downgrade=allow_downgrade)
    return [f.message for f in caught.value.findings]


def test_a_kubernetes_patch_downgrade_needs_allow_downgrade_and_a_minor_one_is_never_planned() -> None:
    assert refused(TEXT, kubernetes="1.30.0") == [
        "dev-eastus: kubernetes 1.30.1 -> 1.30.0 is a downgrade; give --allow-downgrade to plan it"
    ]
    plan = plan_upgrade(load_fleet_text(TEXT.encode()).fleet, {"kubernetes": Version("1.30.0")}, allow_downgrade=True)
    assert ("kubernetes 1.30.0", "canary (dev)", ("dev-eastus",)) in [(step_label(w.step), w.stage, w.clusters) for w in plan.waves]
    assert "dev-eastus: Kubernetes cannot be downgraded (1.30.1 -> 1.29.4)" in refused(TEXT, True, kubernetes="1.29.4")


def test_a_version_written_short_is_the_same_release() -> None:
    assert Version("1.30") == Version("1.30.0") and hash(Version("1.30")) == hash(Version("1.30.0"))
    assert Version("1.30") < Version("1.30.1") and not Version("1.30.0") < Version("1.30")
    on_zero = replace_once(TEXT, "    kubernetes: 1.30.1\n", "    kubernetes: 1.30.0\n")
    plan = plan_upgrade(load_fleet_text(on_zero.encode()).fleet, {"kubernetes": Version("1.30")})
    assert "dev-eastus" not in {name for w in plan.waves for name in w.clusters}  # already there: nothing to move


def test_an_intermediate_minor_is_a_real_patch_from_the_facts() -> None:
    plan = plan_upgrade(load_fleet_text(TEXT.encode()).fleet, {"kubernetes": Version("1.31.2")})
    between = {w.step[0][1].text for w in plan.waves if w.step[0][1].minor == (1, 30)}
    assert between == {"1.30.14"}  # kubernetes/website's finalPatchRelease of 1.30
    steps, reasons = cluster_steps({"kubernetes": Version("1.35.1")}, {"kubernetes": Version("1.37.0")})
    assert steps == [(("kubernetes", Version("1.37.0")),)]
    assert reasons == [
        "Kubernetes 1.36 lies between 1.35.1 and 1.37.0, and the compatibility facts name no patch release of it to pass "
        "through (kubernetesReleases[].patch: add it in the fleet's facts file)"
    ]


# -- the clock ---------------------------------------------------------------------------------------

NOW = datetime.datetime(2026, 11, 24, 9, tzinfo=UTC)


def test_an_at_later_than_now_is_refused_in_one_line_and_the_skew_allowance_is_small() -> None:
    assert recorded_moment(None, "--at", NOW) == NOW
    assert recorded_moment("2026-11-24T09:05Z", "--at", NOW) == NOW + CLOCK_SKEW
    with pytest.raises(InputError) as caught:
        recorded_moment("2026-11-24T09:06Z", "--at", NOW)
    assert str(caught.value) == (
        "--at 2026-11-24 09:06 UTC is later than now (2026-11-24 09:00 UTC) by more than the 5m clock-skew allowance: "
        "fleet.yaml records when a wave happened, and the soak counts from it"
    )
    assert recorded_moment("2026-11-20T09:00Z", "--at", NOW) < NOW  # the past: when a merge happened


def test_a_record_time_in_the_future_is_an_error_at_its_line() -> None:
    applied = apply_wave(load_fleet_text(TEXT.encode()), 1, {"driver": Version("550.90.07")}, NOW + datetime.timedelta(hours=1))
    fleet = load_fleet_text(applied.encode()).fleet
    assert future_records(fleet, NOW + datetime.timedelta(hours=1)) == []
    found = future_records(fleet, NOW)
    assert [f.path for f in found] == [("upgrade", "waves", 0, "appliedAt")]
    assert found[0].message.startswith("2026-11-24 10:00:00 UTC is later than now (2026-11-24 09:00:00 UTC)")


def test_validate_and_apply_refuse_a_future_time_on_the_real_cli(tmp_path: Path, cli_run: Run) -> None:
    ahead = (datetime.datetime.now(UTC) + datetime.timedelta(days=2)).strftime("%Y-%m-%dT%H:%MZ")
    done = cli_run("upgrade", "apply", "--wave", "1", "--set", "driver=550.90.07", "--at", ahead, "--no-render", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (tmp_path / "fleet.yaml").write_text(TEXT)
    done = cli_run("upgrade", "apply", "--wave", "1", "--set", "driver=550.90.07", "--at", ahead, "--no-render", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "later than now" in done.stderr, done.stderr
    assert (tmp_path / "fleet.yaml").read_text() == TEXT
    record = apply_wave(load_fleet_text(TEXT.encode()), 1, {"driver": Version("550.90.07")}, datetime.datetime.fromisoformat(ahead))
    (tmp_path / "fleet.yaml").write_text(record)
    done = cli_run("validate", cwd=tmp_path)
    line = line_of(record, "appliedAt: '")
    assert done.returncode == 1
    assert any(
        text.startswith(f"fleet.yaml:{line}:") and "upgrade.waves[0].appliedAt: " in text and "later than now" in text
        for text in done.stderr.splitlines()
    ), done.stderr


def test_every_patch_the_facts_name_is_of_its_own_minor() -> None:
    rows = facts().kubernetes_releases
    assert all(row.patch is None or (row.patch.minor == row.kubernetes.minor and len(row.patch.parts) == 3) for row in rows)
    assert sum(row.patch is not None for row in rows) >= len(rows) - 2  # only minors newer than the data's patches lack one


def test_verify_through_a_context_sees_the_nodes_now_so_an_earlier_at_is_refused(tmp_path: Path, cli_run: Run) -> None:
    (tmp_path / "fleet.yaml").write_text(TEXT)
    done = cli_run("upgrade", "verify", "--wave", "1", "--context", "dev-eastus=dev", "--at", "2025-01-01T00:00Z", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "fleetgen: --at: with --context the nodes are seen now; --at names when a --live dump was taken\n",
    )


def test_a_wave_is_never_recorded_before_the_one_it_follows_even_with_an_override() -> None:
    plannable = replace_once(TEXT, "gpuOperator: {version: v24.3.0}", "gpuOperator: {enabled: false}")
    wave1 = apply_wave(load_fleet_text(plannable.encode()), 1, {"driver": Version("560.35.03")}, NOW)
    with pytest.raises(PlanRefused) as caught:
        apply_wave(load_fleet_text(wave1.encode()), 2, None, NOW - datetime.timedelta(hours=1), override_soak="urgent")
    assert [f.message for f in caught.value.findings] == ["--at 2026-11-24T08:00:00Z is before wave 1 was applied (2026-11-24T09:00:00Z)"]

"""Canary upgrade plans, wave application with minimal fleet.yaml diffs, and status."""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import yaml
from conftest import EXAMPLE, replace_once
from node_dumps import evidence_files, verified, wave_evidence

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import FindingsError
from fleetgen.model import Fleet, Version
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.plan import Plan, PlanRefused, plan_upgrade, step_label
from fleetgen.upgrade.status import upgrade_status

Run = Callable[..., CompletedProcess[str]]
UTC = datetime.UTC
# The example with its GPU Operator off: its v24.3.0 supports no driver above 550.90.07, so a plan to 560.35.03 is
# refused there (tests/test_upgrade_operator.py). The waves, soaks and records tested here do not depend on it.
PLANNABLE = replace_once(EXAMPLE.read_text(), "gpuOperator: {version: v24.3.0}", "gpuOperator: {enabled: false}")
EXAMPLE_FLEET = load_fleet_text(PLANNABLE.encode()).fleet


def waves_of(plan: Plan) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(step_label(w.step), w.stage, w.clusters) for w in plan.waves]


def refusal(fleet: Fleet, **target: str) -> list[str]:
    with pytest.raises(PlanRefused) as caught:
        plan_upgrade(fleet, {k: Version(v) for k, v in target.items()})
    return [f.message for f in caught.value.findings]


def test_driver_bump_puts_dev_first_and_never_both_halves_of_a_dr_pair_together() -> None:
    """The production canary is the cluster outside the DR pair; the pair's halves then move one at a time."""
    plan = plan_upgrade(EXAMPLE_FLEET, {"driver": Version("560.35.03")}, datetime.datetime(2026, 11, 24, 9, tzinfo=UTC))
    assert waves_of(plan) == [
        ("driver 560.35.03", "canary (dev)", ("dev-eastus",)),
        ("driver 560.35.03", "production canary", ("training-eastus",)),
        ("driver 560.35.03", "production", ("prod-inference-eastus",)),
        ("driver 560.35.03", "production", ("prod-inference-westeu",)),
    ]
    assert [w.start for w in plan.waves] == [datetime.datetime(2026, 11, d, 9, tzinfo=UTC) for d in (24, 26, 28, 30)]
    assert plan.eta == datetime.datetime(2026, 12, 2, 9, tzinfo=UTC)


def test_cuda_bump_implies_a_driver_bump_first_and_images_move_together() -> None:
    plan = plan_upgrade(EXAMPLE_FLEET, {"cuda": Version("12.6"), "cudnn": Version("9.3.0")})
    assert plan.implied == ["CUDA 12.6 needs driver 560.28.03 or later: the driver moves first"]
    assert waves_of(plan) == [
        ("driver 560.28.03", "canary (dev)", ("dev-eastus",)),
        ("driver 560.28.03", "production canary", ("training-eastus",)),
        ("driver 560.28.03", "production", ("prod-inference-eastus",)),
        ("driver 560.28.03", "production", ("prod-inference-westeu",)),
        ("cuda 12.6, cudnn 9.3.0", "production canary", ("training-eastus",)),  # dev already runs 12.6
        ("cuda 12.6, cudnn 9.3.0", "production", ("prod-inference-eastus",)),
        ("cuda 12.6, cudnn 9.3.0", "production", ("prod-inference-westeu",)),
    ]


def test_kubernetes_moves_one_minor_at_a_time_and_dev_stays_within_one_minor() -> None:
    plan = plan_upgrade(EXAMPLE_FLEET, {"kubernetes": Version("1.31.2")})
    assert waves_of(plan) == [  # 1.30 is crossed at the patch release the facts name (its final one), never a bare minor
        ("kubernetes 1.30.14", "production canary", ("training-eastus",)),
        ("kubernetes 1.30.14", "production", ("prod-inference-eastus",)),
        ("kubernetes 1.30.14", "production", ("prod-inference-westeu",)),
        ("kubernetes 1.31.2", "canary (dev)", ("dev-eastus",)),
        ("kubernetes 1.31.2", "production canary", ("training-eastus",)),
        ("kubernetes 1.31.2", "production", ("prod-inference-eastus",)),
        ("kubernetes 1.31.2", "production", ("prod-inference-westeu",)),
    ]


def test_an_impossible_target_is_refused_with_the_rule() -> None:
    assert refusal(EXAMPLE_FLEET, kubernetes="1.36.0")[0] == (
        "prod-inference-eastus after kubernetes 1.36.0: containerd 1.7 is not supported on Kubernetes 1.36 "
        "(supported: 2.3.0+, 2.2.0+) [containerd RELEASES.md, Kubernetes support]"
    )
    with pytest.raises(PlanRefused) as caught:  # asked for, the downgrade is judged by the rules like any other state
        plan_upgrade(EXAMPLE_FLEET, {"driver": Version("520.61.05")}, allow_downgrade=True)
    assert caught.value.findings[0].message.startswith(
        "prod-inference-eastus after driver 520.61.05: driver 520.61.05 is too old for CUDA 12.4: it needs 550.54.14 or later"
    )
    assert refusal(EXAMPLE_FLEET, kubernetes="1.28.0")[0] == "prod-inference-eastus: Kubernetes cannot be downgraded (1.29.4 -> 1.28.0)"


def test_every_intermediate_state_is_checked_not_only_the_end() -> None:
    """containerd 2.0 supports Kubernetes 1.31, the end state, but not 1.29, where it lands first."""
    reasons = refusal(EXAMPLE_FLEET, containerd="2.0.0", kubernetes="1.31.0")
    assert reasons[0].startswith("prod-inference-eastus after containerd 2.0.0: containerd 2.0.0 is not supported on Kubernetes 1.29")


def dr_fleet(pairs: int, cap: int) -> Fleet:
    """The example with `pairs` DR pairs of production clusters instead of its own clusters."""
    data = yaml.safe_load(PLANNABLE)
    template = data["clusters"][1]  # prod-inference-westeu: a production cluster with pools
    clusters = []
    for i in range(pairs):
        for side, other in (("a", "b"), ("b", "a")):
            clusters.append({**template, "name": f"prod-{i}-{side}", "drPartner": f"prod-{i}-{other}"})
    clusters.append({**data["clusters"][3]})  # dev-eastus
    data["clusters"] = clusters
    data["teams"] = []
    data["rollout"] = {"maxWaveSize": cap}
    data.pop("cloudAccounts")  # it names the example's clusters, which this fleet replaces
    return load_fleet_text(yaml.safe_dump(data).encode()).fleet


@pytest.mark.parametrize(("pairs", "cap"), [(4, 2), (5, 3), (6, 8)])
def test_dr_partners_never_share_a_wave_even_with_more_pairs_than_waves(pairs: int, cap: int) -> None:
    fleet = dr_fleet(pairs, cap)
    plan = plan_upgrade(fleet, {"driver": Version("560.35.03")})
    partner = {c.name: c.dr_partner for c in fleet.clusters if c.environment == "production"}
    production_waves = [w for w in plan.waves if w.stage.startswith("production")]
    assert plan.waves[0].clusters == ("dev-eastus",)
    assert production_waves[0].stage == "production canary" and len(production_waves[0].clusters) == 1
    for wave in production_waves:
        assert len(wave.clusters) <= cap
        assert not any(partner[c] in wave.clusters for c in wave.clusters), wave
    moved = [c for w in production_waves for c in w.clusters]
    assert sorted(moved) == sorted(partner) and len(moved) == len(set(moved))


def test_waves_start_only_inside_windows_and_never_in_a_freeze() -> None:
    text = PLANNABLE + (
        "\nrollout:\n  soak: 24h\n  windows: [{days: [tue, wed, thu], start: '09:00', end: '16:00'}]\n"
        "  freezes: [{start: 2026-11-26, end: 2026-11-30, reason: holiday}]\n"
    )
    fleet = load_fleet_text(text.encode()).fleet
    # Monday 2026-11-23 20:00: the window first opens Tuesday 09:00
    plan = plan_upgrade(fleet, {"driver": Version("560.35.03")}, datetime.datetime(2026, 11, 23, 20, tzinfo=UTC))
    assert [w.start for w in plan.waves] == [
        datetime.datetime(2026, 11, 24, 9, tzinfo=UTC),  # Tuesday
        datetime.datetime(2026, 11, 25, 9, tzinfo=UTC),  # Wednesday, after 24h soak
        datetime.datetime(2026, 12, 1, 9, tzinfo=UTC),  # Thursday is frozen; next window Tuesday after the freeze
        datetime.datetime(2026, 12, 2, 9, tzinfo=UTC),
    ]
    assert plan.eta == datetime.datetime(2026, 12, 3, 9, tzinfo=UTC)


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


AT = datetime.datetime(2026, 11, 24, 9, tzinfo=UTC)


def test_apply_wave_1_changes_only_the_lines_it_must() -> None:
    before = PLANNABLE
    after = apply_wave(load_fleet_text(before.encode()), 1, {"driver": Version("560.35.03")}, AT)
    assert changed_lines(before, after) == [
        "-    driver: 550.90.07",
        "+    driver: 560.35.03",
        "+",
        "+# Written by `fleetgen upgrade apply`, one line a wave; `fleetgen upgrade status` reads it.",
        "+# Set a wave's appliedAt to the time its pull request merged if that was later.",
        "+upgrade:",
        "+  target: {driver: 560.35.03}",
        "+  waves:",
        "+    - {wave: 1, step: {driver: 560.35.03}, clusters: [dev-eastus], appliedAt: '2026-11-24T09:00:00Z'}",
        "+    - {wave: 2, step: {driver: 560.35.03}, clusters: [training-eastus]}",
        "+    - {wave: 3, step: {driver: 560.35.03}, clusters: [prod-inference-eastus]}",
        "+    - {wave: 4, step: {driver: 560.35.03}, clusters: [prod-inference-westeu]}",
    ]


def test_apply_later_waves_in_order_with_minimal_diffs() -> None:
    wave1 = verified(apply_wave(load_fleet_text(PLANNABLE.encode()), 1, {"driver": Version("560.35.03")}, AT), 1, AT)
    evidence = wave_evidence(load_fleet_text(wave1.encode()).fleet, 1)
    wave2 = apply_wave(load_fleet_text(wave1.encode()), 2, None, AT + datetime.timedelta(days=2), evidence=evidence)
    assert sorted(changed_lines(wave1, wave2)) == sorted(
        [  # the new set goes right after prod-2024q4
            "+  prod-2024q4-w2:",
            "+    kubernetes: 1.29.4",
            "+    driver: 560.35.03",
            '+    cuda: "12.4"',
            "+    cudnn: 9.1.0",
            '+    containerd: "1.7"',
            "-    versionSet: prod-2024q4",
            "+    versionSet: prod-2024q4-w2",
            "-    - {wave: 2, step: {driver: 560.35.03}, clusters: [training-eastus]}",
            "+    - {wave: 2, step: {driver: 560.35.03}, clusters: [training-eastus], appliedAt: '2026-11-26T09:00:00Z'}",
        ]
    )
    assert "  prod-2024q4-w2:\n    kubernetes: 1.29.4\n    driver: 560.35.03" in wave2
    wave2 = verified(wave2, 2, AT + datetime.timedelta(days=2))
    evidence = wave_evidence(load_fleet_text(wave2.encode()).fleet, 2)
    wave3 = apply_wave(load_fleet_text(wave2.encode()), 3, None, AT + datetime.timedelta(days=4), evidence=evidence)
    assert "-    versionSet: prod-2024q4\n+    versionSet: prod-2024q4-w2" in "\n".join(changed_lines(wave2, wave3))
    wave3 = verified(wave3, 3, AT + datetime.timedelta(days=4))
    evidence = wave_evidence(load_fleet_text(wave3.encode()).fleet, 3)
    wave4 = apply_wave(load_fleet_text(wave3.encode()), 4, None, AT + datetime.timedelta(days=6), evidence=evidence)
    assert changed_lines(wave3, wave4)[:2] == ["-    driver: 550.54.15", "+    driver: 560.35.03"]
    final = load_fleet_text(wave4.encode())
    assert final.fleet.upgrade is not None and final.fleet.upgrade.complete
    assert {str(final.fleet.version_sets[c.version_set].driver) for c in final.fleet.clusters} == {"560.35.03"}
    assert not [w for w in final.warnings if "production clusters must run identical" in w.message]


def test_apply_refuses_waves_out_of_order_or_twice() -> None:
    with pytest.raises(PlanRefused, match="wave 1 is not in fleet.yaml yet"):
        apply_wave(load_fleet_text(PLANNABLE.encode()), 2, {"driver": Version("560.35.03")}, AT)
    wave1 = apply_wave(load_fleet_text(PLANNABLE.encode()), 1, {"driver": Version("560.35.03")}, AT)
    with pytest.raises(PlanRefused, match="wave 1 is already in fleet.yaml"):
        apply_wave(load_fleet_text(wave1.encode()), 1, None, AT)
    with pytest.raises(PlanRefused, match="wave 2 is not in fleet.yaml yet: apply and merge it before wave 3"):
        apply_wave(load_fleet_text(wave1.encode()), 3, None, AT)
    reverted = replace_once(wave1, '    driver: 560.35.03\n    cuda: "12.6"', '    driver: 550.90.07\n    cuda: "12.6"')
    with pytest.raises(PlanRefused, match="dev-eastus runs driver 550.90.07, not 560.35.03"):
        apply_wave(load_fleet_text(reverted.encode()), 2, None, AT)
    with pytest.raises(FindingsError, match="an upgrade is in progress"):
        plan_upgrade(load_fleet_text(wave1.encode()).fleet, {"cuda": Version("12.6")})


def test_status_says_where_the_upgrade_stands() -> None:
    """The soak counts from when the wave was seen done on its nodes, not from when it was applied."""
    applied = apply_wave(load_fleet_text(PLANNABLE.encode()), 1, {"driver": Version("560.35.03")}, AT)
    status = upgrade_status(load_fleet_text(applied.encode()).fleet, AT + datetime.timedelta(hours=30))
    assert status is not None
    assert (status.applied, status.unverified, status.soak_ends, status.soaking) == (1, 1, None, False)
    wave1 = load_fleet_text(verified(applied, 1, AT + datetime.timedelta(hours=6)).encode()).fleet
    status = upgrade_status(wave1, AT + datetime.timedelta(hours=30))
    assert status is not None
    assert (status.applied, status.waves_total, status.next_wave, status.soaking, status.unverified) == (1, 4, 2, True, None)
    assert status.soak_ends == AT + datetime.timedelta(hours=54)
    behind = {c.cluster: c.behind for c in status.clusters}
    assert behind["dev-eastus"] == () and behind["training-eastus"] == ("driver 550.54.15 (target 560.35.03)",)
    assert upgrade_status(EXAMPLE_FLEET, AT) is None


def test_upgrade_commands_end_to_end(tmp_path: Path, cli_run: Run) -> None:
    (tmp_path / "fleet.yaml").write_text(PLANNABLE)
    assert cli_run("render").returncode == 0
    plan = cli_run("upgrade", "plan", "--set", "driver=560.35.03", "--start", "2026-11-24T09:00Z")
    assert plan.returncode == 0 and "ETA: 2026-12-02 09:00 UTC" in plan.stdout
    assert cli_run("upgrade", "plan", "--set", "kubernetes=1.36.0").returncode == 1
    assert cli_run("upgrade", "plan", "--set", "gpu=1").returncode == 2
    applied = cli_run("upgrade", "apply", "--wave", "1", "--set", "driver=560.35.03", "--at", "2026-11-24T09:00Z")
    assert applied.returncode == 0, applied.stderr
    configmap = yaml.safe_load_all((tmp_path / "clusters" / "dev-eastus" / "cluster.yaml").read_text())
    versions = next(d for d in configmap if d["kind"] == "ConfigMap")
    assert versions["metadata"] == {**versions["metadata"], "name": "fleet-versions", "namespace": "kube-public"}
    assert versions["data"]["driver"] == "560.35.03"
    assert cli_run("check").returncode == 0  # apply rendered the tree too
    status = cli_run("upgrade", "status", "--now", "2026-11-25T09:00Z")
    assert "wave 1 is applied; its soak starts when its nodes run its versions" in status.stdout
    evidence = evidence_files(tmp_path, load_fleet_text((tmp_path / "fleet.yaml").read_bytes()).fleet, 1)
    done = cli_run("upgrade", "verify", "--wave", "1", *evidence, "--at", "2026-11-24T12:00Z")
    assert done.returncode == 0 and done.stdout == "wave 1 is done on its nodes; it soaks until 2026-11-26 12:00 UTC\n", done.stderr
    assert cli_run("check").returncode == 0  # verifying changes no rendered file
    status = cli_run("upgrade", "status", "--now", "2026-11-25T09:00Z", *evidence)
    assert "wave 1 of 4 applied; wave 2 is next" in status.stdout and "(1d 3h left)" in status.stdout
    assert "nodes dev-eastus: 4 of 4 GPU nodes on driver 560.35.03: done" in status.stdout

"""What the planner decides for the fleet, and what fleet.yaml decides instead: downgrades only when asked for,
and the production canary named in `rollout.productionCanary` or chosen so that no DR primary goes first."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from conftest import EXAMPLE, REPO, findings_of, line_of, replace_once
from node_dumps import wave_evidence

from fleetgen.checks.load import load_fleet_text
from fleetgen.model import Version
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.plan import PlanRefused, plan_upgrade, step_label
from fleetgen.upgrade.verify import verify_wave

Run = Callable[..., CompletedProcess[str]]
PLANNABLE = replace_once(EXAMPLE.read_text(), "gpuOperator: {version: v24.3.0}", "gpuOperator: {enabled: false}")
DEV_AHEAD = replace_once(PLANNABLE, "driver: 550.90.07", "driver: 575.57.08")  # dev already runs a newer driver


def test_a_downgrade_is_refused_unless_asked_for() -> None:
    fleet = load_fleet_text(DEV_AHEAD.encode()).fleet
    with pytest.raises(PlanRefused) as caught:
        plan_upgrade(fleet, {"driver": Version("570.211.01")})
    assert [f.message for f in caught.value.findings] == [
        "dev-eastus: driver 575.57.08 -> 570.211.01 is a downgrade; give --allow-downgrade to plan it"
    ]
    plan = plan_upgrade(fleet, {"driver": Version("570.211.01")}, allow_downgrade=True)
    assert [(step_label(w.step), w.clusters) for w in plan.waves][:2] == [
        ("driver 570.211.01", ("dev-eastus",)),
        ("driver 570.211.01", ("training-eastus",)),
    ]


def test_downgrade_on_the_real_cli(tmp_path: Path, cli_run: Run) -> None:
    (tmp_path / "fleet.yaml").write_text(DEV_AHEAD)
    refused = cli_run("upgrade", "plan", "--set", "driver=570.211.01")
    assert refused.returncode == 1 and "is a downgrade; give --allow-downgrade to plan it" in refused.stderr
    asked = cli_run("upgrade", "plan", "--set", "driver=570.211.01", "--allow-downgrade")
    assert asked.returncode == 0, asked.stderr
    applied = cli_run("upgrade", "apply", "--wave", "1", "--set", "driver=570.211.01", "--no-render", "--at", "2026-11-24T09:00Z")
    assert applied.returncode == 1 and "--allow-downgrade" in applied.stderr
    applied = cli_run(
        "upgrade", "apply", "--wave", "1", "--set", "driver=570.211.01", "--allow-downgrade", "--no-render", "--at", "2026-11-24T09:00Z"
    )
    assert applied.returncode == 0, applied.stderr
    assert "driver: 570.211.01" in (tmp_path / "fleet.yaml").read_text()


def canary(text: str) -> tuple[str, ...]:
    plan = plan_upgrade(load_fleet_text(text.encode()).fleet, {"driver": Version("560.35.03")})
    return next(w.clusters for w in plan.waves if w.stage == "production canary")


def test_the_production_canary_is_never_a_dr_primary_unless_named() -> None:
    assert canary(PLANNABLE) == ("training-eastus",)  # outside the DR pair
    named = PLANNABLE + "\nrollout:\n  productionCanary: prod-inference-westeu\n"
    assert canary(named) == ("prod-inference-westeu",)
    start, end = PLANNABLE.index("  - name: training-eastus"), PLANNABLE.index("  - name: dev-eastus")
    pair_only = PLANNABLE[:start] + PLANNABLE[end:]
    pair_only = re.sub(r"      training-eastus: \{queue: [a-z-]+\}.*\n", "", pair_only).replace("      training-eastus:\n", "")
    pair_only = pair_only.replace("[prod-inference-eastus, training-eastus]", "[prod-inference-eastus]")
    pair_only = pair_only.replace("        clusters: [training-eastus]\n", "        clusters: [prod-inference-eastus]\n")
    pair_only = pair_only.replace(
        "    clusters: [prod-inference-eastus, training-eastus, dev-eastus, prod-inference-westeu]\n",
        "    clusters: [prod-inference-eastus, dev-eastus, prod-inference-westeu]\n",
    )
    assert canary(pair_only) == ("prod-inference-westeu",)  # the partner listed second, not the primary


def test_a_production_canary_that_is_not_a_production_cluster_is_an_error_at_its_line() -> None:
    text = PLANNABLE + "\nrollout:\n  productionCanary: dev-eastus\n"
    line = line_of(text, "productionCanary: dev-eastus")
    assert findings_of(text) == [
        f"{line}:21: rollout.productionCanary: dev-eastus is not a production cluster; "
        "production clusters: prod-inference-eastus, prod-inference-westeu, training-eastus"
    ]


# A MultiKueue manager without GPUs in production beside two GPU clusters: the manager is the first production
# cluster outside any DR pair, so it used to be the production canary of a driver upgrade it cannot show.
MANAGER_FLEET = (REPO / "tests" / "cases" / "multikueue-two-models" / "fleet.yaml").read_text(encoding="utf-8")


def test_a_step_that_changes_gpu_nodes_never_makes_a_cluster_without_gpus_the_canary() -> None:
    plan = plan_upgrade(load_fleet_text(MANAGER_FLEET.encode()).fleet, {"driver": Version("580.95.05")})
    assert [(w.stage, w.clusters) for w in plan.waves] == [
        ("production canary", ("training-eastus",)),
        ("production", ("training-westus2",)),
    ]
    kubernetes = plan_upgrade(load_fleet_text(MANAGER_FLEET.encode()).fleet, {"kubernetes": Version("1.35.3")})
    assert [w.clusters for w in kubernetes.waves] == [("dispatch-eastus",), ("training-eastus", "training-westus2")]


def test_a_production_canary_without_gpus_is_refused_for_a_step_that_changes_gpu_nodes() -> None:
    named = load_fleet_text((MANAGER_FLEET + "rollout: {productionCanary: dispatch-eastus}\n").encode()).fleet
    with pytest.raises(PlanRefused) as caught:
        plan_upgrade(named, {"driver": Version("580.95.05")})
    assert [f.message for f in caught.value.findings] == [
        "rollout.productionCanary: dispatch-eastus has no GPU node pools, so it cannot show a step that changes GPU nodes "
        "(driver 580.95.05); name a production cluster with GPUs: training-eastus, training-westus2"
    ]
    assert plan_upgrade(named, {"kubernetes": Version("1.35.3")}).waves[0].clusters == ("dispatch-eastus",)


def test_a_cluster_without_gpus_rides_along_in_its_version_set_when_the_last_gpu_cluster_of_it_moves() -> None:
    loaded = load_fleet_text(MANAGER_FLEET.encode())
    at = datetime.datetime(2026, 11, 24, 9, tzinfo=datetime.UTC)
    first = apply_wave(loaded, 1, {"driver": Version("580.95.05")}, at)
    assert "prod-w1:" in first
    record = load_fleet_text(first.encode())
    verified = load_fleet_text(verify_wave(record, 1, wave_evidence(record.fleet, 1), at + datetime.timedelta(hours=1))[0].encode())
    done = wave_evidence(verified.fleet, 1)
    last = load_fleet_text(apply_wave(verified, 2, None, at + datetime.timedelta(days=3), evidence=done).encode()).fleet
    assert list(last.version_sets) == ["prod"] and str(last.version_sets["prod"].driver) == "580.95.05"
    assert {c.version_set for c in last.clusters} == {"prod"}

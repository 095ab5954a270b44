"""A driver step on clusters with a driver per node pool moves pools, not clusters.

Over the generated fleets (half of them on GPU Operator v26.7 with one NVIDIADriver per pool, some clusters naming a
canary pool): in each cluster that moves pool by pool the canary pool (the one marked, else the smallest by GPUs)
moves in a wave of its own before the rest; every GPU pool that runs its cluster's driver moves exactly once, no
CPU-only pool and no pool pinned to a driver of its own ever does; the stage order holds. On the case fleet the
waves are applied and verified end to end: the canary pool runs the new driver as its own until its cluster's wave.
Over generated fleets again, drift and upgrade status warn of the same nodes left in upgrade-required at the same hour.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from generated_fleets import edited, fleet_text, fleets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from node_dumps import evidence_of, wave_evidence

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.live.drift_output import drift_json, drift_text
from fleetgen.live.node_checks import judge_nodes
from fleetgen.live.nodes import DRIVER_OWNER_LABEL as OWNER
from fleetgen.live.nodes import nodes_in
from fleetgen.model import Version
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.output import plan_json, plan_text, status_text
from fleetgen.upgrade.plan import PlanRefused, plan_upgrade
from fleetgen.upgrade.status import live_nodes
from fleetgen.upgrade.verify import verify_wave
from fleetgen.workflows.live_state import drift

STAGE_RANK = {"canary (dev)": 0, "canary (staging)": 1, "production canary": 2, "production": 3}
PER_POOL_DRIVERS = ("595.91.07", "610.57.04")  # drivers GPU Operator v26.7 lists, above the generated fleets' 580
CASE = REPO / "tests" / "cases" / "pool-drivers" / "fleet.yaml"
AT = datetime.datetime(2026, 11, 24, 9, tzinfo=datetime.UTC)


def _expected_canary(cluster: dict[str, Any]) -> str:
    moving = [p for p in cluster["nodePools"] if p["gpusPerNode"] and "version" not in p.get("driver", {})]
    marked = [p for p in moving if p.get("driver", {}).get("canary")]
    return (marked or sorted(moving, key=lambda p: p["gpusPerNode"] * p["maxNodes"]))[0]["name"]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=fleets(), driver=st.sampled_from(PER_POOL_DRIVERS))
def test_plans_move_pools_in_order_canary_pool_first_each_gpu_pool_once(generated: dict[str, Any], driver: str) -> None:
    fleet = edited(generated)
    if (
        not fleet.get("platform", {}).get("gpuOperator", {}).get("driverCrd")
    ):  # the ClusterPolicy path: the cluster is the unit (test_upgrade_gpu_waves.py)
        return
    model = load_fleet_text(fleet_text(fleet).encode()).fleet
    try:
        plan = plan_upgrade(model, {"driver": Version(driver)})
    except PlanRefused:
        return  # a driver some pool's GPU or notebook cannot take: validate's and the planner's other properties
    ranks = [STAGE_RANK[w.stage] for w in plan.waves]
    assert ranks == sorted(ranks)
    for cluster in fleet["clusters"]:
        name = cluster["name"]
        gpu = {p["name"] for p in cluster["nodePools"] if p["gpusPerNode"]}
        moving = {p["name"] for p in cluster["nodePools"] if p["gpusPerNode"] and "version" not in p.get("driver", {})}
        moved = [(w.number, m.pool, m.ref in w.ahead) for w in plan.waves for m in w.pools if m.cluster == name]
        assert sorted(pool for _, pool, _ in moved) == sorted(moving)  # each GPU pool on its cluster's driver once
        assert {pool for _, pool, _ in moved} <= gpu  # never a CPU-only pool
        ahead = [(number, pool) for number, pool, canary in moved if canary]
        if len(moving) > 1:
            assert [pool for _, pool in ahead] == [_expected_canary(cluster)]
            rest = [number for number, _, canary in moved if not canary]
            assert all(ahead[0][0] < number for number in rest)  # the canary pool soaks before the rest move
            waves = [w for w in plan.waves if name in w.clusters]
            assert [w.stage for w in waves][0] == waves[1].stage  # both in the cluster's own stage
        else:  # one pool or none to move: the cluster is the unit
            assert ahead == []


def test_the_case_fleet_moves_its_smallest_pool_first_and_names_each_pool_s_work() -> None:
    loaded = load_fleet_text(CASE.read_bytes())
    plan = plan_upgrade(loaded.fleet, {"driver": Version("610.57.04")})
    assert [(w.number, w.ahead, [m.pool for m in w.pools]) for w in plan.waves] == [
        (1, ("training-eastus/a100-small",), ["a100-small"]),
        (2, (), ["a100", "h100-ondemand"]),  # b200 keeps its own driver
    ]
    text = plan_text(plan)
    assert (
        "wave 2 pool training-eastus/h100-ondemand (128 GPUs): 16 nodes drain, 2 at a time, up to ~101h by its upgrade policy; "
        "drains the running work of gpu-cluster-queue"
    ) in text.splitlines()
    pools = [p for w in json.loads(plan_json(plan))["waves"] for p in w["pools"]]
    assert [(p["pool"], p["canary"], p["upToHours"]) for p in pools] == [
        ("a100-small", True, 25),
        ("a100", False, 76),
        ("h100-ondemand", False, 101),
    ]


def test_a_canary_pool_runs_the_new_driver_as_its_own_until_its_cluster_s_wave() -> None:
    text = CASE.read_text(encoding="utf-8").replace(
        "        labels: {accelerator: nvidia-a100, pool: a100}\n",
        "        labels: {accelerator: nvidia-a100, pool: a100}\n        driver: {canary: true}\n",
    )
    loaded = load_fleet_text(text.encode())
    first = load_fleet_text(apply_wave(loaded, 1, {"driver": Version("610.57.04")}, AT).encode())
    pools = {p.name: p for p in first.fleet.clusters[0].node_pools}
    assert pools["a100"].driver.version == Version("610.57.04") and pools["a100"].driver.canary
    assert pools["a100-small"].driver.version is None
    assert first.fleet.version_sets["prod"].driver == Version("580.173.02")
    assert first.fleet.upgrade is not None and first.fleet.upgrade.waves[0].pools == ("training-eastus/a100",)
    done, said = verify_wave(first, 1, wave_evidence(first.fleet, 1), AT + datetime.timedelta(hours=2))
    assert said.startswith("wave 1 is done on its nodes")  # on the canary pool's nodes alone
    verified = load_fleet_text(done.encode())
    later = AT + datetime.timedelta(days=3)
    second = load_fleet_text(apply_wave(verified, 2, None, later, evidence=wave_evidence(verified.fleet, 1)).encode())
    pools = {p.name: p for p in second.fleet.clusters[0].node_pools}
    assert second.fleet.version_sets["prod"].driver == Version("610.57.04")
    assert pools["a100"].driver.version is None and pools["a100"].driver.canary  # the pin goes, the choice stays
    assert pools["b200"].driver.version == Version("595.91.07")


def _first_wave() -> tuple[Any, dict[str, list[dict[str, Any]]]]:
    first = load_fleet_text(apply_wave(load_fleet_text(CASE.read_bytes()), 1, {"driver": Version("610.57.04")}, AT).encode())
    return first, wave_evidence(first.fleet, 1)


def _pool_nodes(objects: list[dict[str, Any]], pool: str) -> list[dict[str, Any]]:
    return [n for n in objects if n["kind"] == "Node" and n["metadata"]["labels"].get(OWNER) == pool]


def test_a_failed_or_skipped_node_of_the_canary_pool_holds_its_wave_and_is_named() -> None:
    first, evidence = _first_wave()
    failed, skipped = (n["metadata"] for n in _pool_nodes(evidence["training-eastus"], "a100-small"))
    failed["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-failed"
    skipped["labels"] |= {"nvidia.com/gpu-driver-upgrade.skip": "true", "nvidia.com/cuda.driver-version.full": "580.173.02"}
    with pytest.raises(PlanRefused) as caught:
        verify_wave(first, 1, evidence, AT + datetime.timedelta(hours=2))
    message = caught.value.findings[0].message
    assert f"driver upgrade failed on {failed['name']} (to retry, fix the cause, then kubectl label node {failed['name']} " in message
    assert f"left out of driver upgrades (nvidia.com/gpu-driver-upgrade.skip=true): {skipped['name']}" in message


def test_drift_names_a_node_whose_driver_another_nvidia_driver_owns_and_a_skipped_node() -> None:
    first, evidence = _first_wave()
    stray, skipped = (n["metadata"] for n in _pool_nodes(evidence["training-eastus"], "a100"))
    stray["labels"][OWNER] = "h100-ondemand"
    skipped["labels"]["nvidia.com/gpu-driver-upgrade.skip"] = "true"
    cluster = first.fleet.clusters[0]
    findings = {
        (f.severity, f.kind, f.nodes): f.message for f in judge_nodes(first.fleet, cluster, nodes_in(evidence[cluster.name])).findings
    }
    assert findings[(Severity.ERROR, "owner", (stray["name"],))] == (
        f"its driver is owned by NVIDIADriver h100-ondemand, not the pool's a100 ({OWNER})"
    )
    assert "nvidia.com/gpu-driver-upgrade.skip=true" in findings[(Severity.WARNING, "upgrade", (skipped["name"],))]


def test_a_node_left_in_upgrade_required_past_its_pool_s_policy_is_a_warning_in_the_refusal() -> None:
    first, evidence = _first_wave()  # a100-small: 2 nodes, 1 at a time, 12 h for jobs + 30 min drain + 5 min pods each
    waiting = _pool_nodes(evidence["training-eastus"], "a100-small")[0]["metadata"]
    waiting["labels"] |= {"nvidia.com/gpu-driver-upgrade-state": "upgrade-required", "nvidia.com/cuda.driver-version.full": "580.173.02"}
    for hours, named in ((20, False), (30, True)):  # the pool's two nodes may take 2 x 12h35 = 25h10
        with pytest.raises(PlanRefused) as caught:
            verify_wave(first, 1, evidence, AT + datetime.timedelta(hours=hours))
        late = [f.message for f in caught.value.findings if "still upgrade-required" in f.message]
        assert bool(late) == named, late
    assert late == [
        f"wave 1 is not done on its nodes: training-eastus: warning: {waiting['name']} of pool a100-small still upgrade-required "
        "30.0h after the wave was applied, longer than the pool's upgrade policy lets all its nodes take: see the GPU Operator's "
        "events for the node"
    ]


def test_the_move_to_one_nvidia_driver_per_pool_is_planned_as_two_steps_release_first() -> None:
    """A plan that takes a cluster on the ClusterPolicy path to a release with the NVIDIADriver path moves the release
    (driverCrd stays off) and then names the pull request of its own that turns driverCrd on, after that wave."""
    text = CASE.read_text(encoding="utf-8").replace("driverCrd: true ", "driverCrd: false")
    text = text.replace("        driver: {version: 595.91.07}   # Blackwell on the newer branch\n", "")
    text = text.replace("version: v26.7.0", "version: v25.10.1").replace("driver: 580.173.02", "driver: 580.82.07")
    plan = plan_upgrade(load_fleet_text(text.encode()).fleet, {"driver": Version("580.173.02"), "gpuOperator": Version("26.7.0")})
    assert [(w.number, dict(w.step)) for w in plan.waves] == [(1, {"driver": Version("580.173.02"), "gpuOperator": Version("26.7.0")})]
    assert [(s.after_wave, s.clusters, s.release) for s in plan.crd_switches] == [(1, ("training-eastus",), "v26.7.0")]
    lines = plan_text(plan).splitlines()
    assert lines[lines.index(next(line for line in lines if line.startswith("ETA: "))) + 1] == (
        "then, once wave 1 is done: training-eastus may move to one NVIDIADriver per GPU pool, GPU Operator v26.7.0 "
        "having the path: a pull request of its own sets platform.gpuOperator.driverCrd true (never the one that moves "
        "the release: the old controller would remove the driver pods before the new one owns them)"
    )
    assert json.loads(plan_json(plan))["driverCrdAfter"] == [{"wave": 1, "clusters": ["training-eastus"], "gpuOperator": "v26.7.0"}]
    # the second step done: nothing left to switch, and a fleet already on the path plans no such step
    done = text.replace("version: v25.10.1", "version: v26.7.0").replace("driver: 580.82.07", "driver: 580.173.02")
    assert plan_upgrade(load_fleet_text(done.encode()).fleet, {"driver": Version("595.91.07")}).crd_switches == []


def test_upgrade_status_warns_of_the_same_late_node_from_the_same_start() -> None:
    """status reads the moment the wave was applied from the upgrade record, as verify does: the same node is late at
    the same hour, and none is before the pool's policy has run out or once the wave is done."""
    first, evidence = _first_wave()
    waiting = _pool_nodes(evidence["training-eastus"], "a100-small")[0]["metadata"]
    waiting["labels"] |= {"nvidia.com/gpu-driver-upgrade-state": "upgrade-required", "nvidia.com/cuda.driver-version.full": "580.173.02"}
    late = {hours: live_nodes(first.fleet, evidence, now=AT + datetime.timedelta(hours=hours))[0].late for hours in (20, 30)}
    assert late == {
        20: (),
        30: (
            f"warning: {waiting['name']} of pool a100-small still upgrade-required 30.0h after the wave was applied, longer "
            "than the pool's upgrade policy lets all its nodes take: see the GPU Operator's events for the node",
        ),
    }
    shown = status_text(None, AT, nodes=live_nodes(first.fleet, evidence, now=AT + datetime.timedelta(hours=30)))
    assert f"  {late[30][0]}" in shown.splitlines()
    assert live_nodes(first.fleet, evidence)[0].late == ()  # no clock given: nothing to measure the wait by
    _, done = _first_wave()
    assert live_nodes(first.fleet, done, now=AT + datetime.timedelta(hours=300))[0].late == ()


def test_drift_warns_of_the_late_node_status_names_from_the_same_record(tmp_path: Path) -> None:
    """drift of a cluster in the middle of a recorded driver wave names the node status names, at the same hour, in its
    text and its JSON; before the pool's policy has run out it names none."""
    first, evidence = _first_wave()
    waiting = _pool_nodes(evidence["training-eastus"], "a100-small")[0]["metadata"]
    waiting["labels"] |= {"nvidia.com/gpu-driver-upgrade-state": "upgrade-required", "nvidia.com/cuda.driver-version.full": "580.173.02"}
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(first.source.text, encoding="utf-8")
    dump = tmp_path / "live.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": evidence["training-eastus"]}), encoding="utf-8")
    at = {hours: AT + datetime.timedelta(hours=hours) for hours in (20, 30)}
    seen = {h: drift(fleet, "training-eastus", (dump,), None, against="fleet.yaml", now=moment) for h, moment in at.items()}
    status = live_nodes(first.fleet, evidence, now=at[30])[0].late
    assert status and seen[30].nodes is not None and seen[30].nodes.late == status
    assert seen[20].nodes is not None and seen[20].nodes.late == ()
    assert f"  {status[0]}" in drift_text("training-eastus", seen[30]).splitlines()
    assert json.loads(drift_json("training-eastus", seen[30]))["nodes"]["late"] == list(status)


def _late_names(late: tuple[str, ...]) -> set[str]:
    """The nodes a late-node warning names ("warning: A, B of pool P still upgrade-required ...")."""
    return {name for line in late for name in line.removeprefix("warning: ").split(" of pool ")[0].split(", ")}


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(generated=fleets(), driver=st.sampled_from(PER_POOL_DRIVERS), data=st.data(), hours=st.integers(0, 300))
def test_drift_and_upgrade_status_name_the_same_late_nodes_of_any_generated_fleet(
    tmp_path_factory: pytest.TempPathFactory, generated: dict[str, Any], driver: str, data: st.DataObject, hours: int
) -> None:
    """Over generated fleets, on either driver path: wave 1 of a driver step applied, some of a cluster's GPU nodes still
    on the old driver in upgrade-required. drift and upgrade status, at the same hour, warn of the same nodes; they
    name only nodes left in upgrade-required, none at the moment the wave was applied, and a node late at one hour is
    late at every later one."""
    loaded = load_fleet_text(fleet_text(edited(generated)).encode())
    try:
        first = load_fleet_text(apply_wave(loaded, 1, {"driver": Version(driver)}, AT).encode())
    except PlanRefused:
        return  # nothing to move, or a driver some GPU cannot take: the planner's own properties
    evidence = wave_evidence(first.fleet, 1)
    cluster = data.draw(st.sampled_from(sorted(evidence)))
    before = {n["metadata"]["name"]: n for n in evidence_of(loaded.fleet, cluster) if n["kind"] == "Node"}
    gpu_nodes = [n["metadata"]["name"] for n in evidence[cluster] if "nvidia.com/gpu.present" in n.get("metadata", {}).get("labels", {})]
    stuck = set(data.draw(st.lists(st.sampled_from(gpu_nodes), unique=True))) if gpu_nodes else set()
    for index, item in enumerate(evidence[cluster]):
        if item["kind"] == "Node" and item["metadata"]["name"] in stuck:  # as it was before the wave, now waiting its turn
            evidence[cluster][index] = before[item["metadata"]["name"]]
            evidence[cluster][index]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-required"
    folder = tmp_path_factory.mktemp("late")
    (folder / "fleet.yaml").write_text(first.source.text, encoding="utf-8")
    dump = folder / "live.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": evidence[cluster]}), encoding="utf-8")

    def late_at(moment: datetime.datetime) -> tuple[str, ...]:
        status = next(n.late for n in live_nodes(first.fleet, evidence, now=moment) if n.cluster == cluster)
        seen = drift(folder / "fleet.yaml", cluster, (dump,), None, against="fleet.yaml", now=moment).nodes
        assert seen is not None and seen.late == status
        return status

    late_now = _late_names(late_at(AT + datetime.timedelta(hours=hours)))  # each late_at runs drift: once an hour asked
    assert late_now <= stuck
    assert late_at(AT) == ()
    assert late_now <= _late_names(late_at(AT + datetime.timedelta(hours=hours, days=400)))

"""A pull request that moves a driver on clusters with one NVIDIADriver per pool says, pool by pool, what it does to
the GPU nodes: how many drain (or only lose their GPU pods), how many at a time, and how long the pool's upgrade
policy lets it take. Over the generated fleets: one such line for each GPU pool on its cluster's driver, none for a
CPU-only pool or a pool with a driver of its own."""

from __future__ import annotations

from typing import Any

from conftest import REPO
from generated_fleets import edited, fleet_text, fleets
from hypothesis import HealthCheck, given, settings

from fleetgen.checks.load import load_fleet_text
from fleetgen.review.changes import fleet_changes

CASE = (REPO / "tests" / "cases" / "pool-drivers" / "fleet.yaml").read_text(encoding="utf-8")


def _pool_lines(base: str, head: str) -> list[str]:
    changes = fleet_changes(load_fleet_text(base.encode()).fleet, load_fleet_text(head.encode()).fleet)
    return [c.text for c in changes if c.text.startswith("driver ")]


def test_a_driver_change_names_each_pool_its_nodes_parallelism_and_time() -> None:
    head = CASE.replace("driver: 580.173.02", "driver: 610.57.04")
    assert _pool_lines(CASE, head) == [
        "driver 580.173.02 -> 610.57.04 on pool a100-small of training-eastus: 2 nodes drain, 1 at a time, up to ~25h by its upgrade policy",
        "driver 580.173.02 -> 610.57.04 on pool a100 of training-eastus: 6 nodes drain, 1 at a time, up to ~76h by its upgrade policy",
        "driver 580.173.02 -> 610.57.04 on pool h100-ondemand of training-eastus: 16 nodes drain, 2 at a time, up to ~101h by its upgrade policy",
    ]
    undrained = head.replace("drain: {timeoutSeconds: 1800}", "drain: {enabled: false}")
    undrained = undrained.replace("waitForCompletion: {timeoutSeconds: 43200}", "waitForCompletion: {timeoutSeconds: 0}")
    assert _pool_lines(CASE, undrained)[0] == (
        "driver 580.173.02 -> 610.57.04 on pool a100-small of training-eastus: 2 nodes have their GPU pods deleted, no drain, "
        "1 at a time, no bound: it waits for running jobs"
    )


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=fleets())
def test_each_gpu_pool_on_its_cluster_s_driver_gets_one_line(generated: dict[str, Any]) -> None:
    base = edited(generated)
    if not base.get("platform", {}).get("gpuOperator", {}).get("driverCrd"):  # the ClusterPolicy path: the cluster's driver line alone
        return
    head = edited(generated)
    head["versionSets"]["current"]["driver"] = "595.91.07"
    lines = _pool_lines(fleet_text(base), fleet_text(head))
    expected = [
        f"on pool {p['name']} of {c['name']}:"
        for c in base["clusters"]
        if c["versionSet"] == "current"  # the set the change moves
        for p in c["nodePools"]
        if p["gpusPerNode"] and p.get("driver", {}).get("version") in (None,)
    ]
    assert [line.split(": ")[0].split(" -> 595.91.07 ")[1] + ":" for line in lines] == expected


def _on_cluster_policy(text: str, release: str) -> str:
    """The case fleet before the switch: the ClusterPolicy manages the driver, on `release`, no pool on its own driver."""
    text = text.replace("driverCrd: true ", "driverCrd: false").replace(
        "        driver: {version: 595.91.07}   # Blackwell on the newer branch\n", ""
    )
    return text.replace("version: v26.7.0", f"version: {release}")


def _warnings(base: str, head: str) -> list[str]:
    changes = fleet_changes(load_fleet_text(base.encode()).fleet, load_fleet_text(head.encode()).fleet)
    return [c.warning for c in changes if c.warning and "driverCrd" in c.warning]


def test_turning_driver_crd_on_with_a_new_operator_release_in_one_change_is_a_warning_to_split_it() -> None:
    head = CASE.replace("        driver: {version: 595.91.07}   # Blackwell on the newer branch\n", "")
    assert _warnings(_on_cluster_policy(CASE, "v26.7.0"), head) == []  # the second of the two Helm upgrades
    base = _on_cluster_policy(CASE, "v25.10.1").replace("driver: 580.173.02", "driver: 580.82.07")
    assert _warnings(base, head) == [
        "cluster training-eastus: this change moves the GPU Operator v25.10.1 -> v26.7.0 and turns driverCrd on at once; the old "
        "controller would remove the driver pods before the new one owns them: split it, first the release with driverCrd false, "
        "then, once v26.7.0 runs, driverCrd true"
    ]


def test_a_change_of_the_driver_pods_metadata_alone_is_an_in_place_restart_a_version_change_drains() -> None:
    pool = "labels: {accelerator: nvidia-a100, pool: a100}"
    head = CASE.replace(pool, pool + "\n        driver: {podAnnotations: {prometheus.io/scrape: 'true'}}")
    assert _pool_lines(CASE, head) == [
        "driver pod annotations on pool a100 of training-eastus: in-place restart, no drain (the driver pods of its 6 nodes "
        "restart with the new metadata)"
    ]
    labelled = head.replace("{podAnnotations:", "{podLabels: {team: llm}, podAnnotations:")
    assert _pool_lines(head, labelled) == [
        "driver pod labels on pool a100 of training-eastus: in-place restart, no drain (the driver pods of its 6 nodes restart "
        "with the new metadata)"
    ]
    both = labelled.replace("driver: 580.173.02", "driver: 610.57.04")  # a new driver as well: the pods are replaced, nodes drain
    lines = _pool_lines(CASE, both)
    assert [line.split(": ")[0] for line in lines] == [
        f"driver 580.173.02 -> 610.57.04 on pool {name} of training-eastus" for name in ("a100-small", "a100", "h100-ondemand")
    ]
    assert all("nodes drain" in line for line in lines)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=fleets())
def test_new_driver_pod_metadata_on_every_gpu_pool_is_one_in_place_line_each_and_no_drain(generated: dict[str, Any]) -> None:
    base = edited(generated)
    head = edited(generated)
    per_pool = base.get("platform", {}).get("gpuOperator", {}).get("driverCrd") is True
    for cluster in head["clusters"]:
        for pool in cluster["nodePools"]:
            if pool["gpusPerNode"]:
                pool["driver"] = {**pool.get("driver", {}), "podLabels": {"fleetgen.test/restarted": "yes"}}
    lines = _pool_lines(fleet_text(base), fleet_text(head))
    expected = [
        f"driver pod labels on pool {p['name']} of {c['name']}: in-place restart, no drain"
        for c in base["clusters"]
        for p in c["nodePools"]
        if per_pool and p["gpusPerNode"] and p.get("driver", {}).get("podLabels") != {"fleetgen.test/restarted": "yes"}
    ]
    assert [line.split(" (")[0] for line in lines] == expected

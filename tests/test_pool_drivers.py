"""A driver per GPU node pool: GPU Operator v26.7 manages the driver with one NVIDIADriver per pool.

The case fleet tests/cases/pool-drivers has one cluster whose pools run two driver branches. Its NVIDIADrivers pass
the upstream CRD and its CEL rule, its chart values land in the vendored v26.7.0 chart, every refusal of a pool's
driver is pinned to its line, and over the generated fleets no two NVIDIADrivers select one node while every GPU pool
has its own.
"""

from __future__ import annotations

import datetime
from typing import Any

import test_helm_charts as charts
from conftest import REPO, findings_of, line_of, replace_once
from generated_fleets import fleet_text, fleets
from hypothesis import HealthCheck, given, settings
from node_dumps import evidence_of, wave_evidence

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.live.node_checks import judge_nodes
from fleetgen.live.nodes import nodes_in
from fleetgen.model import Fleet, Version
from fleetgen.render import cluster_objects
from fleetgen.render.nvidia_drivers import KUEUE_POD_SELECTOR
from fleetgen.render.platform import RELEASES, add_ons, helm_values
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.verify import verify_wave
from fleetgen.validation.cel_rules import CelRules
from fleetgen.validation.rendered_objects import Schemas, object_problems

CASE = REPO / "tests" / "cases" / "pool-drivers"
TEXT = (CASE / "fleet.yaml").read_text(encoding="utf-8")
CRD = ("nvidia.com/v1alpha1", "NVIDIADriver")
helm = charts.helm  # the session fixture that runs the real `helm template` on the vendored charts


def _fleet(text: str = TEXT) -> Fleet:
    return load_fleet_text(text.encode()).fleet


def _drivers(fleet: Fleet, index: int = 0) -> dict[str, dict[str, Any]]:
    return {m.body["metadata"]["name"]: m.body for m in cluster_objects(fleet, index) if m.body["kind"] == "NVIDIADriver"}


def _selects(selector: dict[str, str], node_labels: dict[str, str]) -> bool:
    return all(node_labels.get(k) == v for k, v in selector.items())


def test_each_gpu_pool_gets_an_nvidia_driver_with_its_driver_and_policy() -> None:
    drivers = _drivers(_fleet())
    assert sorted(drivers) == ["a100", "a100-small", "b200", "h100-ondemand"]
    assert {name: d["spec"]["version"] for name, d in drivers.items()} == {
        "a100": "580.173.02",
        "a100-small": "580.173.02",
        "b200": "595.91.07",  # its own branch
        "h100-ondemand": "580.173.02",
    }
    h100 = drivers["h100-ondemand"]["spec"]
    assert h100["nodeSelector"] == {"accelerator": "nvidia-h100"} and h100["default"] is False
    policy = h100["upgradePolicy"]
    assert (policy["maxParallelUpgrades"], policy["maxUnavailable"]) == (2, 2)  # the pool's own fields
    assert policy["drain"]["timeoutSeconds"] == 1800  # the fleet's
    assert policy["waitForCompletion"] == {"timeoutSeconds": 43200, "podSelector": KUEUE_POD_SELECTOR}
    assert drivers["a100"]["spec"]["upgradePolicy"]["maxParallelUpgrades"] == 1


def test_the_rendered_drivers_pass_the_upstream_crd_and_its_cel_rule(crd_schemas: dict[tuple[str, str], dict[str, Any]]) -> None:
    schemas = Schemas(crds=crd_schemas)
    lookup = schemas.lookup(*CRD, _fleet().version_sets["prod"].kubernetes)
    for body in _drivers(_fleet()).values():
        assert list(object_problems(lookup, body, strict=True)) == []
    rules = CelRules(crd_schemas[CRD])
    default = {**next(iter(_drivers(_fleet()).values())), "spec": {"default": True, "driverType": "gpu", "image": "driver"}}
    assert list(rules.check(default)) == []  # a default one without a selector is what the rule allows
    default["spec"]["nodeSelector"] = {"pool": "a100"}
    assert [m for _, m in rules.check(default)] == ["default NVIDIADriver must not use nodeSelector"]


def test_the_chart_values_switch_to_the_crd_and_land_in_the_v26_7_chart(helm: Any) -> None:
    fleet = _fleet()
    [(name, addon, _)] = [a for a in add_ons(fleet, 0) if a[0] == "gpuOperator"]
    values = helm_values(fleet, 0, name, addon)
    assert values["driver"] == {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False}}
    objects = helm(charts.CHART_FOLDERS[(addon.chart, addon.version)], RELEASES[name], addon.namespace, values, "1.35.2")
    assert charts._landed(name, values, objects, RELEASES[name]) == []
    assert not [o for o in objects if o["kind"] == "NVIDIADriver"]  # the chart's default one stays out: ours select the pools


def test_the_move_to_the_crd_takes_two_helm_upgrades_and_a_release_before_it_keeps_the_cluster_policy() -> None:
    # first upgrade: v26.7.0 with the ClusterPolicy still managing the one driver (driverCrd left out)
    first = TEXT.replace("    driverCrd: true", "    driverCrd: false").replace("driver: {version: 595.91.07}", "")
    assert _drivers(_fleet(first)) == {}
    [(name, addon, _)] = [a for a in add_ons(_fleet(first), 0) if a[0] == "gpuOperator"]
    assert helm_values(_fleet(first), 0, name, addon)["driver"]["version"] == "580.173.02"  # the ClusterPolicy's driver
    warned = findings_of(first, Severity.WARNING)
    assert any("driver.upgrade: ignored on training-eastus: platform.gpuOperator.driverCrd is not true" in w for w in warned), warned
    # a release before the CRD path: driverCrd is refused at its line, a pool's own driver at its
    older = replace_once(TEXT, "version: v26.7.0", "version: v25.10.1").replace("driver: 580.173.02", "driver: 580.105.08")
    found = findings_of(older)
    assert found[0] == (
        f"{line_of(older, 'driverCrd: true')}:16: platform.gpuOperator.driverCrd: GPU Operator v25.10.1 on training-eastus has no "
        "NVIDIADriver per node pool fleetgen renders (v26.7 and later); move the cluster to such a release with driverCrd false "
        "first, then set it true"
    )
    assert found[1].startswith(
        f"{line_of(older, 'driver: {version: 595.91.07}')}:27: clusters[0].nodePools[3].driver.version: node pool b200 cannot run "
        "a driver of its own on training-eastus: "
    )
    assert len(found) == 2


def test_a_pool_driver_is_checked_for_its_gpu_cuda_and_operator_release() -> None:
    unlisted = TEXT.replace("driver: {version: 595.91.07}", "driver: {version: 590.48.01}")
    line = line_of(unlisted, "driver: {version: 590.48.01}")
    assert findings_of(unlisted) == [
        f"{line}:27: clusters[0].nodePools[3].driver.version: driver 590.48.01 of node pool b200 is not supported by GPU Operator "
        "v26.7.0 (it supports 610.57.04, 595.91.07, 580.173.02, 535.309.01)"
    ]
    old = TEXT.replace("driver: {version: 595.91.07}", "driver: {version: 535.309.01}")
    found = findings_of(old)
    assert found and all(f.startswith(f"{line}:27: clusters[0].nodePools[3].driver.version: on node pool b200 (B200): ") for f in found)
    assert any("B200 needs driver 570.133.20 or later" in f for f in found) and any("CUDA 13.0" in f for f in found), found


def test_a_cpu_pool_has_no_driver() -> None:
    cpu = "      - {name: system, vmSize: Standard_D8s_v5, gpusPerNode: 0, cpuPerNode: 7, memoryPerNode: 28Gi, maxNodes: 3,\n"
    cpu += "         scaling: on-demand, labels: {pool: system}, driver: {version: 595.91.07}}\n"
    with_cpu = TEXT.replace("    nodePools:\n", "    nodePools:\n" + cpu, 1)
    assert findings_of(with_cpu) == [
        f"{line_of(with_cpu, 'driver: {version: 595.91.07}}')}:54: clusters[0].nodePools[0].driver: node pool system has no GPUs (gpusPerNode: 0): "
        "it has no driver to set"
    ]


def _pool_nodes(fleet: Fleet, index: int) -> dict[str, dict[str, str]]:
    """A node of each pool of the cluster, labelled as the pool's labels say (its cloud adds others)."""
    return {pool.name: {**pool.labels, "kubernetes.io/hostname": f"{pool.name}-0"} for pool in fleet.clusters[index].node_pools}


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=fleets())
def test_no_two_drivers_select_one_node_and_every_gpu_pool_has_its_own(generated: dict[str, Any]) -> None:
    fleet = load_fleet_text(fleet_text(generated).encode()).fleet
    per_pool = generated.get("platform", {}).get("gpuOperator", {}).get("driverCrd") is True  # the fleet's operator manages NVIDIADrivers
    for index, cluster in enumerate(fleet.clusters):
        drivers = _drivers(fleet, index)
        if not per_pool:
            assert drivers == {}
            continue
        for pool_name, labels in _pool_nodes(fleet, index).items():
            owners = [name for name, d in drivers.items() if _selects(d["spec"]["nodeSelector"], labels)]
            pool = next(p for p in cluster.node_pools if p.name == pool_name)
            assert owners == ([pool_name] if pool.gpus_per_node else []), (pool_name, owners)
            if pool.gpus_per_node:
                want = pool.driver.version or fleet.version_sets[cluster.version_set].driver
                assert drivers[pool_name]["spec"]["version"] == str(want)
        assert not any(d["spec"]["default"] for d in drivers.values())


def test_a_driver_wave_is_done_when_each_pool_runs_its_driver_a_pinned_pool_its_own() -> None:
    loaded = load_fleet_text(TEXT.encode())
    at = datetime.datetime(2026, 11, 24, 9, tzinfo=datetime.UTC)
    record = load_fleet_text(apply_wave(loaded, 1, {"driver": Version("610.57.04")}, at).encode())
    evidence = wave_evidence(record.fleet, 1)  # the b200 nodes stay on 595.91.07, the pool's own driver
    b200 = [n for n in evidence["training-eastus"] if n["kind"] == "Node" and n["metadata"]["labels"].get("accelerator") == "nvidia-b200"]
    assert b200 and {n["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] for n in b200} == {"595.91.07"}
    _, said = verify_wave(record, 1, evidence, at + datetime.timedelta(hours=2))
    assert said.startswith("wave 1 is done on its nodes")


def test_the_nodes_of_a_pinned_pool_are_judged_by_its_own_driver() -> None:
    fleet = _fleet()
    nodes = nodes_in(evidence_of(fleet, "training-eastus"))
    assert {n.driver for n in nodes if n.labels.get("accelerator") == "nvidia-b200"} == {Version("595.91.07")}
    assert [f for f in judge_nodes(fleet, fleet.clusters[0], nodes).findings if f.kind == "version"] == []


def test_two_canary_pools_in_one_cluster_are_refused_at_the_second() -> None:
    """The canary is one pool: a second one marked is an error at its line, never the first of them silently winning."""
    one = replace_once(
        TEXT,
        "labels: {accelerator: nvidia-a100, pool: a100-small}",
        "labels: {accelerator: nvidia-a100, pool: a100-small}\n        driver: {canary: true}",
    )
    assert findings_of(one) == []
    two = replace_once(
        one,
        "labels: {accelerator: nvidia-a100, pool: a100}",
        "labels: {accelerator: nvidia-a100, pool: a100}\n        driver: {canary: true}",
    )
    assert findings_of(two) == [
        f"{line_of(two, 'driver: {canary: true}', 2)}:26: clusters[0].nodePools[1].driver.canary: node pool a100 is a second driver "
        "canary of training-eastus (a100-small is one): mark one pool per cluster"
    ]


def test_the_driver_pods_labels_and_annotations_land_in_the_pool_s_nvidia_driver(
    crd_schemas: dict[tuple[str, str], dict[str, Any]],
) -> None:
    pool = "labels: {accelerator: nvidia-a100, pool: a100}"
    text = replace_once(TEXT, pool, pool + "\n        driver: {podLabels: {team: llm}, podAnnotations: {prometheus.io/scrape: 'true'}}")
    drivers = _drivers(_fleet(text))
    assert (drivers["a100"]["spec"]["labels"], drivers["a100"]["spec"]["annotations"]) == (
        {"team": "llm"},
        {"prometheus.io/scrape": "true"},
    )
    assert "labels" not in drivers["a100-small"]["spec"] and "annotations" not in drivers["a100-small"]["spec"]
    lookup = Schemas(crds=crd_schemas).lookup(*CRD, _fleet().version_sets["prod"].kubernetes)
    assert list(object_problems(lookup, drivers["a100"], strict=True)) == []
    # on the ClusterPolicy path no driver pod is the pool's own: the fields are named as ignored, at their line
    policy = text.replace("    driverCrd: true", "    driverCrd: false").replace("driver: {version: 595.91.07}", "")
    assert [w for w in findings_of(policy, Severity.WARNING) if "podLabels" in w or "podAnnotations" in w] == [
        f"{line_of(policy, 'podLabels')}:{column}: clusters[0].nodePools[1].driver.{field}: ignored on training-eastus: "
        "platform.gpuOperator.driverCrd is not true, so no driver pods of the pool's own carry them"
        for field, column in (("podLabels", 18), ("podAnnotations", 42))
    ]

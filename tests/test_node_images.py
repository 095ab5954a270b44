"""Fleets whose node images carry the driver (pre-baked images, EKS GPU AMIs): the GPU Operator's driver is off,
a driver upgrade's step is a node image change the plan lists, and status and verify check it on the nodes."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, REPO, replace_once
from node_dumps import evidence_of, gfd_labels
from test_platform import _read_by_templates, _undeclared

from fleetgen.checks.load import load_fleet_text
from fleetgen.live.node_checks import judge_nodes
from fleetgen.live.nodes import nodes_in
from fleetgen.model import Version
from fleetgen.render.platform import add_ons, helm_values
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.plan import PlanRefused, plan_upgrade
from fleetgen.upgrade.verify import verify_wave

Run = Callable[..., CompletedProcess[str]]
AT = datetime.datetime(2026, 11, 24, 9, tzinfo=datetime.UTC)
IMAGED = replace_once(EXAMPLE.read_text(), "gpuOperator: {version: v24.3.0}", "gpuOperator: {version: v24.3.0, driverSource: node-image}")
OLD, NEW = "AKSUbuntu-2204gen2containerd-202411.12.0", "AKSUbuntu-2204gen2gpu-202412.04.0"
FLEET = load_fleet_text(IMAGED.encode()).fleet


def test_the_operator_installs_no_driver_and_its_values_stay_in_the_chart() -> None:
    declared = yaml.safe_load((REPO / "tests" / "charts" / "gpu-operator" / "values.yaml").read_text(encoding="utf-8"))
    for index in range(len(FLEET.clusters)):
        [(_, operator, _)] = [a for a in add_ons(FLEET, index) if a[0] == "gpuOperator"]
        values = helm_values(FLEET, index, "gpuOperator", operator)
        read = _read_by_templates(REPO / "tests" / "charts" / "gpu-operator")
        assert values["driver"] == {"enabled": False} and _undeclared(values, declared, read) == []


def test_a_driver_upgrade_needs_the_image_that_carries_it_and_lists_it_on_every_wave() -> None:
    with pytest.raises(PlanRefused) as caught:
        plan_upgrade(FLEET, {"driver": Version("580.65.06")})
    assert caught.value.findings[0].message == (
        "dev-eastus, prod-inference-eastus, prod-inference-westeu, training-eastus: the node image carries the driver "
        "(platform.gpuOperator.driverSource: node-image); give --set nodeImage=IMAGE, the image with driver 580.65.06"
    )
    plan = plan_upgrade(FLEET, {"driver": Version("580.65.06")}, node_image=NEW)
    assert plan.target == {"driver": Version("580.65.06")}  # the operator installs no driver: its release stays
    assert [(dict(w.step), w.node_image) for w in plan.waves] == [({"driver": Version("580.65.06")}, NEW)] * 4
    with pytest.raises(PlanRefused, match="no cluster whose node image carries the driver moves its driver"):
        plan_upgrade(FLEET, {"kubernetes": Version("1.30.1")}, node_image=NEW)


def test_plan_on_the_real_cli_shows_the_node_image_step(tmp_path: Path, cli_run: Run) -> None:
    (tmp_path / "fleet.yaml").write_text(IMAGED)
    done = cli_run("upgrade", "plan", "--set", "driver=580.65.06", "--set", f"nodeImage={NEW}")
    assert done.returncode == 0, done.stderr
    assert f"1     driver 580.65.06, node image {NEW}  canary (dev)" in done.stdout
    assert f"node image: the clusters whose images carry the driver get it by rolling their node pools to {NEW}" in done.stdout
    assert cli_run("upgrade", "plan", "--set", "driver=580.65.06", "--set", "nodeImage=a b").returncode == 2


def with_image(objects: list[dict[str, Any]], image: str, driver: str) -> list[dict[str, Any]]:
    for node in objects:
        labels = node.get("metadata", {}).get("labels", {})
        if node["kind"] == "Node" and "nvidia.com/gpu.present" in labels:
            labels.update(
                {**gfd_labels(driver), "kubernetes.azure.com/node-image-version": image, "nvidia.com/gpu.deploy.driver": "pre-installed"}
            )
            del labels["nvidia.com/gpu-driver-upgrade-state"]  # the operator's upgrade controller has no driver to roll
    return objects


def test_a_wave_is_done_when_its_nodes_booted_the_image_and_run_its_driver() -> None:
    text = apply_wave(load_fleet_text(IMAGED.encode()), 1, {"driver": Version("580.65.06")}, AT, node_image=NEW)
    assert f"  nodeImage: {NEW}\n" in text
    loaded = load_fleet_text(text.encode())
    old = {"dev-eastus": with_image(evidence_of(loaded.fleet, "dev-eastus"), OLD, "550.90.07")}
    with pytest.raises(PlanRefused, match=f"dev-eastus: 0 of 4 GPU nodes on driver 580.65.06, node image {NEW}$"):
        verify_wave(loaded, 1, old, AT)
    stale = {"dev-eastus": with_image(evidence_of(loaded.fleet, "dev-eastus"), OLD, "580.65.06")}  # a driver, not the image
    with pytest.raises(PlanRefused, match="0 of 4 GPU nodes"):
        verify_wave(loaded, 1, stale, AT)
    new = {"dev-eastus": with_image(evidence_of(loaded.fleet, "dev-eastus"), NEW, "580.65.06")}
    assert "verifiedAt" in verify_wave(loaded, 1, new, AT)[0]
    dev = next(c for c in loaded.fleet.clusters if c.name == "dev-eastus")
    assert [f.kind for f in judge_nodes(loaded.fleet, dev, nodes_in(new["dev-eastus"])).findings] == []


def test_a_node_whose_driver_the_operator_installs_is_named_when_images_should_carry_it() -> None:
    dev = next(c for c in FLEET.clusters if c.name == "dev-eastus")
    objects = with_image(evidence_of(FLEET, "dev-eastus"), OLD, "550.90.07")
    node = next(o for o in objects if o["kind"] == "Node" and "nvidia.com/gpu.present" in o["metadata"]["labels"])
    node["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] = "true"
    [finding] = judge_nodes(FLEET, dev, nodes_in(objects)).findings
    assert (finding.kind, finding.nodes) == ("driver-source", (node["metadata"]["name"],))
    assert (
        finding.message == "the GPU Operator installs its driver, but fleet.yaml says its node image brings it (driverSource: node-image)"
    )

"""Waves gated on evidence: `upgrade status` and `verify` read what the nodes run (kubectl get nodes dumps, or a
kubeconfig context through kubectl), and the soak starts when a wave's nodes run its versions."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import yaml
from conftest import EXAMPLE, replace_once, unreachable_kubeconfig
from node_dumps import evidence_of, gfd_labels

from fleetgen.checks.load import load_fleet_text
from fleetgen.model import Version
from fleetgen.upgrade.apply import apply_wave

Run = Callable[..., CompletedProcess[str]]
AT = datetime.datetime(2026, 11, 24, 9, tzinfo=datetime.UTC)
PLANNABLE = replace_once(EXAMPLE.read_text(), "gpuOperator: {version: v24.3.0}", "gpuOperator: {enabled: false}")


def write(path: Path, objects: list[dict[str, Any]]) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(path)


def gpu_nodes(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "Node" and "nvidia.com/gpu.present" in o["metadata"]["labels"]]


def test_status_counts_the_nodes_on_the_target_and_names_failed_upgrades(tmp_path: Path, cli_run: Run) -> None:
    text = apply_wave(load_fleet_text(PLANNABLE.encode()), 1, {"driver": Version("580.65.06")}, AT)
    (tmp_path / "fleet.yaml").write_text(text)
    fleet = load_fleet_text(text.encode()).fleet
    dev = evidence_of(fleet, "dev-eastus")
    nodes = gpu_nodes(dev)
    nodes[0]["metadata"]["labels"].update(gfd_labels("550.90.07"))
    nodes[0]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-failed"
    nodes[1]["metadata"]["labels"].update(gfd_labels("550.90.07"))
    nodes[1]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "pod-restart-required"
    training = evidence_of(fleet, "training-eastus")  # not moved yet: on 550.54.15, one A100 lost a GPU
    gpu_nodes(training)[0]["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    args = [
        "--live",
        f"dev-eastus={write(tmp_path / 'dev.yaml', dev)}",
        "--live",
        f"training-eastus={write(tmp_path / 'tr.yaml', training)}",
    ]
    done = cli_run("upgrade", "status", "--now", "2026-11-24T12:00Z", *args)
    assert done.returncode == 0, done.stderr
    failed, restarting = nodes[0]["metadata"]["name"], nodes[1]["metadata"]["name"]
    lost = gpu_nodes(training)[0]["metadata"]["name"]
    assert done.stdout.splitlines()[-3:] == [
        "nodes training-eastus: 0 of 5 GPU nodes on driver 580.65.06",
        f"  error: a100-spot: allocatable nvidia.com/gpu 7, the pool's nodes have 8 (gpusPerNode) ({lost})",
        f"nodes dev-eastus: 2 of 4 GPU nodes on driver 580.65.06; driver upgrade failed on {failed} (to retry, fix the cause, "
        f"then kubectl label node {failed} nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite; a node whose driver "
        "pod comes up Ready on the new driver moves on by itself); "
        f"upgrading {restarting} (pod-restart-required)",
    ], done.stdout
    verify = cli_run("upgrade", "verify", "--wave", "1", *args, "--at", "2026-11-24T12:00Z")
    assert verify.returncode == 1 and "wave 1 is not done on its nodes: dev-eastus: 2 of 4 GPU nodes on driver 580.65.06" in verify.stderr
    assert (tmp_path / "fleet.yaml").read_text() == text


def test_verify_needs_evidence_of_every_cluster_of_the_wave(tmp_path: Path, cli_run: Run) -> None:
    text = apply_wave(load_fleet_text(PLANNABLE.encode()), 1, {"driver": Version("560.35.03")}, AT)
    (tmp_path / "fleet.yaml").write_text(text)
    done = cli_run("upgrade", "verify", "--wave", "1", "--at", "2026-11-24T12:00Z")
    assert done.returncode == 1 and "wave 1 is not done on its nodes: no evidence for dev-eastus" in done.stderr
    done = cli_run("upgrade", "verify", "--wave", "2")
    assert done.returncode == 1 and "wave 2 is not in fleet.yaml yet" in done.stderr


def test_evidence_through_a_kubeconfig_context_reports_an_unreachable_api_server(tmp_path: Path, cli_run: Run) -> None:
    """The --context path is a thin kubectl adapter; with no API server here it must fail cleanly."""
    (tmp_path / "fleet.yaml").write_text(apply_wave(load_fleet_text(PLANNABLE.encode()), 1, {"driver": Version("560.35.03")}, AT))
    env = unreachable_kubeconfig(tmp_path)
    for command in (["upgrade", "verify", "--wave", "1"], ["upgrade", "status"]):
        done = cli_run(*command, "--context", "dev-eastus=dev", env=env)
        assert done.returncode == 2 and done.stderr.startswith("fleetgen: kubectl --context dev failed:"), done.stderr
    assert cli_run("upgrade", "status", "--context", "dev-eastus", env=env).returncode == 2  # CLUSTER=CONTEXT


def test_a_cluster_is_done_only_when_every_gpu_node_runs_the_versions_and_none_failed() -> None:
    from fleetgen.upgrade.evidence import progress

    fleet = load_fleet_text(PLANNABLE.encode()).fleet
    dev = next(c for c in fleet.clusters if c.name == "dev-eastus")
    objects = evidence_of(fleet, "dev-eastus")
    wanted = {"driver": Version("550.90.07"), "kubernetes": Version("1.30.1"), "cuda": Version("12.6")}
    assert progress(dev, wanted, objects).done
    gpu_nodes(objects)[3]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-failed"  # still on the driver
    assert not progress(dev, wanted, objects).done
    gpu_nodes(objects)[3]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-done"
    gpu_nodes(objects)[2]["status"]["nodeInfo"]["kubeletVersion"] = "v1.29.4"
    assert progress(dev, wanted, objects).text.startswith("3 of 4 GPU nodes on kubernetes 1.30.1, driver 550.90.07")
    configmap = objects[-1]
    configmap["data"]["cuda"] = "12.4"  # the images are not synced yet
    assert "images: cuda 12.4 live, 12.6 wanted" in progress(dev, wanted, objects).text
    assert not progress(dev, {"cuda": Version("12.6")}, objects).done


def test_status_of_an_image_upgrade_reads_the_synced_versions_configmap() -> None:
    from fleetgen.upgrade.status import live_nodes

    text = apply_wave(load_fleet_text(PLANNABLE.encode()), 1, {"cudnn": Version("9.3.0")}, AT)  # images only
    fleet = load_fleet_text(text.encode()).fleet
    first = fleet.upgrade.waves[0].clusters[0]  # type: ignore[union-attr]
    synced = evidence_of(fleet, first)
    stale = evidence_of(load_fleet_text(PLANNABLE.encode()).fleet, first)  # the ConfigMap before the wave synced
    assert [(n.cluster, n.progress.text) for n in live_nodes(fleet, {first: stale})] == [
        ("training-eastus", "images: cudnn 9.1.0 live, 9.3.0 wanted")
    ]
    assert [n.progress.text for n in live_nodes(fleet, {first: synced})] == ["images synced: done"]

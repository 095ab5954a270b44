"""Observability follows the stack: the DCGM exporter the cluster's GPU Operator release bundles decides the label
names its alerts and dashboards use (dcgm-exporter 4.8.3 renamed `Hostname` to `hostname`, NVIDIA/dcgm-exporter PR
#655), a fleet running both generations renders each cluster's own, and an upgrade plan that crosses the rename says
so. promtool runs the alerts on each generation's series in tests/test_alerts_fire.py (the `exporter-4.8.3` fleet).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXAMPLE, replace_once
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.compat.dcgm_exporter import bundle_of, exporter_facts, generation_of
from fleetgen.compat.gpu_operator import operator_facts
from fleetgen.model import Version
from fleetgen.render import cluster_objects
from fleetgen.upgrade.plan import plan_upgrade

Run = Callable[..., subprocess.CompletedProcess[str]]
HOST_RULES = ("GPUTemperatureHigh", "GPUXidError", "GPUDoubleBitEccError")


def with_operator(release: str) -> str:
    """The example with dev-eastus on GPU Operator `release` (the others stay on v24.3.0)."""
    return replace_once(
        EXAMPLE.read_text(encoding="utf-8"),
        "    platform: {jupyterhub: {enabled: true}}",
        f"    platform: {{jupyterhub: {{enabled: true}}, gpuOperator: {{version: {release}}}}}",
    )


def host_labels(text: str) -> dict[str, set[str]]:
    """Cluster -> the labels its node-level GPU alerts group by, besides `gpu`."""
    fleet = load_fleet_text(text.encode()).fleet
    out: dict[str, set[str]] = {}
    for index, cluster in enumerate(fleet.clusters):
        for body in (m.body for m in cluster_objects(fleet, index) if m.body["kind"] == "PrometheusRule"):
            for rule in (r for g in body["spec"]["groups"] for r in g["rules"] if r.get("alert") in HOST_RULES):
                grouped = rule["expr"].split("max by (", 1)[1].split(")", 1)[0]
                out.setdefault(cluster.name, set()).update(label.strip() for label in grouped.split(",") if label.strip() != "gpu")
    return out


def test_the_data_names_each_bundle_with_its_source_and_only_known_generations() -> None:
    data = exporter_facts()
    assert [g.since for g in data.generations] == sorted(g.since for g in data.generations)
    for bundle in data.bundles:
        assert bundle.source and bundle.url.startswith("https://")
        assert generation_of(f"v{bundle.series}.0").known, bundle.series  # fleetgen knows the names of every exporter it maps to
    assert {b.series for b in data.bundles if b.provisional} == {"26.7"}  # read from the issue, not NVIDIA's page
    assert generation_of("v26.3.2").host_label == "Hostname" and generation_of("v26.7.0").host_label == "hostname"


@given(st.sampled_from([r.documents for r in operator_facts().releases]) | st.from_regex(r"v2[3-9]\.(1[0-2]|[1-9])\.[0-9]", fullmatch=True))
def test_every_operator_release_takes_the_newest_bundle_not_newer_than_its_series(release: str) -> None:
    bundle = bundle_of(release)
    series = tuple(int(p) for p in release.removeprefix("v").split(".")[:2])
    earlier = [b for b in exporter_facts().bundles if tuple(int(p) for p in b.series.split(".")) <= series]
    assert bundle == (max(earlier, key=lambda b: Version(b.series + ".0")) if earlier else exporter_facts().bundles[0])


@pytest.mark.parametrize("release", ["v24.3.0", "v25.10.1", "v26.3.2", "v26.7.0"])
def test_a_cluster_alerts_with_its_own_exporters_label_beside_clusters_on_the_other(release: str) -> None:
    labels = host_labels(with_operator(release))
    expected = generation_of(release).host_label
    assert labels["dev-eastus"] == {expected}
    assert labels["training-eastus"] == {"Hostname"}  # still on the example's v24.3.0


def test_an_upgrade_that_crosses_the_rename_says_so_and_one_that_does_not_is_quiet() -> None:
    fleet = load_fleet_text(EXAMPLE.read_bytes()).fleet
    crossing = plan_upgrade(fleet, {"driver": Version("595.91.07")})
    renamed = [w for w in crossing.warnings if "labels a GPU's node 'hostname', not 'Hostname'" in w]
    assert sorted(w.split(" after ", 1)[0] for w in renamed) == sorted(c.name for c in fleet.clusters)
    assert all("dcgm-exporter/pull/655" in w for w in renamed)
    staying = plan_upgrade(fleet, {"driver": Version("560.35.03")})  # v24.6: still dcgm-exporter before 4.8.3
    assert not [w for w in staying.warnings if "DCGM exporter" in w]


@pytest.mark.slow  # applies an upgrade wave and renders two revisions: about 15 s
def test_diff_shows_the_alerts_an_operator_move_changes(repo: Path, cli_run: Run) -> None:
    applied = cli_run("upgrade", "apply", "--wave", "1", "--set", "driver=595.91.07", "--no-render", cwd=repo)
    assert applied.returncode == 0, applied.stderr
    done = cli_run("diff", "--base", "HEAD", cwd=repo)
    assert done.returncode == 1, done.stderr
    moved = [line.strip() for line in done.stdout.splitlines() if "max by (" in line]
    assert moved == [
        "spec.groups.gpu-health.rules[0].expr: max by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) > 83 -> max by (hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) > 83",
        "spec.groups.gpu-health.rules[1].expr: max by (Hostname, gpu) (DCGM_FI_DEV_XID_ERRORS) > 0 -> max by (hostname, gpu) (DCGM_FI_DEV_XID_ERRORS) > 0",
        "spec.groups.gpu-health.rules[2].expr: max by (Hostname, gpu) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])) > 0 "
        "-> max by (hostname, gpu) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])) > 0",
    ]

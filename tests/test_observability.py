"""GPU alerts, dashboards and the capacity and cost report."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import html5lib
import jsonschema
import promql_parser
import pytest
from conftest import EXAMPLE, installed, replace_once

from fleetgen.checks.load import load_fleet_text
from fleetgen.render import cluster_objects
from fleetgen.render.observability import DEFAULT_ALERTS
from fleetgen.report.capacity import HOURS_PER_MONTH, build_report

Run = Callable[..., CompletedProcess[str]]
FLEET = load_fleet_text(EXAMPLE.read_bytes()).fleet


def objects(fleet: Any, cluster: str, kind: str) -> list[dict[str, Any]]:
    index = [c.name for c in fleet.clusters].index(cluster)
    return [m.body for m in cluster_objects(fleet, index) if m.body["kind"] == kind]


def gpu_rule(fleet: Any, cluster: str) -> dict[str, Any]:
    """The GPU alerts' PrometheusRule (the SLO rules of inference endpoints are tests/test_slo.py's)."""
    [rule] = [r for r in objects(fleet, cluster, "PrometheusRule") if r["metadata"]["name"] == "fleetgen-gpu-alerts"]
    return rule


def rules_of(fleet: Any, cluster: str) -> list[dict[str, Any]]:
    rule = gpu_rule(fleet, cluster)
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def test_every_rule_parses_as_promql_and_matches_the_crd(crd_schemas: dict[tuple[str, str], dict[str, Any]]) -> None:
    for cluster in FLEET.clusters:
        rule = gpu_rule(FLEET, cluster.name)
        jsonschema.Draft7Validator(crd_schemas[("monitoring.coreos.com/v1", "PrometheusRule")]).validate(rule)
        for entry in rules_of(FLEET, cluster.name):
            promql_parser.parse(entry["expr"])  # raises on a syntax error
            assert entry["labels"]["cluster"] == cluster.name and entry["labels"]["team"]
            assert entry["annotations"]["runbook_url"] == f"https://runbooks.contoso.example/gpu/{entry['alert']}"
    with pytest.raises(ValueError):
        promql_parser.parse("avg by (namespace (DCGM_FI_DEV_GPU_UTIL")  # the parser does reject bad PromQL


def test_seed_defaults_and_overrides_per_fleet_cluster_and_team() -> None:
    training = {(r["alert"], r["labels"]["team"]): r for r in rules_of(FLEET, "training-eastus")}
    assert set(a.alert for a in DEFAULT_ALERTS) == {alert for alert, _ in training}
    assert training[("GPUUnderutilized", "nlp")]["expr"] == 'avg by (namespace) (DCGM_FI_DEV_GPU_UTIL{namespace="team-nlp"}) < 20'
    assert training[("GPUUnderutilized", "nlp")]["for"] == "1h"
    assert training[("GPUUnderutilized", "robotics")]["expr"].endswith("< 10")  # the team's own threshold
    assert training[("GPUMemoryNearlyFull", "nlp")]["expr"].endswith("> 95")
    assert training[("GPUTemperatureHigh", "platform")]["expr"] == "max by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) > 83"
    assert (
        training[("KueuePendingWorkloadsHigh", "platform")]["expr"]
        == 'sum by (cluster_queue) (kueue_pending_workloads{replica_role!="follower"}) > 50'
    )
    assert training[("GPUQuotaNearlyUsed", "data-science")]["expr"].endswith("> 80")
    assert "GPUUnderutilized" not in {r["alert"] for r in rules_of(FLEET, "dev-eastus")}  # switched off on dev
    stricter = replace_once(
        EXAMPLE.read_text(),
        "    gpuTemperature: {threshold: 83, severity: critical}",
        "    gpuTemperature: {threshold: 80, for: 2m, severity: warning}",
    )
    fleet = load_fleet_text(stricter.encode()).fleet
    hot = next(r for r in rules_of(fleet, "dev-eastus") if r["alert"] == "GPUTemperatureHigh")
    assert (hot["expr"].endswith("> 80"), hot["for"], hot["labels"]["severity"]) == (True, "2m", "warning")


def test_dashboards_are_valid_json_with_team_filters() -> None:
    maps = {m["metadata"]["name"]: m for m in objects(FLEET, "training-eastus", "ConfigMap")}
    overview = maps["fleetgen-training-eastus-overview"]
    assert overview["metadata"]["labels"]["grafana_dashboard"] == "1"
    board = json.loads(next(iter(overview["data"].values())))
    assert [p["type"] for p in board["panels"]] == ["stat", "heatmap", "bargauge"]
    team = json.loads(next(iter(maps["fleetgen-team-robotics"]["data"].values())))
    for panel in team["panels"]:
        for target in panel["targets"]:
            promql_parser.parse(target["expr"])
            assert 'namespace="team-robotics"' in target["expr"]
    assert len(board["uid"]) <= 40 and len(team["uid"]) <= 40


def test_report_totals_match_the_quotas_in_fleet_yaml() -> None:
    report = build_report(FLEET)
    for cluster in report.clusters:  # each team holds its quota, except data-science on training-eastus, which only borrows
        expected = sum((t.quota_on(cluster.name).requests.gpu or 0) for t in FLEET.teams if cluster.name in t.clusters)
        assert cluster.committed == expected - (8 if cluster.name == "training-eastus" else 0)
    assert {c.name: (c.gpus, c.committed, c.headroom) for c in report.clusters} == {
        "prod-inference-eastus": (8, 8, 0),
        "prod-inference-westeu": (8, 4, 4),
        "training-eastus": (40, 12, 28),
        "dev-eastus": (12, 8, 4),
    }
    teams = {t.team: t for t in report.teams}
    assert {name: t.gpus for name, t in teams.items()} == {"data-science": 6, "nlp": 18, "robotics": 8}
    borrower = next(h for h in teams["data-science"].holdings if h.cluster == "training-eastus")
    assert (borrower.gpus, borrower.may_borrow, borrower.monthly_cost) == (0, 8, 0)  # borrowable GPUs are neither held nor charged
    westeu = next(h for h in teams["nlp"].holdings if h.cluster == "prod-inference-westeu")
    # 4 GPUs on a queue over 4 A100 (3.67) and 4 A10 (3.20) GPUs: average 3.435 per GPU-hour
    assert westeu.monthly_cost == pytest.approx(4 * 3.435 * HOURS_PER_MONTH)
    robotics_training = next(h for h in teams["robotics"].holdings if h.cluster == "training-eastus")
    # its queue's 16 spot A100s (3.40) and Volcano's 8 on-demand A100s (3.40) and 16 H100s (12.29)
    assert robotics_training.monthly_cost == pytest.approx(4 * (24 * 3.40 + 16 * 12.29) / 40 * HOURS_PER_MONTH)
    assert report.matrix[0] == ("Kubernetes", ("1.29.4", "1.29.4", "1.29.4", "1.30.1"))
    assert report.matrix[-1][1][0] == "containerd 1.7"


def test_report_html_is_valid_and_renders_in_a_headless_browser(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    done = cli_run("report", "--format", "html")
    assert done.returncode == 0
    page = done.stdout
    html5lib.HTMLParser(strict=True).parse(page)  # raises on any HTML error
    assert page.count("<rect") == 2 * len(FLEET.clusters) and "GPU capacity and committed quota" in page
    browser = installed(
        "no headless Chromium here (.ci/run installs Debian's chromium); the HTML was checked above", "chromium", "chromium-browser"
    )
    (tmp_path / "report.html").write_text(page)
    shot = tmp_path / "report.png"
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    subprocess.run(
        [browser, *flags, f"--screenshot={shot}", "--window-size=1200,900", (tmp_path / "report.html").as_uri()],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert shot.exists() and shot.stat().st_size > 10_000  # a page with tables and a chart was drawn
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", (tmp_path / "report.html").as_uri()], capture_output=True, text=True, timeout=120, check=False
    ).stdout
    assert "prod-inference-westeu" in dom and dom.count("<svg") == 1


def test_fleet_md_is_written_on_render(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    assert cli_run("render").returncode == 0
    text = (tmp_path / "FLEET.md").read_text()
    assert "| training-eastus | production | 40 | — | — | 12 | 28 |" in text  # GPUs, shares, MIG slices, committed, headroom
    assert "| Container Runtime | containerd 1.7 | containerd 1.7 | containerd 1.7 | containerd 1.7 |" in text

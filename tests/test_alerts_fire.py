"""Every alert fleetgen renders fires on the series it is meant for and stays silent otherwise, as promtool sees it.

For each cluster of the example and of the partitioned test fleets (a MIG cluster, a time-sliced
one: tests/cases), the rules under test are the `spec.groups` of its rendered
PrometheusRules, written to a rules file. Each rendered alert is one test: promtool's
`test rules` evaluates it on the cluster's healthy series (alert_cases.py) changed so that it
fires, expecting exactly that alert with its labels and annotations, and changed to just the quiet
side of it, expecting none. The series are labelled as Prometheus stores them from the exporters
(stored_series.py), which is what makes a rule that selects a label the data does not carry fail.
A rendered alert without a firing case fails too. Every dashboard panel must select something on
the same healthy series.

promtool comes with the Debian package `prometheus` (CI installs it); without it these tests skip.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml
from alert_cases import CASES, Case
from alert_world import Cluster, build_cluster, healthy, world
from conftest import EXAMPLE, REPO, installed, replace_once
from stored_series import Labels, kueue_service_labels, kueue_target, service_monitor_target

from fleetgen.checks.load import load_fleet_text
from fleetgen.jobs.golden_paths import job_objects
from fleetgen.jobs.job_target import Ask
from fleetgen.jobs.serving import Serving
from fleetgen.render import cluster_objects
from fleetgen.render.gitops import gitops_folders
from fleetgen.render.platform import platform_of
from fleetgen.validation.rendered_objects import Schemas

FLEET = load_fleet_text(EXAMPLE.read_bytes()).fleet
# The example has no partitioned pool: these fleets bring MIG slices (mixed layouts) and time-sliced GPUs (renamed and not).
PARTITIONED = ("mig-a100-inference", "timesliced-t4-dev")
FLEETS = {"example": FLEET} | {
    name: load_fleet_text((REPO / "tests" / "cases" / name / "fleet.yaml").read_bytes()).fleet for name in PARTITIONED
}
# Each generation of the DCGM exporter: the example runs GPU Operator v24.3.0 (dcgm-exporter 3.4.1, `Hostname`);
# this one moves dev-eastus to v26.7.0, whose dcgm-exporter 4.8.3 labels nodes `hostname` (a fleet running both).
NEWER_EXPORTER = "exporter-4.8.3"
FLEETS[NEWER_EXPORTER] = load_fleet_text(
    replace_once(
        EXAMPLE.read_text(encoding="utf-8"),
        "    platform: {jupyterhub: {enabled: true}}",
        "    platform: {jupyterhub: {enabled: true}, gpuOperator: {version: v26.7.0}}",
    ).encode()
).fleet
WHERE = [(name, index) for name, fleet in FLEETS.items() for index in range(len(fleet.clusters)) if name != NEWER_EXPORTER]
WHERE.append((NEWER_EXPORTER, [c.name for c in FLEETS[NEWER_EXPORTER].clusters].index("dev-eastus")))
Where = tuple[str, int]  # (fleet, cluster index)
NO_PROMTOOL = "promtool is not installed (.ci/run installs it with Debian's prometheus package)"
needs_promtool = pytest.mark.usefixtures("promtool_present")


@pytest.fixture
def promtool_present() -> None:
    installed(NO_PROMTOOL, "promtool")


def _id(where: Where) -> str:
    name, index = where
    cluster = FLEETS[name].clusters[index].name
    return cluster if name == "example" else f"{name}/{cluster}"


@cache
def _objects(where: Where) -> list[dict[str, Any]]:
    return [m.body for m in cluster_objects(FLEETS[where[0]], where[1])]


@cache
def _platform(where: Where) -> list[dict[str, Any]]:
    manifests = gitops_folders(FLEETS[where[0]], where[1])
    return [m.body for folder, _, found in manifests if folder == "platform" for m in found]


def _cluster(where: Where, honor: bool | None = None) -> Cluster:
    return build_cluster(FLEETS[where[0]], where[1], _objects(where), _platform(where), honor)


def _alert_id(where: Where, rule: dict[str, Any]) -> str:
    return ":".join(
        [
            _id(where),
            rule["alert"],
            rule["labels"]["team"],
            *(rule["labels"][k] for k in ("endpoint", "node_pool", "resource") if k in rule["labels"]),
        ]
    )


RENDERED_ALERTS = [
    # Each cluster's cases run in one promtool process (the `fired` fixture): keep them on one worker under pytest-xdist.
    pytest.param(where, rule, id=_alert_id(where, rule), marks=pytest.mark.xdist_group(f"promtool-{_id(where)}"))
    for where in WHERE
    for body in _objects(where)
    if body["kind"] == "PrometheusRule"
    for group in body["spec"]["groups"]
    for rule in group["rules"]
    if "alert" in rule
]


def _selector(labels: Labels) -> str:
    def quoted(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    return labels["__name__"] + "{" + ", ".join(f"{k}={quoted(v)}" for k, v in sorted(labels.items()) if k != "__name__") + "}"


def _group(name: str, c: Cluster, knobs: dict[tuple[str, ...], Any], minutes: int) -> dict[str, Any]:
    series = world(c, {**healthy(c), **knobs}, minutes + 5)
    return {"name": name, "interval": "1m", "input_series": [{"series": _selector(labels), "values": v} for labels, v in series]}


def _groups(where: Where) -> list[dict[str, Any]]:
    return [g for body in _objects(where) if body["kind"] == "PrometheusRule" for g in body["spec"]["groups"]]


def _nonempty(expr: str, minutes: int) -> dict[str, Any]:
    """A promql_expr_test that passes only when `expr` returns at least one series."""
    return {"expr": f"absent({expr})", "eval_time": f"{minutes}m", "exp_samples": []}


def _case_tests(c: Cluster, rule: dict[str, Any], case: Case) -> list[dict[str, Any]]:
    assert "{{" not in str(rule["annotations"]), "a templated annotation: expect its expansion here"
    expected = {"exp_labels": {**case.labels, **rule["labels"]}, "exp_annotations": rule["annotations"]}
    at = f"{case.minutes}m"
    fire = _group("fires", c, case.fire, case.minutes) | {
        "alert_rule_test": [{"eval_time": at, "alertname": rule["alert"], "exp_alerts": [expected]}]
    }
    tests = [fire]
    for name, knobs in case.quiet.items():
        quiet = _group(name, c, knobs, case.minutes) | {
            "alert_rule_test": [{"eval_time": at, "alertname": rule["alert"], "exp_alerts": []}]
        }
        if name in case.still_true:
            quiet["promql_expr_test"] = [_nonempty(case.still_true[name], case.minutes)]
        tests.append(quiet)
    return tests


def test_every_cluster_renders_the_seed_alerts() -> None:
    """The list the parametrized test below runs over is the real one: every seed alert, on every cluster that has it."""
    names = {(_id(p.values[0]), p.values[1]["alert"]) for p in RENDERED_ALERTS}
    uncovered = sorted({name for _, name in names} - set(CASES))
    assert not uncovered, f"rendered alerts with no firing case in tests/alert_cases.py: {uncovered}"
    assert {name for _, name in names} == set(CASES)  # and no case for an alert fleetgen no longer renders
    assert ("dev-eastus", "GPUUnderutilized") not in names  # switched off there in fleet.yaml
    assert len(RENDERED_ALERTS) > 60
    for name in PARTITIONED:  # the partitioned fleets' teams get their GPU alerts
        assert {"GPUUnderutilized", "GPUMemoryNearlyFull", "GPUSliceQuotaNearlyUsed"} <= {
            a for w, a in names if w.startswith(name + "/")
        }, name
    mig = [
        p.values[1]
        for p in RENDERED_ALERTS
        if p.values[1]["alert"] == "GPUSliceQuotaNearlyUsed" and p.values[1]["labels"]["team"] == "ranking"
    ]
    assert sorted(r["labels"]["resource"] for r in mig) == ["requests.nvidia.com/mig-1g.10gb", "requests.nvidia.com/mig-3g.40gb"]


def _write_case(folder: Path, where: Where, tests: list[dict[str, Any]], every: int = 1, only: dict[str, Any] | None = None) -> None:
    """A promtool test file of `tests` in `folder`, beside the cluster's rendered rule groups, or beside the group
    holding rule `only` cut to that rule and the recording rules it reads (the group's other rules cannot change
    its verdict, and promtool would evaluate each of them at every step)."""
    groups = _groups(where)
    if only is not None:
        groups = [{**g, "rules": _read_by(only, g["rules"])} for g in groups if only in g["rules"]]
    folder.mkdir(exist_ok=True)
    (folder / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    suite = {"rule_files": ["rules.yaml"], "evaluation_interval": f"{every}m", "tests": tests}
    (folder / "tests.yaml").write_text(yaml.safe_dump(suite))


def _read_by(alert: dict[str, Any], rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`alert` and the recording rules of `rules` it reads, directly or through another, in the group's order."""
    read = {r["record"]: {s.name for s in _selectors(r["expr"])} for r in rules if "record" in r}
    wanted, todo = set[str](), [s.name for s in _selectors(alert["expr"])]
    while todo:
        name = todo.pop()
        if name in read and name not in wanted:
            wanted.add(name)
            todo += read[name]
    return [r for r in rules if r == alert or r.get("record") in wanted]


def _promtool(
    tmp_path: Path, where: Where, tests: list[dict[str, Any]], every: int = 1, only: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` of `tests` against the cluster's rendered rule groups (or the one holding rule `only`)."""
    promtool = installed(NO_PROMTOOL, "promtool")
    _write_case(tmp_path, where, tests, every, only)
    return subprocess.run([promtool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)


def _verdicts(output: str) -> dict[str, str]:
    """promtool's verdict on each test file it ran: its path -> what it printed under `Unit Testing:  <path>`."""
    verdicts: dict[str, str] = {}
    current = None
    for line in output.splitlines():
        if line.startswith("Unit Testing:"):
            current = line.removeprefix("Unit Testing:").strip()
            verdicts[current] = ""
        elif current is not None:
            verdicts[current] += line + "\n"
    return verdicts


@pytest.fixture(scope="module")
def fired(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Where], dict[str, str]]:
    """promtool's verdict on every alert case of a cluster, from one `promtool test rules` run over all of them
    (a case a file, each beside the rule group it tests): alert id -> what promtool printed for it."""
    runs: dict[Where, dict[str, str]] = {}

    def of(where: Where) -> dict[str, str]:
        if where not in runs:
            promtool = installed(NO_PROMTOOL, "promtool")
            root = tmp_path_factory.mktemp("promtool")
            c = _cluster(where)
            files = {}
            for number, (at, rule) in enumerate(p.values for p in RENDERED_ALERTS):
                builder = CASES.get(rule["alert"])
                if at != where or builder is None:
                    continue
                case = builder(c, rule)
                _write_case(root / f"case-{number}", where, _case_tests(c, rule, case), case.every, rule)
                files[f"case-{number}/tests.yaml"] = _alert_id(where, rule)
            done = subprocess.run([promtool, "test", "rules", *files], cwd=root, capture_output=True, text=True, check=False)
            verdicts = _verdicts(done.stdout + done.stderr)
            assert set(verdicts) == set(files), done.stdout + done.stderr
            runs[where] = {files[path]: text for path, text in verdicts.items()}
        return runs[where]

    return of


@needs_promtool
@pytest.mark.parametrize(("where", "rule"), RENDERED_ALERTS)
def test_promtool_fires_each_alert_on_its_series_and_not_just_under_it(
    fired: Callable[[Where], dict[str, str]], where: Where, rule: dict[str, Any]
) -> None:
    assert rule["alert"] in CASES, f"{rule['alert']} has no firing case in tests/alert_cases.py: add one"
    verdict = fired(where)[_alert_id(where, rule)]
    assert verdict.strip() == "SUCCESS", verdict


def _panels(where: Where) -> list[tuple[str, str]]:
    """(dashboard/panel title, query) of every dashboard panel the cluster's Grafana gets."""
    found = []
    for body in _objects(where):
        if body["kind"] == "ConfigMap" and body["metadata"]["labels"].get("grafana_dashboard") == "1":
            for text in body["data"].values():
                board = yaml.safe_load(text)
                found += [(f"{board['title']} / {p['title']}", t["expr"]) for p in board["panels"] for t in p["targets"]]
    return found


def _served_teams(c: Cluster) -> set[str]:
    return {e.team for e in c.endpoints}


@needs_promtool
@pytest.mark.parametrize("where", WHERE, ids=[_id(w) for w in WHERE])
def test_healthy_series_fire_nothing_and_fill_every_panel(tmp_path: Path, where: Where) -> None:
    c, minutes = _cluster(where), 75
    alerts = sorted({r["alert"] for g in _groups(where) for r in g["rules"] if "alert" in r})
    checks, skipped = [], []
    for title, expr in _panels(where):
        slo_teams = {m.value for s in _selectors(expr) if s.name.startswith("slo:") for m in s.matchers.matchers if m.name == "team"}
        if slo_teams - _served_teams(c):  # a team's budget panel where it serves nothing: that cluster has no SLO series of it
            skipped.append(title)
            continue
        checks.append(_nonempty(expr, minutes))
    group = _group("healthy", c, {}, minutes)
    group["alert_rule_test"] = [{"eval_time": f"{minutes}m", "alertname": a, "exp_alerts": []} for a in alerts]
    group["promql_expr_test"] = checks
    done = _promtool(tmp_path, where, [group])
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(checks) >= 3 + 3 * len(c.namespaces)  # the overview's panels and each team's GPU and quota panels
    assert all("Error budget" in t or "Burn rate" in t for t in skipped)


def _selectors(expr: str) -> list[Any]:
    found: list[Any] = []
    promql_parser.walk(promql_parser.parse(expr), lambda n: found.append(n) if isinstance(n, promql_parser.VectorSelector) else None)
    return found


@needs_promtool
def test_with_the_charts_default_honor_labels_the_team_gpu_alerts_never_fire(tmp_path: Path) -> None:
    """Why fleetgen sets honorLabels: stored as exported_namespace, the workload's namespace matches no team rule."""
    index = ("example", [c.name for c in FLEET.clusters].index("training-eastus"))
    rule = next(
        r
        for _, r in (p.values for p in RENDERED_ALERTS)
        if r["alert"] == "GPUUnderutilized" and r["labels"]["cluster"] == "training-eastus"
    )
    for honor, fires in ((None, True), (False, False)):
        c = _cluster(index, honor)
        done = _promtool(tmp_path, index, _case_tests(c, rule, CASES["GPUUnderutilized"](c, rule))[:1], only=rule)
        assert (done.returncode == 0) == fires, done.stdout + done.stderr
    held = next(labels for labels, _ in world(_cluster(index, False), healthy(_cluster(index, False)), 1) if "exported_namespace" in labels)
    assert held["namespace"] == "gpu-operator" and held["exported_namespace"].startswith("team-")


def test_the_kueue_charts_own_monitor_is_not_selected_and_fleetgens_is() -> None:
    """The chart's ServiceMonitor carries only the chart's labels; fleetgen's carries the fleet's rule labels."""
    for index, cluster in enumerate(FLEET.clusters):
        kueue = platform_of(FLEET, index).kueue
        release = "kueue"
        chart_labels = {
            k: v for k, v in kueue_service_labels(kueue.chart, release, kueue.version).items() if k != "app.kubernetes.io/component"
        }
        charts_own = {
            "kind": "ServiceMonitor",
            "metadata": {"name": "kueue-controller-manager-metrics-monitor", "namespace": kueue.namespace, "labels": chart_labels},
            "spec": {
                "selector": {"matchLabels": kueue_service_labels(kueue.chart, release, kueue.version)},
                "endpoints": [{"port": "https"}],
            },
        }
        selected_by = dict(FLEET.alerts.rule_labels)
        assert kueue_target([charts_own], selected_by, kueue.namespace, kueue.chart, kueue.version) is None, cluster.name
        target = kueue_target(_objects(("example", index)), selected_by, kueue.namespace, kueue.chart, kueue.version)
        assert target is not None, cluster.name
        assert target.labels["namespace"] == kueue.namespace and target.labels["job"] == "kueue-controller-manager-metrics-service"
    without = replace_once(
        EXAMPLE.read_text(), "  gpuOperator: {version: v24.3.0}", "  gpuOperator: {version: v24.3.0}\n  kueue: {enabled: false}"
    )
    fleet = load_fleet_text(without.encode()).fleet
    assert not [m for m in cluster_objects(fleet, 0) if m.body["kind"] == "ServiceMonitor"]  # no Kueue, nothing to scrape


@needs_promtool
@pytest.mark.parametrize("where", WHERE, ids=[_id(w) for w in WHERE])
def test_promtool_checks_the_rendered_rules(tmp_path: Path, where: Where) -> None:
    promtool = installed(NO_PROMTOOL, "promtool")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": _groups(where)}, sort_keys=False))
    done = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@needs_promtool
def test_the_slo_alerts_fire_on_the_golden_paths_series_only_through_its_service_monitors_labels(tmp_path: Path) -> None:
    """The SLO alerts above run on the series of the Deployment `job new` writes (alert_world.golden_path_target), named
    unlike the endpoint's `service` label. Without the ServiceMonitor's relabelings, its series carry the Service's name
    and the page never fires; with them it does, and the stored labels include every label the rules select."""
    index = [c.name for c in FLEET.clusters].index("prod-inference-eastus")
    rule = next(
        r
        for _, r in (p.values for p in RENDERED_ALERTS)
        if r["alert"] == "ErrorBudgetBurn1h" and r["labels"]["endpoint"] == "chat" and r["labels"]["cluster"] == "prod-inference-eastus"
    )
    where: Where = ("example", index)
    c = _cluster(where)
    chat = next(e for e in c.endpoints if e.name == "chat")
    assert {**chat.selector, "namespace": chat.namespace}.items() <= chat.target.labels.items()
    ask = Ask("nlp", c.name, "chat-server", "contosoai.azurecr.io/server:v1", gpus=1)
    built = job_objects(FLEET, ask, Schemas(), Serving("real-time", 300, selector=chat.selector))
    objects = {body["kind"]: body for body in built.objects}
    del objects["ServiceMonitor"]["spec"]["endpoints"][0]["relabelings"]
    bare = service_monitor_target(objects["ServiceMonitor"], objects["Service"], "chat-server-5d8c7b9f6-m3n4p", "10.244.9.40")
    assert bare.labels["service"] == "chat-server"
    for target, fires in ((chat.target, True), (bare, False)):
        c.endpoints = [dataclasses.replace(e, target=target) if e.name == "chat" else e for e in c.endpoints]
        done = _promtool(tmp_path, where, _case_tests(c, rule, CASES["ErrorBudgetBurn1h"](c, rule))[:1], only=rule)
        assert (done.returncode == 0) == fires, done.stdout + done.stderr

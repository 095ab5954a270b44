"""MultiKueue as the rest of fleetgen knows it: `job new --fleet-wide`, the approval gate, the manager's alerts
through promtool, the capacity report, drift, import and the Argo CD hub's order. The fleet and its helpers are
test_multikueue.py's.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, installed, replace_once
from stored_series import kueue_target
from test_multikueue import CASE, EAST, TEXT, WEST, _load

from fleetgen.checks.load import load_fleet_text
from fleetgen.render import cluster_objects
from fleetgen.render.rendered import Rendered

Run = Callable[..., subprocess.CompletedProcess[str]]
CRDs = dict[tuple[str, str], dict[str, Any]]


def _job(cli_run: Run, tmp_path: Path, *args: str, text: str = TEXT) -> subprocess.CompletedProcess[str]:
    (tmp_path / "fleet.yaml").write_text(text)
    base = ["job", "new", "--fleet", str(tmp_path / "fleet.yaml"), "--name", "train", "--image", "registry.example.com/t:v1"]
    return cli_run(*base, *args, cwd=tmp_path)


def test_job_new_fleet_wide_queues_on_the_manager_and_fits_every_worker_it_names(tmp_path: Path, cli_run: Run) -> None:
    done = _job(cli_run, tmp_path, "--team", "vision", "--fleet-wide", "--gpus", "8")
    assert done.returncode == 0, done.stderr
    [job] = list(yaml.safe_load_all(done.stdout))
    assert job["metadata"]["namespace"] == "team-vision"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-vision-queue"  # the same LocalQueue on every worker
    assert job["spec"]["suspend"] is True
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"accelerator": "nvidia-a100"}  # both workers' A100 pools carry it
    assert "dispatched to a worker that admits it (training-westus2, training-eastus)" in done.stderr
    fleet = _load(TEXT)
    requests = pod["containers"][0]["resources"]["requests"]
    # a whole A100 node after the system reserve fits on both workers; the same pod is sent to either
    assert requests["nvidia.com/gpu"] == 8 and requests["cpu"] == 93 and requests["memory"] == "846Gi"
    assert fleet.multi_kueue is not None


def test_job_new_fleet_wide_refuses_what_no_worker_could_admit(tmp_path: Path, cli_run: Run) -> None:
    # 16 H100s in one pod: training-eastus's H100 nodes have 8 each
    done = _job(cli_run, tmp_path, "--team", "llm", "--fleet-wide", "--gpus", "16")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "fleetgen: no worker of fleet-h100 could admit it (training-eastus: H100 nodes on training-eastus have at most 8"
    )
    # llm's quota is 16 GPUs on each worker: 3 nodes x 8 is above it everywhere
    done = _job(cli_run, tmp_path, "--team", "llm", "--fleet-wide", "--gpus", "8", "--nodes", "3")
    assert done.returncode == 1 and "team llm's GPU quota on training-eastus is 16" in done.stderr
    done = _job(cli_run, tmp_path, "--team", "llm", "--fleet-wide", "--gpus", "8", "--gpu-model", "A100")
    assert done.returncode == 1 and "dispatches H100 GPUs, not A100" in done.stderr
    done = _job(cli_run, tmp_path, "--team", "llm", "--fleet-wide", "--gpus", "1", "--kind", "inference", "--tier", "batch")
    assert done.returncode == 1 and "dispatches Jobs" in done.stderr
    done = _job(cli_run, tmp_path, "--team", "llm", "--fleet-wide", "--cluster", "training-eastus", "--gpus", "1")
    assert done.returncode == 2 and "leave out --cluster training-eastus" in done.stderr


def test_job_new_fleet_wide_drops_a_worker_that_cannot_hold_the_pod(tmp_path: Path, cli_run: Run) -> None:
    # vision may use only 8 GPUs on training-westus2 and 16 on training-eastus: two 8-GPU pods fit only on eastus
    text = replace_once(TEXT, "training-eastus: {requests: {gpu: 8}}", "training-eastus: {requests: {gpu: 16, cpu: 188, memory: 1700Gi}}")
    done = _job(cli_run, tmp_path, "--team", "vision", "--fleet-wide", "--gpus", "8", "--nodes", "2", text=text)
    assert done.returncode == 0, done.stderr
    assert "(training-eastus)" in done.stderr
    job, service = list(yaml.safe_load_all(done.stdout))
    assert job["spec"]["completions"] == 2 and service["kind"] == "Service"


def test_adding_or_removing_a_worker_is_a_capacity_change_the_gate_judges() -> None:
    from fleetgen.review import diff_fleets

    rule = "approvals:\n  - {name: big-gpu, when: {gpuQuotaAtLeast: 40}, approvers: [gpu-committee]}\nteams:\n"
    base = replace_once(TEXT, "teams:\n", rule)
    base = replace_once(base, "workers: [training-westus2, training-eastus]}", "workers: [training-westus2]}")
    head = replace_once(base, "workers: [training-westus2]}", "workers: [training-westus2, training-eastus]}")

    def review(old: str, new: str) -> tuple[dict[str, list[str]], list[str]]:
        diff = diff_fleets(Rendered(_load(old)), Rendered(_load(new)), "base", "head")
        return {a.rule.name: [c.text for c in a.changes] for a in diff.approvals}, [c.text for c in diff.changes]

    gated, _ = review(base, head)
    assert "team vision: A100 GPUs across the fleet through fleet-a100 24 -> 40 (worker training-eastus added)" in gated["big-gpu"]
    gated, changes = review(head, base)
    assert "team vision: A100 GPUs across the fleet through fleet-a100 40 -> 24 (worker training-eastus removed)" in changes
    assert "big-gpu" not in gated  # less capacity needs no committee (vision keeps its namespace on training-eastus, listed there)
    # a worker only the queue put the team on: the team's namespace leaves it, which the removal rule gates
    lone = replace_once(base, "workers: [training-westus2]}", "workers: [training-eastus]}")
    lone = replace_once(lone, "      training-eastus: {requests: {gpu: 8}}   # listed: its values there are its own\n", "")
    both = replace_once(
        lone, "gpuModel: A100, workers: [training-eastus]}", "gpuModel: A100, workers: [training-eastus, training-westus2]}"
    )
    lone = replace_once(
        lone,
        "    training-westus2:\n      kubeconfig: {secret: westus2-kubeconfig}",
        "    training-eastus:\n      kubeconfig: {secret: eastus}",
    )
    gated, _ = review(both, lone)
    assert "team vision removed from training-westus2" in gated["fleetgen-removal"]


NO_PROMTOOL = "promtool is not installed (.ci/run installs it with Debian's prometheus package)"


def _selector(labels: dict[str, str]) -> str:
    return labels["__name__"] + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__") + "}"


def _counter(per_minute: int, minutes: int = 120) -> str:
    return f"0+{per_minute}x{minutes}"


def _manager_alerts(tmp_path: Path, counters: dict[tuple[str, str, str, str], int]) -> tuple[list[dict[str, Any]], Any]:
    """The manager's rendered MultiKueue rules, and the Kueue target their series are stored through."""
    fleet = _load(TEXT)
    index = [c.name for c in fleet.clusters].index("dispatch-eastus")
    objects = [m.body for m in cluster_objects(fleet, index)]
    [rule] = [o for o in objects if o["kind"] == "PrometheusRule" and o["metadata"]["name"] == "fleetgen-multikueue-alerts"]
    kueue = fleet.platform_of(fleet.clusters[index]).kueue
    target = kueue_target(objects, dict(fleet.alerts.rule_labels), kueue.namespace, kueue.chart, kueue.version)
    assert target is not None  # fleetgen's ServiceMonitor scrapes the manager's Kueue
    series = [
        {"series": _selector(target.series(metric, {"cluster_queue": q, "cluster": w, "replica_role": role})), "values": _counter(rate)}
        for (metric, q, w, role), rate in counters.items()
    ]
    return rule["spec"]["groups"], series


def _promtool(
    tmp_path: Path, groups: list[dict[str, Any]], series: list[dict[str, Any]], alert: str, expected: list[dict[str, Any]]
) -> None:
    promtool = installed(NO_PROMTOOL, "promtool")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    test = {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [{"eval_time": "100m", "alertname": alert, "exp_alerts": expected}],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [test]}))
    done = subprocess.run([promtool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


D, A = "multikueue_workloads_dispatched_total", "multikueue_workloads_admitted_total"


def _labels(groups: list[dict[str, Any]], alert: str, worker: str) -> dict[str, str]:
    rules = [r for g in groups for r in g["rules"] if r["alert"] == alert and r["labels"].get("worker", worker) == worker]
    return {**rules[0]["labels"], "cluster_queue": "fleet-a100", "worker": worker}


def test_promtool_a_worker_sent_workloads_that_admits_none(tmp_path: Path) -> None:
    alert = "MultiKueueWorkloadsNotAdmitted"
    sick = {(D, "fleet-a100", WEST, "leader"): 1, (A, "fleet-a100", WEST, "leader"): 1, (D, "fleet-a100", EAST, "leader"): 1}
    groups, series = _manager_alerts(tmp_path, sick)
    summary = {"summary": "A MultiKueue worker was sent over 5 workloads in the last hour and admitted none"}
    _promtool(tmp_path, groups, series, alert, [{"exp_labels": _labels(groups, alert, EAST), "exp_annotations": summary}])
    healthy = {**sick, (A, "fleet-a100", EAST, "leader"): 1}
    _promtool(tmp_path, *_manager_alerts(tmp_path, healthy), alert, [])
    few = {**sick, (D, "fleet-a100", EAST, "leader"): 0}  # nothing sent there: nothing to admit
    _promtool(tmp_path, *_manager_alerts(tmp_path, few), alert, [])
    follower = {**sick, (A, "fleet-a100", EAST, "leader"): 1, (A, "fleet-a100", EAST, "follower"): 0}  # HA: only the leader counts
    _promtool(tmp_path, *_manager_alerts(tmp_path, follower), alert, [])


def test_promtool_a_worker_that_gets_none_of_its_queues_workloads_is_not_active(tmp_path: Path) -> None:
    alert = "MultiKueueWorkerNotActive"
    lost = {(D, "fleet-a100", WEST, "leader"): 1, (D, "fleet-a100", EAST, "leader"): 0}
    groups, series = _manager_alerts(tmp_path, lost)
    [rule] = [
        r
        for g in groups
        for r in g["rules"]
        if r["alert"] == alert and (r["labels"]["cluster_queue"], r["labels"]["worker"]) == ("fleet-a100", EAST)
    ]
    expected = {"exp_labels": rule["labels"], "exp_annotations": rule["annotations"]}
    _promtool(tmp_path, groups, series, alert, [expected])
    _promtool(tmp_path, *_manager_alerts(tmp_path, {**lost, (D, "fleet-a100", EAST, "leader"): 1}), alert, [])
    idle = {(D, "fleet-a100", WEST, "leader"): 0, (D, "fleet-a100", EAST, "leader"): 0}  # a quiet queue says nothing of its workers
    _promtool(tmp_path, *_manager_alerts(tmp_path, idle), alert, [])


def test_the_manager_alone_gets_the_multikueue_alerts_and_promtool_loads_them(tmp_path: Path) -> None:
    fleet = _load(TEXT)
    names = {
        c.name: {b["metadata"]["name"] for b in (m.body for m in cluster_objects(fleet, i)) if b["kind"] == "PrometheusRule"}
        for i, c in enumerate(fleet.clusters)
    }
    assert "fleetgen-multikueue-alerts" in names["dispatch-eastus"]
    assert all("fleetgen-multikueue-alerts" not in found for name, found in names.items() if name != "dispatch-eastus")
    groups, _ = _manager_alerts(tmp_path, {})
    workers = sorted((r["labels"]["cluster_queue"], r["labels"]["worker"]) for g in groups for r in g["rules"] if "worker" in r["labels"])
    assert workers == [("fleet-a100", EAST), ("fleet-a100", WEST), ("fleet-h100", EAST)]  # Incremental: the first 3 of each queue
    promtool = installed(NO_PROMTOOL, "promtool")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    done = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    off = replace_once(TEXT, "multiKueue:\n", "alerts: {rules: {multikueueWorkerInactive: {enabled: false}}}\nmultiKueue:\n")
    index = [c.name for c in fleet.clusters].index("dispatch-eastus")
    rules = [
        r["alert"]
        for b in (m.body for m in cluster_objects(_load(off), index))
        if b["kind"] == "PrometheusRule"
        for g in b["spec"]["groups"]
        for r in g["rules"]
    ]
    assert "MultiKueueWorkerNotActive" not in rules and "MultiKueueWorkloadsNotAdmitted" in rules


def test_the_report_shows_what_each_team_can_get_across_the_workers(tmp_path: Path, cli_run: Run) -> None:
    import json

    import jsonschema

    (tmp_path / "fleet.yaml").write_text(TEXT)
    done = cli_run("report", "fleet.yaml", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, json.loads((REPO / "schemas" / "output" / "report.schema.json").read_text()))
    a100 = next(q for q in data["fleetQueues"] if q["queue"] == "fleet-a100")
    assert a100["workers"] == [{"cluster": WEST, "gpus": 24}, {"cluster": EAST, "gpus": 16}] and a100["gpus"] == 40
    assert a100["teams"] == [{"team": "vision", "gpus": 16}]  # its 8-GPU quota on each worker, not the 40 the queue has
    raised = replace_once(TEXT, "training-eastus: {requests: {gpu: 8}}", "training-eastus: {requests: {gpu: 30}}")
    (tmp_path / "fleet.yaml").write_text(raised)
    data = json.loads(cli_run("report", "fleet.yaml", "--format", "json", cwd=tmp_path).stdout)
    assert next(q for q in data["fleetQueues"] if q["queue"] == "fleet-a100")["teams"] == [{"team": "vision", "gpus": 24}]  # 8 + 16
    page = cli_run("report", "fleet.yaml", "--format", "html", cwd=tmp_path).stdout
    assert "<td>fleet-a100</td><td>A100</td><td>training-westus2 24, training-eastus 16</td><td>40</td><td>vision 24</td>" in page
    markdown = (CASE / "expected" / "FLEET.md").read_text()
    assert "| fleet-a100 | A100 | training-westus2 24, training-eastus 16 | 40 | vision 16 |" in markdown


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_drift_knows_the_multikueue_objects(engine: str) -> None:
    from gitops_dumps import cluster_dump

    from fleetgen.live.state import compare

    loaded = load_fleet_text(TEXT.encode())
    for cluster in ("dispatch-eastus", "training-eastus"):
        index = [c.name for c in loaded.fleet.clusters].index(cluster)
        rendered = Rendered(loaded.fleet).keyed(index, with_entry_point=False)
        dump = cluster_dump(list(rendered.values()), engine)
        drift = compare(rendered, dump["items"])
        assert list(drift.missing + drift.extra + drift.changed) == [], cluster
    config = next(
        o for o in dump_manager(loaded, engine)["items"] if o["kind"] == "MultiKueueConfig" and o["metadata"]["name"] == "fleet-a100"
    )
    assert config["spec"]["clusters"] == [WEST, EAST]


def dump_manager(loaded: Any, engine: str) -> dict[str, Any]:
    from gitops_dumps import cluster_dump

    index = [c.name for c in loaded.fleet.clusters].index("dispatch-eastus")
    return cluster_dump(list(Rendered(loaded.fleet).keyed(index, with_entry_point=False).values()), engine)


def test_drift_reports_a_reordered_worker_list_and_a_lost_kubeconfig_secret_name() -> None:
    from fleetgen.compare.object_diff import show
    from fleetgen.live.state import compare

    loaded = load_fleet_text(TEXT.encode())
    index = [c.name for c in loaded.fleet.clusters].index("dispatch-eastus")
    rendered = Rendered(loaded.fleet).keyed(index, with_entry_point=False)
    dump = dump_manager(loaded, "flux")
    config = next(o for o in dump["items"] if o["kind"] == "MultiKueueConfig" and o["metadata"]["name"] == "fleet-a100")
    config["spec"]["clusters"] = [EAST, WEST]  # someone put eastus first by hand: Incremental now tries it first
    cluster = next(o for o in dump["items"] if o["kind"] == "MultiKueueCluster" and o["metadata"]["name"] == WEST)
    cluster["spec"]["clusterSource"]["kubeConfig"]["location"] = "old-secret"
    drift = compare(rendered, dump["items"])
    found = sorted((o.title, [f"{f.path}: {show(f.old)} -> {show(f.new)}" for f in o.fields]) for o in drift.changed)
    assert [title for title, _ in found] == ["MultiKueueCluster training-westus2", "MultiKueueConfig fleet-a100"]
    assert found[0][1] == ["spec.clusterSource.kubeConfig.location: westus2-kubeconfig -> old-secret"]


def test_import_turns_a_rendered_multikueue_tree_back_into_the_section(tmp_path: Path) -> None:
    from fleetgen.importer.imported import Given
    from fleetgen.importer.run import import_repository

    shutil.copytree(CASE / "expected", tmp_path / "repo")
    result = import_repository(tmp_path / "repo", Given())
    assert result.unreproduced == []  # every manager and worker object, the manager's account on each worker included
    assert not any(kind in f.title for f in result.unmodelled for kind in ("MultiKueue", "AdmissionCheck", "multikueue-manager"))
    imported = yaml.safe_load(result.text)["multiKueue"]
    original = yaml.safe_load(TEXT)["multiKueue"]
    assert imported["manager"] == original["manager"]
    assert sorted(imported["queues"], key=lambda q: q["name"]) == sorted(original["queues"], key=lambda q: q["name"])
    assert imported["workers"] == original["workers"]
    # the dispatcher is in the manager's Kueue configuration, which this tree installs through its platform folder, not the cluster's
    assert "dispatcher" not in imported
    clusters = {c["name"]: c for c in yaml.safe_load(result.text)["clusters"]}
    assert [p["name"] for p in clusters["dispatch-eastus"]["nodePools"]] == ["system"]  # the manager's flavors are the section's


def test_a_hub_rolls_the_manager_out_after_its_workers(crd_schemas: CRDs) -> None:
    import jsonschema

    from fleetgen.render.argocd import application_set

    text = replace_once(TEXT, "engine: flux", "engine: argocd, argocd: {mode: hub, progressiveSync: true}")
    # a dev worker and a staging manager: without MultiKueue the manager's wave would come before a production worker's
    text = replace_once(
        text,
        "  - name: dispatch-eastus\n    region: eastus\n    environment: production",
        "  - name: dispatch-eastus\n    region: eastus\n    environment: staging",
    )
    fleet = _load(text)
    body = application_set(fleet)
    jsonschema.Draft7Validator(crd_schemas[("argoproj.io/v1alpha1", "ApplicationSet")]).validate(body)
    steps = body["spec"]["strategy"]["rollingSync"]["steps"]
    waves = {e["cluster"]: int(e["wave"]) for e in body["spec"]["generators"][0]["list"]["elements"]}

    def step_of(cluster: str) -> int:
        labels = {"fleetgen/cluster": cluster, "fleetgen/rollout-wave": str(waves[cluster])}
        matching = [
            n
            for n, step in enumerate(steps)
            if all((labels.get(e["key"]) in e["values"]) == (e["operator"] == "In") for e in step["matchExpressions"])
        ]
        assert len(matching) == 1, (cluster, matching)
        return matching[0]

    assert waves["dispatch-eastus"] < max(waves[EAST], waves[WEST])  # staging rolls out before production
    assert step_of("dispatch-eastus") > max(step_of(EAST), step_of(WEST))
    assert step_of("dispatch-eastus") == len(steps) - 1


@pytest.mark.parametrize("mode", ["hub", "in-cluster"])
def test_argo_cd_projects_allow_what_multikueue_renders(mode: str, tmp_path: Path, cli_run: Run) -> None:
    # the manager's AdmissionChecks, MultiKueueConfigs and MultiKueueClusters, its kubeconfig ExternalSecret, and each
    # worker's ServiceAccount, token Secret and ClusterRole(Binding) in Kueue's namespace: every one synced by its project
    text = replace_once(TEXT, "engine: flux", f"engine: argocd, argocd: {{mode: {mode}}}")
    text = replace_once(text, "kubeconfig: {secret: westus2-kubeconfig}", "kubeconfig: {externalSecret: {store: vault, key: westus2}}")
    (tmp_path / "fleet.yaml").write_text(text)
    done = cli_run("validate", cwd=tmp_path)
    assert "does not allow" not in done.stderr, done.stderr
    assert done.returncode in (0, 1) and " 0 error(s)" in done.stderr + done.stdout, done.stderr

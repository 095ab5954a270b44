"""MultiKueue: a manager's queues dispatch to workers, and fleetgen keeps both sides in step.

The case fleet tests/cases/multikueue-two-models has a manager and workers of two GPU models. Its rendered
tree goes through the real `kubectl kustomize` and the upstream Kueue CRDs with their CEL rules; every
refusal is pinned to its line and column; a property builds random MultiKueue fleets and checks that
every team on the manager finds its namespace and a LocalQueue that can admit the queue's GPU model on
every worker. What the rest of fleetgen makes of it (job new, the gate, alerts, report, drift, import) is in
test_multikueue_fleet.py.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import test_helm_charts as charts
import yaml
from conftest import REPO, findings_of, line_of, replace_once
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.model import Fleet
from fleetgen.render import cluster_objects
from fleetgen.render.multikueue import MANAGER_RULES, flavor_name
from fleetgen.render.rendered import Rendered
from fleetgen.validation.rendered_objects import Schemas, validate_rendered

CASE = REPO / "tests" / "cases" / "multikueue-two-models"
TEXT = (CASE / "fleet.yaml").read_text(encoding="utf-8")
Build = Callable[[Path], list[dict[str, Any]]]
Run = Callable[..., subprocess.CompletedProcess[str]]
CRDs = dict[tuple[str, str], dict[str, Any]]
WEST, EAST = "training-westus2", "training-eastus"
H100_QUEUE = "    - {name: fleet-h100, gpuModel: H100, workers: [training-eastus]}\n"


def _load(text: str) -> Fleet:
    return load_fleet_text(text.encode()).fleet


def _objects(fleet: Fleet, cluster: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    index = [c.name for c in fleet.clusters].index(cluster)
    return {m.key: m.body for m in cluster_objects(fleet, index)}


def _at(text: str, line_needle: str, token: str) -> str:
    """`line:column` of `token` on the first line holding `line_needle`."""
    line = line_of(text, line_needle)
    return f"{line}:{text.splitlines()[line - 1].index(token) + 1}"


def _errors(text: str, needle: str = "") -> list[str]:
    return [f for f in findings_of(text) if needle in f]


def test_manager_objects_dispatch_each_gpu_model_to_its_workers() -> None:
    fleet = _load(TEXT)
    manager = _objects(fleet, "dispatch-eastus")
    a100 = manager[("ClusterQueue", "", "fleet-a100")]["spec"]
    assert a100["admissionChecksStrategy"] == {"admissionChecks": [{"name": "fleet-a100"}]}
    [group] = a100["resourceGroups"]
    [flavor] = group["flavors"]  # one GPU model per manager queue: kubernetes-sigs/kueue#16010 cannot happen
    assert flavor["name"] == flavor_name("A100") == "multikueue-a100"
    # westus2's 3 x 8 A100s and eastus's 2 x 8, CPU and memory of the same nodes
    assert {r["name"]: r["nominalQuota"] for r in flavor["resources"]} == {"cpu": 470, "memory": "4250Gi", "nvidia.com/gpu": 40}
    assert a100["namespaceSelector"] == {"matchExpressions": [{"key": "team", "operator": "In", "values": ["vision"]}]}
    check = manager[("AdmissionCheck", "", "fleet-a100")]["spec"]
    assert check == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "fleet-a100"},
    }
    assert manager[("MultiKueueConfig", "", "fleet-a100")]["spec"] == {"clusters": ["training-westus2", "training-eastus"]}
    sources = {
        name: body["spec"]["clusterSource"]["kubeConfig"] for (kind, _, name), body in manager.items() if kind == "MultiKueueCluster"
    }
    assert sources == {
        "training-eastus": {"locationType": "Secret", "location": "multikueue-training-eastus"},
        "training-westus2": {"locationType": "Secret", "location": "westus2-kubeconfig"},
    }
    assert manager[("ResourceFlavor", "", "multikueue-h100")]["spec"] == {}  # nothing runs on the manager
    assert not any(kind in ("ServiceAccount", "ClusterRole") for kind, _, _ in manager)  # the manager is no worker


def test_workers_get_the_teams_and_the_managers_least_privilege_access() -> None:
    fleet = _load(TEXT)
    westus2 = _objects(fleet, "training-westus2")
    # vision submits to fleet-a100 on the manager and lists only training-eastus: fleetgen puts it on westus2 too
    assert ("Namespace", "", "team-vision") in westus2
    assert westus2[("LocalQueue", "team-vision", "team-vision-queue")]["spec"]["clusterQueue"] == "gpu-cluster-queue"
    assert ("Namespace", "", "team-llm") not in westus2  # llm's queue dispatches H100s, westus2 has none
    eastus = _objects(fleet, "training-eastus")
    assert ("LocalQueue", "team-llm", "team-llm-queue") in eastus
    assert eastus[("ResourceQuota", "team-vision", "gpu-quota")]["spec"]["hard"]["requests.nvidia.com/gpu"] == "8"
    role = eastus[("ClusterRole", "", "multikueue-manager")]
    assert role["rules"] == list(MANAGER_RULES)
    granted = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert granted == {
        ("kueue.x-k8s.io", "workloads"),
        ("kueue.x-k8s.io", "workloads/status"),
        ("kueue.x-k8s.io", "clusterqueues"),
        ("kueue.x-k8s.io", "localqueues"),
        ("batch", "jobs"),
        ("batch", "jobs/status"),
    }
    binding = eastus[("ClusterRoleBinding", "", "multikueue-manager")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "multikueue-manager", "namespace": "kueue-system"}]
    token = eastus[("Secret", "kueue-system", "multikueue-manager")]
    assert token["type"] == "kubernetes.io/service-account-token" and "data" not in token  # the API server fills it in


def test_the_manager_teams_quota_does_not_count_against_its_gpus() -> None:
    # the manager has no GPU; its teams' quotas there would otherwise be refused as above its 0 GPUs
    assert _errors(TEXT) == []
    # a team that runs on the manager's own queue still counts
    text = replace_once(TEXT, "      dispatch-eastus: {queue: fleet-h100}\n", "      dispatch-eastus:\n")
    [found] = _errors(text, "GPU quotas on dispatch-eastus")
    assert "add up to 16 (llm 16), above its 0 GPUs" in found


def test_the_case_passes_the_upstream_crds_and_their_cel_rules(crd_schemas: CRDs) -> None:
    fleet = _load(TEXT)
    found = validate_rendered(Rendered(fleet), Schemas(crds=crd_schemas), strict=True)
    assert [f.message for f in found if f.severity is Severity.ERROR] == []
    kinds = {kind for index in range(len(fleet.clusters)) for kind, _, _ in (m.key for m in cluster_objects(fleet, index))}
    assert {"MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck"} <= kinds


def test_the_upstream_cel_rules_catch_what_fleetgen_refuses_first(crd_schemas: CRDs) -> None:
    """The CRD's own rules (uniqueness, at most 20 clusters) reject a MultiKueueConfig fleetgen would never write."""
    import jsonschema

    schema = crd_schemas[("kueue.x-k8s.io/v1beta2", "MultiKueueConfig")]
    good = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": "q"}, "spec": {"clusters": ["a"]}}
    jsonschema.Draft7Validator(schema).validate(good)
    too_many = {**good, "spec": {"clusters": [f"w{i}" for i in range(21)]}}
    assert list(jsonschema.Draft7Validator(schema).iter_errors(too_many))


def test_kustomize_builds_manager_and_workers(tmp_path: Path, kustomize: Build, cli_run: Run) -> None:
    (tmp_path / "fleet.yaml").write_text(TEXT)
    done = cli_run("render", "fleet.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    fleet = _load(TEXT)
    for cluster in ("dispatch-eastus", "training-eastus", "training-westus2"):
        built = {
            (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in kustomize(tmp_path / "clusters" / cluster)
        }
        assert built == _objects(fleet, cluster)
    values = yaml.safe_load_all((tmp_path / "clusters" / "dispatch-eastus" / "platform" / "platform.yaml").read_text())
    kueue = next(d for d in values if d and d["kind"] == "HelmRelease" and d["metadata"]["name"] == "kueue")
    config = yaml.safe_load(kueue["spec"]["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["multiKueue"] == {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental"}
    assert config["featureGates"]["MultiKueueKubeConfigPathValidation"] is True


# Each refusal at its line and column.
def test_the_manager_is_not_its_own_worker() -> None:
    text = replace_once(TEXT, "workers: [training-eastus]}", "workers: [training-eastus, dispatch-eastus]}")
    [found] = _errors(text, "is the manager")
    assert (
        found
        == f"{_at(text, 'name: fleet-h100', 'dispatch-eastus]')}: multiKueue.queues[0].workers[1]: dispatch-eastus is the manager; Kueue does not run a manager as a worker of itself"
    )


def test_repeated_and_unknown_workers() -> None:
    text = replace_once(TEXT, "workers: [training-eastus]}", "workers: [training-eastus, training-eastus]}")
    [found] = _errors(text, "workers")
    assert found.startswith(f"{_at(text, 'name: fleet-h100', 'training-eastus]')}: multiKueue.queues[0].workers[1]: ")
    text = replace_once(TEXT, "workers: [training-eastus]}", "workers: [training-east]}")
    [found] = _errors(text, "unknown cluster")
    assert found.startswith(
        f"{_at(text, 'name: fleet-h100', 'training-east]')}: multiKueue.queues[0].workers[0]: unknown cluster 'training-east'"
    )


def test_more_than_twenty_workers() -> None:
    clusters = "".join(
        f"  - {{name: w{i}, region: eastus, environment: production, versionSet: prod, nodePools: [{{name: h, vmSize: Standard_ND96isr_H100_v5, "
        "gpuModel: H100, gpusPerNode: 8, cpuPerNode: 94, memoryPerNode: 1800Gi, maxNodes: 1, scaling: spot, labels: {a: h}}]}\n"
        for i in range(20)
    )
    text = replace_once(TEXT, "multiKueue:\n", clusters + "multiKueue:\n")
    text = replace_once(text, H100_QUEUE, "    - {name: fleet-h100, gpuModel: H100, select: {regions: [eastus]}}\n")
    [found] = _errors(text, "at most 20")
    assert (
        found
        == f"{_at(text, 'name: fleet-h100', 'select')}: multiKueue.queues[0].select: 21 workers; a MultiKueueConfig holds at most 20: split the queue"
    )


def test_a_worker_without_the_queues_gpu_model() -> None:
    text = replace_once(TEXT, "workers: [training-eastus]}", "workers: [training-eastus, training-westus2]}")
    [found] = _errors(text, "no node pool")
    assert (
        found
        == f"{_at(text, 'name: fleet-h100', 'training-westus2]')}: multiKueue.queues[0].workers[1]: training-westus2 has no node pool of GPU model H100 (its models: A100)"
    )


def test_a_worker_without_a_queue_of_the_model_is_refused_at_the_worker_not_a_crash() -> None:
    """A worker whose queues hand out no pool of the queue's model (here: none at all) would never admit what is
    dispatched to it; the team a manager queue places there has no queue to feed either (it crashed before)."""
    text = replace_once(TEXT, "  - name: training-westus2\n", "  - name: training-westus2\n    queues: []\n")
    [found] = _errors(text, "no queue with pools")
    assert found == (
        f"{_at(text, 'name: fleet-a100', 'training-westus2,')}: multiKueue.queues[1].workers[0]: training-westus2 has no queue "
        "with pools of GPU model A100 (its queues: none): nothing dispatched there could be admitted"
    )


def test_a_select_that_matches_nothing() -> None:
    text = replace_once(TEXT, H100_QUEUE, "    - {name: fleet-h100, gpuModel: H100, select: {regions: [westus2]}}\n")
    [found] = _errors(text, "matches")
    assert found.startswith(f"{_at(text, 'name: fleet-h100', 'select')}: multiKueue.queues[0].select: no cluster but the manager has")


def test_a_team_whose_worker_queue_lacks_the_model_or_gpus() -> None:
    two_queues = "    nodePools:\n      - name: h100\n"
    text = replace_once(
        TEXT,
        two_queues,
        "    queues:\n      - {name: gpu-cluster-queue}\n      - {name: a100-only, flavors: [a100]}\n" + two_queues,
    )
    text = replace_once(
        text,
        "      dispatch-eastus: {queue: fleet-h100}\n",
        "      dispatch-eastus: {queue: fleet-h100}\n      training-eastus: {queue: a100-only}\n",
    )
    [found] = _errors(text, "LocalQueue on training-eastus")
    assert found == (
        f"{_at(text, 'training-eastus: {queue: a100-only}', 'a100-only')}: teams[0].clusters.training-eastus.queue: team llm's LocalQueue on "
        "training-eastus feeds a100-only, which has no pool of GPU model H100: what fleet-h100 dispatches there would never be "
        "admitted (queue gpu-cluster-queue has them)"
    )
    text = replace_once(TEXT, "training-eastus: {requests: {gpu: 8}}", "training-eastus: {requests: {gpu: 0}}")
    [found] = _errors(text, "no GPU quota")
    assert found.startswith(
        f"{_at(text, 'training-eastus: {requests: {gpu: 0}}', 'training-eastus')}: teams[1].clusters.training-eastus: team vision"
    )


def test_each_team_placed_on_workers_it_does_not_list_gets_one_note_naming_them() -> None:
    """fleetgen puts a team on every worker of its manager queue, at its default quota (and cost): validate says where."""
    notes = [f for f in findings_of(TEXT, Severity.NOTE) if "does not list" in f]
    assert notes == [
        f"{_at(TEXT, 'dispatch-eastus: {queue: fleet-h100}', 'dispatch-eastus')}: teams[0].clusters.dispatch-eastus: "
        "team llm's jobs in fleet-h100 are dispatched to training-eastus, which it does not list: fleetgen places it "
        "there at its default quota (16 GPUs), counted in its cost; list a worker under its clusters to set its own values",
        f"{_at(TEXT, 'dispatch-eastus: {queue: fleet-a100}', 'dispatch-eastus')}: teams[1].clusters.dispatch-eastus: "
        "team vision's jobs in fleet-a100 are dispatched to training-westus2, which it does not list: fleetgen places it "
        "there at its default quota (8 GPUs), counted in its cost; list a worker under its clusters to set its own values",
    ]
    listed = replace_once(
        TEXT, "      dispatch-eastus: {queue: fleet-a100}\n", "      dispatch-eastus: {queue: fleet-a100}\n      training-westus2: {}\n"
    )
    assert [f for f in findings_of(listed, Severity.NOTE) if "does not list" in f] == notes[:1]


def test_a_path_kubeconfig_outside_kueues_folder() -> None:
    for path, refused in (
        ("/etc/multikueue/kubeconfigs/westus2", False),
        ("/etc/multikueue/kubeconfigs/../../passwd", True),
        ("/tmp/k", True),
    ):
        text = replace_once(TEXT, "kubeconfig: {secret: westus2-kubeconfig}", f"kubeconfig: {{path: {path}}}")
        found = _errors(text, "outside")
        assert bool(found) == refused, (path, found)
        if refused:
            assert found[0].startswith(f"{_at(text, 'kubeconfig: {path', '/')}: multiKueue.workers.training-westus2.kubeconfig.path: ")


def test_a_kueue_pin_older_than_what_the_queues_use() -> None:
    text = replace_once(TEXT, "multiKueue:\n", "platform: {kueue: {version: 0.17.1}}\nmultiKueue:\n")
    text = replace_once(
        text, H100_QUEUE, "    - {name: fleet-h100, gpuModel: H100, workers: [training-eastus], quotaManagement: Automated}\n"
    )
    found = _errors(text, "Kueue")
    assert (
        f"{_at(text, 'quotaManagement: Automated', 'Automated')}: multiKueue.queues[0].quotaManagement: quotaManagement Automated needs Kueue 0.18"
        in found[1]
    )
    assert found[0].startswith(
        f"{_at(text, 'dispatcher: Incremental', 'Incremental')}: multiKueue.dispatcher: Kueue before 0.19 dispatches Incremental"
    )


def test_workers_or_select_and_an_external_dispatcher_name() -> None:
    text = replace_once(TEXT, H100_QUEUE, "    - {name: fleet-h100, gpuModel: H100}\n")
    [found] = _errors(text, "exactly one")
    assert found.startswith(f"{_at(text, 'name: fleet-h100', '{name')}: multiKueue.queues[0]: ")
    text = replace_once(TEXT, "  dispatcher: Incremental", "  dispatcher: External")
    [found] = _errors(text, "externalDispatcher")
    assert found.startswith(f"{_at(text, 'multiKueue:', 'multiKueue')}: multiKueue: ")
    text = replace_once(TEXT, "  dispatcher: Incremental", "  dispatcher: External\n  externalDispatcher: example.com/cheapest")
    assert _errors(text) == []


# Random MultiKueue fleets: whatever the workers and their order, both sides stay in step.
MODELS = ("A100", "H100", "L40S")


@st.composite
def multikueue_fleets(draw: st.DrawFn) -> str:
    count = draw(st.integers(2, 5))
    clusters = [
        "  - {name: manager, region: eastus, environment: production, versionSet: prod, nodePools: [{name: system, "
        "vmSize: D8, gpusPerNode: 0, cpuPerNode: 7, memoryPerNode: 28Gi, maxNodes: 2, scaling: on-demand, labels: {pool: system}}]}"
    ]
    has: dict[str, list[str]] = {m: [] for m in MODELS}
    for i in range(count):
        models = draw(st.lists(st.sampled_from(MODELS), min_size=1, max_size=3, unique=True))
        pools = ", ".join(
            f"{{name: {m.lower()}, vmSize: V{m}, gpuModel: {m}, gpusPerNode: 8, cpuPerNode: 94, memoryPerNode: 900Gi, "
            f"maxNodes: {draw(st.integers(1, 4))}, scaling: spot, labels: {{gpu: {m.lower()}}}}}"
            for m in models
        )
        region = draw(st.sampled_from(("eastus", "westus2")))
        clusters.append(f"  - {{name: w{i}, region: {region}, environment: production, versionSet: prod, nodePools: [{pools}]}}")
        for m in models:
            has[m].append(f"w{i}")
    queues, teams = [], []
    for m in MODELS:
        if not has[m]:
            continue
        if draw(st.booleans()):
            order = draw(st.permutations(has[m]))
            queues.append(f"    - {{name: fleet-{m.lower()}, gpuModel: {m}, workers: [{', '.join(order)}]}}")
        else:
            queues.append(f"    - {{name: fleet-{m.lower()}, gpuModel: {m}, select: {{}}}}")
    for t in range(draw(st.integers(1, 3))):
        queue = draw(st.sampled_from(queues)).split("name: ")[1].split(",")[0]
        teams.append(
            f"  - {{name: t{t}, group: g{t}, costCenter: cc-{t}, project: p{t}, quota: {{requests: {{cpu: 190, memory: 1800Gi, gpu: 16}}}}, "
            f"clusters: {{manager: {{queue: {queue}}}}}}}"
        )
    return "\n".join(
        [
            "apiVersion: fleetgen/v1alpha1",
            "kind: Fleet",
            "metadata: {name: pool, costCenter: cc-1}",
            "gitops: {engine: flux, repository: https://github.com/contoso/pool}",
            'versionSets: {prod: {kubernetes: 1.35.2, driver: 580.82.07, cuda: "13.0", cudnn: 9.17.0, containerd: 2.2.1}}',
            "capacity: {gpuOvercommit: 100.0}",
            "clusters:",
            *clusters,
            "multiKueue:",
            "  manager: manager",
            f"  dispatcher: {draw(st.sampled_from(('AllAtOnce', 'Incremental')))}",
            "  queues:",
            *queues,
            "teams:",
            *teams,
            "",
        ]
    )


@settings(deadline=None)
@given(multikueue_fleets())
def test_every_team_on_the_manager_finds_its_queue_on_every_worker(text: str) -> None:
    fleet = _load(text)
    assert fleet.multi_kueue is not None
    manager = _objects(fleet, "manager")
    for queue in fleet.multi_kueue.queues:
        workers = manager[("MultiKueueConfig", "", queue.name)]["spec"]["clusters"]
        assert workers == list(
            queue.workers or [c.name for c in fleet.clusters if any(p.gpu_model == queue.gpu_model for p in c.node_pools)]
        )
        gpus = 0
        for worker in workers:
            objects = _objects(fleet, worker)
            flavors = {
                name: body["metadata"]["labels"]["fleetgen/gpu-model"]
                for (kind, _, name), body in objects.items()
                if kind == "ResourceFlavor"
            }
            gpus += sum(
                p.gpus_per_node * p.max_nodes
                for c in fleet.clusters
                if c.name == worker
                for p in c.node_pools
                if p.gpu_model == queue.gpu_model
            )
            assert ("ClusterRole", "", "multikueue-manager") in objects
            for team in fleet.teams:
                if team.clusters["manager"] is None or team.clusters["manager"].queue != queue.name:  # type: ignore[union-attr]
                    continue
                ns = team.namespace
                assert ("Namespace", "", ns) in objects
                local = objects[("LocalQueue", ns, f"{ns}-queue")]
                cluster_queue = objects[("ClusterQueue", "", local["spec"]["clusterQueue"])]
                models = {flavors[f["name"]] for g in cluster_queue["spec"]["resourceGroups"] for f in g["flavors"]}
                assert queue.gpu_model in models
        [flavor] = manager[("ClusterQueue", "", queue.name)]["spec"]["resourceGroups"][0]["flavors"]
        assert {r["name"]: r["nominalQuota"] for r in flavor["resources"]}["nvidia.com/gpu"] == gpus


@settings(deadline=None)
@given(multikueue_fleets(), st.data())
def test_a_worker_list_that_names_the_manager_or_a_cluster_twice_is_refused_at_that_entry(text: str, data: st.DataObject) -> None:
    """Whatever the fleet, the manager or a repeated worker put anywhere in a listed queue is one error at that entry."""
    fleet = _load(text)
    assert fleet.multi_kueue is not None
    listed = [(q, queue) for q, queue in enumerate(fleet.multi_kueue.queues) if queue.workers]
    if not listed:
        return
    q, queue = data.draw(st.sampled_from(listed))
    workers = list(queue.workers or ())
    at = data.draw(st.integers(0, len(workers)))
    intruder = data.draw(st.sampled_from(["manager", *workers]))
    written = f"workers: [{', '.join(workers)}]"
    changed = workers[:at] + [intruder] + workers[at:]
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if f"name: {queue.name}," in row)
    edited = text.replace(
        f"name: {queue.name}, gpuModel: {queue.gpu_model}, {written}",
        f"name: {queue.name}, gpuModel: {queue.gpu_model}, workers: [{', '.join(changed)}]",
    )
    found = _errors(edited)
    index = at if intruder == "manager" else max(at, workers.index(intruder) + (1 if at <= workers.index(intruder) else 0))
    assert len(found) == 1, found
    assert found[0].startswith(f"{line}:"), found
    assert f"multiKueue.queues[{q}].workers[{index}]: " in found[0], (changed, found)


@settings(deadline=None)
@given(multikueue_fleets(), st.data())
def test_a_fleet_wide_job_lands_only_where_a_worker_admits_it(text: str, data: st.DataObject) -> None:
    """job new on the manager is refused exactly when every worker of the team's queue refuses the same ask, and
    each worker it names admits the very pod it writes."""
    from dataclasses import replace

    from fleetgen.errors import RefusedAsk
    from fleetgen.jobs.job_dispatch import resolve_anywhere
    from fleetgen.jobs.job_target import Ask, Target, resolve
    from fleetgen.model import Quantity
    from fleetgen.model.multikueue import queue_workers

    fleet = _load(text)
    assert fleet.multi_kueue is not None
    team = data.draw(st.sampled_from(fleet.teams))
    gpus, nodes = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 3))
    ask = Ask(team.name, "manager", "train", "registry.example.com/t:v1", gpus, nodes)
    queue = next(q for q in fleet.multi_kueue.queues if q.name == team.queue_on(fleet.clusters[0]))
    workers = queue_workers(fleet.multi_kueue, fleet.clusters)[queue.name]

    def on(worker: str, asked: Ask) -> Target | None:
        try:
            return resolve(fleet, replace(asked, cluster=worker, gpu_model=queue.gpu_model), nodes, gang=False)
        except RefusedAsk:
            return None

    try:
        target = resolve_anywhere(fleet, ask, nodes, gang=False)
    except RefusedAsk as refused:
        assert all(on(w, ask) is None for w in workers), str(refused)
        return
    assert target.cluster.name == "manager" and target.workers and set(target.workers) <= set(workers)
    pod = target.pod
    sized = replace(ask, cpu=Quantity(f"{int(pod.cpu * 1000)}m"), memory=Quantity(str(int(pod.memory))))
    for worker in target.workers:
        admitted = on(worker, sized)
        assert admitted is not None and (admitted.pod.cpu, admitted.pod.memory) == (pod.cpu, pod.memory), worker
    assert [w for w in workers if on(w, sized) is not None] == list(target.workers)  # in dispatch order, none left out


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_render_is_the_same_twice(engine: str) -> None:
    text = TEXT if engine == "flux" else replace_once(TEXT, "engine: flux", "engine: argocd")
    first = [cluster_objects(_load(text), i) for i in range(3)]
    assert first == [cluster_objects(_load(text), i) for i in range(3)]


def test_the_code_uses_the_facts_it_cites() -> None:
    from fleetgen.checks import multikueue as checks
    from fleetgen.model import multikueue as model
    from fleetgen.render import multikueue as render

    facts = {f["name"]: f for f in yaml.safe_load((REPO / "fleetgen" / "compat" / "multikueue.yaml").read_text())["facts"]}
    assert all(f["source"] and f["url"].startswith("https://github.com/kubernetes-sigs/kueue/") for f in facts.values())
    assert facts["admissionCheckController"]["value"] == render.CONTROLLER
    assert facts["kubeconfigSecretKey"]["value"] == render.KUBECONFIG_KEY
    assert facts["maxWorkers"]["value"] == model.MAX_WORKERS
    assert facts["kubeconfigPathFolder"]["value"] == model.KUBECONFIG_DIR
    assert facts["dispatchers"]["value"] == model.DISPATCHERS
    assert facts["quotaAutomation"]["value"] == str(checks.QUOTA_AUTOMATION)
    assert facts["workerOrder"]["value"] == str(checks.CONFIG_ORDER)


helm = charts.helm  # the session fixture that runs the real `helm template` on the vendored charts


def test_the_pinned_kueue_chart_takes_the_managers_multikueue_settings(helm: Any) -> None:
    fleet = _load(TEXT)
    index = [c.name for c in fleet.clusters].index("dispatch-eastus")
    folder, namespace, values = charts._rendered_values(fleet, index)["kueue"]
    objects = helm(folder, charts.RELEASES["kueue"], namespace, values, "1.35.2")
    assert charts._landed("kueue", values, objects, charts.RELEASES["kueue"]) == []
    config = yaml.safe_load(charts.one(objects, "ConfigMap", "kueue-manager-config")["data"]["controller_manager_config.yaml"])
    assert config["multiKueue"]["dispatcherName"] == "kueue.x-k8s.io/multikueue-dispatcher-incremental"
    assert config["integrations"]["frameworks"] == ["batch/job"]  # every worker serves it: kubernetes-sigs/kueue#12400
    served = {
        (c["spec"]["names"]["kind"], v["name"])
        for c in objects
        if c["kind"] == "CustomResourceDefinition"
        for v in c["spec"]["versions"]
        if v.get("served")
    }
    assert {("MultiKueueCluster", "v1beta2"), ("MultiKueueConfig", "v1beta2"), ("AdmissionCheck", "v1beta2")} <= served
    worker = [c.name for c in fleet.clusters].index("training-eastus")
    worker_config = yaml.safe_load(charts._rendered_values(fleet, worker)["kueue"][2]["managerConfig"]["controllerManagerConfigYaml"])
    assert "multiKueue" not in worker_config and "jobset.x-k8s.io/jobset" in worker_config["integrations"]["frameworks"]


def test_an_external_secret_writes_the_kubeconfig_secret_and_a_path_needs_none() -> None:
    external = "kubeconfig: {externalSecret: {store: vault, key: multikueue/westus2, property: kubeconfig}}"
    text = replace_once(TEXT, "kubeconfig: {secret: westus2-kubeconfig}", external)
    manager = _objects(_load(text), "dispatch-eastus")
    secret = manager[("ExternalSecret", "kueue-system", "multikueue-training-westus2")]
    assert secret["spec"] == {
        "refreshInterval": "1h",
        "secretStoreRef": {"name": "vault", "kind": "ClusterSecretStore"},
        "target": {"name": "multikueue-training-westus2", "creationPolicy": "Owner"},
        "data": [{"secretKey": "kubeconfig", "remoteRef": {"key": "multikueue/westus2", "property": "kubeconfig"}}],
    }
    source = manager[("MultiKueueCluster", "", WEST)]["spec"]["clusterSource"]["kubeConfig"]
    assert source == {"locationType": "Secret", "location": "multikueue-training-westus2"}
    # fleetgen ships External Secrets' ExternalSecret schema (v2.9.0): the object is checked, and passes
    found = validate_rendered(Rendered(_load(text)), Schemas())
    assert not any("ExternalSecret" in f.message for f in found), found
    path = replace_once(TEXT, "kubeconfig: {secret: westus2-kubeconfig}", "kubeconfig: {path: /etc/multikueue/kubeconfigs/westus2}")
    manager = _objects(_load(path), "dispatch-eastus")
    assert manager[("MultiKueueCluster", "", WEST)]["spec"]["clusterSource"]["kubeConfig"] == {
        "locationType": "Path",
        "location": "/etc/multikueue/kubeconfigs/westus2",
    }
    both = replace_once(TEXT, "kubeconfig: {secret: westus2-kubeconfig}", "kubeconfig: {secret: a, path: /etc/multikueue/kubeconfigs/a}")
    [found] = _errors(both, "either path")
    assert found.startswith(f"{_at(both, 'kubeconfig: {secret: a', 'kubeconfig')}: multiKueue.workers.training-westus2.kubeconfig: ")

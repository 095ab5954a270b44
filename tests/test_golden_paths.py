"""`fleetgen job new`: every team gets a job its cluster admits, bad asks are refused in one line, every object validates.

Each test runs the installed `fleetgen` and checks what it prints against the rendered tree of the
same fleet (LocalQueues, ClusterQueues, ResourceFlavors, quotas, priority classes, Volcano queues),
and against kubernetes-validate strict for the cluster's Kubernetes version or the upstream CRDs.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.checks.admission import SYSTEM_RESERVE
from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.jobs.serving import disruption_budget, startup_failure_threshold
from fleetgen.model import Fleet, Quantity
from fleetgen.render.layout import cluster_objects

Run = Callable[..., subprocess.CompletedProcess[str]]
Schemas = dict[tuple[str, str], dict[str, Any]]
COST_LABELS = ("team", "project", "cost-center", "environment")
IMAGE = "contosoai.azurecr.io/trainer:v1"


def job_new(cli_run: Run, fleet: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_run("job", "new", "--fleet", str(fleet), "--image", IMAGE, *args)


def printed(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def check_schema(obj: dict[str, Any], fleet: Fleet, cluster: str, crd_schemas: Schemas) -> None:
    """kubernetes-validate strict at the cluster's own version; custom resources against the upstream CRD."""
    if (obj["apiVersion"], obj["kind"]) in crd_schemas:
        jsonschema.Draft7Validator(crd_schemas[(obj["apiVersion"], obj["kind"])]).validate(obj)
    else:
        version = next(fleet.version_sets[c.version_set].kubernetes for c in fleet.clusters if c.name == cluster)
        kubernetes_validate.validate(obj, str(version), strict=True)


def rendered(fleet: Fleet, cluster: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    index = [c.name for c in fleet.clusters].index(cluster)
    return {(m.key.kind, m.key.namespace, m.key.name): m.body for m in cluster_objects(fleet, index)}


def quantity(value: Any) -> Quantity:
    return Quantity(str(value))


def example_placements() -> list[tuple[str, str]]:
    fleet = load_fleet(EXAMPLE).fleet
    return [(team.name, cluster) for team in fleet.teams for cluster in team.clusters]


@pytest.mark.parametrize(("team", "cluster"), example_placements())
def test_every_team_gets_a_job_its_cluster_admits(team: str, cluster: str, cli_run: Run, crd_schemas: Schemas) -> None:
    fleet = load_fleet(EXAMPLE).fleet
    [job] = printed(job_new(cli_run, EXAMPLE, "--team", team, "--cluster", cluster, "--name", "train", "--gpus", "1"))
    check_schema(job, fleet, cluster, crd_schemas)
    tree = rendered(fleet, cluster)
    ns = f"team-{team}"
    assert (job["kind"], job["metadata"]["namespace"]) == ("Job", ns)
    assert job["spec"]["suspend"] is True
    # the LocalQueue the render gives the team there, and the ResourceFlavors its ClusterQueue hands out
    [local_queue] = [body for (kind, namespace, _), body in tree.items() if kind == "LocalQueue" and namespace == ns]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == local_queue["metadata"]["name"]
    cluster_queue = tree[("ClusterQueue", "", local_queue["spec"]["clusterQueue"])]
    flavors = [tree[("ResourceFlavor", "", f["name"])] for f in cluster_queue["spec"]["resourceGroups"][0]["flavors"]]
    pod = job["spec"]["template"]["spec"]
    matching = [f for f in flavors if pod["nodeSelector"].items() <= f["spec"]["nodeLabels"].items()]
    assert matching, f"no flavor of {cluster_queue['metadata']['name']} has nodes labelled {pod['nodeSelector']}"
    for flavor in matching:  # the pod tolerates every taint of every pool it may land on
        assert all(t in pod.get("tolerations", []) for t in flavor["spec"].get("tolerations", []))
    # training's default priority class (fleet.yaml's scheduling), which the rendered quota does not bar
    barred = tree.get(("ResourceQuota", ns, "disallowed-priority-classes"))
    barred_names = barred["spec"]["scopeSelector"]["matchExpressions"][0]["values"] if barred else []
    assert pod["priorityClassName"] == fleet.scheduling.default_priority_classes["training"] == "scheduled-training"
    assert pod["priorityClassName"] not in barred_names and ("PriorityClass", "", "scheduled-training") in tree
    assert_restricted_with_shm(pod)
    # GPU requests equal limits, and the pod fits the team's ResourceQuota
    [container] = pod["containers"]
    resources = container["resources"]
    assert resources["requests"] == resources["limits"] and resources["requests"]["nvidia.com/gpu"] == 1
    hard = tree[("ResourceQuota", ns, "gpu-quota")]["spec"]["hard"]
    for scope in ("requests", "limits"):
        for resource, value in resources[scope].items():
            if f"{scope}.{resource}" in hard:
                assert quantity(value).value <= quantity(hard[f"{scope}.{resource}"]).value
    for labels in (job["metadata"]["labels"], job["spec"]["template"]["metadata"]["labels"]):
        assert all(key in labels for key in COST_LABELS) and labels["team"] == team
        assert "app.kubernetes.io/managed-by" not in labels  # drift would call a submitted job an extra object


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--team", "nlp", "--cluster", "training-eastus", "--gpus", "8", "--nodes", "2"],
            "team nlp's GPU quota on training-eastus is 8; this asks for 16 (2 x 8): ask for at most 8",
        ),
        (
            ["--team", "nlp", "--cluster", "dev-eastus", "--gpus", "1", "--gpu-model", "H100"],
            "dev-eastus has no H100 GPUs; it has T4, A10G",
        ),
        (
            ["--team", "robotics", "--cluster", "training-eastus", "--gpus", "1", "--priority", "production-inference"],
            "team robotics may not use priority class production-inference; allowed: exploratory (1000), scheduled-training (100000)",
        ),
        (
            ["--team", "robotics", "--cluster", "training-eastus", "--gpus", "1", "--gpu-model", "H100"],
            "team robotics's queue gpu-cluster-queue on training-eastus hands out no H100 GPUs; it hands out A100",
        ),
        (
            ["--team", "robotics", "--cluster", "prod-inference-eastus", "--gpus", "1"],
            "team robotics is not on prod-inference-eastus; it is on training-eastus, dev-eastus",
        ),
        (
            ["--team", "nlp", "--cluster", "prod-inference-eastus", "--gpus", "2"],
            "A100 nodes on prod-inference-eastus have at most 1 GPU(s) each; ask for at most 1 per node (--gpus) on more nodes (--nodes)",
        ),
    ],
    ids=[
        "above-quota",
        "gpu-model-the-cluster-lacks",
        "priority-class-not-allowed",
        "gpu-model-the-queue-lacks",
        "not-placed",
        "larger-than-a-node",
    ],
)
def test_refused_asks_exit_1_with_one_line_saying_what_is_allowed(args: list[str], message: str, cli_run: Run) -> None:
    done = job_new(cli_run, EXAMPLE, "--name", "train", *args)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"fleetgen: {message}\n")


def assert_restricted_with_shm(pod: dict[str, Any]) -> None:
    """What Pod Security `restricted` demands of every pod and container, and a memory /dev/shm a quarter of the pod's memory."""
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["automountServiceAccountToken"] is False
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False and context["capabilities"] == {"drop": ["ALL"]}
        assert context["runAsNonRoot"] is True and context["seccompProfile"] == {"type": "RuntimeDefault"}
        assert "privileged" not in context and "runAsUser" not in context  # the image's own non-root user
        assert container["imagePullPolicy"] == "Always"  # the registry, not another team's cached copy, decides
        assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    [shm] = [v for v in pod["volumes"] if v["name"] == "dshm"]
    assert shm["emptyDir"]["medium"] == "Memory"
    memory = quantity(pod["containers"][0]["resources"]["limits"]["memory"]).value
    assert quantity(shm["emptyDir"]["sizeLimit"]).value == (memory / 4) // 1024**2 * 1024**2  # counted in the pod's memory
    assert all("hostPath" not in v for v in pod["volumes"]) and not pod.get("hostNetwork") and not pod.get("hostIPC")


def test_multi_node_on_kueue_is_an_indexed_job_admitted_whole(cli_run: Run, crd_schemas: Schemas) -> None:
    """dev-eastus has no Volcano, so a two-node job is an indexed Job that Kueue admits as one workload."""
    fleet = load_fleet(EXAMPLE).fleet
    done = job_new(cli_run, EXAMPLE, "--team", "nlp", "--cluster", "dev-eastus", "--name", "llm", "--gpus", "1", "--nodes", "2")
    job, service = printed(done)
    for obj in (job, service):
        check_schema(obj, fleet, "dev-eastus", crd_schemas)
    spec = job["spec"]
    assert (spec["suspend"], spec["completionMode"], spec["completions"], spec["parallelism"]) == (True, "Indexed", 2, 2)
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-nlp-queue"
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] == "llm"
    assert service["spec"] == {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"batch.kubernetes.io/job-name": "llm"}}
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env == {"WORLD_SIZE": "2", "MASTER_ADDR": "llm-0.llm"}
    # the first GPU model of the queue, T4: each pod gets a whole one-GPU node's CPU and memory, less the system reserve
    t4 = next(p for c in fleet.clusters if c.name == "dev-eastus" for p in c.node_pools if p.gpu_model == "T4")
    requests = pod["containers"][0]["resources"]["requests"]
    assert (str(t4.cpu_per_node), str(t4.memory_per_node), SYSTEM_RESERVE) == ("3", "24Gi", {"cpu": 1, "memory": 4 * 1024**3})
    assert requests == {"cpu": 2, "memory": "20Gi", "nvidia.com/gpu": 1}


VOLCANO_FLEET = EXAMPLE.read_text(encoding="utf-8")  # training-eastus: Volcano on the on-demand pools, Kueue on the spot A100s


def test_multi_node_on_a_volcano_cluster_is_a_gang_job_in_the_teams_volcano_queue(
    cli_run: Run, crd_schemas: Schemas, tmp_path: Path
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(VOLCANO_FLEET, encoding="utf-8")
    fleet = load_fleet_text(VOLCANO_FLEET.encode()).fleet
    gang = ["--team", "robotics", "--cluster", "training-eastus", "--name", "sim", "--gpus", "2", "--nodes", "2"]
    [job] = printed(job_new(cli_run, path, *gang, "--gpu-model", "H100"))
    check_schema(job, fleet, "training-eastus", crd_schemas)
    assert (job["apiVersion"], job["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")
    spec = job["spec"]
    assert (spec["minAvailable"], spec["schedulerName"]) == (2, "volcano")
    assert ("Queue", "", spec["queue"]) in rendered(fleet, "training-eastus")  # the Volcano Queue the render gives robotics
    [task] = spec["tasks"]
    assert task["replicas"] == 2
    pod = task["template"]["spec"]
    assert pod["nodeSelector"] == {"accelerator": "nvidia-h100"} and pod["priorityClassName"] == "scheduled-training"
    assert_restricted_with_shm(pod)
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2
    # an A100 gang takes Volcano's on-demand A100s, never the spot A100s Kueue hands out
    [a100] = printed(job_new(cli_run, path, *gang, "--gpu-model", "A100"))
    a100_pod = a100["spec"]["tasks"][0]["template"]["spec"]
    assert a100_pod["nodeSelector"] == {"accelerator": "nvidia-a100", "kubernetes.azure.com/scalesetpriority": "regular"}
    # one node on the same cluster still goes through Kueue, on the pools Kueue hands out
    [single] = printed(job_new(cli_run, path, "--team", "robotics", "--cluster", "training-eastus", "--name", "one", "--gpus", "2"))
    check_schema(single, fleet, "training-eastus", crd_schemas)
    assert single["kind"] == "Job" and single["spec"]["template"]["spec"]["nodeSelector"] == {
        "accelerator": "nvidia-a100",
        "kubernetes.azure.com/scalesetpriority": "spot",
    }


def test_startup_failure_threshold_covers_the_load_time() -> None:
    assert startup_failure_threshold(300) == 30  # the seed's 30 x 10 s
    assert startup_failure_threshold(600) == 60  # the seed's gotcha: 10 minutes
    assert startup_failure_threshold(95) == 10  # rounded up, never short
    assert startup_failure_threshold(1) == 1


def served(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    objects = {obj["kind"]: obj for obj in printed(done)}
    assert list(objects) == ["Deployment", "Service", "ServiceMonitor", "PodDisruptionBudget"]
    return objects


def test_inference_deployment_has_the_seeds_probes_and_its_slo_tier(cli_run: Run, crd_schemas: Schemas) -> None:
    fleet = load_fleet(EXAMPLE).fleet
    args = ["--team", "data-science", "--cluster", "prod-inference-eastus", "--name", "ranker", "--gpus", "1", "--kind", "inference"]
    tier = next(e.tier for t in fleet.teams if t.name == "data-science" for e in t.endpoints if e.name == "ranking")
    done = job_new(cli_run, EXAMPLE, *args, "--endpoint", "ranking", "--load-time", "10m")
    deployment = served(done)["Deployment"]
    check_schema(deployment, fleet, "prod-inference-eastus", crd_schemas)
    assert deployment["kind"] == "Deployment" and deployment["metadata"]["namespace"] == "team-data-science"
    pod = deployment["spec"]["template"]
    for labels in (deployment["metadata"]["labels"], pod["metadata"]["labels"]):
        assert labels["fleetgen/slo-tier"] == tier == "real-time" and all(key in labels for key in COST_LABELS)
    [container] = pod["spec"]["containers"]
    assert container["startupProbe"] == {
        "httpGet": {"path": "/health", "port": "http"},
        "initialDelaySeconds": 30,
        "periodSeconds": 10,
        "failureThreshold": 60,
    }
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready" and container["livenessProbe"]["periodSeconds"] == 30
    assert container["ports"] == [{"name": "http", "containerPort": 8080}]
    # the real-time tier's default class (fleet.yaml's scheduling), never the lowest the team may use
    assert pod["spec"]["priorityClassName"] == fleet.scheduling.default_priority_classes["real-time"] == "production-inference"
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert_restricted_with_shm(pod["spec"])
    # Kueue holds back pods in team namespaces that name no queue: the Deployment names the team's LocalQueue.
    local_queue = rendered(fleet, "prod-inference-eastus")[("LocalQueue", "team-data-science", "team-data-science-queue")]
    assert deployment["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == local_queue["metadata"]["name"]
    assert "LocalQueue team-data-science-queue (Kueue admits each pod)" in done.stderr


def test_an_endpoint_is_served_scraped_with_its_slo_labels_spread_and_kept_through_drains(cli_run: Run, crd_schemas: Schemas) -> None:
    """chat: Deployment, Service, ServiceMonitor and PodDisruptionBudget, each valid for the cluster, wired to each other."""
    fleet = load_fleet(EXAMPLE).fleet
    args = ["--team", "nlp", "--cluster", "prod-inference-eastus", "--name", "chat-server", "--gpus", "1", "--kind", "inference"]
    done = job_new(cli_run, EXAMPLE, *args, "--endpoint", "chat", "--replicas", "4", "--health-path", "/healthz")
    objects = served(done)
    for obj in objects.values():
        check_schema(obj, fleet, "prod-inference-eastus", crd_schemas)
        assert obj["metadata"]["namespace"] == "team-nlp" and all(key in obj["metadata"]["labels"] for key in COST_LABELS)
    deployment, service, monitor, budget = objects.values()
    pod = deployment["spec"]["template"]
    # the Service reaches the server's named port; the ServiceMonitor selects the Service, on that port
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    [port] = service["spec"]["ports"]
    assert port["targetPort"] == pod["spec"]["containers"][0]["ports"][0]["name"] == "http"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"]) == (port["name"], "/metrics")
    # the fleet's Prometheus selects monitors by the rule labels; the scrape sets every label the SLO rules select
    assert fleet.alerts.rule_labels.items() <= monitor["metadata"]["labels"].items()
    chat = next(e for t in fleet.teams if t.name == "nlp" for e in t.endpoints if e.name == "chat")
    relabeled = {r["targetLabel"]: r["replacement"] for r in endpoint["relabelings"] if r["action"] == "replace"}
    assert relabeled == dict(chat.metrics.selector) == {"service": "chat"}  # not the Service's own name, chat-server
    # spread over nodes (hard) and zones (soft), counting this revision's pods only
    spread = {c["topologyKey"]: c for c in pod["spec"]["topologySpreadConstraints"]}
    assert spread["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule"
    assert spread["topology.kubernetes.io/zone"]["whenUnsatisfiable"] == "ScheduleAnyway"
    for constraint in spread.values():
        assert constraint["labelSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        assert constraint["matchLabelKeys"] == ["pod-template-hash"]
    # a driver upgrade drains a quarter of the nodes at once: a quarter of the replicas may go, the rest serve
    assert budget["spec"]["selector"] == deployment["spec"]["selector"]
    assert (budget["spec"]["maxUnavailable"], budget["spec"]["unhealthyPodEvictionPolicy"]) == (1, "AlwaysAllow")
    probes = [pod["spec"]["containers"][0][p]["httpGet"]["path"] for p in ("livenessProbe", "startupProbe", "readinessProbe")]
    assert probes == ["/healthz", "/healthz", "/ready"]
    assert "warning" not in done.stderr


def test_the_disruption_budget_keeps_most_replicas_serving_and_never_blocks_a_drain() -> None:
    for replicas in range(2, 41):
        allowed = disruption_budget(replicas)
        assert 1 <= allowed <= max(1, replicas // 4) and replicas - allowed >= max(1, 3 * replicas // 4)
    assert disruption_budget(1) == 1  # a lone replica may be evicted: the drain goes on, and job new warns


def test_a_single_replica_is_warned_about_and_a_full_quota_rolls_without_surge(cli_run: Run, tmp_path: Path) -> None:
    args = ["--name", "mod", "--team", "nlp", "--cluster", "prod-inference-westeu", "--gpus", "1", "--kind", "inference"]
    single = job_new(cli_run, EXAMPLE, *args, "--endpoint", "moderation", "--replicas", "1")
    assert single.returncode == 0
    assert single.stderr.splitlines()[-1] == (
        "warning: 1 replica cannot serve while its node drains (the GPU Operator drains nodes for driver upgrades): "
        "the endpoint is down until its pod runs again elsewhere; ask for --replicas 2 or more"
    )
    quota = load_fleet(EXAMPLE).fleet.teams[1].quota_on("prod-inference-westeu").requests.gpu
    assert quota is not None
    full = served(job_new(cli_run, EXAMPLE, *args, "--endpoint", "moderation", "--replicas", str(quota)))["Deployment"]
    assert full["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}  # a surge pod would exceed the quota
    room = served(job_new(cli_run, EXAMPLE, *args, "--endpoint", "moderation", "--replicas", str(quota - 1)))["Deployment"]
    assert room["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


def test_inference_beside_volcano_names_no_kueue_queue(cli_run: Run) -> None:
    """Where Volcano runs, Kueue's pod-based integrations are off (fleetgen's Kueue configuration): a queue label would do nothing."""
    args = ["--team", "nlp", "--cluster", "training-eastus", "--name", "chat", "--gpus", "1", "--kind", "inference", "--tier", "batch"]
    done = job_new(cli_run, EXAMPLE, *args)
    deployment = served(done)["Deployment"]
    assert "kueue.x-k8s.io/queue-name" not in deployment["metadata"]["labels"]
    assert "scheduled directly, not queued by Kueue" in done.stderr


def test_out_writes_its_own_file_and_refuses_anyone_elses(cli_run: Run, tmp_path: Path) -> None:
    args = ["--team", "nlp", "--cluster", "dev-eastus", "--name", "nb", "--gpus", "1"]
    shown = job_new(cli_run, EXAMPLE, *args)
    out = tmp_path / "job.yaml"
    for _ in range(2):  # a second run replaces fleetgen's own file
        done = job_new(cli_run, EXAMPLE, *args, "--out", str(out))
        assert done.returncode == 0 and done.stdout == "", done.stderr
        assert out.read_text(encoding="utf-8") == shown.stdout  # the same bytes as printed, every time
    mine = tmp_path / "mine.yaml"
    mine.write_text("kind: Job  # hand-written\n", encoding="utf-8")
    refused = job_new(cli_run, EXAMPLE, *args, "--out", str(mine))
    assert (refused.returncode, refused.stderr) == (
        2,
        f"fleetgen: {mine}: exists and was not written by fleetgen; pass --force to overwrite it\n",
    )
    assert mine.read_text(encoding="utf-8") == "kind: Job  # hand-written\n"
    assert job_new(cli_run, EXAMPLE, *args, "--out", str(mine), "--force").returncode == 0
    assert mine.read_text(encoding="utf-8") == shown.stdout
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left behind


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--team", "nlp", "--cluster", "dev-eastus", "--gpus", "1", "--tier", "batch"], "--tier: only with --kind inference"),
        (
            ["--team", "vision", "--cluster", "dev-eastus", "--gpus", "1"],
            "--team vision: no such team (known: data-science, nlp, robotics)",
        ),
        (
            ["--team", "nlp", "--cluster", "dev-eastus", "--gpus", "1", "--kind", "inference", "--tier", "batch", "--load-time", "soon"],
            "--load-time 'soon': a duration from 1s to 24h, such as 90s, 10m or 1h",
        ),
        (
            ["--team", "nlp", "--cluster", "dev-eastus", "--gpus", "1", "--kind", "inference"],
            "--kind inference needs --endpoint (one of the team's in fleet.yaml) or --tier (real-time, near-real-time, batch)",
        ),
        (
            ["--team", "nlp", "--cluster", "dev-eastus", "--gpus", "1", "--kind", "inference", "--endpoint", "chat"],
            "--endpoint chat: served on prod-inference-eastus, prod-inference-westeu, not on dev-eastus",
        ),
        (
            [
                "--team",
                "nlp",
                "--cluster",
                "prod-inference-eastus",
                "--gpus",
                "1",
                "--kind",
                "inference",
                "--endpoint",
                "chat",
                "--tier",
                "batch",
            ],
            "--tier batch: endpoint chat is real-time in fleet.yaml",
        ),
        (
            ["--team", "nlp", "--cluster", "prod-inference-eastus", "--gpus", "1", "--kind", "inference", "--endpoint", "search"],
            "--endpoint search: team nlp serves no such endpoint (it serves: chat, moderation)",
        ),
        (
            ["--team", "nlp", "--cluster", "dev-eastus", "--gpus", "1", "--command", "python 'train.py"],
            '--command "python \'train.py": No closing quotation',
        ),
    ],
    ids=[
        "serving-option-on-training",
        "unknown-team",
        "bad-load-time",
        "inference-without-tier",
        "endpoint-not-on-cluster",
        "tier-contradicts-endpoint",
        "unknown-endpoint",
        "unbalanced-quote",
    ],
)
def test_usage_errors_exit_2_in_one_line(args: list[str], message: str, cli_run: Run) -> None:
    done = job_new(cli_run, EXAMPLE, "--name", "x", *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"fleetgen: {message}\n")


def test_a_bad_name_is_a_usage_error(cli_run: Run) -> None:
    done = job_new(cli_run, EXAMPLE, "--team", "nlp", "--cluster", "dev-eastus", "--gpus", "1", "--name", "Train_1")
    assert (done.returncode, done.stderr) == (
        2,
        "fleetgen: --name 'Train_1': a lowercase DNS label of at most 50 characters (a-z, 0-9, '-')\n",
    )


def test_a_team_that_may_use_no_priority_class_is_refused_rather_than_given_the_barred_default(cli_run: Run, tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    text = replace_once(EXAMPLE.read_text(encoding="utf-8"), "priorityClasses: [scheduled-training, exploratory]", "priorityClasses: []")
    path.write_text(text, encoding="utf-8")
    done = job_new(cli_run, path, "--team", "robotics", "--cluster", "dev-eastus", "--name", "x", "--gpus", "1")
    assert (done.returncode, done.stderr) == (
        1,
        "fleetgen: team robotics may use none of the fleet's priority classes; list some in its priorityClasses\n",
    )


NARROW_VOLCANO_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: jobs.batch.volcano.sh}
spec:
  group: batch.volcano.sh
  names: {kind: Job, plural: jobs}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
            properties:
              minAvailable: {type: integer, maximum: 1}
"""


def test_the_command_checks_what_it_prints_against_the_clusters_schemas(cli_run: Run, tmp_path: Path) -> None:
    """A cluster whose Volcano allows no gangs (a --crd of its own): nothing is printed, one line says why."""
    path, crd = tmp_path / "fleet.yaml", tmp_path / "volcano-job-crd.yaml"
    path.write_text(VOLCANO_FLEET, encoding="utf-8")
    crd.write_text(NARROW_VOLCANO_CRD, encoding="utf-8")
    args = ["--team", "robotics", "--cluster", "training-eastus", "--name", "sim", "--gpus", "2", "--nodes", "2"]
    done = job_new(cli_run, path, *args, "--crd", str(crd))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "fleetgen: the Job built for this ask is not valid: spec.minAvailable: 2 is greater than the maximum of 1\n"


def test_tier_takes_the_fleets_own_slo_tiers_and_refuses_others(cli_run: Run, tmp_path: Path) -> None:
    """--tier is checked against fleet.yaml's tiers (the seed's plus slo.tiers), not a fixed list."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        replace_once(EXAMPLE.read_text(), "\nalerts:", '\nslo:\n  tiers:\n    interactive: {availability: 99.5, latencyP99: "1s"}\nalerts:')
    )
    ask = ["--name", "x", "--team", "nlp", "--cluster", "dev-eastus", "--gpus", "1", "--kind", "inference", "--tier"]
    [deployment] = [d for d in printed(job_new(cli_run, fleet, *ask, "interactive")) if d["kind"] == "Deployment"]
    assert deployment["metadata"]["labels"]["fleetgen/slo-tier"] == "interactive"
    refused = job_new(cli_run, fleet, *ask, "gold")
    assert (refused.returncode, refused.stderr) == (
        2,
        "fleetgen: --tier gold: not a tier of fleet.yaml (real-time, near-real-time, batch, interactive)\n",
    )


def test_a_kueue_job_on_a_pool_with_a_topology_asks_to_keep_its_pods_close(cli_run: Run, crd_schemas: Schemas, tmp_path: Path) -> None:
    """Kueue's topology-aware scheduling reads the pod template's annotation, at a level of the pool's Topology."""
    path = tmp_path / "fleet.yaml"
    racks = "        labels: {accelerator: nvidia-t4}\n        topology: [topology.kubernetes.io/zone, example.com/rack, kubernetes.io/hostname]\n"
    text = replace_once(EXAMPLE.read_text(encoding="utf-8"), "        labels: {accelerator: nvidia-t4}\n", racks)
    path.write_text(text, encoding="utf-8")
    fleet = load_fleet_text(text.encode()).fleet
    ask = ["--team", "nlp", "--cluster", "dev-eastus", "--name", "llm", "--gpus", "1", "--gpu-model", "T4"]
    job, _ = printed(job_new(cli_run, path, *ask, "--nodes", "2"))
    check_schema(job, fleet, "dev-eastus", crd_schemas)
    assert job["spec"]["template"]["metadata"]["annotations"] == {"kueue.x-k8s.io/podset-preferred-topology": "example.com/rack"}
    [one] = printed(job_new(cli_run, path, *ask))
    assert one["spec"]["template"]["metadata"]["annotations"] == {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}
    flavor = rendered(fleet, "dev-eastus")[("ResourceFlavor", "", "t4-spot")]
    topology = rendered(fleet, "dev-eastus")[("Topology", "", flavor["spec"]["topologyName"])]
    assert {"nodeLabel": "example.com/rack"} in topology["spec"]["levels"]
    # the A10G pool declares no Topology: Kueue would not admit a topology request there, so none is made
    [a10g] = printed(job_new(cli_run, path, *ask[:-1], "A10G"))
    assert "annotations" not in a10g["spec"]["template"]["metadata"]


def test_shm_is_sized_as_asked_within_the_pods_memory(cli_run: Run) -> None:
    ask = ["--team", "nlp", "--cluster", "dev-eastus", "--name", "nb", "--gpus", "1", "--gpu-model", "A10G"]
    [job] = printed(job_new(cli_run, EXAMPLE, *ask, "--shm", "16Gi"))
    pod = job["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]
    memory = pod["containers"][0]["resources"]["limits"]["memory"]
    refused = job_new(cli_run, EXAMPLE, *ask, "--shm", "4000Gi")
    assert (refused.returncode, refused.stderr) == (
        2,
        f"fleetgen: --shm 4000Gi: at most the pod's memory ({memory}), which /dev/shm counts against\n",
    )


def test_priority_comes_from_the_purpose_as_the_team_may_use_it(cli_run: Run, tmp_path: Path) -> None:
    robotics = ["--team", "robotics", "--cluster", "dev-eastus", "--name", "x", "--gpus", "1"]
    real_time = [*robotics, "--kind", "inference", "--tier", "real-time"]
    # robotics may not use production-inference, real-time's default: the nearest class below it that it may use
    deployment = served(job_new(cli_run, EXAMPLE, *real_time))["Deployment"]
    assert deployment["spec"]["template"]["spec"]["priorityClassName"] == "scheduled-training"
    # without fleet-wide defaults: training the team's lowest class, inference its highest
    path = tmp_path / "fleet.yaml"
    text = EXAMPLE.read_text(encoding="utf-8")
    defaults = text[text.index("scheduling:\n") : text.index("    batch: scheduled-training\n") + len("    batch: scheduled-training\n")]
    path.write_text(replace_once(text, defaults, ""), encoding="utf-8")
    [job] = printed(job_new(cli_run, path, *robotics))
    assert job["spec"]["template"]["spec"]["priorityClassName"] == "exploratory"
    nlp = ["--team", "nlp", "--cluster", "dev-eastus", "--name", "x", "--gpus", "1", "--kind", "inference", "--tier", "batch"]
    deployment = served(job_new(cli_run, path, *nlp))["Deployment"]
    assert deployment["spec"]["template"]["spec"]["priorityClassName"] == "production-inference"


def test_default_priority_classes_name_a_purpose_and_a_class() -> None:
    text = replace_once(EXAMPLE.read_text(encoding="utf-8"), "    batch: scheduled-training\n", "    bulk: gold\n")
    line = line_of(text, "    bulk: gold")
    assert findings_of(text) == [
        f"{line}:11: scheduling.defaultPriorityClasses.bulk: unknown purpose 'bulk': training, notebooks or an SLO tier "
        "(real-time, near-real-time, batch)",
        f"{line}:11: scheduling.defaultPriorityClasses.bulk: unknown priority class 'gold' "
        "(known: exploratory, production-inference, scheduled-training)",
    ]

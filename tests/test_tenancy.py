"""Tenant isolation by default: what a hostile tenant tries in its own namespace is refused.

Each hostile object is first shown to be one the API server's schema accepts (kubernetes-validate,
strict, at the cluster's version), so that what refuses it is the isolation fleetgen renders: the
namespace's Pod Security level (as fleetgen checks it), the team's ResourceQuota (as quota
admission counts it), the zero quota on priority classes it was not granted.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.checks.load import load_fleet_text
from fleetgen.jobs.golden_paths import Ask, job_objects
from fleetgen.model import Fleet
from fleetgen.render.layout import cluster_objects
from fleetgen.render.manifest import Manifest
from fleetgen.render.rendered import Rendered
from fleetgen.review import diff_fleets
from fleetgen.validation.crd_schemas import read_crds
from fleetgen.validation.pod_security import object_violations, violations
from fleetgen.validation.policy_lints import lint_pod_security
from fleetgen.validation.quota_admission import quota_refusals
from fleetgen.validation.rendered_objects import Schemas

Run = Callable[..., CompletedProcess[str]]
TEXT = EXAMPLE.read_text()
FLEET = load_fleet_text(TEXT.encode()).fleet
PSA = "pod-security.kubernetes.io/"
RESTRICTED_CONTEXT = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}


def objects_on(fleet: Fleet, cluster: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    index = [c.name for c in fleet.clusters].index(cluster)
    return {tuple(m.key): m.body for m in cluster_objects(fleet, index)}  # type: ignore[misc]


def kubernetes_of(fleet: Fleet, cluster: str) -> str:
    return str(next(fleet.version_sets[c.version_set].kubernetes for c in fleet.clusters if c.name == cluster))


def hostile_pod(namespace: str) -> dict[str, Any]:
    """A GPU pod that takes over its node: privileged, the node's network and processes, its root file system."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "miner", "namespace": namespace},
        "spec": {
            "hostNetwork": True,
            "hostPID": True,
            "containers": [
                {
                    "name": "miner",
                    "image": "contosoai.azurecr.io/miner:v1",
                    "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}, "runAsUser": 0},
                    "resources": {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
                    "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                }
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        },
    }


def test_team_namespaces_enforce_their_pod_security_level() -> None:
    objects = objects_on(FLEET, "training-eastus")
    science = objects[("Namespace", "", "team-data-science")]["metadata"]["labels"]
    robotics = objects[("Namespace", "", "team-robotics")]["metadata"]["labels"]
    assert {k: v for k, v in science.items() if k.startswith(PSA)} == {PSA + "enforce": "restricted"}
    # robotics' simulator runs as root: baseline is enforced, and what restricted would refuse is warned and audited
    assert {k: v for k, v in robotics.items() if k.startswith(PSA)} == {
        PSA + "enforce": "baseline",
        PSA + "warn": "restricted",
        PSA + "audit": "restricted",
    }


def test_a_privileged_pod_passes_the_schema_and_is_refused_by_every_team_namespace() -> None:
    pod = hostile_pod("team-robotics")
    kubernetes_validate.validate(pod, kubernetes_of(FLEET, "training-eastus"), strict=True)  # the server's schema takes it
    baseline = violations("baseline", pod["metadata"], pod["spec"])
    assert baseline == [
        "hostNetwork: true shares the node's namespaces",
        "hostPID: true shares the node's namespaces",
        "volume 'host' is a hostPath: the node's files",
        "containers[0].securityContext.privileged: true",
        "containers[0].securityContext.capabilities.add: SYS_ADMIN beyond the default set",
    ]
    restricted = violations("restricted", pod["metadata"], pod["spec"])
    assert set(baseline) < set(restricted) and "containers[0].securityContext.runAsUser: 0 runs as root" in restricted
    assert violations("privileged", pod["metadata"], pod["spec"]) == []
    # validate holds every pod rendered into a team namespace to that namespace's level
    cluster = [Manifest(body, ()) for body in objects_on(FLEET, "training-eastus").values()]
    for team, level in (("robotics", "baseline"), ("nlp", "restricted")):
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "miner", "namespace": f"team-{team}"}}
        job["spec"] = {"template": {"spec": {**hostile_pod("")["spec"], "restartPolicy": "Never"}}}
        found = [text for _, text, _ in lint_pod_security([*cluster, Manifest(job, ())])]
        assert found[0].startswith(f"Job miner would be refused by Pod Security level {level}: spec.template.spec: hostNetwork: true")
        assert len(found) == len(baseline if level == "baseline" else restricted)


def test_a_namespace_without_a_level_fails_validation() -> None:
    cluster = [Manifest(copy.deepcopy(body), ()) for body in objects_on(FLEET, "dev-eastus").values()]
    namespace = next(m for m in cluster if m.body["kind"] == "Namespace")
    del namespace.body["metadata"]["labels"][PSA + "enforce"]
    [(_, text, _)] = list(lint_pod_security(cluster))
    assert text == f"namespace {namespace.body['metadata']['name']} enforces no Pod Security level ({PSA}enforce)"


def test_gpu_jobs_run_under_restricted_with_the_security_context_it_asks_for() -> None:
    """A GPU needs no privilege: the device plugin hands the pod its devices. The golden paths' jobs break no
    control of restricted but the four a security context sets, and with them they pass it and the schema."""
    schemas = Schemas(read_crds(()))
    context_rules = ("allowPrivilegeEscalation", "runAsNonRoot", "seccompProfile", "capabilities.drop")
    for ask in (
        Ask("nlp", "training-eastus", "finetune", "contosoai.azurecr.io/trainer:v1", gpus=8),
        Ask("nlp", "training-eastus", "gang", "contosoai.azurecr.io/trainer:v1", gpus=4, nodes=2),  # a Volcano Job
        Ask("data-science", "dev-eastus", "notebook", "contosoai.azurecr.io/nb:v1", gpus=1),
    ):
        for body in job_objects(FLEET, ask, schemas).objects:
            if body["kind"] == "Service":
                continue
            problems = object_violations("restricted", body)
            assert all(any(rule in p for rule in context_rules) for p in problems), problems
            hardened = copy.deepcopy(body)
            for _, _, spec in _pod_specs(hardened):
                spec["securityContext"] = {**spec.get("securityContext", {}), **RESTRICTED_POD}
                for container in spec["containers"]:
                    container["securityContext"] = {**container.get("securityContext", {}), **RESTRICTED_CONTEXT}
            assert object_violations("restricted", hardened) == []
            if hardened["apiVersion"] == "batch/v1":
                kubernetes_validate.validate(hardened, kubernetes_of(FLEET, ask.cluster), strict=True)


def _pod_specs(body: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    if body["apiVersion"].startswith("batch.volcano.sh/"):
        return [("", t["template"].get("metadata", {}), t["template"]["spec"]) for t in body["spec"]["tasks"]]
    return [("", body["spec"]["template"].get("metadata", {}), body["spec"]["template"]["spec"])]


def load_balancer(namespace: str, kind: str = "LoadBalancer") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "exposed", "namespace": namespace},
        "spec": {"type": kind, "selector": {"app": "notebook"}, "ports": [{"port": 443, "targetPort": 8888}]},
    }


def test_a_load_balancer_or_node_port_service_is_refused_by_the_team_quota_unless_allowed() -> None:
    objects = objects_on(FLEET, "prod-inference-eastus")

    def quotas(team: str) -> list[dict[str, Any]]:
        return [body for (kind, ns, _), body in objects.items() if kind == "ResourceQuota" and ns == f"team-{team}"]

    service = load_balancer("team-data-science")
    kubernetes_validate.validate(service, kubernetes_of(FLEET, "prod-inference-eastus"), strict=True)
    assert quota_refusals(quotas("data-science"), service) == [
        "exceeded quota: gpu-quota, requested: services.loadbalancers=1,services.nodeports=1, "
        "used: services.loadbalancers=0,services.nodeports=0, limited: services.loadbalancers=0,services.nodeports=0"
    ]
    assert quota_refusals(quotas("data-science"), load_balancer("team-data-science", "NodePort")) == [
        "exceeded quota: gpu-quota, requested: services.nodeports=1, used: services.nodeports=0, limited: services.nodeports=0"
    ]
    assert quota_refusals(quotas("data-science"), load_balancer("team-data-science", "ClusterIP")) == []
    assert quota_refusals(quotas("nlp"), load_balancer("team-nlp")) == []  # nlp's tenancy allows them


def test_a_load_balancer_without_node_ports_is_refused_at_its_line() -> None:
    text = replace_once(TEXT, "serviceTypes: [NodePort, LoadBalancer]", "serviceTypes: [LoadBalancer]")
    line = line_of(text, "serviceTypes: [LoadBalancer]")
    assert findings_of(text) == [
        f"{line}:22: teams[1].tenancy.serviceTypes[0]: a LoadBalancer Service takes a node port for each of its ports, which "
        "ResourceQuota counts as services.nodeports: allow NodePort too, or the quota refuses every LoadBalancer Service"
    ]


def test_a_new_team_gets_only_the_classes_that_preempt_nobody(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    added = cli_run("team", "add", "vision", "--group", "g-vision", "--cost-center", "cc-6100", "--cluster", "dev-eastus", "--gpu", "1")
    assert added.returncode == 0, added.stderr
    docs = list(yaml.safe_load_all((tmp_path / "base" / "resource-quotas" / "vision" / "resource-quotas.yaml").read_text()))
    barred = next(d for d in docs if d["spec"].get("scopeSelector"))
    assert barred["spec"]["hard"] == {"pods": "0"}
    assert barred["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == ["production-inference", "scheduled-training"]
    refused = cli_run(
        "job",
        "new",
        "--team",
        "vision",
        "--cluster",
        "dev-eastus",
        "--name",
        "x",
        "--image",
        "r/x:1",
        "--gpus",
        "1",
        "--priority",
        "production-inference",
    )
    assert (
        refused.returncode == 1
        and "team vision may not use priority class production-inference; allowed: exploratory (1000)" in refused.stderr
    )
    # the fleet's own default set, when it names one
    text = replace_once(
        TEXT, "\ntenancy:\n", "\ntenancy:\n  priorityClasses: [scheduled-training, exploratory]   # the fleet's default set\n"
    )
    fleet = load_fleet_text(text.encode()).fleet
    newcomer = fleet.teams[0].model_copy(update={"name": "vision", "priority_classes": None})
    assert fleet.access(newcomer).priority_classes == ("scheduled-training", "exploratory")
    assert findings_of(text.replace("[scheduled-training, exploratory]   # the fleet's", "[scheduled-training, gold]   # the fleet's")) == [
        f"{line_of(text, 'priorityClasses: [scheduled-training, exploratory]')}:41: tenancy.priorityClasses[1]: unknown priority class 'gold' (known: exploratory, production-inference, scheduled-training)"
    ]


def gated(base: str, head: str) -> dict[str, list[str]]:
    result = diff_fleets(Rendered(load_fleet_text(base.encode()).fleet), Rendered(load_fleet_text(head.encode()).fleet), "a", "b")
    return {a.rule.name: [c.text for c in a.changes] for a in result.approvals}


def test_widening_a_team_s_isolation_needs_the_platform_owners_tightening_does_not() -> None:
    weaker = replace_once(TEXT, "podSecurity: baseline   # the simulator", "podSecurity: privileged   # the simulator")
    assert gated(TEXT, weaker) == {"fleetgen-tenant-access": ["team robotics: Pod Security level baseline -> privileged"]}
    assert gated(weaker, TEXT) == {}
    exposed = replace_once(TEXT, "  serviceTypes: []  ", "  serviceTypes: [NodePort]  ")
    assert gated(TEXT, exposed)["fleetgen-tenant-access"] == [
        "a new team's Service types: ClusterIP only -> ClusterIP, NodePort",
        "team data-science: Service types ClusterIP only -> ClusterIP, NodePort",
        "team robotics: Service types ClusterIP only -> ClusterIP, NodePort",
    ]
    # a new team that arrives asking for more than a new team gets
    vision = (
        "  - name: vision\n    group: g-vision\n    costCenter: cc-6100\n    project: vision\n"
        "    quota: {requests: {gpu: 1}}\n    clusters: {dev-eastus: {}}\n"
        "    priorityClasses: [production-inference, exploratory]\n    tenancy: {podSecurity: privileged}\n\n"
    )
    arriving = replace_once(TEXT, "# GPU alerts and Grafana", vision + "# GPU alerts and Grafana")
    assert gated(TEXT, arriving) == {
        "fleetgen-tenant-access": [
            "team vision added with may use priority classes production-inference, exploratory (a new team gets exploratory)",
            "team vision added with Pod Security level privileged (a new team gets restricted)",
        ]
    }


@pytest.mark.parametrize("level", ["baseline", "restricted"])
def test_a_pod_that_meets_its_level_is_not_refused(level: str) -> None:
    spec = {
        "securityContext": RESTRICTED_POD,
        "containers": [{"name": "c", "image": "r/x:1", "securityContext": RESTRICTED_CONTEXT}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "ckpt"}}],
    }
    assert violations(level, {}, spec) == []
    unsafe = {**spec, "securityContext": {**RESTRICTED_POD, "sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}
    assert violations(level, {}, unsafe) == ["sysctl 'kernel.msgmax' is not one of the safe ones"]

"""Engine health of the GPU objects: every Flux CEL expression with the real CEL engine, every Argo CD Lua check with
Lua (lupa), on statuses shaped as Kueue and the GPU Operator write them: ready, failed, and not written yet.

Flux's evaluation is kustomize-controller's (fluxcd/pkg runtime/cel StatusEvaluator): the object's top-level fields
are the variables; a status.observedGeneration behind metadata.generation is in progress; then inProgress, failed
and current are evaluated in that order, the first true decides, none true is in progress.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from conftest import REPO
from test_argocd import health as lua_health

from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.render.health import CLUSTER_POLICY_NAME, FLEET_FOLDER, GPU_OPERATOR, HEALTH, KUEUE, Health
from fleetgen.render.rendered import Rendered
from fleetgen.validation.cel_engine import engine as cel

CASES = REPO / "tests" / "cases"
APPLIED = [{"manager": "kustomize-controller", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}]
STATUS_WRITTEN = {"manager": "kueue", "operation": "Update", "subresource": "status", "fieldsType": "FieldsV1"}


def flux_status(check: dict[str, str], obj: dict[str, Any]) -> str:
    """Current, Failed or InProgress, as kustomize-controller judges `obj` with one healthCheckExprs entry."""
    status = obj.get("status")
    if isinstance(status, dict) and "observedGeneration" in status and status["observedGeneration"] != obj["metadata"].get("generation"):
        return "InProgress"
    for field, verdict in (("inProgress", "InProgress"), ("failed", "Failed"), ("current", "Current")):
        if not check.get(field):
            continue
        context = cel.Context()
        for key, value in obj.items():
            context.add_variable(key, value)
        if cel.compile(check[field]).execute(context) is True:
            return verdict
    return "InProgress"


def _condition(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": "Active", "status": status, "reason": reason, "message": message, "lastTransitionTime": "2026-11-20T10:00:00Z"}


# kind -> (a ready status, a failed status), as the controllers write them
KUEUE_STATUSES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "ClusterQueue": (
        {
            "conditions": [_condition("True", "Ready", "Can admit new workloads")],
            "pendingWorkloads": 0,
            "reservingWorkloads": 0,
            "admittedWorkloads": 0,
            "flavorsReservation": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "0"}]}],
        },
        {
            "conditions": [_condition("False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): a100.")],
            "pendingWorkloads": 3,
        },
    ),
    "LocalQueue": (
        {"conditions": [_condition("True", "Ready", "Can submit new workloads to localQueue")], "pendingWorkloads": 0},
        {"conditions": [_condition("False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")]},
    ),
    "AdmissionCheck": (
        {"conditions": [_condition("True", "Active", "The admission check is active")]},
        {"conditions": [_condition("False", "BadConfig", 'Cannot load the AdmissionChecks parameters: MultiKueueConfig "x" not found')]},
    ),
    "MultiKueueCluster": (
        {"conditions": [_condition("True", "Active", "Connected")]},
        {"conditions": [_condition("False", "BadConfig", 'load client config failed: secret "multikueue-worker" not found')]},
    ),
}
STATE_STATUSES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {  # ready, failed, not ready yet
    "ClusterPolicy": (
        {
            "state": "ready",
            "namespace": "gpu-operator",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Reconciled",
                    "message": "ClusterPolicy is ready as all resources have been successfully reconciled",
                },
                {"type": "Error", "status": "False", "reason": "Ready", "message": ""},
            ],
        },
        {"state": "ignored", "namespace": "gpu-operator"},
        {
            "state": "notReady",
            "namespace": "gpu-operator",
            "conditions": [
                {
                    "type": "Error",
                    "status": "True",
                    "reason": "OperandNotReady",
                    "message": "ClusterPolicy is not ready, states not ready: [state-driver]",
                }
            ],
        },
    ),
    "NVIDIADriver": (
        {
            "state": "ready",
            "namespace": "gpu-operator",
            "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled", "message": ""}],
        },
        {"state": "disabled", "namespace": "gpu-operator"},
        {"state": "notReady", "namespace": "gpu-operator"},
    ),
}


def _object(check: Health, status: dict[str, Any] | None, *, written: bool = True, managed: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "x", "generation": 1, "uid": "0f0e"}
    if managed:
        metadata["managedFields"] = APPLIED + ([STATUS_WRITTEN] if written else [])
    obj: dict[str, Any] = {"apiVersion": check.api_version, "kind": check.kind, "metadata": metadata, "spec": {}}
    if status is not None:
        obj["status"] = copy.deepcopy(status)
    return obj


def _cases(check: Health) -> dict[str, tuple[dict[str, Any] | None, str, str]]:
    """name -> (status, Flux's verdict, Argo CD's)."""
    if check in KUEUE:
        ready, failed = KUEUE_STATUSES[check.kind]
        return {
            "ready": (ready, "Current", "Healthy"),
            "failed": (failed, "Failed", "Degraded"),
            "empty status": ({}, "InProgress", "Progressing"),
            "no conditions": ({"conditions": []}, "InProgress", "Progressing"),
            "other conditions only": ({"conditions": [{**ready["conditions"][0], "type": "Other"}]}, "InProgress", "Progressing"),
        }
    ready, failed, not_ready = STATE_STATUSES[check.kind]
    return {
        "ready": (ready, "Current", "Healthy"),
        "failed": (failed, "Failed", "Degraded"),
        "not ready yet": (not_ready, "InProgress", "Progressing"),
        "empty status": ({}, "InProgress", "Progressing"),
    }


@pytest.mark.parametrize("check", HEALTH, ids=lambda h: h.kind)
def test_each_expression_and_script_on_ready_failed_and_missing_statuses(check: Health) -> None:
    for name, (status, flux, argocd) in _cases(check).items():
        obj = _object(check, status)
        assert flux_status(check.flux(), obj) == flux, (check.kind, name)
        assert lua_health(check.lua, obj)["status"] == argocd, (check.kind, name)


@pytest.mark.parametrize("check", HEALTH, ids=lambda h: h.kind)
def test_a_status_not_written_yet_is_in_progress_and_no_evaluation_error(check: Health) -> None:
    obj = _object(check, None, written=False)
    assert flux_status(check.flux(), obj) == "InProgress"  # inProgress holds, so nothing reads the absent status
    assert lua_health(check.lua, obj) == {"status": "Progressing", "message": lua_health(check.lua, obj)["message"]}
    assert lua_health(check.lua, obj)["message"].startswith("waiting for")


@pytest.mark.parametrize("check", HEALTH, ids=lambda h: h.kind)
def test_without_managed_fields_an_absent_status_is_never_healthy(check: Health) -> None:
    """A reader that drops managedFields: the expressions read the absent status, an error Flux answers with Unknown."""
    obj = _object(check, None, managed=False)
    try:
        verdict = flux_status(check.flux(), obj)
    except RuntimeError as exc:
        assert "status" in str(exc)
    else:
        assert verdict == "InProgress"
    ready = _object(check, _cases(check)["ready"][0], managed=False)
    assert flux_status(check.flux(), ready) == "Current"  # with a status, nothing depends on managedFields


def test_an_old_observed_generation_is_in_progress_whatever_the_conditions() -> None:
    check = KUEUE[0]
    obj = _object(check, {**KUEUE_STATUSES["ClusterQueue"][0], "observedGeneration": 1})
    obj["metadata"]["generation"] = 2
    assert flux_status(check.flux(), obj) == "InProgress"


def test_the_checks_can_fail() -> None:
    """A healthy verdict is earned: a ready Active condition of another object type, or a state in another case, is not."""
    check = KUEUE[0]
    wrong = _object(check, {"conditions": [{"type": "Active", "status": "true", "reason": "Ready", "message": ""}]})
    assert flux_status(check.flux(), wrong) == "InProgress" and lua_health(check.lua, wrong)["status"] == "Progressing"
    state = GPU_OPERATOR[0]
    shouting = _object(state, {"state": "Ready"})
    assert flux_status(state.flux(), shouting) == "InProgress" and lua_health(state.lua, shouting)["status"] == "Progressing"


def _flux_entry(case: str) -> list[dict[str, Any]]:
    fleet = load_fleet(CASES / case / "fleet.yaml").fleet
    return [m.body for m in Rendered(fleet).entry_point(0)]


def test_flux_waits_on_the_queues_and_the_drivers(crd_schemas: dict[tuple[str, str], dict[str, Any]]) -> None:
    entry = _flux_entry("private-repo-flux")
    kustomizations = {b["metadata"]["name"]: b for b in entry if b["kind"] == "Kustomization"}
    fleet_sync, platform = kustomizations["private-flux"], kustomizations["platform"]
    assert fleet_sync["spec"]["wait"] is True
    kinds = {(e["apiVersion"], e["kind"]) for e in fleet_sync["spec"]["healthCheckExprs"]}
    assert kinds == {(h.api_version, h.kind) for h in FLEET_FOLDER} and ("nvidia.com/v1alpha1", "NVIDIADriver") in kinds
    checks = platform["spec"]["healthChecks"]
    assert {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": CLUSTER_POLICY_NAME} in checks
    releases = {b["metadata"]["name"] for b in entry if b["kind"] == "HelmRelease"}
    assert {c["name"] for c in checks if c["kind"] == "HelmRelease"} == releases  # as `wait` did, every release
    assert "wait" not in platform["spec"]  # wait would ignore healthChecks
    assert {e["kind"] for e in platform["spec"]["healthCheckExprs"]} == {"ClusterPolicy"}
    for body in (fleet_sync, platform):
        jsonschema.Draft7Validator(crd_schemas[("kustomize.toolkit.fluxcd.io/v1", "Kustomization")]).validate(body)


def test_argocd_cm_carries_every_health_check() -> None:
    fleet = load_fleet(CASES / "private-repo-argocd" / "fleet.yaml").fleet
    [config] = [m.body for f in Rendered(fleet).hub_files for m in f.manifests if m.body.get("kind") == "ConfigMap"]
    for check in HEALTH:
        assert config["data"][check.argocd_key] == check.lua
    assert config["data"]["resource.customizations.health.kueue.x-k8s.io_ClusterQueue"].startswith("-- fleetgen")


def test_a_cluster_without_the_gpu_operator_has_no_cluster_policy_check() -> None:
    text = (CASES / "private-repo-flux" / "fleet.yaml").read_text(encoding="utf-8")
    fleet = load_fleet_text(text.replace("versionSets:", "platform: {gpuOperator: {enabled: false}}\nversionSets:", 1).encode()).fleet
    [platform] = [
        m.body for m in Rendered(fleet).entry_point(0) if m.body["kind"] == "Kustomization" and m.body["metadata"]["name"] == "platform"
    ]
    assert not [c for c in platform["spec"]["healthChecks"] if c["kind"] == "ClusterPolicy"]
    assert "healthCheckExprs" not in platform["spec"]

"""Policy lints on what a cluster gets: rules no schema states, checked on the rendered objects.

Least privilege (no wildcard Role, no team group bound cluster-wide, other namespaces denied by
default), completeness (each team namespace has its quota, network policy and queue), cost
attribution labels and GPU quota semantics. (The CRDs' CEL rules run for real in cel.py.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fleetgen.checks.secrets import CREDENTIAL_KEYS
from fleetgen.errors import Severity
from fleetgen.render import Manifest
from fleetgen.validation.pod_security import LEVELS, object_violations

ENFORCE = "pod-security.kubernetes.io/enforce"

COST_LABELS = ("team", "project", "cost-center", "environment")
GPU_REQUEST, GPU_LIMIT = "requests.nvidia.com/gpu", "limits.nvidia.com/gpu"

LintProblem = tuple[Manifest, str, Severity]
Lint = Callable[[list[Manifest]], Iterator[LintProblem]]


def _of_kind(objects: list[Manifest], kind: str) -> Iterator[Manifest]:
    return (m for m in objects if m.body["kind"] == kind)


def lint_team_namespaces_complete(objects: list[Manifest]) -> Iterator[LintProblem]:
    present = {(m.body["kind"], m.body["metadata"].get("namespace")) for m in objects}
    for ns in _of_kind(objects, "Namespace"):
        name = ns.body["metadata"]["name"]
        for kind in ("ResourceQuota", "NetworkPolicy", "LocalQueue"):
            if (kind, name) not in present:
                yield ns, f"team namespace {name} has no {kind}", Severity.ERROR


def lint_network_isolation(objects: list[Manifest]) -> Iterator[LintProblem]:
    isolated = {
        m.body["metadata"]["namespace"]
        for m in _of_kind(objects, "NetworkPolicy")
        if m.body["spec"].get("podSelector") == {} and "Ingress" in m.body["spec"].get("policyTypes", [])
    }
    for ns in _of_kind(objects, "Namespace"):
        if ns.body["metadata"]["name"] not in isolated:
            yield ns, f"namespace {ns.body['metadata']['name']} does not deny ingress from other namespaces", Severity.ERROR


def lint_gpu_quota(objects: list[Manifest]) -> Iterator[LintProblem]:
    for quota in _of_kind(objects, "ResourceQuota"):
        hard: dict[str, Any] = quota.body["spec"].get("hard", {})
        if GPU_REQUEST in hard and GPU_LIMIT in hard and str(hard[GPU_REQUEST]) != str(hard[GPU_LIMIT]):
            yield (
                quota,
                f"GPU requests ({hard[GPU_REQUEST]}) and limits ({hard[GPU_LIMIT]}) must be equal: GPUs cannot be overcommitted",
                Severity.ERROR,
            )


def lint_no_wildcards(objects: list[Manifest]) -> Iterator[LintProblem]:
    for role in (m for m in objects if m.body["kind"] in ("Role", "ClusterRole")):
        for rule in role.body.get("rules", []):
            for field in ("verbs", "resources", "apiGroups"):
                if "*" in rule.get(field, []):
                    yield role, f"{role.body['kind']} {role.body['metadata']['name']} grants '*' {field}", Severity.ERROR


def lint_no_cluster_wide_team_binding(objects: list[Manifest]) -> Iterator[LintProblem]:
    team_groups = {s["name"] for m in _of_kind(objects, "RoleBinding") for s in m.body.get("subjects", []) if s.get("kind") == "Group"}
    for binding in _of_kind(objects, "ClusterRoleBinding"):
        for subject in binding.body.get("subjects", []):
            if subject.get("kind") == "Group" and subject.get("name") in team_groups:
                yield binding, f"team group {subject['name']} is bound cluster-wide", Severity.ERROR


def lint_pod_security(objects: list[Manifest]) -> Iterator[LintProblem]:
    """Every team namespace (team-<name>) enforces a Pod Security level, and every pod rendered into one meets it."""
    levels: dict[str, str] = {}
    for ns in (m for m in _of_kind(objects, "Namespace") if m.body["metadata"]["name"].startswith("team-")):
        level = (ns.body["metadata"].get("labels") or {}).get(ENFORCE)
        if level not in LEVELS:
            yield ns, f"namespace {ns.body['metadata']['name']} enforces no Pod Security level ({ENFORCE})", Severity.ERROR
        else:
            levels[ns.body["metadata"]["name"]] = level
    for manifest in objects:
        level = levels.get(manifest.body["metadata"].get("namespace", ""))
        for problem in object_violations(level, manifest.body) if level else ():
            title = f"{manifest.body['kind']} {manifest.body['metadata']['name']}"
            yield manifest, f"{title} would be refused by Pod Security level {level}: {problem}", Severity.ERROR


def lint_cost_labels(objects: list[Manifest]) -> Iterator[LintProblem]:
    for manifest in objects:
        labels = manifest.body["metadata"].get("labels", {})
        missing = [label for label in COST_LABELS if not labels.get(label)]
        if missing:
            yield manifest, f"missing cost-attribution label(s) {', '.join(missing)}", Severity.ERROR


# Secret types whose data is a credential by definition; the API server requires the credential's key in each.
CREDENTIAL_TYPES = frozenset(
    {"kubernetes.io/dockerconfigjson", "kubernetes.io/dockercfg", "kubernetes.io/basic-auth", "kubernetes.io/ssh-auth", "kubernetes.io/tls"}
)


def lint_no_credential_in_secrets(objects: list[Manifest]) -> Iterator[LintProblem]:
    """A rendered Secret holds no password, token, key, kubeconfig or docker config: the tree is in Git. Such Secrets
    come from a store (secrets.externalSecrets) or SOPS, or are created on the cluster, and the tree only names them."""
    for secret in _of_kind(objects, "Secret"):
        body = secret.body
        keys = sorted({*(body.get("data") or {}), *(body.get("stringData") or {})})
        held = [key for key in keys if key.lower() in CREDENTIAL_KEYS or key.lower().endswith(("privatekey", "-privatekey", ".key"))]
        if body.get("type") in CREDENTIAL_TYPES or held:
            what = f"type {body.get('type')}" if body.get("type") in CREDENTIAL_TYPES else f"key(s) {', '.join(held)}"
            yield (
                secret,
                f"holds a credential ({what}) in a file committed to Git: render an ExternalSecret or name the Secret",
                Severity.ERROR,
            )


LINTS: tuple[Lint, ...] = (
    lint_team_namespaces_complete,
    lint_network_isolation,
    lint_gpu_quota,
    lint_no_wildcards,
    lint_no_cluster_wide_team_binding,
    lint_pod_security,
    lint_cost_labels,
    lint_no_credential_in_secrets,
)


def lint_cluster(objects: list[Manifest]) -> Iterator[LintProblem]:
    for lint in LINTS:
        yield from lint(objects)

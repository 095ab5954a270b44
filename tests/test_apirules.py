"""The API server's Go validation rules (fleetgen/validation/api_rules.yaml): one rejected object per rule, with the exact error."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.errors import Severity
from fleetgen.model import Version
from fleetgen.validation.api_rules import _DATA, load_rules
from fleetgen.validation.rendered_objects import Schemas, object_problems

K8S = Version("1.30.0")
LABELS = {"team": "a", "project": "b", "cost-center": "c", "environment": "dev"}
DNS_LABEL = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
LABEL_VALUE = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
NAME_PART = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"

OBJECTS: dict[str, dict[str, Any]] = {
    "Namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": LABELS}},
    "ResourceQuota": {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "team-a"},
        "spec": {"hard": {"requests.cpu": "4"}},
    },
    "PriorityClass": {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "p"},
        "value": 1000,
        "preemptionPolicy": "Never",
    },
    "NetworkPolicy": {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "n", "namespace": "team-a"},
        "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]},
    },
    "RoleBinding": {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "rb", "namespace": "team-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "g"}],
    },
    "ConfigMap": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "team-a"}, "data": {"a.json": "{}"}},
}


def _set(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
    node: Any = out
    for part in parents:
        node = node[part]
    node[last] = value
    return out


# (kind, where to set, value, the exact error); every rule of api_rules.yaml appears at least once.
CORPUS = [
    ("Namespace", "metadata/name", "Team_A", f'metadata.name: Invalid value: "Team_A": {DNS_LABEL}'),
    ("Namespace", "metadata/name", "a" * 64, f'metadata.name: Invalid value: "{"a" * 64}": must be no more than 63 characters'),
    ("ResourceQuota", "metadata/name", "q_1", f'metadata.name: Invalid value: "q_1": {SUBDOMAIN}'),
    ("ConfigMap", "metadata/name", "-cm", f'metadata.name: Invalid value: "-cm": {SUBDOMAIN}'),
    ("NetworkPolicy", "metadata/name", "N", f'metadata.name: Invalid value: "N": {SUBDOMAIN}'),
    ("PriorityClass", "metadata/name", "p" * 254, f'metadata.name: Invalid value: "{"p" * 254}": must be no more than 253 characters'),
    ("RoleBinding", "metadata/name", "a/b", "metadata.name: Invalid value: \"a/b\": may not contain '/' or '%'"),
    ("RoleBinding", "metadata/name", "..", "metadata.name: Invalid value: \"..\": may not be '.' or '..'"),
    ("ConfigMap", "metadata/namespace", "Team", f'metadata.namespace: Invalid value: "Team": {DNS_LABEL}'),
    ("Namespace", "metadata/labels", {"team": "x y"}, f'metadata.labels.team: Invalid value: "x y": {LABEL_VALUE}'),
    (
        "Namespace",
        "metadata/labels",
        {"team": "v" * 64},
        f'metadata.labels.team: Invalid value: "{"v" * 64}": must be no more than 63 characters',
    ),
    ("Namespace", "metadata/labels", {"team_": "x"}, f'metadata.labels.team_: Invalid value: "team_": {NAME_PART}'),
    (
        "Namespace",
        "metadata/labels",
        {"Example.com/team": "x"},
        'metadata.labels.Example.com/team: Invalid value: "Example.com/team": prefix part ' + SUBDOMAIN,
    ),
    (
        "Namespace",
        "metadata/annotations",
        {"a/b/c": "x"},
        "metadata.annotations.a/b/c: Invalid value: \"a/b/c\": a qualified name must be an optional DNS subdomain prefix of at most 253 characters and '/', then a name part of 1 to 63 characters",
    ),
    ("PriorityClass", "value", 1000000001, "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"),
    (
        "PriorityClass",
        "metadata/name",
        "system-mine",
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only",
    ),
    (
        "PriorityClass",
        "preemptionPolicy",
        "Always",
        'preemptionPolicy: Unsupported value: "Always": supported values: "Never", "PreemptLowerPriority"',
    ),
    (
        "ResourceQuota",
        "spec/hard",
        {"requests.nvidia.com/gpu": "-2"},
        'spec.hard.requests.nvidia.com/gpu: Invalid value: "-2": must be greater than or equal to 0',
    ),
    ("ResourceQuota", "spec/hard", {"requests.cpu": -1}, "spec.hard.requests.cpu: Invalid value: -1: must be greater than or equal to 0"),
    (
        "ResourceQuota",
        "spec/hard",
        {"requests.memory": "12 GB"},
        "spec.hard.requests.memory: Invalid value: \"12 GB\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    (
        "ResourceQuota",
        "spec/hard",
        {"requests/cpu/x": "1"},
        "spec.hard.requests/cpu/x: Invalid value: \"requests/cpu/x\": a qualified name must be an optional DNS subdomain prefix of at most 253 characters and '/', then a name part of 1 to 63 characters",
    ),
    (
        "ConfigMap",
        "data",
        {"a b": "x"},
        "data.a b: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    ),
    (
        "NetworkPolicy",
        "spec/podSelector",
        {"matchLabels": {"app": "a b"}},
        f'spec.podSelector.matchLabels.app: Invalid value: "a b": {LABEL_VALUE}',
    ),
    (
        "NetworkPolicy",
        "spec/podSelector",
        {"matchLabels": {"-app": "a"}},
        f'spec.podSelector.matchLabels.-app: Invalid value: "-app": {NAME_PART}',
    ),
    (
        "NetworkPolicy",
        "spec/ingress",
        [{"from": [{"podSelector": {"matchLabels": {"app": "a b"}}}]}],
        f'spec.ingress[0].from[0].podSelector.matchLabels.app: Invalid value: "a b": {LABEL_VALUE}',
    ),
    (
        "NetworkPolicy",
        "spec/ingress",
        [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "a b"}}}]}],
        f'spec.ingress[0].from[0].namespaceSelector.matchLabels.ns: Invalid value: "a b": {LABEL_VALUE}',
    ),
    (
        "NetworkPolicy",
        "spec/ingress",
        [{"from": [{"namespaceSelector": {"matchLabels": {"n s": "a"}}}]}],
        f'spec.ingress[0].from[0].namespaceSelector.matchLabels.n s: Invalid value: "n s": {NAME_PART}',
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"port": 80, "protocol": "ICMP"},
        'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"port": 0},
        "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"port": 80, "endPort": 70000},
        "spec.ingress[0].ports[0].endPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"port": "http-metrics-port"},
        'spec.ingress[0].ports[0].port: Invalid value: "http-metrics-port": must be no more than 15 characters',
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"port": "Metrics"},
        'spec.ingress[0].ports[0].port: Invalid value: "Metrics": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"port": "8080"},
        'spec.ingress[0].ports[0].port: Invalid value: "8080": must contain at least one letter (a-z)',
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"port": "a--b"},
        'spec.ingress[0].ports[0].port: Invalid value: "a--b": must not contain consecutive hyphens, and must not begin or end with a hyphen',
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"port": 80, "endPort": 70},
        "spec.ingress[0].ports[0].endPort: Invalid value: 70: must be greater than or equal to `port`",
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"port": "http", "endPort": 90},
        "spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
    ),
    (
        "NetworkPolicy",
        "spec/ingress/0/ports/0",
        {"endPort": 90},
        "spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is not specified",
    ),
    (
        "RoleBinding",
        "roleRef/apiGroup",
        "rbac",
        'roleRef.apiGroup: Unsupported value: "rbac": supported values: "rbac.authorization.k8s.io"',
    ),
    ("RoleBinding", "roleRef/kind", "Group", 'roleRef.kind: Unsupported value: "Group": supported values: "ClusterRole", "Role"'),
    (
        "RoleBinding",
        "subjects/0/kind",
        "Robot",
        'subjects[0].kind: Unsupported value: "Robot": supported values: "Group", "ServiceAccount", "User"',
    ),
    (
        "RoleBinding",
        "subjects/0",
        {"kind": "User", "name": "u"},
        'subjects[0]: Invalid value: {"kind": "User", "name": "u"}: a User or Group subject needs apiGroup "rbac.authorization.k8s.io"',
    ),
    ("ConfigMap", "data", {"..": "x"}, "data...: Invalid value: \"..\": must not be '.' or '..'"),
]


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    return Schemas()


def _errors(schemas: Schemas, body: dict[str, Any]) -> list[str]:
    lookup = schemas.lookup(body["apiVersion"], body["kind"], K8S)
    return [m for m, severity in object_problems(lookup, body, strict=True) if severity is Severity.ERROR]


def test_the_valid_objects_pass(schemas: Schemas) -> None:
    for body in OBJECTS.values():
        assert _errors(schemas, body) == [], body["kind"]


@pytest.mark.parametrize(("kind", "where", "value", "message"), CORPUS, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CORPUS)])
def test_each_rule_rejects_what_the_api_server_rejects(schemas: Schemas, kind: str, where: str, value: Any, message: str) -> None:
    found = _errors(schemas, _set(OBJECTS[kind], where, value))
    assert message in found, found


def test_the_rules_read_as_pyyamls_loader_reads_them() -> None:
    data = yaml.load(_DATA.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    assert repr(load_rules()) == repr((data["rules"], data["checks"]))  # repr: True and 1 are equal, not the same


def test_every_rule_names_its_source_and_is_exercised() -> None:
    rules, checks = load_rules()
    messages = "\n".join(m for *_, m in CORPUS)
    for rule in rules:
        named = checks.get(rule.get("check", ""), {})
        source = rule["source"] + " " + named.get("source", "")
        assert re.search(r"\S+\.go [A-Za-z]+", source), rule
        parts = [p["message"] for p in named["parts"]] if named else [rule["message"]]
        assert any(p in messages for p in parts), rule


# The same rules one level up: where a fleet.yaml value alone would make the server reject a rendered
# object, the model refuses it at the value, before anything is rendered. (anchor, its replacement, the
# bad value in it, the error)
LONG_CENTER = "cc-" + "1" * 61
FLEET_CASES = [
    (
        "    value: 1000000\n",
        "    value: 1000000001\n",
        "1000000001",
        "priorityClasses[0].value: Input should be less than or equal to 1000000000",
    ),
    (
        "  - name: production-inference\n",
        "  - name: system-inference\n",
        "system-inference",
        "priorityClasses[0].name: priority class names with 'system-' prefix are reserved for system use only",
    ),
    (
        "    value: 1000000\n",
        "    value: 1000000\n    preemptionPolicy: Always\n",
        "Always",
        "priorityClasses[0].preemptionPolicy: Input should be 'PreemptLowerPriority' or 'Never', got 'Always'",
    ),
    (
        "  costCenter: cc-1000\n",
        f"  costCenter: {LONG_CENTER}\n",
        LONG_CENTER,
        f"metadata.costCenter: '{LONG_CENTER}' is not a Kubernetes label value",
    ),
    ("  - name: data-science\n", f"  - name: {'data-' * 12}x\n", "data-", "teams[0].name: String should have at most 58 characters"),
    (
        "{accelerator: nvidia-a100}",
        "{accelerator: -a100}",
        "-a100",
        "clusters[0].nodePools[0].labels.accelerator: '-a100' is not a Kubernetes label value",
    ),
]


@pytest.mark.parametrize(("anchor", "replacement", "value", "expected"), FLEET_CASES, ids=[c[3].split(":")[0] for c in FLEET_CASES])
def test_fleet_values_the_server_would_reject_are_refused_at_their_line(anchor: str, replacement: str, value: str, expected: str) -> None:
    text = replace_once(EXAMPLE.read_text(), anchor, replacement)
    line = line_of(text, replacement.strip().splitlines()[-1])
    column = text.splitlines()[line - 1].index(value) + 1
    found = findings_of(text)
    assert any(f.startswith(f"{line}:{column}: {expected}") for f in found), found

"""CRD CEL rules (x-kubernetes-validations) evaluated by a real CEL engine, on shipped, upstream and user CRDs."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, UPSTREAM_CRDS

from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.errors import Severity
from fleetgen.model import Version
from fleetgen.render.rendered import Rendered
from fleetgen.validation.cel_rules import CelRules, _build, _has_defaults
from fleetgen.validation.crd_schemas import is_shipped
from fleetgen.validation.rendered_objects import Schemas, object_problems, validate_rendered

Run = Callable[..., CompletedProcess[str]]
K8S = Version("1.30.0")
TOL = "spec.tolerations"

# Kueue (both served versions) and Flux objects the API server rejects, one per rule, with the exact message.
CORPUS: list[tuple[str, dict[str, Any], str]] = [
    (
        "ClusterQueue",
        {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1, "borrowingLimit": 1}]}],
                }
            ]
        },
        "spec: borrowingLimit must be nil when cohort is empty",
    ),
    (
        "ClusterQueue",
        {"flavorFungibility": {"preference": "BorrowingOverPreemption"}},
        "spec.flavorFungibility: preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
    ),
    (
        "ClusterQueue",
        {"preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}},
        "spec.preemption: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
    ),
    (
        "ClusterQueue",
        {
            "resourceGroups": [
                {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}
            ]
        },
        "spec.resourceGroups[0]: flavors must have the same number of resources as the coveredResources",
    ),
    (
        "Cohort",
        {
            "resourceGroups": [
                {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}
            ]
        },
        "spec.resourceGroups[0]: flavors must have the same number of resources as the coveredResources",
    ),
    ("ResourceFlavor", {"topologyName": "t", "nodeLabels": {}}, "spec: at least one nodeLabel is required when topology is set"),
    (
        "ResourceFlavor",
        {"topologyName": "t"},
        "spec: no such key: nodeLabels evaluating rule: at least one nodeLabel is required when topology is set",
    ),
    (
        "ResourceFlavor",
        {"nodeTaints": [{"key": "k", "effect": "Sometimes"}]},
        "spec.nodeTaints: supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
    ),
    (
        "ResourceFlavor",
        {"tolerations": [{"operator": "Equal", "value": "v"}]},
        f"{TOL}: operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
    ),
    (
        "ResourceFlavor",
        {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]},
        f"{TOL}: effect must be 'NoExecute' when 'tolerationSeconds' is set",
    ),
    (
        "ResourceFlavor",
        {"tolerations": [{"key": "k", "operator": "Maybe"}]},
        f"{TOL}: supported toleration values: 'Equal'(default), 'Exists'",
    ),
    (
        "ResourceFlavor",
        {"tolerations": [{"key": "k", "operator": "Exists", "value": "x"}]},
        f"{TOL}: a value must be empty when 'operator' is 'Exists'",
    ),
    (
        "ResourceFlavor",
        {"tolerations": [{"key": "k", "effect": "Sometimes"}]},
        f"{TOL}: supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
    ),
    ("Topology", {"levels": [{"nodeLabel": "zone"}, {"nodeLabel": "zone"}]}, "spec.levels: must be unique"),
    (
        "Topology",
        {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]},
        "spec.levels: the kubernetes.io/hostname label can only be used at the lowest level of topology",
    ),
]
# MultiKueue's rules, served in v1beta2 only (v1beta1 names the kubeconfig without a clusterSource, its clusters unchecked).
MULTIKUEUE: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "kueue.x-k8s.io/v1beta2",
        "MultiKueueCluster",
        {"clusterSource": {"kubeConfig": {"location": "worker", "locationType": "Secret"}, "clusterProfileRef": {"name": "worker"}}},
        "spec.clusterSource: exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
    ),
    ("kueue.x-k8s.io/v1beta2", "MultiKueueConfig", {"clusters": ["a", "b", "a"]}, "spec.clusters: must be unique"),
]
FLUX: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        {"kubeConfig": {}},
        "spec.kubeConfig: exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be specified",
    ),
    (
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        {"kubeConfig": {"configMapRef": {"name": "a"}, "secretRef": {"name": "b"}}},
        "spec.kubeConfig: exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be specified",
    ),
    (
        "source.toolkit.fluxcd.io/v1",
        "GitRepository",
        {"serviceAccountName": "sa", "provider": "generic"},
        "spec: serviceAccountName can only be set when provider is 'azure' or 'aws'",
    ),
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease", {"interval": "1m"}, "spec: either chart or chartRef must be set"),
    (
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        {"interval": "1m", "chartRef": {"kind": "OCIRepository", "name": "c"}, "kubeConfig": {}},
        "spec.kubeConfig: exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be specified",
    ),
    (
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        {
            "interval": "1m",
            "chartRef": {"kind": "OCIRepository", "name": "c"},
            "kubeConfig": {"configMapRef": {"name": "a"}, "secretRef": {"name": "b"}},
        },
        "spec.kubeConfig: exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be specified",
    ),
    (
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        {
            "interval": "1m",
            "chartRef": {"kind": "OCIRepository", "name": "c"},
            "install": {"strategy": {"name": "RemediateOnFailure", "retryInterval": "1m"}},
        },
        "spec.install.strategy: .retryInterval cannot be set when .name is 'RemediateOnFailure'",
    ),
    (
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        {
            "interval": "1m",
            "chartRef": {"kind": "OCIRepository", "name": "c"},
            "upgrade": {"strategy": {"name": "RemediateOnFailure", "retryInterval": "1m"}},
        },
        "spec.upgrade.strategy: .retryInterval can only be set when .name is 'RetryOnFailure'",
    ),
]
# The GPU Operator's NVIDIADriver (one per node pool, render/nvidia_drivers.py): a default one selects no nodes.
NVIDIA = [
    (
        "nvidia.com/v1alpha1",
        "NVIDIADriver",
        {"default": True, "driverType": "gpu", "image": "driver", "nodeSelector": {"pool": "a100"}},
        "spec: default NVIDIADriver must not use nodeSelector",
    ),
]
# Transition rules: the server evaluates them only on update, against the stored object, so never offline.
TRANSITION = {
    ("NVIDIADriver", "spec.driverType"),
    ("NVIDIADriver", "spec.usePrecompiled"),
    ("AdmissionCheck", "spec.controllerName"),
    ("LocalQueue", "spec.clusterQueue"),
    ("ResourceFlavor", "spec"),
    ("Topology", "spec.levels"),
}


def _body(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": copy.deepcopy(spec)}


def _cases() -> list[tuple[str, str, dict[str, Any], str]]:
    kueue = [(f"kueue.x-k8s.io/{v}", kind, spec, msg) for v in ("v1beta1", "v1beta2") for kind, spec, msg in CORPUS]
    # v1beta1 spells the fungibility values differently (Borrow, Preempt), and defaults them so that the rule holds
    v1beta1 = {"preference": "BorrowingOverPreemption", "whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"}
    kueue = [(a, k, {"flavorFungibility": v1beta1} if a.endswith("v1beta1") and "flavorFungibility" in s else s, m) for a, k, s, m in kueue]
    return kueue + MULTIKUEUE + FLUX + NVIDIA


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    return Schemas()


@pytest.mark.parametrize(
    ("api_version", "kind", "spec", "message"), _cases(), ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None
)
def test_each_rule_rejects_what_the_api_server_rejects(
    schemas: Schemas, api_version: str, kind: str, spec: dict[str, Any], message: str
) -> None:
    body = _body(api_version, kind, spec)
    found = [m for m, severity in object_problems(schemas.lookup(api_version, kind, K8S), body, strict=True) if severity is Severity.ERROR]
    assert message in found, found


def _rules_of(schema: dict[str, Any]) -> CelRules:
    return CelRules(schema)


@pytest.mark.parametrize("source", ["shipped", "upstream"])
def test_every_rule_of_every_crd_fails_on_some_invalid_object(source: str, crd_schemas: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Proves the engine is wired: each evaluable rule of each CRD is broken by one corpus object."""
    schemas = Schemas() if source == "shipped" else Schemas(crds=crd_schemas)
    # upstream: the kinds fleetgen renders (External Secrets' stores are vendored beside its ExternalSecret, never rendered)
    upstream = {k: v for k, v in crd_schemas.items() if is_shipped(*k)}
    known = upstream if source == "upstream" else schemas.custom_resources()
    broken: set[tuple[str, str, str]] = set()
    for api_version, kind, spec, _ in _cases():
        if (api_version, kind) not in known:
            continue
        rules = _rules_of(known[(api_version, kind)])
        for rule in rules.rules:
            for path, message in rules.check(_body(api_version, kind, spec)):
                if message == rule.message and path.startswith(rule.where.split("[*]")[0]):
                    broken.add((api_version, kind, rule.text))
    unbroken = []
    for (api_version, kind), schema in sorted(known.items()):
        rules = _rules_of(schema)
        assert not rules.unsupported, (kind, [r.text for r in rules.unsupported])
        for rule in rules.rules:
            if rule.transition:
                assert (kind, rule.where) in TRANSITION
            elif (api_version, kind, rule.text) not in broken:
                unbroken.append((api_version, kind, rule.text))
    assert unbroken == []
    assert sum(len(_rules_of(s).rules) for (a, _), s in known.items() if a == "kueue.x-k8s.io/v1beta2") == 20


def test_defaults_are_applied_before_the_rules(schemas: Schemas) -> None:
    """whenCanBorrow defaults to MayStopSearch, so `preference` alone breaks the rule: as on the server."""
    spec = {
        "flavorFungibility": {"preference": "BorrowingOverPreemption", "whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
    }
    body = _body("kueue.x-k8s.io/v1beta2", "ClusterQueue", spec)
    assert list(object_problems(schemas.lookup("kueue.x-k8s.io/v1beta2", "ClusterQueue", K8S), body, strict=True)) == []


def _whole_tree(schema: dict[str, Any]) -> CelRules:
    """The schema's rules over a tree of every node, not only the nodes that lead to a rule."""
    rules = CelRules(schema)
    rules._root = _build(schema, "", whole=True)
    rules._defaults = _has_defaults(rules._root)
    return rules


def _each_without_a_field(body: Any) -> Iterator[Any]:
    """The body, then one copy for each field or list item in it, with that field left out (the item null)."""
    yield body
    stack: list[tuple[Any, ...]] = [()]
    while stack:
        path = stack.pop()
        node = body
        for step in path:
            node = node[step]
        steps = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for step in steps:
            changed = copy.deepcopy(body)
            parent = changed
            for at in path:
                parent = parent[at]
            if isinstance(parent, dict):
                del parent[step]
            else:
                parent[step] = None
            yield changed
            stack.append((*path, step))


@pytest.mark.parametrize("source", ["shipped", "upstream"])
def test_rules_built_only_where_they_lead_answer_as_the_whole_schema_does(
    source: str, crd_schemas: dict[tuple[str, str], dict[str, Any]]
) -> None:
    """CelRules leaves out the parts of a CRD with no rule at or below them, outside a node with rules: on every
    corpus object and every custom resource of the example, each with any one field left out (so defaults apply),
    it finds what a tree of the whole schema finds."""
    known = Schemas().custom_resources() if source == "shipped" else {k: v for k, v in crd_schemas.items() if is_shipped(*k)}
    bodies: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for api_version, kind, spec, _ in _cases():
        bodies.setdefault((api_version, kind), []).append(_body(api_version, kind, spec))
    rendered = Rendered(load_fleet(EXAMPLE).fleet)
    for index in range(len(rendered.fleet.clusters)):
        for manifest in rendered.objects(index):
            bodies.setdefault((manifest.body["apiVersion"], manifest.body["kind"]), []).append(manifest.body)
    compared = failing = 0
    for kind, schema in sorted(known.items()):
        pruned, whole = CelRules(schema), _whole_tree(schema)
        assert [(r.where, r.text) for r in pruned.rules] == [(r.where, r.text) for r in whole.rules], kind
        for body in bodies.get(kind, []):
            for variant in _each_without_a_field(body):
                found = list(pruned.check(variant))
                assert found == list(whole.check(variant)), (kind, variant)
                assert [r.text for r in pruned.skipped(variant)] == [r.text for r in whole.skipped(variant)]
                compared += 1
                failing += bool(found)
    assert compared > 1000 and failing > 50  # rules failed as well as held


def test_transition_rules_are_listed_not_evaluated(schemas: Schemas) -> None:
    listed = schemas.transition_rules()
    assert "kueue.x-k8s.io/v1beta2 LocalQueue spec.clusterQueue: field is immutable" in listed
    body = _body("kueue.x-k8s.io/v1beta2", "LocalQueue", {"clusterQueue": "q"})
    assert list(object_problems(schemas.lookup("kueue.x-k8s.io/v1beta2", "LocalQueue", K8S), body, strict=True)) == []


def _crd(rules: list[dict[str, str]], extra: dict[str, Any] | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    items = {"type": "array", "items": {"type": "string"}}
    spec = {
        "type": "object",
        "properties": {"a": items, "n": {"type": "integer"}, "q": {"type": "string"}, **(extra or {})},
        "x-kubernetes-validations": rules,
    }
    return {
        ("example.com/v1", "Widget"): {
            "type": "object",
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}, "spec": spec},
        }
    }


@pytest.mark.parametrize(
    ("rule", "spec", "message"),
    [
        ({"rule": "self.a.isSorted()"}, {"a": ["b", "a"]}, "spec: failed rule: self.a.isSorted()"),
        ({"rule": "self.a.indexOf('x') == 0", "message": "x first"}, {"a": ["a", "x"]}, "spec: x first"),
        (
            {"rule": "self.q.lowerAscii() == self.q", "messageExpression": "'%s is not lower case'.format([self.q])"},
            {"q": "Ab"},
            "spec: Ab is not lower case",
        ),
        ({"rule": "quantity(self.q).isLessThan(quantity('1Gi'))", "message": "under 1Gi"}, {"q": "2048Mi"}, "spec: under 1Gi"),
        ({"rule": "self.n > 0", "message": "positive"}, {"a": []}, "spec: no such key: n evaluating rule: positive"),
    ],
)
def test_kubernetes_library_functions_and_messages(rule: dict[str, str], spec: dict[str, Any], message: str) -> None:
    schemas = Schemas(crds=_crd([rule]))
    body = _body("example.com/v1", "Widget", spec)
    assert [m for m, _ in object_problems(schemas.lookup("example.com/v1", "Widget", K8S), body, strict=True)] == [message]


def test_a_rule_the_engine_cannot_evaluate_is_a_warning_once() -> None:
    schemas = Schemas(crds=_crd([{"rule": "isURL(self.q)"}]))
    lookup = schemas.lookup("example.com/v1", "Widget", K8S)
    first = list(object_problems(lookup, _body("example.com/v1", "Widget", {"q": "x"}), strict=True))
    assert first == [("spec: CEL rule not checked offline (fleetgen's CEL engine lacks isURL): isURL(self.q)", Severity.WARNING)]
    assert list(object_problems(lookup, _body("example.com/v1", "Widget", {"q": "y"}), strict=True)) == []


def test_the_example_and_a_synthetic_fleet_pass_every_rule() -> None:
    import sys

    sys.path.insert(0, str(EXAMPLE.parent / "benchmarks"))
    from synth import synthetic_fleet

    example = validate_rendered(Rendered(load_fleet(EXAMPLE).fleet), Schemas(), strict=True)
    synthetic = validate_rendered(Rendered(load_fleet_text(synthetic_fleet(4, 6, 2).encode()).fleet), Schemas(), strict=True)
    # nothing but the one note on the transition rules nobody can check offline; only the example has a Topology
    for found, kinds in ((example, "3 ... of LocalQueue, ResourceFlavor, Topology"), (synthetic, "2 ... of LocalQueue, ResourceFlavor")):
        assert [f.severity for f in found] == [Severity.NOTE], found
        count, kinds = kinds.split(" ... ")
        assert found[0].message.startswith(f"{count} CEL transition rule(s) (oldSelf) {kinds} cannot be checked offline")


def _transition_notes(text: str) -> list[str]:
    return [line for line in text.splitlines() if "CEL transition rule" in line]


def test_transition_rules_are_one_note_per_run_that_never_fails(tmp_path: Path, cli_run: Run) -> None:
    (tmp_path / "fleet.yaml").write_text(EXAMPLE.read_text())
    done = cli_run("validate")
    assert done.returncode == 0, done.stderr
    [note] = _transition_notes(done.stderr)  # once, though every cluster renders LocalQueues
    assert (
        ": note: (document): 3 CEL transition rule(s) (oldSelf) of LocalQueue, ResourceFlavor, Topology cannot be checked offline" in note
    )
    assert "LocalQueue spec.clusterQueue: field is immutable" in note
    assert "0 error(s), 11 warning(s)" in done.stdout  # a note is not a warning
    as_json = cli_run("validate", "--format", "json")
    notes = [f for f in json.loads(as_json.stdout)["findings"] if f["severity"] == "note"]
    assert len(notes) == 1 and notes[0]["path"] == "(document)"
    annotations = cli_run("validate", "--format", "github").stdout
    assert len([line for line in annotations.splitlines() if line.startswith("::notice ")]) == 1


def test_a_user_crd_rule_the_render_breaks_fails_validate(tmp_path: Path, cli_run: Run) -> None:
    """A --crd rule fails at the fleet.yaml queue that rendered the object; its transition rule joins the one note."""
    crd = yaml.safe_load((UPSTREAM_CRDS / "kueue" / "kueue.x-k8s.io_clusterqueues.yaml").read_text())
    for version in crd["spec"]["versions"]:
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec.setdefault("x-kubernetes-validations", []).extend(
            [
                {"rule": "self.queueingStrategy == 'StrictFIFO'", "message": "only StrictFIFO queues here"},
                {"rule": "self.queueingStrategy == oldSelf.queueingStrategy", "message": "queueingStrategy is immutable"},
            ]
        )
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(crd))
    (tmp_path / "fleet.yaml").write_text(EXAMPLE.read_text())
    done = cli_run("validate", "--crd", "x.yaml")
    assert done.returncode == 1, done.stderr
    queue = load_fleet(EXAMPLE).source.locate(("clusters", 0, "queues", 0))
    rendered = "rendered ClusterQueue gpu-cluster-queue: spec: only StrictFIFO queues here (on prod-inference-eastus)"
    assert f"fleet.yaml:{queue.line}:{queue.column}: clusters[0].queues[0]: {rendered}" in done.stderr.splitlines(), done.stderr
    [note] = _transition_notes(done.stderr)
    assert "4 CEL transition rule(s) (oldSelf) of ClusterQueue, LocalQueue, ResourceFlavor, Topology" in note
    assert "ClusterQueue spec: queueingStrategy is immutable" in note

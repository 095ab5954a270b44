"""`fleetgen explain`: every field of every object of the example names the fleet.yaml value it comes from.

The walking test reads fleet.yaml again with PyYAML (not fleetgen's reader) and checks that each
position explain names holds a YAML node, and, for a value taken as it is, that node's value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import jsonschema
import pytest
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from fleetgen.checks.load import load_fleet_text
from fleetgen.render.rendered import Rendered
from fleetgen.report.explain import explain_object
from tests.conftest import EXAMPLE, line_of, replace_once

Run = Callable[..., CompletedProcess[str]]


def _nodes_by_position(text: str) -> dict[tuple[int, int], Node]:
    """(line, column) -> the value node standing there, or the value of the mapping key standing there."""
    found: dict[tuple[int, int], Node] = {}

    def at(node: Node) -> tuple[int, int]:
        return node.start_mark.line + 1, node.start_mark.column + 1

    def walk(node: Node) -> None:
        found.setdefault(at(node), node)
        if isinstance(node, MappingNode):
            for key, value in node.value:
                found[at(key)] = value
                walk(value)
        elif isinstance(node, SequenceNode):
            for item in node.value:
                walk(item)

    walk(yaml.compose(text))
    return found


def _scalars(node: Node) -> set[str]:
    if isinstance(node, ScalarNode):
        return {node.value}
    children = [c for pair in node.value for c in pair] if isinstance(node, MappingNode) else list(node.value)
    return {text for child in children for text in _scalars(child)}


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _argocd(text: str) -> str:
    """The example synced by Argo CD, with the Prometheus Operator CRDs: the kinds the example lacks."""
    text = replace_once(text, "engine: flux ", "engine: argocd")
    text = replace_once(
        text, "  gpuOperator: {version: v24.3.0}", "  gpuOperator: {version: v24.3.0}\n  prometheusOperatorCrds: {enabled: true}"
    )
    return text


@pytest.mark.parametrize("variant", ["example", "argocd", "argocd-in-cluster"])
def test_every_field_of_every_object_names_a_line_that_holds_its_value(example_text: str, variant: str) -> None:
    text = example_text if variant == "example" else _argocd(example_text)
    if variant == "argocd-in-cluster":  # each cluster's own Argo CD: its projects, argocd-cm and bootstrap are the cluster's
        text = replace_once(text, "  branch: main\n", "  branch: main\n  argocd: {mode: in-cluster}\n")
    loaded = load_fleet_text(text.encode())
    rendered, nodes = Rendered(loaded.fleet), _nodes_by_position(text)
    kinds, taken_as_is = set(), 0
    for index, cluster in enumerate(loaded.fleet.clusters):
        objects, provenance = rendered.explained(index)
        assert objects == rendered.keyed(index), "explain must see exactly what render writes"
        for key, body in objects.items():
            kinds.add(key.kind)
            for field in explain_object(provenance, key, body, loaded.source):
                where = f"{cluster.name} {key.title} {field.field}"
                assert field.kind in ("default", "derived", "team", "override", "fleet"), f"{where}: no origin"
                for source in field.sources:
                    if not source.written:  # a model default: really absent, placed at a written parent
                        assert source.path not in loaded.source.values and field.kind in ("default", "derived"), where
                        continue
                    node = nodes.get((source.location.line, source.location.column))
                    assert node is not None, f"{where}: {source.location} holds no YAML value"
                    if field.kind in ("team", "override", "fleet"):
                        assert _text(field.value) in _scalars(node), f"{where}: {field.value!r} is not at {source.location}"
                        taken_as_is += 1
    team_and_cluster = {
        "Namespace", "Role", "RoleBinding", "ResourceQuota", "LimitRange", "NetworkPolicy", "LocalQueue", "ConfigMap", "PriorityClass",
        "ResourceFlavor", "Cohort", "ClusterQueue", "PrometheusRule", "WorkloadPriorityClass", "Topology", "Queue", "ServiceMonitor",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "PersistentVolumeClaim", "ServiceAccount",
    }  # fmt: skip
    flux = {"GitRepository", "Kustomization", "HelmRepository", "OCIRepository", "HelmRelease"}
    argocd = {"Application", "Secret"} | ({"AppProject"} if variant == "argocd-in-cluster" else set())  # a hub's projects are no cluster's
    assert kinds == team_and_cluster | (flux if variant == "example" else argocd)
    assert taken_as_is > 1000  # most fields are fleet.yaml values taken as they are, not defaults


def _explain(cli_run: Run, *args: str) -> CompletedProcess[str]:
    return cli_run("explain", *args, "--fleet", str(EXAMPLE))


def test_a_per_cluster_override_and_a_team_default_are_told_apart(cli_run: Run, example_text: str) -> None:
    done = _explain(cli_run, "prod-inference-eastus", "ResourceQuota/team-data-science/gpu-quota", "--format", "json")
    assert done.returncode == 0, done.stderr
    fields = {f["path"]: f for f in json.loads(done.stdout)["fields"]}
    gpu, cpu = fields["spec.hard[requests.nvidia.com/gpu]"], fields["spec.hard[requests.cpu]"]
    assert gpu["origin"] == "override" and gpu["value"] == "4"
    assert gpu["sources"][0]["path"] == "teams[0].clusters.prod-inference-eastus.requests.gpu"
    assert gpu["sources"][0]["line"] == line_of(example_text, "prod-inference-eastus: {requests: {gpu: 4}, limits: {gpu: 4}}")
    assert cpu["origin"] == "team" and cpu["sources"][0]["path"] == "teams[0].quota.requests.cpu"
    assert fields["metadata.name"]["origin"] == "default"


def test_a_derived_value_lists_its_inputs_and_field_narrows_the_output(cli_run: Run, example_text: str) -> None:
    done = _explain(cli_run, "dev-eastus", "clusterqueue/gpu-cluster-queue", "--field", "spec.resourceGroups[0].flavors[0]")
    assert done.returncode == 0, done.stderr
    assert "metadata" not in done.stdout
    nominal = done.stdout.split("resources[2].nominalQuota: 8\n")[1].splitlines()[0]
    assert "derived (the pool at its maximum size: maxNodes x gpusPerNode)" in nominal
    assert f"fleet.yaml:{line_of(example_text, 'maxNodes: 8')}:" in nominal and "clusters[3].nodePools[0].gpusPerNode" in nominal


def test_an_unwritten_model_default_is_said_to_be_one(cli_run: Run) -> None:
    done = _explain(cli_run, "dev-eastus", "OCIRepository/flux-system/kueue", "--field", "spec.ref.tag", "--format", "json")
    (field,) = json.loads(done.stdout)["fields"]
    assert field["origin"] == "default" and field["note"].startswith("model default")
    line = line_of(EXAMPLE.read_text(), "platform:")
    assert field["sources"][0] == {"path": "platform.kueue.version", "file": str(EXAMPLE), "line": line, "column": 1, "written": False}


def test_bad_input_is_one_line_and_exit_2(cli_run: Run, tmp_path: Path) -> None:
    for args, message in (
        (("nowhere", "Namespace/team-nlp"), "nowhere: no such cluster"),
        (("dev-eastus", "Namespace/team-nlpp"), "no such object on dev-eastus; did you mean Namespace/team-nlp?"),
        (("dev-eastus", "ResourceQuota/gpu-quota"), "3 objects on dev-eastus match; name one"),
        (("dev-eastus", "Namespace"), "expected KIND/NAME or KIND/NAMESPACE/NAME"),
        (("dev-eastus", "Namespace/team-nlp", "--field", "spec.nothing"), "--field spec.nothing: the object has no such field"),
    ):
        done = _explain(cli_run, *args)
        assert done.returncode == 2 and done.stdout == "", done
        assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


def test_json_output_matches_its_published_schema(cli_run: Run) -> None:
    published = json.loads((EXAMPLE.parent / "schemas" / "output" / "explain.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(published)
    done = _explain(cli_run, "training-eastus", "ClusterQueue/data-science-queue", "--format", "json")
    jsonschema.validate(json.loads(done.stdout), published)

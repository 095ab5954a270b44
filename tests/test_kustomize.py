"""The rendered tree built by the real `kubectl kustomize` and checked against real schemas.

Core kinds: kubernetes-validate, strict, at each cluster's own Kubernetes version. Custom
resources (Kueue, Flux, Argo CD, Prometheus Operator): the upstream CRDs kept in tests/crds, read
as they are, never through the converted schemas fleetgen ships in schemas/crds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from conftest import EXAMPLE, replace_once

from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.output.tree import Tree
from fleetgen.render import cluster_objects
from fleetgen.workflows.tree_files import render_files

Build = Callable[[Path], list[dict[str, Any]]]
FLEET = load_fleet(EXAMPLE).fleet
CORE_GROUPS = ("v1", "rbac.authorization.k8s.io/", "networking.k8s.io/", "scheduling.k8s.io/", "admissionregistration.k8s.io/")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    Tree(root).write(render_files(FLEET))
    return root


def crd_validate(obj: dict[str, Any], schema: dict[str, Any]) -> None:
    """Against an upstream CRD schema (OpenAPI v3; some patterns are Go regexes, so no metaschema check)."""
    jsonschema.Draft7Validator(schema).validate(obj)


def check_schema(obj: dict[str, Any], kubernetes: str, crd_schemas: dict[tuple[str, str], dict[str, Any]]) -> None:
    if obj["apiVersion"].startswith(CORE_GROUPS):
        kubernetes_validate.validate(obj, kubernetes, strict=True)
    else:
        crd_validate(obj, crd_schemas[(obj["apiVersion"], obj["kind"])])


def canonical(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True)


@pytest.mark.parametrize("index", range(len(FLEET.clusters)), ids=[c.name for c in FLEET.clusters])
def test_cluster_builds_to_exactly_its_objects_and_each_is_schema_valid(
    tree: Path, index: int, kustomize: Build, crd_schemas: dict[tuple[str, str], dict[str, Any]]
) -> None:
    cluster = FLEET.clusters[index]
    built = kustomize(tree / "clusters" / cluster.name)
    expected = cluster_objects(FLEET, index)
    assert sorted(map(canonical, built)) == sorted(canonical(m.body) for m in expected)
    kubernetes = str(FLEET.version_sets[cluster.version_set].kubernetes)
    for obj in built:
        check_schema(obj, kubernetes, crd_schemas)
    assert {o["kind"] for o in built} >= {
        "Namespace",
        "Role",
        "RoleBinding",
        "ResourceQuota",
        "NetworkPolicy",
        "LocalQueue",
        "PriorityClass",
        "ResourceFlavor",
        "ClusterQueue",
        "ConfigMap",
        "PrometheusRule",
    }


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_gitops_entry_points_build_and_match_their_crds(
    tmp_path: Path, engine: str, kustomize: Build, crd_schemas: dict[tuple[str, str], dict[str, Any]]
) -> None:
    text = replace_once(EXAMPLE.read_text(), "engine: flux ", f"engine: {engine} ")
    Tree(tmp_path).write(render_files(load_fleet_text(text.encode()).fleet))
    built = kustomize(tmp_path / "clusters" / "training-eastus" / "flux-system" if engine == "flux" else tmp_path / "argocd")
    for obj in (o for o in built if o["apiVersion"] != "v1"):  # argocd-cm: a core ConfigMap
        crd_validate(obj, crd_schemas[(obj["apiVersion"], obj["kind"])])
    by_name = {o["metadata"]["name"]: o for o in built if o["kind"] not in ("GitRepository", "AppProject")}
    if engine == "flux":
        assert [o["spec"]["url"] for o in built if o["kind"] == "GitRepository"] == ["https://github.com/contoso/fleet-config"]
        assert by_name["contoso-ai"]["spec"]["path"] == "./clusters/training-eastus"
        assert by_name["contoso-ai"]["spec"]["dependsOn"] == [{"name": "platform"}]  # the add-ons (Kueue's CRDs) first
        # the platform is ready once every release is (and the drivers are up); the fleet's objects once they are
        assert {c["kind"] for c in by_name["platform"]["spec"]["healthChecks"]} == {"HelmRelease", "ClusterPolicy"}
        assert by_name["contoso-ai"]["spec"]["wait"] is True
    else:  # the hub's bootstrap, which syncs itself; the roots it generates: tests/test_argocd.py
        assert by_name["contoso-ai-bootstrap"]["spec"]["source"]["path"] == "argocd"
        assert by_name["contoso-ai"]["kind"] == "ApplicationSet"


def test_strict_validation_would_catch_a_broken_object(crd_schemas: dict[tuple[str, str], dict[str, Any]]) -> None:
    """The checks above can fail: a typo in a core object and in a Kueue object are both rejected."""
    quota = next(m.body for m in cluster_objects(FLEET, 0) if m.body["kind"] == "ResourceQuota")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate({**quota, "spec": {"hardd": {}}}, "1.29.4", strict=True)
    queue = next(m.body for m in cluster_objects(FLEET, 0) if m.body["kind"] == "ClusterQueue")
    with pytest.raises(jsonschema.ValidationError):
        crd_validate(
            {**queue, "spec": {**queue["spec"], "cohort": "old-v1beta1-field"}}, crd_schemas[("kueue.x-k8s.io/v1beta2", "ClusterQueue")]
        )

"""`drift --context` through the real kubectl against a small API server on 127.0.0.1 (tests/fake_apiserver.py):
every kind is its own list under fleetgen's label selector, and one kind the cluster does not serve, forbids or
answers too slowly for is said as such, never a failure of the whole command."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from committed_repo import committed_example, flux_dump
from conftest import REPO
from fake_apiserver import Behaviour, FakeApiServer, kind_of

pytestmark = pytest.mark.slow  # each test builds a committed tree with kustomize and runs kubectl: 10 to 40 s
Run = Callable[..., subprocess.CompletedProcess[str]]
Build = Callable[[Path], list[dict[str, Any]]]
CLUSTER_SCOPED = {"Namespace", "PriorityClass", "ClusterQueue", "ResourceFlavor", "Cohort", "Queue", "Node"}
SELECTOR = "labelSelector=app.kubernetes.io%2Fmanaged-by%3Dfleetgen"


@pytest.fixture
def synced(tmp_path: Path, kustomize: Build) -> tuple[Path, str, Behaviour]:
    """The example committed, and an API server holding dev-eastus exactly as Flux synced it from that commit."""
    folder, commit = committed_example(tmp_path / "fleet-config")
    behaviour = Behaviour()
    for obj in flux_dump(kustomize, folder, "dev-eastus", commit)["items"]:
        kind = kind_of(obj, obj["kind"] not in CLUSTER_SCOPED)
        behaviour.served[kind.plural] = kind
        behaviour.objects.setdefault(kind.plural, []).append(obj)
    # a Namespace nobody labelled for fleetgen: the label selector keeps it out of every list
    behaviour.objects["namespaces"].append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})
    node = kind_of({"apiVersion": "v1", "kind": "Node"}, False)
    behaviour.served[node.plural] = node
    return folder, commit, behaviour


@pytest.fixture
def server(synced: tuple[Path, str, Behaviour]) -> Iterator[FakeApiServer]:
    with FakeApiServer(synced[2], lifetime=180) as running:
        yield running


def drift(cli_run: Run, folder: Path, server: FakeApiServer, *more: str) -> subprocess.CompletedProcess[str]:
    env = server.kubeconfig(folder.parent)
    return cli_run("drift", "--cluster", "dev-eastus", "--context", "fake", *more, cwd=folder, env=env)


def test_a_cluster_that_serves_every_kind_has_no_drift_and_is_listed_by_label(
    synced: tuple[Path, str, Behaviour], server: FakeApiServer, cli_run: Run
) -> None:
    folder, commit, behaviour = synced
    done = drift(cli_run, folder, server)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "dev-eastus: no drift",
        f"  against the tree committed at {commit[:12]} (Flux Kustomization flux-system/contoso-ai)",
    ]
    listed = {path.split("?")[0].rsplit("/", 1)[-1]: path for path in behaviour.lists}
    assert set(listed) == set(behaviour.served)  # one list per kind, the Nodes too
    assert all(SELECTOR in path for plural, path in listed.items() if plural != "nodes")
    assert SELECTOR not in listed["nodes"]  # nobody labels Nodes for fleetgen


def test_a_kind_the_cluster_does_not_serve_makes_its_objects_missing(
    synced: tuple[Path, str, Behaviour], server: FakeApiServer, cli_run: Run
) -> None:
    folder, _, behaviour = synced
    del behaviour.served["helmreleases"]  # the CRD is not installed
    done = drift(cli_run, folder, server, "--format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    jsonschema.validate(report, json.loads((REPO / "schemas" / "output" / "drift.schema.json").read_text(encoding="utf-8")))
    assert {o["name"] for o in report["missing"]} == {o["metadata"]["name"] for o in behaviour.objects["helmreleases"]}
    assert all(o["kind"] == "HelmRelease" and o["kindNotServed"] for o in report["missing"])
    assert report["changed"] == [] and report["unread"] == []
    text = drift(cli_run, folder, server).stdout.splitlines()
    assert "  - HelmRelease flux-system/gpu-operator (missing (kind not served))" in text


def test_a_forbidden_kind_and_a_slow_one_are_not_read_and_say_why(
    synced: tuple[Path, str, Behaviour], server: FakeApiServer, cli_run: Run
) -> None:
    folder, _, behaviour = synced
    behaviour.forbidden.add("roles")
    behaviour.slow["networkpolicies"] = 8  # well past the timeout, which leaves the other kinds room on a busy machine
    done = drift(cli_run, folder, server, "--request-timeout", "3")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0] == "dev-eastus: 0 missing, 0 extra, 0 changed; 2 kind(s) not read"
    assert done.stdout.splitlines()[2:] == [
        "  ? networkpolicy.networking.k8s.io: not read (timed out after 3s); its objects are not compared",
        '  ? role.rbac.authorization.k8s.io: not read (roles is forbidden: User "u" cannot list resource "roles" at the cluster scope); '
        "its objects are not compared",
    ]


def test_an_object_whose_fleetgen_label_was_removed_is_changed_not_missing(
    synced: tuple[Path, str, Behaviour], server: FakeApiServer, cli_run: Run
) -> None:
    """The labelled lists do not return it; drift asks for what they missed by name, and finds the label gone."""
    folder, _, behaviour = synced
    queue = next(o for o in behaviour.objects["localqueues"] if o["metadata"]["name"] == "team-nlp-queue")
    del queue["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    done = drift(cli_run, folder, server)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0] == "dev-eastus: 0 missing, 0 extra, 1 changed"
    assert done.stdout.splitlines()[2:] == [
        "  ~ LocalQueue team-nlp/team-nlp-queue",
        "      metadata.labels[app.kubernetes.io/managed-by]: fleetgen -> (absent)",
    ]
    assert behaviour.gets == ["localqueues/team-nlp/team-nlp-queue"]  # only what the lists missed

"""Every live kind fleetgen reads is shape-checked where the dump is read, and read only through its typed reader.

A faithful dump (Flux's sync of the example's dev-eastus, its Nodes as AKS and the GPU Operator label
them, its fleet-versions ConfigMap) is mutated field by field for each kind of KIND_SHAPES: a wrong type
in any declared field is one line naming the object's item and the field; anything accepted is read by
the typed readers without error.
"""

from __future__ import annotations

import copy
import re
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, REPO
from gitops_dumps import cluster_dump
from hypothesis import given, settings
from hypothesis import strategies as st
from node_dumps import evidence_of

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import InputError
from fleetgen.live.committed import Revision, synced_revision
from fleetgen.live.dumps import live_objects
from fleetgen.live.nodes import nodes_in
from fleetgen.live.shapes import KIND_SHAPES, fields_of, live_quotas, of_kind
from fleetgen.live.state import compare, key_of, quota_impacts
from fleetgen.render.rendered import Rendered
from fleetgen.upgrade.evidence import versions_configmap

Run = Callable[..., CompletedProcess[str]]
DEV = 3  # dev-eastus in the example
ISSUE_DUMP = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ResourceQuota
  metadata: {name: disallowed-priority-classes, namespace: team-robotics}
  spec:
    hard: [a]
  status:
    used: {pods: "1"}
"""


COMMIT = "0123456789abcdef0123456789abcdef01234567"


@cache
def faithful() -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    """(dev-eastus's render by key, the objects of a faithful dump of it: synced objects and Flux's Kustomizations
    that record the commit they applied, Nodes, a quota in use)."""
    loaded = load_fleet_text(EXAMPLE.read_bytes())
    rendered = Rendered(loaded.fleet).keyed(DEV)
    items = cluster_dump(list(rendered.values()), "flux", tracking="annotation", ssa=True)["items"]
    quota = next(o for o in items if o["kind"] == "ResourceQuota")
    quota["status"] = {"hard": dict(quota["spec"]["hard"]), "used": {k: "0" for k in quota["spec"]["hard"]}}
    for engine in (o for o in items if o["kind"] == "Kustomization"):
        engine["status"] = {"lastAppliedRevision": f"main@sha1:{COMMIT}", "observedGeneration": 1}
    nodes = evidence_of(loaded.fleet, "dev-eastus")
    return rendered, tuple(items + [o for o in nodes if o["kind"] == "Node"])


@cache
def argocd_application() -> dict[str, Any]:
    """dev-eastus's Application when Argo CD syncs the example, as the hub shows it: synced at a commit."""
    loaded = load_fleet_text(EXAMPLE.read_bytes().replace(b"engine: flux ", b"engine: argocd", 1))
    app = next(m.body for m in Rendered(loaded.fleet).entry_point(DEV) if m.body["kind"] == "Application")
    return {**copy.deepcopy(app), "status": {"sync": {"status": "Synced", "revision": COMMIT}}}


def sample(kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in (*faithful()[1], argocd_application()) if o["kind"] == kind))


def set_at(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        obj = obj.setdefault(part, {})
    obj[path[-1]] = value


def read(items: list[Any]) -> list[dict[str, Any]]:
    text = yaml.dump({"apiVersion": "v1", "kind": "List", "items": items}, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True)
    return live_objects(text.encode(), "live.yaml")


def test_every_kind_with_a_shape_has_a_faithful_sample_and_reads_cleanly() -> None:
    rendered, objects = faithful()
    assert {o["kind"] for o in (*objects, argocd_application())} >= set(KIND_SHAPES)
    live = read(list(objects))
    assert not compare(rendered, live).found and quota_impacts(rendered, live) == []
    assert live_quotas(live) and nodes_in(live) and versions_configmap(live)
    assert synced_revision(live, rendered, "dev-eastus") == Revision(COMMIT, "Flux Kustomization flux-system/contoso-ai")
    hub = read([argocd_application()])
    assert synced_revision(hub, {key_of(o): o for o in hub}, "dev-eastus") is not None


def test_a_kind_read_without_a_declared_shape_is_refused() -> None:
    with pytest.raises(KeyError, match="has no shape in KIND_SHAPES"):
        of_kind([], "Secret")


def test_live_objects_are_read_by_kind_only_through_the_shapes_registry() -> None:
    """A reader that picks live objects by kind itself would read them unchecked: every such choice goes through of_kind."""
    by_hand = re.compile(r"""(\.get\("kind"\)|\["kind"\]|key\[0\])\s*[!=]=\s*["']""")
    found = []
    for folder in ("live", "upgrade", "review"):
        for path in sorted((REPO / "fleetgen" / folder).rglob("*.py")):
            found += [f"{path.name}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1) if by_hand.search(line)]
    assert found == [], "read live objects of a kind with of_kind (fleetgen/live/shapes.py): " + ", ".join(found)


LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["8", "500m", "256Gi", "9" * 400, "-1", "1e999", "x" * 5000, "\u2028", "v1.30.1"]),
)
WRONG = st.recursive(
    LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12
)
FIELDS = [(kind, field.path) for kind in sorted(KIND_SHAPES) for field in fields_of(kind)]


@settings(deadline=None)  # a dump is read twice when it fails (the second time for positions)
@given(target=st.sampled_from(FIELDS), value=WRONG)
def test_a_wrong_shape_in_any_read_field_is_one_line_at_that_field(target: tuple[str, tuple[str, ...]], value: Any) -> None:
    kind, path = target
    obj = sample(kind)
    set_at(obj, path, value)
    try:
        live = read([sample("Namespace"), obj])
    except InputError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 400, message
        assert re.match(rf"live\.yaml:\d+:\d+: items\[1\]\.{re.escape('.'.join(path))}[.\[:]", message), message  # at it, or inside
        return
    rendered = faithful()[0]  # accepted: so every typed reader takes it
    quota_impacts(rendered, live)
    nodes_in(live)
    versions_configmap(live)
    compare(rendered, live)
    try:  # the engine's record: a commit, or refused in one line (a string that names no commit)
        synced_revision(live, {key_of(o): o for o in live}, "dev-eastus")
    except InputError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400, str(exc)


def test_the_issue_dump_is_refused_by_drift_and_diff(repo: Path, cli_run: Run) -> None:
    (repo / "live.yaml").write_text(ISSUE_DUMP)
    expected = "fleetgen: live.yaml:8:5: items[0].spec.hard: expected a map, got a list"
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", "live.yaml", cwd=repo)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", [expected])
    done = cli_run("diff", "--base", "HEAD", "--live", "dev-eastus=live.yaml", cwd=repo)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", [expected])


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("status", "used", "pods"), [1], "status.used.pods: expected a quantity such as 500m or 8Gi, got a list"),
        (
            ("spec", "hard", "requests.cpu"),
            "9" * 5000,
            "spec.hard.requests.cpu: '99999999999999999999'...'99999999' (5,000 characters) is larger",
        ),
        (("spec", "hard", "pods"), "lots", "spec.hard.pods: 'lots' is not a Kubernetes quantity"),
        (("status", "hard"), "8", "status.hard: expected a map, got a string"),
    ],
)
def test_a_quota_of_the_wrong_shape_names_its_field(tmp_path: Path, path: tuple[str, ...], value: Any, expected: str) -> None:
    quota = sample("ResourceQuota")
    set_at(quota, path, value)
    with pytest.raises(InputError, match=re.escape(f": items[0].{expected}")):
        read([quota])


def test_node_fields_of_the_wrong_shape_name_their_field() -> None:
    for path, value, expected in [
        (("spec", "taints"), [{"key": 1}], "spec.taints[0].key: expected a string, got an integer"),
        (("status", "conditions"), ["Ready"], "status.conditions[0]: expected a map, got a string"),
        (("status", "allocatable", "nvidia.com/gpu"), {"n": 8}, "status.allocatable.nvidia.com/gpu: expected a quantity"),
        (("status", "nodeInfo", "kubeletVersion"), 1.3, "status.nodeInfo.kubeletVersion: expected a string, got a number"),
    ]:
        node = sample("Node")
        set_at(node, path, value)
        with pytest.raises(InputError, match=re.escape(f": items[0].{expected}")):
            read([node])


def test_drift_refuses_the_issue_dump_at_the_console(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    (tmp_path / "live.yaml").write_text(ISSUE_DUMP.replace("hard: [a]", "hard: {pods: [a]}"))
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", "live.yaml", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("fleetgen: live.yaml:8:") and "internal error" not in done.stderr

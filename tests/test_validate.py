"""Rendered objects checked against schemas and policy lints; the fleet.yaml JSON Schema."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import jsonschema_rs
import pytest
import yaml
from conftest import EXAMPLE, REPO, UPSTREAM_CRDS, examples, findings_of, line_of, replace_once
from generated_fleets import fleet_text, fleets
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.errors import Severity
from fleetgen.model import Version
from fleetgen.model.json_schema import fleet_json_schema
from fleetgen.output.generated_paths import SCHEMA_PATH
from fleetgen.render import Manifest, cluster_objects
from fleetgen.render.rendered import Rendered
from fleetgen.validation.core_definitions import CoreDefinitions
from fleetgen.validation.crd_schemas import parse_shipped_name, read_crds, shipped_name, strict, without_descriptions
from fleetgen.validation.policy_lints import lint_cluster
from fleetgen.validation.rendered_objects import _CORE, Schemas, _bundle, _kinds_to_validate, object_problems, validate_rendered

Run = Callable[..., CompletedProcess[str]]
FLEET = load_fleet(EXAMPLE).fleet


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    return Schemas()


def test_the_example_renders_only_valid_objects(schemas: Schemas) -> None:
    found = validate_rendered(Rendered(FLEET), schemas, strict=True)
    assert [f.severity for f in found] == [Severity.NOTE], found  # only the note on transition rules (test_cel.py)


def test_schema_versions_follow_each_cluster(schemas: Schemas) -> None:
    assert schemas.schema_minor(Version("1.29.4")) == (1, 29)
    assert schemas.schema_minor(Version("1.99.0")) == schemas.minors[-1]  # newer than any: the newest
    lookup = schemas.lookup("batch/v1beta1", "CronJob", Version("1.29.4"))
    assert lookup.validator is None and lookup.severity is Severity.ERROR
    assert lookup.note.startswith("batch/v1beta1 CronJob is no longer served since Kubernetes 1.25; use batch/v1")
    unknown = schemas.lookup("example.com/v1", "Widget", Version("1.29.4"))
    assert unknown.validator is None and unknown.severity is Severity.WARNING
    assert "no schema for example.com/v1 Widget in Kubernetes 1.29" in unknown.note


def test_core_objects_are_validated_strictly(schemas: Schemas) -> None:
    namespace = next(m.body for m in cluster_objects(FLEET, 0) if m.body["kind"] == "Namespace")
    validator = schemas.lookup("v1", "Namespace", Version("1.29.4")).validator
    assert validator is not None and validator.is_valid(namespace)
    assert not validator.is_valid({**namespace, "spec": {"finalizers": ["x"], "colour": "red"}})
    assert not validator.is_valid({**namespace, "metadata": {**namespace["metadata"], "labels": {"team": 5}}})


# Each object the example renders, with its cluster's Kubernetes version.
RENDERED = [
    (manifest.body, FLEET.version_sets[cluster.version_set].kubernetes)
    for index, cluster in enumerate(FLEET.clusters)
    for manifest in Rendered(FLEET).objects(index) + Rendered(FLEET).entry_point(index)
]
ODD_VALUES = [None, -1, 0, 1.5, True, "", "Bad Key!", "bad_name", "-1", "1Gi", "x" * 300, [], ["a"], {}, {"zz": 1}]


def _places(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    below = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    return [at] + [place for key, value in below for place in _places(value, (*at, key))]


def _broken(draw: st.DrawFn, rendered: list[tuple[dict[str, Any], Version]]) -> tuple[dict[str, Any], Version]:
    """One of these rendered objects with one to three values replaced, removed or added (not its kind)."""
    body, kubernetes = draw(st.sampled_from(rendered))
    body = copy.deepcopy(body)
    for _ in range(draw(st.integers(1, 3))):
        places = [p for p in _places(body) if p and p not in {("apiVersion",), ("kind",)}]
        if not places:  # all removed
            break
        *parent, last = draw(st.sampled_from(places))
        node = body
        for key in parent:
            node = node[key]
        change = draw(st.sampled_from(["replace", "remove", "add"]))
        if change == "remove":
            del node[last]
        elif change == "add" and isinstance(node, dict):
            node["unknownField"] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
        else:
            node[last] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
    return body, kubernetes


@st.composite
def broken_objects(draw: st.DrawFn) -> tuple[dict[str, Any], Version]:
    """A rendered object of the example, broken (_broken)."""
    return _broken(draw, RENDERED)


@pytest.fixture(scope="module", params=["shipped", "--crd"])
def schemas_both_ways(request: pytest.FixtureRequest, crd_schemas: dict[tuple[str, str], dict[str, Any]]) -> tuple[Schemas, Schemas]:
    """The example's kinds compiled into one validator, and each kind compiled alone (as a lookup asks for it)."""
    crds = crd_schemas if request.param == "--crd" else None
    together = Schemas(crds)
    together.prepare(_kinds_to_validate(Rendered(FLEET), None))
    return together, Schemas(crds)


def test_the_example_compiles_one_validator_for_all_its_kinds(schemas_both_ways: tuple[Schemas, Schemas]) -> None:
    together, _ = schemas_both_ways
    lookups = [together.lookup(body["apiVersion"], body["kind"], kubernetes) for body, kubernetes in RENDERED]
    assert len({id(lookup.validator.validator) for lookup in lookups if lookup.validator is not None}) == 1


@examples(100)
@given(broken=broken_objects())
def test_a_kind_compiled_with_the_others_finds_what_it_finds_compiled_alone(
    schemas_both_ways: tuple[Schemas, Schemas], broken: tuple[dict[str, Any], Version]
) -> None:
    together, alone = schemas_both_ways
    body, kubernetes = broken
    found = [list(object_problems(s.lookup(body["apiVersion"], body["kind"], kubernetes), body, True)) for s in (together, alone)]
    assert found[0] == found[1]


def _compiled_alone(schema: dict[str, Any] | None) -> Any:
    return jsonschema_rs.validator_for(schema) if schema is not None else None


def _as_compiled_alone(schemas: Schemas, body: dict[str, Any], kubernetes: Version) -> None:
    """The shared validator's errors for `body` are those of a reference compiled as each kind was before kinds shared a
    validator: its schema and its API rules, each alone with jsonschema-rs; in their order, at the same paths."""
    api_version, kind = body["apiVersion"], body["kind"]
    lookup = schemas.lookup(api_version, kind, kubernetes)
    assert lookup.validator is not None and lookup.server is not None
    key = (api_version, kind)
    schema = (
        schemas._crd(key) if schemas._is_custom(key) else schemas._core(schemas.schema_minor(kubernetes), api_version, kind, kubernetes)
    )
    assert isinstance(schema, dict)
    references = [_compiled_alone(schema), _compiled_alone(lookup.server.api.schema)]
    expected = [
        (list(e.instance_path), e.message) for reference in references if reference is not None for e in reference.iter_errors(body)
    ]
    assert [(e.instance_path, e.message) for e in lookup.validator.errors(body)] == expected


@examples(100)
@given(broken=broken_objects())
def test_the_shared_validator_gives_each_kinds_errors_as_its_schemas_compiled_alone_do(
    schemas_both_ways: tuple[Schemas, Schemas], broken: tuple[dict[str, Any], Version]
) -> None:
    together, _ = schemas_both_ways
    _as_compiled_alone(together, *broken)


@examples(20)
@given(fleet=fleets(), data=st.data())
def test_on_generated_fleets_the_shared_validator_gives_each_kinds_errors_as_compiled_alone(
    fleet: dict[str, Any], data: st.DataObject
) -> None:
    """Every kind a generated fleet renders (Argo CD or Flux, a MultiKueue manager, Volcano, External Secrets,
    per-pool drivers, two Kubernetes versions...) in the one validator validate builds, an object of it broken."""
    rendered = Rendered(load_fleet_text(fleet_text(fleet).encode()).fleet)
    schemas = Schemas()
    schemas.prepare(_kinds_to_validate(rendered, None))
    kubernetes = [rendered.fleet.version_sets[c.version_set].kubernetes for c in rendered.fleet.clusters]
    objects = [(m.body, kubernetes[i]) for i in range(len(kubernetes)) for m in rendered.objects(i) + rendered.entry_point(i)]
    _as_compiled_alone(schemas, *_broken(data.draw, objects))


def _refs(node: Any) -> set[str]:
    if isinstance(node, list):
        return set().union(*map(_refs, node)) if node else set()
    if isinstance(node, dict):
        own = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return own.union(*(_refs(v) for k, v in node.items() if k != "$ref"))
    return set()


@pytest.mark.parametrize("minor", [0, -1], ids=["oldest", "newest"])
def test_each_core_schema_bundles_the_definitions_json_loads_reads_and_leaves_them_as_read(schemas: Schemas, minor: int) -> None:
    major, number = schemas.minors[minor]
    folder = _CORE / f"v{major}.{number}.0-local-strict"
    whole = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    definitions = CoreDefinitions(folder / "_definitions.json")
    assert set(definitions._spans) == set(whole)  # the layout names every definition: none needs the whole file parsed
    for path in sorted(folder.glob("*.json")):
        if path.name == "_definitions.json":
            continue
        bundle = _bundle(json.loads(path.read_text(encoding="utf-8")), definitions)
        refs = _refs(bundle)
        assert all(ref.startswith("#/$defs/") for ref in refs), path.name
        reached = {ref.removeprefix("#/$defs/") for ref in refs}
        assert bundle["$defs"] == {name: whole[name] for name in reached}, path.name
    assert {name: definitions[name] for name in whole} == whole  # no bundle changed a shared definition


def test_definitions_laid_out_otherwise_are_read_whole(schemas: Schemas, tmp_path: Path) -> None:
    major, number = schemas.minors[-1]
    folder = _CORE / f"v{major}.{number}.0-local-strict"
    whole = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
    compact = tmp_path / "_definitions.json"
    compact.write_text(json.dumps(whole), encoding="utf-8")
    definitions = CoreDefinitions(compact)
    assert {name: definitions[name] for name in whole["$defs"]} == whole["$defs"]
    with pytest.raises(KeyError):
        definitions["io.k8s.api.core.v1.NoSuchKind"]


def test_shipped_crd_schemas_are_the_upstream_ones() -> None:
    """Every shipped schema is its upstream CRD's (tests/test_crd_sources.py checks the folder is exactly the script's output)."""
    shipped = {p.name: json.loads(p.read_text()) for p in (REPO / "schemas" / "crds").glob("*.json")}
    upstream = read_crds([UPSTREAM_CRDS])
    for name, schema in shipped.items():
        assert without_descriptions(upstream[parse_shipped_name(name)]) == schema, name
    assert shipped_name("kueue.x-k8s.io/v1beta2", "ClusterQueue") in shipped


def write_crd_without_cohort_name(path: Path) -> None:
    """Kueue's ClusterQueue CRD with spec.cohortName removed: a cluster whose Kueue predates it."""
    crd = yaml.safe_load((UPSTREAM_CRDS / "kueue" / "kueue.x-k8s.io_clusterqueues.yaml").read_text())
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop("cohortName", None)
    path.write_text(yaml.safe_dump(crd))


def test_user_crds_win_and_problems_point_at_the_fleet_field(tmp_path: Path, cli_run: Run) -> None:
    text = EXAMPLE.read_text()  # its training queues share cohort training
    (tmp_path / "fleet.yaml").write_text(text)
    write_crd_without_cohort_name(tmp_path / "old-kueue.yaml")
    assert cli_run("validate").returncode == 0  # the shipped CRD knows cohortName
    done = cli_run("validate", "--crd", "old-kueue.yaml")
    assert done.returncode == 1
    line = line_of(text, "- name: data-science-queue")
    assert f"fleet.yaml:{line}:9: clusters[2].queues[1]: rendered ClusterQueue data-science-queue: spec: " in done.stderr
    assert "'cohortName' was unexpected" in done.stderr and "(on training-eastus)" in done.stderr


def test_render_refuses_to_write_an_invalid_tree(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")  # its training queues share cohort training
    write_crd_without_cohort_name(tmp_path / "old-kueue.yaml")
    done = cli_run("render", "--crd", "old-kueue.yaml")
    assert done.returncode == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.yaml", "old-kueue.yaml"]


def test_fail_on_warning_and_missing_crd_path(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    warned = cli_run("validate", "--fail-on", "warning")
    assert warned.returncode == 1 and "0 error(s), 11 warning(s)" in warned.stderr
    assert cli_run("validate", "--crd", "missing/").returncode == 2


def objects_of(cluster: int = 2) -> list[Manifest]:
    return cluster_objects(FLEET, cluster)


def lint_messages(objects: list[Manifest]) -> list[tuple[str, Severity]]:
    return [(message, severity) for _, message, severity in lint_cluster(objects)]


def edited(objects: list[Manifest], kind: str, change: Callable[[dict[str, Any]], None]) -> list[Manifest]:
    out = []
    for manifest in objects:
        body = copy.deepcopy(manifest.body)
        if body["kind"] == kind:
            change(body)
            kind = ""  # only the first object of that kind
        out.append(Manifest(body, manifest.source))
    return out


def test_lints_pass_on_the_example() -> None:
    for index in range(len(FLEET.clusters)):
        assert lint_messages(objects_of(index)) == []


def test_lint_wildcard_role_and_cluster_wide_team_group() -> None:
    objects = edited(objects_of(), "Role", lambda r: r["rules"][0]["verbs"].append("*"))
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "oops", "labels": {"team": "x", "project": "y", "cost-center": "z", "environment": "dev"}},
        "subjects": [{"kind": "Group", "name": FLEET.teams[0].group}],
        "roleRef": {"kind": "ClusterRole", "name": "admin"},
    }
    found = lint_messages(objects + [Manifest(binding, ())])
    assert ("Role gpu-workload-role grants '*' verbs", Severity.ERROR) in found
    assert (f"team group {FLEET.teams[0].group} is bound cluster-wide", Severity.ERROR) in found


def test_lint_completeness_isolation_labels_and_quota() -> None:
    objects = [m for m in objects_of() if m.key != ("LocalQueue", "team-nlp", "team-nlp-queue")]
    objects = edited(objects, "NetworkPolicy", lambda p: p["spec"].update(policyTypes=["Egress"]))
    objects = edited(objects, "PriorityClass", lambda p: p["metadata"]["labels"].pop("cost-center"))
    objects = edited(objects, "ResourceQuota", lambda q: q["spec"]["hard"].update({"limits.nvidia.com/gpu": "3"}))
    found = lint_messages(objects)
    assert found == [
        ("team namespace team-nlp has no LocalQueue", Severity.ERROR),
        ("namespace team-data-science does not deny ingress from other namespaces", Severity.ERROR),
        ("GPU requests (8) and limits (3) must be equal: GPUs cannot be overcommitted", Severity.ERROR),
        ("missing cost-attribution label(s) cost-center", Severity.ERROR),
    ]


def test_fleet_json_schema_is_fresh_and_checks_the_example(tmp_path: Path) -> None:
    """Regenerate with `fleetgen schema`; CI fails while the committed schema is stale."""
    assert (REPO / SCHEMA_PATH).read_text() == fleet_json_schema()
    checker = Path(sys.executable).parent / "check-jsonschema"
    good = subprocess.run([str(checker), "--schemafile", str(REPO / SCHEMA_PATH), str(EXAMPLE)], capture_output=True, text=True)
    assert good.returncode == 0, good.stdout + good.stderr
    broken = tmp_path / "fleet.yaml"
    broken.write_text(
        replace_once(
            EXAMPLE.read_text(),
            "scaling: spot\n        labels: {accelerator: nvidia-t4}",
            "scaling: cheap\n        labels: {accelerator: nvidia-t4}",
        )
    )
    bad = subprocess.run([str(checker), "--schemafile", str(REPO / SCHEMA_PATH), str(broken)], capture_output=True, text=True)
    assert bad.returncode == 1 and "'cheap' is not one of" in bad.stdout + bad.stderr


def test_schema_describes_fields() -> None:
    schema = json.loads(fleet_json_schema())
    pool = schema["$defs"]["NodePool"]["properties"]
    assert pool["maxNodes"]["description"].startswith("Most nodes the pool can grow to")
    assert all("description" in field for field in pool.values())


def test_strict_crd_schema_rejects_unknown_fields() -> None:
    schema = strict({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}})
    assert schema["additionalProperties"] is False and schema["properties"]["a"]["additionalProperties"] is False
    kept = strict({"type": "object", "properties": {"a": {}}, "x-kubernetes-preserve-unknown-fields": True})
    assert "additionalProperties" not in kept


@pytest.mark.parametrize("written", ["010", "0x1F", "0o17", "+5", "1.0", "1e3"])
def test_a_label_value_yaml_reads_as_a_number_written_otherwise_is_refused_where_it_stands(written: str) -> None:
    """`gen: 010` is 10 to YAML 1.2 (and 8 to YAML 1.1): rendering '10' would give a ResourceFlavor that matches no
    node, so it is refused like `1.0`, at its position; a whole number written as its own digits stays accepted."""
    text = replace_once(EXAMPLE.read_text(), "labels: {accelerator: nvidia-h100}", f"labels: {{accelerator: nvidia-h100, gen: {written}}}")
    line = line_of(text, f"gen: {written}")
    column = text.splitlines()[line - 1].index(f"gen: {written}") + len("gen: ") + 1
    [refusal] = findings_of(text)
    assert refusal.startswith(f"{line}:{column}: ") and refusal.endswith(
        f"{written} is a number, not a name: write it in quotes ('{written}')"
    )
    assert findings_of(text.replace(f"gen: {written}", "gen: 10")) == []

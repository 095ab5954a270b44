"""The generated fleets cover fleet.yaml: every section and field of its schema (worked out from the model, so a field
added to the model is in it) is written by some fleet of a fixed set drawn from `generated_fleets.fleets`. A field the
generator never writes is a field no property test tries; this test names it."""

from __future__ import annotations

import json
from typing import Any

import yaml
from generated_fleets import MANAGER, fleet_text, fleets, merged
from hypothesis import HealthCheck, given, settings

from fleetgen.model.json_schema import fleet_json_schema

DRAWN = 200  # examples drawn (the same ones every run): enough that every field turns up


def _resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _alternatives(schema: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The node and each of its anyOf/oneOf/allOf branches, references resolved."""
    node = _resolved(schema, node)
    out = [node]
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in node.get(key, ()):
            out += _alternatives(schema, branch)
    return out


def _map_values(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The schemas of a map's values: additionalProperties, or each patternProperties entry."""
    extra = node.get("additionalProperties")
    return ([extra] if isinstance(extra, dict) else []) + list(node.get("patternProperties", {}).values())


def schema_fields(schema: dict[str, Any], node: dict[str, Any], path: str = "", seen: frozenset[int] = frozenset()) -> set[str]:
    """Every field path of the schema: `clusters[].nodePools[].labels`, `teams[].clusters.*.requests.gpu`."""
    out: set[str] = set()
    for branch in _alternatives(schema, node):
        if id(branch) in seen:  # a recursive definition: its fields are already counted above
            continue
        inner = seen | {id(branch)}
        for name, sub in branch.get("properties", {}).items():
            at = f"{path}.{name}" if path else name
            out |= {at} | schema_fields(schema, sub, at, inner)
        for value in _map_values(branch):
            out |= schema_fields(schema, value, f"{path}.*", inner)
        if isinstance(branch.get("items"), dict):
            out |= schema_fields(schema, branch["items"], f"{path}[]", inner)
    return out


def written_fields(schema: dict[str, Any], node: dict[str, Any], value: Any, path: str = "") -> set[str]:
    """The field paths `value` writes, read along the schema (a map's keys are `*`, a list's items `[]`)."""
    out: set[str] = set()
    for branch in _alternatives(schema, node):
        if isinstance(value, dict):
            properties = branch.get("properties", {})
            for key, item in value.items():
                if key in properties:
                    at = f"{path}.{key}" if path else key
                    out |= {at} | written_fields(schema, properties[key], item, at)
                else:
                    for map_value in _map_values(branch):
                        out |= written_fields(schema, map_value, item, f"{path}.*")
        elif isinstance(value, list) and isinstance(branch.get("items"), dict):
            for item in value:
                out |= written_fields(schema, branch["items"], item, f"{path}[]")
    return out


def test_the_schema_walk_finds_fields_at_every_depth() -> None:
    schema = json.loads(fleet_json_schema())
    fields = schema_fields(schema, schema)
    # a section, a list's item, a map's value, a branch of a union, several levels down
    for field in ("multiKueue", "clusters[].nodePools[].partitioning.mig.layout", "teams[].clusters.*.volumes[].mountPath"):
        assert field in fields
    assert "multiKueue.workers.*.kubeconfig.externalSecret.storeKind" in fields
    written = written_fields(schema, schema, {"clusters": [{"nodePools": [{"taints": [{"key": "k"}]}]}], "pricing": {"gpuHour": {"X": 1}}})
    assert written == {
        "clusters",
        "clusters[].nodePools",
        "clusters[].nodePools[].taints",
        "clusters[].nodePools[].taints[].key",
        "pricing",
        "pricing.gpuHour",
    }


def test_the_generated_fleets_write_every_field_of_fleet_yaml() -> None:
    schema = json.loads(fleet_json_schema())
    written: set[str] = set()
    seen = {"anchors": 0, "merge keys": 0, "multikueue": 0}

    @settings(max_examples=DRAWN, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(fleets(files=True))
    def collect(fleet: dict[str, Any]) -> None:
        written.update(written_fields(schema, schema, fleet))
        text = fleet_text(fleet)
        seen["anchors"] += "&id" in text
        seen["merge keys"] += "<<:" in text
        seen["multikueue"] += any(c["name"] == MANAGER for c in fleet["clusters"])

    collect()
    missing = sorted(schema_fields(schema, schema) - written)
    assert not missing, f"fields of fleet.yaml no generated fleet writes (teach tests/generated_fleets.py): {missing}"
    assert all(seen.values()), seen


def test_a_merge_key_reads_back_as_the_merged_values() -> None:
    base = {"name": "a", "maxNodes": 2, "labels": {"x": "a"}}
    text = fleet_text({"pools": [base, merged(base, name="b")]})
    assert "<<: *id001" in text
    assert yaml.safe_load(text)["pools"][1] == {"name": "b", "maxNodes": 2, "labels": {"x": "a"}}

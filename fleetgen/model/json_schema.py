"""The JSON Schema of fleet.yaml, generated from the model so it cannot drift from it."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from fleetgen.model import API_VERSION, Fleet


def _without_titles(node: Any) -> Any:
    """pydantic derives titles from Python names ("Vmsize"); descriptions say more, so drop them.

    Maps keyed by names (patternProperties) also reject keys that are not names, as fleetgen does."""
    if isinstance(node, dict):
        out = {k: _without_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
        if "patternProperties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_without_titles(v) for v in node]
    return node


class _FleetSchema(GenerateJsonSchema):
    """Maps keyed by a name type: a name may be a whole number in a value, but a JSON key is always text,
    so the keys take the text branch of the name's schema (as patternProperties, like a plain pattern)."""

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        out = super().dict_schema(schema)
        keys = self.generate_inner(schema["keys_schema"]) if "keys_schema" in schema else {}
        text = next((branch for branch in keys.get("anyOf", []) if branch.get("type") == "string"), None)
        if text is not None and "pattern" in text and "additionalProperties" in out:
            out["patternProperties"] = {text["pattern"]: out.pop("additionalProperties")}
            bounds = {k: v for k, v in text.items() if k not in ("type", "pattern")}
            if bounds:
                out["propertyNames"] = bounds
        return out


def fleet_json_schema() -> str:
    schema = _without_titles(Fleet.model_json_schema(by_alias=True, mode="validation", schema_generator=_FleetSchema))
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://fleetgen.invalid/{API_VERSION}/fleet.schema.json",
        **schema,
        "description": "A GPU Kubernetes fleet: clusters, teams, quotas, queues and the compatibility matrix.",
    }
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def fields_at(path: tuple[str | int, ...]) -> list[str]:
    """The field names fleet.yaml allows in the mapping at `path` (for "did you mean" hints)."""
    schema = _schema()
    node: Any = schema
    for part in path:
        node = _resolve(schema, node)
        if isinstance(part, int):
            node = node.get("items", {})
        elif part in node.get("properties", {}):
            node = node["properties"][part]
        elif node.get("patternProperties"):
            node = next(iter(node["patternProperties"].values()))
        else:
            return []
    return sorted(_resolve(schema, node).get("properties", {}))


@cache
def _schema() -> dict[str, Any]:
    return dict(json.loads(fleet_json_schema()))


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow $ref, and into the non-null branch of an optional value."""
    while True:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:
            node = next((n for n in node["anyOf"] if n.get("type") != "null"), {})
        else:
            return node

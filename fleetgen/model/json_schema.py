"""The JSON Schema of fleet.yaml, generated from the model so it cannot drift from it."""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from functools import cache
from itertools import pairwise
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
    so the keys take the text branch of the name's schema (as patternProperties, like a plain pattern).

    Each field's description is the docstring under it, read here from the source: pydantic's
    `use_attribute_docstrings` would read and parse every model's source each time the models are
    built: a third of the time building them took, paid by every command that loads a fleet."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        out = super().model_schema(schema)
        model = schema["cls"]
        documented = _field_docstrings(model)
        for name, field in model.model_fields.items():
            spelled = field.alias or name
            if field.description is None and name in documented and spelled in out.get("properties", {}):
                out["properties"][spelled]["description"] = documented[name]
        return out

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


def _field_docstrings(model: type) -> dict[str, str]:
    """The docstring under each annotated field of `model` and the classes it inherits from (its own over theirs)."""
    found: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if "__annotations__" in vars(klass) and klass.__module__.startswith("fleetgen."):
            found.update(_own_docstrings(klass))
    return found


def _own_docstrings(klass: type) -> dict[str, str]:
    """A string statement right after an annotated assignment in the class body documents that field."""
    body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
    assert isinstance(body, ast.ClassDef)
    found = {}
    for before, statement in pairwise(body.body):
        if (
            isinstance(before, ast.AnnAssign)
            and isinstance(before.target, ast.Name)
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            found[before.target.id] = inspect.cleandoc(statement.value.value)
    return found


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

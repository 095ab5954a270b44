"""The fleet.yaml reference, written from the model's field descriptions (`fleetgen docs`)."""

from __future__ import annotations

import json
from typing import Any

from fleetgen.model.json_schema import fleet_json_schema


def _type(field: dict[str, Any]) -> str:
    if "$ref" in field:
        return f"[{field['$ref'].rsplit('/', 1)[-1]}](#{field['$ref'].rsplit('/', 1)[-1].lower()})"
    if "enum" in field:
        return " \\| ".join(f"`{v}`" for v in field["enum"])
    if "const" in field:
        return f"`{field['const']}`"
    if "anyOf" in field:
        return " or ".join(_type(f) for f in field["anyOf"] if f.get("type") != "null")
    kind = field.get("type", "any")
    if kind == "array":
        return f"list of {_type(field.get('items', {}))}"
    if kind == "object" and isinstance(field.get("additionalProperties"), dict):
        return f"map of {_type(field['additionalProperties'])}"
    if kind == "object" and field.get("patternProperties"):
        return f"map of name to {_type(next(iter(field['patternProperties'].values())))}"
    return str(kind)


def _table(definition: dict[str, Any]) -> list[str]:
    required = set(definition.get("required", []))
    rows = ["| Field | Type | Required | Default | Description |", "|---|---|---|---|---|"]
    for name, field in definition.get("properties", {}).items():
        default = f"`{json.dumps(field['default'])}`" if "default" in field else ""
        description = " ".join(field.get("description", "").split()).replace("|", "\\|")
        rows.append(f"| `{name}` | {_type(field)} | {'yes' if name in required else ''} | {default} | {description} |")
    return rows


def reference_markdown() -> str:
    schema = json.loads(fleet_json_schema())
    lines = [
        "# fleet.yaml reference",
        "",
        "Written by `fleetgen docs` from the model's field descriptions; a test fails while it is stale.",
        "",
        "## Fleet (the top level)",
        "",
        *_table(schema),
    ]
    for name, definition in sorted(schema.get("$defs", {}).items()):
        lines += ["", f"## {name}", ""]
        if definition.get("description"):
            lines += [" ".join(definition["description"].split()), ""]
        lines += _table(definition)
    return "\n".join(lines) + "\n"

"""JSON Schemas for custom resources, read from CustomResourceDefinition manifests.

A CRD's openAPIV3Schema is structural: the API server prunes unknown fields instead of rejecting
them. fleetgen wants a typo to fail, so objects with declared properties get
`additionalProperties: false` unless the CRD preserves unknown fields there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

GroupVersionKind = tuple[str, str]  # (apiVersion, kind)


def schemas_from_crds(documents: Iterable[Any]) -> dict[GroupVersionKind, dict[str, Any]]:
    """Strict schemas of every served version of every CRD among `documents` (others are ignored)."""
    out: dict[GroupVersionKind, dict[str, Any]] = {}
    for doc in documents:
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc.get("spec") or {}
        group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
        for version in spec.get("versions") or []:
            schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or None
            if group and kind and schema and version.get("served", True):
                out[(f"{group}/{version['name']}", kind)] = strict(schema)
    return out


def strict(schema: Any) -> Any:
    """A copy of `schema` in which objects with declared properties reject undeclared ones."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: strict(value) for key, value in schema.items() if key != "properties"}
    if "properties" in schema:
        out["properties"] = {name: strict(sub) for name, sub in schema["properties"].items()}
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        if not preserve and "additionalProperties" not in schema:
            out["additionalProperties"] = False
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    return out

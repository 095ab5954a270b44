"""JSON Schemas for custom resources, read from CustomResourceDefinition manifests.

A CRD's openAPIV3Schema is structural: the API server prunes unknown fields instead of rejecting
them. fleetgen wants a typo to fail, so objects with declared properties get
`additionalProperties: false` unless the CRD preserves unknown fields there.

schemas/crds holds `shipped_files` of the upstream CRDs kept in tests/crds; the development script
scripts/refresh_crds.py writes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fleetgen.errors import FindingsError, InputError
from fleetgen.source.reader import parse_documents, read_bytes
from fleetgen.source.yaml_nodes import Limits

GroupVersionKind = tuple[str, str]  # (apiVersion, kind)
# Upstream CRDs are up to ~1 MB and nest ~40 deep (Argo CD's Application); a --crd folder holds a few dozen.
CRD_LIMITS = Limits(bytes=16 * 1024 * 1024, values=5_000_000, depth=128)

# The custom resources fleetgen renders (or that sit beside them); their schemas ship in schemas/crds.
SHIPPED_GROUPS = (
    "kueue.x-k8s.io",
    "kustomize.toolkit.fluxcd.io",
    "source.toolkit.fluxcd.io",
    "helm.toolkit.fluxcd.io",
    "monitoring.coreos.com",
    "scheduling.volcano.sh",
)
SHIPPED_KINDS = {
    ("argoproj.io", "Application"),
    ("argoproj.io", "ApplicationSet"),
    ("argoproj.io", "AppProject"),
    ("batch.volcano.sh", "Job"),
    ("nvidia.com", "NVIDIADriver"),
    ("external-secrets.io", "ExternalSecret"),
}


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


def read_crds(paths: Iterable[Path]) -> dict[GroupVersionKind, dict[str, Any]]:
    """Schemas of the CRD manifests in these files or folders (*.yaml, *.yml, *.json).

    `--crd` files are untrusted input: read with fleet.yaml's YAML 1.2 reader and its limits (size, depth,
    aliases), and a file that holds no readable CRD is refused in one line naming it (exit 2)."""
    out: dict[GroupVersionKind, dict[str, Any]] = {}
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json")) if path.is_dir() else [path]
        for file in files:
            try:
                documents = parse_documents(read_bytes(file, CRD_LIMITS, "a CRD file"), str(file), CRD_LIMITS, positions=False)
            except FindingsError as exc:
                first = exc.findings[0]
                raise InputError(f"{first.location or file}: {first.message}") from None
            try:
                out.update(schemas_from_crds(d.data for d in documents))
            except (AttributeError, TypeError, KeyError, ValueError) as exc:  # a field of the wrong type somewhere in it
                raise InputError(f"{file}: not a CustomResourceDefinition fleetgen can read ({type(exc).__name__}: {exc})") from None
    return out


def shipped_name(api_version: str, kind: str) -> str:
    return f"{api_version.replace('/', '_')}_{kind}.json"


def parse_shipped_name(name: str) -> GroupVersionKind:
    group, version, kind = name.removesuffix(".json").split("_")
    return f"{group}/{version}", kind


def is_shipped(api_version: str, kind: str) -> bool:
    """Whether fleetgen ships the schema of this kind in schemas/crds."""
    group = api_version.split("/")[0]
    return group in SHIPPED_GROUPS or (group, kind) in SHIPPED_KINDS


def shipped_files(schemas: dict[GroupVersionKind, dict[str, Any]]) -> dict[str, str]:
    """The files of schemas/crds (name -> text) for these CRD schemas: the shipped kinds, without descriptions."""
    return {
        shipped_name(api_version, kind): json.dumps(without_descriptions(schema), sort_keys=True, separators=(",", ":")) + "\n"
        for (api_version, kind), schema in sorted(schemas.items())
        if is_shipped(api_version, kind)
    }


def without_descriptions(schema: Any) -> Any:
    if isinstance(schema, list):
        return [without_descriptions(s) for s in schema]
    if isinstance(schema, dict):
        return {k: without_descriptions(v) for k, v in schema.items() if k != "description" or not isinstance(v, str)}
    return schema


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

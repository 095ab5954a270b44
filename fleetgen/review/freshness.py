"""Freshness: is the committed tree what fleet.yaml renders (`fleetgen check`)? Like `black --check`.

Every difference says what explains it: a fleet.yaml change since the last render (stale, with
the objects and fields that moved and the fleet.yaml field behind them), an edit by hand (the file
no longer matches the ledger), a file that is missing, or an orphan no longer rendered.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from fleetgen.compare.object_diff import ObjectKey, diff_objects, show
from fleetgen.errors import format_path
from fleetgen.output.findings import escape_github
from fleetgen.output.tree import LEDGER, Tree, digest, ledger_bytes
from fleetgen.render import OutputFile
from fleetgen.source.reader import Source


@dataclass(frozen=True)
class Discrepancy:
    path: str
    state: str  # stale, edited, missing, orphan
    explanation: str


def check_tree(tree: Tree, files: dict[str, bytes], output: Callable[[str], OutputFile], source: Source) -> list[Discrepancy]:
    """How the tree differs from `files`; `output` gives the planned file behind a path, to explain a difference."""
    ledger = tree.ledger()
    out: list[Discrepancy] = []
    for path, data in sorted(files.items()):
        current = tree.read(path)
        if current == data:
            continue
        planned = output(path)
        origin = _origin(planned, source)
        if current is None:
            out.append(Discrepancy(path, "missing", f"rendered from {origin}; run fleetgen render"))
        elif path in ledger and digest(current) != ledger[path]:
            out.append(
                Discrepancy(
                    path,
                    "edited",
                    f"changed by hand since the last render ({_changes(current, planned)}); fleetgen render would overwrite it",
                )
            )
        else:
            out.append(
                Discrepancy(path, "stale", f"fleet.yaml changed since the last render: {_changes(current, planned)} (from {origin})")
            )
    for path in sorted(p for p in ledger if p not in files):
        if tree.read(path) is not None:
            out.append(
                Discrepancy(
                    path,
                    "orphan",
                    "no longer rendered by fleet.yaml (its team or cluster was removed or renamed); fleetgen render removes it",
                )
            )
    if not out and tree.read(LEDGER) != ledger_bytes(files):
        out.append(Discrepancy(LEDGER, "stale", "the ledger does not list the rendered files; run fleetgen render"))
    return out


def _origin(output: OutputFile, source: Source) -> str:
    """The first fleet.yaml field behind a file's objects, as file:line:col path."""
    if not output.manifests:
        return source.file
    first = min(output.manifests, key=lambda m: source.locate(m.source))
    return f"{source.locate(first.source)} {format_path(first.source)}"


def _changes(current: bytes, output: OutputFile) -> str:
    if output.markdown is not None:
        return "the report's figures or matrix differ"
    try:
        docs = [d for d in yaml.safe_load_all(current) if isinstance(d, dict)]
    except yaml.YAMLError:
        return "not valid YAML any more"
    old = {_key(d): d for d in docs}
    new = {_key(m.body): m.body for m in output.manifests}
    parts = []
    for change in diff_objects(old, new):
        if change.state == "changed":
            parts += [f"{change.title} {f.path}: {show(f.old)} -> {show(f.new)}" for f in change.fields]
        else:
            parts.append(f"{change.title} {'added' if change.state == 'added' else 'removed'}")
    return "; ".join(parts) or "formatting or order only: the same objects"


def freshness_text(found: list[Discrepancy]) -> str:
    return "\n".join(f"{d.path}: {d.state}: {d.explanation}" for d in found)


def freshness_json(found: list[Discrepancy]) -> str:
    """JSON, version 1; its schema is schemas/output/check.schema.json."""
    return json.dumps({"version": 1, "fresh": not found, "files": [d.__dict__ for d in found]}, indent=2)


def freshness_github(found: list[Discrepancy]) -> str:
    """One error annotation per file that is not a fresh render, on that file."""
    return "\n".join(f"::error file={escape_github(d.path, prop=True)},title={d.state}::{escape_github(d.explanation)}" for d in found)


def _key(doc: dict[str, Any]) -> ObjectKey:
    """The key of a document in a file of the tree; patch documents may lack metadata or a namespace."""
    found = doc.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    return ObjectKey(str(doc.get("kind")), str(meta.get("namespace", "")), str(meta.get("name", "")))

"""`fleetgen check`: is the committed tree what fleet.yaml renders? Like `black --check`.

Every difference says what explains it: a fleet.yaml change since the last render (stale, with
the objects and fields that moved and the fleet.yaml field behind them), an edit by hand (the file
no longer matches the ledger), a file that is missing, or an orphan no longer rendered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from fleetgen.diff import diff_objects, show
from fleetgen.errors import format_path
from fleetgen.render import OutputFile
from fleetgen.source import Source
from fleetgen.tree import LEDGER, Tree, digest, ledger_bytes


@dataclass(frozen=True)
class Discrepancy:
    path: str
    state: str  # stale, edited, missing, orphan
    explanation: str


def check_tree(tree: Tree, files: dict[str, bytes], plan: list[OutputFile], source: Source) -> list[Discrepancy]:
    ledger = tree.ledger()
    by_path = {f.path: f for f in plan}
    out: list[Discrepancy] = []
    for path, data in sorted(files.items()):
        current = tree.read(path)
        if current == data:
            continue
        origin = _origin(by_path[path], source)
        if current is None:
            out.append(Discrepancy(path, "missing", f"rendered from {origin}; run fleetgen render"))
        elif path in ledger and digest(current) != ledger[path]:
            out.append(
                Discrepancy(
                    path,
                    "edited",
                    f"changed by hand since the last render ({_changes(current, by_path[path])}); fleetgen render would overwrite it",
                )
            )
        else:
            out.append(
                Discrepancy(path, "stale", f"fleet.yaml changed since the last render: {_changes(current, by_path[path])} (from {origin})")
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
    old: dict[Any, Any] = {
        (d.get("kind"), (d.get("metadata") or {}).get("namespace", ""), (d.get("metadata") or {}).get("name", "")): d for d in docs
    }
    new = {
        (m.body.get("kind"), m.body.get("metadata", {}).get("namespace", ""), m.body.get("metadata", {}).get("name", "")): m.body
        for m in output.manifests
    }
    parts = []
    for change in diff_objects(old, new):
        if change.state == "changed":
            parts += [f"{change.title} {f.path}: {show(f.old)} -> {show(f.new)}" for f in change.fields]
        else:
            parts.append(f"{change.title} {'added' if change.state == 'added' else 'removed'}")
    return "; ".join(parts) or "formatting only"

"""The import workflow: build every cluster, recognise, infer, verify by rendering, write the text."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fleetgen.checks.fleet import run_checks
from fleetgen.checks.load import load_fleet_text
from fleetgen.compare.object_diff import ObjectChange
from fleetgen.errors import FieldPath, FindingsError, Severity
from fleetgen.importer.addons import claim_installs, with_platform
from fleetgen.importer.build import build_clusters
from fleetgen.importer.imported import Given, Imported
from fleetgen.importer.infer import infer
from fleetgen.importer.keep import Kept, keep
from fleetgen.importer.recognise import recognise
from fleetgen.importer.verify import unreproduced
from fleetgen.importer.write import fleet_yaml
from fleetgen.model import Fleet
from fleetgen.render.layout import cluster_objects
from fleetgen.render.rendered import Rendered
from fleetgen.validation.rendered_objects import Schemas, check_loaded


@dataclass(frozen=True)
class Found:
    """Something the imported fleet.yaml does not hold, with its file and the clusters it is on."""

    file: str
    title: str
    why: str
    clusters: tuple[str, ...]

    def line(self) -> str:
        return f"{self.file}: {self.title}: {self.why} (on {', '.join(self.clusters)})"


@dataclass(frozen=True)
class ImportResult:
    text: str
    unmodelled: list[Found]  # objects fleet.yaml cannot hold (and, when keeping, could not keep)
    unreproduced: list[Found]  # modelled objects the imported fleet renders differently
    placeholders: int
    kept: list[Kept]  # with keep_unmodelled: hand-written files that hold the unmodelled objects
    invalid: list[str] = field(default_factory=list)  # `file:line:col: path: message` of what validate would reject


def import_repository(repo: Path, given: Given, *, keep_unmodelled: bool = False, file: str = "fleet.yaml") -> ImportResult:
    """Import `repo`; `file` is where fleet.yaml will be written, to place what validate would reject."""
    built = build_clusters(repo)
    views = [recognise(name, objects) for name, objects in built.items()]
    add_ons = [claim_installs(view) for view in views]
    imported = infer(views, given)
    with_platform(imported, add_ons)
    fleet, problem = _stand_in_fleet(imported)
    kept: list[Kept] = []
    if keep_unmodelled:
        for index, view in enumerate(views):
            rendered = {m.key for m in cluster_objects(fleet, index)} if fleet is not None else set()
            here, view.unmodelled = keep(repo, view, rendered)
            if here:
                imported.document["clusters"][index]["extraResources"] = [k.path for k in here]
                imported.notes[("clusters", index, "extraResources")] = "kept by import: objects fleet.yaml cannot hold"
            kept += here
    text = fleet_yaml(imported, repo.name or str(repo))
    unmodelled: dict[tuple[str, str, str], list[str]] = {}
    for view in views:
        for item in view.unmodelled:
            unmodelled.setdefault((item.file, item.title, item.why), []).append(view.name)
    differences: dict[tuple[str, str, str], list[str]] = {}
    for index, view in enumerate(views):
        files = {
            (b.body.get("kind"), (b.body.get("metadata") or {}).get("namespace", "") or "", b.body["metadata"].get("name")): b.file
            for b in view.modelled
        }
        if fleet is None:
            differences.setdefault((f"clusters/{view.name}", "the imported fleet", problem), []).append(view.name)
            continue
        for change in unreproduced([b.body for b in view.modelled], fleet, index):
            file = files.get((change.kind, change.namespace, change.name), f"clusters/{view.name}")
            differences.setdefault((file, change.title, _explain(change)), []).append(view.name)
    return ImportResult(
        text,
        [Found(f, t, w, tuple(c)) for (f, t, w), c in sorted(unmodelled.items())],
        [Found(f, t, w, tuple(c)) for (f, t, w), c in sorted(differences.items())],
        len(imported.placeholders),
        kept,
        _invalid(imported, repo.name or str(repo), file) if fleet is not None else [],
    )


def _stand_in_document(imported: Imported) -> Any:
    """The imported document with a valid stand-in for each placeholder."""
    document: Any = copy.deepcopy(imported.document)
    for path, stand_in in imported.placeholders.items():
        _set(document, path, stand_in)
    return document


def _invalid(imported: Imported, source: str, file: str) -> list[str]:
    """What `fleetgen validate` rejects in the written fleet.yaml, but for its TODO(import) placeholders (already
    counted): the fleet, its checks and every object it renders. The stand-ins take the placeholders' lines."""
    text = fleet_yaml(Imported(_stand_in_document(imported), imported.notes), source)
    try:
        loaded = load_fleet_text(text.encode(), file)
        check_loaded(loaded, Schemas(), Rendered(loaded.fleet))
    except FindingsError as exc:
        errors = [f for f in exc.findings if f.severity is Severity.ERROR and f.path not in imported.placeholders]
        return [f"{f.location}: {f.dotted_path}: {f.message}" if f.location else f"{file}: {f.dotted_path}: {f.message}" for f in errors]
    return []


def _stand_in_fleet(imported: Imported) -> tuple[Fleet | None, str]:
    """The imported fleet with a valid stand-in for each placeholder, to render and compare."""
    document = _stand_in_document(imported)
    try:
        fleet = Fleet.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return None, f"does not load, so it was not compared: {where}: {first['msg']}"
    # Render assumes what validate checks across fields (a queue's flavors are the cluster's pools): a repository
    # whose objects break that cannot be rendered to compare, so it is reported, not rendered.
    errors = [f for f in run_checks(fleet) if f.severity is Severity.ERROR]
    if errors:
        return None, f"does not pass validate, so it was not compared: {errors[0].dotted_path}: {errors[0].message}"
    return fleet, ""


def _set(document: Any, path: FieldPath, value: Any) -> None:
    for part in path[:-1]:
        document = document[part]
    document[path[-1]] = value


def _explain(change: ObjectChange) -> str:
    if change.state == "removed":
        return "the imported fleet does not render it"
    if change.state == "added":
        return "the imported fleet would add it"
    shown = "; ".join(f"{f.path}: {f.old} -> {f.new}" for f in change.fields[:3])
    more = f" (and {len(change.fields) - 3} more)" if len(change.fields) > 3 else ""
    return f"the imported fleet renders it differently: {shown}{more}"

"""Workflows between the command line and the pure core: load, check, render once, write, report.

A command parses its options, calls one function here and prints what comes back (tanka's
`pkg/tanka` between `cmd/tk` and `pkg/process`). The order of the stages lives here, so every
command that needs the rendered objects gets the same ones, computed once. Nothing here prints;
`stage` callbacks let the caller show progress.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NamedTuple

from fleetgen.cache import Cache
from fleetgen.checks.load import LoadedFleet, load_fleet, load_fleet_text
from fleetgen.errors import Finding, FindingsError, InputError, Severity
from fleetgen.model.fleet import cluster_index
from fleetgen.output.generated_paths import SCHEMA_PATH
from fleetgen.output.tree import LEDGER, Tree, TreeChanges, replace_file
from fleetgen.render.rendered import Rendered
from fleetgen.upgrade.moments import utc_now
from fleetgen.validation.crd_schemas import read_crds
from fleetgen.validation.known_reports import KnownReport, KnownReports, utc_date
from fleetgen.validation.rendered_objects import Schemas, check_loaded
from fleetgen.validation.verdicts import ClusterVerdicts, FleetVerdicts
from fleetgen.workflows.tree_files import TreeFiles, remember_tree

# Only what validate, render and check need is imported here; what one command alone uses (git, the pull-request
# diff, live clusters, authoring) is imported inside its function, so those commands' start-up pays for it alone.
if TYPE_CHECKING:
    from fleetgen.authoring.doctor import Protections
    from fleetgen.authoring.fleetgen_source import FleetgenSource
    from fleetgen.authoring.migrate import Migration
    from fleetgen.model import Fleet
    from fleetgen.render import ObjectKey
    from fleetgen.report.explain import Explained
    from fleetgen.review.freshness import Discrepancy

Stage = Callable[[str], None]


def _quiet(_: str) -> None:
    """The default stage callback: no progress shown."""


@dataclass(frozen=True)
class CheckOptions:
    """How rendered objects are checked: extra CRDs (`--crd`), `--strict`, `--fail-on`."""

    crds: tuple[Path, ...] = ()
    strict: bool = False
    fail_on: Severity = Severity.ERROR


@dataclass(frozen=True)
class Checked:
    """A fleet that loaded and passed its checks, with its render and its warnings."""

    loaded: LoadedFleet
    rendered: Rendered
    findings: list[Finding]
    cache: Cache | None = None  # files emitted by earlier runs, taken instead of emitting again

    @cached_property
    def tree(self) -> TreeFiles:
        """The files of the render's tree."""
        return TreeFiles(self.rendered, self.loaded.source.file, self.cache)

    @property
    def fleet(self) -> Fleet:
        return self.loaded.fleet


def _schemas(options: CheckOptions) -> Schemas:
    try:
        return Schemas(read_crds(options.crds))
    except (OSError, ValueError) as exc:
        raise InputError(f"--crd: cannot read CRDs: {exc}") from None


def checked(
    loaded: LoadedFleet,
    options: CheckOptions = CheckOptions(),
    stage: Stage = _quiet,
    lender: Rendered | None = None,
    cache: Cache | None = None,
) -> Checked:
    """Render `loaded` once and check it and every object it renders; raises FindingsError when it fails.

    `lender`: another revision's render, whose clusters with unchanged inputs are taken as they
    are; `cache`: emitted files and per-cluster verdicts of earlier runs, so clusters whose inputs
    did not change are neither emitted nor validated again (verdicts never for a fleet with its own
    facts file, which is read beside it, nor with a --crd CEL rule that is warned about once a run)."""
    schemas = _schemas(options)
    stage(f"checking what {len(loaded.fleet.clusters)} cluster(s) get")
    rendered = Rendered(loaded.fleet, lender=lender)
    # Per-cluster verdicts only where each cluster's verdict depends on that cluster's inputs alone. Argo CD's note on
    # wave health (validation/argocd.py, with applicationHealth: yours) names every cluster whose Applications sync in
    # waves: a cluster with a kept verdict is not planned again, so the note would leave it out.
    own_facts = loaded.fleet.compatibility.facts_file is not None
    gitops = loaded.fleet.gitops
    one_note_for_all = gitops.engine == "argocd" and gitops.argocd.application_health == "yours"
    alone = cache is not None and not own_facts and not schemas.warns_once and not one_note_for_all
    known = ClusterVerdicts(cache, schemas.digest, options.strict) if cache is not None and alone else None
    findings = check_loaded(loaded, schemas, rendered, strict=options.strict, fail_on=options.fail_on, known=known, now=utc_now())
    if known is not None:
        known.save()  # only after a pass: a failing fleet is judged afresh next time
    return Checked(loaded, rendered, findings, cache)


def _judged(loaded: LoadedFleet, cache: Cache, stage: Stage = _quiet, lender: Rendered | None = None) -> Checked:
    """`checked` with the default options, skipped when the cache knows this text passed them. For `check` and `diff`,
    which print no warnings: a skipped check has only the model's."""
    verdicts = FleetVerdicts(cache)
    if verdicts.passed(loaded):
        return Checked(loaded, Rendered(loaded.fleet, lender=lender), list(loaded.warnings), cache)
    result = checked(loaded, stage=stage, lender=lender, cache=cache)
    verdicts.record(loaded)
    return result


def load_checked(fleet: Path, options: CheckOptions = CheckOptions(), stage: Stage = _quiet, cache: Cache | None = None) -> Checked:
    """Load FLEET from disk, render it once and check everything (`validate`); what passed is kept in `cache`
    for validate's shortcut (validation/known_reports.py)."""
    stage(f"reading {fleet}")
    day = utc_date()  # before the checks: a report is kept under the day they ran on
    result = checked(load_fleet(fleet), options, stage, cache=cache)
    if cache is not None and not options.crds and result.fleet.compatibility.facts_file is None:
        report = KnownReport(tuple(result.findings), len(result.fleet.clusters), len(result.fleet.teams))
        KnownReports(cache).record(result.loaded.source.text.encode(), str(fleet), options.strict, options.fail_on, day, report)
    return result


def validate(fleet: Path, options: CheckOptions = CheckOptions(), stage: Stage = _quiet) -> Checked:
    """`validate`: like load_checked, keeping what it found and the tree it checked where `render` then looks."""
    cache = Cache.for_user()
    result = load_checked(fleet, options, stage, cache)
    _remember_pass(result, options, cache)
    return result


class RenderResult(NamedTuple):
    root: Path
    files: int
    changes: TreeChanges
    findings: list[Finding]


def render_tree(fleet: Path, out: Path | None, options: CheckOptions = CheckOptions(), stage: Stage = _quiet) -> RenderResult:
    """Write the tree of FLEET; nothing is written unless FLEET and every object it renders are valid."""
    root = out if out is not None else fleet.parent
    cache = Cache.for_user()
    result = load_checked(fleet, options, stage, cache)
    refuse_missing_hand_written(result.loaded, root)
    stage("rendering")
    files = result.tree.files
    stage(f"writing {len(files)} files")
    changes = Tree(root).write(files)
    _remember_pass(result, options, cache)
    cache.prune()
    return RenderResult(root, len(files), changes, result.findings)


def _remember_pass(result: Checked, options: CheckOptions, cache: Cache) -> None:
    """A pass with the default options is kept for the shortcuts of check, diff and render."""
    if options == CheckOptions():
        FleetVerdicts(cache).record(result.loaded)
        remember_tree(result.loaded, result.tree, cache)


def refuse_missing_hand_written(loaded: LoadedFleet, root: Path) -> None:
    """Every cluster's extraResources must exist in the tree: kustomize would fail on the cluster instead."""
    # fix: Create the file, or drop it from the cluster's extraResources
    missing = [
        loaded.source.place(
            Finding(("clusters", c, "extraResources", r), f"{path}: no such file or folder in {root / 'clusters' / cluster.name}")
        )
        for c, cluster in enumerate(loaded.fleet.clusters)
        for r, path in enumerate(cluster.extra_resources)
        if not os.path.lexists(root / "clusters" / cluster.name / path)
    ]
    if missing:
        raise FindingsError(missing)


class Freshness(NamedTuple):
    root: Path
    files: int
    found: list[Discrepancy]
    fixed: TreeChanges | None = None


def freshness(fleet: Path, out: Path | None, *, fix: bool = False, stage: Stage = _quiet) -> Freshness:
    """Is the committed tree a fresh render of FLEET (`check`)? With `fix`, make it one."""
    from fleetgen.review.freshness import check_tree

    tree = Tree(out if out is not None else fleet.parent)
    stage(f"reading {fleet}")
    cache = Cache.for_user()
    result = _judged(load_fleet(fleet), cache, stage)
    refuse_missing_hand_written(result.loaded, tree.root)
    tree.recover()  # a render interrupted after its commit point is finished first
    files = result.tree
    found = check_tree(tree, files.files, files.output, result.loaded.source)
    remember_tree(result.loaded, files, cache)
    cache.prune()  # CI runs check, not render, on a cache it keeps between runs: entries unread for 30 days go here
    return Freshness(tree.root, len(files.files), found, tree.write(files.files) if fix and found else None)


def write_validated(fleet: Path, text: str, *, render: bool = True) -> str:
    """Validate an edited fleet.yaml and all it renders; only then write it (and render the tree).

    Returns the line that says what was written."""
    result = checked(load_fleet_text(text.encode(), fleet.name))
    if render:
        refuse_missing_hand_written(result.loaded, fleet.parent)
    replace_file(fleet, text.encode())
    if not render:
        return f"{fleet}: updated"
    changes = Tree(fleet.parent).write(result.tree.files)
    return f"{fleet}: updated; {fleet.parent}: {len(changes.written)} written, {len(changes.removed)} removed"


def migrate_fleet(fleet: Path, *, check_only: bool = False) -> Migration:
    """Rewrite FLEET for every deprecation it uses, validated before it is written (`migrate`); `check_only` writes nothing."""
    from fleetgen.authoring.migrate import migrate

    result = migrate(load_fleet(fleet))
    if result.changes and not check_only:
        checked(load_fleet_text(result.text.encode(), fleet.name))
        replace_file(fleet, result.text.encode())
    return result


class Explanation(NamedTuple):
    cluster: str
    key: ObjectKey
    fields: list[Explained]


def explain(fleet: Path, cluster: str, ref: str, field_path: str | None = None) -> Explanation:
    """Where each field of object `ref` on CLUSTER comes from in FLEET (`explain`)."""
    from fleetgen.report.explain import explain_object, find_object, select

    loaded = load_fleet(fleet)
    index = cluster_index(loaded.fleet, cluster, cluster)
    objects, provenance = Rendered(loaded.fleet).explained(index)
    key = find_object(list(objects), ref, cluster)
    fields = explain_object(provenance, key, objects[key], loaded.source)
    return Explanation(cluster, key, select(fields, field_path))


def init_repository(
    folder: Path,
    name: str | None,
    engine: str | None,
    repository: str | None,
    source: str | None,
    *,
    allow_local: bool = False,
    git: bool = True,
    org: str | None = None,
    credentials: str | None = None,
) -> tuple[int, FleetgenSource, list[str]]:
    """Start a fleet repository in FOLDER (all or nothing: never overwrites); the number of files, the fleetgen pinned and
    how to create the Git credentials Secret (`credentials`: its kind, for a private repository).

    The pin is checked before anything is written: `source` (URL@REF) must be found by git, else this
    fleetgen's own install must have come from a git commit or a clone whose origin holds its HEAD
    (fleetgen_source.py). With `git`, the folder becomes a repository whose first commit holds the files."""
    from fleetgen.authoring.first_commit import can_commit, first_commit
    from fleetgen.authoring.fleetgen_source import FleetgenSource, checked_source, installed_source
    from fleetgen.authoring.git_secret import git_secret_lines
    from fleetgen.authoring.scaffold import init_files, refuse_overwrites
    from fleetgen.model.json_schema import fleet_json_schema

    if source is not None:
        FleetgenSource.parse(source, allow_local)  # a malformed or local value is a usage error before git is asked
    pinned = checked_source(source, allow_local) if source is not None else installed_source(allow_local)
    files = init_files(name, engine, repository, pinned, org, credentials)
    files[SCHEMA_PATH] = fleet_json_schema().encode()
    result = checked(load_fleet_text(files["fleet.yaml"], "fleet.yaml"))
    tree = result.tree.files
    refuse_overwrites(folder, [*files, *tree, LEDGER])
    if git:
        can_commit(folder)
    for path, data in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_file(target, data)
    Tree(folder).write(tree)
    if git:
        first_commit(folder, sorted([*files, *tree, LEDGER]), f"New fleet repository {result.fleet.metadata.name} (fleetgen init)")
    return len(files) + len(tree), pinned, git_secret_lines(result.fleet)


def examine_repository(folder: Path, fleet_file: str) -> Protections:
    """`doctor`: the fleet at FOLDER/fleet_file, then what the repository's files assume of GitHub (authoring/doctor.py)."""
    from fleetgen.authoring.doctor import examine

    return examine(folder, load_fleet(folder / fleet_file).fleet, PurePosixPath(fleet_file).as_posix())

"""A fleet's own facts file (fleet.yaml `compatibility.factsFile`): read, validated with positions, merged.

The file is read with the same positioned reader as fleet.yaml, so a bad row is reported as
`extra-facts.yaml:12:5: cudaDriver[0].url: ...`; a row that replaces a shipped one is a warning there.
"""

from pathlib import Path as FsPath
from typing import Any, NamedTuple

from pydantic import ValidationError

from fleetgen.compat.facts import Facts, facts, merge
from fleetgen.errors import Finding, FindingsError, InputError, Location, Severity
from fleetgen.model import Fleet
from fleetgen.source.reader import Source, parse_fleet, read_fleet_bytes


class FleetFacts(NamedTuple):
    """The facts a fleet is checked against, and the warnings about rows of its own that replace shipped ones."""

    facts: Facts
    findings: tuple[Finding, ...] = ()


def fleet_facts(fleet: Fleet, source: Source) -> FleetFacts:
    """The shipped facts, merged with the file fleet.yaml names (relative to its folder), if any.

    Raises FindingsError (exit 1) for a missing or invalid file, every problem placed at its position."""
    name = fleet.compatibility.facts_file
    if name is None:
        return FleetFacts(facts())
    path = FsPath(source.file).parent / name
    try:
        raw = read_fleet_bytes(path)
    except InputError as exc:
        field = ("compatibility", "factsFile")
        # fix: Fix the facts file named by factsFile (its path, its YAML)
        raise FindingsError([source.place(Finding(field, f"cannot use the facts file: {exc}"))]) from None
    return merge_facts_text(raw, str(path), facts())


def merge_facts_text(raw: bytes, file: str, shipped: Facts) -> FleetFacts:
    """Facts file bytes (named `file` in messages) merged over `shipped`."""
    extra_source = parse_fleet(raw, file)
    if not isinstance(extra_source.data, dict):
        # fix: Write the facts file as a mapping of tables (kubernetesReleases, drivers, ...)
        raise FindingsError([Finding((), "a facts file must be a mapping of tables", location=Location(file, 1, 1))])
    from fleetgen.compat.facts_file import ExtraFacts  # the schema's classes are built only for a fleet that names a file

    try:
        extra = ExtraFacts.model_validate(extra_source.data)
    except ValidationError as exc:
        problems = [_placed(extra_source, error) for error in exc.errors()]
        raise FindingsError(sorted(problems, key=lambda f: (f.location or Location(file, 0, 0), f.dotted_path))) from None
    merged, overrides = merge(shipped, extra.plain_tables(), extra.as_of)
    # fix: Check the row against its source when you upgrade fleetgen, and drop it once fleetgen's own row holds
    warnings = tuple(
        extra_source.place(
            Finding(
                (o.table, o.row),
                f"replaces fleetgen's own {o.table} row [{o.replaced.source}]; check it still holds when you upgrade fleetgen",
                Severity.WARNING,
            )
        )
        for o in overrides
    )
    return FleetFacts(merged, warnings)


def _placed(source: Source, error: Any) -> Finding:
    path = tuple(part for part in error["loc"] if part != "[key]")
    kind = error["type"]
    if kind == "extra_forbidden":
        message = "unknown field"
    elif kind == "missing":
        message = (
            "required field is missing (every row needs source and url)"
            if path and path[-1] in ("source", "url")
            else "required field is missing"
        )
    else:
        message = str(error["msg"]).removeprefix("Value error, ")
    # fix: Correct the facts file's row the message names
    return Finding(path, message, location=source.locate(path, key=kind == "extra_forbidden"))

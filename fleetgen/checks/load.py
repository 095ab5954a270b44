"""fleet.yaml to a checked Fleet: parse, validate the model, run the checks, place every finding."""

from pathlib import Path as FsPath
from typing import Any, NamedTuple

from pydantic import ValidationError

from fleetgen.checks.fleet import run_checks
from fleetgen.checks.secrets import secret_findings
from fleetgen.compat.extra import fleet_facts
from fleetgen.compat.facts import Facts, facts
from fleetgen.errors import Finding, FindingsError, Location, Severity
from fleetgen.model import Fleet
from fleetgen.source.reader import Source, SourceFloat, SourceInt, parse_fleet, read_fleet

# pydantic error types whose position is the offending mapping key rather than its value
_KEY_ERRORS = {"extra_forbidden"}


class LoadedFleet(NamedTuple):
    source: Source
    fleet: Fleet
    warnings: tuple[Finding, ...]
    facts: Facts  # what the fleet was checked against: the shipped facts merged with its own facts file; plan with these too


def load_fleet(path: str | FsPath) -> LoadedFleet:
    return _load(read_fleet(path))


def load_fleet_text(raw: bytes, file: str = "fleet.yaml") -> LoadedFleet:
    return _load(parse_fleet(raw, file))


def load_model(path: str | FsPath) -> Fleet:
    """fleet.yaml typed, without the checks across the model: for a command that only reads sizes and quotas (forecast),
    on a fleet `validate` gates anyway. The checks of a large fleet take longer than the whole forecast."""
    return _typed(read_fleet(path))


def typed_fleet_text(raw: bytes, file: str = "fleet.yaml") -> LoadedFleet:
    """fleet.yaml typed, with the shipped facts, before the checks across the model (so without their warnings). For a
    caller that may know the text passed them already (`checked_fleet` runs them) and reads no warnings."""
    source = parse_fleet(raw, file)
    return LoadedFleet(source, _typed(source), (), facts())


def passed_fleet_text(raw: bytes, file: str = "fleet.yaml", *, positions: bool = True) -> LoadedFleet:
    """fleet.yaml typed, for a caller that knows this very text passed every check (the cache kept its verdict): no
    secret scan and no checks across the model, which it passed; without `positions` when nothing will be placed in it."""
    return passed_fleet(parse_fleet(raw, file, positions=positions))


def passed_fleet(source: Source) -> LoadedFleet:
    """`passed_fleet_text` of a text already parsed (or whose values the cache kept, checks/kept_values.py)."""
    return LoadedFleet(source, _typed(source, scan=False), (), facts())


def checked_fleet(typed: LoadedFleet) -> LoadedFleet:
    """A typed fleet checked across the model: what load_fleet_text gives for the same text."""
    return _checked(typed.source, typed.fleet)


def _load(source: Source) -> LoadedFleet:
    return _checked(source, _typed(source))


def _checked(source: Source, fleet: Fleet) -> LoadedFleet:
    data = fleet_facts(fleet, source)  # the shipped facts merged with the fleet's own facts file; its errors raise here
    findings = _sorted([source.place(f) for f in run_checks(fleet, data.facts)] + list(data.findings))
    if any(f.severity is Severity.ERROR for f in findings):
        raise FindingsError(findings)
    return LoadedFleet(source, fleet, tuple(findings), data.facts)


def _typed(source: Source, *, scan: bool = True) -> Fleet:
    if not isinstance(source.data, dict):
        # fix: Write fleet.yaml as a YAML mapping (apiVersion, kind, metadata, ...)
        raise FindingsError([Finding((), "fleet.yaml must be a mapping of fields", location=Location(source.file, 1, 1))])
    secrets = [source.place(f) for f in secret_findings(source.data)] if scan else []
    if secrets:  # before anything else: a secret must not reach a rendered file or an error message
        raise FindingsError(_sorted(secrets))
    try:
        fleet = Fleet.model_validate(source.data, by_alias=True, by_name=False)  # fleet.yaml's names only: maxNodes, not max_nodes
    except ValidationError as exc:
        raise FindingsError(_sorted([_from_pydantic(source, error) for error in _causes(exc.errors())])) from None
    return fleet


def _causes(errors: list[Any]) -> list[Any]:
    """The errors without their echoes: pydantic counts a list's length after dropping the items that failed,
    so a list whose every item is wrong also reads as too short. That follows from the item errors."""
    failed = {tuple(e["loc"][:end]) for e in errors for end in range(len(e["loc"]))}  # every container an error sits in
    return [e for e in errors if not (e["type"] == "too_short" and tuple(e["loc"]) in failed)]


def _from_pydantic(source: Source, error: Any) -> Finding:
    loc = tuple(error["loc"])
    on_key = error["type"] in _KEY_ERRORS or "[key]" in loc
    path = tuple(part for part in loc if part != "[key]")
    message = _message(error)
    if error["type"] == "extra_forbidden":
        message += _unknown_field_hint(source, path)
    if error["type"] == "duplicate_item":  # a repeat in a keyed list: say where the first one stands
        at = max(i for i, part in enumerate(path) if isinstance(part, int))
        first = source.locate((*path[:at], error["ctx"]["first"], *path[at + 1 :]))
        message += f" (first at line {first.line})"
    # fix: Correct the field the message names
    return Finding(path, message, location=source.locate(path, key=on_key))


def _unknown_field_hint(source: Source, path: tuple[str | int, ...]) -> str:
    """Where an unknown key belongs: a sibling mapping where it is a known field (`limits:` dedented out of `quota:`),
    else the closest field name. Only a fleet with an unknown field gets here, so difflib and the JSON Schema's field
    lists are imported here, not at every start."""
    import difflib

    from fleetgen.model.json_schema import fields_at

    siblings = source.value_at(path[:-1])
    if isinstance(siblings, dict):
        homes = [str(k) for k, v in siblings.items() if isinstance(v, dict) and path[-1] in fields_at((*path[:-1], str(k)))]
        if len(homes) == 1:
            return f"; it belongs under {homes[0]!r}: indent it there"
    close = difflib.get_close_matches(str(path[-1]), fields_at(path[:-1]), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _message(error: Any) -> str:
    kind, msg, value = error["type"], error["msg"], error.get("input")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind.startswith(("literal_", "enum", "int_", "float_", "bool_", "string_", "greater_", "less_", "too_")):
        shown = value.text if isinstance(value, (SourceFloat, SourceInt)) else value
        if isinstance(shown, bool):  # as YAML writes it
            msg += f", got {str(shown).lower()} (a boolean)"
        elif isinstance(shown, (str, int, float)) and len(repr(shown)) <= 80:
            msg += f", got {shown!r}"
    return str(msg)


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.location or Location("", 0, 0), f.dotted_path))

"""Findings as text (file:line:col: path: message), JSON (versioned), or GitHub Actions annotations.

Text groups repeats, so a large fleet's output stays readable: findings of one shape (severity and
message with its numbers blanked out) are listed up to SHOWN times, then counted in one line, and
each such shape gets a one-line summary at the end; `every` lists them all. JSON and GitHub
annotations always keep every finding. The JSON Schema of the JSON form is
schemas/output/findings.schema.json."""

from __future__ import annotations

import json
import re

from fleetgen.errors import Finding, Severity

FORMATS = ("text", "json", "github")
SHOWN = 3  # findings of one shape listed before the rest are counted
_NUMBER = re.compile(r"\d+")


def format_findings(findings: list[Finding], fmt: str, *, every: bool = False) -> str:
    if fmt == "json":
        return json.dumps({"version": 1, "findings": [_as_json(f) for f in findings]}, indent=2, ensure_ascii=False)
    if fmt == "github":
        return "\n".join(_as_github(f) for f in findings)
    return "\n".join(_as_text(f) for f in findings) if every else _grouped_text(findings)


def _shape(f: Finding) -> tuple[Severity, str]:
    """What makes findings alike: the same rule says the same thing, up to the numbers in it."""
    return f.severity, _NUMBER.sub("#", f.message)


def _grouped_text(findings: list[Finding]) -> str:
    groups: dict[tuple[Severity, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault(_shape(f), []).append(f)
    collapsed = {shape for shape, group in groups.items() if len(group) > SHOWN + 1}
    lines: list[str] = []
    listed: dict[tuple[Severity, str], int] = {}
    for f in findings:
        shape = _shape(f)
        count = listed[shape] = listed.get(shape, 0) + 1
        if shape not in collapsed or count <= SHOWN:
            lines.append(_as_text(f))
        if shape in collapsed and count == SHOWN:
            lines.append(f"  ... and {len(groups[shape]) - SHOWN:,} more like this; --all to list")
    for shape in [s for s in groups if s in collapsed]:  # in the order each shape first appears: the same every run
        first = groups[shape][0]
        kind = "warnings" if first.severity is Severity.WARNING else "errors"
        where = f"{first.location}: {first.dotted_path}" if first.location else first.dotted_path
        lines.append(f"{len(groups[shape]):,} {kind} of this kind: {first.message} (first at {where})")
    return "\n".join(lines)


def summary(findings: list[Finding]) -> str:
    errors = sum(f.severity is Severity.ERROR for f in findings)
    warnings = sum(f.severity is Severity.WARNING for f in findings)
    return f"{errors} error(s), {warnings} warning(s)"


def _as_text(f: Finding) -> str:
    prefix = f"{f.location}: " if f.location else ""
    kind = "" if f.severity is Severity.ERROR else f"{f.severity.value}: "
    return f"{prefix}{kind}{f.dotted_path}: {f.message}"


def _as_json(f: Finding) -> dict[str, object]:
    loc = f.location
    return {
        "file": loc.file if loc else None,
        "line": loc.line if loc else None,
        "column": loc.column if loc else None,
        "path": f.dotted_path,
        "severity": f.severity.value,
        "message": f.message,
    }


def escape_github(text: str, *, prop: bool = False) -> str:
    # GitHub workflow-command escaping: '%', CR and LF always; ':' and ',' inside properties.
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def _as_github(f: Finding) -> str:
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}[f.severity]
    props = f"file={escape_github(f.location.file, prop=True)},line={f.location.line},col={f.location.column}" if f.location else ""
    title = f"title={escape_github(f.dotted_path, prop=True)}"
    return f"::{level} {props + ',' if props else ''}{title}::{escape_github(f.dotted_path + ': ' + f.message)}"

"""Findings as text (file:line:col: path: message), JSON (versioned), or GitHub Actions annotations.

The JSON Schema of the JSON form is schemas/output/findings.schema.json."""

from __future__ import annotations

import json

from fleetgen.errors import Finding, Severity

FORMATS = ("text", "json", "github")


def format_findings(findings: list[Finding], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"version": 1, "findings": [_as_json(f) for f in findings]}, indent=2, ensure_ascii=False)
    if fmt == "github":
        return "\n".join(_as_github(f) for f in findings)
    return "\n".join(_as_text(f) for f in findings)


def summary(findings: list[Finding]) -> str:
    errors = sum(f.severity is Severity.ERROR for f in findings)
    warnings = len(findings) - errors
    return f"{errors} error(s), {warnings} warning(s)"


def _as_text(f: Finding) -> str:
    prefix = f"{f.location}: " if f.location else ""
    kind = "warning: " if f.severity is Severity.WARNING else ""
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
    level = "error" if f.severity is Severity.ERROR else "warning"
    props = f"file={escape_github(f.location.file, prop=True)},line={f.location.line},col={f.location.column}" if f.location else ""
    title = f"title={escape_github(f.dotted_path, prop=True)}"
    return f"::{level} {props + ',' if props else ''}{title}::{escape_github(f.dotted_path + ': ' + f.message)}"

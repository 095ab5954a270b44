"""Findings, the exception tree and the one exit-code map of fleetgen."""

import enum
from typing import NamedTuple

EXIT_OK = 0
EXIT_FINDINGS = 1  # invalid fleet, stale tree, diff or drift found
EXIT_TROUBLE = 2  # usage or I/O trouble

FieldPath = tuple[str | int, ...]  # a value path in fleet.yaml, such as ("teams", 1, "quota")


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"  # what fleetgen cannot check and the reader should know; never fails, not even --fail-on warning


class Location(NamedTuple):  # a named tuple: ordered by file, line, column; cheaper to define than a dataclass
    file: str
    line: int  # 1-based
    column: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class Finding(NamedTuple):
    """One problem with a fleet, at a value path such as ("teams", 1, "quota")."""

    path: FieldPath
    message: str
    severity: Severity = Severity.ERROR
    location: Location | None = None

    @property
    def dotted_path(self) -> str:
        return format_path(self.path)

    def to_json(self) -> list[object]:
        """The finding as JSON values, for a cache entry (from_json reads it back)."""
        where = [self.location.file, self.location.line, self.location.column] if self.location else None
        return [list(self.path), self.message, self.severity.value, where]

    @staticmethod
    def from_json(item: object) -> "Finding":
        """The finding `to_json` wrote; TypeError or ValueError for anything else."""
        if not isinstance(item, list) or len(item) != 4:
            raise TypeError("not a finding")
        path, message, severity, where = item
        if not isinstance(path, list) or not all(isinstance(p, str | int) and not isinstance(p, bool) for p in path):
            raise TypeError("not a field path")
        if not isinstance(message, str) or not isinstance(severity, str):
            raise TypeError("not a message")
        if where is not None and not (
            isinstance(where, list)
            and len(where) == 3
            and isinstance(where[0], str)
            and all(isinstance(n, int) and not isinstance(n, bool) for n in where[1:])
        ):
            raise TypeError("not a location")
        return Finding(tuple(path), message, Severity(severity), Location(*where) if where is not None else None)


def format_path(path: FieldPath) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(document)"


class FleetgenError(Exception):
    """Base of every error fleetgen reports without a traceback."""

    exit_code = EXIT_TROUBLE


class InputError(FleetgenError):
    """A file could not be read or written, or an argument makes no sense."""


class RefusedAsk(FleetgenError):
    """A request the fleet does not allow, such as a job above the team's GPU quota (exit 1); the message says what is allowed."""

    exit_code = EXIT_FINDINGS


class DifferencesFound(FleetgenError):
    """The command did its work and found something to act on: a stale tree, a diff, drift (exit 1).

    Its report is already printed; the message, when there is one, is the closing line."""

    exit_code = EXIT_FINDINGS


class FindingsError(FleetgenError):
    """The fleet has problems; carries all of them, sorted by position."""

    exit_code = EXIT_FINDINGS

    def __init__(self, findings: list[Finding]):
        super().__init__(f"{len(findings)} problem(s)")
        self.findings = findings

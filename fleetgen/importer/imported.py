"""What import builds: fleet.yaml as plain data with its comments and placeholders, and the
helpers every inference step shares."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fleetgen.errors import FieldPath

PLACEHOLDER = "TODO(import)"


@dataclass
class Imported:
    """fleet.yaml as plain data, the comment for some of its values, and where its placeholders stand."""

    document: dict[str, Any]
    notes: dict[FieldPath, str] = field(default_factory=dict)
    placeholders: dict[FieldPath, Any] = field(default_factory=dict)  # path -> a valid stand-in, for verification


@dataclass(frozen=True)
class Given:
    """What the command line adds: fleet-wide values and per-cluster facts (fleet-info keys)."""

    name: str | None = None
    cost_center: str | None = None
    engine: str | None = None
    repository: str | None = None
    facts: dict[str, dict[str, str]] = field(default_factory=dict)


def or_placeholder(out: Imported, path: FieldPath, value: Any, stand_in: Any, why: str) -> Any:
    """`value`, or the placeholder (with its TODO comment and a valid stand-in for verification)."""
    if value is not None:
        return value
    out.placeholders[path] = stand_in
    out.notes[path] = f"TODO(import): {why}"
    return PLACEHOLDER


def mode(values: list[Any]) -> Any:
    """The most common value; among equally common ones, the first seen."""
    counts = Counter(values)
    return max(counts, key=lambda v: (counts[v], -values.index(v)))


def number(value: Any) -> Any:
    return int(value) if isinstance(value, str) and value.isdigit() else value

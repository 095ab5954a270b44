"""The data files fleetgen ships in this package, read into plain immutable rows (named tuples).

Their contents never change between runs, and the tests validate each file against its pydantic schema
and check that this reading gives the same rows (tests/test_shipped_tables.py). So a command reads them
without pydantic: validating them again at every start would first build a pydantic class per row type,
which cost validate of the example about 30 ms of its 0.5 s. A fleet's own facts file is another matter:
it is validated with positions (facts_file.py).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any, TypeVar

import yaml

from fleetgen.model.types import Version

RowT = TypeVar("RowT")  # a NamedTuple class: its annotations name its fields


def _date(value: Any) -> datetime.date:
    return value if isinstance(value, datetime.date) else datetime.date.fromisoformat(value)


# How a written value becomes a field's value, by the field's annotation; a field not named here keeps what YAML read.
_READ: dict[str, Callable[[Any], Any]] = {
    "Version": Version.parse,
    "Version | None": lambda value: None if value is None else Version.parse(value),
    "tuple[Version, ...]": lambda values: tuple(Version.parse(v) for v in values),
    "datetime.date": _date,
    "dict[str, int]": dict,
}


def shipped_data(name: str) -> Any:
    """A data file of this package, as YAML reads it (libyaml: 10x the pure-Python loader, same result)."""
    text = (resources.files("fleetgen.compat") / name).read_text(encoding="utf-8")
    return yaml.load(text, Loader=yaml.CSafeLoader)


def camel(name: str) -> str:
    """min_driver -> minDriver: a field as the files write it."""
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


@cache
def _written_fields(cls: Callable[..., Any]) -> dict[str, tuple[str, Callable[[Any], Any] | None]]:
    """The key each field of `cls` is written as, with the field's name and how its value is read."""
    found = {}
    for name, annotation in cls.__annotations__.items():  # ForwardRefs: these modules' annotations are text
        found[camel(name)] = (name, _READ.get(str(getattr(annotation, "__forward_arg__", annotation))))
    return found


def row(cls: Callable[..., RowT], written: Mapping[str, Any], **nested: Any) -> RowT:
    """One row of `cls` from its mapping in the file; `nested` gives the fields the caller reads itself (tables in a row)."""
    fields = _written_fields(cls)
    values = {}
    for key, value in written.items():
        name, read = fields[key]
        if name not in nested:
            values[name] = value if read is None else read(value)
    return cls(**values, **nested)


def rows(cls: Callable[..., RowT], written: Iterable[Mapping[str, Any]]) -> tuple[RowT, ...]:
    return tuple(row(cls, item) for item in written)

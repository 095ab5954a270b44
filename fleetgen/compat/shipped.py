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
from typing import Any, ForwardRef, TypeVar

import yaml

from fleetgen.model.types import Version

RowT = TypeVar("RowT")  # a NamedTuple class: its annotations name its fields


def _date(value: Any) -> datetime.date:
    return value if isinstance(value, datetime.date) else datetime.date.fromisoformat(value)


# How a written value becomes a field's value, by the field's annotation; a field not named here keeps what YAML read.
# The row modules do not import annotations from __future__: typing.NamedTuple would compile each annotation's text.
_READ: dict[Any, Callable[[Any], Any]] = {
    Version: Version.parse,
    Version | None: lambda value: None if value is None else Version.parse(value),
    tuple[Version, ...]: lambda values: tuple(Version.parse(v) for v in values),
    datetime.date: _date,
    dict[str, int]: dict,
}


def shipped_data(name: str) -> Any:
    """A data file of this package, as YAML reads it (libyaml: 10x the pure-Python loader, same result)."""
    text = (resources.files("fleetgen.compat") / name).read_text(encoding="utf-8")
    return plain_data(text)


_STR, _MAP, _SEQ = (f"tag:yaml.org,2002:{tag}" for tag in ("str", "map", "seq"))


def plain_data(text: str) -> Any:
    """`yaml.load(text, Loader=yaml.CSafeLoader)`, the same values, in 60% of the time on these files: nearly every value
    in them is a string, a mapping with string keys or a list, taken straight from libyaml's nodes here; PyYAML's
    constructor (a few Python calls a node) builds the rest (numbers, booleans, dates, merge keys). For fleetgen's own
    files: a node that contains itself through an alias, which the constructor builds, is a RecursionError here."""
    loader = yaml.CSafeLoader(text)
    try:
        root = loader.get_single_node()

        def value(node: yaml.Node) -> Any:
            if node.tag == _STR:
                return node.value
            if node.tag == _MAP and isinstance(node, yaml.MappingNode) and all(key.tag == _STR for key, _ in node.value):
                return {key.value: value(item) for key, item in node.value}
            if node.tag == _SEQ and isinstance(node, yaml.SequenceNode):
                return [value(item) for item in node.value]
            return loader.construct_object(node, deep=True)  # the constructor's own reading, a merge key (`<<`) among them

        return None if root is None else value(root)
    finally:
        loader.dispose()


def camel(name: str) -> str:
    """min_driver -> minDriver: a field as the files write it."""
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


@cache
def _written_fields(cls: Callable[..., Any]) -> dict[str, tuple[str, Callable[[Any], Any] | None]]:
    """The key each field of `cls` is written as, with the field's name and how its value is read."""
    found = {}
    for name, annotation in cls.__annotations__.items():
        if isinstance(annotation, str | ForwardRef):
            raise TypeError(f"{cls.__module__}: a row module must not import annotations from __future__ ({name}: {annotation})")
        found[camel(name)] = (name, _READ.get(annotation))
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

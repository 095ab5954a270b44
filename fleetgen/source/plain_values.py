"""A document's values as JSON and back, with nothing the reader gave them lost.

The reader (yaml_nodes.py) gives mappings with string keys, lists, strings, booleans, None, integers, and the
numbers that keep the text they were written as (SourceFloat, SourceInt: `12.10` must still read as a version).
JSON holds all of it but that text, which is written beside the values as each such number's path and text; on
the way back the number is made from its text by the reader's own functions, as parsing the text makes it. JSON,
not pickle: reading it runs no code, whoever wrote the bytes.
"""

from __future__ import annotations

import json
from typing import Any

from fleetgen.source.yaml_nodes import SourceFloat, SourceInt, integer, real

_INTEGER, _REAL = "int", "float"


def values_json(data: Any) -> bytes:
    """`data` (a document as the reader gives it) as JSON bytes; ValueError for a value the reader never gives."""
    numbers: list[list[Any]] = []
    _numbers(data, [], numbers)
    return json.dumps({"numbers": numbers, "values": data}, separators=(",", ":"), allow_nan=True).encode("ascii")


def _numbers(value: Any, path: list[str | int], out: list[list[Any]]) -> None:
    """The path and text of every number in `value` that keeps its text, in document order."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError("a mapping key that is not a string")
            if isinstance(item, dict | list | SourceFloat | SourceInt):
                _numbers(item, [*path, key], out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict | list | SourceFloat | SourceInt):
                _numbers(item, [*path, index], out)
    elif isinstance(value, SourceFloat):
        out.append([_REAL, value.text, *path])
    elif isinstance(value, SourceInt):
        out.append([_INTEGER, value.text, *path])


def values_from_json(data: bytes) -> Any | None:
    """The document `values_json` wrote, or None for anything that is not exactly such JSON."""
    try:
        entry = json.loads(data)
        values, numbers = entry["values"], entry["numbers"]
        for kind, text, *path in numbers:
            if not isinstance(text, str) or kind not in (_INTEGER, _REAL):
                return None
            number = integer(text) if kind == _INTEGER else real(text)
            if path:
                if not _put(values, path, number):
                    return None
            elif _same_kind(values, number):  # the whole document is that number
                values = number
            else:
                return None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):  # RecursionError: nested too deep
        return None
    return values


def _put(values: Any, path: list[Any], number: int | float) -> bool:
    """Put `number` where `path` leads, in place of the plain number JSON kept there; False when something else is
    there. KeyError when the path leads nowhere."""
    holder = values
    for part in path[:-1]:
        holder = _child(holder, part)
    if not _same_kind(_child(holder, path[-1]), number):
        return False
    holder[path[-1]] = number
    return True


def _same_kind(plain: Any, number: int | float) -> bool:
    """Whether JSON's `plain` number can be the value `number` was written as: a float for a float, an int for an int."""
    return isinstance(plain, float if isinstance(number, float) else int) and not isinstance(plain, bool)


def _child(holder: Any, part: Any) -> Any:
    """holder[part] for a key of a mapping or an index of a list; KeyError for anything else."""
    if isinstance(holder, dict) and isinstance(part, str):
        return holder[part]
    if isinstance(holder, list) and isinstance(part, int) and not isinstance(part, bool) and 0 <= part < len(holder):
        return holder[part]
    raise KeyError(part)

"""The CEL functions Kubernetes adds to its validation rules, for the CEL engine fleetgen uses.

The engine (cel-rust) implements the CEL core: macros, conversions, `size`, `matches` and the string
predicates. Kubernetes' rule environment adds libraries on top (k8s.io/apiserver/pkg/cel/library:
lists.go, regex.go, quantity.go, and cel-go's strings extension). Those a rule may use are written
here as plain functions; the engine calls them with the receiver as the first argument
(`self.isSorted()` is `isSorted(self)`). A quantity is carried through the engine as a one-key map
`{"quantity": "<text>"}`, since the engine holds only CEL's own types.

Not provided, so a rule using them is reported as not evaluable: the URL, IP, CIDR, semver and
authorizer libraries, named formats (`format.dns1123Label()`) and optional types (`.?field`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from fleetgen.model.types import Quantity
from fleetgen.validation.cel_engine import stdlib

# Functions cel-rust evaluates itself (besides operators, which are named `_x_`, `!_` or `@x`).
NATIVE = frozenset(
    {
        "size", "int", "uint", "double", "string", "bytes", "timestamp", "duration", "type", "dyn",
        "matches", "contains", "startsWith", "endsWith",
        "getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek",
        "getHours", "getMinutes", "getSeconds", "getMilliseconds",
    }
)  # fmt: skip


def _is_operator(name: str) -> bool:
    return name.startswith(("_", "@", "!"))


def _is_sorted(items: list[Any]) -> bool:
    return all(a <= b for a, b in zip(items, items[1:], strict=False))


def _sum(items: list[Any]) -> Any:
    return sum(items[1:], items[0]) if items else 0


def _min(items: list[Any]) -> Any:
    if not items:
        raise ValueError("min called on empty list")
    return min(items)


def _max(items: list[Any]) -> Any:
    if not items:
        raise ValueError("max called on empty list")
    return max(items)


def _index_of(container: Any, item: Any, *offset: int) -> int:
    if isinstance(container, str):
        return stdlib.index_of(container, item, *offset)
    return next((i for i, x in enumerate(container) if x == item), -1)


def _last_index_of(container: Any, item: Any, *offset: int) -> int:
    if isinstance(container, str):
        return stdlib.last_index_of(container, item, *offset)
    return next((i for i in range(len(container) - 1, -1, -1) if container[i] == item), -1)


def _find(text: str, pattern: str) -> str:
    found = re.search(pattern, text)
    return found.group(0) if found else ""


def _find_all(text: str, pattern: str, *limit: int) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, text)]
    return found[: limit[0]] if limit and limit[0] >= 0 else found


_VERB = re.compile(r"%(?:\.(\d+))?([sdfe%])")


def _format(template: str, args: list[Any]) -> str:
    """cel-go's strings.format for the verbs %s, %d, %f, %e and %%."""
    values = iter(args)

    def one(match: re.Match[str]) -> str:
        precision, verb = match.group(1), match.group(2)
        if verb == "%":
            return "%"
        value = next(values)
        if verb == "s":
            return str(value).lower() if isinstance(value, bool) else str(value)
        if verb == "d":
            return str(int(value))
        return f"{float(value):.{int(precision or 6)}{verb}}"

    return _VERB.sub(one, template)


def _quantity(text: str) -> dict[str, str]:
    Quantity(text)  # raises on a malformed quantity, as Kubernetes' quantity() does
    return {"quantity": text}


def _is_quantity(text: str) -> bool:
    try:
        Quantity(text)
    except ValueError:
        return False
    return True


def _value(q: dict[str, str]) -> Fraction:
    return Quantity(q["quantity"]).value


def _written(value: Fraction) -> dict[str, str]:
    return {"quantity": f"{Decimal(value.numerator) / Decimal(value.denominator):f}"}


def _as_integer(q: dict[str, str]) -> int:
    value = _value(q)
    if value.denominator != 1:
        raise ValueError(f"cannot convert value to integer: {q['quantity']}")
    return int(value)


def _plus(q: dict[str, str], other: Any) -> dict[str, str]:
    return _written(_value(q) + (_value(other) if isinstance(other, dict) else other))


def _minus(q: dict[str, str], other: Any) -> dict[str, str]:
    return _written(_value(q) - (_value(other) if isinstance(other, dict) else other))


def _compare(a: dict[str, str], b: dict[str, str]) -> int:
    return (_value(a) > _value(b)) - (_value(a) < _value(b))


KUBERNETES_FUNCTIONS: dict[str, Callable[..., Any]] = {
    # lists library
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _min,
    "max": _max,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    # regex library
    "find": _find,
    "findAll": _find_all,
    # cel-go strings extension
    "charAt": stdlib.char_at,
    "lowerAscii": stdlib.lower_ascii,
    "upperAscii": stdlib.upper_ascii,
    "replace": stdlib.replace,
    "split": stdlib.split,
    "substring": stdlib.substring,
    "trim": stdlib.trim,
    "join": stdlib.join,
    "reverse": stdlib.reverse,
    "strings.quote": stdlib.quote,
    "format": _format,
    # cel-go sets extension
    "sets.contains": stdlib.sets_contains,
    "sets.equivalent": stdlib.sets_equivalent,
    "sets.intersects": stdlib.sets_intersects,
    # quantity library
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": lambda q: (_value(q) > 0) - (_value(q) < 0),
    "isInteger": lambda q: _value(q).denominator == 1,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: float(_value(q)),
    "add": _plus,
    "sub": _minus,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "compareTo": _compare,
}


def missing_functions(used: list[str]) -> list[str]:
    """The functions among `used` that neither the engine nor this library provides."""
    return [f for f in used if not _is_operator(f) and f not in NATIVE and f not in KUBERNETES_FUNCTIONS]

"""What makes the model as strict as its schema: strict numbers and flags, identifiers, lists keyed by a field.

pydantic's lax mode reads `true` as 1 and "yes" as True; a YAML list that Kubernetes reads as a map
(queues by name, a queue's flavors) must not repeat a key; and a name that leaves the fleet (a group
id, a VM size) must not hide a control or line-break character.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Strict, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

from fleetgen.model.types import as_text

_NOT_IN_IDENTIFIERS = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # control, format, surrogate, line and paragraph separators


def _check_identifier(value: str) -> str:
    bad = next((ch for ch in value if unicodedata.category(ch) in _NOT_IN_IDENTIFIERS), None)
    if bad is not None:
        raise ValueError(f"must not hold control or line-break characters (U+{ord(bad):04X} at character {value.index(bad) + 1})")
    if not value.strip():
        raise ValueError("must not be empty")
    if value != value.strip():
        raise ValueError(f"must not start or end with a space, got {value!r}")
    return value


# A boolean is never a number in a typed fleet (pydantic's lax mode reads `true` as 1): counts, sizes and flags are strict.
Int = Annotated[int, Strict()]
Float = Annotated[float, Strict()]  # an integer is still a number: `threshold: 80`
Bool = Annotated[bool, Strict()]  # only true and false: not 1, "yes" or "on"

# Names of things outside the fleet (groups, VM sizes, URLs, branches): one visible line, no control characters.
Identifier = Annotated[str, BeforeValidator(as_text), AfterValidator(_check_identifier)]


def unique_by(field: str | None = None) -> AfterValidator:
    """A list whose items differ (by their `field` when given): Kubernetes reads such lists as maps keyed by it.

    Each repeat is an error at the repeat itself, `loc` (index[, field]), so the loader points at its line;
    `first` in the error's context is the index of the item it repeats.
    """
    alias = to_camel(field) if field else None

    def check(items: Any) -> Any:
        seen: dict[Any, int] = {}
        errors: list[InitErrorDetails] = []
        for index, item in enumerate(items or ()):
            key = getattr(item, field) if field else item
            if key not in seen:
                seen[key] = index
                continue
            what = f"{alias} " if alias else "entry "
            error = PydanticCustomError(
                "duplicate_item", "duplicate {what}{shown}", {"what": what, "shown": repr(str(key)), "first": seen[key]}
            )
            errors.append(InitErrorDetails(type=error, loc=(index, alias) if alias else (index,), input=key))
        if errors:
            raise ValidationError.from_exception_data("duplicates", errors)
        return items

    return AfterValidator(check)

"""What makes the model as strict as its schema: strict numbers and flags, identifiers, lists keyed by a field.

pydantic's lax mode reads `true` as 1 and "yes" as True; a YAML list that Kubernetes reads as a map
(queues by name, a queue's flavors) must not repeat a key; and a name that leaves the fleet (a group
id, a VM size) must not hide a control or line-break character.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any

from pydantic import GetJsonSchemaHandler, Strict, ValidationError, WithJsonSchema
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from fleetgen.model.types import as_text
from fleetgen.model.value_checks import After, Before

_NOT_IN_IDENTIFIERS = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # control, format, surrogate, line and paragraph separators


def _check_identifier(value: str) -> str:
    bad = next((ch for ch in value if unicodedata.category(ch) in _NOT_IN_IDENTIFIERS), None)
    if bad is not None:
        # fix: Remove the control or line-break character
        raise ValueError(f"must not hold control or line-break characters (U+{ord(bad):04X} at character {value.index(bad) + 1})")
    if not value.strip():
        # fix: Write a value, or leave the field out
        raise ValueError("must not be empty")
    if value != value.strip():
        # fix: Remove the leading or trailing space
        raise ValueError(f"must not start or end with a space, got {value!r}")
    return value


# A boolean is never a number in a typed fleet (pydantic's lax mode reads `true` as 1): counts, sizes and flags are strict.
Int = Annotated[int, Strict()]
Float = Annotated[float, Strict()]  # an integer is still a number: `threshold: 80`
Bool = Annotated[bool, Strict()]  # only true and false: not 1, "yes" or "on"

# The characters _check_identifier refuses in the Basic Multilingual Plane (Unicode 14: control, format, surrogate,
# line and paragraph separators), for the JSON Schema: editors cannot ask Python's unicodedata. Format characters
# beyond the BMP (and any a later Unicode adds) are refused by validate alone.
_REFUSED = (
    "\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890\\u0891\\u08e2\\u180e"
    "\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ud800-\\udfff\\ufeff\\ufff9-\\ufffb"
)
_IDENTIFIER_SCHEMA = {"type": "string", "pattern": f"^[^\\s{_REFUSED}]([^{_REFUSED}]*[^\\s{_REFUSED}])?$"}

# Names of things outside the fleet (groups, VM sizes, branches): one visible line, no control characters; a number
# stands for its text (a numeric group id).
Identifier = Annotated[
    str,
    Before(as_text),
    After(_check_identifier),
    WithJsonSchema({"anyOf": [_IDENTIFIER_SCHEMA, {"type": "number"}]}),
]


class _Unique(After):
    """unique_by's validator; a list of plain items also says `uniqueItems` in the JSON Schema (items keyed by a
    field cannot: JSON Schema compares whole items)."""

    keyed: bool = False

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        json_schema = handler(schema)
        if not self.keyed:
            handler.resolve_ref_schema(json_schema)["uniqueItems"] = True
        return json_schema


def unique_by(field: str | None = None) -> After:
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

    validator = _Unique(check)
    object.__setattr__(validator, "keyed", field is not None)
    return validator

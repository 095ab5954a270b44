"""The model's value checks: pydantic's after- and before-validators for a function of the value alone.

pydantic's own AfterValidator and BeforeValidator decide whether a function takes a ValidationInfo by inspecting its
signature, again on every field whose type carries the validator (DnsLabel, Identifier, Line, Token...): some 320
inspections each time the model is built. These functions never take one, so After and Before make the same core schema
without asking.
"""

from typing import Any, cast

from pydantic import AfterValidator, BeforeValidator, GetCoreSchemaHandler
from pydantic_core import core_schema


class After(AfterValidator):
    """pydantic's AfterValidator for a function of the value alone, made without inspecting its signature."""

    __slots__ = ()

    def __get_pydantic_core_schema__(self, source_type: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(cast(core_schema.NoInfoValidatorFunction, self.func), handler(source_type))


class Before(BeforeValidator):
    """pydantic's BeforeValidator for a function of the value alone, made without inspecting its signature (After)."""

    __slots__ = ()

    def __get_pydantic_core_schema__(self, source_type: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_before_validator_function(cast(core_schema.NoInfoValidatorFunction, self.func), handler(source_type))

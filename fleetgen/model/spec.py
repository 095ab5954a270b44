"""The base of every fleet.yaml model: frozen, camelCase in YAML, unknown fields rejected."""

from collections.abc import Mapping
from functools import cache, cached_property
from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, validate_by_name=True, validate_by_alias=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        # pydantic copies the instance's __dict__, where cached_property keeps its values: a copy with other
        # fields (a fleet with other clusters, a team with other placements) would answer with the original's.
        # A copy with changes works its own out again; a plain copy keeps them, as they still hold.
        copied = super().model_copy(update=update, deep=deep)
        if update:
            for name in _cached_names(type(self)):
                copied.__dict__.pop(name, None)
        return copied


@cache  # a copy with changes is made on render's path (platform_of, once a cluster): look the names up once a model
def _cached_names(model: type) -> tuple[str, ...]:
    return tuple(name for klass in model.__mro__ for name, value in vars(klass).items() if isinstance(value, cached_property))

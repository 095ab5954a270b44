"""fleet.yaml's `compatibility` section: where a fleet keeps compatibility facts of its own."""

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class Compatibility(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    facts_file: str | None = Field(default=None, min_length=1, pattern=r"^[^\s].*\.ya?ml$")
    """A YAML file of extra compatibility facts, relative to fleet.yaml's folder, in the format of fleetgen's own
    facts (each row with its source and URL): its rows add to the shipped ones or replace the shipped row for the
    same version, and validate warns about each replacement. Teaches fleetgen a new driver or GPU without a release."""

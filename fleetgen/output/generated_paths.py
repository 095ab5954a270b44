"""Where fleetgen writes the files a fleet repository keeps beside fleet.yaml, generated from the model.

Kept apart from the code that generates them, so the command line can name them as defaults without
building the model first."""

SCHEMA_PATH = "schemas/fleet.schema.json"  # the JSON Schema of fleet.yaml (`fleetgen schema`)
REFERENCE_PATH = "docs/fleet-yaml.md"  # the fleet.yaml reference (`fleetgen docs`)

"""Commands that write fleet.yaml or a new fleet repository: team add and remove, init."""

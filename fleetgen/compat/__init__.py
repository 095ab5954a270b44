"""Compatibility rules, kept as data (facts.yaml) with the code that applies them (rules.py)."""

from fleetgen.compat.facts import Facts, facts
from fleetgen.compat.rules import (
    Problem,
    check_compatibility,
    check_fleet_policy,
    removed_api,
    version_set_problems,
)

__all__ = [
    "Facts",
    "Problem",
    "check_compatibility",
    "check_fleet_policy",
    "facts",
    "removed_api",
    "version_set_problems",
]

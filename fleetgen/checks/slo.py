"""Checks of the teams' inference endpoints: a known SLO tier, and served only where the team is placed.

Each yields findings by fleet.yaml path, like fleetgen.checks.fleet (which runs them). Repeated endpoint
names are refused by the model itself (unique_by), at the repeat.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleetgen.errors import Finding
from fleetgen.model import Fleet


def check_endpoints(fleet: Fleet) -> Iterator[Finding]:
    tiers = fleet.slo.all_tiers
    for t, team in enumerate(fleet.teams):
        for e, endpoint in enumerate(team.endpoints):
            here = ("teams", t, "endpoints", e)
            if endpoint.tier not in tiers:
                # fix: Name a tier from slo.tiers
                yield Finding(here + ("tier",), f"unknown SLO tier {endpoint.tier!r} (known: {', '.join(sorted(tiers))})")
            for c, cluster in enumerate(endpoint.clusters):
                if cluster not in team.clusters:
                    placed = ", ".join(team.clusters) or "none"
                    # fix: Name a cluster the endpoint's team is placed on
                    yield Finding(here + ("clusters", c), f"{team.name} is not on cluster {cluster!r} (it is on: {placed})")


SLO_CHECKS = (check_endpoints,)

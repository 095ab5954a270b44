"""Checks of what teams may do: the priority classes `tenancy` names are the fleet's, and Service types that
the team's quota can admit (a LoadBalancer Service takes node ports, which quota counts as NodePort's).

Each finding is by fleet.yaml path, like fleetgen.checks.fleet (which runs them).
"""

from __future__ import annotations

from collections.abc import Iterator

from fleetgen.errors import FieldPath, Finding
from fleetgen.model import Fleet
from fleetgen.model.tenancy import ServiceType


def check_tenancy(fleet: Fleet) -> Iterator[Finding]:
    classes = {p.name for p in fleet.priority_classes}
    for p, name in enumerate(fleet.tenancy.priority_classes or ()):
        if name not in classes:
            known = ", ".join(sorted(classes)) or "none defined"
            yield Finding(("tenancy", "priorityClasses", p), f"unknown priority class {name!r} (known: {known})")
    yield from _service_types(fleet.tenancy.service_types, ("tenancy", "serviceTypes"))
    for t, team in enumerate(fleet.teams):
        if team.tenancy.service_types is not None:
            yield from _service_types(team.tenancy.service_types, ("teams", t, "tenancy", "serviceTypes"))


def _service_types(types: tuple[ServiceType, ...], at: FieldPath) -> Iterator[Finding]:
    if "LoadBalancer" in types and "NodePort" not in types:
        yield Finding(
            at + (types.index("LoadBalancer"),),
            "a LoadBalancer Service takes a node port for each of its ports, which ResourceQuota counts as "
            "services.nodeports: allow NodePort too, or the quota refuses every LoadBalancer Service",
        )


TENANCY_CHECKS = (check_tenancy,)

"""What a team may do in its namespaces: Pod Security level, Service types, priority classes.

`tenancy` in fleet.yaml holds the fleet's defaults, a team's `tenancy` what differs for it. The
defaults isolate: pods run under the `restricted` Pod Security Standard, no LoadBalancer or
NodePort Service, only the priority classes that take GPUs from nobody.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol

from fleetgen.model.spec import Spec
from fleetgen.model.strict import unique_by
from fleetgen.model.types import DnsSubdomain


class PriorityClassLike(Protocol):
    """What the default set is chosen by (fleetgen.model.fleet.PriorityClass)."""

    @property
    def name(self) -> str: ...
    @property
    def global_default(self) -> bool: ...
    @property
    def preemption_policy(self) -> str: ...


PodSecurityLevel = Literal["privileged", "baseline", "restricted"]
PSA_ORDER: tuple[PodSecurityLevel, ...] = ("restricted", "baseline", "privileged")  # tightest first
ServiceType = Literal["LoadBalancer", "NodePort"]
SERVICE_QUOTA: dict[str, str] = {"LoadBalancer": "services.loadbalancers", "NodePort": "services.nodeports"}


class Tenancy(Spec):
    """The fleet's defaults for every team; a team's own `tenancy` changes them for that team."""

    pod_security: PodSecurityLevel = "restricted"
    """Pod Security Standard enforced on team namespaces (pod-security.kubernetes.io/enforce): restricted, baseline or privileged."""
    service_types: Annotated[tuple[ServiceType, ...], unique_by()] = ()
    """Service types besides ClusterIP a team may create; the others are held at zero by its ResourceQuota."""
    priority_classes: Annotated[tuple[DnsSubdomain, ...], unique_by()] | None = None
    """Priority classes of a team that lists none; left out: the global default and the classes that preempt nobody."""


class TeamTenancy(Spec):
    """What differs for one team from the fleet's `tenancy`; say why in a comment."""

    pod_security: PodSecurityLevel | None = None
    """Pod Security Standard enforced on the team's namespaces; the fleet's when left out."""
    service_types: Annotated[tuple[ServiceType, ...], unique_by()] | None = None
    """Service types besides ClusterIP the team may create; the fleet's when left out."""


@dataclass(frozen=True)
class Access:
    """What one team may do, the fleet's defaults and the team's own values taken together."""

    pod_security: PodSecurityLevel
    service_types: tuple[str, ...]
    priority_classes: tuple[str, ...]  # in the fleet's order

    @property
    def barred_services(self) -> dict[str, str]:
        """ResourceQuota `hard` entries that hold the Service types the team may not create at zero."""
        return {key: "0" for kind, key in SERVICE_QUOTA.items() if kind not in self.service_types}


def default_classes(tenancy: Tenancy, classes: Sequence[PriorityClassLike]) -> tuple[str, ...]:
    """The priority classes of a team that lists none: the fleet's `tenancy.priorityClasses`, else the global
    default (what a pod naming no class gets anyway) and every class that preempts nobody."""
    if tenancy.priority_classes is not None:
        return tuple(p.name for p in classes if p.name in tenancy.priority_classes)
    return tuple(p.name for p in classes if p.global_default or p.preemption_policy == "Never")


def default_access(tenancy: Tenancy, classes: Sequence[PriorityClassLike]) -> Access:
    """What a team that sets nothing of its own may do."""
    return Access(tenancy.pod_security, tenancy.service_types, default_classes(tenancy, classes))


def access_of(tenancy: Tenancy, classes: Sequence[PriorityClassLike], listed: tuple[str, ...] | None, own: TeamTenancy) -> Access:
    """A team's access from the fleet's `tenancy`, the fleet's classes, the classes the team lists and its own `tenancy`."""
    allowed = tuple(p.name for p in classes if p.name in listed) if listed is not None else default_classes(tenancy, classes)
    return Access(
        pod_security=own.pod_security or tenancy.pod_security,
        service_types=own.service_types if own.service_types is not None else tenancy.service_types,
        priority_classes=allowed,
    )

"""What a team may do in its namespaces: Pod Security level, Service types, priority classes, Role, LimitRange.

`tenancy` in fleet.yaml holds the fleet's defaults, a team's `tenancy` what differs for it. The
defaults isolate: pods run under the `restricted` Pod Security Standard, no LoadBalancer or
NodePort Service, only the priority classes that take GPUs from nobody, a Role to work with (not
to administer), and a LimitRange so that pods without limits are admitted by the quota.
"""

from collections.abc import Sequence
from typing import Annotated, Any, Literal, NamedTuple, Protocol

from pydantic import Field

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, unique_by
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


# The verbs a team Role may grant: not `escalate`, `bind` or `impersonate`, which reach beyond the Role itself.
Verb = Literal["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
ApiGroup = Annotated[str, Field(pattern=r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", max_length=253)]
Resource = Annotated[str, Field(pattern=r"^[a-z][a-z0-9]*(/[a-z]+)?$", max_length=253)]

WORK = ("get", "list", "watch", "create", "update", "patch", "delete")
READ = ("get", "list", "watch")


class RoleRule(Spec):
    """One rule of a team's Role (a Kubernetes PolicyRule without wildcards)."""

    api_groups: Annotated[tuple[ApiGroup, ...], unique_by()] = Field(min_length=1)
    """API groups ("" is the core group)."""
    resources: Annotated[tuple[Resource, ...], unique_by()] = Field(min_length=1)
    """Resources, with a subresource after '/' (pods/log)."""
    verbs: Annotated[tuple[Verb, ...], unique_by()] = Field(min_length=1)
    """What the team may do to them."""

    def body(self) -> dict[str, Any]:
        return {"apiGroups": list(self.api_groups), "resources": list(self.resources), "verbs": list(self.verbs)}


# The seed's Role made workable: the seed's workloads with the verbs of daily work (watch a rollout,
# patch a Deployment), their logs and events, and the Kueue workloads that say why a job waits.
DEFAULT_ROLE: tuple[RoleRule, ...] = (
    RoleRule(api_groups=("",), resources=("pods", "services", "configmaps", "persistentvolumeclaims"), verbs=WORK),
    RoleRule(api_groups=("",), resources=("pods/log",), verbs=("get",)),
    RoleRule(api_groups=("",), resources=("events",), verbs=READ),
    RoleRule(api_groups=("batch",), resources=("jobs",), verbs=WORK),
    RoleRule(api_groups=("apps",), resources=("deployments",), verbs=WORK),
    RoleRule(api_groups=("kueue.x-k8s.io",), resources=("workloads", "localqueues"), verbs=READ),
)
POD_EXEC = RoleRule(api_groups=("",), resources=("pods/exec",), verbs=("get", "create"))


class Tenancy(Spec):
    """The fleet's defaults for every team; a team's own `tenancy` changes them for that team."""

    pod_security: PodSecurityLevel = "restricted"
    """Pod Security Standard enforced on team namespaces (pod-security.kubernetes.io/enforce): restricted, baseline or privileged."""
    service_types: Annotated[tuple[ServiceType, ...], unique_by()] = ()
    """Service types besides ClusterIP a team may create; the others are held at zero by its ResourceQuota."""
    priority_classes: Annotated[tuple[DnsSubdomain, ...], unique_by()] | None = None
    """Priority classes of a team that lists none; left out: the global default and the classes that preempt nobody."""
    role: tuple[RoleRule, ...] = DEFAULT_ROLE
    """The rules of every team's Role (docs/reference/tenancy.md lists the default)."""
    limit_range: Bool = True
    """A LimitRange in each team namespace whose container defaults are the team's quota shared by its pods."""


class TeamTenancy(Spec):
    """What differs for one team from the fleet's `tenancy`; say why in a comment."""

    pod_security: PodSecurityLevel | None = None
    """Pod Security Standard enforced on the team's namespaces; the fleet's when left out."""
    service_types: Annotated[tuple[ServiceType, ...], unique_by()] | None = None
    """Service types besides ClusterIP the team may create; the fleet's when left out."""
    pod_exec: Bool = False
    """Let the team's group exec into its pods (pods/exec)."""
    role: tuple[RoleRule, ...] = ()
    """Rules added to the fleet's Role for this team."""
    limit_range: Bool | None = None
    """Whether the team's namespaces get the LimitRange; the fleet's choice when left out."""


class Access(NamedTuple):
    """What one team may do, the fleet's defaults and the team's own values taken together."""

    pod_security: PodSecurityLevel
    service_types: tuple[str, ...]
    priority_classes: tuple[str, ...]  # in the fleet's order
    role: tuple[RoleRule, ...] = DEFAULT_ROLE
    limit_range: bool = True

    @property
    def barred_services(self) -> dict[str, str]:
        """ResourceQuota `hard` entries that hold the Service types the team may not create at zero."""
        return {key: "0" for kind, key in SERVICE_QUOTA.items() if kind not in self.service_types}

    def grants(self) -> set[tuple[str, str, str]]:
        """(API group, resource, verb) of every permission the team's Role gives."""
        return {(g, r, v) for rule in self.role for g in rule.api_groups for r in rule.resources for v in rule.verbs}


def default_classes(tenancy: Tenancy, classes: Sequence[PriorityClassLike]) -> tuple[str, ...]:
    """The priority classes of a team that lists none: the fleet's `tenancy.priorityClasses`, else the global
    default (what a pod naming no class gets anyway) and every class that preempts nobody."""
    if tenancy.priority_classes is not None:
        return tuple(p.name for p in classes if p.name in tenancy.priority_classes)
    return tuple(p.name for p in classes if p.global_default or p.preemption_policy == "Never")


def default_access(tenancy: Tenancy, classes: Sequence[PriorityClassLike]) -> Access:
    """What a team that sets nothing of its own may do."""
    return Access(tenancy.pod_security, tenancy.service_types, default_classes(tenancy, classes), tenancy.role, tenancy.limit_range)


def access_of(tenancy: Tenancy, classes: Sequence[PriorityClassLike], listed: tuple[str, ...] | None, own: TeamTenancy) -> Access:
    """A team's access from the fleet's `tenancy`, the fleet's classes, the classes the team lists and its own `tenancy`."""
    allowed = tuple(p.name for p in classes if p.name in listed) if listed is not None else default_classes(tenancy, classes)
    return Access(
        pod_security=own.pod_security or tenancy.pod_security,
        service_types=own.service_types if own.service_types is not None else tenancy.service_types,
        priority_classes=allowed,
        role=tenancy.role + ((POD_EXEC,) if own.pod_exec else ()) + own.role,
        limit_range=own.limit_range if own.limit_range is not None else tenancy.limit_range,
    )

"""Checks of what teams may do: the priority classes `tenancy` names are the fleet's, Service types that
the team's quota can admit (a LoadBalancer Service takes node ports, which quota counts as NodePort's),
and Role rules that stay inside the team's lane.

A team's Role must not let it rewrite what fleetgen sets for it in its own namespace (its quotas,
LimitRange, network policy, Role and binding, LocalQueue): the engine would put them back at the
next sync, but until then the team's pods run outside their limits.

Each finding is by fleet.yaml path, like fleetgen.checks.fleet (which runs them).
"""

from __future__ import annotations

from collections.abc import Iterator

from fleetgen.errors import FieldPath, Finding
from fleetgen.model import Fleet
from fleetgen.model.tenancy import RoleRule, ServiceType

# (API group, resource) of the objects fleetgen renders into a team namespace, and the verbs that change them.
FLEETGEN_OWNS = {
    ("", "resourcequotas"): "its ResourceQuotas",
    ("", "limitranges"): "its LimitRange",
    ("networking.k8s.io", "networkpolicies"): "its NetworkPolicy",
    ("rbac.authorization.k8s.io", "roles"): "its Role",
    ("rbac.authorization.k8s.io", "rolebindings"): "its RoleBinding",
    ("kueue.x-k8s.io", "localqueues"): "its LocalQueue",
    ("", "namespaces"): "its Namespace and Pod Security labels",
}
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def _rules(rules: tuple[RoleRule, ...], at: FieldPath) -> Iterator[Finding]:
    for r, rule in enumerate(rules):
        writes = sorted(WRITES.intersection(rule.verbs))
        if not writes:
            continue
        for group in rule.api_groups:
            for resource in rule.resources:
                owned = FLEETGEN_OWNS.get((group, resource))
                if owned:
                    verbs = ", ".join(writes[:-1]) + (" or " if len(writes) > 1 else "") + writes[-1]
                    # fix: Drop that rule from the team's Role (tenancy.role or the team's own rules)
                    yield Finding(
                        at + (r, "resources", rule.resources.index(resource)),
                        f"a team's Role may not {verbs} {resource} ({group or 'core'} group): "
                        f"the team could rewrite {owned}, which fleetgen sets for it",
                    )


def check_tenancy(fleet: Fleet) -> Iterator[Finding]:
    classes = {p.name for p in fleet.priority_classes}
    for p, name in enumerate(fleet.tenancy.priority_classes or ()):
        if name not in classes:
            known = ", ".join(sorted(classes)) or "none defined"
            # fix: Name a class from priorityClasses
            yield Finding(("tenancy", "priorityClasses", p), f"unknown priority class {name!r} (known: {known})")
    yield from _service_types(fleet.tenancy.service_types, ("tenancy", "serviceTypes"))
    yield from _rules(fleet.tenancy.role, ("tenancy", "role"))
    for t, team in enumerate(fleet.teams):
        if team.tenancy.service_types is not None:
            yield from _service_types(team.tenancy.service_types, ("teams", t, "tenancy", "serviceTypes"))
        yield from _rules(team.tenancy.role, ("teams", t, "tenancy", "role"))


def _service_types(types: tuple[ServiceType, ...], at: FieldPath) -> Iterator[Finding]:
    if "LoadBalancer" in types and "NodePort" not in types:
        yield Finding(
            at + (types.index("LoadBalancer"),),
            "a LoadBalancer Service takes a node port for each of its ports, which ResourceQuota counts as "
            "services.nodeports: allow NodePort too, or the quota refuses every LoadBalancer Service",
        )


TENANCY_CHECKS = (check_tenancy,)

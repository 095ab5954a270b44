"""A team namespace's LimitRange: containers that state no requests or limits get the team's per-pod share.

A ResourceQuota on `requests.cpu` or `limits.memory` makes the API server refuse every pod that
does not state them; the LimitRange fills them in before quota admission counts them. Each default
is the team's quota on the cluster divided by its pod quota (DEFAULT_PODS when it sets none),
rounded down to a millicore or a mebibyte: a notebook started without resources gets a fair
slice, not the whole quota. A default limit is always given with its default request, which the API
server would otherwise set to the limit itself.
"""

from __future__ import annotations

from fractions import Fraction

from fleetgen.errors import FieldPath
from fleetgen.model import Fleet, Quota, Team
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, k8s_object, team_labels
from fleetgen.render.provenance import NOWHERE, Recorder

DEFAULT_PODS = 10  # the share when the quota sets no pod count
MEBI = 1024**2


def share_text(amount: Fraction, resource: str) -> str:
    """`amount` rounded down as Kubernetes writes it: 2, 1280m; 5Gi, 5242Mi (at least 1m or 1Mi)."""
    if resource == "cpu":
        milli = max(1, int(amount * 1000))
        return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
    mebi = max(1, int(amount / MEBI))
    return f"{mebi // 1024}Gi" if mebi % 1024 == 0 else f"{mebi}Mi"


def container_defaults(quota: Quota) -> tuple[dict[str, str], dict[str, str]]:
    """(default limits, default requests) of a container under `quota`."""
    pods = quota.pods or DEFAULT_PODS
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    for resource in ("cpu", "memory"):
        limit, request = getattr(quota.limits, resource), getattr(quota.requests, resource)
        if limit is None and request is None:
            continue
        limit_share = Fraction(limit.value) / pods if limit is not None else None
        request_share = Fraction(request.value) / pods if request is not None else limit_share
        assert request_share is not None
        if limit_share is not None:
            request_share = min(request_share, limit_share)
            limits[resource] = share_text(limit_share, resource)
        requests[resource] = share_text(request_share, resource)
    return limits, requests


def limit_range(fleet: Fleet, team: Team, at: FieldPath, quota: Quota, quota_at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    if not fleet.access(team).limit_range:
        return []
    limits, requests = container_defaults(quota)
    item: dict[str, object] = {"type": "Container"}
    if limits:
        item["default"] = limits
    if requests:
        item["defaultRequest"] = requests
    name = fleet.object_names(team).limit_range
    body = k8s_object("v1", "LimitRange", name, team_labels(fleet, team), namespace=team.namespace, spec={"limits": [item]})
    if why.on:
        cluster = str(quota_at[-1]) if quota_at[-2:-1] == ("clusters",) else None
        why.meta(body, prov.object_name(fleet, at, "limit_range"), prov.team_labels(at), prov.derived("team-<name>", at + ("name",)))
        why.set(body, ("spec",), prov.default("one item for containers"))
        pods = prov.quota_path(team, at, cluster, "pods")
        for field, scope, values in (("default", "limits", limits), ("defaultRequest", "requests", requests)):
            for resource in values:
                source = prov.quota_path(team, at, cluster, f"{scope}.{resource}")
                if scope == "requests" and getattr(quota.requests, resource) is None:
                    source = prov.quota_path(team, at, cluster, f"limits.{resource}")
                note = f"the team's {resource} quota shared by its pods ({DEFAULT_PODS} when it sets no pod count), rounded down"
                why.set(body, ("spec", "limits", 0, field, resource), prov.derived(note, source, pods))
    return [Manifest(body, quota_at)]

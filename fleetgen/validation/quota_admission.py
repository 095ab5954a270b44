"""ResourceQuota's object counts for Services, as the API server's quota admission counts them.

A Service adds one to `services`; a NodePort Service one to `services.nodeports` for each of its
ports; a LoadBalancer Service one to `services.loadbalancers` and, unless it sets
`allocateLoadBalancerNodePorts: false`, one to `services.nodeports` for each port too (only the ports
that name a nodePort when it does). pkg/quota/v1/evaluator/core/services.go is the reference. This
answers, offline, whether a team's rendered quotas let a Service in: what fleetgen promises when it
holds LoadBalancer and NodePort Services at zero.
"""

from __future__ import annotations

from typing import Any

from fleetgen.model import Quantity


def service_usage(service: dict[str, Any]) -> dict[str, int]:
    spec = service.get("spec") or {}
    ports = spec.get("ports") or []
    usage = {"services": 1, "count/services": 1, "services.loadbalancers": 0, "services.nodeports": 0}
    kind = spec.get("type", "ClusterIP")
    if kind == "NodePort":
        usage["services.nodeports"] = len(ports)
    elif kind == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is False:
            usage["services.nodeports"] = sum(1 for p in ports if p.get("nodePort"))
        else:
            usage["services.nodeports"] = len(ports)
        usage["services.loadbalancers"] = 1
    return usage


def quota_refusals(quotas: list[dict[str, Any]], service: dict[str, Any], used: dict[str, int] | None = None) -> list[str]:
    """The server's refusal of `service` by each quota of its namespace that it would exceed (none: admitted).

    `used` is what the namespace already holds (nothing when left out). Scoped quotas do not count Services."""
    usage, already = service_usage(service), used or {}
    out = []
    for quota in quotas:
        spec = quota.get("spec") or {}
        if spec.get("scopes") or spec.get("scopeSelector"):
            continue
        hard = spec.get("hard") or {}
        over = [
            key for key, amount in usage.items() if amount and key in hard and already.get(key, 0) + amount > Quantity(str(hard[key])).value
        ]
        if over:
            requested = ",".join(f"{k}={usage[k]}" for k in over)
            held = ",".join(f"{k}={already.get(k, 0)}" for k in over)
            limited = ",".join(f"{k}={hard[k]}" for k in over)
            name = (quota.get("metadata") or {}).get("name")
            out.append(f"exceeded quota: {name}, requested: {requested}, used: {held}, limited: {limited}")
    return out

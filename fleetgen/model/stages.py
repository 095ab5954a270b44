"""The order in which changes reach clusters: dev, staging, one production canary, then the rest.

Both the upgrade planner (upgrade/plan.py) and Argo CD's progressive sync (render/argocd_apps.py)
follow it, so it lives below both: a pure function of the fleet.
"""

from __future__ import annotations

from fleetgen.model.cluster import Cluster
from fleetgen.model.fleet import Fleet


def rollout_stages(fleet: Fleet) -> list[tuple[str, list[str]]]:
    """The waves any step of an upgrade takes over the whole fleet: dev, staging, one production
    canary whose DR partner stays behind, then the rest (Argo CD's rollout labels and steps follow them)."""
    return stages_of(fleet, list(fleet.clusters), fleet.rollout.max_wave_size)


def production_canary(fleet: Fleet, production: list[Cluster]) -> Cluster:
    """The production cluster that moves first: `rollout.productionCanary`, else one outside any DR pair, else the
    DR partner listed second, so that a pair's primary is never the canary while another production cluster exists."""
    named = next((c for c in production if c.name == fleet.rollout.production_canary), None)
    if named is not None:
        return named
    order = [c.name for c in fleet.clusters]
    alone = next((c for c in production if not c.dr_partner), None)
    second = next((c for c in production if c.dr_partner in order and order.index(c.dr_partner) < order.index(c.name)), None)
    return alone or second or production[0]


def stages_of(fleet: Fleet, clusters: list[Cluster], cap: int) -> list[tuple[str, list[str]]]:
    """`clusters` in waves of at most `cap` production clusters: dev, staging, the production canary, then the
    rest of production, a DR pair's halves never in one wave."""
    out: list[tuple[str, list[str]]] = []
    for environment in ("dev", "staging"):
        names = [c.name for c in clusters if c.environment == environment]
        if names:
            out.append((f"canary ({environment})", names))
    production = [c for c in clusters if c.environment == "production"]
    if not production:
        return out
    partner = {c.name: c.dr_partner for c in production}
    canary = production_canary(fleet, production)  # its DR partner stays behind
    out.append(("production canary", [canary.name]))
    bins: list[list[str]] = []
    for cluster in production:
        if cluster is canary:
            continue
        home = next((b for b in bins if len(b) < cap and partner[cluster.name] not in b), None)
        if home is None:
            bins.append([cluster.name])
        else:
            home.append(cluster.name)
    out += [("production", b) for b in bins]
    return out

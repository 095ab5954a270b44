"""What a change to fleet.yaml means, in fleet.yaml's own terms.

"team nlp: nvidia.com/gpu quota on training-eastus 8 -> 12", "cluster dev-eastus: driver
550.90.07 -> 560.35.03", "team robotics added on 2 clusters". The approval gate classifies these.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from fleetgen.model import COMPONENTS, Cluster, Fleet, Queue, Quota, Team
from fleetgen.model.partitioning import slice_resource
from fleetgen.model.platform import ADD_ONS
from fleetgen.model.sharing import FlavorResources
from fleetgen.render.platform import add_ons
from fleetgen.review.capacity_changes import (
    cluster_capacity,
    facts_changes,
    pool_changes,
    pricing_changes,
    quota_gpus,
    raised_gpus,
    show_gpus,
    slice_quota_changes,
)
from fleetgen.review.change import Change as Change  # re-exported: the gate and the outputs import it from here
from fleetgen.review.change import ChangeKind as ChangeKind
from fleetgen.review.field_changes import cluster_field_changes, fleet_field_changes, team_field_changes
from fleetgen.review.pool_driver_changes import pool_drivers

ADD_ON_TITLES = {
    "prometheusOperatorCrds": "Prometheus Operator CRDs",
    "externalSecrets": "External Secrets Operator",
    "kueue": "Kueue",
    "gpuOperator": "GPU Operator",
    "volcano": "Volcano",
    "jupyterhub": "JupyterHub",
}
QUOTA_FIELDS = (
    ("requests", "gpu", "nvidia.com/gpu quota"),
    ("requests", "cpu", "cpu request quota"),
    ("requests", "memory", "memory request quota"),
    ("limits", "gpu", "nvidia.com/gpu limit"),
    ("limits", "cpu", "cpu limit quota"),
    ("limits", "memory", "memory limit quota"),
)


def fleet_changes(base: Fleet, head: Fleet, facts: tuple[bytes | None, bytes | None] = (None, None)) -> list[Change]:
    """Every change from `base` to `head`; `facts`: the bytes of each side's facts file, when it names one."""
    return [
        *_fleet_settings(base, head),
        *facts_changes(base, head, facts),
        *pricing_changes(base, head),
        *_priority_classes(base, head),
        *_clusters(base, head),
        *_teams(base, head),
        *_overrides(base, head),
        *fleet_field_changes(base, head),
    ]


def _overrides(base: Fleet, head: Fleet) -> Iterator[Change]:
    """A wave started before the previous wave's soak ended (upgrade.waves[].overrideSoak), and why."""
    before = {(w.wave, w.override_soak) for w in base.upgrade.waves} if base.upgrade else set()
    for wave in head.upgrade.waves if head.upgrade else ():
        if wave.override_soak and (wave.wave, wave.override_soak) not in before:
            text = f"upgrade wave {wave.wave}: soak of wave {wave.wave - 1} cut short (overrideSoak: {wave.override_soak})"
            yield Change("upgrade", text, field="overrideSoak", new=wave.override_soak)


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value) or "none"
    return "none" if value is None else str(value)


def _attribute_changes(kind: ChangeKind, subject: str, old: Any, new: Any, attrs: Any = None, **context: Any) -> Iterator[Change]:
    """One change per attribute that differs: "<subject> <attr> <old> -> <new>" (subject "" for a bare field path)."""
    for attr in attrs if attrs is not None else type(new).model_fields:
        x, y = getattr(old, attr), getattr(new, attr)
        if x != y:
            spelled = type(new).model_fields[attr].alias or attr  # as fleet.yaml writes it: maxNodes
            text = f"{subject} {spelled} {_show(x)} -> {_show(y)}" if subject else f"{spelled}: {_show(x)} -> {_show(y)}"
            yield Change(kind, text, **{"field": spelled, **context}, old=_show(x), new=_show(y))


def _fleet_settings(base: Fleet, head: Fleet) -> Iterator[Change]:
    for section in ("metadata", "gitops"):  # capacity and the platform owners are policy (policy_changes.py)
        old, new = getattr(base, section), getattr(head, section)
        attrs = [a for a in type(new).model_fields if a != "platform_owners"]
        for change in _attribute_changes("fleet", "", old, new, attrs):
            text = f"{section}.{change.text}"
            yield Change(change.kind, text, field=f"{section}.{change.field}", old=change.old, new=change.new)


def _priority_classes(base: Fleet, head: Fleet) -> Iterator[Change]:
    old = {p.name: p for p in base.priority_classes}
    new = {p.name: p for p in head.priority_classes}
    for name in old.keys() - new.keys():
        yield Change("priority-class", f"priority class {name} removed", field=name)
    for name in [n for n in new if n not in old]:
        yield Change("priority-class", f"priority class {name} added (value {new[name].value})", field=name)
    for name in [n for n in new if n in old and old[n] != new[n]]:
        yield from _attribute_changes("priority-class", f"priority class {name}:", old[name], new[name], field=name)


def _clusters(base: Fleet, head: Fleet) -> Iterator[Change]:
    old = {c.name: c for c in base.clusters}
    new = {c.name: c for c in head.clusters}
    for name in [c.name for c in base.clusters if c.name not in new]:
        cluster = old[name]
        yield Change(
            "cluster-removed",
            f"cluster {name} removed ({cluster.environment})",
            cluster=name,
            production=cluster.environment == "production",
        )
    for name in [c.name for c in head.clusters if c.name not in old]:
        cluster = new[name]
        gpus, cost = cluster_capacity(base, cluster)  # at the base's prices, as every capacity change
        yield Change(
            "cluster-added",
            f"cluster {name} added ({cluster.environment}, {cluster.region}, {gpus} GPUs)",
            cluster=name,
            production=cluster.environment == "production",
            added_gpus=gpus,
            added_cost=cost,
        )
    for name in [c.name for c in head.clusters if c.name in old]:
        yield from _cluster(base, old[name], head, new[name])


def _cluster(base: Fleet, a: Cluster, head: Fleet, b: Cluster) -> Iterator[Change]:
    production = a.environment == "production" or b.environment == "production"
    attrs = ("region", "environment", "purpose", "dr_partner")
    yield from _attribute_changes("cluster", f"cluster {b.name}:", a, b, attrs, cluster=b.name, production=production)
    versions = (base.version_sets[a.version_set], head.version_sets[b.version_set])
    yield from _attribute_changes("versions", f"cluster {b.name}:", *versions, COMPONENTS, cluster=b.name, production=production)
    yield from _add_on_releases(base, a, head, b, production)
    yield from pool_drivers(base, a, head, b, production)
    yield from pool_changes(base, a, head, b, production)
    queues_a, queues_b = {q.name: q for q in a.queues}, {q.name: q for q in b.queues}
    for queue in sorted(queues_a.keys() | queues_b.keys()):
        if queues_a.get(queue) != queues_b.get(queue):
            state = "added" if queue not in queues_a else "removed" if queue not in queues_b else "changed"
            yield Change("queue", f"cluster {b.name}: queue {queue} {state}", cluster=b.name, field=queue, production=production)
            if state == "changed":
                yield from _sharing(head, b, queues_a[queue], queues_b[queue], production)
    yield from _volcano(a, b, production)
    yield from cluster_field_changes(a, b, production)


def _add_on_releases(base: Fleet, a: Cluster, head: Fleet, b: Cluster, production: bool) -> Iterator[Change]:
    """Each release of an add-on the cluster runs (on either side) that moves: a version change of the cluster, which
    the productionVersions rule gates as it does the driver. The GPU Operator's moves with the version set's driver."""
    old, new = base.platform_of(a), head.platform_of(b)
    moved = [(name, getattr(old, attr).version, getattr(new, attr).version) for name, attr in ADD_ONS]
    moved = [(name, was, now) for name, was, now in moved if was != now]
    if not moved:
        return  # the common case, on every cluster of every diff: no need to work out what the cluster runs
    sides = ((base, a), (head, b))
    running = {name for fleet, cluster in sides for name, _, _ in add_ons(fleet, [c.name for c in fleet.clusters].index(cluster.name))}
    for name, was, now in moved:
        if name in running:
            text = f"cluster {b.name}: {ADD_ON_TITLES[name]} {was} -> {now}"
            yield Change("versions", text, cluster=b.name, field=name, old=was, new=now, production=production)


def _sharing(fleet: Fleet, cluster: Cluster, a: Queue, b: Queue, production: bool) -> Iterator[Change]:
    """A queue's GPUs in the teams' words: "data-science may borrow up to 8 (was 4) A100s of a100-spot from the training cohort"."""
    pools = {p.name: p for p in cluster.node_pools}
    teams = ", ".join(t.name for t in fleet.queue_teams(cluster, b.name))
    owner = f"queue {b.name}" + (f" ({teams})" if teams else "")
    phrases = (  # field, who, what a value says, what no value says, what no value was, where
        ("nominal_quota", teams or owner, "owns", "owns all of the pool", "all of the pool", ""),
        ("borrowing_limit", teams or owner, "may borrow up to", "may borrow without limit", "no limit", f" from the {b.cohort} cohort"),
        ("lending_limit", owner, "lends at most", "lends all it owns", "no limit", f" to the {b.cohort} cohort"),
    )
    for field, who, verb, unset, was_unset, where in phrases:
        limits_a, limits_b = getattr(a, field), getattr(b, field)
        for flavor in sorted(limits_a.keys() | limits_b.keys()):
            named = {n for limits in (limits_a, limits_b) if flavor in limits for n in limits[flavor].slices}
            for unit in ("gpu", *sorted(named)):  # whole GPUs, then each slice or share the entry names
                old, new = (_amount(limits.get(flavor), unit) for limits in (limits_a, limits_b))
                if old == new:
                    continue
                model = pools[flavor].gpu_model if flavor in pools else "GPU"
                what = f"{model}s" if unit == "gpu" else f"{model} {unit}"
                now = f"{verb} {new} {what}" if new is not None else unset
                was = old if old is not None else was_unset
                yield Change(
                    "queue",
                    f"cluster {cluster.name}: {who} {now} of {flavor}{where} (was {was})",
                    cluster=cluster.name,
                    field=b.name,
                    old=_show(old),
                    new=_show(new),
                    production=production,
                )


def _amount(entry: FlavorResources | None, unit: str) -> int | None:
    """A queue entry's whole GPUs ("gpu") or one slice ("mig-1g.10gb"); None when it does not say."""
    if entry is None:
        return None
    return entry.gpu if unit == "gpu" else entry.slices.get(unit)


def _volcano(a: Cluster, b: Cluster, production: bool) -> Iterator[Change]:
    """Volcano on a cluster: chosen or dropped, its node pools, each team's weight."""
    if a.volcano == b.volcano:
        return
    subject = f"cluster {b.name}: Volcano"
    if a.volcano is None or b.volcano is None:
        state = "added as the gang scheduler" if a.volcano is None else "removed"
        yield Change("queue", f"{subject} {state}", cluster=b.name, field="volcano", production=production)
        return
    pools_a, pools_b = (v.node_pools if v.node_pools is not None else ("all",) for v in (a.volcano, b.volcano))
    if pools_a != pools_b:
        text = f"{subject} node pools {_show(pools_a)} -> {_show(pools_b)}"
        yield Change("queue", text, cluster=b.name, field="volcano", old=_show(pools_a), new=_show(pools_b), production=production)
    for team in sorted(a.volcano.weights.keys() | b.volcano.weights.keys()):
        old, new = a.volcano.weight_of(team), b.volcano.weight_of(team)
        if old != new:
            text = f"{subject} queue of team {team}: weight {old} -> {new}"
            yield Change("queue", text, cluster=b.name, team=team, field="volcano", old=str(old), new=str(new), production=production)
    if a.volcano.reclaimable != b.volcano.reclaimable:
        now = "reclaimable" if b.volcano.reclaimable else "not reclaimable"
        yield Change("queue", f"{subject} queues now {now}", cluster=b.name, field="volcano", production=production)


def _teams(base: Fleet, head: Fleet) -> Iterator[Change]:
    old = {t.name: t for t in base.teams}
    new = {t.name: t for t in head.teams}
    gone = [t for t in base.teams if t.name not in new]
    came = [t for t in head.teams if t.name not in old]
    renamed: dict[str, Team] = {}  # new name -> old team: same identity group, new name
    for team in came:
        match = next((g for g in gone if g.group == team.group and g.name not in {r.name for r in renamed.values()}), None)
        if match:
            renamed[team.name] = match
    for team in gone:
        if team not in renamed.values():
            yield Change("team-removed", f"team {team.name} removed from {_clusters_text(team.clusters)}", team=team.name)
    for team in came:
        if team.name in renamed:
            was = renamed[team.name]
            yield Change(
                "team-renamed",
                f"team {was.name} renamed to {team.name} (namespace team-{was.name} -> team-{team.name})",
                team=team.name,
                old=was.name,
                new=team.name,
            )
            yield from _team(base, was, head, team)
        else:
            gpus = max((quota_gpus(head, team, c) for c in team.clusters), default=Fraction(0))
            yield Change("team-added", f"team {team.name} added on {_clusters_text(team.clusters)}", team=team.name, gpus=gpus)
    changed = {c for c in {*base.cluster_named, *head.cluster_named} if base.cluster_named.get(c) != head.cluster_named.get(c)}
    for team in head.teams:
        if team.name in old and not _untouched(old[team.name], team, changed):
            yield from _team(base, old[team.name], head, team)


def _untouched(a: Team, b: Team, changed_clusters: set[str]) -> bool:
    """Whether `_team` has nothing to say of a team: its entry is the same on both sides, and so is every cluster it is
    placed on (all `_team` reads besides the entry: a cluster's pools, for GPU-equivalents, and its queues). A one-team
    pull request on a fleet of hundreds of teams then compares that team alone."""
    return a == b and not any(c in changed_clusters for c in b.clusters)


def _clusters_text(clusters: dict[str, Any]) -> str:
    names = list(clusters)
    return f"{len(names)} cluster{'s' if len(names) != 1 else ''} ({', '.join(names)})"


def _team(base: Fleet, a: Team, head: Fleet, b: Team) -> Iterator[Change]:
    attrs = ("group", "cost_center", "project", "allowed_ingress_namespaces")  # what the team may use: policy_changes.py
    yield from _attribute_changes("team", f"team {b.name}:", a, b, attrs, team=b.name)
    yield from team_field_changes(a, b)
    for cluster in [c for c in a.clusters if c not in b.clusters]:
        yield Change(
            "placement-removed",
            f"team {b.name} removed from {cluster}",
            team=b.name,
            cluster=cluster,
            production=_is_production(base, cluster),
        )
    for cluster in b.clusters:
        if cluster not in a.clusters:
            gpus = quota_gpus(head, b, cluster)
            requests = b.quota_on(cluster).requests
            slices = "".join(f", {slice_resource(n)} {c}" for n, c in sorted(requests.slices.items()))
            yield Change(
                "placement-added",
                f"team {b.name} added to {cluster} (nvidia.com/gpu quota {_show(requests.gpu)}{slices}; {show_gpus(gpus)} GPU-equivalents)",
                team=b.name,
                cluster=cluster,
                production=_is_production(head, cluster),
                gpus=gpus,
            )
            continue
        raised = raised_gpus(base, head, b, cluster, a)
        yield from _quota_changes(head, b, cluster, a.quota_on(cluster), b.quota_on(cluster), raised)
        queue_a, queue_b = _queue(base, a, cluster), _queue(head, b, cluster)
        if queue_a != queue_b:
            yield Change(
                "team",
                f"team {b.name}: queue on {cluster} {queue_a} -> {queue_b}",
                team=b.name,
                cluster=cluster,
                field="queue",
                old=queue_a,
                new=queue_b,
                warning=f"Kueue forbids changing a LocalQueue's clusterQueue in place: team-{b.name}-queue on {cluster} "
                "must be deleted and created again (Flux `force: true`, Argo CD `Replace=true`)",
            )


def _queue(fleet: Fleet, team: Team, cluster: str) -> str:
    found = fleet.cluster_named.get(cluster)
    if found is not None:
        return team.queue_on(found)
    placement = team.clusters.get(cluster)  # placed on a cluster the fleet does not have
    return placement.queue if placement and placement.queue else "?"


def _is_production(fleet: Fleet, cluster: str) -> bool:
    return any(c.name == cluster and c.environment == "production" for c in fleet.clusters)


def _quota_changes(fleet: Fleet, team: Team, cluster: str, old: Quota, new: Quota, raised: Fraction | None) -> Iterator[Change]:
    """Each quota that differs; GPU and slice quotas carry the GPU-equivalents they raise the team's quota to."""
    production = _is_production(fleet, cluster)
    for scope, field, label in QUOTA_FIELDS:
        x, y = getattr(getattr(old, scope), field), getattr(getattr(new, scope), field)
        if x != y:
            yield Change(
                "quota",
                f"team {team.name}: {label} on {cluster} {_show(x)} -> {_show(y)}",
                team=team.name,
                cluster=cluster,
                field=f"{scope}.{field}",
                old=_show(x),
                new=_show(y),
                production=production,
                gpus=raised if (scope, field) == ("requests", "gpu") else None,
            )
    yield from slice_quota_changes(team, cluster, old, new, raised, production)
    if old.pods != new.pods:
        yield Change(
            "quota",
            f"team {team.name}: pods quota on {cluster} {_show(old.pods)} -> {_show(new.pods)}",
            team=team.name,
            cluster=cluster,
            field="pods",
            old=_show(old.pods),
            new=_show(new.pods),
            production=production,
        )

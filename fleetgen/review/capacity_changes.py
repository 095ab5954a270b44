"""Capacity changes in fleet.yaml's terms, each with what the approval rules compare.

Slice and share quotas ("team search: nvidia.com/mig-1g.10gb quota on inference-eastus 28 -> 112 (16 GPU-equivalents)"),
node pools added, removed, resized or repartitioned (with the physical GPUs and monthly cost they add), prices,
and the fleet's own facts file. GPU-equivalents and costs come from fleetgen.checks.capacity, as the report's do.
What capacity costs is worked out at the base's prices, as the gate uses the base's rules: a pull request that cuts
a price cannot make its own growth cheap (and the price change is a change of its own, for the gate).
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import yaml
from pydantic import BaseModel

from fleetgen.checks.capacity import pool_capacity, pool_monthly_cost, requests_equivalents
from fleetgen.compat.partitioning import describe
from fleetgen.model import Cluster, Fleet, NodePool, Quota, Team
from fleetgen.model.partitioning import slice_resource
from fleetgen.review.change import Change

FACTS_FIELD = "compatibility.factsFile"


def show_gpus(value: Fraction) -> str:
    return str(int(value)) if value.denominator == 1 else f"{float(value):.2f}".rstrip("0")


def quota_gpus(fleet: Fleet, team: Team, cluster: str) -> Fraction:
    """The team's GPU, slice and share quota on `cluster` in GPU-equivalents."""
    found = fleet.cluster_named.get(cluster)
    return requests_equivalents(found, team.quota_on(cluster).requests)


def raised_gpus(base: Fleet, head: Fleet, team: Team, cluster: str, was: Team) -> Fraction | None:
    """The GPU-equivalents the team's quota on `cluster` reaches when a change raises them; None when they do not rise."""
    before, after = quota_gpus(base, was, cluster), quota_gpus(head, team, cluster)
    return after if after > before else None


def slice_quota_changes(team: Team, cluster: str, old: Quota, new: Quota, gpus: Fraction | None, production: bool) -> Iterator[Change]:
    """Each slice or share quota that differs, with the team's GPU-equivalents there when they rise."""
    a, b = old.requests.slices, new.requests.slices
    for name in sorted(a.keys() | b.keys()):
        x, y = a.get(name), b.get(name)
        if x == y:
            continue
        after = f" ({show_gpus(gpus)} GPU-equivalents in all)" if gpus is not None else ""
        yield Change(
            "quota",
            f"team {team.name}: {slice_resource(name)} quota on {cluster} {_show(x)} -> {_show(y)}{after}",
            team=team.name,
            cluster=cluster,
            field=f"requests.slices.{name}",
            old=_show(x),
            new=_show(y),
            production=production,
            gpus=gpus,
        )


def _show(value: Any) -> str:
    return "none" if value is None else str(value)


def _money(fleet: Fleet, value: float | None) -> str:
    return "cost unknown: no price for its VM size" if value is None else f"{value:+,.0f} {fleet.pricing.currency}/month"


def _added(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def cluster_capacity(fleet: Fleet, cluster: Cluster) -> tuple[int, float | None]:
    """(physical GPUs, monthly cost) of a cluster's pools at their largest; the cost None when a pool has no price
    (for the gate an unknown cost is no cost: the cost rule fires)."""
    costs = [pool_monthly_cost(fleet, p) for p in cluster.node_pools]
    gpus = sum(pool_capacity(p).gpus for p in cluster.node_pools)
    return gpus, None if None in costs else sum(c or 0.0 for c in costs)


def pool_changes(base: Fleet, a: Cluster, head: Fleet, b: Cluster, production: bool) -> Iterator[Change]:
    """Node pools added, removed, resized or repartitioned, with the physical GPUs and monthly cost each adds at the base's prices."""
    pools_a, pools_b = {p.name: p for p in a.node_pools}, {p.name: p for p in b.node_pools}
    context: dict[str, Any] = {"cluster": b.name, "production": production}
    for name in [p for p in pools_a if p not in pools_b]:
        pool = pools_a[name]
        text = f"cluster {b.name}: node pool {name} removed ({_size(pool)})"
        yield Change("node-pool", text, field=name, added_gpus=0, added_cost=0.0, **context)
    for name in [p for p in pools_b if p not in pools_a]:
        pool = pools_b[name]
        cost = pool_monthly_cost(base, pool)
        text = f"cluster {b.name}: node pool {name} added ({_size(pool)}, {_money(base, cost)})"
        yield Change("node-pool", text, field=name, added_gpus=pool_capacity(pool).gpus, added_cost=cost, **context)
    for name in [p for p in pools_b if p in pools_a and pools_a[p] != pools_b[p]]:
        old, new = pools_a[name], pools_b[name]
        subject = f"cluster {b.name}: node pool {name}"
        gained = pool_capacity(new).gpus - pool_capacity(old).gpus
        cost = _added(pool_monthly_cost(base, old), pool_monthly_cost(base, new))
        resized = any(getattr(old, attr) != getattr(new, attr) for attr in ("max_nodes", "gpus_per_node", "vm_size"))
        added_gpus, added_cost = max(0, gained), cost if resized and (cost is None or cost > 0) else 0.0
        for attr in type(new).model_fields:
            x, y = getattr(old, attr), getattr(new, attr)
            if x == y:
                continue
            spelled = type(new).model_fields[attr].alias or attr
            if attr == "partitioning":
                x, y = describe(old), describe(new)
            for field, was, now in _changed_fields(spelled, x, y):
                words = f"{subject} {field} {was} -> {now}"
                if attr in ("max_nodes", "gpus_per_node", "vm_size", "partitioning"):
                    words += f" (now {_size(new)}; {gained:+d} GPUs, {_money(base, cost)})"
                yield Change("node-pool", words, field=name, old=was, new=now, added_gpus=added_gpus, added_cost=added_cost, **context)
                added_gpus, added_cost = 0, 0.0  # the pool's growth is counted once, on its first changed field


def _changed_fields(spelled: str, x: Any, y: Any) -> Iterator[tuple[str, str, str]]:
    """(field as fleet.yaml spells it, old, new) of each leaf that differs: a nested section such as a pool's `driver`
    reads `driver.canary false -> true`, never its Python form."""
    section = type(y if isinstance(y, BaseModel) else x)
    if not isinstance(x, BaseModel | None) or not isinstance(y, BaseModel | None) or not issubclass(section, BaseModel):
        yield spelled, _words(x), _words(y)
        return
    for attr, info in section.model_fields.items():
        a, b = getattr(x, attr, None), getattr(y, attr, None)
        if a != b:
            yield from _changed_fields(f"{spelled}.{info.alias or attr}", a, b)


def _words(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _show(value)


def _size(pool: NodePool) -> str:
    """ "2 x 8 A100, MIG all-1g.10gb (7 x 1g.10gb) per GPU, mixed strategy" or "4 nodes, CPU only"."""
    if not pool.gpus_per_node:
        return f"{pool.max_nodes} nodes, CPU only"
    cut = "" if pool.partitioning.kind == "none" else f", {describe(pool)}"
    return f"{pool.max_nodes} x {pool.gpus_per_node} {pool.gpu_model}{cut}"


def pricing_changes(base: Fleet, head: Fleet) -> Iterator[Change]:
    """Prices per GPU-hour and node-hour by VM size, and the currency: what the report and the cost rule count with."""
    if base.pricing.currency != head.pricing.currency:
        text = f"pricing.currency: {base.pricing.currency} -> {head.pricing.currency}"
        yield Change("pricing", text, field="pricing.currency", old=base.pricing.currency, new=head.pricing.currency)
    for table, spelled in (("gpu_hour", "gpuHour"), ("node_hour", "nodeHour")):
        a, b = getattr(base.pricing, table), getattr(head.pricing, table)
        for vm in sorted(a.keys() | b.keys()):
            if a.get(vm) != b.get(vm):
                text = f"pricing.{spelled} {vm}: {_show(a.get(vm))} -> {_show(b.get(vm))}"
                yield Change("pricing", text, field=f"pricing.{spelled}", old=_show(a.get(vm)), new=_show(b.get(vm)))


def facts_changes(base: Fleet, head: Fleet, texts: tuple[bytes | None, bytes | None]) -> Iterator[Change]:
    """The fleet's facts file named, dropped or edited: it changes what validate and the upgrade planner accept."""
    was, now = base.compatibility.facts_file, head.compatibility.facts_file
    if was != now:
        yield Change("facts", f"{FACTS_FIELD}: {_show(was)} -> {_show(now)}", field=FACTS_FIELD, old=_show(was), new=_show(now))
    old, new = (_tables(t) for t in texts)
    if now is None or old == new:
        return
    for table in sorted(old.keys() | new.keys()):
        rows_a, rows_b = old.get(table, []), new.get(table, [])
        added = sum(1 for r in rows_b if r not in rows_a)
        removed = sum(1 for r in rows_a if r not in rows_b)
        if added or removed:
            text = f"facts file {now}: {table} {added} row(s) added or changed, {removed} removed or changed"
            yield Change("facts", text, field=FACTS_FIELD, old=str(len(rows_a)), new=str(len(rows_b)))


def _tables(text: bytes | None) -> dict[str, list[Any]]:
    """A facts file's tables; an unreadable file is one table of its raw text, so an edit to it still shows."""
    if text is None:
        return {}
    try:
        data = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return {"(unreadable)": [text.decode(errors="replace")]}
    if not isinstance(data, dict):
        return {"(unreadable)": [text.decode(errors="replace")]}
    return {str(k): v if isinstance(v, list) else [v] for k, v in data.items()}

"""How drift between a cluster's live state and its render is shown: text or JSON (versioned).

The JSON Schema of the JSON form is schemas/output/drift.schema.json.
"""

from __future__ import annotations

import json
from typing import Any

from fleetgen.compare.object_diff import ObjectChange, json_value, object_lines
from fleetgen.live.cluster_reader import NOT_SERVED_STATE
from fleetgen.live.node_checks import NodeEvidence
from fleetgen.live.state import Drift, QuotaImpact
from fleetgen.model import Quantity

Impacts = dict[str, list[QuotaImpact]]  # cluster -> impacts from its live state


def impact_text(cluster: str, impact: QuotaImpact) -> str:
    """What the quota does to the team: lowered (the cluster has more now), raised but not enough, or already short."""
    team = impact.namespace.removeprefix("team-")
    moved = _moved(impact.live, impact.hard)
    if moved == "lowered":
        change = f"{impact.resource} lowered from {impact.live} to {impact.hard}, below its current use of {impact.used}"
    elif moved == "raised":
        change = f"{impact.resource} raised from {impact.live} to {impact.hard}, still below its current use of {impact.used}"
    else:
        change = f"{impact.resource} quota of {impact.hard} is below its current use of {impact.used}"
    return f"team {team} on {cluster}: {change}; running pods stay, every new pod is rejected until use drops"


def _moved(live: str | None, hard: str) -> str | None:
    try:
        now, then = Quantity.parse(live or ""), Quantity.parse(hard)
    except ValueError:
        return None
    return "lowered" if then < now else "raised" if now < then else None


def nodes_summary(nodes: NodeEvidence) -> str:
    """`nodes: t4-spot 2, a10g-spot 2`: how many nodes each pool has."""
    return "nodes: " + ", ".join(f"{p.pool.name} {len(p.nodes)}" for p in nodes.pools)


def drift_text(cluster: str, drift: Drift) -> str:
    nodes = drift.nodes
    notes = ([f"  against {drift.against}"] if drift.against else []) + ([f"note: {drift.stale}"] if drift.stale else [])
    if not drift.found and not drift.impacts and not (nodes and (nodes.findings or nodes.late)):
        return "\n".join([f"{cluster}: no drift" + (f" ({nodes_summary(nodes)})" if nodes else ""), *notes])
    head = f"{cluster}: {len(drift.missing)} missing, {len(drift.extra)} extra, {len(drift.changed)} changed"
    head += f"; {len(drift.unread)} kind(s) not read" if drift.unread else ""
    lines = [head + (f"; {len(nodes.findings)} node finding(s)" if nodes and nodes.findings else ""), *notes]
    lines += object_lines(drift.missing + drift.extra + drift.changed)
    lines += [f"  ? {resource}: not read ({why}); its objects are not compared" for resource, why in drift.unread]
    if nodes is not None:
        lines.append(nodes_summary(nodes))
        lines += [f"  {f.severity.value}: {f.text}" for f in nodes.findings]
        lines += [f"  {late}" for late in nodes.late]
    lines += [f"warning: {impact_text(cluster, i)}" for i in drift.impacts]
    return "\n".join(lines)


def drift_json(cluster: str, drift: Drift) -> str:
    def objects(items: tuple[ObjectChange, ...]) -> list[dict[str, Any]]:
        return [
            {
                "kind": o.kind,
                "namespace": o.namespace,
                "name": o.name,
                **({"kindNotServed": True} if o.state == NOT_SERVED_STATE else {}),
                "fields": [{"path": f.path, "live": json_value(f.new), "rendered": json_value(f.old)} for f in o.fields],
            }
            for o in items
        ]

    return json.dumps(
        {
            "version": 1,
            "cluster": cluster,
            "drift": drift.found,
            "against": drift.against or None,
            "stale": drift.stale or None,
            "missing": objects(drift.missing),
            "extra": objects(drift.extra),
            "changed": objects(drift.changed),
            "nodes": None if drift.nodes is None else _nodes_json(drift.nodes),
            "unread": [{"resource": resource, "reason": why} for resource, why in drift.unread],
            "quotaImpacts": [
                {"namespace": i.namespace, "resource": i.resource, "used": i.used, "hard": i.hard, "live": i.live} for i in drift.impacts
            ],
        },
        indent=2,
    )


def _nodes_json(nodes: NodeEvidence) -> dict[str, Any]:
    return {
        "pools": [
            {"name": p.pool.name, "nodes": [n.name for n in p.nodes], "minNodes": p.pool.min_nodes, "maxNodes": p.pool.max_nodes}
            for p in nodes.pools
        ],
        "findings": [{"severity": f.severity.value, "pool": f.pool, "nodes": list(f.nodes), "message": f.message} for f in nodes.findings],
        "late": list(nodes.late),
    }

"""Upgrade plans and status as a text table, JSON (versioned) or markdown for a PR description.

Plan JSON, version 1: {"version": 1, "target": {component: version}, "implied": [str],
"soak": "48h", "eta": str|null, "warnings": [str], "nodeImage": str|null,
"driverCrdAfter": [{"wave", "clusters": [str], "gpuOperator"}],
"waves": [{"wave", "step": {component: version}, "stage", "clusters": [str], "start", "soakUntil", "nodeImage",
"pools": [{"cluster", "pool", "canary": bool, "nodes", "gpus", "queues": [str], "drain": bool, "maxParallelUpgrades",
"upToHours": int|null}]}]}
`pools` lists the GPU pools a driver wave moves on clusters whose GPU Operator manages the driver per pool; `canary`
marks a pool moved before the rest of its cluster; `upToHours` is the most its upgrade policy lets the move take (null: it
waits for running jobs without a bound).
`driverCrdAfter` names the clusters a wave moves onto a GPU Operator release with the NVIDIADriver path: each may turn
platform.gpuOperator.driverCrd on in a pull request of its own once that wave is done.
A GPU Operator release keeps its `v` (gpuOperator: v24.6.1).
"""

from __future__ import annotations

import datetime
import json

from fleetgen.upgrade.crd_switch import CrdSwitch
from fleetgen.upgrade.moments import hours, readable
from fleetgen.upgrade.operator import component_text
from fleetgen.upgrade.plan import Plan, Wave, step_label
from fleetgen.upgrade.pool_waves import PoolMove
from fleetgen.upgrade.status import LiveNodes, LiveVersions, Status


def _when(moment: datetime.datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "-"


def _target(plan: Plan) -> str:
    return ", ".join(f"{k} {component_text(k, v)}" for k, v in plan.target.items())


def _step(wave: Wave) -> str:
    return step_label(wave.step) + (f", node image {wave.node_image}" if wave.node_image else "")


def plan_text(plan: Plan) -> str:
    lines = [f"upgrade to {_target(plan)}: {len(plan.waves)} wave(s), each soaking {hours(plan.soak)}"]
    lines += [f"implied: {note}" for note in plan.implied]
    if plan.node_image:
        lines.append(
            f"node image: the clusters whose images carry the driver get it by rolling their node pools to {plan.node_image}; "
            "status checks each node's image and driver"
        )
    rows = [("wave", "step", "stage", "clusters", "earliest start", "soak until")]
    rows += [(str(w.number), _step(w), w.stage, ", ".join(w.clusters), _when(w.start), _when(w.soak_until)) for w in plan.waves]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    for wave in plan.waves:
        lines += [f"wave {wave.number} {_pool_line(wave, move)}" for move in wave.pools]
    if plan.eta:
        lines.append(f"ETA: {_when(plan.eta)} (the last wave's soak ends)")
    else:
        lines.append(f"ETA: at least {hours(plan.soak * len(plan.waves))} after the first wave (give --start for dates)")
    lines += [_switch_text(switch) for switch in plan.crd_switches]
    lines += [f"warning: {w}" for w in plan.warnings]
    return "\n".join(lines)


def _switch_text(switch: CrdSwitch) -> str:
    return (
        f"then, once wave {switch.after_wave} is done: {', '.join(switch.clusters)} may move to one NVIDIADriver per GPU pool, "
        f"GPU Operator {switch.release} having the path: a pull request of its own sets platform.gpuOperator.driverCrd true "
        "(never the one that moves the release: the old controller would remove the driver pods before the new one owns them)"
    )


def _pool_line(wave: Wave, move: PoolMove) -> str:
    return ("canary pool " if move.ref in wave.ahead else "pool ") + move.text


def _pool_json(wave: Wave, move: PoolMove) -> dict[str, object]:
    return {
        "cluster": move.cluster,
        "pool": move.pool,
        "canary": move.ref in wave.ahead,
        "nodes": move.nodes,
        "gpus": move.gpus,
        "queues": list(move.queues),
        "drain": move.drain,
        "maxParallelUpgrades": move.parallel,
        "upToHours": round(move.budget.total_seconds() / 3600) if move.budget else None,
    }


def plan_json(plan: Plan) -> str:
    return json.dumps(
        {
            "version": 1,
            "target": {k: component_text(k, v) for k, v in plan.target.items()},
            "implied": plan.implied,
            "soak": hours(plan.soak),
            "eta": plan.eta.isoformat() if plan.eta else None,
            "warnings": plan.warnings,
            "nodeImage": plan.node_image,
            "driverCrdAfter": [{"wave": s.after_wave, "clusters": list(s.clusters), "gpuOperator": s.release} for s in plan.crd_switches],
            "waves": [
                {
                    "wave": w.number,
                    "step": {c: component_text(c, v) for c, v in w.step},
                    "stage": w.stage,
                    "clusters": list(w.clusters),
                    "nodeImage": w.node_image,
                    "start": w.start.isoformat() if w.start else None,
                    "soakUntil": w.soak_until.isoformat() if w.soak_until else None,
                    "pools": [_pool_json(w, move) for move in w.pools],
                }
                for w in plan.waves
            ],
        },
        indent=2,
    )


def plan_markdown(plan: Plan) -> str:
    lines = [f"### Upgrade plan: {_target(plan)}", ""]
    lines += [f"- {note}" for note in plan.implied]
    lines += ["", "| Wave | Step | Stage | Clusters | Earliest start | Soak until |", "|---|---|---|---|---|---|"]
    lines += [
        f"| {w.number} | {_step(w)} | {w.stage} | {', '.join(w.clusters)} | {_when(w.start)} | {_when(w.soak_until)} |" for w in plan.waves
    ]
    pools = [f"- wave {w.number} {_pool_line(w, move)}" for w in plan.waves for move in w.pools]
    lines += ["", "GPU pools moved one by one (a driver per pool):", *pools] if pools else []
    lines += [
        "",
        f"Each wave soaks {hours(plan.soak)}; DR partners never share a wave." + (f" ETA: {_when(plan.eta)}." if plan.eta else ""),
    ]
    lines += [f"- {_switch_text(switch)}" for switch in plan.crd_switches]
    lines += [f"- ⚠️ {w}" for w in plan.warnings]
    return "\n".join(lines) + "\n"


def status_text(
    status: Status | None, now: datetime.datetime, live: tuple[LiveVersions, ...] = (), nodes: tuple[LiveNodes, ...] = ()
) -> str:
    lines = [_status_head(status, now)] + [_live_line(state) for state in live]
    for evidence in nodes:
        lines.append(f"nodes {evidence.cluster}: {evidence.progress.text}")
        lines += [f"  error: {problem}" for problem in evidence.problems]
        lines += [f"  {late}" for late in evidence.late]  # each says "warning: ..."
    return "\n".join(lines)


def _status_head(status: Status | None, now: datetime.datetime) -> str:
    if status is None:
        return "no upgrade recorded in fleet.yaml"
    target = ", ".join(f"{k} {component_text(k, v)}" for k, v in status.target.items())
    if status.complete:
        head = f"upgrade to {target}: complete ({status.waves_total} wave(s) applied)"
        if status.closed_at:
            head += f"; closed {_when(status.closed_at)}, interim version sets folded back"
    else:
        head = f"upgrade to {target}: wave {status.applied} of {status.waves_total} applied; wave {status.next_wave} is next"
    lines = [head]
    if status.unverified is not None:
        lines.append(
            f"wave {status.unverified} is applied; its soak starts when its nodes run its versions "
            f"(fleetgen upgrade verify --wave {status.unverified})"
        )
    elif status.soak_ends:
        if status.soaking:
            left = status.soak_ends - now
            lines.append(f"soaking: wave {status.applied} soaks until {_when(status.soak_ends)} ({readable(left)} left)")
        elif not status.complete:
            lines.append(f"soak over since {_when(status.soak_ends)}: wave {status.next_wave} may start")
    lines += [f"soak overridden: wave {o.wave} started before wave {o.wave - 1} was done and soaked: {o.reason}" for o in status.overrides]
    for cluster in status.clusters:
        state = "at target" if not cluster.behind else "behind: " + "; ".join(cluster.behind)
        lines.append(f"  {cluster.cluster} ({cluster.environment}): {state}")
    return "\n".join(lines)


def _live_line(state: LiveVersions) -> str:
    if state.missing:
        return f"live {state.cluster}: no fleet-versions ConfigMap in kube-public; the cluster has not synced fleetgen's tree"
    if not state.lags:
        return f"live {state.cluster}: runs what fleet.yaml says"
    return f"live {state.cluster}: lags fleet.yaml: " + "; ".join(state.lags)

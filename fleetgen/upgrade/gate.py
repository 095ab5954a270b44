"""The seed's promise, kept at `upgrade apply`: a wave starts only after the previous wave is done on the evidence
and has soaked, inside a maintenance window and outside every freeze.

Done means every GPU node of the previous wave's clusters reports its versions (upgrade/evidence.py), in the
dumps or contexts given now; soaked means `rollout.soak` has passed since that wave was verified
(`fleetgen upgrade verify` writes its `verifiedAt` when the nodes first showed it done): the soak is 48 hours
of the canary running the new driver, not 48 hours since a pull request merged. A wave refused here says why
and, for the soak, when it may start. An explicit override (a reason) starts it anyway and is written into the
record, where status and the pull request's change summary show it; windows and freezes have no override
(edit `rollout`).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from fleetgen.compat.gpu_operator import image_driver
from fleetgen.model import Cluster, Fleet, Upgrade, UpgradeWave
from fleetgen.upgrade.evidence import overdue, progress
from fleetgen.upgrade.moments import as_utc, hours, later, readable, when
from fleetgen.upgrade.plan import PlanRefused, earliest_start

Evidence = Mapping[str, list[dict[str, Any]]]  # cluster -> its live objects (Nodes, the fleet-versions ConfigMap)


def soak_end(fleet: Fleet, record: Upgrade, number: int) -> datetime.datetime | None:
    """When the soak of the wave before `number` ends; None for wave 1 or when that wave is not verified yet."""
    if number < 2 or number - 2 >= len(record.waves):
        return None
    verified = record.waves[number - 2].verified_at
    if verified is None:
        return None
    return later(as_utc(verified), fleet.rollout.soak, f"the end of wave {number - 1}'s soak")


def _why_closed(moment: datetime.datetime, fleet: Fleet) -> str:
    freeze = next((f for f in fleet.rollout.freezes if f.start <= moment.date() <= f.end), None)
    if freeze is not None:
        reason = f" ({freeze.reason})" if freeze.reason else ""
        return f"{when(moment)} is inside the freeze {freeze.start} to {freeze.end}{reason} (rollout.freezes)"
    return f"{when(moment)} is outside the maintenance windows (rollout.windows)"


def evidence_hint(names: list[str]) -> str:
    return ", ".join(f"--live {n}=DUMP or --context {n}=CONTEXT" for n in names) + " (kubectl get nodes,configmaps -A -o yaml)"


def not_done(fleet: Fleet, wave: UpgradeWave, evidence: Evidence, at: datetime.datetime | None = None) -> list[str]:
    """Why `wave` is not done on this evidence: clusters without evidence, and those whose nodes are not there yet."""
    clusters: dict[str, Cluster] = {c.name: c for c in fleet.clusters}
    missing = [name for name in wave.clusters if name not in evidence]
    if missing:
        return [f"no evidence for {', '.join(missing)}: give {evidence_hint(missing)}"]
    wanted = {str(k): v for k, v in wave.step.items()}
    image = fleet.upgrade.node_image if fleet.upgrade is not None and "driver" in wanted else None
    ahead: dict[str, frozenset[str]] = {}
    for ref in wave.pools:  # a wave that moves only the canary pool of a cluster is done on that pool's nodes
        name, pool = ref.split("/")
        ahead[name] = ahead.get(name, frozenset()) | {pool}
    reports = [
        progress(clusters[name], wanted, list(evidence[name]), image if image_driver(fleet, clusters[name]) else None, ahead.get(name))
        for name in wave.clusters
        if name in clusters
    ]
    waiting = [f"{p.cluster}: {p.text}" for p in reports if not p.done]
    if waiting and at is not None and wave.applied_at is not None:  # nodes the upgrade controller has left behind
        waited = as_utc(at) - as_utc(wave.applied_at)
        waiting += [
            f"{p.cluster}: {late}"
            for p in reports
            if not p.done
            for late in overdue(fleet, clusters[p.cluster], list(evidence[p.cluster]), waited)
        ]
    return waiting


def wave_gate(
    fleet: Fleet,
    record: Upgrade,
    number: int,
    at: datetime.datetime,
    override_soak: str | None = None,
    evidence: Evidence | None = None,
) -> str | None:
    """Refuse wave `number` starting at `at` before the previous wave is done and soaked on `evidence`; return the
    override reason to record, or None. The reason is returned only when it was needed."""
    at = as_utc(at)
    used = None
    if number >= 2:
        reasons = _previous_wave(fleet, record, number, at, evidence or {})
        if reasons and override_soak is None:
            raise PlanRefused(reasons)
        used = override_soak if reasons else None
    opens = earliest_start(at, fleet.rollout)
    if opens != at:
        raise PlanRefused([f"wave {number} may start at {when(opens)}: {_why_closed(at, fleet)}"])
    return used


def _previous_wave(fleet: Fleet, record: Upgrade, number: int, at: datetime.datetime, evidence: Evidence) -> list[str]:
    previous = record.waves[number - 2]
    waiting = not_done(fleet, previous, evidence)
    if waiting:
        return [f"wave {number} needs wave {number - 1} done on the nodes: {'; '.join(waiting)}; wait, or give --override-soak REASON"]
    ends = soak_end(fleet, record, number)
    if ends is None:
        return [
            f"wave {number - 1} is done on this evidence, but its soak has not started: record it with "
            f"`fleetgen upgrade verify --wave {number - 1}` (its {hours(fleet.rollout.soak)} soak starts then), "
            "or give --override-soak REASON"
        ]
    if at < ends:
        opens = earliest_start(ends, fleet.rollout)
        verified = ends - fleet.rollout.soak
        return [
            f"wave {number} may start at {when(opens)}: wave {number - 1}, verified on its nodes {when(verified)}, soaks "
            f"{hours(fleet.rollout.soak)} (rollout.soak; {readable(ends - at)} left); wait, or give --override-soak REASON"
        ]
    return []

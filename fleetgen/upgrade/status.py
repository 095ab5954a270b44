"""`fleetgen upgrade status`: where the recorded upgrade stands, read from fleet.yaml alone."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from fleetgen.model import COMPONENTS, Fleet, Version


@dataclass(frozen=True)
class ClusterState:
    cluster: str
    environment: str
    behind: tuple[str, ...]  # "driver 550.54.15 (target 560.35.03)"


@dataclass(frozen=True)
class Status:
    target: dict[str, Version]
    waves_total: int
    applied: int  # waves applied, in order
    next_wave: int | None
    soak_ends: datetime.datetime | None  # of the last applied wave
    soaking: bool
    clusters: tuple[ClusterState, ...]

    @property
    def complete(self) -> bool:
        return self.next_wave is None


def upgrade_status(fleet: Fleet, now: datetime.datetime) -> Status | None:
    record = fleet.upgrade
    if record is None:
        return None
    applied = [w for w in record.waves if w.applied_at is not None]
    last = applied[-1] if applied else None
    soak_ends = last.applied_at + fleet.rollout.soak if last and last.applied_at else None
    pending = next((w.wave for w in record.waves if w.applied_at is None), None)
    clusters = []
    for cluster in fleet.clusters:
        vs = fleet.version_sets[cluster.version_set]
        behind = tuple(
            f"{c} {getattr(vs, c)} (target {record.target[c]})"
            for c in COMPONENTS
            if c in record.target and getattr(vs, c) != record.target[c]
        )
        clusters.append(ClusterState(cluster.name, cluster.environment, behind))
    return Status(
        target=dict(record.target),
        waves_total=len(record.waves),
        applied=len(applied),
        next_wave=pending,
        soak_ends=soak_ends,
        soaking=bool(soak_ends and now < soak_ends),
        clusters=tuple(clusters),
    )

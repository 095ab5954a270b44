"""`fleetgen upgrade status`: where the recorded upgrade stands, read from fleet.yaml, and, given each cluster's
evidence (dumps or contexts), what it runs: its Nodes ("3 of 4 GPU nodes on driver 580.65.06", failed driver
upgrades, what the compatibility matrix says of what they run) and its `fleet-versions` ConfigMap (rendered by
render/kueue.py into kube-public: the versions its sync applied, which lag fleet.yaml until it syncs)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetgen.compat import Facts
from fleetgen.compat.gpu_operator import image_driver
from fleetgen.errors import InputError, Severity
from fleetgen.live.node_checks import judge_nodes
from fleetgen.live.nodes import nodes_in
from fleetgen.model import COMPONENTS, UPGRADE_COMPONENTS, Fleet, Version
from fleetgen.upgrade.evidence import IMAGE_COMPONENTS, NODE_COMPONENTS, Progress, overdue, progress, versions_configmap
from fleetgen.upgrade.moments import as_utc, later
from fleetgen.upgrade.operator import cluster_versions, component_text
from fleetgen.upgrade.plan import GPU_NODE_COMPONENTS, has_gpu_pools


@dataclass(frozen=True)
class ClusterState:
    cluster: str
    environment: str
    behind: tuple[str, ...]  # "driver 550.54.15 (target 560.35.03)"


@dataclass(frozen=True)
class Override:
    wave: int
    reason: str


@dataclass(frozen=True)
class Status:
    target: dict[str, Version]
    waves_total: int
    applied: int  # waves applied, in order
    next_wave: int | None
    soak_ends: datetime.datetime | None  # of the last applied wave, counted from when its nodes were verified
    soaking: bool
    clusters: tuple[ClusterState, ...]
    unverified: int | None = None  # the last applied wave when it is not verified on its nodes yet
    overrides: tuple[Override, ...] = ()  # waves started before the previous soak ended, and why
    closed_at: datetime.datetime | None = None  # interim version sets folded back after the last wave

    @property
    def complete(self) -> bool:
        return self.next_wave is None


@dataclass(frozen=True)
class LiveVersions:
    """What a live dump says a cluster runs, against fleet.yaml."""

    cluster: str
    lags: tuple[str, ...]  # "driver 550.54.15 live, 560.35.03 in fleet.yaml"; empty when it runs what fleet.yaml says
    missing: bool = False  # no fleet-versions ConfigMap in the dump: the cluster has not synced fleetgen's tree


def upgrade_status(fleet: Fleet, now: datetime.datetime) -> Status | None:
    record = fleet.upgrade
    if record is None:
        return None
    applied = [w for w in record.waves if w.applied_at is not None]
    last = applied[-1] if applied else None
    soak_ends = later(as_utc(last.verified_at), fleet.rollout.soak, "the end of the soak") if last and last.verified_at else None
    pending = next((w.wave for w in record.waves if w.applied_at is None), None)
    clusters = []
    for cluster in fleet.clusters:
        have, gpus = cluster_versions(fleet, cluster), has_gpu_pools(cluster)  # no GPU pools: no GPU-node step to wait for
        behind = tuple(
            f"{c} {component_text(c, have[c])} (target {component_text(c, record.target[c])})"
            for c in UPGRADE_COMPONENTS
            if c in record.target and c in have and have[c] != record.target[c] and (gpus or c not in GPU_NODE_COMPONENTS)
        )
        clusters.append(ClusterState(cluster.name, cluster.environment, behind))
    return Status(
        target={str(k): v for k, v in record.target.items()},
        waves_total=len(record.waves),
        applied=len(applied),
        next_wave=pending,
        soak_ends=soak_ends,
        soaking=bool(soak_ends and as_utc(now) < soak_ends),
        clusters=tuple(clusters),
        overrides=tuple(Override(w.wave, w.override_soak) for w in record.waves if w.override_soak),
        closed_at=as_utc(record.closed_at) if record.closed_at else None,
        unverified=last.wave if last is not None and last.verified_at is None else None,
    )


def _same(live: Any, want: Version) -> bool:
    try:
        return Version.parse(str(live)) == want
    except ValueError:
        return False


def _shown(value: Any) -> str:
    text = "missing" if value is None else str(value)
    return text if len(text) <= 40 and text.isprintable() else repr(text[:37]) + "..."


def live_versions(fleet: Fleet, live: Mapping[str, list[dict[str, Any]]]) -> tuple[LiveVersions, ...]:
    """Per cluster given (in fleet order), the components whose live version differs from fleet.yaml's."""
    clusters = {c.name: c for c in fleet.clusters}
    unknown = sorted(name for name in live if name not in clusters)
    if unknown:
        raise InputError(f"--live {_shown(unknown[0])}: no such cluster in fleet.yaml (known: {', '.join(clusters)})")
    out = []
    for cluster in [c for c in fleet.clusters if c.name in live]:
        data = versions_configmap(live[cluster.name])
        if data is None:
            out.append(LiveVersions(cluster.name, (), missing=True))
            continue
        named = data.get("cluster")
        if named is not None and named != cluster.name:
            raise InputError(f"--live {cluster.name}: the dump's fleet-versions ConfigMap is of cluster {_shown(named)}")
        want = fleet.version_sets[cluster.version_set]
        differ = [c for c in COMPONENTS if not _same(data.get(c), getattr(want, c))]
        lags = tuple(f"{c} {_shown(data.get(c))} live, {getattr(want, c)} in fleet.yaml" for c in differ)
        out.append(LiveVersions(cluster.name, lags))
    return tuple(out)


@dataclass(frozen=True)
class LiveNodes:
    """What a cluster's Nodes say: how many run the upgrade's versions (fleet.yaml's when none is recorded), and
    what else is wrong with them (pool sizes, GPUs, the compatibility matrix against what they run)."""

    cluster: str
    progress: Progress
    problems: tuple[str, ...]
    late: tuple[str, ...] = ()  # nodes left in upgrade-required past their pool's upgrade policy (warnings)


def live_nodes(
    fleet: Fleet, live: Mapping[str, list[dict[str, Any]]], data: Facts | None = None, now: datetime.datetime | None = None
) -> tuple[LiveNodes, ...]:
    """Per cluster whose evidence holds Nodes, in fleet order. With `now`, a cluster not yet done on the recorded
    upgrade's last applied driver wave that moves it names its nodes still in upgrade-required longer after that wave
    was applied than their pool's upgrade policy allows: the start `upgrade verify` counts from (the record's
    appliedAt), so both commands warn of the same nodes at the same hour."""
    out = []
    for cluster in [c for c in fleet.clusters if c.name in live]:
        objects = live[cluster.name]
        nodes = nodes_in(objects)
        if not nodes:
            continue
        record = fleet.upgrade
        evident = (*NODE_COMPONENTS, *IMAGE_COMPONENTS)
        target = {str(k): v for k, v in record.target.items() if str(k) in evident} if record is not None else {}
        wanted = target or {c: v for c, v in cluster_versions(fleet, cluster).items() if c in NODE_COMPONENTS}
        judged = judge_nodes(fleet, cluster, nodes, data)
        problems = tuple(f.text for f in judged.findings if f.severity is Severity.ERROR and f.kind not in ("version", "upgrade"))
        image = record.node_image if record is not None and "driver" in wanted and image_driver(fleet, cluster) else None
        moved = progress(cluster, wanted, objects, image)
        applied = _driver_wave_applied(fleet, cluster.name)
        waited = as_utc(now) - as_utc(applied) if now is not None and applied is not None and not moved.done else None
        late = tuple(overdue(fleet, cluster, objects, waited)) if waited is not None else ()
        out.append(LiveNodes(cluster.name, moved, problems, late))
    return tuple(out)


def _driver_wave_applied(fleet: Fleet, cluster: str) -> datetime.datetime | None:
    """When the recorded upgrade's last applied wave that moves `cluster`'s driver was applied; None without one."""
    record = fleet.upgrade
    waves = [w for w in record.waves if w.applied_at is not None and cluster in w.clusters] if record is not None else []
    driver = [w for w in waves if "driver" in w.step]
    return driver[-1].applied_at if driver else None

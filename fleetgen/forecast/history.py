"""What a series of GPU allocation history is about (a cluster, a node pool, a team) and its hourly sums.

A series is recognised by its labels, so an answer may come from any query that keeps them:
- a node pool: `cluster` and `flavor` (Kueue's kueue_cluster_queue_resource_usage; a pool is the ResourceFlavor of its
  name) or `node_pool`, in nvidia.com/gpu. A cluster's GPUs are the sum of its pools', in the hours every pool with
  history reported: an hour a pool is missing is a gap in the cluster too, never 0 GPUs.
- a team: `cluster` and `namespace` (kube-state-metrics' kube_resourcequota, type "used") or `team`.
- a cluster's GPU utilisation: `cluster` and `fleetgen_series="gpu_busy_percent"`, one series a cluster (the live
  path labels `avg by (cluster) (DCGM_FI_DEV_GPU_UTIL)` so), against 100%: when its GPUs would be busy all the time.
Series of another resource (a slice, cpu) or of a quota's hard limit are left out; so are series naming no cluster,
pool or team of fleet.yaml (counted, so the reader can see them). Several series of one subject (one per ClusterQueue
drawing on a pool) add up: each contributes its mean of every hour.

A value a counted series cannot hold (a negative or non-finite number of GPUs, more than any fleet has, a utilisation
outside 0 to 100%) is refused at its series; NaN, which Prometheus writes for "no value", is a gap.

Memory is bounded: each subject keeps hourly sums over the last `lookback` weeks, whatever the size of the input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from fleetgen.errors import InputError
from fleetgen.forecast.range_answer import Series
from fleetgen.model import Fleet

HOUR = 3600
WEEK_HOURS = 168
GPU_RESOURCES = {"nvidia.com/gpu", "requests.nvidia.com/gpu"}
Kind = Literal["cluster", "pool", "team", "busy"]
BUSY = "gpu_busy_percent"  # the fleetgen_series label of a cluster's average GPU utilisation
MAX_GPUS = 1_000_000  # in use by one series: far above any fleet (the largest hold a few hundred thousand GPUs)


@dataclass(frozen=True, order=True)
class Subject:
    """What runs out: a cluster's GPUs, a node pool's GPUs at its largest size, or a team's GPU quota on a cluster."""

    cluster: str
    order: int  # the cluster, then its pools, then its teams, then its GPU utilisation
    name: str  # the cluster's, the pool's or the team's
    kind: Kind
    capacity: int  # GPUs


@dataclass
class Hourly:
    """Hourly sums of one subject's series: hour `first` (hours since the epoch) is `sums[0]`."""

    first: int = 0
    sums: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    seen: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def add(self, hours: npt.NDArray[np.int64], means: npt.NDArray[np.float64], lookback_hours: int) -> None:
        """Add the means of distinct hours, oldest first. Only the lookback before the newest hour is ever allocated:
        hours years apart (an answer may hold any) cost no more memory than hours a week apart."""
        oldest = max(int(hours[-1]), self.last if self.sums.size else int(hours[-1])) - lookback_hours + 1
        if self.sums.size and self.first < oldest:
            cut = min(oldest - self.first, self.sums.size)
            self.sums, self.seen, self.first = self.sums[cut:], self.seen[cut:], self.first + cut
        kept = hours >= oldest
        hours, means = hours[kept], means[kept]
        if not hours.size:
            return
        low, high = int(hours[0]), int(hours[-1])
        if not self.sums.size:
            self.first, self.sums, self.seen = low, np.zeros(high - low + 1), np.zeros(high - low + 1, dtype=bool)
        start, end = min(self.first, low), max(self.first + self.sums.size - 1, high)
        if (start, end) != (self.first, self.first + self.sums.size - 1):
            before, after = self.first - start, end - (self.first + self.sums.size - 1)
            self.sums, self.seen = np.pad(self.sums, (before, after)), np.pad(self.seen, (before, after))
            self.first = start
        np.add.at(self.sums, hours - self.first, means)
        self.seen[hours - self.first] = True
        cut = self.sums.size - lookback_hours
        if cut > 0:  # older than the lookback: never fitted, so never kept
            self.sums, self.seen, self.first = self.sums[cut:], self.seen[cut:], self.first + cut

    @property
    def last(self) -> int:
        return self.first + self.sums.size - 1


@dataclass
class History:
    """The hourly sums of every subject read so far, and what was left out."""

    lookback_hours: int
    subjects: dict[Subject, Hourly] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)  # "cluster/pool" and "cluster/namespace" fleet.yaml does not have
    ignored: int = 0  # series of another resource, a hard limit, or no cluster label

    def add(self, series: Series, subjects: list[Subject]) -> None:
        if not subjects:
            return
        _refuse_impossible(series, subjects[0])
        finite = np.isfinite(series.values) & np.isfinite(series.times)
        if not finite.any():
            return
        hours = np.floor(series.times[finite] / HOUR).astype(np.int64)
        values = series.values[finite]
        if hours.size > 1 and np.any(np.diff(hours) < 0):
            order = np.argsort(hours, kind="stable")
            hours, values = hours[order], values[order]
        distinct, first_at, counts = np.unique(hours, return_index=True, return_counts=True)
        means = np.add.reduceat(values, first_at) / counts  # a finer step than an hour: its mean in each hour
        for subject in subjects:
            self.subjects.setdefault(subject, Hourly()).add(distinct, means, self.lookback_hours)

    def with_cluster_totals(self, index: SubjectIndex) -> dict[Subject, Hourly]:
        """Every subject's hourly sums, each cluster's worked out from its pools': their sums in the hours all of
        them reported (a pool without history is not one of them)."""
        pools: dict[str, list[Hourly]] = {}
        for subject, hourly in self.subjects.items():
            if subject.kind == "pool":
                pools.setdefault(subject.cluster, []).append(hourly)
        return {**self.subjects, **{index.clusters[cluster]: _total(parts) for cluster, parts in pools.items()}}

    @property
    def as_of(self) -> int | None:
        """The last hour any series reached: the forecast's now, so one answer always gives the same forecast."""
        return max((h.last for h in self.subjects.values()), default=None)


def _refuse_impossible(series: Series, subject: Subject) -> None:
    """Refuse a value no GPU count (or utilisation) can be, at the series that holds it; NaN is a gap."""
    ceiling = 100.0 if subject.kind == "busy" else MAX_GPUS
    bad = ~np.isnan(series.values) & ~((series.values >= 0) & (series.values <= ceiling))
    if bad.any():
        value = float(series.values[np.flatnonzero(bad)[0]])
        what = "a GPU utilisation (0 to 100%)" if subject.kind == "busy" else f"a number of GPUs in use (0 to {MAX_GPUS:,})"
        raise InputError(f"{series.where}: {value:g} is not {what}")


def _total(parts: list[Hourly]) -> Hourly:
    """The sum of `parts` hour by hour, seen only where every part was seen."""
    first, last = min(p.first for p in parts), max(p.last for p in parts)
    sums, seen = np.zeros(last - first + 1), np.ones(last - first + 1, dtype=bool)
    for part in parts:
        at = part.first - first
        covered = np.zeros(seen.size, dtype=bool)
        covered[at : at + part.seen.size] = part.seen
        seen &= covered
        sums[at : at + part.sums.size] += part.sums
    return Hourly(first, np.where(seen, sums, 0.0), seen)


class SubjectIndex:
    """fleet.yaml's subjects by the labels a series carries."""

    def __init__(self, fleet: Fleet) -> None:
        self.clusters: dict[str, Subject] = {}
        self.pools: dict[tuple[str, str], Subject] = {}
        self.teams: dict[tuple[str, str], Subject] = {}
        self.busy: dict[str, Subject] = {}  # percent of the cluster's GPUs' time busy, against 100
        for cluster in fleet.clusters:
            # Partitioned pools hand out slices, not nvidia.com/gpu: their GPUs are not what a GPU series counts.
            whole = [p for p in cluster.node_pools if p.gpus_per_node and p.partitioning.kind == "none"]
            gpus = sum(p.max_nodes * p.gpus_per_node for p in whole)
            if gpus:
                self.clusters[cluster.name] = Subject(cluster.name, 0, cluster.name, "cluster", gpus)
                self.busy[cluster.name] = Subject(cluster.name, 3, cluster.name, "busy", 100)
            for pool in whole:
                self.pools[(cluster.name, pool.name)] = Subject(cluster.name, 1, pool.name, "pool", pool.max_nodes * pool.gpus_per_node)
        for team in fleet.teams:
            for name in team.clusters:
                quota = team.quota_on(name).requests.gpu
                if quota:
                    subject = Subject(name, 2, team.name, "team", quota)
                    self.teams[(name, team.namespace)] = self.teams[(name, team.name)] = subject

    def of(self, labels: dict[str, str], history: History) -> list[Subject]:
        """The subjects a series counts towards: a pool and its cluster, or a team; none for a series about something else."""
        resource = labels.get("resource")
        if (resource is not None and resource not in GPU_RESOURCES) or labels.get("type", "used") != "used":
            history.ignored += 1
            return []
        cluster = labels.get("cluster")
        if labels.get("fleetgen_series") == BUSY and cluster is not None:
            busy = self.busy.get(cluster)
            if busy is None:
                history.unknown.add(cluster)
            return [busy] if busy else []
        pool = labels.get("flavor") or labels.get("node_pool")
        team = labels.get("team") or labels.get("namespace")
        if cluster is None or (pool is None and team is None):
            history.ignored += 1
            return []
        if pool is not None:
            found = self.pools.get((cluster, pool))
            if found is None:
                history.unknown.add(f"{cluster}/{pool}")
                return []
            return [found]  # its cluster's total is its pools' (History.with_cluster_totals)
        subject = self.teams.get((cluster, team or ""))
        if subject is None:
            history.unknown.add(f"{cluster}/{team}")
            return []
        return [subject]

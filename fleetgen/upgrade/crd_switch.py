"""The second step of the move from the ClusterPolicy's driver to one NVIDIADriver per GPU pool, as a plan shows it.

The GPU Operator takes that move in two Helm upgrades: first to a release with the NVIDIADriver path (v26.7 and later)
with `driverCrd` still off, then, once that runs, `driverCrd` on. In one upgrade the old controller removes the driver
pods before the new one owns them, so `diff` refuses a pull request that does both (review/pool_driver_changes.py). A
plan whose waves take clusters onto such a release is the first step; after each such wave it names the clusters that
may take the second, each in a pull request of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fleetgen.compat.gpu_operator import operator_release
from fleetgen.model import Fleet, Version

# one wave of a plan as this module reads it: its number, what its step sets, the clusters it moves
WaveMoves = tuple[int, Mapping[str, Version], tuple[str, ...]]


@dataclass(frozen=True)
class CrdSwitch:
    """The second of the two Helm upgrades that move clusters from the ClusterPolicy's driver to one NVIDIADriver per
    GPU pool: once wave `after_wave` has moved their GPU Operator to `release` (a release with that path, driverCrd
    still off), a pull request of its own turns platform.gpuOperator.driverCrd on. Never the same pull request: the
    old controller would remove the driver pods before the new one owns them (diff refuses it)."""

    after_wave: int
    clusters: tuple[str, ...]
    release: str  # the chart version, v26.7.0


def crd_switches(fleet: Fleet, waves: Iterable[WaveMoves]) -> list[CrdSwitch]:
    """The clusters a wave moves from a GPU Operator release without the NVIDIADriver path to one with it, while the
    operator installs their driver through the ClusterPolicy: each may turn driverCrd on once that wave is done."""
    clusters = {c.name: c for c in fleet.clusters}
    after: dict[tuple[int, str], list[str]] = {}
    for number, step, moved in waves:
        chart = step.get("gpuOperator")
        if chart is None:
            continue
        release = f"v{chart}"
        now = operator_release(release)
        for name in moved:
            operator = fleet.platform_of(clusters[name]).gpu_operator
            before = operator_release(operator.version)
            if operator.enabled and operator.driver_source == "operator" and now is not None and now.driver_crd:
                if not operator.driver_crd and (before is None or not before.driver_crd):
                    after.setdefault((number, release), []).append(name)
    return [CrdSwitch(number, tuple(names), release) for (number, release), names in sorted(after.items())]

"""The target of an upgrade, completed with what it implies before any planning.

A CUDA target may need a newer driver (its full-support minimum); a driver target may need a newer GPU
Operator release, since the release installs the driver and lists the drivers it supports. The implied
versions are added to the target, each with a sentence saying why, and named so that the planner moves
them only on the clusters that need them (an implied move never downgrades a cluster).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleetgen.compat import Facts
from fleetgen.compat.gpu_operator import operator_facts, operator_release
from fleetgen.model import Fleet, Version
from fleetgen.upgrade.operator import cluster_versions, release_for, supports


@dataclass
class Target:
    versions: dict[str, Version]
    implied: list[str] = field(default_factory=list)  # why each implied version was added
    implied_parts: set[str] = field(default_factory=set)  # the components the planner moves only where needed


def _full_support_driver(cuda: Version, data: Facts) -> Version | None:
    minor = Version(".".join(str(p) for p in cuda.minor))
    return next((r.min_driver for r in data.cuda_driver if r.cuda == minor), None)


def _operator_driver(fleet: Fleet, needed: Version) -> Version | None:
    """The lowest driver at or above `needed` that the GPU Operator release of every cluster below it lists, if any."""
    lists = []
    for cluster in fleet.clusters:
        current = cluster_versions(fleet, cluster)
        operator = current.get("gpuOperator")
        release = operator_release(str(operator)) if operator is not None else None
        if release is not None and current["driver"] < needed:
            lists.append(set(release.drivers))
    fits = sorted(d for d in set.intersection(*lists) if d >= needed) if lists else []
    return fits[0] if fits else None


def _listed_driver(needed: Version) -> Version | None:
    """The lowest driver at or above `needed` that some GPU Operator release fleetgen knows lists."""
    fits = sorted({d for r in operator_facts().releases for d in r.drivers if d >= needed})
    return fits[0] if fits else None


def complete_target(fleet: Fleet, requested: dict[str, Version], data: Facts) -> Target:
    target = Target(dict(requested))
    versions = target.versions
    if "cuda" in versions and "driver" not in versions:
        needed = _full_support_driver(versions["cuda"], data)
        lowest = min(fleet.version_sets[c.version_set].driver for c in fleet.clusters)
        if needed is not None and lowest < needed:
            operated = any("gpuOperator" in cluster_versions(fleet, c) for c in fleet.clusters)
            chosen = (_operator_driver(fleet, needed) or _listed_driver(needed) or needed) if operated else needed
            versions["driver"] = chosen
            target.implied_parts.add("driver")
            because = "" if chosen == needed else f", and {chosen} is the first a GPU Operator release lists"
            target.implied.append(f"CUDA {versions['cuda']} needs driver {needed} or later{because}: the driver moves first")
    if "driver" in versions and "gpuOperator" not in versions:
        _operator_for_driver(fleet, target)
    return target


def _operator_for_driver(fleet: Fleet, target: Target) -> None:
    """The GPU Operator release every cluster whose release does not list the target driver moves to with it."""
    driver = target.versions["driver"]
    short = []
    for cluster in fleet.clusters:
        current = cluster_versions(fleet, cluster)
        operator = current.get("gpuOperator")
        if operator is not None and current["driver"] != driver and supports(operator, driver) is False:
            short.append(operator)
    if not short:
        return
    floor = max(short)
    release = release_for(driver, floor)
    if release is None:
        return  # the planner refuses: the state after the driver step has a release that does not list it
    target.versions["gpuOperator"] = Version.parse(release.documents)
    target.implied_parts.add("gpuOperator")
    target.implied.append(
        f"GPU Operator v{floor} does not list driver {driver}; {release.documents} is the first release that does: "
        "each cluster moves to it with the driver, in one Helm upgrade"
    )

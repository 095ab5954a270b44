"""Which drivers each NVIDIA GPU Operator release supports (gpu_operator.yaml), and the checks that use it.

The GPU Operator installs the driver of a cluster's version set, so a driver its release does not
support is an error at that version set's `driver`. A release fleetgen has no row for is a warning:
the driver cannot be checked until the data is updated. The upgrade planner asks `driver_move` before
it moves a cluster's driver, and is told in which order the operator and the driver must move.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from fleetgen.errors import Finding, Severity
from fleetgen.model import Cluster, Fleet
from fleetgen.model.platform import cluster_platform
from fleetgen.model.types import Version


class OperatorRelease(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, arbitrary_types_allowed=True)
    series: str = Field(pattern=r"^\d+\.\d+$")
    """The release series (YY.MM) the row covers."""
    documents: str
    """The release whose component matrix the row copies."""
    default: Version
    drivers: tuple[Version, ...] = Field(min_length=1)
    source: str = Field(min_length=1)
    url: str = Field(pattern=r"^https://\S+$")


class OperatorFacts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    releases: tuple[OperatorRelease, ...]


@cache
def operator_facts() -> OperatorFacts:
    text = (resources.files("fleetgen.compat") / "gpu_operator.yaml").read_text(encoding="utf-8")
    return OperatorFacts.model_validate(yaml.load(text, Loader=yaml.CSafeLoader))


def series_of(chart_version: str) -> str:
    """v24.3.0 -> 24.3: the GPU Operator's calendar versions name their series in the first two fields."""
    return ".".join(chart_version.removeprefix("v").split(".")[:2])


def operator_release(chart_version: str, facts: OperatorFacts | None = None) -> OperatorRelease | None:
    series = series_of(chart_version)
    return next((r for r in (facts or operator_facts()).releases if r.series == series), None)


def cluster_operator(fleet: Fleet, cluster: Cluster) -> str | None:
    """The GPU Operator chart version that installs this cluster's driver, or None when the operator is off."""
    operator = cluster_platform(fleet.platform, cluster.platform).gpu_operator
    return operator.version if operator.enabled else None


def _series_key(release: OperatorRelease) -> tuple[int, ...]:
    return tuple(int(part) for part in release.series.split("."))


def driver_move(chart_version: str, current: Version, target: Version, facts: OperatorFacts | None = None) -> str | None:
    """Why GPU Operator `chart_version` cannot take a cluster from driver `current` to `target`, and what to change
    in which order; None when its release supports `target` or fleetgen has no row for the release (validate warns)."""
    data = facts or operator_facts()
    release = operator_release(chart_version, data)
    if release is None or target in release.drivers:
        return None
    refused = f"driver {target} is not supported by GPU Operator {chart_version}"
    later = sorted((r for r in data.releases if _series_key(r) > _series_key(release)), key=_series_key)
    first = next((r for r in later if target in r.drivers), None)
    if first is None:
        supported = ", ".join(str(d) for d in release.drivers)
        return f"{refused} (its {release.series} releases support {supported}) nor by any later release fleetgen knows; choose one of those"
    if current in first.drivers:
        return f"{refused}; upgrade the GPU Operator to {first.documents} first (it supports both {current} and {target}), then the driver"
    between = [d for d in release.drivers if d in first.drivers and current < d < target]
    if between:
        step = max(between)
        return (
            f"{refused}, and {first.documents}, the first release that supports it, does not support the current driver {current}: "
            f"move the driver to {step} first (both releases support it), then the GPU Operator to {first.documents}, "
            f"then the driver to {target}"
        )
    return (
        f"{refused}, and {first.documents}, the first release that supports it, does not support the current driver {current}, "
        f"nor do the two releases share a driver between them: no order of upgrades keeps the cluster supported"
    )


def driver_findings(fleet: Fleet, facts: OperatorFacts | None = None) -> list[Finding]:
    """A finding for each version set whose driver the GPU Operator release of a cluster using it does not support."""
    found: dict[tuple[str, str], list[str]] = {}
    for cluster in fleet.clusters:
        chart_version = cluster_operator(fleet, cluster)
        if chart_version is not None:
            found.setdefault((cluster.version_set, chart_version), []).append(cluster.name)
    findings = []
    for (set_name, chart_version), clusters in found.items():
        names = ", ".join(clusters)
        release = operator_release(chart_version, facts)
        if release is None:
            message = f"no driver facts for GPU Operator {chart_version} (used on {names}): the driver is not checked against it"
            findings.append(Finding(("versionSets", set_name, "driver"), message, Severity.WARNING))
            continue
        driver = fleet.version_sets[set_name].driver
        if driver not in release.drivers:
            supported = ", ".join(str(d) for d in release.drivers)
            message = (
                f"driver {driver} is not supported by GPU Operator {chart_version} (used on {names}); "
                f"its {release.series} releases support {supported}"
            )
            findings.append(Finding(("versionSets", set_name, "driver"), message))
    return findings

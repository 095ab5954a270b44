"""Which drivers each NVIDIA GPU Operator release supports (gpu_operator.yaml), and the checks that use it.

The GPU Operator installs the driver of a cluster's version set, so a driver its release does not
support is an error at that version set's `driver`. A release fleetgen has no row for is a warning:
the driver cannot be checked until the data is updated. The upgrade planner moves a cluster's release
with its driver when the release does not list the target (upgrade/operator.py).
"""

from functools import cache
from typing import NamedTuple

from fleetgen.compat.shipped import rows, shipped_data
from fleetgen.errors import Finding, Severity
from fleetgen.model import Cluster, Fleet
from fleetgen.model.types import Version


class OperatorRelease(NamedTuple):
    series: str
    """The release series (YY.MM) the row covers."""
    documents: str
    """The release whose component matrix the row copies."""
    default: Version
    drivers: tuple[Version, ...]
    source: str
    url: str
    driver_crd: bool = False
    """The release manages drivers with NVIDIADriver resources (one per node pool) when the chart asks it to."""


class OperatorFacts(NamedTuple):
    releases: tuple[OperatorRelease, ...]


@cache
def operator_facts() -> OperatorFacts:
    return OperatorFacts(rows(OperatorRelease, shipped_data("gpu_operator.yaml")["releases"]))


def series_of(chart_version: str) -> str:
    """v24.3.0 -> 24.3: the GPU Operator's calendar versions name their series in the first two fields."""
    return ".".join(chart_version.removeprefix("v").split(".")[:2])


def operator_release(chart_version: str, facts: OperatorFacts | None = None) -> OperatorRelease | None:
    series = series_of(chart_version)
    return next((r for r in (facts or operator_facts()).releases if r.series == series), None)


def cluster_operator(fleet: Fleet, cluster: Cluster) -> str | None:
    """The GPU Operator chart version that installs this cluster's driver, or None when the operator is off or the
    node image brings the driver."""
    operator = fleet.platform_of(cluster).gpu_operator
    return operator.version if operator.enabled and operator.driver_source == "operator" else None


def image_driver(fleet: Fleet, cluster: Cluster) -> bool:
    """Whether the cluster's node images carry its driver (the GPU Operator's driverSource: node-image)."""
    operator = fleet.platform_of(cluster).gpu_operator
    return operator.enabled and operator.driver_source == "node-image"


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
            # fix: Pin a GPU Operator release fleetgen knows (Compatibility facts), or add its drivers in a facts file
            findings.append(Finding(("versionSets", set_name, "driver"), message, Severity.WARNING))
            continue
        driver = fleet.version_sets[set_name].driver
        if driver not in release.drivers:
            supported = ", ".join(str(d) for d in release.drivers)
            message = (
                f"driver {driver} is not supported by GPU Operator {chart_version} (used on {names}); "
                f"its {release.series} releases support {supported}"
            )
            # fix: Choose a driver the release supports, or a release that supports the driver
            findings.append(Finding(("versionSets", set_name, "driver"), message))
    return findings

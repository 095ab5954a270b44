"""The NVIDIA GPU Operator release in an upgrade: it belongs to each cluster's versions and moves with the driver.

A cluster changes its operator release and its driver in one Helm upgrade (the chart's version and its
`driver.version`); the operator's upgrade controller then replaces the driver node by node. So a driver target
that the cluster's release does not list takes the cluster to a release that does, in the same step, and the
rule that matters is the one about each state a cluster passes through: its release lists its driver. Which
drivers each release lists is compat/gpu_operator.yaml.
"""

from __future__ import annotations

from fleetgen.compat.gpu_operator import OperatorFacts, OperatorRelease, cluster_operator, operator_facts, operator_release
from fleetgen.errors import Severity
from fleetgen.model import COMPONENTS, Cluster, Fleet, Version


def cluster_versions(fleet: Fleet, cluster: Cluster) -> dict[str, Version]:
    """What an upgrade can move on `cluster`: its version set's row, and the GPU Operator release when the operator
    installs its driver."""
    row = fleet.version_sets[cluster.version_set]
    out: dict[str, Version] = {c: getattr(row, c) for c in COMPONENTS}
    chart = cluster_operator(fleet, cluster)
    if chart is not None:
        try:
            out["gpuOperator"] = Version.parse(chart)
        except ValueError:  # a pre-release chart (v25.3.0-rc.1): not something the planner moves from
            pass
    return out


def component_text(component: str, version: Version) -> str:
    """A version as fleet.yaml and the plan write it: GPU Operator releases keep NVIDIA's `v` (chart v24.6.1)."""
    return f"v{version}" if component == "gpuOperator" else str(version)


def _series(release: OperatorRelease) -> tuple[int, ...]:
    return tuple(int(part) for part in release.series.split("."))


def release_for(driver: Version, at_least: Version, facts: OperatorFacts | None = None) -> OperatorRelease | None:
    """The first release, from `at_least`'s series on, that lists `driver` (the smallest move that supports it)."""
    floor = at_least.minor
    fits = [r for r in (facts or operator_facts()).releases if _series(r) >= floor and driver in r.drivers]
    return min(fits, key=_series) if fits else None


def supports(chart: Version, driver: Version, facts: OperatorFacts | None = None) -> bool | None:
    """Whether release `chart` lists `driver`; None when fleetgen has no row for its series."""
    release = operator_release(str(chart), facts)
    return None if release is None else driver in release.drivers


def operator_problem(chart: Version, driver: Version) -> tuple[str, Severity] | None:
    """Why a cluster on GPU Operator `chart` with `driver` is not supported (an error), or cannot be judged (a warning)."""
    release = operator_release(str(chart))
    if release is None:
        return f"no driver facts for GPU Operator v{chart}: driver {driver} is not checked against it", Severity.WARNING
    if driver in release.drivers:
        return None
    listed = ", ".join(str(d) for d in release.drivers)
    return f"driver {driver} is not supported by GPU Operator v{chart} (its {release.series} releases support {listed})", Severity.ERROR

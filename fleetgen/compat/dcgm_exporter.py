"""Which DCGM exporter a cluster runs (the one its GPU Operator release bundles, dcgm_exporter.yaml), and the
names that exporter writes: the node label was `Hostname` until dcgm-exporter 4.8.3 and is `hostname` since
(NVIDIA/dcgm-exporter PR #655, which GPU Operator 26.7 bundles). Alerts and dashboards take the names of the
cluster's own exporter from here, so a fleet whose clusters run both generations is fine, and the upgrade
planner says when an operator move crosses a rename.

A series without a row takes the newest row before it: the operator only ever moves its bundled exporter forward.
"""

from functools import cache
from typing import NamedTuple

from fleetgen.compat.gpu_operator import series_of
from fleetgen.compat.shipped import rows, shipped_data
from fleetgen.model import Cluster, Fleet
from fleetgen.model.types import Version

OLDEST_LABEL = "Hostname"  # what the exporter wrote before 4.8.3, and what a cluster without the operator is taken to run


class Bundle(NamedTuple):
    series: str  # the GPU Operator's YY.MM
    exporter: str  # <DCGM>-<exporter>
    source: str
    url: str
    provisional: bool = False

    @property
    def exporter_version(self) -> Version:
        return Version(self.exporter.split("-", 1)[1])


class Generation(NamedTuple):
    since: Version
    host_label: str
    source: str
    url: str
    known: bool = True  # False: fleetgen does not know this generation's metric names yet


class ExporterFacts(NamedTuple):
    bundles: tuple[Bundle, ...]
    generations: tuple[Generation, ...]


@cache
def exporter_facts() -> ExporterFacts:
    written = shipped_data("dcgm_exporter.yaml")
    return ExporterFacts(rows(Bundle, written["bundles"]), rows(Generation, written["generations"]))


def _key(series: str) -> tuple[int, ...]:
    return tuple(int(part) for part in series.split("."))


def bundle_of(chart_version: str) -> Bundle:
    """The exporter GPU Operator `chart_version` bundles: its series' row, else the newest row before it (else the oldest)."""
    bundles = sorted(exporter_facts().bundles, key=lambda b: _key(b.series))
    try:
        wanted = _key(series_of(chart_version))
    except ValueError:  # a chart version fleetgen cannot read as YY.MM: the oldest names are the safe guess
        return bundles[0]
    before = [b for b in bundles if _key(b.series) <= wanted]
    return before[-1] if before else bundles[0]


@cache  # asked once a rendered alert rule: thousands of times on a large fleet, for a handful of releases
def generation_of(chart_version: str) -> Generation:
    exporter = bundle_of(chart_version).exporter_version
    return [g for g in sorted(exporter_facts().generations, key=lambda g: g.since) if g.since <= exporter][-1]


def host_label(fleet: Fleet, cluster: Cluster) -> str:
    """The label the cluster's DCGM exporter names a GPU's node with: `Hostname` or `hostname`."""
    operator = fleet.platform_of(cluster).gpu_operator
    return generation_of(operator.version).host_label if operator.enabled else OLDEST_LABEL


def exporter_rename(before: Version | None, after: Version | None) -> str | None:
    """What changes for dashboards and queries when the GPU Operator moves from release `before` to `after`, if anything."""
    if before is None or after is None:
        return None
    old, new = generation_of(f"v{before}"), generation_of(f"v{after}")
    if old.host_label == new.host_label:
        return None
    exporter = bundle_of(f"v{after}").exporter
    return (
        f"its DCGM exporter ({exporter}) labels a GPU's node {new.host_label!r}, not {old.host_label!r} ({new.url}): "
        "fleetgen's alerts and dashboards follow the release; queries and dashboards kept elsewhere must change with it"
    )

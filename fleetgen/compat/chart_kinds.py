"""The cluster-scoped kinds each pinned add-on chart creates (chart_kinds.yaml), for least privilege in Argo CD.

The platform AppProject used to allow every cluster-scoped kind so that any chart could install; a
compromised chart source could then create any ClusterRoleBinding. fleetgen pins the charts and keeps
them in its tests, so the kinds are known: scripts/refresh_charts.py runs `helm template` on each
vendored chart (with fleetgen's values and with none) and writes the file; a test fails when a chart's
objects hold a cluster-scoped kind the file lacks.

A chart version without a row (a fleet pinning a version fleetgen does not vendor) gets the kinds of
the versions of that chart it knows, and a warning: Argo CD refuses to sync a kind the project lacks,
so a missing kind shows up as a failed sync naming it, never as more privilege.
"""

from collections.abc import Iterator
from functools import cache
from typing import NamedTuple

from fleetgen.compat.shipped import row, rows, shipped_data
from fleetgen.errors import Finding, Severity
from fleetgen.model import Fleet
from fleetgen.model.fleet import add_on_needed
from fleetgen.model.platform import ADD_ONS, AddOn

GroupKind = tuple[str, str]


class Kind(NamedTuple):
    group: str  # "" for the core group
    kind: str


class ChartKinds(NamedTuple):
    chart: str
    version: str
    kinds: tuple[Kind, ...]
    derived: str
    """How the row was made: `helm template` of a vendored folder, or where a row by hand comes from."""


class ChartKindsFile(NamedTuple):
    charts: tuple[ChartKinds, ...]


@cache
def chart_kinds() -> ChartKindsFile:
    charts = shipped_data("chart_kinds.yaml")["charts"]
    return ChartKindsFile(tuple(row(ChartKinds, chart, kinds=rows(Kind, chart["kinds"])) for chart in charts))


def kinds_of(chart: str, version: str) -> tuple[list[GroupKind], bool]:
    """The cluster-scoped kinds of chart `version`, and whether that version has a row (else: its known versions')."""
    rows = [row for row in chart_kinds().charts if row.chart == chart]
    exact = [row for row in rows if row.version == version]
    chosen = exact or rows
    return sorted({(k.group, k.kind) for row in chosen for k in row.kinds}), bool(exact)


def installed_add_ons(fleet: Fleet) -> Iterator[tuple[str, AddOn, tuple[str | int, ...]]]:
    """(fleet.yaml name, settings, where written) of each enabled add-on of each cluster (Volcano where a cluster runs it)."""
    for index, cluster in enumerate(fleet.clusters):
        platform, own = fleet.platform_of(cluster), cluster.platform
        for name, attr in ADD_ONS:
            addon: AddOn = getattr(platform, attr)
            if addon.enabled and add_on_needed(fleet, index, addon):
                written = own is not None and attr in own.model_fields_set
                yield name, addon, (("clusters", index, "platform", name, "version") if written else ("platform", name, "version"))


def unknown_chart_findings(fleet: Fleet) -> list[Finding]:
    """A warning per add-on chart version of an Argo CD fleet whose cluster-scoped kinds fleetgen has no row for."""
    if fleet.gitops.engine != "argocd":
        return []
    found: dict[tuple[str | int, ...], Finding] = {}
    for _, addon, at in installed_add_ons(fleet):
        kinds, exact = kinds_of(addon.chart, addon.version)
        if not exact and at not in found:
            known = sorted(row.version for row in chart_kinds().charts if row.chart == addon.chart)
            message = (
                f"no record of the cluster-scoped kinds chart {addon.chart} {addon.version} creates: the platform AppProject "
                f"allows those of its versions fleetgen knows ({', '.join(known) or 'none'}); Argo CD refuses to sync any other "
                "(vendor the chart and run scripts/refresh_charts.py to record it)"
            )
            # fix: Pin a chart version fleetgen knows, or vendor the chart and run scripts/refresh_charts.py
            found[at] = Finding(at, message, Severity.WARNING)
    return list(found.values())

"""Least privilege for the add-ons: the platform Argo CD AppProject allows exactly the cluster-scoped kinds the pinned
charts create, as `helm template` of the charts kept in tests/charts shows them (scripts/refresh_charts.py).

The derivation is the script's own, run here on the vendored charts: the committed list must be what it
gives now, so a chart bump that adds a cluster-scoped kind fails until the list is refreshed. Without
helm these tests skip and say so (.ci/run installs it).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, REPO, skip_without
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.compat.chart_kinds import chart_kinds, kinds_of, unknown_chart_findings
from fleetgen.model import Fleet
from fleetgen.render.argocd_projects import projects
from fleetgen.render.platform import add_ons


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("refresh_charts", REPO / "scripts" / "refresh_charts.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


@pytest.fixture(scope="module")
def helm() -> str:
    try:
        found: str = SCRIPT.helm_binary()
    except SCRIPT.RefreshError as exc:
        skip_without("helm", str(exc))
    return found


@pytest.mark.slow  # helm template of every vendored chart, several times
def test_the_kinds_file_is_what_helm_template_of_the_vendored_charts_gives(helm: str) -> None:
    committed = (REPO / "fleetgen" / "compat" / "chart_kinds.yaml").read_text(encoding="utf-8")
    assert SCRIPT.kinds_text(SCRIPT.derive(helm)) == committed, "run: python scripts/refresh_charts.py --kinds-only"
    rows = {(r.chart, r.version): {(k.group, k.kind) for k in r.kinds} for r in chart_kinds().charts}
    assert ("nvidia.com", "ClusterPolicy") in rows[("gpu-operator", "v25.10.1")]  # a custom kind: its scope from the chart's CRD
    assert ("apiregistration.k8s.io", "APIService") in rows[("kueue", "0.19.2")]  # Kueue's visibility API
    assert all(("", "Namespace") not in kinds for kinds in rows.values())  # no chart makes one: Argo CD does


def _copy_chart(tmp_path: Path, folder: str) -> Path:
    charts = tmp_path / "charts"
    shutil.copytree(REPO / "tests" / "charts" / folder, charts / folder, symlinks=True)
    row = next(line for line in (REPO / "tests" / "charts" / "SOURCES.md").read_text().splitlines() if line.startswith(f"| {folder}/ |"))
    (charts / "SOURCES.md").write_text(f"| folder | project | chart version |\n{row}\n")
    return charts


@pytest.mark.slow  # helm template of every vendored chart, several times
def test_a_chart_bump_that_adds_a_cluster_kind_changes_the_list(tmp_path: Path, helm: str) -> None:
    charts = _copy_chart(tmp_path, "kueue")
    (charts / "kueue" / "templates" / "zz-priority.yaml").write_text(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: bumped}\nvalue: 1000\n"
    )
    [row] = SCRIPT.derive(helm, charts)
    recorded = {(k.group, k.kind) for r in chart_kinds().charts if (r.chart, r.version) == ("kueue", "0.19.2") for k in r.kinds}
    derived = {(k["group"], k["kind"]) for k in row["kinds"]}
    assert derived - recorded == {("scheduling.k8s.io", "PriorityClass")}  # the comparison above then fails: the list lacks it


@pytest.mark.slow  # helm template of every vendored chart, several times
def test_a_kind_of_unknown_scope_stops_the_derivation(tmp_path: Path, helm: str) -> None:
    charts = _copy_chart(tmp_path, "kueue")
    (charts / "kueue" / "templates" / "zz-mystery.yaml").write_text("apiVersion: example.com/v1\nkind: Mystery\nmetadata: {name: m}\n")
    with pytest.raises(SCRIPT.RefreshError, match=r"Mystery \(example.com/v1\) is defined by no CRD of the chart"):
        SCRIPT.derive(helm, charts)


def _example(**platform: Any) -> Fleet:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["gitops"]["engine"] = "argocd"
    for name, settings in platform.items():
        data.setdefault("platform", {}).setdefault(name, {}).update(settings)
    return Fleet.model_validate(data)


def _platform_project(fleet: Fleet) -> dict[str, Any]:
    every = list(range(len(fleet.clusters)))
    [project] = [m.body for m in projects(fleet, every) if m.body["metadata"]["name"].endswith("-platform")]
    return project


@given(
    gpu_operator=st.sampled_from(["v24.3.0", "v25.10.1", "v25.3.4"]),
    crds=st.booleans(),
    kueue=st.booleans(),
    volcano=st.booleans(),
)
def test_the_platform_project_allows_exactly_the_installed_charts_kinds_and_their_namespaces(
    gpu_operator: str, crds: bool, kueue: bool, volcano: bool
) -> None:
    fleet = _example(
        gpuOperator={"version": gpu_operator},
        prometheusOperatorCrds={"enabled": crds},
        kueue={"enabled": kueue},
        volcano={"enabled": volcano},
    )
    installed = [addon for i in range(len(fleet.clusters)) for _, addon, _ in add_ons(fleet, i)]
    allowed = _platform_project(fleet)["spec"]["clusterResourceWhitelist"]
    assert {"group": "*", "kind": "*"} not in allowed
    kinds = {(a["group"], a["kind"]) for a in allowed if "name" not in a}
    assert kinds == {kind for addon in installed for kind in kinds_of(addon.chart, addon.version)[0]}
    assert sorted(a["name"] for a in allowed if "name" in a) == sorted({addon.namespace for addon in installed})
    assert all(a["kind"] == "Namespace" for a in allowed if "name" in a)
    unknown = [f for f in unknown_chart_findings(fleet)]
    assert bool(unknown) == (gpu_operator == "v25.3.4")  # not vendored: warned, and given its known versions' kinds only
    if unknown:
        assert "no record of the cluster-scoped kinds chart gpu-operator v25.3.4 creates" in unknown[0].message

"""The platform layer: add-ons rendered for Flux and Argo CD, entry points that reconcile, driver waves."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml
from conftest import EXAMPLE, REPO

from fleetgen.compat.gpu_operator import driver_findings, operator_facts, operator_release
from fleetgen.model import Fleet, Version
from fleetgen.output.emit import dump_documents
from fleetgen.render.layout import OutputFile, plan
from fleetgen.render.manifest import Manifest
from fleetgen.render.platform import add_ons, helm_values
from fleetgen.render.rendered import Rendered
from fleetgen.validation.reconcile import reconcile_findings
from fleetgen.workflows.tree_files import render_files

CHARTS = REPO / "tests" / "charts"
Build = Callable[[Path], list[dict[str, Any]]]


def example(engine: str = "flux", **platform: Any) -> Fleet:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["gitops"]["engine"] = engine
    if platform:
        data["platform"] = platform
    return Fleet.model_validate(data)


def write_tree(fleet: Fleet, root: Path) -> None:
    for path, content in render_files(fleet).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def objects_of(fleet: Fleet, index: int, folder: str) -> list[dict[str, Any]]:
    name = fleet.clusters[index].name
    return [m.body for f in plan(fleet) if f.path.startswith(f"clusters/{name}/{folder}/") for m in f.manifests if "metadata" in m.body]


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_every_synced_folder_builds_with_kustomize_and_reconciles(engine: str, kustomize: Build, tmp_path: Path) -> None:
    fleet = example(engine)
    assert reconcile_findings(fleet, plan(fleet)) == []
    write_tree(fleet, tmp_path)
    for index, cluster in enumerate(fleet.clusters):
        if engine == "flux":
            entry = kustomize(tmp_path / "clusters" / cluster.name / "flux-system")
        else:  # the hub's bootstrap folder, and the root its ApplicationSet generates for the cluster (tests/test_argocd.py)
            entry = kustomize(tmp_path / "argocd") + [m.body for m in Rendered(fleet).entry_point(index) if m.source == ("clusters", index)]
        platform = kustomize(tmp_path / "clusters" / cluster.name / "platform")
        synced = [b["spec"]["path"] for b in entry if b["kind"] == "Kustomization"]
        synced += [b["spec"]["source"]["path"] for b in entry + platform if b["kind"] == "Application" and "path" in b["spec"]["source"]]
        assert synced, cluster.name
        for path in synced:
            assert kustomize(tmp_path / path.removeprefix("./")), path  # the folder the engine syncs builds
        kinds = {b["kind"] for b in platform}
        assert kinds >= ({"HelmRelease", "HelmRepository", "OCIRepository"} if engine == "flux" else {"Application"})


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_gitops_objects_pass_their_upstream_crds(engine: str, crd_schemas: dict[tuple[str, str], dict[str, Any]]) -> None:
    fleet = example(engine, prometheusOperatorCrds={"enabled": True})
    checked = set()
    for index in range(len(fleet.clusters)):
        for manifest in Rendered(fleet).entry_point(index):
            body = manifest.body
            key = (body["apiVersion"], body["kind"])
            if body["apiVersion"] == "v1":
                continue
            errors = [e.message for e in jsonschema_rs.validator_for(crd_schemas[key]).iter_errors(body)]
            assert errors == [], (key, body["metadata"]["name"])
            checked.add(body["kind"])
    expected = {"HelmRelease", "HelmRepository", "OCIRepository", "Kustomization", "GitRepository"}
    assert checked == (expected if engine == "flux" else {"Application"})  # the hub's AppProjects: tests/test_argocd.py


def _undeclared(values: Any, chart: Any, read: set[str], at: str = "") -> list[str]:
    """Keys of `values` the chart's values.yaml does not declare (below an empty map anything goes) and its templates
    do not read either (`read`: the `.Values.` paths of the templates; some charts read keys their values.yaml leaves out)."""
    if not isinstance(values, dict) or chart == {}:
        return []
    if not isinstance(chart, dict):
        return [at]
    out = []
    for k, v in values.items():
        if k in chart:
            out += _undeclared(v, chart[k], read, f"{at}.{k}")
        elif f"{at}.{k}" not in read:
            out.append(f"{at}.{k}")
    return out


def _read_by_templates(folder: Path) -> set[str]:
    return {
        "." + m
        for t in folder.glob("templates/**/*")
        if t.is_file()
        for m in re.findall(r"\.Values\.([A-Za-z0-9_.]+)", t.read_text(encoding="utf-8"))
    }


def test_values_keys_exist_in_the_charts_values_yaml() -> None:
    fleet = example()
    charts = {"gpuOperator": "gpu-operator", "kueue": "kueue", "volcano": "volcano", "jupyterhub": "jupyterhub"}
    for index in range(len(fleet.clusters)):
        for name, addon, _ in add_ons(fleet, index):
            declared = yaml.safe_load((CHARTS / charts[name] / "values.yaml").read_text(encoding="utf-8"))
            assert addon.version.removeprefix("v") in (CHARTS / "SOURCES.md").read_text(), "vendored values are of the pinned chart"
            read = _read_by_templates(CHARTS / charts[name])
            assert _undeclared(helm_values(fleet, index, name, addon), declared, read) == []


def test_driver_comes_from_the_version_set_and_the_upgrade_policy_is_bounded() -> None:
    fleet = example(gpuOperator={"driverUpgrade": {"maxParallelUpgrades": 2}})
    for index, cluster in enumerate(fleet.clusters):
        gpu = next(
            b for b in objects_of(fleet, index, "platform") if b["kind"] == "HelmRelease" and b["metadata"]["name"] == "gpu-operator"
        )
        driver = gpu["spec"]["values"]["driver"]
        assert driver["version"] == str(fleet.version_sets[cluster.version_set].driver)
        assert driver["upgradePolicy"]["maxParallelUpgrades"] == 2 and driver["upgradePolicy"]["drain"]["enable"] is True
        assert gpu["spec"]["values"]["dcgmExporter"]["enabled"] is True
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        example(gpuOperator={"driverUpgrade": {"maxParallelUpgrades": 0}})


def test_crds_first_then_the_add_ons_that_use_them() -> None:
    fleet = example(prometheusOperatorCrds={"enabled": True})
    releases = {b["metadata"]["name"]: b for b in objects_of(fleet, 0, "platform") if b["kind"] == "HelmRelease"}
    assert list(releases) == ["prometheus-operator-crds", "kueue", "gpu-operator"]
    assert releases["gpu-operator"]["spec"]["dependsOn"] == [{"name": "prometheus-operator-crds"}]
    assert "dependsOn" not in releases["prometheus-operator-crds"]["spec"]
    sync = {b["metadata"]["name"]: b for b in objects_of(fleet, 0, "flux-system") if b["kind"] == "Kustomization"}
    waited = [c["name"] for c in sync["platform"]["spec"]["healthChecks"] if c["kind"] == "HelmRelease"]
    assert waited == list(releases) and sync["contoso-ai"]["spec"]["dependsOn"] == [{"name": "platform"}]


def test_cluster_override_replaces_only_what_it_writes() -> None:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["platform"] = {"gpuOperator": {"driverUpgrade": {"maxParallelUpgrades": 3}}}
    data["clusters"][0]["platform"] = {"gpuOperator": {"driverUpgrade": {"drain": {"timeoutSeconds": 900}}}, "kueue": {"enabled": False}}
    fleet = Fleet.model_validate(data)
    first = {name: addon for name, addon, _ in add_ons(fleet, 0)}
    assert "kueue" not in first and "kueue" in {name for name, _, _ in add_ons(fleet, 1)}
    policy = first["gpuOperator"].driver_upgrade  # type: ignore[attr-defined]
    assert (policy.max_parallel_upgrades, policy.drain.timeout_seconds, policy.drain.enabled) == (3, 900, True)


def test_a_driver_the_operator_release_does_not_support_is_an_error() -> None:
    assert driver_findings(example()) == []
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["versionSets"]["prod-2024q4"]["driver"] = "560.35.03"
    (finding,) = driver_findings(Fleet.model_validate(data))
    assert finding.path == ("versionSets", "prod-2024q4", "driver")
    assert "driver 560.35.03 is not supported by GPU Operator v24.3.0" in finding.message
    newer = example(gpuOperator={"version": "v24.9.2"})
    assert {f.path[1] for f in driver_findings(newer)} == {"prod-2024q4", "dev-2024q4"}
    unknown = driver_findings(example(gpuOperator={"version": "v99.1.0"}))
    assert unknown and {f.severity.value for f in unknown} == {"warning"}


def test_operator_facts_rows_name_their_source_and_default() -> None:
    for row in operator_facts().releases:
        assert row.default in row.drivers and row.url.startswith("https://docs.nvidia.com/") and row.source
    release = operator_release("v24.3.0")
    assert release is not None and Version("550.54.15") in release.drivers


def _kustomization(path: str, resources: list[str]) -> OutputFile:
    return OutputFile(
        path, (Manifest({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources}, ()),)
    )


def _flux(path: str, *bodies: dict[str, Any]) -> OutputFile:
    return OutputFile(path, tuple(Manifest(b, ()) for b in bodies))


def _ks(name: str, path: str, depends: list[str]) -> dict[str, Any]:
    spec = {"path": path, "dependsOn": [{"name": d} for d in depends]}
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": {"name": name}, "spec": spec}


def test_reconcile_finds_missing_folders_missing_dependencies_and_cycles() -> None:
    fleet = example()
    name = fleet.clusters[0].name
    others = [f for f in plan(fleet) if not f.path.startswith(f"clusters/{name}/flux-system/")]
    sync = _flux(
        f"clusters/{name}/flux-system/sync.yaml",
        _ks("a", "./infrastructure/kueue", ["b"]),
        _ks("b", f"./clusters/{name}", ["a"]),
        _ks("c", f"./clusters/{name}/platform", ["nowhere"]),
    )
    broken = _kustomization(f"clusters/{name}/platform/kustomization.yaml", ["platform.yaml", "missing.yaml"])
    files = [f for f in others if f.path != broken.path] + [sync, broken]
    messages = [f.message for f in reconcile_findings(fleet, files)]
    assert (
        f"{name}: Flux Kustomization a: path ./infrastructure/kueue: infrastructure/kueue has no kustomization.yaml in the rendered tree"
        in messages
    )
    assert any("lists missing.yaml, which the rendered tree does not have" in m for m in messages)
    assert f"{name}: Kustomization c dependsOn nowhere, which this cluster does not get" in messages
    assert f"{name}: Kustomizations depend on each other in a cycle: a -> b -> a" in messages
    assert {f.path for f in reconcile_findings(fleet, files)} == {("gitops",)}


def test_platform_files_are_deterministic() -> None:
    fleet = example("argocd")
    first = dump_documents([m.body for m in Rendered(fleet).entry_point(0)], "fleet.yaml")
    assert first == dump_documents([m.body for m in Rendered(example("argocd")).entry_point(0)], "fleet.yaml")


def test_driver_wave_changes_the_driver_of_exactly_that_waves_clusters() -> None:
    from fleetgen.checks.load import load_fleet_text
    from fleetgen.upgrade.apply import apply_wave

    before = load_fleet_text(EXAMPLE.read_bytes())
    after_text = apply_wave(before, 1, {"driver": Version("550.90.07")}, datetime.datetime(2026, 11, 24, 9, tzinfo=datetime.UTC))
    after = load_fleet_text(after_text.encode()).fleet
    wave = after.upgrade.waves[0] if after.upgrade else None
    assert wave is not None
    old, new = render_files(before.fleet), render_files(after)
    changed = sorted(p for p in new if p.endswith("platform/platform.yaml") and old.get(p) != new[p])
    assert changed == [f"clusters/{c}/platform/platform.yaml" for c in sorted(wave.clusters)]
    for c in wave.clusters:
        assert "version: 550.90.07" in new[f"clusters/{c}/platform/platform.yaml"].decode()

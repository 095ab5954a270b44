"""The add-on charts with fleetgen's values, through the real `helm template`: every value lands where it acts.

fleetgen never runs helm; Flux's helm-controller and Argo CD's repo server do, with the values of the
HelmRelease (`spec.values`) or Application (`spec.source.helm.valuesObject`) render writes. These
tests hand exactly those values to `helm template` of the chart versions fleetgen pins, kept in
tests/charts (SOURCES.md), and look for every value fleetgen sets in the object that acts on it: the
GPU Operator's ClusterPolicy (driver version, upgrade policy, the DCGM exporter and its
ServiceMonitor), Kueue's manager ConfigMap (the controller's Configuration) and ServiceMonitor,
Volcano's scheduler ConfigMap. A value no test maps to an object fails `test_every_value_lands`.

The charts also prove the platform layer complete: every custom resource kind a cluster's tree uses is
defined, at the version the tree uses, by a CRD of the add-on chart installed on that cluster.

helm is not on PyPI: `bash scripts/install_helm.sh` (which .ci/run calls) puts it at .tools/bin/helm;
FLEETGEN_HELM=PATH names another. Without one these tests skip and say so.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import EXAMPLE, REPO, skip_without

from fleetgen.checks.load import load_fleet
from fleetgen.model import Fleet
from fleetgen.model.platform import ADD_ONS, Platform
from fleetgen.render.platform import RELEASES, add_ons, helm_values
from fleetgen.render.rendered import Rendered
from fleetgen.render.volcano_scheduler import scheduler_configuration

CHARTS = REPO / "tests" / "charts"
# (chart, pinned version) -> its folder under tests/charts; SOURCES.md says where each comes from.
CHART_FOLDERS = {
    ("kueue", "0.19.2"): "kueue",
    ("gpu-operator", "v24.3.0"): "gpu-operator",
    ("gpu-operator", "v25.10.1"): "gpu-operator-v25.10.1",
    ("gpu-operator", "v26.7.0"): "gpu-operator-v26.7.0",
    ("volcano", "1.15.1"): "volcano",
    ("jupyterhub", "4.4.0"): "jupyterhub",
}
# Which add-on's chart brings the CRDs of an API group; the GitOps engine brings its own.
CRD_GROUPS = {
    "kueue.x-k8s.io": "kueue",
    "scheduling.volcano.sh": "volcano",
    "batch.volcano.sh": "volcano",
    "monitoring.coreos.com": "prometheusOperatorCrds",
    "external-secrets.io": "externalSecrets",
}
ENGINE_GROUPS = {
    "flux": {"source.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io"},
    "argocd": {"argoproj.io"},
}
Objects = list[dict[str, Any]]


def _helm_binary() -> str | None:
    given = os.environ.get("FLEETGEN_HELM")
    if given:
        return given
    beside = REPO / ".tools" / "bin" / "helm"
    return str(beside) if beside.is_file() else shutil.which("helm")


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str, str, dict[str, Any], str], Objects]:
    binary = _helm_binary()
    if binary is None:
        skip_without("helm", "no helm binary: run `bash scripts/install_helm.sh` (.tools/bin/helm) or set FLEETGEN_HELM")
    home = tmp_path_factory.mktemp("helm-home")  # helm's config, cache and data: never the user's
    env = {**os.environ, **{f"HELM_{kind}_HOME": str(home / kind.lower()) for kind in ("CONFIG", "CACHE", "DATA")}}
    done: dict[str, Objects] = {}

    def template(folder: str, release: str, namespace: str, values: dict[str, Any], kube_version: str) -> Objects:
        """`helm template` of the vendored chart with these values (CRDs included, as Flux's CreateReplace installs them)."""
        key = json.dumps([folder, release, namespace, values, kube_version], sort_keys=True)
        if key not in done:
            values_file = home / f"values-{len(done)}.yaml"
            values_file.write_text(yaml.safe_dump(values), encoding="utf-8")
            args = [binary, "template", release, str(CHARTS / folder), "--namespace", namespace, "--include-crds"]
            args += ["--kube-version", kube_version, "--values", str(values_file)]
            run = subprocess.run(args, capture_output=True, text=True, check=False, env=env, timeout=120)
            assert run.returncode == 0, run.stderr
            # libyaml's loader: the charts' CRDs are megabytes, ten times slower through the pure-Python one
            done[key] = [doc for doc in yaml.load_all(run.stdout, Loader=yaml.CSafeLoader) if doc]
        return done[key]

    return template


def example(engine: str = "flux", **platform: Any) -> Fleet:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["gitops"]["engine"] = engine
    data.setdefault("platform", {}).update(platform)
    return Fleet.model_validate(data)


def one(objects: Objects, kind: str, name: str) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def at(body: Any, pointer: tuple[str, ...]) -> Any:
    for key in pointer:
        body = body[key]
    return body


def leaves(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(values, dict) and values:
        for key, value in values.items():
            yield from leaves(value, (*path, key))
    else:
        yield path, values


# Where each value fleetgen sets acts, per chart: (values prefix, what the chart made of it given the objects).
# A leaf below a prefix must equal the same rest below the object's pointer; a `parse` entry reads YAML text.
Lands = tuple[tuple[str, ...], Callable[[Objects, str], Any], bool]


def _cluster_policy(pointer: tuple[str, ...]) -> Callable[[Objects, str], Any]:
    return lambda objects, release: at(one(objects, "ClusterPolicy", "cluster-policy"), pointer)


def _config_map(name: str) -> Callable[[Objects, str], Any]:
    return lambda objects, release: one(objects, "ConfigMap", name)["data"]


def _hub_values(objects: Objects, release: str) -> Any:
    return yaml.safe_load(base64.b64decode(one(objects, "Secret", "hub")["data"]["values.yaml"]))


LANDS: dict[str, tuple[Lands, ...]] = {
    "gpuOperator": (
        # partitioning: the chart creates the ConfigMap (create, data) and names it in the ClusterPolicy (name, default)
        (("devicePlugin", "config", "create"), lambda objects, release: any(o["kind"] == "ConfigMap" for o in objects), False),
        (("devicePlugin", "config", "data"), _config_map("time-slicing-config"), False),
        (("devicePlugin",), _cluster_policy(("spec", "devicePlugin")), False),
        (("migManager", "config", "create"), lambda objects, release: any(o["kind"] == "ConfigMap" for o in objects), False),
        (("migManager", "config", "data"), _config_map("fleetgen-mig-config"), False),
        (("migManager",), _cluster_policy(("spec", "migManager")), False),
        (("mig",), _cluster_policy(("spec", "mig")), False),
        # one NVIDIADriver per node pool: the ClusterPolicy hands the driver to them, and the chart's default one stays out
        (("driver", "nvidiaDriverCRD", "enabled"), _cluster_policy(("spec", "driver", "useNvidiaDriverCRD")), False),
        (
            ("driver", "nvidiaDriverCRD", "deployDefaultCR"),
            lambda objects, release: any(o["kind"] == "NVIDIADriver" for o in objects),
            False,
        ),
        (("driver",), _cluster_policy(("spec", "driver")), False),
        (("dcgmExporter",), _cluster_policy(("spec", "dcgmExporter")), False),
    ),
    "kueue": (
        # enablePrometheus: the chart's ServiceMonitor of the controller's metrics, off beside fleetgen's own
        (("enablePrometheus",), lambda objects, release: any(o["kind"] == "ServiceMonitor" for o in objects), False),
        (
            ("managerConfig", "controllerManagerConfigYaml"),
            lambda objects, release: one(objects, "ConfigMap", f"{release}-manager-config")["data"]["controller_manager_config.yaml"],
            True,
        ),
    ),
    # zero-to-jupyterhub hands the hub its whole configuration as the values.yaml of Secret `hub`, which the hub's
    # jupyterhub_config.py reads (profile_list from singleuser.profileList, custom.* for extraConfig, extraConfig itself).
    "jupyterhub": (((), _hub_values, False),),
    "volcano": (
        (
            ("custom", "scheduler_config_override"),
            lambda objects, release: one(objects, "ConfigMap", f"{release}-scheduler-configmap")["data"]["volcano-scheduler.conf"],
            True,
        ),
    ),
}


def _landed(name: str, values: dict[str, Any], objects: Objects, release: str) -> list[str]:
    """Each leaf of `values` not found where LANDS says it acts (or not mapped at all)."""
    missing = []
    for path, leaf in leaves(values):
        rule = next((r for r in LANDS.get(name, ()) if path[: len(r[0])] == r[0]), None)
        if rule is None:
            missing.append(f"{'.'.join(path)}: no object of the chart is known to act on it (add it to LANDS)")
            continue
        prefix, made, parse = rule
        found = made(objects, release)
        if parse:
            mine, theirs = yaml.safe_load(leaf), yaml.safe_load(found)
            # The chart may add what it decides itself (Kueue: internalCertManagement); everything fleetgen wrote must be there.
            lost = {k: v for k, v in mine.items() if theirs.get(k) != v}
            if lost:
                missing.append(f"{'.'.join(path)}: {sorted(lost)} not as fleetgen wrote them in the chart's object")
            continue
        try:
            landed = at(found, path[len(prefix) :]) if isinstance(found, dict) else found
        except KeyError:
            landed = "<absent>"
        if landed != leaf:
            missing.append(f"{'.'.join(path)}: {leaf!r} set, {landed!r} in the chart's object")
    return missing


def _rendered_values(fleet: Fleet, index: int) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """add-on name -> (chart folder, namespace, the values of the object render wrote for the engine)."""
    entry = [m.body for m in Rendered(fleet).entry_point(index)]
    out = {}
    for name, addon, _ in add_ons(fleet, index):
        release = RELEASES[name]
        if fleet.gitops.engine == "flux":
            values = one(entry, "HelmRelease", release)["spec"]["values"]
        else:
            values = one(entry, "Application", f"{release}-{fleet.clusters[index].name}")["spec"]["source"]["helm"]["valuesObject"]
        assert values == helm_values(fleet, index, name, addon)
        folder = CHART_FOLDERS.get((addon.chart, addon.version))
        if values:  # a chart fleetgen sets nothing for (the CRD-only chart) is not templated here
            assert folder, f"{addon.chart} {addon.version} is pinned but not vendored in tests/charts"
            out[name] = (folder, addon.namespace, values)
    return out


def test_every_pinned_chart_is_vendored_with_its_source() -> None:
    sources = (CHARTS / "SOURCES.md").read_text(encoding="utf-8")
    pinned = {(getattr(Platform(), attr).chart, getattr(Platform(), attr).version) for _, attr in ADD_ONS}
    example_fleet = example()
    pinned |= {(a.chart, a.version) for i in range(len(example_fleet.clusters)) for _, a, _ in add_ons(example_fleet, i)}
    per_pool = load_fleet(REPO / "tests" / "cases" / "pool-drivers" / "fleet.yaml").fleet  # the release with a driver per pool
    pinned |= {(a.chart, a.version) for _, a, _ in add_ons(per_pool, 0)}
    pinned.discard((Platform().prometheus_operator_crds.chart, Platform().prometheus_operator_crds.version))  # CRDs only: no values
    pinned.discard((Platform().external_secrets.chart, Platform().external_secrets.version))  # no values; its kinds: chart_kinds.yaml
    assert pinned == set(CHART_FOLDERS)
    for (chart, version), folder in CHART_FOLDERS.items():
        assert (CHARTS / folder / "Chart.yaml").is_file(), folder
        assert yaml.safe_load((CHARTS / folder / "Chart.yaml").read_text(encoding="utf-8"))["name"] == chart
        assert f"| {folder}/ |" in sources and f"| {version} |" in sources, f"SOURCES.md has no row for {folder} ({version})"


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_every_value_lands_in_the_object_that_acts_on_it(engine: str, helm: Any) -> None:
    fleet = example(engine)
    templated = set()
    for index, cluster in enumerate(fleet.clusters):
        kube = str(fleet.version_sets[cluster.version_set].kubernetes)
        for name, (folder, namespace, values) in _rendered_values(fleet, index).items():
            objects = helm(folder, RELEASES[name], namespace, values, kube)
            assert _landed(name, values, objects, RELEASES[name]) == [], (cluster.name, name)
            templated.add(name)
    assert templated == {"kueue", "gpuOperator", "volcano", "jupyterhub"}  # Volcano on training-eastus only, JupyterHub on dev-eastus


def test_the_default_pins_take_the_values_too(helm: Any) -> None:
    """The chart versions a fleet gets without a `platform:` of its own (the example pins an older GPU Operator)."""
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    del data["platform"]
    fleet = Fleet.model_validate(data)
    index = [c.name for c in fleet.clusters].index("training-eastus")
    kube = str(fleet.version_sets[fleet.clusters[index].version_set].kubernetes)
    for name, (folder, namespace, values) in _rendered_values(fleet, index).items():
        assert _landed(name, values, helm(folder, RELEASES[name], namespace, values, kube), RELEASES[name]) == [], name


def test_each_setting_changes_its_object(helm: Any) -> None:
    """Not only the defaults: a changed fleet.yaml value is the changed value in the object that acts on it."""
    fleet = example(
        gpuOperator={"version": "v24.3.0", "driverUpgrade": {"maxParallelUpgrades": 3, "maxUnavailable": "2", "drain": {"force": True}}},
        kueue={"waitForPodsReady": {"timeout": "7m", "blockAdmission": True}, "manageJobsWithoutQueueName": False, "fairSharing": False},
    )
    index = [c.name for c in fleet.clusters].index("training-eastus")
    values = _rendered_values(fleet, index)
    gpu = helm(values["gpuOperator"][0], "gpu-operator", values["gpuOperator"][1], values["gpuOperator"][2], "1.29.4")
    policy = one(gpu, "ClusterPolicy", "cluster-policy")["spec"]["driver"]
    assert policy["version"] == "550.54.15"  # prod-2024q4's driver
    upgrade = policy["upgradePolicy"]
    # A count of nodes reaches the chart as a number: the template writes it bare, and "2" is no percentage.
    assert (upgrade["maxParallelUpgrades"], upgrade["maxUnavailable"], upgrade["drain"]["force"]) == (3, 2, True)
    assert _landed("gpuOperator", values["gpuOperator"][2], gpu, "gpu-operator") == []
    kueue = helm(values["kueue"][0], "kueue", values["kueue"][1], values["kueue"][2], "1.29.4")
    config = yaml.safe_load(one(kueue, "ConfigMap", "kueue-manager-config")["data"]["controller_manager_config.yaml"])
    assert config["waitForPodsReady"] == {"timeout": "7m", "blockAdmission": True}
    assert config["manageJobsWithoutQueueName"] is False and "fairSharing" not in config
    assert "pod" in config["integrations"]["frameworks"]  # nothing unqueued is held, so Volcano's pods are safe from it
    assert _landed("kueue", values["kueue"][2], kueue, "kueue") == []


def test_a_value_in_the_wrong_place_is_caught(helm: Any) -> None:
    """The landing check itself: a key the chart ignores, or a value it overrides, is reported."""
    fleet = example()
    index = [c.name for c in fleet.clusters].index("training-eastus")
    folder, namespace, values = _rendered_values(fleet, index)["gpuOperator"]
    misplaced = {**values, "driver": {**values["driver"], "upgradePolicy": {**values["driver"]["upgradePolicy"], "drian": {}}}}
    found = _landed("gpuOperator", misplaced, helm(folder, "gpu-operator", namespace, misplaced, "1.29.4"), "gpu-operator")
    assert found == ["driver.upgradePolicy.drian: {} set, '<absent>' in the chart's object"]
    unmapped = {**values, "toolkit": {"enabled": False}}
    found = _landed("gpuOperator", unmapped, helm(folder, "gpu-operator", namespace, unmapped, "1.29.4"), "gpu-operator")
    assert found == ["toolkit.enabled: no object of the chart is known to act on it (add it to LANDS)"]


def _uses(fleet: Fleet, index: int) -> set[tuple[str, str]]:
    """(apiVersion, kind) of each custom resource the cluster's tree holds (its own folder, platform and entry point)."""
    cluster = fleet.clusters[index]
    kube = str(fleet.version_sets[cluster.version_set].kubernetes)
    used = set()
    for manifest in Rendered(fleet).objects(index) + Rendered(fleet).entry_point(index):
        body = manifest.body
        try:
            kubernetes_validate.validate({**body, "metadata": {"name": "x"}}, kube, strict=False)
        except kubernetes_validate.SchemaNotFoundError:
            used.add((body["apiVersion"], body["kind"]))
        except kubernetes_validate.ValidationError:
            pass  # a built-in kind (validated elsewhere): Kubernetes itself serves it
    return used


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_the_platform_layer_installs_every_crd_the_tree_uses(engine: str, helm: Any) -> None:
    fleet = example(engine, prometheusOperatorCrds={"enabled": True})
    for index, cluster in enumerate(fleet.clusters):
        installed = {name for name, _, _ in add_ons(fleet, index)}
        charts = _rendered_values(fleet, index)
        kube = str(fleet.version_sets[cluster.version_set].kubernetes)
        for api_version, kind in sorted(_uses(fleet, index)):
            group, version = api_version.split("/")
            if group in ENGINE_GROUPS[engine]:
                continue  # the engine that syncs the tree brings these
            add_on = CRD_GROUPS.get(group)
            assert add_on in installed, f"{cluster.name}: {kind} ({api_version}) needs {add_on or 'an add-on'}, which is not installed"
            if add_on not in charts:
                continue  # the Prometheus Operator CRD chart: fleetgen sets no values for it, and it is not vendored
            folder, namespace, values = charts[add_on]
            crds = [o for o in helm(folder, RELEASES[add_on], namespace, values, kube) if o["kind"] == "CustomResourceDefinition"]
            served = {
                (c["spec"]["group"], c["spec"]["names"]["kind"], v["name"]) for c in crds for v in c["spec"]["versions"] if v.get("served")
            }
            assert (group, kind, version) in served, f"{cluster.name}: the {add_on} chart serves no {kind} at {api_version}"
        has_volcano = cluster.volcano is not None
        assert ("volcano" in installed) is has_volcano, cluster.name


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_volcano_is_installed_before_the_queues_that_need_it(engine: str) -> None:
    fleet = example(engine)
    index = [c.name for c in fleet.clusters].index("training-eastus")
    entry = [m.body for m in Rendered(fleet).entry_point(index)]
    if engine == "flux":
        release = one(entry, "HelmRelease", "volcano")
        assert release["spec"]["chart"]["spec"]["version"] == "1.15.1" and release["spec"]["targetNamespace"] == "volcano-system"
        fleet_sync = one(entry, "Kustomization", fleet.metadata.name)
        assert fleet_sync["spec"]["dependsOn"] == [{"name": "platform"}]  # the platform folder, with Volcano, is ready first
        waited = one(entry, "Kustomization", "platform")["spec"]["healthChecks"]
        assert {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "name": "volcano", "namespace": "flux-system"} in waited
    else:
        app = one(entry, "Application", "volcano-training-eastus")
        assert int(app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) < 0
        assert app["spec"]["source"]["targetRevision"] == "1.15.1"
    for other in (i for i, c in enumerate(fleet.clusters) if c.volcano is None):
        assert "volcano" not in {name for name, _, _ in add_ons(fleet, other)}
    off = example(engine, volcano={"enabled": False})
    assert "volcano" not in {name for name, _, _ in add_ons(off, index)}  # the cluster installs it some other way


@cache
def _chart_scheduler_conf() -> dict[str, Any]:
    conf: dict[str, Any] = yaml.safe_load((CHARTS / "volcano" / "config" / "volcano-scheduler.conf").read_text(encoding="utf-8"))
    return conf


def test_volcano_scheduler_is_the_charts_with_reclaim_where_queues_are_reclaimable(helm: Any) -> None:
    fleet = example()
    cluster = next(c for c in fleet.clusters if c.volcano is not None)
    mine = scheduler_configuration(cluster)
    chart = _chart_scheduler_conf()
    assert mine["tiers"] == chart["tiers"]  # the chart's plugins: gang, proportion (weights, guarantees) ...
    assert mine["actions"] == chart["actions"] + ", reclaim"  # queues take back their guarantee from the others
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["clusters"][2]["volcano"]["reclaimable"] = False
    strict = Fleet.model_validate(data)
    assert scheduler_configuration(strict.clusters[2])["actions"] == chart["actions"]


def test_the_refresh_script_replaces_one_chart_folder_whole_and_keeps_links(tmp_path: Path) -> None:
    """scripts/refresh_charts.py, pointed at a scratch charts folder (the real one is refreshed by hand only)."""
    spec = importlib.util.spec_from_file_location("refresh_charts", REPO / "scripts" / "refresh_charts.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    upstream = tmp_path / "upstream"
    (upstream / "crd" / "bases").mkdir(parents=True)
    (upstream / "Chart.yaml").write_text("name: demo\n", encoding="utf-8")
    (upstream / "crd" / "bases" / "q.yaml").write_text("kind: CustomResourceDefinition\n", encoding="utf-8")
    (upstream / "crd" / "v1").symlink_to("bases")
    charts = tmp_path / "charts"
    (charts / "demo").mkdir(parents=True)
    (charts / "demo" / "stale.yaml").write_text("old\n", encoding="utf-8")
    (charts / "other").mkdir()
    assert script.refresh(upstream, "demo", charts) == 2
    assert sorted(p.relative_to(charts / "demo").as_posix() for p in (charts / "demo").rglob("*")) == [
        "Chart.yaml",
        "crd",
        "crd/bases",
        "crd/bases/q.yaml",
        "crd/v1",
    ]
    assert (charts / "demo" / "crd" / "v1").is_symlink() and (charts / "other").is_dir()
    for bad in ("..", "a/b", ""):
        with pytest.raises(script.RefreshError):
            script.refresh(upstream, bad, charts)
    with pytest.raises(script.RefreshError, match="no Chart.yaml"):
        script.refresh(tmp_path / "charts" / "other", "demo", charts)


PARTITIONED = {"timesliced-t4-dev": "dev-eastus", "mig-a100-inference": "inference-eastus"}


def _partitioned(case: str) -> tuple[Fleet, int]:
    fleet = load_fleet(REPO / "tests" / "cases" / case / "fleet.yaml").fleet
    return fleet, [c.name for c in fleet.clusters].index(PARTITIONED[case])


def test_the_chart_creates_the_time_slicing_configuration_the_nodes_pick(helm: Any) -> None:
    """The device plugin's ConfigMap as the pinned chart makes it, and the ClusterPolicy that points the plugin at it."""
    fleet, index = _partitioned("timesliced-t4-dev")
    folder, namespace, values = _rendered_values(fleet, index)["gpuOperator"]
    objects = helm(folder, "gpu-operator", namespace, values, "1.35.2")
    plugin = one(objects, "ClusterPolicy", "cluster-policy")["spec"]["devicePlugin"]["config"]
    assert plugin == {"name": "time-slicing-config", "default": "default"}
    config = one(objects, "ConfigMap", "time-slicing-config")
    assert config["metadata"]["namespace"] == namespace
    t4 = yaml.safe_load(config["data"]["t4-shared"])  # what a node labelled nvidia.com/device-plugin.config=t4-shared runs
    assert t4 == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {"timeSlicing": {"renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
    }
    assert yaml.safe_load(config["data"]["a10g-shared"])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 2
    assert "sharing" not in yaml.safe_load(config["data"]["default"])
    # The exporter copies a shared GPU's series for each pod holding a replica, and maps pods that hold the renamed resource.
    env = {e["name"]: e["value"] for e in one(objects, "ClusterPolicy", "cluster-policy")["spec"]["dcgmExporter"]["env"]}
    assert env["KUBERNETES_VIRTUAL_GPUS"] == "true"
    assert env["NVIDIA_RESOURCE_NAMES"] == "nvidia.com/gpu.shared"
    assert _landed("gpuOperator", values, objects, "gpu-operator") == []


def test_the_chart_creates_the_mig_layouts_the_nodes_pick(helm: Any) -> None:
    fleet, index = _partitioned("mig-a100-inference")
    folder, namespace, values = _rendered_values(fleet, index)["gpuOperator"]
    objects = helm(folder, "gpu-operator", namespace, values, "1.35.2")
    policy = one(objects, "ClusterPolicy", "cluster-policy")["spec"]
    assert policy["mig"]["strategy"] == "mixed"
    assert policy["migManager"]["config"] == {"name": "fleetgen-mig-config", "default": "all-disabled"}
    layouts = yaml.safe_load(one(objects, "ConfigMap", "fleetgen-mig-config")["data"]["config.yaml"])["mig-configs"]
    assert layouts["all-1g.10gb"][0]["mig-devices"] == {"1g.10gb": 7}  # a node labelled nvidia.com/mig.config=all-1g.10gb
    assert layouts["a100-mixed"][0]["mig-devices"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert layouts["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    env = {e["name"] for e in policy["dcgmExporter"]["env"]}
    assert "KUBERNETES_VIRTUAL_GPUS" not in env and "NVIDIA_RESOURCE_NAMES" not in env  # MIG slices are mapped per slice already
    assert _landed("gpuOperator", values, objects, "gpu-operator") == []


@pytest.mark.parametrize("case", [None, *PARTITIONED])
def test_the_exporter_exports_every_dcgm_field_the_alerts_and_panels_read(helm: Any, case: str | None) -> None:
    """The ClusterPolicy names fleetgen's metrics ConfigMap, the exporter reads its file, and the file lists every DCGM
    field a rendered rule or panel selects: the operator's default list leaves the ECC counters out; MIG slices are
    busy in DCGM_FI_PROF_GR_ENGINE_ACTIVE."""
    fleet = example() if case is None else _partitioned(case)[0]
    for index, cluster in enumerate(fleet.clusters):
        folder, namespace, values = _rendered_values(fleet, index)["gpuOperator"]
        kube = str(fleet.version_sets[cluster.version_set].kubernetes)
        exporter = one(helm(folder, "gpu-operator", namespace, values, kube), "ClusterPolicy", "cluster-policy")["spec"]["dcgmExporter"]
        objects = [m.body for m in Rendered(fleet).objects(index)]
        [config_map] = [
            o
            for o in objects
            if o["kind"] == "ConfigMap" and o["metadata"]["name"] == exporter["config"]["name"] and o["metadata"]["namespace"] == namespace
        ]
        [key] = config_map["data"]  # the operator mounts this key at /etc/dcgm-exporter/<key>
        collectors = {e["name"]: e["value"] for e in exporter["env"]}["DCGM_EXPORTER_COLLECTORS"]
        assert collectors == f"/etc/dcgm-exporter/{key}", cluster.name
        listed = {line.split(",")[0].strip() for line in config_map["data"][key].splitlines() if line and not line.startswith("#")}
        read = {
            field
            for o in objects
            if o["kind"] == "PrometheusRule" or (o["kind"] == "ConfigMap" and o["metadata"]["labels"].get("grafana_dashboard"))
            for field in re.findall(r"DCGM_FI_[A-Z0-9_]+", json.dumps(o.get("spec") or o.get("data")))
        }
        assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in read, cluster.name  # the double-bit ECC alert is rendered
        assert ("DCGM_FI_PROF_GR_ENGINE_ACTIVE" in read) == (case == "mig-a100-inference"), cluster.name
        assert read <= listed, (cluster.name, sorted(read - listed))

"""Adopting a repository written by another hand: the same access in another order or grouping, and no add-ons.

tests/import_repo rewritten as a team that never saw fleetgen might write it: each Role's rules one
(apiGroup, verb) per rule in reverse order, each NetworkPolicy's peers over several ingress rules
(no policyTypes), drivers of the 550 branch, and the platform add-ons installed from another
repository. Import must adopt it (exit 0), write a fleet.yaml that validates, and render what the
repository builds to, under the comparison check, diff and drift use. Then the same repository
installing the GPU Operator itself: import pins that release, or says which value does not validate.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import yaml
from conftest import EXAMPLE

from fleetgen.checks.load import load_fleet_text
from fleetgen.compare.object_diff import ABSENT, ObjectKey, diff_objects
from fleetgen.importer.addons import Install, infer_platform, install_changes, installs
from fleetgen.importer.build import Built
from fleetgen.importer.infer import Imported
from fleetgen.importer.verify import FLEET_INFO, modelled_view
from fleetgen.render.gitops import entry_point

ORIGINAL = Path(__file__).parent / "import_repo"
CLUSTERS = ("dev-west", "serve-east", "train-east")
FLAGS = ("--cost-center", "cc-1000", "--engine", "flux", "--repository", "https://github.com/acme/fleet-config")
VERSIONS = {  # driver, cuda, cudnn: the 550 branch, which the default GPU Operator release (v25.10.1) does not list
    "dev-west": ("550.90.07", "12.6", "9.3.0"),
    "serve-east": ("550.54.15", "12.4", "9.1.0"),
    "train-east": ("550.54.15", "12.4", "9.1.0"),
}
Run = Callable[..., CompletedProcess[str]]
Build = Callable[[Path], list[dict[str, Any]]]


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        change(doc)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def _regroup_rules(doc: dict[str, Any]) -> None:
    if doc.get("kind") == "Role":
        rules = doc["rules"]
        doc["rules"] = [{**r, "resources": r["resources"][::-1], "verbs": [v]} for r in reversed(rules) for v in r["verbs"]]


def _split_peers(doc: dict[str, Any]) -> None:
    spec = doc["spec"]
    peers = spec["ingress"][0]["from"]
    spec["ingress"] = [{"from": peers[1:][::-1]}, {"from": peers[:1]}] if len(peers) > 1 else [{"from": peers}, {"from": peers}]
    del spec["policyTypes"]


def _hand_written(repo: Path) -> None:
    shutil.copytree(ORIGINAL, repo)
    for role in repo.glob("base/rbac/*/role.yaml"):
        _rewrite(role, _regroup_rules)
    for policy in repo.glob("base/network-policies/*/network-policy.yaml"):
        _rewrite(policy, _split_peers)
    for cluster, (driver, cuda, cudnn) in VERSIONS.items():
        info = repo / "clusters" / cluster / "fleet-info.yaml"
        text = re.sub(r"driver: .*", f"driver: {driver}", info.read_text())
        text = re.sub(r"cuda: .*", f'cuda: "{cuda}"', text)
        info.write_text(re.sub(r"cudnn: .*", f"cudnn: {cudnn}", text))
    vision = repo / "base/namespaces/vision"
    (vision / "limit-range.yaml").unlink()
    (vision / "kustomization.yaml").write_text((vision / "kustomization.yaml").read_text().replace("  - limit-range.yaml\n", ""))
    (repo / "README.md").write_text("# Our fleet\n\nKueue and the GPU Operator come from the platform team's repository.\n")


def _modelled(build: Build, folder: Path) -> dict[ObjectKey, dict[str, Any]]:
    return modelled_view(build(folder))


def test_a_reordered_and_regrouped_repository_is_adopted_and_its_fleet_validates(tmp_path: Path, cli_run: Run, kustomize: Build) -> None:
    repo = tmp_path / "repo"
    _hand_written(repo)
    done = cli_run("import", str(repo), "--out", "fleet.yaml", *FLAGS)
    assert (done.returncode, done.stderr) == (0, "fleet.yaml: written\n")
    text = (tmp_path / "fleet.yaml").read_text()
    assert (
        "platform:\n"
        "  kueue:  # off: the repository installs no kueue chart (it comes some other way)\n"
        "    enabled: false\n"
        "  gpuOperator: # off: the repository installs no gpu-operator chart (it comes some other way)\n"
        "    enabled: false\n"
    ) in text
    assert "prometheusOperatorCrds" not in text  # off already
    checked = cli_run("validate", "fleet.yaml")
    assert checked.returncode == 0, checked.stderr

    assert cli_run("render", "fleet.yaml").returncode == 0
    assert not list(tmp_path.glob("clusters/*/platform"))  # no add-on is installed from this tree
    regrouped = 0
    for cluster in CLUSTERS:
        before, after = _modelled(kustomize, repo / "clusters" / cluster), _modelled(kustomize, tmp_path / "clusters" / cluster)
        after[FLEET_INFO] = {"data": {k: v for k, v in after[FLEET_INFO]["data"].items() if k in before[FLEET_INFO]["data"]}}
        assert diff_objects(before, after) == [], cluster
        assert len(before) > 20
        # the objects are written differently: equal only as Kubernetes reads them
        regrouped += sum(before[k] != after[k] for k in before if k.kind in ("Role", "NetworkPolicy"))
    # every team's NetworkPolicy on every cluster it runs on (4 + 3 + 4 teams); the Roles are adopted as written (tenancy.role)
    assert regrouped == 11


def _installing_the_gpu_operator(repo: Path, version: str) -> None:
    """The repository also installs the GPU Operator on every cluster, with a Flux HelmRelease of its own."""
    platform = repo / "base/platform"
    platform.mkdir(parents=True, exist_ok=True)
    (platform / "kustomization.yaml").write_text("resources:\n  - gpu-operator.yaml\n")
    (platform / "gpu-operator.yaml").write_text(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: nvidia, namespace: flux-system}\n"
        "spec: {interval: 1h, url: https://helm.ngc.nvidia.com/nvidia}\n---\n"
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: gpu-operator, namespace: flux-system}\n"
        "spec:\n  interval: 1h\n  releaseName: gpu-operator\n  targetNamespace: gpu-operator\n"
        f"  chart: {{spec: {{chart: gpu-operator, version: '{version}', sourceRef: {{kind: HelmRepository, name: nvidia}}}}}}\n"
        "  values: {dcgmExporter: {enabled: true}}\n"
    )
    for cluster in CLUSTERS:
        overlay = repo / "clusters" / cluster / "kustomization.yaml"
        text = overlay.read_text()
        if "base/platform" not in text:
            overlay.write_text(text.replace("resources:\n", "resources:\n  - ../../base/platform\n", 1))


def test_a_repository_that_installs_the_gpu_operator_gets_that_release_pinned(tmp_path: Path, cli_run: Run) -> None:
    repo = tmp_path / "repo"
    _hand_written(repo)
    _installing_the_gpu_operator(repo, "v24.3.0")
    done = cli_run("import", str(repo), "--out", "fleet.yaml", *FLAGS)
    assert (done.returncode, done.stderr) == (0, "fleet.yaml: written\n")  # the HelmRelease and its source are fleet.yaml's now
    text = (tmp_path / "fleet.yaml").read_text()
    assert "  gpuOperator: # from base/platform/gpu-operator.yaml\n    version: v24.3.0\n" in text
    assert cli_run("validate", "fleet.yaml").returncode == 0

    # a range is not a pin: the newest release fleetgen knows that supports the drivers, said in a comment
    _installing_the_gpu_operator(repo, "24.x")
    done = cli_run("import", str(repo), "--out", "fleet.yaml", "--force", *FLAGS)
    assert done.returncode == 1  # the rendered release pins v24.3.0, not the range: reported at its field
    assert "HelmRelease flux-system/gpu-operator: the imported fleet renders it differently: version: 24.x -> v24.3.0" in done.stderr
    text = (tmp_path / "fleet.yaml").read_text()
    assert (
        "    version: v24.3.0  # the repository asks for '24.x': import pinned the newest GPU Operator release fleetgen knows "
        "that supports 550.54.15, 550.90.07\n"
    ) in text
    assert cli_run("validate", "fleet.yaml").returncode == 0

    # a release that does not support the drivers: written as found, and import says which value validate rejects
    _installing_the_gpu_operator(repo, "v25.10.1")
    done = cli_run("import", str(repo), "--out", "fleet.yaml", "--force", *FLAGS)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[-1] == "import: 0 unmodelled, 0 not reproduced, 2 not valid"
    assert any(
        re.fullmatch(
            r"fleet\.yaml:\d+:\d+: versionSets\.production\.driver: driver 550\.54\.15 is not supported by GPU Operator v25\.10\.1 "
            r"\(used on serve-east, train-east\); its 25\.10 releases support .*: import could not infer a value that validates",
            line,
        )
        for line in lines
    ), lines
    checked = cli_run("validate", "fleet.yaml")
    assert checked.returncode == 1 and "versionSets.production.driver: driver 550.54.15 is not supported" in checked.stderr


# --- reading installs, and what verify compares of them -----------------------------------------


def _built(text: str) -> list[Built]:
    return [Built(doc, "clusters/a/platform.yaml") for doc in yaml.safe_load_all(text)]


FLUX_OCI_AND_ARGO = """
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: kueue-charts, namespace: flux-system}
spec: {url: oci://registry.k8s.io/kueue/charts/kueue, ref: {tag: 0.14.1}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: kueue, namespace: flux-system}
spec: {targetNamespace: kueue-system, chartRef: {kind: OCIRepository, name: kueue-charts}}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: crds, namespace: argocd}
spec:
  destination: {name: a, namespace: monitoring}
  sources:
    - {repoURL: https://github.com/acme/values, path: crds}
    - repoURL: ghcr.io/prometheus-community/charts
      chart: prometheus-operator-crds
      targetRevision: 31.0.0
      helm: {values: "crds: {enabled: true}"}
"""


def test_installs_are_read_from_flux_helm_releases_and_argo_cd_applications() -> None:
    found = installs(_built(FLUX_OCI_AND_ARGO))
    assert sorted(found) == ["kueue", "prometheusOperatorCrds"]
    assert found["kueue"].settings() == {
        "releaseName": "kueue-system-kueue",  # Flux's default: the target namespace, then the release's name
        "chart": "kueue",
        "version": "0.14.1",
        "repository": "oci://registry.k8s.io/kueue/charts",
        "namespace": "kueue-system",
        "values": {},
    }
    assert found["kueue"].objects == (
        ObjectKey("HelmRelease", "flux-system", "kueue"),
        ObjectKey("OCIRepository", "flux-system", "kueue-charts"),
    )
    crds = found["prometheusOperatorCrds"]
    assert (crds.release, crds.repository, crds.version, crds.values) == (
        "crds",
        "oci://ghcr.io/prometheus-community/charts",  # Argo CD writes an OCI registry without its scheme
        "31.0.0",
        {"crds": {"enabled": True}},
    )


def test_verify_reports_the_install_settings_and_chart_values_the_fleet_does_not_reproduce() -> None:
    fleet = load_fleet_text(EXAMPLE.read_bytes()).fleet  # its GPU Operator: v24.3.0 from NVIDIA's repository
    rendered = [m.body for m in entry_point(fleet, 0)]
    original = _built(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: nvidia, namespace: flux-system}\n"
        "spec: {url: https://helm.ngc.nvidia.com/nvidia/}\n---\n"
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: nvidia-gpu-operator, namespace: gpu-operator}\n"
        "spec:\n  chart: {spec: {chart: gpu-operator, version: v24.3.0, sourceRef: {kind: HelmRepository, name: nvidia, namespace: flux-system}}}\n"
        "  values: {toolkit: {enabled: false}, dcgmExporter: {enabled: true}}\n"
    )
    kueue, change = install_changes(original, rendered)
    assert (kueue.title, kueue.state) == ("HelmRelease flux-system/kueue", "added")  # the example installs Kueue, the repository not
    assert (change.title, change.state) == ("HelmRelease gpu-operator/nvidia-gpu-operator", "changed")
    assert [(f.path, f.old, f.new) for f in change.fields] == [
        ("releaseName", "nvidia-gpu-operator", "gpu-operator"),  # a new Helm release: the chart installed again
        ("values.toolkit", {"enabled": False}, ABSENT),  # a value fleetgen does not set; those it adds are not compared
    ]
    assert [c.state for c in install_changes([], rendered)] == ["added", "added"]  # Kueue and the GPU Operator


def test_an_add_on_one_cluster_installs_is_its_own_and_off_for_the_fleet() -> None:
    found = installs(_built(FLUX_OCI_AND_ARGO))
    out = Imported({"clusters": [{"name": "a"}, {"name": "b"}, {"name": "c"}]})
    platform = infer_platform(out, [found, {}, {}], ["a", "b", "c"], ["550.54.15"] * 3)
    assert platform == {"kueue": {"enabled": False}, "gpuOperator": {"enabled": False}, "volcano": {"enabled": False}}
    assert out.document["clusters"][0]["platform"] == {
        "prometheusOperatorCrds": {"enabled": True, "version": "31.0.0"},
        "kueue": {"enabled": True, "version": "0.14.1"},
    }
    assert "platform" not in out.document["clusters"][1]
    assert out.notes[("clusters", 0, "platform", "kueue")] == "from clusters/a/platform.yaml"
    assert out.notes[("platform", "gpuOperator")] == "off: the repository installs no gpu-operator chart (it comes some other way)"


def test_a_version_range_is_not_guessed_but_left_to_fill_in() -> None:
    found = installs(_built(FLUX_OCI_AND_ARGO.replace("ref: {tag: 0.14.1}", "ref: {semver: '>=0.14'}")))
    out = Imported({"clusters": [{"name": "a"}]})
    platform = infer_platform(out, [found], ["a"], ["550.54.15"])
    assert platform["kueue"] == {"version": "TODO(import)"}
    assert (
        out.notes[("platform", "kueue", "version")]
        == "TODO(import): kueue version unknown: the repository asks for '>=0.14'; pin one exact release"
    )
    assert out.placeholders[("platform", "kueue", "version")] == "0.19.2"  # the default stands in to render and compare
    # the GPU Operator: the newest release that supports the driver, unless none does
    operator = Install(
        "gpuOperator", "gpu-operator", "gpu-operator", "v24.x", "https://helm.ngc.nvidia.com/nvidia", "gpu-operator", {}, "f"
    )
    chosen = Imported({"clusters": [{"name": "a"}]})
    assert infer_platform(chosen, [{"gpuOperator": operator}], ["a"], ["550.90.07"])["gpuOperator"] == {"version": "v24.6.1"}
    none = Imported({"clusters": [{"name": "a"}]})
    assert infer_platform(none, [{"gpuOperator": operator}], ["a"], ["999.1.1"])["gpuOperator"] == {"version": "TODO(import)"}
    assert none.notes[("platform", "gpuOperator", "version")] == (
        "TODO(import): gpuOperator version unknown: the repository asks for 'v24.x', "
        "and no GPU Operator release in gpu_operator.yaml supports 999.1.1; pin one exact release"
    )

"""Refresh a Helm chart kept in tests/charts from an upstream checkout, and the cluster-scoped kinds of the charts.

    python scripts/refresh_charts.py --from ~/src/kueue/charts/kueue --into kueue
    python scripts/refresh_charts.py --from ~/src/gpu-operator/deployments/gpu-operator --into gpu-operator-v25.10.1
    python scripts/refresh_charts.py --kinds-only

Check the upstream repository out at the release tag of the chart version fleetgen pins first
(`git -C ~/src/kueue checkout v0.19.2`). The chart folder FROM (it must hold a Chart.yaml) then
replaces tests/charts/INTO whole: files, folders and symbolic links as upstream has them, subcharts
under charts/ included, so `helm template` renders the same objects without reaching any network.
Only a folder directly under tests/charts is ever replaced. Record the version, tag, commit and path
in tests/charts/SOURCES.md and the folder in CHART_FOLDERS of tests/test_helm_charts.py in the same
commit.

Then (or alone, with --kinds-only) it writes fleetgen/compat/chart_kinds.yaml: the cluster-scoped kinds
each vendored chart creates, found by `helm template` of the chart (CRDs included) with no values and
with every set of values fleetgen renders for the example fleet.yaml, with the default pins, with
the node image bringing the driver, and with GPU Operator v26.7 managing the driver per node pool. The
platform AppProject allows exactly those kinds. A kind's scope comes from a CRD in the chart's own
output or from the Kubernetes kinds listed below; a kind known to neither stops the script. The
tests run the same derivation and fail while the file lacks a kind. Needs helm (FLEETGEN_HELM, else
.tools/bin/helm, else PATH). Run by hand, never by the tests. Exit 0 when done, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
CHARTS = REPO / "tests" / "charts"
KINDS_FILE = REPO / "fleetgen" / "compat" / "chart_kinds.yaml"
GroupKind = tuple[str, str]

# Kubernetes' own kinds by scope (`kubectl api-resources --namespaced=false` / `=true` of Kubernetes 1.35;
# https://kubernetes.io/docs/reference/kubernetes-api/). A chart object of a kind in neither list, and
# defined by no CRD of the chart, stops the derivation: its scope must be looked up, never guessed.
BUILTIN_CLUSTER_KINDS: frozenset[GroupKind] = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("certificates.k8s.io", "ClusterTrustBundle"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("networking.k8s.io", "IngressClass"),
        ("networking.k8s.io", "IPAddress"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("node.k8s.io", "RuntimeClass"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceSlice"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("storage.k8s.io", "VolumeAttributesClass"),
    }
)
BUILTIN_NAMESPACED_KINDS: frozenset[GroupKind] = frozenset(
    {
        ("", "ConfigMap"),
        ("", "Endpoints"),
        ("", "LimitRange"),
        ("", "PersistentVolumeClaim"),
        ("", "Pod"),
        ("", "ResourceQuota"),
        ("", "Secret"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("apps", "DaemonSet"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("batch", "CronJob"),
        ("batch", "Job"),
        ("coordination.k8s.io", "Lease"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("policy", "PodDisruptionBudget"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
    }
)
# Charts fleetgen pins but sets no values for and does not vendor: their rows are kept as written.
HAND_ROWS = (
    {
        "chart": "prometheus-operator-crds",
        "version": "31.0.0",
        "kinds": [{"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"}],
        "derived": "not vendored: its templates are CustomResourceDefinitions only (crd-*.yaml), "
        "https://github.com/prometheus-community/helm-charts/tree/main/charts/prometheus-operator-crds",
    },
    {
        "chart": "external-secrets",
        "version": "2.9.0",
        "kinds": [
            {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration"},
            {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"},
            {"group": "rbac.authorization.k8s.io", "kind": "ClusterRole"},
            {"group": "rbac.authorization.k8s.io", "kind": "ClusterRoleBinding"},
        ],
        "derived": "not vendored: its templates (crds/, rbac.yaml, validatingwebhook.yaml) at v2.9.0, "
        "https://github.com/external-secrets/external-secrets/tree/main/deploy/charts/external-secrets",
    },
)


class RefreshError(Exception):
    """Bad input: reported as one line, exit 2."""


def refresh(source: Path, into: str, charts: Path = CHARTS) -> int:
    """Replace charts/into with a copy of the chart folder `source`; the number of files copied."""
    if into in ("", ".", "..") or "/" in into or "\\" in into:
        raise RefreshError(f"--into {into!r}: one folder name under tests/charts, such as kueue")
    if not (source / "Chart.yaml").is_file():
        raise RefreshError(f"{source}: not a chart folder (no Chart.yaml)")
    target = charts / into
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise RefreshError(f"{target}: in the way (not a folder)")
    staged = charts / f".{into}.refreshing"
    if staged.exists():
        shutil.rmtree(staged)
    # symlinks=True keeps upstream's links (Volcano's crd/v1 -> bases) as links, not copies.
    shutil.copytree(source, staged, symlinks=True)
    if target.exists():
        shutil.rmtree(target)
    staged.rename(target)
    return sum(1 for p in target.rglob("*") if p.is_file() and not p.is_symlink())


def vendored(charts: Path = CHARTS) -> dict[str, tuple[str, str]]:
    """folder -> (chart, version), from the rows of tests/charts/SOURCES.md and each folder's Chart.yaml name."""
    out = {}
    for folder, version in re.findall(r"^\| ([a-z0-9.-]+)/ \| [^|]+ \| ([^|\s]+) \|", (charts / "SOURCES.md").read_text("utf-8"), re.M):
        chart = yaml.safe_load((charts / folder / "Chart.yaml").read_text("utf-8"))["name"]
        out[folder] = (str(chart), version)
    return out


def helm_binary() -> str:
    found = os.environ.get("FLEETGEN_HELM") or (str(REPO / ".tools/bin/helm") if (REPO / ".tools/bin/helm").is_file() else None)
    found = found or shutil.which("helm")
    if not found:
        raise RefreshError("no helm: run `bash scripts/install_helm.sh` (.tools/bin/helm) or set FLEETGEN_HELM")
    return found


def template(helm: str, folder: Path, values: dict[str, Any], kube_version: str) -> list[dict[str, Any]]:
    """`helm template` of a chart folder with these values, CRDs included (as Argo CD and Flux install them)."""
    with tempfile.TemporaryDirectory(prefix="refresh-charts-") as home:
        env = {**os.environ, **{f"HELM_{kind}_HOME": f"{home}/{kind.lower()}" for kind in ("CONFIG", "CACHE", "DATA")}}
        (Path(home) / "values.yaml").write_text(yaml.safe_dump(values), encoding="utf-8")
        args = [helm, "template", "release", str(folder), "--namespace", "add-on", "--include-crds"]
        done = subprocess.run(
            [*args, "--kube-version", kube_version, "--values", f"{home}/values.yaml"],
            capture_output=True,
            text=True,
            check=False,
            env=env,
            timeout=120,
        )
    if done.returncode != 0:
        raise RefreshError(f"helm template {folder.name}: {done.stderr.strip().splitlines()[-1:]}")
    # libyaml's loader: the charts' CRDs are megabytes, ten times slower through the pure-Python one
    return [doc for doc in yaml.load_all(done.stdout, Loader=yaml.CSafeLoader) if isinstance(doc, dict)]


def cluster_kinds(objects: list[dict[str, Any]], chart: str) -> set[GroupKind]:
    """The cluster-scoped (group, kind)s among a chart's objects; the scope of a custom kind from the chart's own CRD."""
    crd_scopes = {
        (o["spec"]["group"], o["spec"]["names"]["kind"]): o["spec"]["scope"] for o in objects if o.get("kind") == "CustomResourceDefinition"
    }
    found = set()
    for obj in objects:
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        key = (api_version.rpartition("/")[0], kind)
        if key in crd_scopes:
            cluster = crd_scopes[key] == "Cluster"
        elif key in BUILTIN_CLUSTER_KINDS or key in BUILTIN_NAMESPACED_KINDS:
            cluster = key in BUILTIN_CLUSTER_KINDS
        else:
            raise RefreshError(f"{chart}: {kind} ({api_version}) is defined by no CRD of the chart and not listed here: look its scope up")
        if cluster:
            found.add(key)
    return found


def fleet_values() -> dict[tuple[str, str], list[tuple[dict[str, Any], str]]]:
    """(chart, version) -> every (values, Kubernetes version) fleetgen renders for the example fleet and for its default pins."""
    from fleetgen.model import Fleet
    from fleetgen.render.platform import add_ons, helm_values

    example = yaml.safe_load((REPO / "fleet.yaml").read_text(encoding="utf-8"))
    defaults = {key: value for key, value in example.items() if key != "platform"}
    # the other shape of the GPU Operator's values: the node image brings the driver, with Volcano everywhere it may run
    image_driver = {**defaults, "platform": {"gpuOperator": {"driverSource": "node-image"}, "prometheusOperatorCrds": {"enabled": True}}}
    # and the GPU Operator release that manages the driver with one NVIDIADriver per node pool
    per_pool = {**defaults, "platform": {"gpuOperator": {"version": "v26.7.0", "driverCrd": True}}}
    out: dict[tuple[str, str], list[tuple[dict[str, Any], str]]] = {}
    for data in (example, defaults, image_driver, per_pool):
        fleet = Fleet.model_validate(data)
        for index, cluster in enumerate(fleet.clusters):
            kube = str(fleet.version_sets[cluster.version_set].kubernetes)
            for name, addon, _ in add_ons(fleet, index):
                out.setdefault((addon.chart, addon.version), []).append((helm_values(fleet, index, name, addon), kube))
    return out


def derive(helm: str, charts: Path = CHARTS) -> list[dict[str, Any]]:
    """A row per vendored chart: its cluster-scoped kinds with no values and with each set fleetgen renders."""
    values = fleet_values()
    rows = []
    for folder, (chart, version) in sorted(vendored(charts).items(), key=lambda item: item[1]):
        runs = [({}, max((kube for _, kube in values.get((chart, version), [])), default="1.35.0")), *values.get((chart, version), [])]
        unique = {json.dumps(run, sort_keys=True): run for run in runs}
        kinds = set().union(*(cluster_kinds(template(helm, charts / folder, v, kube), chart) for v, kube in unique.values()))
        derived = f"helm template of tests/charts/{folder} (no values, and fleetgen's values for the example fleet and its variants)"
        listed = [{"group": group, "kind": kind} for group, kind in sorted(kinds)]
        rows.append({"chart": chart, "version": version, "kinds": listed, "derived": derived})
    return rows


def kinds_text(rows: list[dict[str, Any]]) -> str:
    header = (
        "# Written by scripts/refresh_charts.py from `helm template` of the charts kept in tests/charts: the cluster-scoped\n"
        "# kinds each add-on chart version creates. The platform Argo CD AppProject allows exactly these (compat/chart_kinds.py).\n"
        "# Do not edit by hand: refresh the chart, then run the script (tests/test_helm_charts.py compares).\n"
    )
    ordered = sorted([*rows, *HAND_ROWS], key=lambda row: (row["chart"], row["version"]))
    return header + yaml.safe_dump({"charts": ordered}, sort_keys=False, width=200, default_flow_style=None)


def write_kinds(helm: str, charts: Path = CHARTS, target: Path = KINDS_FILE) -> int:
    rows = derive(helm, charts)
    target.write_text(kinds_text(rows), encoding="utf-8")
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="the upstream chart folder (with Chart.yaml)")
    parser.add_argument("--into", help="the folder under tests/charts it replaces")
    parser.add_argument("--kinds-only", action="store_true", help="only rewrite fleetgen/compat/chart_kinds.yaml")
    args = parser.parse_args(argv)
    if not args.kinds_only and (args.source is None or args.into is None):
        parser.error("give --from and --into, or --kinds-only")
    try:
        if not args.kinds_only:
            copied = refresh(args.source, args.into)
            print(f"tests/charts/{args.into}: {copied} files; update SOURCES.md and CHART_FOLDERS")
        rows = write_kinds(helm_binary())
    except (RefreshError, OSError) as exc:
        print(f"refresh_charts: {exc}", file=sys.stderr)
        return 2
    print(f"{KINDS_FILE.relative_to(REPO)}: the cluster-scoped kinds of {rows} vendored charts")
    return 0


if __name__ == "__main__":
    sys.exit(main())

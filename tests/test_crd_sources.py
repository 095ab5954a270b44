"""The upstream CRDs in tests/crds and scripts/refresh_crds.py, which turns them into schemas/crds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import REPO

SCRIPT = REPO / "scripts" / "refresh_crds.py"
CRDS = REPO / "tests" / "crds"
CLUSTER_QUEUES = CRDS / "kueue" / "kueue.x-k8s.io_clusterqueues.yaml"


def refresh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False)


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_schemas_crds_is_exactly_what_the_script_writes_from_tests_crds(tmp_path: Path) -> None:
    done = refresh("--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert files_of(tmp_path) == files_of(REPO / "schemas" / "crds"), "regenerate: python scripts/refresh_crds.py"


def test_every_vendored_crd_folder_is_documented() -> None:
    sources = (CRDS / "SOURCES.md").read_text(encoding="utf-8")
    folders = sorted(p.name for p in CRDS.iterdir() if p.is_dir())
    assert folders == ["argocd", "external-secrets", "flux", "gpu-operator", "kueue", "monitoring", "volcano"]
    assert all(f"| {name}/" in sources for name in folders)
    assert "Apache License" in (CRDS / "LICENSE").read_text(encoding="utf-8")


def test_refresh_copies_upstream_crds_then_regenerates(tmp_path: Path) -> None:
    upstream, crds, out = tmp_path / "upstream", tmp_path / "crds", tmp_path / "out"
    upstream.mkdir()
    crd = yaml.safe_load(CLUSTER_QUEUES.read_text(encoding="utf-8"))
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop("cohortName", None)
    (upstream / CLUSTER_QUEUES.name).write_text(yaml.safe_dump(crd), encoding="utf-8")
    (crds / "kueue").mkdir(parents=True)
    (crds / "kueue" / "kept.yaml").write_text("# a file upstream no longer has stays\n", encoding="utf-8")
    out.mkdir()
    (out / "example.com_v1_Gone.json").write_text("{}\n", encoding="utf-8")

    done = refresh("--from", str(upstream), "--into", "kueue", "--crds", str(crds), "--out", str(out))

    assert done.returncode == 0, done.stderr
    assert (crds / "kueue" / CLUSTER_QUEUES.name).read_bytes() == (upstream / CLUSTER_QUEUES.name).read_bytes()
    assert (crds / "kueue" / "kept.yaml").exists()
    assert sorted(files_of(out)) == ["kueue.x-k8s.io_v1beta1_ClusterQueue.json", "kueue.x-k8s.io_v1beta2_ClusterQueue.json"]
    schema = json.loads((out / "kueue.x-k8s.io_v1beta2_ClusterQueue.json").read_text(encoding="utf-8"))
    assert "cohortName" not in schema["properties"]["spec"]["properties"]
    assert schema["properties"]["spec"]["additionalProperties"] is False
    assert "1 CRD file(s) copied, 1 changed" in done.stdout and "2 schema(s), 2 written, 1 removed" in done.stdout


def test_refresh_refuses_what_is_not_a_crd_and_copies_nothing(tmp_path: Path) -> None:
    upstream, crds = tmp_path / "upstream", tmp_path / "crds"
    upstream.mkdir()
    crds.mkdir()
    (upstream / "a.yaml").write_text(CLUSTER_QUEUES.read_text(encoding="utf-8"), encoding="utf-8")
    (upstream / "b.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", encoding="utf-8")

    done = refresh("--from", str(upstream), "--into", "kueue", "--crds", str(crds), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"refresh_crds: error: {upstream / 'b.yaml'}: not only CustomResourceDefinitions (found ConfigMap)\n"
    assert list(crds.iterdir()) == [] and not (tmp_path / "out").exists()

    escape = refresh("--from", str(upstream), "--into", "../elsewhere", "--crds", str(crds), "--out", str(tmp_path / "out"))
    assert escape.returncode == 2 and escape.stderr.count("\n") == 1 and "one folder name under tests/crds" in escape.stderr

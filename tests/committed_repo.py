"""A fleet repository with its rendered tree committed, and dumps of a cluster an engine synced from it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from conftest import EXAMPLE, REPO, git
from gitops_dumps import cluster_dump

Build = Callable[[Path], list[dict[str, Any]]]
TREE = ["base", "clusters", ".fleetgen-ledger", "FLEET.md"]


def committed_example(folder: Path) -> tuple[Path, str]:
    """The example fleet and its committed rendered tree on main, in `folder`; (folder, commit)."""
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "fleet.yaml")
    for name in TREE:
        source = REPO / name
        shutil.copytree(source, folder / name) if source.is_dir() else shutil.copy(source, folder / name)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "fleet and its render")
    return folder, git(folder, "rev-parse", "HEAD").strip()


def engine_built(kustomize: Build, folder: Path, cluster: str, synced: list[str]) -> list[dict[str, Any]]:
    """What the engine applies to `cluster`: each folder it syncs on its own, built by kustomize."""
    objects: list[dict[str, Any]] = []
    for sub in synced:
        objects += kustomize(folder / "clusters" / cluster / sub)
    return objects


def flux_dump(kustomize: Build, folder: Path, cluster: str, commit: str | None) -> dict[str, Any]:
    """A Flux-synced cluster's dump of the committed tree; its Kustomizations record `commit` as applied."""
    dump = cluster_dump(engine_built(kustomize, folder, cluster, ["", "platform", "flux-system"]), "flux")
    for obj in dump["items"]:
        if obj["kind"] == "Kustomization" and commit is not None:
            obj["status"] = {"lastAppliedRevision": f"main@sha1:{commit}", "observedGeneration": 1}
    return dump


def write_dump(folder: Path, dump: dict[str, Any]) -> Path:
    path = folder.parent / "live.yaml"
    path.write_text(yaml.safe_dump(dump), encoding="utf-8")
    return path

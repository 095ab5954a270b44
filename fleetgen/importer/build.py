"""Build every cluster of a kustomize fleet repository with the real `kubectl kustomize`.

Each object keeps the file it was declared in: the build runs on a copy of the repository whose
cluster kustomizations ask kustomize for origin annotations (the repository itself is never touched).
"""

from __future__ import annotations

import posixpath
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fleetgen.errors import FindingsError, InputError
from fleetgen.live.dumps import LIVE_LIMITS, object_problems
from fleetgen.live.kubectl import kubectl, last_line
from fleetgen.source.reader import parse_documents

ORIGIN = "config.kubernetes.io/origin"
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


@dataclass(frozen=True)
class Built:
    """One object a cluster builds to, and the repository file that declares it."""

    body: dict[str, Any]
    file: str  # '/'-separated, relative to the repository


def cluster_names(repo: Path) -> list[str]:
    """The folders of clusters/ that hold a kustomization, sorted."""
    if not (repo / "clusters").is_dir():
        raise InputError(f"{repo}: not a fleet repository: no clusters/ folder")
    names = sorted(p.name for p in (repo / "clusters").iterdir() if p.is_dir() and _kustomization(p) is not None)
    if not names:
        raise InputError(f"{repo}/clusters: no cluster folder holds a kustomization.yaml")
    return names


def build_clusters(repo: Path) -> dict[str, list[Built]]:
    """Cluster name -> the objects `kubectl kustomize clusters/<name>` gives, each with its file."""
    tool, names = kubectl("import (it builds each cluster with `kubectl kustomize`)"), cluster_names(repo)
    with tempfile.TemporaryDirectory(prefix="fleetgen-import-") as scratch:
        copy = Path(scratch) / "repo"
        shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return {name: _build(tool, copy, name) for name in names}


def _kustomization(folder: Path) -> Path | None:
    return next((folder / n for n in KUSTOMIZATION_NAMES if (folder / n).is_file()), None)


def _build(tool: str, copy: Path, name: str) -> list[Built]:
    folder = copy / "clusters" / name
    _ask_for_origins(folder)
    try:
        done = subprocess.run([tool, "kustomize", str(folder)], capture_output=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"clusters/{name}: kubectl kustomize: {exc}") from None
    if done.returncode != 0:
        last = last_line(done.stderr).replace(str(copy) + "/", "")
        raise InputError(f"clusters/{name}: kubectl kustomize failed: {last}")
    # What kustomize prints is the repository's content: read it like a live dump, with fleetgen's reader and its
    # limits, and every object checked where it is read (metadata, and the fields of each kind fleetgen reads).
    try:
        documents = [d.data for d in parse_documents(done.stdout, name, LIVE_LIMITS, positions=False)]
    except FindingsError as exc:
        raise InputError(f"clusters/{name}: kubectl kustomize printed what fleetgen cannot read: {exc.findings[0].message}") from None
    built = [_with_file(doc, name) for doc in documents if doc]
    for item in built:
        problem = next(object_problems(item.body, ()), None)
        if problem is not None:
            raise InputError(f"{item.file}: {item.body.get('kind')} {_name(item.body)}: {problem.dotted_path}: {problem.message}")
    return built


def _name(body: dict[str, Any]) -> str:
    meta = body.get("metadata")
    return str(meta.get("name")) if isinstance(meta, dict) else "(no name)"


def _ask_for_origins(folder: Path) -> None:
    """Add `buildMetadata: [originAnnotations]` to the (copied) cluster kustomization."""
    path = _kustomization(folder)
    assert path is not None
    try:
        kustomization = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"clusters/{folder.name}/{path.name}: cannot read: {exc}") from None
    if not isinstance(kustomization, dict):
        raise InputError(f"clusters/{folder.name}/{path.name}: not a kustomization (expected a mapping)")
    metadata = kustomization.get("buildMetadata") or []
    kustomization["buildMetadata"] = [*metadata, "originAnnotations"] if "originAnnotations" not in metadata else metadata
    path.write_text(yaml.dump(kustomization, Dumper=yaml.CSafeDumper, sort_keys=False), encoding="utf-8")


def _with_file(body: Any, cluster: str) -> Built:
    """The object without the origin annotation, and its file relative to the repository."""
    if not isinstance(body, dict):
        raise InputError(f"clusters/{cluster}: kubectl kustomize printed a document that is no object")
    found = body.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    found = metadata.get("annotations")
    annotations: dict[str, Any] = found if isinstance(found, dict) else {}
    try:
        origin = yaml.load(str(annotations.pop(ORIGIN, "") or "{}"), Loader=yaml.CSafeLoader) or {}
    except yaml.YAMLError:  # kustomize writes this annotation; a repository's own copy of it is not trusted
        origin = {}
    if not annotations:
        metadata.pop("annotations", None)
    path = origin.get("path") if isinstance(origin, dict) else None
    if isinstance(path, str):
        file = posixpath.normpath(posixpath.join("clusters", cluster, path))
        if isinstance(origin.get("repo"), str):
            file = f"{origin['repo']}//{path}"
    else:
        file = f"clusters/{cluster} (generated by kustomize)"
    return Built(body, file)

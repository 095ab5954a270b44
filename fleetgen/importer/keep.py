"""`import --keep-unmodelled`: the objects fleet.yaml cannot hold, kept as hand-written files of each cluster.

A repository file that declares such objects becomes `hand-written/<its path>` in the folder of
every cluster that builds them. It is the file itself (comments kept) when its documents are
exactly the objects the cluster builds from it; otherwise it holds those objects as kustomize built
them for that cluster, so a namespace, label or patch a kustomization applied to them is kept too.
fleet.yaml lists each file in the cluster's `extraResources`; render lists it in the cluster's
kustomization.yaml and never writes, changes or removes it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from fleetgen.compare.object_diff import ObjectKey
from fleetgen.importer.recognise import ClusterView, Unmodelled
from fleetgen.output.emit import dump_documents

FOLDER = "hand-written"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Kept:
    """One hand-written file for one cluster: its path inside clusters/<cluster>/ and its bytes."""

    cluster: str
    path: str
    data: bytes
    objects: tuple[Unmodelled, ...]


def keep(repo: Path, view: ClusterView, rendered: set[ObjectKey]) -> tuple[list[Kept], list[Unmodelled]]:
    """The files that keep a cluster's unmodelled objects, and the objects that cannot be kept.

    An object the imported fleet renders itself (same kind, namespace and name) cannot be kept:
    kustomize refuses an object declared twice."""
    by_file: dict[str, list[Unmodelled]] = {}
    left: list[Unmodelled] = []
    for item in view.unmodelled:
        if ObjectKey(item.kind, item.namespace, item.name) in rendered:
            left.append(dataclasses.replace(item, why=f"{item.why}; not kept: the imported fleet renders an object of that name"))
        else:
            by_file.setdefault(item.file, []).append(item)
    kept: list[Kept] = []
    used: set[str] = set()
    for file, items in by_file.items():
        path = _unused(f"{FOLDER}/{_safe(file)}", used)
        kept.append(Kept(view.name, path, _content(repo, file, view.name, items), tuple(items)))
    return kept, left


def _safe(file: str) -> str:
    """A repository file's path as a relative path fleet.yaml accepts (remote and generated origins included)."""
    parts = [_UNSAFE.sub("-", part).lstrip("-.") for part in file.split("/")]
    name = "/".join(p for p in parts if p) or "objects"
    return name if name.endswith((".yaml", ".yml")) else f"{name}.yaml"


def _unused(path: str, used: set[str]) -> str:
    stem, dot, suffix = path.rpartition(".")
    candidate, number = path, 1
    while candidate in used:
        number += 1
        candidate = f"{stem}-{number}{dot}{suffix}"
    used.add(candidate)
    return candidate


def _content(repo: Path, file: str, cluster: str, items: list[Unmodelled]) -> bytes:
    bodies = [item.body for item in items]
    source = _read_local(repo, file)
    if source is not None:
        try:
            documents = [d for d in yaml.safe_load_all(source) if d is not None]
        except yaml.YAMLError:
            documents = []
        if documents == bodies:
            return source
    header = (
        f"# Kept by fleetgen import: the objects of {file} that fleet.yaml cannot hold, as kustomize built them for "
        f"clusters/{cluster}.\n# Hand-written: fleetgen lists this file in the cluster's kustomization and never changes it.\n"
    )
    return dump_documents(bodies, header=header)


def _read_local(repo: Path, file: str) -> bytes | None:
    """The bytes of a file inside the repository; None for a remote or generated origin or one outside it."""
    if "//" in file or " " in file:
        return None
    path = (repo / file).resolve()
    if not path.is_relative_to(repo.resolve()):
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None

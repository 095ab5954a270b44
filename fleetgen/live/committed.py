"""The tree Git holds for one cluster at the revision its sync engine applied: what `drift` compares with.

A cluster runs what its engine synced from Git, not what the installed fleetgen would render from
fleet.yaml today. So drift takes the revision the engine records (Flux's Kustomization
`status.lastAppliedRevision`, Argo CD's Application `status.sync.revision`), else `--ref`, else HEAD,
reads the committed fleet folder at that revision (`git archive`, never the working tree), and builds
it as the engine does, with the real `kubectl kustomize`: every folder the engine syncs on its own (the
cluster's overlay, its platform folder, its entry point and, under Argo CD, each team's folder). The
committed files of `clusters/<name>/` and `base/` are kept too, so the caller can tell a stale tree apart.
"""

from __future__ import annotations

import io
import posixpath
import re
import subprocess
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fleetgen.errors import InputError
from fleetgen.live.kubectl import kubectl, last_line
from fleetgen.live.shapes import of_kind
from fleetgen.model import Fleet
from fleetgen.output.emit import GENERATED_MARKS
from fleetgen.render.argocd_apps import ARGOCD_NS
from fleetgen.render.manifest import ObjectKey
from fleetgen.source.git import git_output

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # a SHA-1 or SHA-256 object name


@dataclass(frozen=True)
class Revision:
    """The revision drift compares with, and how it was chosen (shown to the operator)."""

    ref: str  # what git is asked for
    origin: str  # "Flux Kustomization flux-system/contoso-ai", "--ref", "HEAD"


@dataclass(frozen=True)
class Committed:
    """A cluster's objects as the committed tree builds them, and the files they were built from."""

    commit: str  # the full object name `ref` resolved to
    at_head: bool  # whether that is HEAD's commit
    objects: dict[ObjectKey, dict[str, Any]]
    files: dict[str, bytes]  # path relative to fleet.yaml's folder -> bytes, under clusters/<name>/ and base/ (what render writes for it)
    elsewhere: tuple[tuple[str, str, str], ...] = ()  # (folder, commit, origin): a folder its own sync object applied at another commit


ENGINES = {"Kustomization": "Flux", "Application": "Argo CD"}  # the engine objects that record what they applied


def _record(obj: dict[str, Any], kind: str) -> str | None:
    """The revision an engine object of `kind` says it applied, as a commit name; None when it records none."""
    status = obj.get("status") or {}
    if not isinstance(status, dict):
        return None
    if kind == "Application":
        sync = status.get("sync") or {}
        value = sync.get("revision") if isinstance(sync, dict) else None
    else:
        value = status.get("lastAppliedRevision")
    if value in (None, ""):
        return None
    text = str(value)
    # Flux 2.x writes `<branch>@sha1:<hex>` (older releases `<branch>/<hex>`); Argo CD the bare commit
    commit = text.rpartition("@")[2].removeprefix("sha1:").removeprefix("sha256:").rpartition("/")[2]
    if not COMMIT.fullmatch(commit):
        meta = obj.get("metadata") or {}
        raise InputError(
            f"{kind} {meta.get('namespace', '')}/{meta.get('name', '')}: the revision it applied, {_shown(text)}, "
            "is not a git commit; give --ref REV"
        )
    return commit


def _shown(text: str, most: int = 60) -> str:
    """`text` quoted for a one-line message, cut in the middle when long."""
    return repr(text) if len(text) <= most else f"{text[: most // 2]!r}...{text[-most // 4 :]!r} ({len(text):,} characters)"


def synced_revision(live: list[dict[str, Any]], entry: dict[ObjectKey, dict[str, Any]], cluster: str, under: str = ".") -> Revision | None:
    """The revision the cluster's own engine objects (those of `entry`) say they applied: the one that syncs
    `<under>/clusters/<cluster>` first (`under`: gitops.path, where the tree sits in the repository), then the others
    in key order."""
    present = {
        ObjectKey(kind, str((o.get("metadata") or {}).get("namespace") or ""), str((o.get("metadata") or {}).get("name"))): o
        for kind in ENGINES
        for o in of_kind(live, kind)
    }
    keys = sorted(k for k in entry if k[0] in ENGINES and k in present)
    own = posixpath.normpath(posixpath.join(under, "clusters", cluster))
    keys.sort(key=lambda k: _syncs_path(entry[k]) != own)
    for key in keys:
        commit = _record(present[key], key[0])
        if commit is not None:
            return Revision(commit, f"{ENGINES[key[0]]} {key[0]} {key[1]}/{key[2]}")
    return None


@dataclass(frozen=True)
class SyncRecords:
    """The live Flux Kustomizations and Argo CD Applications that sync a folder of a git repository, by that folder (as
    the repository names it): Flux applies `platform` before the cluster's Kustomization (dependsOn), so during a
    change the two stand at different commits, and each folder's objects are judged at its own sync object's."""

    syncing: dict[str, tuple[str, dict[str, Any]]]  # folder -> (kind, the object)

    @classmethod
    def of(cls, live: list[dict[str, Any]]) -> SyncRecords:
        syncing: dict[str, tuple[str, dict[str, Any]]] = {}
        for kind in ENGINES:
            for obj in sorted(of_kind(live, kind), key=lambda o: str(o.get("metadata"))):
                path = _syncs_path(obj) if _from_git(obj, kind) else ""
                if path:
                    syncing.setdefault(path, (kind, obj))
        return cls(syncing)

    def revision(self, folder: str) -> Revision | None:
        """What the object syncing `folder` says it applied; None when none does, or it records nothing."""
        if folder not in self.syncing:
            return None
        kind, obj = self.syncing[folder]
        commit = _record(obj, kind)
        meta = obj.get("metadata") or {}
        return None if commit is None else Revision(commit, f"{ENGINES[kind]} {kind} {meta.get('namespace') or ''}/{meta.get('name')}")


def _from_git(obj: dict[str, Any], kind: str) -> bool:
    """Whether the engine object takes its folder from a git repository (not an OCI artifact, a bucket or a chart)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return False
    if kind == "Kustomization":
        ref = spec.get("sourceRef")
        return not isinstance(ref, dict) or ref.get("kind", "GitRepository") == "GitRepository"
    source = spec.get("source")
    return isinstance(source, dict) and "chart" not in source


def _syncs_path(body: dict[str, Any]) -> str:
    spec = body.get("spec") or {}
    source = spec.get("source") if isinstance(spec, dict) else None
    path = (spec.get("path") if isinstance(spec, dict) else None) or (source.get("path") if isinstance(source, dict) else None) or ""
    return posixpath.normpath(str(path)).lstrip("/") if path else ""


def _git(cwd: Path, *args: str) -> bytes:
    return git_output(cwd, *args, timeout=120)  # an archive of a large tree takes a while


def committed_tree(fleet: Path, revision: Revision, cluster: str, records: SyncRecords | None = None) -> Committed:
    """Build cluster `cluster` from the tree committed at `revision` in the repository that holds `fleet`; a folder
    synced on its own whose sync object applied another revision (its `records`) is built at that one."""
    if revision.ref.startswith("-") or not revision.ref.isprintable():  # an option to git, or NUL, a lone surrogate ...
        raise InputError(f"{_shown(revision.ref)} is not a git revision")
    folder = fleet.resolve().parent
    try:
        top = Path(_git(folder, "rev-parse", "--show-toplevel").decode().strip())
    except InputError:
        raise InputError(
            f"{fleet}: not in a git repository; drift compares with the committed tree (or give --against fleet.yaml)"
        ) from None
    commit = _commit_of(top, revision)
    head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").decode().strip()
    prefix = folder.relative_to(top.resolve()).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    listed = _git(top, "ls-tree", "-d", "--name-only", commit, f"{prefix}clusters/{cluster}").decode().split("\n")
    if f"{prefix}clusters/{cluster}" not in listed:
        raise InputError(f"clusters/{cluster} is not in the tree committed at {commit[:12]}: run fleetgen render and commit it")
    judged = (f"clusters/{cluster}/", "base/")
    with tempfile.TemporaryDirectory(prefix="fleetgen-drift-") as scratch:
        tree = _extract(top, commit, prefix, Path(scratch) / "0")
        files = _files(tree, judged)
        folders = synced_folders(tree, f"clusters/{cluster}")
        trees = {commit: tree}
        at: dict[str, str] = {}  # folder -> the commit it is built at
        elsewhere = []
        for name in folders:
            own = records.revision(prefix + name) if records else None
            other = _commit_of(top, own) if own is not None else commit
            if other != commit:
                if other not in trees:
                    trees[other] = _extract(top, other, prefix, Path(scratch) / str(len(trees)))
                elsewhere.append((name, other, own.origin if own else ""))
                moved = _files(trees[other], (f"{name}/",))
                files = {p: b for p, b in files.items() if not p.startswith(f"{name}/")} | moved
            at[name] = other
        objects: dict[ObjectKey, dict[str, Any]] = {}
        with ThreadPoolExecutor(max_workers=len(folders) or 1) as pool:  # each build is its own kubectl process
            built = list(pool.map(lambda name: _build(trees[at[name]], name), folders))
        for bodies in built:
            for body in bodies:
                meta = body.get("metadata") or {}
                objects[ObjectKey(str(body.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))] = body
    return Committed(commit, commit == head, objects, files, tuple(elsewhere))


def _commit_of(top: Path, revision: Revision) -> str:
    try:
        return _git(top, "rev-parse", "--verify", "--quiet", f"{revision.ref}^{{commit}}").decode().strip()
    except InputError:
        raise InputError(f"{revision.ref} ({revision.origin}) is not a commit of this repository; git fetch, or give --ref REV") from None


def _extract(top: Path, commit: str, prefix: str, root: Path) -> Path:
    """The fleet folder as committed at `commit`, written under `root`: the whole folder, since a cluster's
    hand-written resources may sit beside clusters/ and base/."""
    archive = _git(top, "archive", "--format=tar", commit, "--", prefix or ".")
    root.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    return root / prefix if prefix else root


def _files(tree: Path, under: tuple[str, ...]) -> dict[str, bytes]:
    everything = (p for p in sorted(tree.rglob("*")) if p.is_file() and not p.is_symlink())
    return {path: p.read_bytes() for p in everything if (path := p.relative_to(tree).as_posix()).startswith(under)}


def _kustomization(folder: Path) -> Path | None:
    return next((folder / n for n in KUSTOMIZATION_NAMES if (folder / n).is_file()), None)


def synced_folders(tree: Path, cluster_folder: str) -> list[str]:
    """The folders under `cluster_folder` an engine syncs on its own: those with a kustomization that no
    other kustomization of the cluster lists as a resource (Flux's platform/ and flux-system/, Argo CD's
    team folders), the cluster's overlay first."""
    folders = sorted(p.parent for p in (tree / cluster_folder).rglob("*") if p.name in KUSTOMIZATION_NAMES and p.is_file())
    listed: set[Path] = set()
    for folder in folders:
        path = _kustomization(folder)
        assert path is not None
        try:
            document = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader) or {}
        except (ValueError, yaml.YAMLError) as exc:  # ValueError: not UTF-8, or an integer of more than 4,300 digits
            raise InputError(f"{path.relative_to(tree).as_posix()}: cannot read the committed kustomization: {_one_line(exc)}") from None
        resources = document.get("resources") if isinstance(document, dict) else None
        for resource in resources if isinstance(resources, list) else []:
            listed.add(Path(posixpath.normpath((folder / str(resource)).as_posix())))
    return [folder.relative_to(tree).as_posix() for folder in folders if folder not in listed]


def _build(tree: Path, folder: str) -> list[dict[str, Any]]:
    tool = kubectl("drift (it builds the committed tree with `kubectl kustomize`)")
    try:
        done = subprocess.run([tool, "kustomize", str(tree / folder)], capture_output=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"{folder}: kubectl kustomize: {exc}") from None
    if done.returncode != 0:
        last = last_line(done.stderr).replace(str(tree) + "/", "")
        raise InputError(f"{folder} (committed): kubectl kustomize failed: {last}")
    try:
        return [d for d in yaml.load_all(done.stdout, Loader=yaml.CSafeLoader) if isinstance(d, dict)]
    except (ValueError, yaml.YAMLError) as exc:  # what the committed files hold, passed through: an integer of 5,000 digits
        raise InputError(f"{folder} (committed): cannot read what kubectl kustomize built: {_one_line(exc)}") from None


def _one_line(exc: Exception) -> str:
    """A YAML error's lines (the problem, and where) as one line."""
    return " ".join(line.strip() for line in str(exc).splitlines() if line.strip())


def stale_note(planned: dict[str, bytes], committed: Committed) -> str:
    """One line when the render of fleet.yaml would write the committed folders otherwise (changed, missing,
    or no longer rendered), which is not drift: at HEAD the tree is stale; at an older commit the cluster has
    not synced what came since (or this fleetgen renders it otherwise). Hand-written files beside them are not judged."""
    files = committed.files
    generated = {p for p, data in files.items() if data.startswith(tuple(m.encode() for m in GENERATED_MARKS))}
    stale = sorted(p for p in planned.keys() | generated if planned.get(p) != files.get(p))
    if not stale:
        return ""
    which = f"{stale[0]}{f' and {len(stale) - 1} more' if len(stale) > 1 else ''}"
    if committed.at_head:
        return f"the committed tree is stale ({which}); run fleetgen render"
    return (
        f"fleet.yaml renders the tree committed at {committed.commit[:12]} otherwise ({which}): "
        "a later commit (not synced yet) or this fleetgen changes it"
    )


def on_cluster(fleet: Fleet, committed: Committed, revision: Revision, live: list[dict[str, Any]]) -> tuple[dict[ObjectKey, Any], str]:
    """The committed objects to look for among `live`, and what they are, in words.

    An Argo CD hub keeps the Applications and the repository Secrets in its namespace (the platform folder syncs
    to the hub): they are compared when the live objects hold the hub's too, and never missed on a spoke."""
    against = f"the tree committed at {committed.commit[:12]} ({revision.origin})"
    against += "".join(f"; {folder} at {commit[:12]} ({origin})" for folder, commit, origin in committed.elsewhere)
    hub = fleet.gitops.engine == "argocd" and fleet.gitops.argocd.mode == "hub"
    if not hub or of_kind(live, "Application"):
        return committed.objects, against
    kept = {k: v for k, v in committed.objects.items() if not _on_the_hub(v)}
    return kept, against + "; the hub's objects (Applications, repository Secrets) are not in the live objects, so not compared"


def _on_the_hub(body: dict[str, Any]) -> bool:
    """An object an Argo CD hub holds itself: Argo CD's own kinds, and the repository Secrets in its namespace."""
    if str(body.get("apiVersion", "")).startswith("argoproj.io/"):
        return True
    meta = body.get("metadata") or {}
    labels = meta.get("labels") or {}
    return meta.get("namespace") == ARGOCD_NS and "argocd.argoproj.io/secret-type" in labels  # the label Argo CD reads on its Secrets

"""Will the GitOps engine reconcile the tree? Checks of the planned files, before anything is written.

Every folder a Flux Kustomization or an Argo CD Application (with the fleet's repository as its
source) points at must be in the rendered tree with a kustomization.yaml whose resources and
patches exist, so `kubectl kustomize` can build it (the root Applications an Argo CD hub's
ApplicationSet generates included; Argo CD's projects and wave health: validation/argocd.py) (a cluster's hand-written extraResources are
not in the plan: render checks that they exist on disk). Every `dependsOn` of a Flux Kustomization or
HelmRelease must name an object of its kind that the same cluster gets, without cycles, and every
chart source a HelmRelease names must be there too. Findings point at fleet.yaml's `gitops` field.
"""

from collections.abc import Collection, Iterator
from posixpath import join, normpath, relpath
from typing import Any, NamedTuple

from fleetgen.errors import Finding
from fleetgen.model import Fleet
from fleetgen.render.argocd import HUB_FOLDER
from fleetgen.render.argocd_apps import CLUSTER_LABEL
from fleetgen.render.layout import OutputFile
from fleetgen.validation.argocd import argocd_findings, generated_applications

KUSTOMIZATION = "kustomization.yaml"
AT = ("gitops",)


def reconcile_findings(fleet: Fleet, files: list[OutputFile], clusters: Collection[int] | None = None) -> list[Finding]:
    """Problems that would stop Flux or Argo CD from reconciling the planned tree.

    `clusters`: only these clusters' entry points are followed (all when None); `files` then need only
    base/ and those clusters' folders, which is all a cluster's folder includes."""
    by_path = {f.path: f for f in files}
    hand_written = {normpath(f"clusters/{c.name}/{p}") for c in fleet.clusters for p in c.extra_resources}
    # The objects of each cluster's entry-point files (clusters/<name>/<folder>/<file>), grouped in one
    # pass over the plan rather than one pass per cluster.
    entry_objects: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        parts = f.path.split("/")
        if parts[0] == "clusters" and len(parts) == 4:
            entry_objects.setdefault(parts[1], []).extend(m.body for m in f.manifests if "metadata" in m.body)
    # An Argo CD hub's bootstrap folder: what it syncs, and the root Applications its ApplicationSet generates.
    hub = [m.body for f in files if f.path.startswith(HUB_FOLDER + "/") for m in f.manifests if "metadata" in m.body]
    for body in hub:
        if body.get("kind") == "ApplicationSet":
            for app in generated_applications(body):
                entry_objects.setdefault(str(app["metadata"].get("labels", {}).get(CLUSTER_LABEL)), []).append(app)
    folders: dict[str, _Folder] = {}  # what each folder lists, read once: base/ folders are shared by clusters
    findings: list[Finding] = []
    for what, path in _synced_paths(fleet, hub):
        # fix: Render again with this fleetgen (the committed tree is not its output)
        findings += [Finding(AT, f"hub: {what}: {problem}") for problem in _folder_problems(fleet, path, by_path, folders, hand_written)]
    followed = set(range(len(fleet.clusters)) if clusters is None else clusters)
    for index, cluster in enumerate(fleet.clusters):
        if index not in followed:
            continue
        objects = entry_objects.get(cluster.name, [])
        for what, path in _synced_paths(fleet, objects):
            problems = _folder_problems(fleet, path, by_path, folders, hand_written)
            # fix: Render again with this fleetgen (the committed tree is not its output)
            findings += [Finding(AT, f"{cluster.name}: {what}: {problem}") for problem in problems]
        # fix: Render again with this fleetgen (the committed tree is not its output)
        findings += [Finding(AT, f"{cluster.name}: {problem}") for problem in _reference_problems(objects)]
    return findings + argocd_findings(fleet, files, followed)


def _synced_paths(fleet: Fleet, objects: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    for body in objects:
        kind, name, spec = body.get("kind"), body["metadata"]["name"], body.get("spec") or {}
        if kind == "Kustomization" and body["apiVersion"].startswith("kustomize.toolkit.fluxcd.io/"):
            yield f"Flux Kustomization {name}", spec.get("path", "")
        elif kind == "Application" and (spec.get("source") or {}).get("repoURL") == fleet.gitops.repository:
            yield f"Argo CD Application {name}", spec["source"].get("path", "")


class _Folder(NamedTuple):
    """One folder of the tree as kustomize would read it: the folders it includes and its missing entries."""

    found: bool  # has a kustomization.yaml
    children: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # entries listed that the tree does not have


def _read_folder(folder: str, by_path: dict[str, OutputFile]) -> _Folder:
    kustomization = by_path.get(normpath(join(folder, KUSTOMIZATION)))
    if kustomization is None:
        return _Folder(False)
    body = kustomization.manifests[0].body
    entries = [str(r) for r in body.get("resources", [])] + [str(p["path"]) for p in body.get("patches", []) if "path" in p]
    children, missing = [], []
    for entry in entries:
        target = normpath(join(folder, entry))
        if normpath(join(target, KUSTOMIZATION)) in by_path:
            children.append(target)
        elif target not in by_path:
            missing.append(entry)
    return _Folder(True, tuple(children), tuple(missing))


def _folder_problems(
    fleet: Fleet, path: str, by_path: dict[str, OutputFile], folders: dict[str, _Folder], hand_written: set[str]
) -> list[str]:
    """Why the repository folder `path` would not build, or nothing (`folders`: each folder read so far;
    `hand_written`: the clusters' extraResources, which are the user's files, not the plan's)."""
    inside = relpath(normpath(path), normpath(fleet.gitops.path))
    if inside == ".." or inside.startswith("../"):
        return [f"path {path} is outside the rendered tree ({fleet.gitops.path})"]
    problems: list[str] = []
    pending, seen = [inside], set()
    while pending:
        folder = pending.pop()
        if folder in seen:
            continue
        seen.add(folder)
        if folder not in folders:
            folders[folder] = _read_folder(folder, by_path)
        read = folders[folder]
        if not read.found:
            problems.append(f"path {path}: {folder} has no {KUSTOMIZATION} in the rendered tree")
            continue
        pending.extend(read.children)
        lists = f"path {path}: {folder}/{KUSTOMIZATION} lists"
        missing = [entry for entry in read.missing if normpath(join(folder, entry)) not in hand_written]
        problems += [f"{lists} {entry}, which the rendered tree does not have" for entry in missing]
    return problems


def _reference_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Missing or cyclic dependsOn among Flux Kustomizations and HelmReleases; missing chart sources."""
    named: dict[tuple[str, str], dict[str, Any]] = {}
    for body in objects:
        named[(body["kind"], body["metadata"]["name"])] = body
    problems: list[str] = []
    for kind in ("Kustomization", "HelmRelease"):
        graph: dict[str, list[str]] = {}
        for (k, name), body in sorted(named.items()):
            if k != kind:
                continue
            spec = body.get("spec") or {}
            graph[name] = [str(d["name"]) for d in spec.get("dependsOn", [])]
            problems += [f"{kind} {name} dependsOn {d}, which this cluster does not get" for d in graph[name] if (kind, d) not in named]
            for ref in _chart_sources(spec):
                if ref not in named:
                    problems.append(f"HelmRelease {name} takes its chart from {ref[0]} {ref[1]}, which this cluster does not get")
        problems += [f"{kind}s depend on each other in a cycle: {' -> '.join(cycle)}" for cycle in _cycles(graph)]
    return problems


def _chart_sources(spec: dict[str, Any]) -> list[tuple[str, str]]:
    refs = [spec["chartRef"]] if "chartRef" in spec else []
    refs += [spec["chart"]["spec"]["sourceRef"]] if "chart" in spec else []
    return [(str(r["kind"]), str(r["name"])) for r in refs]


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """One cycle per strongly connected loop found by depth-first search (each reported once)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt in graph and nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found

"""Will the GitOps engine reconcile the tree? Checks of the planned files, before anything is written.

Every folder a Flux Kustomization or an Argo CD Application (with the fleet's repository as its
source) points at must be in the rendered tree with a kustomization.yaml whose resources and
patches exist, so `kubectl kustomize` can build it. Every `dependsOn` of a Flux Kustomization or
HelmRelease must name an object of its kind that the same cluster gets, without cycles, and every
chart source a HelmRelease names must be there too. Findings point at fleet.yaml's `gitops` field.
"""

from __future__ import annotations

from collections.abc import Iterator
from posixpath import join, normpath, relpath
from typing import Any

from fleetgen.errors import Finding
from fleetgen.model import Fleet
from fleetgen.render.layout import OutputFile

KUSTOMIZATION = "kustomization.yaml"
AT = ("gitops",)


def reconcile_findings(fleet: Fleet, files: list[OutputFile]) -> list[Finding]:
    """Problems that would stop Flux or Argo CD from reconciling the planned tree."""
    by_path = {f.path: f for f in files}
    findings: list[Finding] = []
    for cluster in fleet.clusters:
        prefix = f"clusters/{cluster.name}/"
        objects = [
            m.body for f in files if f.path.startswith(prefix) and f.path.count("/") == 3 for m in f.manifests if "metadata" in m.body
        ]
        for what, path in _synced_paths(fleet, objects):
            findings += [Finding(AT, f"{cluster.name}: {what}: {problem}") for problem in _folder_problems(fleet, path, by_path)]
        findings += [Finding(AT, f"{cluster.name}: {problem}") for problem in _reference_problems(objects)]
    return findings


def _synced_paths(fleet: Fleet, objects: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    for body in objects:
        kind, name, spec = body.get("kind"), body["metadata"]["name"], body.get("spec") or {}
        if kind == "Kustomization" and body["apiVersion"].startswith("kustomize.toolkit.fluxcd.io/"):
            yield f"Flux Kustomization {name}", spec.get("path", "")
        elif kind == "Application" and (spec.get("source") or {}).get("repoURL") == fleet.gitops.repository:
            yield f"Argo CD Application {name}", spec["source"].get("path", "")


def _folder_problems(fleet: Fleet, path: str, by_path: dict[str, OutputFile]) -> list[str]:
    """Why the repository folder `path` would not build, or nothing."""
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
        kustomization = by_path.get(normpath(join(folder, KUSTOMIZATION)))
        if kustomization is None:
            problems.append(f"path {path}: {folder} has no {KUSTOMIZATION} in the rendered tree")
            continue
        body = kustomization.manifests[0].body
        entries = [str(r) for r in body.get("resources", [])] + [str(p["path"]) for p in body.get("patches", []) if "path" in p]
        for entry in entries:
            target = normpath(join(folder, entry))
            if normpath(join(target, KUSTOMIZATION)) in by_path:
                pending.append(target)
            elif target not in by_path:
                problems.append(f"path {path}: {folder}/{KUSTOMIZATION} lists {entry}, which the rendered tree does not have")
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

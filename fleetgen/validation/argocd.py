"""Will Argo CD accept and order what fleetgen renders for it? Checks of the planned files.

- The hub's ApplicationSets, expanded as Argo CD's list generator does (each element's parameters
  put into the template's `{{name}}` placeholders), give exactly one root Application per fleet.yaml
  cluster; reconcile.py then checks the folders those roots sync like any other Application's.
- Every Application names an AppProject fleetgen renders where it lives (the hub's folder, or the
  cluster's own argocd/ folder), whose sourceRepos admit its repository and whose destinations
  admit its destination; every object the Application syncs from the fleet repository is of a kind
  the project allows, in a namespace of its destinations (Argo CD's own rules: a namespaced kind is
  allowed when the whitelist is absent or lists it, a cluster-scoped kind only when listed).
- With `progressiveSync`, a note: the ApplicationSet controller must run with progressive syncs on.
- A root whose children sync in more than one wave needs argocd-cm's health check of
  Applications, or the waves order only their creation: it must be among the rendered objects, or
  (`applicationHealth: yours`) a note says the user's Argo CD must carry it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from posixpath import join, normpath, relpath
from typing import Any

from fleetgen.errors import Finding, Severity
from fleetgen.model import Fleet
from fleetgen.render.argocd import ENTRY_FOLDER, HUB_FOLDER
from fleetgen.render.argocd_apps import CLUSTER_LABEL, HEALTH_KEY, PLATFORM_FOLDER, SYNC_WAVE
from fleetgen.render.layout import OutputFile

AT = ("gitops", "argocd")
_PLACEHOLDER = re.compile(r"\{\{([^{}]*)\}\}")
KUSTOMIZATION = "kustomization.yaml"


def _put(value: Any, params: dict[str, str]) -> Any:
    """`value` with every `{{name}}` of a known parameter replaced (others are left as they are)."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: params.get(m.group(1).strip(), m.group(0)), value)
    if isinstance(value, dict):
        return {_put(k, params): _put(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [_put(v, params) for v in value]
    return value


def generated_applications(application_set: dict[str, Any]) -> list[dict[str, Any]]:
    """The Applications an ApplicationSet's list generators make (other generators make none here)."""
    spec = application_set.get("spec") or {}
    template = spec.get("template") or {}
    out = []
    for generator in spec.get("generators") or []:
        for element in (generator.get("list") or {}).get("elements") or []:
            params = {str(k): str(v) for k, v in element.items()}
            metadata = {**_put(template.get("metadata") or {}, params), "namespace": application_set["metadata"].get("namespace")}
            out.append(
                {
                    "apiVersion": application_set["apiVersion"],
                    "kind": "Application",
                    "metadata": metadata,
                    **_put({"spec": template.get("spec")}, params),
                }
            )
    return out


def _bodies(files: list[OutputFile]) -> list[dict[str, Any]]:
    return [m.body for f in files for m in f.manifests if "metadata" in m.body]


def _of_kind(bodies: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [b for b in bodies if b.get("kind") == kind and str(b.get("apiVersion", "")).startswith("argoproj.io/")]


def objects_under(fleet: Fleet, path: str, by_path: dict[str, OutputFile]) -> list[dict[str, Any]]:
    """The objects a kustomization folder of the rendered tree builds to (by kind, namespace and name:
    patches and labels change neither), following the folders it includes."""
    found: list[dict[str, Any]] = []
    pending, seen = [relpath(normpath(path), normpath(fleet.gitops.path))], set()
    while pending:
        folder = pending.pop()
        kustomization = by_path.get(normpath(join(folder, KUSTOMIZATION)))
        if folder in seen or kustomization is None:
            continue
        seen.add(folder)
        for entry in kustomization.manifests[0].body.get("resources", []):
            target = normpath(join(folder, str(entry)))
            if normpath(join(target, KUSTOMIZATION)) in by_path:
                pending.append(target)
            elif target in by_path:
                found += _bodies([by_path[target]])
    return found


def _permits_destination(project: dict[str, Any], destination: dict[str, Any], namespace: str) -> bool:
    for allowed in project["spec"].get("destinations") or []:
        where = ("name", destination["name"]) if "name" in destination else ("server", destination.get("server", ""))
        if where[0] in allowed and fnmatchcase(where[1], allowed[where[0]]) and fnmatchcase(namespace, allowed.get("namespace", "")):
            return True
    return False


def _permits_kind(project: dict[str, Any], group: str, kind: str, namespaced: bool) -> bool:
    spec = project["spec"]
    listed = spec.get("namespaceResourceWhitelist") if namespaced else spec.get("clusterResourceWhitelist")
    if listed is None:
        return namespaced
    return any(fnmatchcase(kind, item["kind"]) and fnmatchcase(group, item["group"]) for item in listed)


def _project_problems(
    fleet: Fleet, app: dict[str, Any], projects: dict[str, dict[str, Any]], by_path: dict[str, OutputFile]
) -> Iterator[str]:
    name, spec = app["metadata"]["name"], app["spec"]
    project = projects.get(spec.get("project", ""))
    if project is None:
        yield f"Application {name} is in project {spec.get('project')}, which is not rendered beside it"
        return
    source, destination = spec.get("source") or {}, spec.get("destination") or {}
    if not any(fnmatchcase(source.get("repoURL", ""), r) for r in project["spec"].get("sourceRepos") or []):
        yield f"Application {name}: project {spec['project']} does not admit its repository {source.get('repoURL')}"
    if not _permits_destination(project, destination, destination.get("namespace", "")):
        yield f"Application {name}: project {spec['project']} does not admit its destination {destination}"
    if source.get("repoURL") != fleet.gitops.repository or "path" not in source:
        return
    refused: dict[str, None] = {}
    for body in objects_under(fleet, source["path"], by_path):
        group, namespace = str(body["apiVersion"]).rpartition("/")[0], body["metadata"].get("namespace", "")
        what = f"{body['kind']} {namespace + '/' if namespace else ''}{body['metadata']['name']}"
        if not _permits_kind(project, group, body["kind"], bool(namespace)):
            refused[f"{what}: project {spec['project']} does not allow kind {body['kind']} ({group or 'core'})"] = None
        elif namespace and not _permits_destination(project, destination, namespace):
            refused[f"{what}: project {spec['project']} does not allow namespace {namespace}"] = None
    yield from (f"Application {name} syncs {problem}" for problem in refused)


def argocd_findings(fleet: Fleet, files: list[OutputFile], clusters: set[int]) -> list[Finding]:
    """Problems of the Argo CD objects of the planned tree (clusters `clusters` and the hub's folder)."""
    if fleet.gitops.engine != "argocd":
        return []
    by_path = {f.path: f for f in files}
    hub = _bodies([f for f in files if f.path.startswith(HUB_FOLDER + "/")])
    roots = [app for appset in _of_kind(hub, "ApplicationSet") for app in generated_applications(appset)]
    findings: list[Finding] = []
    made = [str(app["metadata"].get("labels", {}).get(CLUSTER_LABEL)) for app in roots]
    for cluster in fleet.clusters:
        if hub and made.count(cluster.name) != 1:
            # fix: Render again with this fleetgen (the committed tree is not its output)
            findings.append(
                Finding(
                    AT, f"{cluster.name}: the hub's ApplicationSet generates {made.count(cluster.name)} root Applications for it, not 1"
                )
            )
    health_seen = any(HEALTH_KEY in (b.get("data") or {}) for b in hub if b.get("kind") == "ConfigMap")
    needs_health: list[str] = []
    hub_projects = {p["metadata"]["name"]: p for p in _of_kind(hub, "AppProject")}
    for problem in (p for app in _of_kind(hub, "Application") for p in _project_problems(fleet, app, hub_projects, by_path)):
        # fix: Render again with this fleetgen (the committed tree is not its output)
        findings.append(Finding(AT, f"hub: {problem}"))
    for index in sorted(clusters):
        name = fleet.clusters[index].name
        own = _bodies([f for f in files if f.path.startswith(f"clusters/{name}/{ENTRY_FOLDER}/")])
        children = _bodies([f for f in files if f.path.startswith(f"clusters/{name}/{PLATFORM_FOLDER}/")])
        projects = hub_projects or {p["metadata"]["name"]: p for p in _of_kind(own, "AppProject")}
        mine = [app for app in roots if app["metadata"].get("labels", {}).get(CLUSTER_LABEL) == name]
        for app in mine + _of_kind(own, "Application") + _of_kind(children, "Application"):
            # fix: Render again with this fleetgen (the committed tree is not its output)
            findings += [Finding(AT, f"{name}: {problem}") for problem in _project_problems(fleet, app, projects, by_path)]
        waves = {(app["metadata"].get("annotations") or {}).get(SYNC_WAVE, "0") for app in _of_kind(children, "Application")}
        health_here = health_seen or any(HEALTH_KEY in (b.get("data") or {}) for b in own if b.get("kind") == "ConfigMap")
        if len(waves) > 1 and not health_here:
            needs_health.append(name)
    if needs_health and fleet.gitops.argocd.application_health == "yours":
        message = (
            f"the Applications of {', '.join(needs_health)} sync in waves that wait for each other only if your argocd-cm has "
            f"{HEALTH_KEY} (Argo CD assesses no Application's health without it; see the documentation: Deploy with Argo CD)"
        )
        # fix: Add the health setting to your argocd-cm, as Deploy with Argo CD shows
        findings.append(Finding(AT + ("applicationHealth",), message, Severity.NOTE))
    elif needs_health:
        # fix: Add the health setting to argocd-cm, as Deploy with Argo CD shows
        findings.append(
            Finding(AT, f"{', '.join(needs_health)}: sync waves of Applications without argocd-cm's {HEALTH_KEY} in the rendered tree")
        )
    if hub and fleet.gitops.argocd.progressive_sync:
        message = (
            "the ApplicationSet syncs the clusters' roots in RollingSync steps only when its controller runs with progressive "
            'syncs on (applicationsetcontroller.enable.progressive.syncs: "true" in argocd-cmd-params-cm); without it nothing syncs them'
        )
        # fix: Turn progressive syncs on in argocd-cmd-params-cm, or drop progressiveSync
        findings.append(Finding(AT + ("progressiveSync",), message, Severity.NOTE))
    return findings

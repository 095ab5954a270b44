"""Argo CD output: the hub's ApplicationSet, in-cluster bootstraps, projects, waves that wait, rollout steps.

No Argo CD controller runs here. What it would do is simulated in this file from its documented
semantics, independently of fleetgen's own code: the list generator makes one Application per
element, the template's `{{name}}` placeholders replaced by the element's values (fasttemplate, the
default when goTemplate is off); RollingSync selects Applications by matchExpressions on their
labels; an AppProject admits a namespaced kind when its whitelist is absent or lists it, a
cluster-scoped kind only when listed, and a namespace only when a destination's glob matches. The
trees are built with the real `kubectl kustomize`, the objects checked against the upstream CRDs
with their CEL rules, and argocd-cm's health check runs in a real Lua 5.1 (gopher-lua, which Argo CD
embeds, implements 5.1).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.model import Fleet
from fleetgen.render import cluster_objects
from fleetgen.render.layout import plan
from fleetgen.render.rendered import Rendered
from fleetgen.validation.reconcile import reconcile_findings
from fleetgen.validation.rendered_objects import Schemas, validate_hub, validate_rendered
from fleetgen.workflows.tree_files import render_files

Build = Callable[[Path], list[dict[str, Any]]]
CRDs = dict[tuple[str, str], dict[str, Any]]
HEALTH_KEY = "resource.customizations.health.argoproj.io_Application"


def variant(mode: str = "hub", **argocd: Any) -> str:
    text = replace_once(EXAMPLE.read_text(encoding="utf-8"), "engine: flux ", "engine: argocd")
    options = ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in {"mode": mode, **argocd}.items())
    return replace_once(text, "  branch: main\n", f"  branch: main\n  argocd: {{{options}}}\n")


def fleet_of(text: str) -> Fleet:
    return load_fleet_text(text.encode()).fleet


def write(fleet: Fleet, root: Path) -> None:
    for path, content in render_files(fleet).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)


def key(body: dict[str, Any]) -> tuple[str, str, str]:
    return body["kind"], body["metadata"].get("namespace", ""), body["metadata"]["name"]


# -- Argo CD, simulated ------------------------------------------------------------------------


def fasttemplate(value: Any, params: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\{\{\s*([\w.-]+)\s*\}\}", lambda m: params[m.group(1)], value)
    if isinstance(value, dict):
        return {k: fasttemplate(v, params) for k, v in value.items()}
    return [fasttemplate(v, params) for v in value] if isinstance(value, list) else value


def list_generator(appset: dict[str, Any]) -> list[dict[str, Any]]:
    (generator,) = appset["spec"]["generators"]
    template = appset["spec"]["template"]
    return [
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **fasttemplate(template, element)}
        for element in generator["list"]["elements"]
    ]


def selected(step: dict[str, Any], labels: dict[str, str]) -> bool:
    for expression in step["matchExpressions"]:
        hit = labels.get(expression["key"]) in expression["values"]
        if hit != (expression["operator"] == "In"):
            return False
    return True


def permitted(project: dict[str, Any], body: dict[str, Any], destination: dict[str, str]) -> bool:
    spec, group = project["spec"], body["apiVersion"].rpartition("/")[0]
    namespace = body["metadata"].get("namespace")
    whitelist = spec.get("namespaceResourceWhitelist") if namespace else spec.get("clusterResourceWhitelist")
    kind_ok = (namespace is not None and whitelist is None) or any(
        fnmatchcase(group, w["group"]) and fnmatchcase(body["kind"], w["kind"]) for w in whitelist or []
    )
    if not namespace:
        return kind_ok
    where = [d for d in spec["destinations"] if all(fnmatchcase(destination[k], d[k]) for k in destination if k != "namespace" and k in d)]
    return kind_ok and any(fnmatchcase(namespace, d["namespace"]) for d in where)


# -- the hub ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Fleet, Path]:
    fleet = fleet_of(variant("hub", progressiveSync=True))
    root = tmp_path_factory.mktemp("hub")
    write(fleet, root)
    return fleet, root


def test_one_apply_bootstraps_every_cluster_and_each_gets_exactly_its_objects(hub_tree: tuple[Fleet, Path], kustomize: Build) -> None:
    """kubectl apply -k argocd: the bootstrap syncs its own folder; the ApplicationSet makes one root per
    fleet.yaml cluster; each root's children (fleet Application, team Applications) sync folders that
    build, together, to exactly the objects the cluster must get, each object once."""
    fleet, root = hub_tree
    assert not any((root / "clusters" / c.name / "argocd").exists() for c in fleet.clusters)  # nothing to apply per cluster
    bootstrap = {key(b): b for b in kustomize(root / "argocd")}
    self_sync = bootstrap[("Application", "argocd", "contoso-ai-bootstrap")]
    assert self_sync["spec"]["source"]["path"] == "argocd" and "automated" in self_sync["spec"]["syncPolicy"]
    (appset,) = [b for b in bootstrap.values() if b["kind"] == "ApplicationSet"]
    roots = list_generator(appset)
    assert sorted(r["metadata"]["name"] for r in roots) == sorted(f"contoso-ai-{c.name}-root" for c in fleet.clusters)
    for index, cluster in enumerate(fleet.clusters):
        (mine,) = [r for r in roots if r["metadata"]["labels"]["fleetgen/cluster"] == cluster.name]
        assert mine["spec"] == Rendered(fleet).entry_point(index)[-1].body["spec"], "validate, diff and explain see what Argo CD generates"
        children = kustomize(root / mine["spec"]["source"]["path"])
        # a cluster leaving fleet.yaml: its root goes, and with it its Applications, but not the cluster's objects
        assert mine["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io"]
        assert not [c for c in children if "finalizers" in c["metadata"]]
        synced: list[dict[str, Any]] = []
        for app in (c for c in children if c["kind"] == "Application" and "path" in c["spec"]["source"]):
            assert app["spec"]["destination"]["name"] == cluster.name
            synced += kustomize(root / app["spec"]["source"]["path"])
        keys = [key(b) for b in synced]
        assert len(keys) == len(set(keys)), f"{cluster.name}: an object is synced by two Applications"
        assert sorted(keys) == sorted(m.key for m in cluster_objects(fleet, index))


def test_a_cluster_added_to_fleet_yaml_is_one_more_generated_root() -> None:
    text = variant("hub")
    start = text.index("  - name: dev-eastus")  # the last cluster: it runs to the next top-level line
    end = start + re.search(r"^\S", text[start:], re.MULTILINE).start()  # type: ignore[union-attr]
    bigger = fleet_of(text[:end] + text[start:end].replace("dev-eastus", "dev-westus") + text[end:])
    (appset,) = [m.body for f in Rendered(bigger).hub_files for m in f.manifests if m.body.get("kind") == "ApplicationSet"]
    assert [r["spec"]["source"]["path"] for r in list_generator(appset)][-1] == "clusters/dev-westus/platform"
    assert reconcile_findings(bigger, plan(bigger)) == []


def test_every_argocd_object_passes_the_upstream_crds_and_their_cel_rules(crd_schemas: CRDs) -> None:
    for mode, options in (("hub", {"progressiveSync": True}), ("hub", {}), ("in-cluster", {})):
        fleet = fleet_of(variant(mode, **options))
        rendered, schemas = Rendered(fleet), Schemas(crds=crd_schemas)
        problems = validate_rendered(rendered, schemas, strict=True) + validate_hub(rendered, schemas, strict=True)
        assert [f.message for f in problems if f.severity is not Severity.NOTE] == []
        every = [m.body for f in plan(fleet) for m in f.manifests] + [
            m.body for i in range(len(fleet.clusters)) for m in rendered.entry_point(i)
        ]
        bodies = [b for b in every if b.get("apiVersion", "").startswith("argoproj.io/")]
        for body in bodies:
            jsonschema.Draft7Validator(crd_schemas[(body["apiVersion"], body["kind"])]).validate(body)
        kinds = {b["kind"] for b in bodies}
        assert kinds == ({"Application", "AppProject", "ApplicationSet"} if mode == "hub" else {"Application", "AppProject"})
    project = next(b for b in bodies if b["kind"] == "AppProject")
    broken = {**project, "spec": {**project["spec"], "destinations": [{"namespace": "x", "serverr": "y"}]}}
    with pytest.raises(jsonschema.ValidationError):  # the check above can fail
        jsonschema.Draft7Validator(crd_schemas[("argoproj.io/v1alpha1", "AppProject")]).validate(broken)


# -- waves that wait ---------------------------------------------------------------------------


def health(lua_source: str, application: dict[str, Any]) -> dict[str, str]:
    """Run a health check as Argo CD does: the object as the global `obj`, the script's table returned."""
    from lupa import lua51

    lua = lua51.LuaRuntime(unpack_returned_tuples=True)

    def table(value: Any) -> Any:
        if isinstance(value, dict):
            return lua.table_from({k: table(v) for k, v in value.items()})
        return lua.table_from([table(v) for v in value]) if isinstance(value, list) else value

    lua.globals().obj = table(application)
    result = lua.execute(lua_source)
    return {"status": result["status"], "message": result["message"]}


def test_each_wave_waits_until_the_one_before_is_healthy() -> None:
    """The add-ons (CRDs, controllers) sync first, the fleet's Application (namespaces, queues) next,
    the teams' last; argocd-cm's Application health check, run in Lua, is Healthy only for an
    Application that is synced and healthy, so each wave really waits for the one before."""
    fleet = fleet_of(variant("hub"))
    index = [c.name for c in fleet.clusters].index("training-eastus")
    children = [m.body for m in Rendered(fleet).entry_point(index) if m.body["kind"] == "Application"]
    waves = {
        c["metadata"]["name"]: int(c["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
        for c in children
        if "annotations" in c["metadata"]
    }
    assert waves["kueue-training-eastus"] < waves["contoso-ai-training-eastus"] < waves["contoso-ai-training-eastus-team-nlp"]
    assert waves["gpu-operator-training-eastus"] < waves["contoso-ai-training-eastus"]
    (config,) = [m.body for f in Rendered(fleet).hub_files for m in f.manifests if m.body.get("kind") == "ConfigMap"]
    assert config["metadata"]["name"] == "argocd-cm" and config["metadata"]["labels"]["app.kubernetes.io/part-of"] == "argocd"
    assert "Prune=false" in config["metadata"]["annotations"]["argocd.argoproj.io/sync-options"]
    lua_source = config["data"][HEALTH_KEY]

    def app(**status: Any) -> dict[str, Any]:
        return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "x"}, "spec": {}, **status}

    synced = {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}}
    assert health(lua_source, app(status=synced))["status"] == "Healthy"
    assert health(lua_source, app())["status"] == "Progressing"  # not yet assessed: wait
    assert health(lua_source, app(status={"sync": {"status": "OutOfSync"}, "health": {"status": "Healthy"}}))["status"] == "Progressing"
    running = {**synced, "operationState": {"phase": "Running"}}
    assert health(lua_source, app(status=running)) == {"status": "Progressing", "message": "syncing"}
    degraded = {"sync": {"status": "Synced"}, "health": {"status": "Degraded", "message": "CRD missing"}}
    assert health(lua_source, app(status=degraded)) == {"status": "Degraded", "message": "CRD missing"}


def test_health_check_is_required_when_the_user_keeps_argocd_cm(tmp_path: Path) -> None:
    """applicationHealth: yours renders no argocd-cm and validate says, as a note, what the waves need;
    an ApplicationSet or project that would not reconcile is an error at gitops."""
    theirs = fleet_of(variant("hub", applicationHealth="yours"))
    assert not [m for f in Rendered(theirs).hub_files for m in f.manifests if m.body.get("kind") == "ConfigMap"]
    (note,) = reconcile_findings(theirs, plan(theirs))
    assert note.severity is Severity.NOTE and HEALTH_KEY in note.message and note.path == ("gitops", "argocd", "applicationHealth")
    ours = fleet_of(variant("hub"))
    files = plan(ours)
    assert reconcile_findings(ours, files) == []
    without = [f for f in files if not (f.path == "argocd/bootstrap.yaml")]
    bootstrap = next(f for f in files if f.path == "argocd/bootstrap.yaml")
    kept = tuple(m for m in bootstrap.manifests if m.body.get("kind") != "ConfigMap")
    messages = [f.message for f in reconcile_findings(ours, [*without, type(bootstrap)(bootstrap.path, kept)])]
    assert any("sync waves of Applications without argocd-cm's" in m for m in messages)


# -- projects ----------------------------------------------------------------------------------


def test_each_application_syncs_only_what_its_project_allows(hub_tree: tuple[Fleet, Path], kustomize: Build) -> None:
    fleet, root = hub_tree
    bootstrap = kustomize(root / "argocd")
    projects = {b["metadata"]["name"]: b for b in bootstrap if b["kind"] == "AppProject"}
    fleet_project = projects["contoso-ai"]
    assert {"group": "*", "kind": "*"} not in fleet_project["spec"]["clusterResourceWhitelist"]
    assert {w["kind"] for w in fleet_project["spec"]["clusterResourceWhitelist"]} >= {"Namespace", "ClusterQueue", "PriorityClass"}
    for cluster in fleet.clusters:
        for app in (c for c in kustomize(root / "clusters" / cluster.name / "platform") if c["kind"] == "Application"):
            project, destination = projects[app["spec"]["project"]], app["spec"]["destination"]
            assert any(fnmatchcase(app["spec"]["source"]["repoURL"], r) for r in project["spec"]["sourceRepos"])
            if "path" not in app["spec"]["source"]:
                assert app["spec"]["project"] == "contoso-ai-platform"  # a Helm chart
                continue
            for body in kustomize(root / app["spec"]["source"]["path"]):
                assert permitted(project, body, destination), (app["metadata"]["name"], key(body))
        for _, team in fleet.placements[cluster.name]:
            project = projects[f"contoso-ai-team-{team.name}"]
            assert {d["namespace"] for d in project["spec"]["destinations"]} == {team.namespace}
            assert "clusterResourceWhitelist" not in project["spec"]
            assert not permitted(project, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-x"}}, {"name": cluster.name})
            elsewhere = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kube-system"}}
            assert not permitted(project, elsewhere, {"name": cluster.name})
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": team.namespace}}
            assert permitted(project, job, {"name": cluster.name})  # what the team's Role lets it create
    # a kind the team's own Role rules add (data-science: StatefulSets) is one its project allows; not another team's
    stateful = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "team-data-science"}}
    assert permitted(projects["contoso-ai-team-data-science"], stateful, {"name": "dev-eastus"})
    assert not permitted(
        projects["contoso-ai-team-nlp"], {**stateful, "metadata": {"name": "s", "namespace": "team-nlp"}}, {"name": "dev-eastus"}
    )
    team_clusters = {d["name"] for d in projects["contoso-ai-team-robotics"]["spec"]["destinations"]}
    assert team_clusters == {"training-eastus", "dev-eastus"}


def test_validate_refuses_an_object_its_applications_project_does_not_allow() -> None:
    fleet = fleet_of(variant("hub"))
    files = plan(fleet)
    bootstrap = next(f for f in files if f.path == "argocd/bootstrap.yaml")
    manifests = []
    for m in bootstrap.manifests:
        if m.body.get("kind") == "AppProject" and m.body["metadata"]["name"] == "contoso-ai-team-nlp":
            spec = dict(m.body["spec"])
            spec["namespaceResourceWhitelist"] = [w for w in spec["namespaceResourceWhitelist"] if w["kind"] != "LocalQueue"]
            m = type(m)({**m.body, "spec": spec}, m.source)
        manifests.append(m)
    changed = [f if f is not bootstrap else type(f)(f.path, tuple(manifests)) for f in files]
    messages = [f.message for f in reconcile_findings(fleet, changed)]
    assert (
        "training-eastus: Application contoso-ai-training-eastus-team-nlp syncs LocalQueue team-nlp/team-nlp-queue: "
        "project contoso-ai-team-nlp does not allow kind LocalQueue (kueue.x-k8s.io)" in messages
    )


# -- in-cluster ---------------------------------------------------------------------------------


def test_in_cluster_argocd_bootstraps_itself_from_the_clusters_folder(tmp_path: Path, kustomize: Build) -> None:
    fleet = fleet_of(variant("in-cluster"))
    write(fleet, tmp_path)
    assert not (tmp_path / "argocd").exists()
    for cluster in fleet.clusters:
        entry = {key(b): b for b in kustomize(tmp_path / "clusters" / cluster.name / "argocd")}
        bootstrap = entry[("Application", "argocd", "contoso-ai-bootstrap")]
        assert bootstrap["spec"]["source"]["path"] == f"clusters/{cluster.name}/argocd"  # it syncs itself
        assert HEALTH_KEY in entry[("ConfigMap", "argocd", "argocd-cm")]["data"]
        root = entry[("Application", "argocd", f"contoso-ai-{cluster.name}-root")]
        children = kustomize(tmp_path / root["spec"]["source"]["path"])
        assert {c["spec"]["destination"].get("server") for c in children if c["kind"] == "Application"} == {
            "https://kubernetes.default.svc"
        }
        teams = {b["metadata"]["name"] for b in entry.values() if b["kind"] == "AppProject"} - {"contoso-ai", "contoso-ai-platform"}
        assert teams == {f"contoso-ai-team-{team.name}" for _, team in fleet.placements[cluster.name]}
    assert reconcile_findings(fleet, plan(fleet)) == []


# -- rollout waves ------------------------------------------------------------------------------


def test_rolling_sync_takes_the_clusters_in_upgrade_wave_order(hub_tree: tuple[Fleet, Path], kustomize: Build) -> None:
    fleet, root = hub_tree
    (appset,) = [b for b in kustomize(root / "argocd") if b["kind"] == "ApplicationSet"]
    steps = appset["spec"]["strategy"]["rollingSync"]["steps"]
    assert appset["spec"]["strategy"]["type"] == "RollingSync" and "automated" not in appset["spec"]["template"]["spec"]["syncPolicy"]
    (note,) = reconcile_findings(fleet, plan(fleet))  # what the controller needs, said by validate
    assert note.severity is Severity.NOTE and "applicationsetcontroller.enable.progressive.syncs" in note.message
    order = []
    for app in list_generator(appset):
        (step,) = [n for n, s in enumerate(steps) if selected(s, app["metadata"]["labels"])]  # each root in exactly one step
        order.append((step, app["metadata"]["labels"]["fleetgen/cluster"]))
    by_step = [sorted(c for s, c in order if s == n) for n in range(len(steps))]
    # upgrade plan's order: dev, the production canary (outside any DR pair), then the DR pair's halves apart
    assert by_step == [["dev-eastus"], ["training-eastus"], ["prod-inference-eastus"], ["prod-inference-westeu"]]
    for cluster in fleet.clusters:
        for app in (c for c in kustomize(root / "clusters" / cluster.name / "platform") if c["kind"] == "Application"):
            assert app["metadata"]["labels"]["fleetgen/rollout-wave"] == str(
                1 + next(n for n, c in enumerate(by_step) if cluster.name in c)
            )


def test_progressive_sync_needs_the_hub(example_text: str) -> None:
    text = variant("in-cluster", progressiveSync=True)
    line = line_of(text, "  argocd: {mode: in-cluster")
    assert findings_of(text) == [
        f"{line}:3: gitops.argocd: progressiveSync needs mode hub: only the hub's ApplicationSet can roll the clusters out in waves"
    ]


def test_argocd_options_with_flux_are_refused_at_their_line(example_text: str) -> None:
    text = replace_once(example_text, "  branch: main\n", "  branch: main\n  argocd: {mode: in-cluster}\n")
    assert findings_of(text) == [f"{line_of(text, 'argocd: {mode')}:3: gitops.argocd: set only with engine argocd (the engine is flux)"]

"""Drift against what Git holds: a cluster is compared with the rendered tree committed at the revision its
engine applied (Flux's lastAppliedRevision, Argo CD's sync revision), all of it: team and cluster objects,
the platform folder's HelmReleases and their sources, and the engine's own entry objects.

A fleet repository is committed with its rendered tree, fleet.yaml is then edited or fleetgen's render
moves on, and the dumps (tests/gitops_dumps.py) are built from the committed tree with the real
`kubectl kustomize`, as the engine builds it.
"""

from __future__ import annotations

import json
import posixpath
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from committed_repo import committed_example, engine_built, flux_dump, write_dump
from conftest import EXAMPLE, REPO, examples, git, replace_once
from generated_fleets import edited, fleet_text, fleets, git_credentials
from gitops_dumps import cluster_dump
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.live.committed import synced_folders
from fleetgen.workflows import live_state, render_tree

pytestmark = pytest.mark.slow  # each test builds a committed tree with kustomize and runs kubectl: 10 to 40 s
Run = Callable[..., subprocess.CompletedProcess[str]]
Build = Callable[[Path], list[dict[str, Any]]]


@pytest.fixture
def fleet_repo(tmp_path: Path) -> tuple[Path, str]:
    return committed_example(tmp_path / "fleet-config")


def item(dump: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in dump["items"] if o["kind"] == kind and o["metadata"]["name"] == name)


def test_a_dump_of_the_committed_tree_has_no_drift_even_after_fleet_yaml_moves_on(
    fleet_repo: tuple[Path, str], kustomize: Build, cli_run: Run
) -> None:
    folder, commit = fleet_repo
    dump = flux_dump(kustomize, folder, "training-eastus", commit)
    kinds = {o["kind"] for o in dump["items"]}
    assert {"HelmRelease", "OCIRepository", "HelmRepository", "GitRepository", "Kustomization", "ClusterQueue"} <= kinds
    live = write_dump(folder, dump)
    done = cli_run("drift", "--cluster", "training-eastus", "--live", str(live), cwd=folder)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "training-eastus: no drift",
        f"  against the tree committed at {commit[:12]} (Flux Kustomization flux-system/contoso-ai)",
    ]
    # fleet.yaml edited, not rendered: the cluster still runs the committed tree, which is not drift
    text = (folder / "fleet.yaml").read_text(encoding="utf-8")
    (folder / "fleet.yaml").write_text(replace_once(text, "costCenter: cc-1000", "costCenter: cc-2000"), encoding="utf-8")
    done = cli_run("drift", "--cluster", "training-eastus", "--live", str(live), cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    [head, against, note] = done.stdout.splitlines()
    assert head == "training-eastus: no drift"
    assert note.startswith("note: the committed tree is stale (") and note.endswith("); run fleetgen render")
    # the old comparison, with a fresh render of fleet.yaml, sees the edit on every object
    old = cli_run("drift", "--cluster", "training-eastus", "--live", str(live), "--against", "fleet.yaml", cwd=folder)
    assert old.returncode == 1 and "metadata.labels.cost-center: cc-2000 -> cc-1000" in old.stdout


def test_a_new_commit_the_engine_has_not_applied_is_not_drift(fleet_repo: tuple[Path, str], kustomize: Build, cli_run: Run) -> None:
    folder, first = fleet_repo
    text = (folder / "fleet.yaml").read_text(encoding="utf-8")
    (folder / "fleet.yaml").write_text(replace_once(text, "costCenter: cc-1000", "costCenter: cc-2000"), encoding="utf-8")
    assert cli_run("render", cwd=folder).returncode == 0
    git(folder, "commit", "-qam", "cost center")
    # the cluster still runs the first commit: its dump is built from that tree, and Flux says so
    old_tree = folder.parent / "old"
    git(folder, "worktree", "add", "-q", str(old_tree), first)
    dump = flux_dump(kustomize, old_tree, "dev-eastus", first)
    live = write_dump(folder, dump)
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(live), cwd=folder)
    assert (done.returncode, done.stdout.splitlines()[0]) == (0, "dev-eastus: no drift"), done.stdout + done.stderr
    assert (
        done.stdout.splitlines()[2]
        == (  # HEAD's render differs from that tree: not drift, not a stale HEAD either
            f"note: fleet.yaml renders the tree committed at {first[:12]} otherwise (base/priority-classes/priority-classes.yaml and 4 more): "
            "a later commit (not synced yet) or this fleetgen changes it"
        )
    )
    # without the engine's record (no status), HEAD is the reference: the cost center moved
    for obj in dump["items"]:
        if obj["kind"] == "Kustomization":
            del obj["status"]
    write_dump(folder, dump)
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(live), cwd=folder)
    assert done.returncode == 1 and "(HEAD)" in done.stdout and "cost-center: cc-2000 -> cc-1000" in done.stdout
    # and --ref names the revision the cluster runs
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(live), "--ref", first, cwd=folder)
    assert (done.returncode, done.stdout.splitlines()[1]) == (0, f"  against the tree committed at {first[:12]} (--ref)")
    # where the engine records a revision, a different --ref is said to be unused, never silently preferred or dropped
    done = cli_run(
        "drift",
        "--cluster",
        "dev-eastus",
        "--live",
        str(write_dump(folder, flux_dump(kustomize, old_tree, "dev-eastus", first))),
        "--ref",
        "HEAD",
        cwd=folder,
    )
    assert done.stdout.splitlines()[1].endswith(
        "(Flux Kustomization flux-system/contoso-ai; --ref HEAD not used: the engine's record wins)"
    )


def test_a_hand_edited_helm_release_and_a_deleted_source_are_drift(fleet_repo: tuple[Path, str], kustomize: Build, cli_run: Run) -> None:
    folder, commit = fleet_repo
    dump = flux_dump(kustomize, folder, "training-eastus", commit)
    operator = item(dump, "HelmRelease", "gpu-operator")
    driver = operator["spec"]["values"]["driver"]["version"]
    operator["spec"]["values"]["driver"]["version"] = "999.1.1"
    dump["items"].remove(item(dump, "HelmRepository", "volcano"))
    live = write_dump(folder, dump)
    done = cli_run("drift", "--cluster", "training-eastus", "--live", str(live), cwd=folder)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        "training-eastus: 1 missing, 0 extra, 1 changed",
        f"  against the tree committed at {commit[:12]} (Flux Kustomization flux-system/contoso-ai)",
        "  - HelmRepository flux-system/volcano (missing)",
        "  ~ HelmRelease flux-system/gpu-operator",
        f"      spec.values.driver.version: {driver} -> 999.1.1",
    ]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        ({"lastAppliedRevision": "main@sha1:not-a-commit"}, "'main@sha1:not-a-commit', is not a git commit; give --ref REV"),
        ({"lastAppliedRevision": "main@sha1:" + "ab" * 20}, "is not a commit of this repository; git fetch, or give --ref REV"),
    ],
)
def test_a_revision_git_cannot_use_is_an_error_not_a_silent_head(
    fleet_repo: tuple[Path, str], kustomize: Build, cli_run: Run, status: dict[str, str], message: str
) -> None:
    folder, commit = fleet_repo
    dump = flux_dump(kustomize, folder, "dev-eastus", commit)
    item(dump, "Kustomization", "contoso-ai")["status"] = status
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(write_dump(folder, dump)), cwd=folder)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("fleetgen: ") and message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_outside_git_drift_says_how_to_compare_with_a_fresh_render(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    (tmp_path / "live.yaml").write_text("apiVersion: v1\nkind: List\nitems: []\n", encoding="utf-8")
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", "live.yaml", env={"GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    assert done.returncode == 2 and "not in a git repository" in done.stderr and "--against fleet.yaml" in done.stderr


def test_argo_cd_records_its_sync_revision_on_the_application(fleet_repo: tuple[Path, str], kustomize: Build, cli_run: Run) -> None:
    folder, _ = fleet_repo
    text = (folder / "fleet.yaml").read_text(encoding="utf-8")
    argocd = "engine: argocd\n  argocd: {mode: in-cluster}\n  #"
    (folder / "fleet.yaml").write_text(replace_once(text, "engine: flux ", argocd), encoding="utf-8")
    assert cli_run("render", cwd=folder).returncode == 0
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "argo cd")
    commit = git(folder, "rev-parse", "HEAD").strip()
    cluster_folder = folder / "clusters" / "dev-eastus"
    synced = ["", "platform", "argocd"] + [f"teams/{p.name}" for p in sorted((cluster_folder / "teams").iterdir())]
    dump = cluster_dump(engine_built(kustomize, folder, "dev-eastus", synced), "argocd")
    apps = [o for o in dump["items"] if o["kind"] == "Application"]
    assert apps
    for app in apps:
        app["status"] = {"sync": {"status": "Synced", "revision": commit}}
    # a later commit nobody synced: the Applications' revision still wins over HEAD
    (folder / "README.md").write_text("fleet\n", encoding="utf-8")
    git(folder, "add", "README.md")
    git(folder, "commit", "-qm", "readme")
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(write_dump(folder, dump)), cwd=folder)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert done.stdout.splitlines()[0] == "dev-eastus: no drift"
    assert f"committed at {commit[:12]} (Argo CD Application argocd/contoso-ai-dev-eastus)" in done.stdout


def test_what_an_older_fleetgen_committed_is_what_the_cluster_is_judged_against(
    fleet_repo: tuple[Path, str], kustomize: Build, cli_run: Run
) -> None:
    """The tree was rendered by a fleetgen that wrote one alert fewer and the cluster runs it: the newer fleetgen
    installed now renders that alert, which is the tree's staleness, not drift; one real change is one finding."""
    folder, _ = fleet_repo
    rules = folder / "clusters" / "dev-eastus" / "observability.yaml"
    documents = list(yaml.safe_load_all(rules.read_text(encoding="utf-8")))
    document = next(d for d in documents if d["kind"] == "PrometheusRule")
    health = next(g for g in document["spec"]["groups"] if g["name"] == "gpu-health")
    health["rules"] = [r for r in health["rules"] if r.get("alert") != "GPUDoubleBitEccError"]
    older_text = yaml.safe_dump_all(documents, sort_keys=False)
    rules.write_text("# Generated by fleetgen from fleet.yaml. Do not edit.\n" + older_text, encoding="utf-8")
    git(folder, "commit", "-qam", "the tree as an older fleetgen rendered it")
    older = git(folder, "rev-parse", "HEAD").strip()
    dump = flux_dump(kustomize, folder, "dev-eastus", older)
    live = write_dump(folder, dump)
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(live), cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[2] == "note: the committed tree is stale (clusters/dev-eastus/observability.yaml); run fleetgen render"
    item(dump, "LocalQueue", "team-nlp-queue")["spec"]["clusterQueue"] = "shadow-queue"
    write_dump(folder, dump)
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(live), "--format", "json", cwd=folder)
    report = json.loads(done.stdout)
    jsonschema.validate(report, json.loads((REPO / "schemas" / "output" / "drift.schema.json").read_text(encoding="utf-8")))
    assert (done.returncode, report["missing"], report["extra"]) == (1, [], [])
    assert [(o["kind"], o["fields"]) for o in report["changed"]] == [
        ("LocalQueue", [{"path": "spec.clusterQueue", "live": "shadow-queue", "rendered": "gpu-cluster-queue"}])
    ]
    assert report["stale"].startswith("the committed tree is stale") and report["against"].startswith(f"the tree committed at {older[:12]}")


def _on_an_argo_cd_hub(folder: Path, kustomize: Build, cli_run: Run, cluster: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The fleet moved to an Argo CD hub (the default placement), rendered and committed: what the engine builds for
    CLUSTER, and which of it lives on the hub (the Applications and whatever sits in Argo CD's namespace)."""
    text = (folder / "fleet.yaml").read_text(encoding="utf-8")
    (folder / "fleet.yaml").write_text(replace_once(text, "engine: flux ", "engine: argocd #"), encoding="utf-8")
    assert cli_run("render", cwd=folder).returncode == 0
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "argo cd hub")
    cluster_folder = folder / "clusters" / cluster
    synced = ["", "platform"] + [f"teams/{p.name}" for p in sorted((cluster_folder / "teams").iterdir())]
    built = engine_built(kustomize, folder, cluster, synced)
    on_hub = [o for o in built if o["apiVersion"].startswith("argoproj.io/") or o["metadata"].get("namespace") == "argocd"]
    return built, on_hub


def test_with_an_argo_cd_hub_the_applications_are_compared_only_with_the_hubs_objects(
    fleet_repo: tuple[Path, str], kustomize: Build, cli_run: Run
) -> None:
    folder, _ = fleet_repo
    built, on_hub = _on_an_argo_cd_hub(folder, kustomize, cli_run, "dev-eastus")
    on_target = [o for o in built if o not in on_hub]  # the Applications and the repository Secrets live on the hub
    assert len(on_target) < len(built)
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(write_dump(folder, cluster_dump(on_target, "argocd"))), cwd=folder)
    assert (done.returncode, done.stdout.splitlines()[0]) == (0, "dev-eastus: no drift"), done.stdout + done.stderr
    assert "(HEAD); the hub's objects (Applications, repository Secrets) are not in the live objects, so not compared" in done.stdout
    # with the hub's objects in the dump, an Application the hub lost is drift
    hub_apps = [o for o in on_hub if o["kind"] == "Application"][1:] + [o for o in on_hub if o["kind"] != "Application"]
    done = cli_run(
        "drift", "--cluster", "dev-eastus", "--live", str(write_dump(folder, cluster_dump(on_target + hub_apps, "argocd"))), cwd=folder
    )
    assert done.returncode == 1 and done.stdout.splitlines()[0] == "dev-eastus: 1 missing, 0 extra, 0 changed", done.stdout


def test_each_object_is_judged_at_the_revision_of_the_kustomization_that_syncs_it(
    fleet_repo: tuple[Path, str], kustomize: Build, cli_run: Run
) -> None:
    """During a platform change Flux applies `platform` first (the cluster's Kustomization dependsOn it): platform at
    the new commit, the cluster's objects still at the old one. The platform's objects are judged at its revision."""
    folder, first = fleet_repo
    text = (folder / "fleet.yaml").read_text(encoding="utf-8")
    newer = replace_once(
        text, "  jupyterhub:                # GPU notebooks", "  kueue: {version: 0.19.3}\n  jupyterhub:                # GPU notebooks"
    )
    (folder / "fleet.yaml").write_text(newer, encoding="utf-8")
    assert cli_run("render", cwd=folder).returncode == 0
    git(folder, "commit", "-qam", "kueue 0.19.3")
    second = git(folder, "rev-parse", "HEAD").strip()
    old_tree = folder.parent / "old"
    git(folder, "worktree", "add", "-q", str(old_tree), first)
    dump = cluster_dump(
        engine_built(kustomize, old_tree, "dev-eastus", ["", "flux-system"]) + kustomize(folder / "clusters" / "dev-eastus" / "platform"),
        "flux",
    )
    applied = {"contoso-ai": first, "platform": second}
    for obj in dump["items"]:
        if obj["kind"] == "Kustomization":
            obj["status"] = {"lastAppliedRevision": f"main@sha1:{applied[obj['metadata']['name']]}", "observedGeneration": 1}
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(write_dump(folder, dump)), cwd=folder)
    assert (done.returncode, done.stdout.splitlines()[:2]) == (
        0,
        [
            "dev-eastus: no drift",
            f"  against the tree committed at {first[:12]} (Flux Kustomization flux-system/contoso-ai); "
            f"clusters/dev-eastus/platform at {second[:12]} (Flux Kustomization flux-system/platform)",
        ],
    ), done.stdout + done.stderr
    # Kustomizations of other sources (an OCI artifact, another folder) say nothing about this tree, whatever they record
    others = [
        {"kind": "Kustomization", "sourceRef": {"kind": "OCIRepository", "name": "apps"}, "path": "./clusters/dev-eastus/platform"},
        {"kind": "Kustomization", "sourceRef": {"kind": "GitRepository", "name": "apps"}, "path": "./apps"},
    ]
    for n, spec in enumerate(others):
        status = {"lastAppliedRevision": f"latest@sha256:{'ab' * 32}" if n == 0 else "main@sha1:not-a-commit"}
        meta = {"name": f"other-{n}", "namespace": "flux-system"}
        dump["items"].append(
            {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": spec.pop("kind"), "metadata": meta, "spec": spec, "status": status}
        )
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(write_dump(folder, dump)), cwd=folder)
    assert (done.returncode, done.stdout.splitlines()[0]) == (0, "dev-eastus: no drift"), done.stdout + done.stderr
    # the platform's objects are judged at its revision, not at the cluster's: a platform that did not move is drift
    stale = cluster_dump(engine_built(kustomize, old_tree, "dev-eastus", ["", "platform", "flux-system"]), "flux")
    for obj in stale["items"]:
        if obj["kind"] == "Kustomization":
            obj["status"] = {"lastAppliedRevision": f"main@sha1:{applied[obj['metadata']['name']]}", "observedGeneration": 1}
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(write_dump(folder, stale)), cwd=folder)
    assert done.returncode == 1 and "spec.ref.tag: 0.19.3 -> 0.19.2" in done.stdout, done.stdout + done.stderr


def test_with_an_argo_cd_hub_its_repository_secrets_are_not_missing_on_the_spoke(
    fleet_repo: tuple[Path, str], kustomize: Build, cli_run: Run
) -> None:
    """The platform folder syncs to the hub: its Applications and the OCI repositories' Secrets in Argo CD's namespace
    live there, so a spoke's dump never misses them."""
    folder, _ = fleet_repo
    built, on_hub = _on_an_argo_cd_hub(folder, kustomize, cli_run, "training-eastus")
    assert any(o["kind"] == "Secret" for o in on_hub)
    spoke = [o for o in built if o not in on_hub]
    done = cli_run("drift", "--cluster", "training-eastus", "--live", str(write_dump(folder, cluster_dump(spoke, "argocd"))), cwd=folder)
    assert (done.returncode, done.stdout.splitlines()[0]) == (0, "training-eastus: no drift"), done.stdout + done.stderr
    assert "the hub's objects (Applications, repository Secrets) are not in the live objects, so not compared" in done.stdout
    # with the hub's objects in the dump, a repository Secret the hub lost is drift
    lost = [o for o in on_hub if o["kind"] != "Secret"]
    done = cli_run(
        "drift", "--cluster", "training-eastus", "--live", str(write_dump(folder, cluster_dump(spoke + lost, "argocd"))), cwd=folder
    )
    assert done.returncode == 1 and "Secret argocd/" in done.stdout and "(missing)" in done.stdout, done.stdout


def test_a_committed_tree_kustomize_cannot_build_is_one_line_naming_the_folder(fleet_repo: tuple[Path, str], cli_run: Run) -> None:
    folder, _ = fleet_repo
    shutil.rmtree(folder / "clusters" / "dev-eastus" / "teams" / "nlp")  # the overlay still lists it
    git(folder, "commit", "-qam", "a folder lost by hand")
    (folder.parent / "live.yaml").write_text("apiVersion: v1\nkind: List\nitems: []\n", encoding="utf-8")
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", str(folder.parent / "live.yaml"), cwd=folder)
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith("fleetgen: clusters/dev-eastus (committed): kubectl kustomize failed: ") and "teams/nlp" in line, line
    assert str(folder.parent) not in line and "fleetgen-drift-" not in line  # no scratch paths


ENGINES = [("flux", None), ("argocd", "in-cluster"), ("argocd", "hub")]


def _synced_by(body: dict[str, Any], under: str) -> str | None:
    """The folder a Flux Kustomization or Argo CD Application syncs, relative to `under` (gitops.path, where the tree
    sits in the repository)."""
    spec = body.get("spec") or {}
    path = spec.get("path") if body["kind"] == "Kustomization" else (spec.get("source") or {}).get("path")
    return posixpath.relpath(posixpath.normpath(str(path).lstrip("/")), under) if path else None


@pytest.mark.slow
@examples(8)
@given(fleet=fleets(), engine=st.sampled_from(ENGINES), data=st.data())
def test_a_dump_of_what_each_sync_object_applied_at_its_own_revision_is_no_drift(
    kustomize: Build, fleet: dict[str, Any], engine: tuple[str, str | None], data: st.DataObject
) -> None:
    """Two commits (the second moves the fleet's cost centre, a label of every object, so every folder differs),
    and each folder an engine syncs on its own applied at either: the dump holds each folder's objects as its own sync
    object applied them, that object recording its revision. Whatever the mix, drift finds nothing. On an Argo CD hub
    the spoke's dump holds no Application: its folders are judged at HEAD, and the hub's objects are not missed."""
    fleet = edited(fleet)
    kind, mode = engine
    if fleet["gitops"]["engine"] != kind:
        fleet["gitops"] = data.draw(git_credentials(engines=(kind,)), label="gitops")
        if "sops" in fleet.get("secrets", {}):
            del fleet["secrets"]  # SOPS decryption is Flux's: an Argo CD fleet takes its Secrets from a store or by hand
    if mode is not None:
        fleet["gitops"]["argocd"] = {"mode": mode}
    index = data.draw(st.integers(0, len(fleet["clusters"]) - 1), label="cluster")
    cluster = fleet["clusters"][index]["name"]
    with tempfile.TemporaryDirectory(prefix="drift-revisions-") as scratch:
        repo = Path(scratch) / "fleet"
        under = posixpath.normpath(fleet["gitops"].get("path", "."))
        folder = repo / under  # fleet.yaml and its tree sit where gitops.path says the engine finds them
        folder.mkdir(parents=True)
        commits = []
        for centre in ("cc-1000", "cc-2000"):  # the fleet's labels, on every object of every folder
            fleet["metadata"]["costCenter"] = centre
            (folder / "fleet.yaml").write_text(fleet_text(fleet), encoding="utf-8")
            render_tree(folder / "fleet.yaml", None)
            if not commits:
                git(repo, "init", "-q", "-b", "main")
            git(repo, "add", "-A")
            git(repo, "commit", "-qm", f"cost centre {centre}")
            commits.append(git(repo, "rev-parse", "HEAD").strip())
        trees = [Path(scratch) / "first" / under, folder]
        git(repo, "worktree", "add", "-q", str(Path(scratch) / "first"), commits[0])
        folders = synced_folders(folder, f"clusters/{cluster}")
        built: dict[tuple[str, int], list[dict[str, Any]]] = {}

        def build(name: str, revision: int) -> list[dict[str, Any]]:
            if (name, revision) not in built:
                built[(name, revision)] = kustomize(trees[revision] / name)
            return built[(name, revision)]

        at = {name: data.draw(st.sampled_from([0, 1]), label=name) for name in folders}
        if mode == "hub":
            at = dict.fromkeys(folders, 1)  # no Application on the spoke records a revision: HEAD
        # a folder no sync object syncs (Flux's flux-system, applied by hand once) is judged with the cluster's folder
        syncing = {_synced_by(o, under) for name in folders for o in build(name, 1) if o["kind"] in ("Kustomization", "Application")}
        at |= {name: at[f"clusters/{cluster}"] for name in folders if name not in syncing}
        objects = [body for name in folders for body in build(name, at[name])]
        if mode == "hub":
            objects = [o for o in objects if not o["apiVersion"].startswith("argoproj.io/") and o["metadata"].get("namespace") != "argocd"]
        dump = cluster_dump(objects, kind)
        for obj in dump["items"]:
            synced = _synced_by(obj, under) if obj["kind"] in ("Kustomization", "Application") else None
            if synced in at:
                commit = commits[at[synced]]
                obj["status"] = {"lastAppliedRevision": f"main@sha1:{commit}"} if kind == "flux" else {"sync": {"revision": commit}}
        (Path(scratch) / "live.yaml").write_text(yaml.safe_dump(dump), encoding="utf-8")
        result = live_state.drift(folder / "fleet.yaml", cluster, (Path(scratch) / "live.yaml",), None)
        assert not result.found, (at, result)

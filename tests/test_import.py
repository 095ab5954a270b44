"""`fleetgen import` on a fleet repository written by hand (tests/import_repo), through the real command.

The round trip: every cluster of the original repository and of the tree rendered from the imported
fleet.yaml is built with the real `kubectl kustomize`, and their modelled objects must not differ.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fleetgen.compare.object_diff import ObjectKey, diff_objects
from fleetgen.importer.verify import FLEET_INFO, modelled_view

ORIGINAL = Path(__file__).parent / "import_repo"
CLUSTERS = ("dev-west", "serve-east", "train-east")
FLAGS = ("--cost-center", "cc-1000", "--engine", "flux", "--repository", "https://github.com/acme/fleet-config")
Run = Callable[..., subprocess.CompletedProcess[str]]


def _fleet_info_as_stated(before: dict[Any, Any], after: dict[Any, Any]) -> None:
    """fleet-info: the rendered ConfigMap holds every key the original states (and may state more)."""
    stated = before[FLEET_INFO]["data"]
    after[FLEET_INFO] = {"data": {k: v for k, v in after[FLEET_INFO]["data"].items() if k in stated}}


def test_import_then_render_builds_the_same_objects(
    tmp_path: Path, cli_run: Run, kustomize: Callable[[Path], list[dict[str, Any]]]
) -> None:
    done = cli_run("import", str(ORIGINAL), "--out", "fleet.yaml", *FLAGS)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "fleet.yaml: written",
        "base/namespaces/vision/limit-range.yaml: LimitRange team-vision/notebook-defaults: a kind fleetgen does not model "
        "(on dev-west, serve-east, train-east): not modelled, not imported",
        "import: 1 unmodelled (--keep-unmodelled keeps them as hand-written files), 0 not reproduced",
    ]
    text = (tmp_path / "fleet.yaml").read_text()
    assert ": TODO(import)" not in text  # nothing left to fill in
    assert "naming:\n  roleBinding: gpu-workload-binding\n" in text  # the repository's names are kept
    assert "    names:\n      localQueue: nlp-jobs\n" in text
    assert "names:\n      networkPolicy: recsys-isolation\n" in text
    assert "train-east:  # what kustomize builds on train-east differs here\n        requests:\n          gpu: 4\n" in text

    rendered = cli_run("render", "fleet.yaml")
    assert rendered.returncode == 0, rendered.stderr
    assert sorted(p.name for p in (tmp_path / "clusters").iterdir()) == list(CLUSTERS)
    for cluster in CLUSTERS:
        before = modelled_view(kustomize(ORIGINAL / "clusters" / cluster))
        after = modelled_view(kustomize(tmp_path / "clusters" / cluster))
        _fleet_info_as_stated(before, after)
        assert diff_objects(before, after) == [], cluster
        assert len(before) > 20


def _with_unmodelled_objects(repo: Path) -> None:
    """The test repository plus a second Role beside nlp's own (in its file) and, on train-east only, an
    object of a kind fleetgen does not know, whose namespace comes from its kustomization."""
    shutil.copytree(ORIGINAL, repo)
    role = repo / "base/rbac/nlp/role.yaml"
    extra_role = "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: notebook-reader\n  namespace: team-nlp\n"
    role.write_text(role.read_text() + extra_role + "rules:\n  - apiGroups: ['']\n    resources: [pods]\n    verbs: [get]\n")
    extras = repo / "clusters/train-east/extras"
    extras.mkdir()
    (extras / "kustomization.yaml").write_text("namespace: team-nlp\nresources:\n  - widget.yaml\n")
    (extras / "widget.yaml").write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n")
    overlay = repo / "clusters/train-east/kustomization.yaml"
    overlay.write_text(overlay.read_text().replace("  - kueue.yaml\n", "  - kueue.yaml\n  - extras\n"))


def _by_key(objects: list[dict[str, Any]]) -> dict[ObjectKey, dict[str, Any]]:
    return {ObjectKey.of(o): o for o in objects}


def test_keep_unmodelled_round_trips_every_object_and_render_never_touches_the_kept_files(
    tmp_path: Path, cli_run: Run, kustomize: Callable[[Path], list[dict[str, Any]]]
) -> None:
    repo, out = tmp_path / "repo", tmp_path / "out"
    _with_unmodelled_objects(repo)
    out.mkdir()
    done = cli_run("import", str(repo), "--out", "out/fleet.yaml", "--keep-unmodelled", *FLAGS)
    assert done.returncode == 0, done.stderr
    assert "not modelled" not in done.stderr
    assert (
        "clusters/train-east/hand-written/clusters/train-east/extras/widget.yaml: kept Widget team-nlp/w1 "
        "(from clusters/train-east/extras/widget.yaml)"
    ) in done.stderr
    kept = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != "fleet.yaml")
    assert kept == sorted(
        [f"clusters/{c}/hand-written/base/{f}" for c in CLUSTERS for f in ("namespaces/vision/limit-range.yaml", "rbac/nlp/role.yaml")]
        + ["clusters/train-east/hand-written/clusters/train-east/extras/widget.yaml"]
    )
    # a file whose documents are exactly the kept objects is copied as it is, comments and all
    limit_range = (repo / "base/namespaces/vision/limit-range.yaml").read_bytes()
    assert (out / "clusters/dev-west/hand-written/base/namespaces/vision/limit-range.yaml").read_bytes() == limit_range
    # otherwise the objects are kept as the cluster built them: the second Role alone, the Widget with its namespace
    role = (out / "clusters/dev-west/hand-written/base/rbac/nlp/role.yaml").read_text()
    assert role.startswith("# Kept by fleetgen import: the objects of base/rbac/nlp/role.yaml") and "gpu-workload" not in role
    assert "namespace: team-nlp" in (out / "clusters/train-east/hand-written/clusters/train-east/extras/widget.yaml").read_text()

    assert cli_run("render", "fleet.yaml", cwd=out).returncode == 0
    hand_written = {p: p.read_bytes() for p in out.rglob("hand-written/**/*") if p.is_file()}
    assert "hand-written" not in (out / ".fleetgen-ledger").read_text()
    for cluster in CLUSTERS:
        before = kustomize(repo / "clusters" / cluster)
        after = kustomize(out / "clusters" / cluster)
        modelled_before, modelled_after = modelled_view(before), modelled_view(after)
        _fleet_info_as_stated(modelled_before, modelled_after)
        assert diff_objects(modelled_before, modelled_after) == [], cluster
        built = _by_key(after)
        for key, body in _by_key(before).items():
            assert key in built, (cluster, key)
            if key not in modelled_before:  # a kept object: the same, but for the label render puts on the whole cluster
                labels = built[key]["metadata"].pop("labels")
                assert set(labels) == {"environment"}
                assert diff_objects({key: body}, {key: built[key]}) == [], (cluster, key)
    assert ObjectKey("LimitRange", "team-vision", "notebook-defaults") in _by_key(after)

    checked = cli_run("check", "fleet.yaml", cwd=out)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    again = cli_run("render", "fleet.yaml", cwd=out)
    assert again.returncode == 0 and "0 written, 0 removed" in again.stderr
    assert {p: p.read_bytes() for p in out.rglob("hand-written/**/*") if p.is_file()} == hand_written

    # a second import into the same folder keeps the same bytes; a kept file changed by hand is never overwritten
    assert cli_run("import", str(repo), "--out", "out/fleet.yaml", "--force", "--keep-unmodelled", *FLAGS).returncode == 0
    edited = out / "clusters/dev-west/hand-written/base/namespaces/vision/limit-range.yaml"
    edited.write_text("# mine\n")
    refused = cli_run("import", str(repo), "--out", "out/fleet.yaml", "--force", "--keep-unmodelled", *FLAGS)
    assert refused.returncode == 2
    assert refused.stderr.endswith("limit-range.yaml: exists with other content; move it away to keep the unmodelled objects there\n")
    assert edited.read_text() == "# mine\n"


def test_keep_unmodelled_needs_out(cli_run: Run) -> None:
    done = cli_run("import", str(ORIGINAL), "--keep-unmodelled", *FLAGS)
    assert (done.returncode, done.stderr) == (
        2,
        "fleetgen: --keep-unmodelled: needs --out (the files go into clusters/<name>/hand-written/ beside it)\n",
    )


def test_import_is_deterministic_and_prints_without_out(tmp_path: Path, cli_run: Run) -> None:
    first = cli_run("import", str(ORIGINAL), *FLAGS)
    second = cli_run("import", str(ORIGINAL), *FLAGS)
    assert first.returncode == second.returncode == 1
    assert first.stdout == second.stdout and first.stdout.startswith("# yaml-language-server")
    assert not (tmp_path / "fleet.yaml").exists()


def test_an_existing_file_is_not_overwritten_without_force(tmp_path: Path, cli_run: Run) -> None:
    (tmp_path / "fleet.yaml").write_text("mine\n")
    done = cli_run("import", str(ORIGINAL), "--out", "fleet.yaml", *FLAGS)
    assert (done.returncode, done.stderr) == (2, "fleetgen: fleet.yaml: exists; pass --force to replace it\n")
    assert (tmp_path / "fleet.yaml").read_text() == "mine\n"
    assert cli_run("import", str(ORIGINAL), "--out", "fleet.yaml", "--force", *FLAGS).returncode == 1
    assert (tmp_path / "fleet.yaml").read_text().startswith("# yaml-language-server")


def test_missing_facts_become_placeholders_that_validate_rejects(tmp_path: Path, cli_run: Run) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ORIGINAL, repo)
    (repo / "clusters/dev-west/fleet-info.yaml").unlink()
    kustomization = repo / "clusters/dev-west/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - fleet-info.yaml\n", ""))
    done = cli_run("import", str(repo), "--out", "fleet.yaml", "--fact", "dev-west:region=westus2", *FLAGS)
    assert done.returncode == 1
    assert "13 value(s) left as TODO(import)"  # environment, 5 versions, 7 pool facts in done.stderr
    text = (tmp_path / "fleet.yaml").read_text()
    assert "region: westus2\n" in text  # from --fact
    assert (
        "environment: TODO(import)  # TODO(import): environment unknown: add a kube-public/fleet-info ConfigMap to clusters/dev-west/"
        in text
    )
    checked = cli_run("validate", "fleet.yaml")
    assert checked.returncode == 1
    assert "clusters[0].environment: Input should be 'dev', 'staging' or 'production', got 'TODO(import)'" in checked.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("import", "no-such-folder"), "fleetgen: no-such-folder: no such folder\n"),
        (("import", "."), "fleetgen: .: not a fleet repository: no clusters/ folder\n"),
        (
            ("import", str(ORIGINAL), "--fact", "region=x"),
            "fleetgen: --fact 'region=x': expected CLUSTER:KEY=VALUE, e.g. dev-west:region=westus2\n",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli_run: Run, args: tuple[str, ...], message: str) -> None:
    done = cli_run(*args)
    assert (done.returncode, done.stderr) == (2, message)

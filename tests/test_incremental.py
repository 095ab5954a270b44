"""Reuse between renders: an incremental render gives exactly the bytes of a render from scratch.

The cache lives in the user's cache folder ($XDG_CACHE_HOME/fleetgen), never in the repository;
its entries are keyed by the hash of their inputs, and a damaged or deleted cache changes nothing
but the time a command takes.
"""

from __future__ import annotations

import copy
import os
import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import EXAMPLE, git
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.cache import Cache
from fleetgen.checks.load import load_fleet_text
from fleetgen.cli import cli
from fleetgen.compare.object_diff import diff_objects
from fleetgen.errors import FindingsError, Severity
from fleetgen.output.emit import dump_documents
from fleetgen.output.emitted import _pack, _unpack
from fleetgen.render import rendered as rendered_module
from fleetgen.render.rendered import Rendered
from fleetgen.review import diff_fleets
from fleetgen.validation import rendered_objects as validate_module
from fleetgen.validation.rendered_objects import Schemas
from fleetgen.validation.verdicts import ClusterVerdict, ClusterVerdicts
from fleetgen.workflows import CheckOptions, freshness, render_tree

sys.path.insert(0, str(EXAMPLE.parent / "benchmarks"))
from synth import synthetic_fleet


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under `root` but fleet.yaml."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != "fleet.yaml"}


@pytest.fixture
def cache_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache folder of this test's own, outside the folder it renders in."""
    home = tmp_path_factory.mktemp("cache-home")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def entries(home: Path, kind: str) -> list[Path]:
    """The cache's entries of one kind."""
    return sorted(p for p in (home / "fleetgen").glob(f"*/{kind}/*") if p.is_file())


def one_edit(fleet: dict[str, Any], rng: random.Random) -> str:
    """Change one value of `fleet` in place (each edit keeps the fleet valid); says what it did."""
    team = rng.choice(fleet["teams"])
    cluster = rng.choice(fleet["clusters"])
    choice = rng.randrange(6)
    if choice == 0:
        team["quota"]["pods"] = rng.randrange(10, 100)
        return f"{team['name']} pods"
    if choice == 1:
        team["quota"]["requests"]["memory"] = f"{rng.randrange(16, 128)}Gi"
        return f"{team['name']} memory"
    if choice == 2:
        placed = [name for name, value in team["clusters"].items()]
        name = rng.choice(placed)
        gpu = rng.choice([1, 2])
        team["clusters"][name] = {"requests": {"gpu": gpu}, "limits": {"gpu": gpu}}
        return f"{team['name']} gpu on {name}"
    if choice == 3:
        pool = rng.choice(cluster["nodePools"])
        pool["maxNodes"] += rng.randrange(1, 4)
        return f"{cluster['name']} maxNodes"
    if choice == 4:
        team["project"] = f"project-{rng.randrange(100)}"
        return f"{team['name']} project"
    if len(team["clusters"]) > 1:
        name = rng.choice(sorted(team["clusters"]))
        del team["clusters"][name]
        return f"{team['name']} leaves {name}"
    return "nothing"


def render_both(fleet: dict[str, Any], incremental: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Render `fleet` over the last render in `incremental`, and into an empty `scratch`: the same findings too."""
    text = yaml.safe_dump(fleet, sort_keys=False, width=1000)
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    findings = []
    for folder in (incremental, scratch):
        monkeypatch.chdir(folder)  # the same name in both headers
        Path("fleet.yaml").write_text(text)
        findings.append(render_tree(Path("fleet.yaml"), None).findings)
    assert findings[0] == findings[1]  # per-cluster verdicts taken from the cache say what validating says


@pytest.mark.slow
def test_random_edits_render_incrementally_to_the_bytes_of_a_fresh_render(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(20)
    fleet = yaml.safe_load(synthetic_fleet(8, 24, 3))
    incremental, scratch = tmp_path / "incremental", tmp_path / "scratch"
    incremental.mkdir()
    render_both(fleet, incremental, scratch, monkeypatch)
    assert entries(cache_home, "cluster-files") and entries(cache_home, "emitted-files")
    for step in range(25):
        before = copy.deepcopy(fleet)
        what = one_edit(fleet, rng)
        assert_lent_clusters_are_exact(before, fleet, what)
        render_both(fleet, incremental, scratch, monkeypatch)
        assert tree_bytes(incremental) == tree_bytes(scratch), f"edit {step}: {what}"
        monkeypatch.chdir(incremental)
        assert not freshness(Path("fleet.yaml"), None).found, f"edit {step}: {what}"


def assert_lent_clusters_are_exact(before: dict[str, Any], after: dict[str, Any], what: str) -> None:
    """A render lent the clusters whose fingerprint did not change equals a render from scratch, and so does the diff."""
    old, new = (load_fleet_text(yaml.safe_dump(f, sort_keys=False).encode()).fleet for f in (before, after))
    base, fresh = Rendered(old), Rendered(new)
    lent = Rendered(new, lender=base)
    changed = []
    for index in range(len(new.clusters)):
        assert dump_documents([m.body for m in lent.objects(index) + lent.entry_point(index)]) == dump_documents(
            [m.body for m in fresh.objects(index) + fresh.entry_point(index)]
        ), f"{what}: cluster {index}"
        if diff_objects(base.keyed(index), fresh.keyed(index)):
            changed.append(new.clusters[index].name)
    assert [c.cluster for c in diff_fleets(base, lent, "a", "b").clusters] == changed, what


def test_a_damaged_or_deleted_cache_changes_nothing(tmp_path: Path, cache_home: Path) -> None:
    fleet = tmp_path / "out" / "fleet.yaml"
    fleet.parent.mkdir()
    fleet.write_text(synthetic_fleet(3, 6, 2))
    render_tree(fleet, None)
    expected = tree_bytes(fleet.parent)
    kept = entries(cache_home, "cluster-files") + entries(cache_home, "emitted-files")
    assert kept

    for entry in kept:  # damaged: cut short, so no entry parses
        entry.write_bytes(entry.read_bytes()[:40])
    (fleet.parent / "clusters" / "c0000-dev" / "cluster.yaml").unlink()
    render_tree(fleet, None)
    assert tree_bytes(fleet.parent) == expected
    assert all(_unpack(entry.read_bytes()) for entry in kept)  # written again whole

    shutil.rmtree(cache_home / "fleetgen")
    (fleet.parent / "clusters" / "c0000-dev" / "cluster.yaml").unlink()
    render_tree(fleet, None)
    assert tree_bytes(fleet.parent) == expected


@given(files=st.dictionaries(st.text(), st.binary(), min_size=1, max_size=5))
def test_emitted_files_come_back_from_an_entry_as_they_went_in(files: dict[str, bytes]) -> None:
    """Any paths (a line break, a lone surrogate) and any bytes (line breaks, invalid UTF-8) survive an entry."""
    assert _unpack(_pack(files)) == files


def test_the_cache_stays_out_of_the_repository(tmp_path: Path, cli_run: Any) -> None:
    """A pull request can fill the repository, and CI checks pull requests: fleetgen keeps and reads
    nothing there but the tree and its ledger, and a cache-like folder committed there is never read."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "fleet.yaml").write_text(synthetic_fleet(2, 4, 1))
    home = {"XDG_CACHE_HOME": str(tmp_path / "home")}
    assert cli_run("validate", cwd=repo, env=home).returncode == 0
    assert cli_run("render", cwd=repo, env=home).returncode == 0
    made = {p.relative_to(repo).parts[0] for p in repo.rglob("*") if ".git" not in p.relative_to(repo).parts}
    assert made == {"fleet.yaml", "base", "clusters", "FLEET.md", ".fleetgen-ledger"}
    assert list((tmp_path / "home" / "fleetgen").rglob("*"))
    (repo / ".fleetgen-cache").mkdir()
    (repo / ".fleetgen-cache" / "clusters.json").write_text("{}")
    assert cli_run("check", cwd=repo, env=home).returncode == 0


def test_a_render_plans_only_the_clusters_a_change_touches(tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each cluster's folder is remembered by its input fingerprint: after a one-line change only the
    clusters whose inputs moved are planned again, and without the cache every cluster is."""
    from pr_bench import one_line_change

    incremental, scratch = tmp_path / "incremental", tmp_path / "scratch"
    incremental.mkdir()
    scratch.mkdir()
    before = synthetic_fleet(6, 12, 3)
    after = one_line_change(before)
    monkeypatch.chdir(incremental)  # file headers name the fleet file as given: the same relative name in both
    Path("fleet.yaml").write_text(before)
    render_tree(Path("fleet.yaml"), None)

    planned: list[str] = []
    plan_one = rendered_module.cluster_plan

    def counted(fleet: Any, index: int, *built: Any) -> Any:
        planned.append(fleet.clusters[index].name)
        return plan_one(fleet, index, *built)

    monkeypatch.setattr(rendered_module, "cluster_plan", counted)
    Path("fleet.yaml").write_text(after)
    render_tree(Path("fleet.yaml"), None)
    old, new = (Rendered(load_fleet_text(t.encode()).fleet) for t in (before, after))
    moved = [c.name for c, a, b in zip(new.fleet.clusters, old.fingerprints, new.fingerprints, strict=True) if a != b]
    assert planned == moved and 0 < len(moved) < 6
    taken = tree_bytes(incremental)

    planned.clear()
    shutil.rmtree(cache_home / "fleetgen")
    (incremental / "clusters" / "c0000-dev" / "cluster.yaml").unlink()
    render_tree(Path("fleet.yaml"), None)
    assert planned == [c.name for c in new.fleet.clusters]

    monkeypatch.chdir(scratch)
    Path("fleet.yaml").write_text(after)
    render_tree(Path("fleet.yaml"), None)
    assert taken == tree_bytes(scratch) == tree_bytes(incremental)


def test_entries_nobody_reads_for_a_month_are_pruned(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.put("kind", "old", b"1")
    cache.put("kind", "read", b"2")
    old, read = (cache._path("kind", cache.key("kind", name)) for name in ("old", "read"))
    assert old is not None and read is not None
    month_ago = old.stat().st_mtime - 31 * 86400
    for path in (old, read):
        os.utime(path, (month_ago, month_ago))
    assert cache.get("kind", "read") == b"2"  # a read keeps it
    assert cache.prune() == 1
    assert cache.get("kind", "old") is None and cache.get("kind", "read") == b"2"
    cache.put("kind", "old", b"1")
    os.utime(old, (month_ago, month_ago))
    assert cache.prune() == 0  # at most one prune a day


def test_check_and_diff_say_the_same_with_or_without_the_cache(tmp_path: Path, cli_run: Any) -> None:
    home = tmp_path / "home"
    cache = {"XDG_CACHE_HOME": str(home)}
    """check and diff take verdicts and emitted files from the cache; their answers do not depend on it."""
    from pr_bench import one_line_change

    git(tmp_path, "init", "-q")
    (tmp_path / "fleet.yaml").write_text(synthetic_fleet(6, 12, 3))
    assert cli_run("render", env=cache).returncode == 0
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "fleet.yaml").write_text(one_line_change((tmp_path / "fleet.yaml").read_text()))
    assert cli_run("render", env=cache).returncode == 0
    assert entries(home, "fleet-passed")
    answers = []
    for _ in range(2):
        check = cli_run("check", "--format", "json", env=cache)
        diff = cli_run("diff", "--base", "HEAD", "--format", "json", env=cache)
        answers.append((check.returncode, check.stdout, diff.returncode, diff.stdout))
        shutil.rmtree(home / "fleetgen")
    assert answers[0] == answers[1]
    assert answers[0][0] == 0 and answers[0][2] == 1 and '"fresh": true' in answers[0][1]


def test_validate_keeps_the_cluster_verdicts_that_render_then_uses(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fleetgen validate` then `fleetgen render`, as a user runs them, check each cluster once.

    In this process, since a command in another one has another import path, so another cache salt."""
    (tmp_path / "fleet.yaml").write_text(synthetic_fleet(4, 8, 2))
    monkeypatch.chdir(tmp_path)
    validated: list[int] = []
    checks_one = validate_module._validate_cluster
    monkeypatch.setattr(
        validate_module, "_validate_cluster", lambda rendered, index, *rest: validated.append(index) or checks_one(rendered, index, *rest)
    )
    said = [CliRunner().invoke(cli, ["validate"]) for _ in range(2)]
    assert [(r.exit_code, r.output) for r in said] == [(0, said[0].output)] * 2 and "warning" in said[0].output
    assert validated == [0, 1, 2, 3]  # the second validate took the verdicts the first kept, warnings and all
    assert CliRunner().invoke(cli, ["render"]).exit_code == 0
    assert validated == [0, 1, 2, 3]
    shutil.rmtree(cache_home / "fleetgen")
    assert CliRunner().invoke(cli, ["render", "--out", "again"]).exit_code == 0
    assert validated == [0, 1, 2, 3] * 2 and tree_bytes(tmp_path / "again") == {
        path: data for path, data in tree_bytes(tmp_path).items() if not path.startswith("again/")
    }


def overcommitted(text: str) -> str:
    """One placement's GPU limit raised to 3 over its request of 1: the model allows it, the API server's rules do not."""
    placement = re.compile(r"(\n    c\d+-\w+:\n      requests:\n        gpu: )1(\n      limits:\n        gpu: )1\n")
    changed, count = placement.subn(r"\g<1>1\g<2>3\n", text, count=1)
    assert count == 1
    return changed


def render_errors(fleet: Path) -> list[str]:
    with pytest.raises(FindingsError) as failed:
        render_tree(fleet, None)
    return [f.message for f in failed.value.findings if f.severity is Severity.ERROR]


def test_a_stale_or_damaged_cluster_verdict_is_not_trusted(tmp_path: Path, cache_home: Path) -> None:
    """Per-cluster verdicts are keyed by everything validation reads: a cluster whose objects changed is validated again."""
    fleet = tmp_path / "out" / "fleet.yaml"
    fleet.parent.mkdir()
    text = synthetic_fleet(3, 6, 2)
    fleet.write_text(text)
    render_tree(fleet, None)  # keeps a passing verdict for every cluster
    before = tree_bytes(fleet.parent)
    bad = "GPU requests (1) and limits (3) must be equal"

    fleet.write_text(overcommitted(text))  # stale: the verdicts kept are of the clusters before the edit
    errors = render_errors(fleet)
    assert len(errors) == 1 and bad in errors[0] and "(on c000" in errors[0]
    assert tree_bytes(fleet.parent) == before

    # Verdicts saying every cluster of the edited fleet passed, under the keys render looks up, are
    # taken (the user's own cache is trusted as the user is); damaged ones are not.
    edited = load_fleet_text(overcommitted(text).encode()).fleet
    planted = ClusterVerdicts(Cache.for_user(), Schemas().digest, False)
    for fingerprint in Rendered(edited).fingerprints:
        planted.keep(fingerprint, ClusterVerdict((), ()))
    planted.save()
    for entry in entries(cache_home, "cluster-verdict"):
        entry.write_bytes(entry.read_bytes().replace(b'"findings": []', b'"findings": [', 1))
    assert any(bad in e for e in render_errors(fleet))
    assert tree_bytes(fleet.parent) == before
    planted.save()
    render_tree(fleet, None)  # intact, they are the verdicts render looks up

    # Another --strict or schema set is another key; a verdict whose entry is not a verdict is not one.
    assert ClusterVerdicts(Cache.for_user(), "other CRDs", False).get(Rendered(edited).fingerprints[0]) is None
    assert ClusterVerdict.from_text('{"findings": [[["teams", true], "x", "error"]], "kinds": []}') is None


WIDGET_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-validations: [{rule: "isURL(self.q)"}]
"""


def test_no_cluster_verdicts_with_a_crd_rule_warned_about_once_a_run(tmp_path: Path, cache_home: Path) -> None:
    """fleetgen warns about a CEL rule it cannot evaluate once a run, at the first object reaching it: what
    validating one cluster says then depends on the clusters before it, so no cluster's verdict is kept."""
    assert not Schemas().warns_once  # fleetgen's own CRDs: every rule is evaluated
    (tmp_path / "widget.yaml").write_text(WIDGET_CRD)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(synthetic_fleet(2, 4, 1))
    render_tree(fleet, None, CheckOptions(crds=(tmp_path / "widget.yaml",)))
    assert entries(cache_home, "cluster-files")
    assert not entries(cache_home, "cluster-verdict")

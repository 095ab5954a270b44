"""A new fleet repository is safe and green from its first pull request.

- init pins what CI can install: a local clone's origin remote at HEAD, once git finds HEAD there; the
  origin is a real network remote here, `git daemon` serving a bare copy of fleetgen on 127.0.0.1; a
  file:// or local-path pin only with --allow-local-source;
- the new folder is a git repository whose first commit holds everything init wrote, and its fleet
  validates with no warning (the newest version set the facts fully support);
- CODEOWNERS and one environment per approver group are written, and `fleetgen doctor` says which
  GitHub settings the files assume and catches the edits that leave the gate open.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import yaml
from conftest import git
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.authoring.codeowners import CODEOWNERS_PATH, codeowners_text, guarded_paths, owners_of, parse
from fleetgen.authoring.fleetgen_source import clone_source, network_url
from fleetgen.authoring.scaffold import WORKFLOW_PATH
from fleetgen.compat.facts import facts
from fleetgen.compat.gpu_operator import operator_facts
from fleetgen.compat.newest import newest_supported
from fleetgen.compat.rules import version_set_problems
from fleetgen.errors import InputError

Run = Callable[..., CompletedProcess[str]]
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def _clone(url: str, into: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", url, str(into)], check=True, capture_output=True)
    return into


def test_a_clone_pins_its_origin_at_head_once_the_origin_holds_it(tmp_path: Path, served_fleetgen: tuple[str, str]) -> None:
    url, commit = served_fleetgen
    clone = _clone(url, tmp_path / "clone")
    pinned = clone_source(str(clone))
    assert (pinned.url, pinned.ref, pinned.pip) == (url, commit, f"fleetgen @ git+{url}@{commit}")
    assert "found on its origin remote" in pinned.vouched

    (clone / "local.txt").write_text("not pushed\n")
    git(clone, "add", "local.txt")
    git(clone, "commit", "-qm", "local")
    with pytest.raises(
        InputError, match=r"its HEAD [0-9a-f]{12} is not on its origin remote git://127\.0\.0\.1:\d+/fleetgen\.git \(push it first\)"
    ):
        clone_source(str(clone))
    git(clone, "reset", "-q", "--hard", "HEAD~1")
    assert clone_source(str(clone)).ref == commit  # back at a commit the origin holds


def test_a_clone_whose_origin_is_local_or_missing_is_refused(tmp_path: Path, fleetgen_repository: tuple[Path, str]) -> None:
    source, commit = fleetgen_repository
    clone = _clone(f"file://{source}", tmp_path / "clone")
    with pytest.raises(InputError, match=rf"whose origin remote file://{source} is a local path, which CI cannot reach"):
        clone_source(str(clone))
    allowed = clone_source(str(clone), allow_local=True)  # tests and air-gapped mirrors, said out loud
    assert (allowed.url, allowed.ref) == (f"file://{source}", commit)
    git(clone, "remote", "set-url", "origin", str(source))
    with pytest.raises(InputError, match="is a local path"):
        clone_source(str(clone))
    git(clone, "remote", "set-url", "origin", "https://ci:s3cret-token@git.example.com/mirrors/fleetgen.git")
    with pytest.raises(InputError, match="carries a password or token") as refused:
        clone_source(str(clone))
    assert "s3cret-token" not in str(refused.value) and "https://ci:***@git.example.com/mirrors/fleetgen.git" in str(refused.value)
    git(clone, "remote", "remove", "origin")
    with pytest.raises(InputError, match="a clone with no origin remote to install from; pass --fleetgen-source URL@REF"):
        clone_source(str(clone))
    (tmp_path / "plain").mkdir()
    with pytest.raises(InputError, match="which is no git clone, so CI cannot install from it"):
        clone_source(str(tmp_path / "plain"))


HOST = st.from_regex(r"[a-z][a-z0-9-]{0,12}(\.[a-z]{2,5}){0,2}", fullmatch=True)
REPO_PATH = st.from_regex(r"[a-z0-9_-]{1,10}(/[a-z0-9_.-]{1,10}){0,3}", fullmatch=True)


@given(host=HOST, path=REPO_PATH, scheme=st.sampled_from(["https", "http", "ssh", "git", "HTTPS"]))
def test_a_network_url_is_pinned_as_it_is(host: str, path: str, scheme: str) -> None:
    url = f"{scheme}://{host}/{path}"
    assert network_url(url) == url


@given(host=HOST, path=REPO_PATH)
def test_an_scp_like_remote_is_pinned_as_the_ssh_url_pip_reads(host: str, path: str) -> None:
    assert network_url(f"git@{host}:{path}") == f"ssh://git@{host}/{path}"


@given(path=REPO_PATH, form=st.sampled_from(["file:///{}", "file://localhost/{}", "/{}", "./{}", "../{}", "{}", "~/{}", "FILE:///{}"]))
def test_a_local_path_or_file_url_is_never_a_network_url(path: str, form: str) -> None:
    assert network_url(form.format(path)) is None


def test_a_local_fleetgen_source_needs_the_flag_and_a_network_one_does_not(
    tmp_path: Path, cli_run: Run, fleetgen_repository: tuple[Path, str], served_fleetgen: tuple[str, str]
) -> None:
    source, commit = fleetgen_repository
    for local in (f"file://{source}@v0.1.0", f"{source}@v0.1.0"):
        refused = cli_run("init", "fleet", "--no-git", "--fleetgen-source", local)
        assert refused.returncode == 2 and "is a local path, which CI cannot reach" in refused.stderr, refused.stderr
        assert "--allow-local-source" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "fleet").exists()
    secret = cli_run("init", "fleet", "--no-git", "--fleetgen-source", "https://ci:tok3n@git.example.com/fleetgen@v0.1.0")
    assert secret.returncode == 2 and "carries a password or token" in secret.stderr and "tok3n" not in secret.stderr
    accepted = cli_run("init", "fleet", "--no-git", "--fleetgen-source", f"file://{source}@v0.1.0", "--allow-local-source")
    assert accepted.returncode == 0, accepted.stderr
    url, _ = served_fleetgen
    served = cli_run("init", "served", "--no-git", "--fleetgen-source", f"{url}@main")
    assert served.returncode == 0, served.stderr
    config = yaml.safe_load((tmp_path / "served" / ".pre-commit-config.yaml").read_text())
    assert config["repos"][0]["repo"] == url and config["repos"][0]["rev"] == commit


@pytest.fixture
def fresh(tmp_path: Path, cli_run: Run, fleetgen_repository: tuple[Path, str]) -> Path:
    source = f"file://{fleetgen_repository[0]}@v0.1.0"
    done = cli_run(
        "init", "fleet", "--name", "acme", "--repository", "https://github.com/acme/fleet.git", "--fleetgen-source", source,
        "--allow-local-source", env=IDENTITY,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "committed" in done.stderr
    return tmp_path / "fleet"


def test_a_fresh_repository_has_its_first_commit_and_validates_with_no_warning(fresh: Path, cli_run: Run) -> None:
    assert git(fresh, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(fresh, "status", "--porcelain") == ""  # everything init wrote is committed, nothing else
    committed = set(git(fresh, "ls-files").split())
    assert {"fleet.yaml", WORKFLOW_PATH, CODEOWNERS_PATH, "README.md", ".fleetgen-ledger", "clusters/dev/kustomization.yaml"} <= committed
    validated = cli_run("validate", "--fail-on", "warning", cwd=fresh)  # a warning would fail it
    assert validated.returncode == 0, validated.stderr
    assert "0 error(s), 0 warning(s)" in validated.stdout and "warning:" not in validated.stderr
    assert cli_run("check", cwd=fresh).returncode == 0
    versions = yaml.safe_load((fresh / "fleet.yaml").read_text())["versionSets"]["current"]
    newest = newest_supported(frozenset({"T4"}), "v25.10.1")
    assert versions == {k: str(getattr(newest, k)) for k in ("kubernetes", "driver", "cuda", "cudnn", "containerd")}


def test_a_fresh_argo_cd_repository_validates_with_no_warning_and_no_wildcard_kind(
    tmp_path: Path, cli_run: Run, fleetgen_repository: tuple[Path, str]
) -> None:
    source = f"file://{fleetgen_repository[0]}@v0.1.0"
    done = cli_run("init", "fleet", "--engine", "argocd", "--no-git", "--fleetgen-source", source, "--allow-local-source")
    assert done.returncode == 0, done.stderr
    validated = cli_run("validate", "--fail-on", "warning", cwd=tmp_path / "fleet")
    assert validated.returncode == 0 and "0 error(s), 0 warning(s)" in validated.stdout, validated.stderr
    projects = [
        doc
        for path in (tmp_path / "fleet").rglob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and doc.get("kind") == "AppProject"
    ]
    assert projects and all({"group": "*", "kind": "*"} not in p["spec"].get("clusterResourceWhitelist", []) for p in projects)


def test_no_git_leaves_a_plain_folder_and_no_identity_refuses_before_writing(
    tmp_path: Path, cli_run: Run, fleetgen_repository: tuple[Path, str]
) -> None:
    source = f"file://{fleetgen_repository[0]}@v0.1.0"
    plain = cli_run("init", "plain", "--no-git", "--fleetgen-source", source, "--allow-local-source")
    assert plain.returncode == 0 and not (tmp_path / "plain" / ".git").exists(), plain.stderr
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tuseConfigOnly = true\n")  # no name or email configured, none guessed from the host
    nobody = {k: "" for k in IDENTITY} | {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1", "EMAIL": ""}
    refused = cli_run("init", "anon", "--fleetgen-source", source, "--allow-local-source", env=nobody)
    assert refused.returncode == 2 and "git has no name and email to make the first commit with" in refused.stderr, refused.stderr
    assert "--no-git" in refused.stderr and not (tmp_path / "anon").exists()


def test_codeowners_give_the_gates_files_to_the_platform_owners(fresh: Path) -> None:
    rules = parse((fresh / CODEOWNERS_PATH).read_text())
    for path in (WORKFLOW_PATH, CODEOWNERS_PATH, "fleet.yaml"):
        rule = owners_of(rules, path)
        assert rule is not None and rule.owners == ("@acme/platform-owners",), path
    assert owners_of(rules, "clusters/dev/kustomization.yaml") is None  # the rendered tree is CI's to check, not theirs
    readme = (fresh / "README.md").read_text()
    assert "## Branch protection" in readme and "CODEOWNERS works per path" in readme and "fleet-approval-<group>" in readme


SEGMENT = st.from_regex(r"[a-z0-9_-]{1,8}", fullmatch=True)
FILE = st.builds(lambda parts, name: "/".join([*parts, f"{name}.yaml"]), st.lists(SEGMENT, max_size=2), SEGMENT)


@given(fleet_file=FILE, facts_file=st.none() | FILE, other=FILE, later_owner=SEGMENT)
def test_codeowners_init_writes_own_every_guarded_path_and_the_last_matching_line_wins(
    fleet_file: str, facts_file: str | None, other: str, later_owner: str
) -> None:
    text = codeowners_text("acme", ("platform-owners",), fleet_file, facts_file).decode()
    rules = parse(text)
    guarded = [WORKFLOW_PATH, CODEOWNERS_PATH, fleet_file, *([facts_file] if facts_file else [])]
    assert guarded_paths(fleet_file, facts_file)[1:] == guarded[2:]
    for path in guarded:
        rule = owners_of(rules, path)
        assert rule is not None and rule.owners == ("@acme/platform-owners",), (path, text)
    if other not in guarded:
        assert owners_of(rules, other) is None  # anchored lines: a file of the same name elsewhere is another file
    later = parse(text + f"/{fleet_file} @acme/{later_owner}\n")
    assert owners_of(later, fleet_file) == later[-1]


def test_each_approver_group_gets_its_own_environment(fresh: Path) -> None:
    jobs = yaml.safe_load((fresh / WORKFLOW_PATH).read_text())["jobs"]
    approval = jobs["approval"]
    assert approval["environment"] == "fleet-approval-${{ matrix.group }}"
    assert approval["strategy"]["matrix"]["group"] == "${{ fromJSON(needs.fleet.outputs.approver-groups) }}"
    assert jobs["fleet"]["outputs"]["approver-groups"] == "${{ steps.gate.outputs.approver-groups }}"
    assert jobs["approvals"]["needs"] == ["fleet", "approval"] and jobs["approvals"]["if"] == "always()"
    on = yaml.safe_load((fresh / WORKFLOW_PATH).read_text())["on"]  # quoted: a YAML 1.1 reader would take on for true
    # every pull request: a required check a path filter skips blocks the merge; pushes to the base branch leave the cache
    assert on == {"pull_request": {}, "push": {"branches": ["main"]}}


def test_doctor_lists_what_the_files_assume_and_passes_a_fresh_repository(fresh: Path, cli_run: Run) -> None:
    done = cli_run("doctor", cwd=fresh)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "require the status checks fleet, approvals" in done.stdout
    assert "  - fleet-approval-platform-owners: platform-owners" in done.stdout
    assert "  - fleet.yaml: @acme/platform-owners" in done.stdout and "Problems" not in done.stdout


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def _replace_pin(repo: Path, pin: str) -> None:
    workflow = repo / WORKFLOW_PATH
    text = workflow.read_text()
    written = yaml.safe_load(text)["jobs"]["fleet"]["steps"][2]["env"]["FLEETGEN"]
    workflow.write_text(text.replace(written, pin))


BREAKS: dict[str, tuple[Callable[[Path], None], str]] = {
    "a later CODEOWNERS line gives .github/ away": (  # the last matching line wins, as on GitHub
        lambda repo: _append(repo / CODEOWNERS_PATH, "/.github/workflows/ @acme/someone-else\n"),
        ".github/CODEOWNERS:8: .github/workflows/fleetgen.yml is owned by @acme/someone-else, no team of the platform owners",
    ),
    "fleet.yaml loses its owner": (
        lambda repo: _replace(repo / CODEOWNERS_PATH, "/fleet.yaml @acme/platform-owners\n", ""),
        ".github/CODEOWNERS: fleet.yaml has no code owner",
    ),
    "no CODEOWNERS": (lambda repo: (repo / CODEOWNERS_PATH).unlink(), ".github/CODEOWNERS: missing"),
    "a path filter": (
        lambda repo: _replace(repo / WORKFLOW_PATH, "pull_request: {}", "pull_request: {paths: [fleet.yaml]}"),
        "on.pull_request filters paths",
    ),
    "one environment for every group": (
        lambda repo: _replace(repo / WORKFLOW_PATH, "environment: fleet-approval-${{ matrix.group }}", "environment: fleet-approval"),
        "the approval job does not give each approver group its own environment",
    ),
    "no approvals job": (
        lambda repo: _replace(repo / WORKFLOW_PATH, "  approvals:\n", "  tally:\n"),
        "no job 'approvals', which branch protection requires",
    ),
    "a pin pip refuses": (  # what init wrote for a clone whose origin is a path: pip reads `git+/...` as a path, not a URL
        lambda repo: _replace_pin(repo, "fleetgen @ git+/srv/mirrors/fleetgen@v0.1.0"),
        "FLEETGEN 'fleetgen @ git+/srv/mirrors/fleetgen@v0.1.0' is no pin pip installs",
    ),
    "a refusal passes": (  # a workflow an earlier init wrote, before diff could refuse a change
        lambda repo: _replace(repo / WORKFLOW_PATH, "if: steps.gate.outputs.refused == 'true'", "if: false"),
        "no step fails the fleet job when diff refuses the pull request",
    ),
    "the refusal step cannot fail the job": (
        lambda repo: _replace(
            repo / WORKFLOW_PATH,
            "if: steps.gate.outputs.refused == 'true'",
            "if: steps.gate.outputs.refused == 'true'\n      continue-on-error: true",
        ),
        "no step fails the fleet job when diff refuses the pull request",
    ),
    "the refusal step only says it": (
        lambda repo: _replace(repo / WORKFLOW_PATH, 'see its error annotations" >&2\n        exit 1\n', 'see its error annotations"\n'),
        "no step fails the fleet job when diff refuses the pull request",
    ),
    "a cache restored on pull requests": (  # what an earlier init wrote: a pull request's earlier run could fill it
        lambda repo: _replace(repo / WORKFLOW_PATH, "id: restore\n      if: github.event_name == 'push'\n", "id: restore\n"),
        "the fleet job restores a cache on a pull request",
    ),
    "a facts file nobody owns": (
        lambda repo: _replace(repo / "fleet.yaml", "\nclusters:", "\ncompatibility: {factsFile: facts/extra.yaml}\n\nclusters:"),
        ".github/CODEOWNERS: facts/extra.yaml has no code owner",
    ),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_doctor_catches_each_edit_that_leaves_the_gate_open(name: str, fresh: Path, cli_run: Run) -> None:
    edit, problem = BREAKS[name]
    if name == "a facts file nobody owns":
        (fresh / "facts").mkdir()
        (fresh / "facts" / "extra.yaml").write_text("gpuModels: []\n")
    edit(fresh)
    done = cli_run("doctor", cwd=fresh)
    assert done.returncode == 1, done.stdout + done.stderr
    problems = done.stdout.split("Problems in the files:\n", 1)[1].splitlines()
    assert len(problems) == 1 and problem in problems[0], problems
    assert "problem(s): the gate is not binding until they are fixed" in done.stderr


def test_doctor_flags_the_placeholder_organisation(tmp_path: Path, cli_run: Run, fleetgen_repository: tuple[Path, str]) -> None:
    source = f"file://{fleetgen_repository[0]}@v0.1.0"
    made = cli_run("init", "fleet", "--no-git", "--fleetgen-source", source, "--allow-local-source")
    assert made.returncode == 0 and "note: .github/CODEOWNERS names @my-org/... teams: give your organisation" in made.stderr
    done = cli_run("doctor", "fleet")
    assert done.returncode == 1 and "@my-org/platform-owners is init's placeholder organisation" in done.stdout
    assert done.stdout.count("placeholder") == 1
    bad = cli_run("init", "other", "--no-git", "--fleetgen-source", source, "--allow-local-source", "--github-org", "no/slash")
    assert bad.returncode == 2 and "--github-org 'no/slash'" in bad.stderr


@given(
    gpus=st.sets(st.sampled_from(sorted(r.gpu for r in facts().gpu_models)), max_size=3),
    release=st.sampled_from(operator_facts().releases),
)
def test_the_newest_supported_version_set_breaks_no_rule(gpus: set[str], release: object) -> None:
    chart = f"v{release.documents.removeprefix('v')}"  # type: ignore[attr-defined]
    try:
        newest = newest_supported(frozenset(gpus), chart)
    except ValueError:
        return  # the facts support no version set for these GPUs on this release: init then has no starter to write
    assert version_set_problems(newest, frozenset(gpus)) == []
    assert newest.driver in release.drivers  # type: ignore[attr-defined]
    used = [r for r in facts().kubernetes_releases if r.kubernetes.minor == newest.kubernetes.minor]
    assert used and not any(r.provisional for r in used) and used[0].end_of_life >= facts().as_of

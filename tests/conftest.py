"""Fixtures: the example fleet, the real kubectl, and the upstream CRDs kept in tests/crds (see its SOURCES.md)."""

from __future__ import annotations

import contextlib
import functools
import os
import pty
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from fleetgen.checks.load import load_fleet_text
from fleetgen.cli import cli
from fleetgen.errors import FindingsError, Severity
from fleetgen.source.reader import parse_fleet
from fleetgen.validation.crd_schemas import schemas_from_crds

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "fleet.yaml"
# Upstream CRDs, unconverted; FLEETGEN_TEST_CRDS=DIR tests against another copy with the same layout.
UPSTREAM_CRDS = Path(os.environ.get("FLEETGEN_TEST_CRDS") or REPO / "tests" / "crds")


# Hypothesis profiles, chosen by FLEETGEN_HYPOTHESIS_PROFILE: `dev` while working, `ci` in .ci/run
# (the example counts the suite has always run, or more), `thorough` for a long hunt before a release
# (the nightly workflow). A property test states no example count of its own unless one example is much
# dearer than others. `ci` is derandomized: the merge gate tests the same examples on every run, so a
# counterexample it finds belongs to the change under test, not to the day's seed; `dev` and `thorough`
# draw new examples every run, and what they find becomes a test of its own.
settings.register_profile("dev", max_examples=20, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("FLEETGEN_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)
# For the few tests whose examples cost very different amounts: the count CI runs, a tenth of it
# while working, ten times it in a thorough hunt.
_SCALE = {"dev": 0.1, "ci": 1.0, "thorough": 10.0}


def examples(ci_count: int, **more: Any) -> settings:
    """The settings of a property test that runs `ci_count` examples in CI, scaled by the profile."""
    count = max(5, round(ci_count * _SCALE.get(PROFILE, 1.0)))
    return settings(max_examples=count, deadline=None, **more)


# Timing bounds ("refused fast", "no blow-up") are written in yardsticks, not seconds: a yardstick is what parsing the
# shipped example's fleet.yaml takes at that moment (about 15 to 20 ms on a quiet 2-core machine). On a busy machine
# the operation and the yardstick slow down alike, so a bound that holds quietly holds under load, while a blow-up
# (quadratic, exponential) still fails by orders of magnitude.
@functools.cache
def _quiet_yardstick() -> float:
    return min(_yardstick() for _ in range(5))


def _yardstick() -> float:
    raw = EXAMPLE.read_bytes()
    started = time.perf_counter()
    parse_fleet(raw, "fleet.yaml")
    return time.perf_counter() - started


def assert_quick(took: float, yardsticks: float, what: object = "") -> None:
    """`took` seconds are under `yardsticks` yardsticks. Only when they are not under the session's quietest one is
    the yardstick measured again now (the median of three), as the machine is at this moment."""
    if took < yardsticks * _quiet_yardstick():
        return
    now = sorted(_yardstick() for _ in range(3))[1]
    assert took < yardsticks * now, (
        f"{what}: {took:.2f} s is {took / now:.0f} yardsticks ({now * 1000:.0f} ms each); the bound is {yardsticks}"
    )


@contextlib.contextmanager
def quickly(yardsticks: float, what: object = "") -> Iterator[None]:
    """The block runs within `yardsticks` yardsticks (assert_quick)."""
    started = time.perf_counter()
    yield
    assert_quick(time.perf_counter() - started, yardsticks, what)


# Tests whose consumer is a tool (promtool, helm, checkov, trivy, actionlint, chromium) skip where the
# tool is missing, saying which; with FLEETGEN_REQUIRE_TOOLS=1 (set by .ci/run) such a skip is a failure.
REQUIRE_TOOLS = os.environ.get("FLEETGEN_REQUIRE_TOOLS") == "1"


def skip_without(tool: str, why: str) -> NoReturn:
    """Skip the running test for a missing `tool`, or fail it where every tool is required."""
    if REQUIRE_TOOLS:
        pytest.fail(f"{tool} is required here (FLEETGEN_REQUIRE_TOOLS=1) and missing: {why}", pytrace=False)
    pytest.skip(why)


def installed(why: str, tool: str, *other_names: str) -> str:
    """The path of `tool` (or of the first of its other names found) on PATH; else skip_without(tool, why)."""
    found = next(filter(None, map(shutil.which, (tool, *other_names))), None)
    if found is None:
        skip_without(tool, why)
    return found


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regenerate",
        action="store_true",
        help="Rewrite the golden files from the product instead of comparing with them (review the diff before committing).",
    )


# One run measures both loops: the tests not marked slow run first, so the moment the last of them ends is
# what `pytest -m "not slow"` takes, and the run's end is what the whole suite takes (.ci/run prints both).
_TIMES: dict[str, float] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is not None)  # stable: collection order otherwise


def pytest_sessionstart(session: pytest.Session) -> None:
    _TIMES["start"] = time.monotonic()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":
        _TIMES["slow" if "slow" in report.keywords else "quick"] = time.monotonic()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if "quick" in _TIMES:
        ended = max(_TIMES.get("slow", 0.0), _TIMES["quick"])
        terminalreporter.write_line(
            f"tests not marked slow: done {_TIMES['quick'] - _TIMES['start']:.0f} s after the start; "
            f"all tests: {ended - _TIMES['start']:.0f} s"
        )


@pytest.fixture
def regenerate(request: pytest.FixtureRequest) -> bool:
    """True in a `pytest --regenerate` run, which writes golden files and so proves nothing about them."""
    return bool(request.config.getoption("--regenerate"))


def regenerated(what: Path) -> None:
    """End a test that has just rewritten `what`: a regenerating run never also passes the comparison."""
    pytest.skip(f"regenerated {what.relative_to(REPO)}; review `git diff` before committing it")


@pytest.fixture(autouse=True)
def _cache_of_each_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets an empty cache folder of its own, never the user's: a test that patches a stage
    must not leave its answers where another test, or the user, would take them."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(scope="session")
def example_text() -> str:
    return EXAMPLE.read_text(encoding="utf-8")


def findings_of(text: str, severity: Severity = Severity.ERROR) -> list[str]:
    """`line:col: path: message` of the model's findings of one severity for a fleet given as text."""
    try:
        found = list(load_fleet_text(text.encode()).warnings)
    except FindingsError as exc:
        found = exc.findings
    return [f"{f.location.line}:{f.location.column}: {f.dotted_path}: {f.message}" for f in found if f.location and f.severity is severity]


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line number of the nth line containing `needle`."""
    hits = [n for n, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} not found {nth} times"
    return hits[nth - 1]


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


def _tool(name: str) -> str:
    beside_python = Path(sys.executable).parent / name
    found = str(beside_python) if beside_python.exists() else shutil.which(name)
    assert found, f"{name} is not installed; `pip install -e '.[test]'` brings it"
    return found


def documents(text: str) -> list[Any]:
    """The YAML documents of `text`, as yaml.safe_load_all reads them, through libyaml: the upstream CRDs and the
    built trees are megabytes, and the pure-Python loader took seconds of every worker's time on them."""
    return list(yaml.load_all(text, Loader=yaml.CSafeLoader))


@pytest.fixture(scope="session")
def kustomize() -> Callable[[Path], list[dict[str, Any]]]:
    """Build a kustomization folder with the real `kubectl kustomize`; fail on any warning."""
    kubectl = _tool("kubectl")

    def build(folder: Path) -> list[dict[str, Any]]:
        done = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stderr == "", f"kustomize warned: {done.stderr}"
        return [doc for doc in documents(done.stdout) if doc]

    return build


@pytest.fixture(scope="session")
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """Strict schemas straight from the upstream CRDs, independent of the converted ones fleetgen ships."""
    assert UPSTREAM_CRDS.is_dir(), f"upstream CRDs expected at {UPSTREAM_CRDS} (FLEETGEN_TEST_CRDS)"
    docs: list[Any] = []
    for path in sorted(UPSTREAM_CRDS.rglob("*.yaml")):
        docs += documents(path.read_text(encoding="utf-8"))
    schemas = schemas_from_crds(docs)
    assert ("kueue.x-k8s.io/v1beta2", "ClusterQueue") in schemas
    return schemas


@pytest.fixture
def cli_run(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run a fleetgen command in this process, as the console script would (click's CliRunner).

    Starting the console script costs about 0.7 s of imports a call; in process the same command
    costs what fleetgen's work costs. The end-to-end behaviour a process has of its own (the exit
    code the shell sees, a terminal, signals) is tested through `console_run` and `on_terminal`."""

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, cwd=cwd or tmp_path, env=env)

    return run


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One fleetgen command in this process, in folder `cwd`, with `env` added to the environment."""
    before = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, list(args), env=env, prog_name="fleetgen")
    finally:
        os.chdir(before)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # an escaped exception is a bug the console script would show as a traceback
    return subprocess.CompletedProcess(["fleetgen", *args], result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def console_run(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the installed `fleetgen` console script for real, in a process of its own."""
    exe = _tool("fleetgen")

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        environment = {**os.environ, **(env or {})}
        return subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd or tmp_path, check=False, env=environment)

    return run


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity; fail the test when git fails."""
    identity = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env={**os.environ, **identity}).stdout


def unreachable_kubeconfig(folder: Path) -> dict[str, str]:
    """The environment of a kubeconfig whose context `dev` points at an address no API server listens on."""
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "nowhere", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "dev", "context": {"cluster": "nowhere", "user": "u"}}],
        "current-context": "dev",
    }
    (folder / "kubeconfig").write_text(yaml.safe_dump(kubeconfig), encoding="utf-8")
    return {"KUBECONFIG": str(folder / "kubeconfig")}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fleet repository: the example committed on main."""
    git(tmp_path, "init", "-q", "-b", "main")
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    git(tmp_path, "add", "fleet.yaml")
    git(tmp_path, "commit", "-qm", "fleet")
    return tmp_path


def on_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """Run the installed fleetgen with its output on a pseudo-terminal, as a person would; (exit code, bytes shown)."""
    exe = _tool("fleetgen")
    pid, fd = pty.fork()
    if pid == 0:  # the child runs fleetgen on the terminal
        os.chdir(cwd)
        os.execve(exe, [exe, *args], env)
    output = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the terminal closes when the child exits
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output


@pytest.fixture(scope="session")
def fleetgen_repository(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A local git repository of fleetgen as it is now (what pip builds it from), tagged v0.1.0; (path, commit).

    Built from the working files, not this checkout's HEAD, so it holds the code under test."""
    source = tmp_path_factory.mktemp("fleetgen-source") / "fleetgen"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "schemas", source / "schemas")
    shutil.copytree(REPO / "fleetgen", source / "fleetgen", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    git(source, "init", "-q", "-b", "main")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "fleetgen")
    git(source, "tag", "v0.1.0")
    return source, git(source, "rev-parse", "HEAD").strip()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def served_fleetgen(tmp_path_factory: pytest.TempPathFactory, fleetgen_repository: tuple[Path, str]) -> Iterator[tuple[str, str]]:
    """fleetgen's repository served by `git daemon` on 127.0.0.1, a network remote like any other; (git:// URL, commit)."""
    source, commit = fleetgen_repository
    root = tmp_path_factory.mktemp("git-daemon")
    subprocess.run(["git", "clone", "--quiet", "--bare", str(source), str(root / "fleetgen.git")], check=True, capture_output=True)
    port = _free_port()
    args = ["git", "daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1", f"--port={port}", f"--base-path={root}", str(root)]
    daemon = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"git://127.0.0.1:{port}/fleetgen.git"
    try:
        for _ in range(100):
            if subprocess.run(["git", "ls-remote", url], capture_output=True, check=False).returncode == 0:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"git daemon did not serve {url}")
        yield url, commit
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)

"""`init` pins what exists: the git commit pip installed fleetgen from, a clone's origin at HEAD, or a --fleetgen-source git can find.

The pin is then used for real, offline: pip installs fleetgen from a local git repository of the
code under test (tests/conftest.py `fleetgen_repository`, reached as file://localhost/... so that
every pip version reads the URL), with no package index and no build isolation; the
dependencies come from this test environment through PYTHONPATH. The init'ed repository's
pre-commit hooks and its workflow's install step then install and run that pin.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import yaml
from conftest import git

Run = Callable[..., CompletedProcess[str]]


def offline(tmp_path: Path) -> dict[str, str]:
    """An environment in which pip cannot download: this environment's packages but fleetgen and pip on
    PYTHONPATH, no index, no pip configuration, builds without isolation (setuptools from the test extras)."""
    deps = tmp_path / "deps"
    deps.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    # checkov (a test extra too) holds packaging below 24, and setuptools 77+ needs 24.2 to read fleetgen's
    # SPDX license: setuptools builds with the packaging it vendors, which is new enough.
    vendored = site / "setuptools" / "_vendor" / "packaging"
    for entry in site.iterdir():
        name = entry.name.lower()
        if name.startswith(("fleetgen", "__editable__", "__pycache__")) or name == "pip" or name.startswith("pip-"):
            continue
        target = vendored if name == "packaging" and not (entry / "licenses").exists() and (vendored / "licenses").exists() else entry
        (deps / entry.name).symlink_to(target)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return env | {
        "PYTHONPATH": str(deps),
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling of --no-build-isolation
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit"),
    }


def run(args: list[str], env: dict[str, str], cwd: Path) -> CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=900)


def venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True)
    return path / "bin"


@pytest.mark.slow
def test_init_pins_the_commit_pip_installed_it_from_and_hooks_and_ci_install_that_pin(
    tmp_path: Path, fleetgen_repository: tuple[Path, str]
) -> None:
    source, commit = fleetgen_repository
    url = f"file://localhost{source}"
    env = offline(tmp_path)
    installed = venv(tmp_path / "installed")
    done = run([str(installed / "pip"), "install", f"fleetgen @ git+{url}@{commit}"], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    fleet = tmp_path / "fleet"
    done = run([str(installed / "fleetgen"), "init", str(fleet), "--name", "acme", "--no-git", "--allow-local-source"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    pin = f"fleetgen @ git+{url}@{commit}"
    assert f"hooks and CI install {pin} (the commit pip installed this fleetgen from)" in done.stderr
    config = yaml.safe_load((fleet / ".pre-commit-config.yaml").read_text())
    assert config["repos"] == [{"repo": url, "rev": commit, "hooks": [{"id": "fleetgen-validate"}, {"id": "fleetgen-check"}]}]
    steps = yaml.safe_load((fleet / ".github" / "workflows" / "fleetgen.yml").read_text())["jobs"]["fleet"]["steps"]
    install = next(s for s in steps if s.get("name") == "Install fleetgen")
    assert install["env"] == {"FLEETGEN": pin} and f'pip install "{pin}"' in (fleet / "README.md").read_text()

    git(fleet, "init", "-q", "-b", "main")
    git(fleet, "add", ".")
    pre_commit = str(Path(sys.executable).parent / "pre-commit")
    hooks = run([pre_commit, "run", "--all-files"], env, fleet)
    assert hooks.returncode == 0, hooks.stdout + hooks.stderr
    assert "fleetgen validate" in hooks.stdout and "fleetgen check" in hooks.stdout and hooks.stdout.count("Passed") == 2

    # the workflow's own install step, as GitHub runs it: its command with its env, in a fresh Python
    runner = venv(tmp_path / "runner")
    step_env = env | install["env"] | {"PATH": f"{runner}{os.pathsep}{env['PATH']}"}
    stepped = run(["bash", "-e", "-c", install["run"]], step_env, fleet)
    assert stepped.returncode == 0, stepped.stdout + stepped.stderr
    validated = run(["fleetgen", "validate"], step_env, fleet)
    assert validated.returncode == 0 and str(runner) in run(["which", "fleetgen"], step_env, fleet).stdout, validated.stderr

    (fleet / "clusters" / "dev" / "kustomization.yaml").write_text("# edited by hand\n")
    git(fleet, "add", ".")
    stale = run([pre_commit, "run", "--all-files"], env, fleet)
    assert stale.returncode == 1 and "Failed" in stale.stdout  # the hooks can fail


def test_init_refuses_a_pin_it_cannot_vouch_for_and_writes_nothing(
    tmp_path: Path, cli_run: Run, fleetgen_repository: tuple[Path, str]
) -> None:
    source, _ = fleetgen_repository
    url = f"file://localhost{source}"
    local = ("--no-git", "--allow-local-source")  # these sources are local on purpose: what git finds in them is the point
    missing = cli_run("init", "fleet", *local, "--fleetgen-source", f"{url}@v9.9.9")
    assert missing.returncode == 2 and f"{url} has no tag, branch or commit 'v9.9.9'" in missing.stderr
    unknown = cli_run("init", "fleet", *local, "--fleetgen-source", f"{url}@{'0' * 40}")
    assert unknown.returncode == 2 and "has no tag, branch or commit" in unknown.stderr
    nowhere = cli_run("init", "fleet", *local, "--fleetgen-source", f"file://localhost{tmp_path}/nothing@v0.1.0")
    assert nowhere.returncode == 2 and "git cannot read" in nowhere.stderr
    malformed = cli_run("init", "fleet", "--fleetgen-source", "no-ref-here")
    assert malformed.returncode == 2 and "expected URL@REF" in malformed.stderr
    unreachable = cli_run("init", "fleet", "--fleetgen-source", f"{url}@v0.1.0")
    assert unreachable.returncode == 2 and "is a local path, which CI cannot reach" in unreachable.stderr
    assert not (tmp_path / "fleet").exists()
    assert all(len(done.stderr.strip().splitlines()) == 1 for done in (missing, unknown, nowhere, malformed, unreachable))


@pytest.mark.slow
def test_init_from_an_editable_install_of_a_clone_pins_its_origin_which_ci_then_installs(
    tmp_path: Path, served_fleetgen: tuple[str, str]
) -> None:
    """The README's own install (`pip install -e .` in a clone) and then init, with a network origin (git daemon)."""
    url, commit = served_fleetgen
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", url, str(clone)], check=True, capture_output=True)
    env = offline(tmp_path)
    installed = venv(tmp_path / "installed")
    done = run([str(installed / "pip"), "install", "-e", str(clone)], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    done = run([str(installed / "fleetgen"), "init", "fleet", "--no-git"], env, tmp_path)
    pin = f"fleetgen @ git+{url}@{commit}"
    assert done.returncode == 0, done.stderr
    assert f"hooks and CI install {pin} (HEAD of the clone {clone}, found on its origin remote)" in done.stderr
    steps = yaml.safe_load((tmp_path / "fleet" / ".github" / "workflows" / "fleetgen.yml").read_text())["jobs"]["fleet"]["steps"]
    install = next(s for s in steps if s.get("name") == "Install fleetgen")
    assert install["env"] == {"FLEETGEN": pin}
    runner = venv(tmp_path / "runner")  # what CI does with the pin: install it from the network remote
    stepped = run(["bash", "-e", "-c", install["run"]], env | install["env"] | {"PATH": f"{runner}{os.pathsep}{env['PATH']}"}, tmp_path)
    assert stepped.returncode == 0, stepped.stdout + stepped.stderr

    git(clone, "remote", "remove", "origin")
    refused = run([str(installed / "fleetgen"), "init", "again", "--no-git"], env, tmp_path)
    assert refused.returncode == 2 and "a clone with no origin remote to install from" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "again").exists()


@pytest.mark.parametrize("ref", ["v0.1.0", "main", "commit"])
def test_a_tag_is_pinned_as_it_is_a_branch_or_commit_at_its_commit(
    ref: str, tmp_path: Path, cli_run: Run, fleetgen_repository: tuple[Path, str]
) -> None:
    source, commit = fleetgen_repository
    url = f"file://localhost{source}"
    done = cli_run("init", "fleet", "--no-git", "--allow-local-source", "--fleetgen-source", f"{url}@{commit if ref == 'commit' else ref}")
    assert done.returncode == 0, done.stderr
    rev = yaml.safe_load((tmp_path / "fleet" / ".pre-commit-config.yaml").read_text())["repos"][0]["rev"]
    assert rev == ("v0.1.0" if ref == "v0.1.0" else commit)


def test_a_clone_whose_origin_is_a_path_is_pinned_as_a_file_url_pip_installs(tmp_path: Path, fleetgen_repository: tuple[Path, str]) -> None:
    """pip refuses `fleetgen @ git+/path@commit` ("It looks like a path"): a local origin is pinned as git+file:///path."""
    from fleetgen.authoring.fleetgen_source import FleetgenSource, clone_source, pin_problem

    source, commit = fleetgen_repository
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(source), str(clone)], check=True, capture_output=True)
    pinned = clone_source(str(clone), allow_local=True)
    assert pinned.pip == f"fleetgen @ git+file://{source}@{commit}" and pin_problem(pinned.pip) is None
    git(clone, "remote", "set-url", "origin", os.path.relpath(source, clone))  # relative to the clone, as git reads it there
    assert clone_source(str(clone), allow_local=True).pip == pinned.pip
    given = FleetgenSource.parse(f"{source}@v0.1.0", allow_local=True)
    assert given.pip == f"fleetgen @ git+file://{source}@v0.1.0"
    assert pin_problem(f"fleetgen @ git+{source}@{commit}") is not None

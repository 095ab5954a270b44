"""The one way fleetgen runs git (fleetgen.source.git): each way git can fail is one line, never a traceback or a wait."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git

from fleetgen.errors import InputError
from fleetgen.source.git import git_output, run_git


def fake_git(folder: Path, script: str) -> str:
    """A PATH on which `git` is `script`."""
    folder.mkdir()
    (folder / "git").write_text(f"#!/bin/sh\n{script}\n")
    (folder / "git").chmod(0o755)
    return str(folder)


def test_a_missing_git_is_one_line_with_the_callers_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InputError) as caught:
        run_git(tmp_path, "status", hint="install it or pass --no-git")
    assert str(caught.value) == "git is not installed; install it or pass --no-git"


def test_a_git_that_never_answers_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_git(tmp_path / "bin", "exec /bin/sleep 30"))
    with pytest.raises(InputError) as caught:
        run_git(tmp_path, "ls-remote", timeout=1)
    assert str(caught.value) == "git ls-remote gave no answer in 1s"


@pytest.mark.parametrize("argument", ["HEAD\x00", "\ud800"])
def test_an_argument_no_process_can_take_is_refused(tmp_path: Path, argument: str) -> None:
    with pytest.raises(InputError) as caught:
        run_git(tmp_path, "show", argument)
    assert str(caught.value).startswith("git show: ") and "\n" not in str(caught.value)


def test_a_prompt_for_a_password_fails_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_git(tmp_path / "bin", 'echo "$GIT_TERMINAL_PROMPT $GIT_ASKPASS"'))
    assert run_git(tmp_path, "fetch").text == "0 true"


def test_gits_own_failure_is_the_callers_to_read_or_one_line(tmp_path: Path) -> None:
    answer = run_git(tmp_path, "rev-parse", "--show-toplevel")  # no repository here
    assert not answer.ok and "not a git repository" in answer.first_complaint
    with pytest.raises(InputError) as caught:
        git_output(tmp_path, "rev-parse", "--show-toplevel")
    assert str(caught.value).startswith("git rev-parse --show-toplevel: fatal: not a git repository")
    git(tmp_path, "init", "-q")
    assert Path(git_output(tmp_path, "rev-parse", "--show-toplevel").decode().strip()) == tmp_path.resolve()

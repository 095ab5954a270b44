"""`fleetgen init` makes the new folder a git repository with one commit holding what it wrote.

A pull request needs a repository and a base: the first commit is that base, so the first change
to fleet.yaml is already a diff CI can review. Only the files init wrote are committed (a folder
that already is a repository keeps its other files, staged or not, out of the commit). Whether git
can commit at all (an identity) is asked before anything is written.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fleetgen.errors import InputError

GIT_TIMEOUT = 60  # seconds for one git command on the new folder
NO_GIT = "or pass --no-git to leave the folder without git"


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False, env=env)
    except FileNotFoundError:
        raise InputError(f"fleetgen init makes a git repository and git is not installed; install it {NO_GIT}") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"git {args[0]} gave no answer in {GIT_TIMEOUT}s in {folder}; {NO_GIT}") from None


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "no reason given")


def can_commit(folder: Path) -> None:
    """Refuse (before init writes anything) when git has no identity to sign the first commit with."""
    where = folder if folder.is_dir() else Path.cwd()
    ident = _git(where, "var", "GIT_COMMITTER_IDENT")
    author = _git(where, "var", "GIT_AUTHOR_IDENT")
    if ident.returncode != 0 or author.returncode != 0:
        raise InputError(
            f"git has no name and email to make the first commit with ({_first_line(ident.stderr + author.stderr)}); "
            f"set them with git config --global user.name/user.email {NO_GIT}"
        )


def first_commit(folder: Path, paths: list[str], message: str) -> str:
    """`git init` (unless FOLDER already is a repository's top), then commit exactly `paths`; the commit id."""
    if not (folder / ".git").exists():
        made = _git(folder, "init", "--quiet", "--initial-branch=main")
        if made.returncode != 0:
            raise InputError(f"{folder}: git init failed ({_first_line(made.stderr)}); the files are written, {NO_GIT}")
    for step in (["add", "--", *paths], ["commit", "--quiet", "--no-verify", "-m", message, "--", *paths]):
        done = _git(folder, *step)
        if done.returncode != 0:
            raise InputError(f"{folder}: git {step[0]} failed ({_first_line(done.stderr)}); the files are written")
    return _git(folder, "rev-parse", "HEAD").stdout.strip()

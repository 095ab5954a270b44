"""`fleetgen init` makes the new folder a git repository with one commit holding what it wrote.

A pull request needs a repository and a base: the first commit is that base, so the first change
to fleet.yaml is already a diff CI can review. Only the files init wrote are committed (a folder
that already is a repository keeps its other files, staged or not, out of the commit). Whether git
can commit at all (an identity) is asked before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from fleetgen.errors import InputError
from fleetgen.source.git import GitAnswer, run_git

GIT_TIMEOUT = 60  # seconds for one git command on the new folder
NO_GIT = "or pass --no-git to leave the folder without git"


def _git(folder: Path, *args: str) -> GitAnswer:
    return run_git(folder, *args, timeout=GIT_TIMEOUT, hint=f"fleetgen init makes a git repository: install git {NO_GIT}")


def can_commit(folder: Path) -> None:
    """Refuse (before init writes anything) when git has no identity to sign the first commit with."""
    where = folder if folder.is_dir() else Path.cwd()
    ident = _git(where, "var", "GIT_COMMITTER_IDENT")
    author = _git(where, "var", "GIT_AUTHOR_IDENT")
    if not ident.ok or not author.ok:
        raise InputError(
            f"git has no name and email to make the first commit with ({(ident if ident.complaint else author).first_complaint}); "
            f"set them with git config --global user.name/user.email {NO_GIT}"
        )


def first_commit(folder: Path, paths: list[str], message: str) -> str:
    """`git init` (unless FOLDER already is a repository's top), then commit exactly `paths`; the commit id."""
    if not (folder / ".git").exists():
        made = _git(folder, "init", "--quiet", "--initial-branch=main")
        if not made.ok:
            raise InputError(f"{folder}: git init failed ({made.first_complaint}); the files are written, {NO_GIT}")
    for step in (["add", "--", *paths], ["commit", "--quiet", "--no-verify", "-m", message, "--", *paths]):
        done = _git(folder, *step)
        if not done.ok:
            raise InputError(f"{folder}: git {step[0]} failed ({done.first_complaint}); the files are written")
    return _git(folder, "rev-parse", "HEAD").text

"""Running git for fleetgen: never waiting for a password, bounded in time, its failures told in one line."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fleetgen.errors import InputError


@dataclass(frozen=True)
class GitAnswer:
    """What one git command did: whether it succeeded, what it printed, and the lines it complained in."""

    ok: bool
    out: bytes
    complaint: tuple[str, ...]

    @property
    def text(self) -> str:
        return self.out.decode(errors="replace").strip()

    @property
    def first_complaint(self) -> str:
        return self.complaint[0] if self.complaint else "no reason given"

    @property
    def last_complaint(self) -> str:
        """The line git ends on: where `fatal:` says why it stopped."""
        return self.complaint[-1] if self.complaint else "failed"


def run_git(cwd: Path | str | None, *args: str, timeout: int = 60, hint: str = "") -> GitAnswer:
    """git `args` in folder `cwd`. Its own failure is the caller's to read; a missing git, no answer in `timeout`
    seconds or an argument no process can take (NUL, a lone surrogate) is an InputError, ending in `hint`."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}  # a remote that asks for a password fails at once
    then = f"; {hint}" if hint else ""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=timeout, check=False, env=env)
    except FileNotFoundError:
        raise InputError(f"git is not installed{then}") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"git {args[0]} gave no answer in {timeout}s{then}") from None
    except (OSError, ValueError) as exc:  # ValueError: an argument with NUL or a lone surrogate
        raise InputError(f"git {args[0]}: {exc}") from None
    complaint = tuple(line.strip() for line in done.stderr.decode(errors="replace").splitlines() if line.strip())
    return GitAnswer(done.returncode == 0, done.stdout, complaint)


def git_output(cwd: Path | str, *args: str, timeout: int = 60) -> bytes:
    """What git `args` printed in folder `cwd`; its failure is an InputError naming the command and git's reason."""
    answer = run_git(cwd, *args, timeout=timeout)
    if not answer.ok:
        raise InputError(f"git {' '.join(args[:2])}: {answer.last_complaint}")
    return answer.out

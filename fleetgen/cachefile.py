"""One file of fleetgen's cache (`.fleetgen-cache/<name>` under the output folder), never trusted blindly.

A cache file is a JSON map of entries behind a first line that signs the rest (HMAC-SHA256 under a
key of this user on this machine, kept outside every repository), with a salt naming what the
entries were computed with; a file whose signature or salt does not match is read as empty. The
key is what makes a committed cache harmless: the output folder is a repository a pull request can
fill, and CI checks pull requests, so a cache anyone can sign (a plain hash) could make `check` pass
a tree fleetgen would not render, or skip validating a fleet. A cache from another machine is
simply not used. The folder holds a `.gitignore` that keeps it out of git, and deleting it only costs
time. Writing skips symbolic links (the output folder's own and the cache's) and any file that does not start with fleetgen's mark, and
gives up silently on any trouble: a cache is never a reason to fail.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import tempfile
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

CACHE_FOLDER = ".fleetgen-cache"
_METADATA_FOLDERS = (".dist-info", ".egg-info")
_OURS = b"# fleetgen cache, safe to delete; "  # how every version's cache files begin
_MARK = _OURS + b"HMAC-SHA256 of the rest under this user's key: "
_KEY_FILE = "cache-key"  # in $XDG_CACHE_HOME/fleetgen (default ~/.cache/fleetgen)


@cache  # render reads three caches salted with it: hash the package once per command
def code_salt() -> str:
    """Everything a cached result depends on besides the fleet file: fleetgen's files, installed versions."""
    digest = hashlib.sha256()
    for name, data in _package_files(resources.files("fleetgen")):
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    digest.update("\n".join(_installed()).encode())
    return digest.hexdigest()


def _installed() -> list[str]:
    """The metadata folders (<name>-<version>.dist-info) on the import path: which distributions, at
    which versions. Listing them costs 1% of reading every METADATA file (importlib.metadata)."""
    found = []
    for folder in sys.path:
        try:
            found += [name for name in os.listdir(folder or ".") if name.endswith(_METADATA_FOLDERS)]
        except OSError:
            continue  # not a folder (a zip), gone, or unreadable: nothing is installed there for us
    return sorted(found)


def _package_files(folder: Traversable, prefix: str = "") -> list[tuple[str, bytes]]:
    out = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            out += _package_files(entry, f"{prefix}{entry.name}/")
        else:
            out.append((prefix + entry.name, entry.read_bytes()))
    return out


def read_entries(root: Path | None, name: str, salt: str) -> dict[str, str]:
    """The entries of `root`/.fleetgen-cache/`name` written with `salt`; empty when anything is off."""
    if root is None or root.is_symlink():
        return {}
    folder = root / CACHE_FOLDER
    if folder.is_symlink() or not folder.is_dir():
        return {}
    try:
        mark, _, body = (folder / name).read_bytes().partition(b"\n")
        if not hmac.compare_digest(mark, _signature(body)):
            return {}
        data = json.loads(body)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("salt") != salt or not isinstance(data.get("entries"), dict):
        return {}
    return {k: v for k, v in data["entries"].items() if isinstance(k, str) and isinstance(v, str)}


def write_entries(root: Path | None, name: str, salt: str, entries: dict[str, str]) -> None:
    """Replace `root`/.fleetgen-cache/`name` with `entries`, or do nothing when that is not safe."""
    if root is None:
        return
    folder = root / CACHE_FOLDER
    body = json.dumps({"salt": salt, "entries": dict(sorted(entries.items()))}, ensure_ascii=False).encode()
    try:
        if root.is_symlink() or folder.is_symlink():
            return  # fleetgen refuses to write through a link; its cache does too
        folder.mkdir(exist_ok=True)
        target = folder / name
        if target.is_symlink() or (target.exists() and not _starts_with_mark(target)):
            return  # not ours: leave it alone
        ignore = folder / ".gitignore"
        if not ignore.exists() and not ignore.is_symlink():
            ignore.write_text("# fleetgen's cache: safe to delete, never committed\n*\n", encoding="utf-8")
        handle, pending = tempfile.mkstemp(prefix=f".{name}-", dir=folder)
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(signed(body))
        os.replace(pending, target)
    except OSError:
        Path(pending).unlink(missing_ok=True)


def signed(body: bytes) -> bytes:
    """A cache file's bytes: the line signing `body` under this user's key, then `body`."""
    return _signature(body) + b"\n" + body


def _signature(body: bytes) -> bytes:
    return _MARK + hmac.new(_key(), body, hashlib.sha256).hexdigest().encode()


@cache
def _key() -> bytes:
    """This user's cache key: read, or made once, in the user's cache folder; for one command only
    when that folder cannot be written (its cache then lasts that command)."""
    configured = os.environ.get("XDG_CACHE_HOME", "")
    try:
        folder = (Path(configured) if os.path.isabs(configured) else Path.home() / ".cache") / "fleetgen"
        path = folder / _KEY_FILE
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            handle, pending = tempfile.mkstemp(prefix=f".{_KEY_FILE}-", dir=folder)  # readable by this user only
            try:
                os.write(handle, os.urandom(32))
            finally:
                os.close(handle)
            try:
                os.link(pending, path)  # never replaces the key a concurrent command made first
            except FileExistsError:
                pass
            finally:
                os.unlink(pending)
        key = path.read_bytes()
    except (OSError, RuntimeError):  # RuntimeError: no home folder to be found
        return os.urandom(32)
    return key if len(key) >= 32 else os.urandom(32)


def _starts_with_mark(path: Path) -> bool:
    """Is `path` a cache file fleetgen wrote (this version or an earlier one)? Reads only the start."""
    with path.open("rb") as stream:
        return stream.read(len(_OURS)) == _OURS

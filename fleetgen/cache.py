"""The one cache: content-addressed entries in the user's cache folder, never in a repository.

An entry is stored under the SHA-256 of everything it was computed from: its kind, its inputs
(given by the stage that memoises), and a salt over every file of the fleetgen package and the
installed distributions, so a change to the code, its data or a dependency misses instead of
reading a stale answer. Entries live in `$XDG_CACHE_HOME/fleetgen` (default `~/.cache/fleetgen`),
a folder no pull request can fill, so nothing read from it is checked for forgery; an entry that
does not parse is a miss. The workflow keeps it between the runs on pushes to the base branch
(actions/cache); a pull request's run never restores it, since GitHub would first restore what an
earlier run of that pull request saved, possibly after a workflow the pull request edited.
Deleting the folder only costs time, and any trouble reading or writing is a miss or a skipped
write: the cache is never a reason to fail.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from functools import cache
from pathlib import Path

_METADATA_FOLDERS = (".dist-info", ".egg-info")
# The folder of this entry layout (an older layout's files are simply never read): `<kind>/<key>`. Entries no longer
# fan out into folders by their key's first two digits: a validate that passes writes some twenty entries, and
# making a folder for each took nearly as long as writing the entry (75 against 95 microseconds here).
_LAYOUT = "v3"
_UNUSED_FOR = 30 * 86400  # entries unread for this long are removed
_PRUNE_EVERY = 86400  # at most one prune a day


@cache  # every stage's keys are salted with it: hash the package once per command
def code_salt() -> str:
    """Everything a cached result depends on besides its own inputs: fleetgen's files, installed versions."""
    digest = hashlib.sha256()
    for name, data in _package_files(Path(__file__).parent):
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
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


def _package_files(folder: Path, prefix: str = "") -> list[tuple[str, bytes]]:
    """Every file under `folder` (a linked folder followed), by name. Each entry's type comes with the listing
    (os.scandir): asking each path with a stat call of its own took half the time of hashing the package.
    Each file is read whole with one os.read of the size fstat gives: open() builds a buffered file object
    per file: 2.8 ms for the package's 287 files against 2.2 ms."""
    out = []
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            out += _package_files(Path(entry.path), f"{prefix}{entry.name}/")
        else:
            out.append((prefix + entry.name, _whole_file(entry.path)))
    return out


def _whole_file(path: str) -> bytes:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        parts = [os.read(descriptor, os.fstat(descriptor).st_size + 1)]
        while parts[-1]:  # a file that grew since fstat (or a size it does not report) is read to its end
            parts.append(os.read(descriptor, 1 << 16))
        return b"".join(parts)
    finally:
        os.close(descriptor)


def user_cache_folder() -> Path | None:
    """$XDG_CACHE_HOME/fleetgen when that is an absolute path, else ~/.cache/fleetgen; None without a home."""
    configured = os.environ.get("XDG_CACHE_HOME", "")
    try:
        return (Path(configured) if os.path.isabs(configured) else Path.home() / ".cache") / "fleetgen"
    except RuntimeError:  # no home folder to be found
        return None


class Cache:
    """Entries by (kind, inputs). `folder` None is a cache that remembers nothing."""

    def __init__(self, folder: Path | None):
        self.folder = folder / _LAYOUT if folder is not None else None

    @staticmethod
    def for_user() -> Cache:
        return Cache(user_cache_folder())

    def key(self, kind: str, inputs: str) -> str:
        return hashlib.sha256(f"{kind}\0{code_salt()}\0{inputs}".encode()).hexdigest()

    def _path(self, kind: str, key: str) -> Path | None:
        return self.folder / kind / key if self.folder is not None else None

    def get(self, kind: str, inputs: str) -> bytes | None:
        """The entry computed from `inputs`, or None."""
        path = self._path(kind, self.key(kind, inputs))
        if path is None:
            return None
        try:
            data = path.read_bytes()
            os.utime(path)  # read now: kept by the prune
        except OSError:
            return None
        return data

    def put(self, kind: str, inputs: str, data: bytes) -> None:
        """Remember `data` as computed from `inputs`; silently skipped on any trouble."""
        path = self._path(kind, self.key(kind, inputs))
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            handle, pending = tempfile.mkstemp(prefix=".entry-", dir=path.parent)
        except OSError:
            return
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(pending, path)
        except OSError:
            Path(pending).unlink(missing_ok=True)

    def prune(self, now: float | None = None) -> int:
        """Remove the entries nobody read for 30 days, at most once a day; returns how many went."""
        if self.folder is None:
            return 0
        now = time.time() if now is None else now
        stamp = self.folder / "last-prune"
        try:
            if now - stamp.stat().st_mtime < _PRUNE_EVERY:
                return 0
        except OSError:
            pass  # never pruned: prune now
        removed = 0
        for entry in self.folder.glob("*/*"):
            try:
                if now - entry.stat().st_mtime > _UNUSED_FOR:
                    entry.unlink()
                    removed += 1
            except OSError:
                continue
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            stamp.touch()
            os.utime(stamp, (now, now))
        except OSError:
            pass
        return removed


def ci_cache_outputs() -> str:
    """What a CI job needs to keep this cache between its runs, as `name=value` lines for $GITHUB_OUTPUT: the folder,
    and a key prefix naming fleetgen's version and salt, so a run restores only what the same fleetgen could read."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("fleetgen")
    except PackageNotFoundError:  # run from a source folder that was never installed
        release = "unknown"
    folder = user_cache_folder()
    if folder is None:
        raise SystemExit("fleetgen's cache has no folder here: set XDG_CACHE_HOME to an absolute path")
    return f"folder={folder}\nkey=fleetgen-{release}-{code_salt()[:16]}\n"


if __name__ == "__main__":  # `python -m fleetgen.cache >> "$GITHUB_OUTPUT"` in the pull-request workflow
    sys.stdout.write(ci_cache_outputs())

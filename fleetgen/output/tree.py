"""The only code that writes the rendered tree.

Ownership: a ledger (`.fleetgen-ledger`, committed beside base/ and clusters/) lists every file
fleetgen generated with its SHA-256. A render writes only files whose bytes change, removes only
ledger entries the new render drops, and refuses to overwrite or remove a file it does not own: one
without fleetgen's header or the bytes the ledger recorded. Ledger entries are untrusted input:
absolute paths, `..` and paths through a symlink are refused.

Atomicity: new files are staged inside the output folder, then a journal naming every move and
removal is renamed into place (the commit point), then replayed. A render killed before the commit
point leaves the old tree; one killed after it is rolled forward by the next fleetgen command, so
the tree is never left half old and half new once fleetgen has run.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from fleetgen.errors import InputError
from fleetgen.output.emit import GENERATED_MARKS

LEDGER = ".fleetgen-ledger"
JOURNAL = ".fleetgen-journal"
STAGING_PREFIX = ".fleetgen-staging-"
_STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"[a-z0-9_]+")  # tempfile.mkdtemp's names
_STAGED_NAME = re.compile(r"(?:[0-9]+/)?[0-9]+")  # a thread's share folder and a number; a number alone before shares
_LEDGER_HEADER = "# fleetgen ledger: files generated from the fleet file, with their SHA-256. Do not edit.\n"
_LEDGER_LINE = re.compile(r"([0-9a-f]{64})  (\S.*)")
# A render that writes at most this many files flushes each one; a larger one flushes every file
# system at once (os.sync), cheaper than thousands of flushes, but its cost depends on whatever else
# the machine has written, which a one-line change's render should not pay.
_FSYNC_AT_MOST = 64
# Threads that create or move the files of a large render (see _each).
_THREADS = min(4, os.cpu_count() or 1)
_Item = TypeVar("_Item")
_OWNED_MARKS = tuple(mark.encode() for mark in GENERATED_MARKS)


@dataclass
class TreeChanges:
    """What a render does (or did) to the tree."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.written and not self.removed


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ledger_bytes(files: dict[str, bytes]) -> bytes:
    lines = [f"{digest(data)}  {path}\n" for path, data in sorted(files.items())]
    return (_LEDGER_HEADER + "".join(lines)).encode()


class Tree:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self._safe_folders: set[str] = set()  # relative folders already seen not to be links

    # -- reading -------------------------------------------------------------------------------

    def checked(self, rel: str) -> Path:
        """The absolute path of a relative tree path, refusing anything that could leave the tree."""
        path = self._folders_checked(rel)
        if os.path.islink(path):
            raise _linked(path)
        return Path(path)

    def _refuse_escape(self, rel: str, named_in: str = LEDGER) -> None:
        parts = rel.split("/")
        if not rel or rel.startswith("/") or "\\" in rel or any(p in ("..", ".", "") for p in parts):
            raise InputError(f"{self.root / named_in}: refusing path {rel!r}: it must stay inside {self.root}")

    def _folders_checked(self, rel: str) -> str:
        """The absolute path of `rel` once it is known to stay inside the tree through no link but maybe its last part."""
        self._refuse_escape(rel)
        folder = rel.rpartition("/")[0]
        if folder and folder not in self._safe_folders:
            parts = folder.split("/")
            for depth in range(1, len(parts) + 1):
                prefix = "/".join(parts[:depth])
                if prefix not in self._safe_folders:
                    if os.path.islink(f"{self.root}/{prefix}"):
                        raise _linked(f"{self.root}/{prefix}")
                    self._safe_folders.add(prefix)
        return f"{self.root}/{rel}"

    def ledger(self) -> dict[str, str]:
        """Generated path -> SHA-256 as last rendered; empty when there is no ledger yet."""
        path = self.root / LEDGER
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read the ledger: {exc}") from None
        entries: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if not line or line.startswith("#"):
                continue
            match = _LEDGER_LINE.fullmatch(line)
            if not match:
                raise InputError(f"{path}:{number}: not a ledger line; delete the ledger and render again")
            self._refuse_escape(match.group(2))  # links are refused where a path is used: read, write, remove
            entries[match.group(2)] = match.group(1)
        return entries

    def read(self, rel: str) -> bytes | None:
        path = self._folders_checked(rel)
        try:
            # O_NOFOLLOW refuses a link as the last part in the same call that opens the file (ELOOP).
            handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _linked(path) from None
            raise InputError(f"{self.root / rel}: cannot read: {exc.strerror}") from None
        try:
            with open(handle, "rb") as stream:
                return stream.read()
        except IsADirectoryError:
            return None
        except OSError as exc:
            raise InputError(f"{self.root / rel}: cannot read: {exc.strerror}") from None

    @staticmethod
    def owned(rel: str, current: bytes | None, ledger: dict[str, str]) -> bool:
        """May fleetgen overwrite or remove `rel`, whose bytes are `current`? Only a file it wrote, or none.

        A file it wrote carries its header, or the bytes the ledger recorded. A ledger entry alone
        does not make a file fleetgen's: the ledger is committed, so a pull request can name any file."""
        return current is None or current.startswith(_OWNED_MARKS) or ledger.get(rel) == digest(current)

    # -- writing -------------------------------------------------------------------------------

    def changes(self, files: dict[str, bytes]) -> tuple[TreeChanges, dict[str, bytes]]:
        """What writing `files` would change, and the bytes to write (ledger included)."""
        old = self.ledger()
        wanted = {**files, LEDGER: ledger_bytes(files)}
        current = {rel: self.read(rel) for rel in wanted}
        to_write = {rel: data for rel, data in wanted.items() if current[rel] != data}
        dropped = {rel: self.read(rel) for rel in old if rel not in files}
        removed = sorted(rel for rel, data in dropped.items() if data is not None)
        foreign = sorted(
            [rel for rel in to_write if rel != LEDGER and not self.owned(rel, current[rel], old)]
            + [rel for rel in removed if not self.owned(rel, dropped[rel], old)]
        )
        if foreign:
            raise InputError(
                f"{self.root / foreign[0]}: exists and was not generated by fleetgen; move it away to render"
                + (f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else "")
            )
        return TreeChanges(sorted(r for r in to_write if r != LEDGER), removed), to_write

    def refuse_linked_root(self) -> None:
        if self.root.is_symlink():
            raise InputError(f"{self.root}: the output folder is a symbolic link (to {os.readlink(self.root)}); give its real path")

    def write(self, files: dict[str, bytes]) -> TreeChanges:
        self.refuse_linked_root()
        self.recover()
        changes, to_write = self.changes(files)
        if not to_write and not changes.removed:
            return changes
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.root))
            one_by_one = len(to_write) <= _FSYNC_AT_MOST
            # Each thread stages its share in a folder of its own: threads creating files in one
            # folder wait on each other.
            share = _share_size(len(to_write))
            moves = [[f"{number // share}/{number}", rel] for number, rel in enumerate(sorted(to_write))]
            folders = sorted({staging / staged.partition("/")[0] for staged, _ in moves})
            for folder in folders:
                folder.mkdir()
            _each(lambda move: _write_new(f"{staging}/{move[0]}", to_write[move[1]], flush=one_by_one), moves)
            journal = {"staging": staging.name, "moves": moves, "removes": changes.removed}
            if one_by_one:
                for folder in (*folders, staging, self.root):  # the staged names, then the folders' own
                    _flush_folder(folder)
            else:
                os.sync()
            # The staged bytes are durable before the commit point names them.
            pending = self.root / (JOURNAL + ".tmp")
            pending.write_text(json.dumps(journal), encoding="utf-8")
            os.replace(pending, self.root / JOURNAL)  # commit point
        except OSError as exc:
            self._discard_staging()
            raise InputError(f"{self.root}: cannot write the rendered tree: {exc.strerror or exc}") from None
        self.recover()
        return changes

    def recover(self) -> None:
        """Finish a committed render that was interrupted; drop staging of an uncommitted one."""
        self.refuse_linked_root()
        journal_path = self.root / JOURNAL
        try:
            journal = json.loads(journal_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            self._discard_staging()
            return
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested deeper than Python's stack
            raise InputError(f"{journal_path}: unreadable render journal ({exc}); remove it and render again") from None
        moves, removes = self._replay_plan(journal)
        try:
            _each(lambda folder: folder.mkdir(parents=True, exist_ok=True), sorted({target.parent for _, target in moves}))
            _each(_move_staged, moves)
            for target in removes:
                if target.exists():
                    target.unlink()
                    self._remove_empty_parents(target.parent)
            journal_path.unlink()
        except OSError as exc:
            raise InputError(f"{self.root}: cannot finish the interrupted render: {exc.strerror or exc}") from None
        self._discard_staging()

    def _replay_plan(self, journal: Any) -> tuple[list[tuple[Path, Path]], list[Path]]:
        """The moves (staged file, target) and removals of a journal that write() could have made.

        A journal is read from the output folder, which a pull request can fill: its staged files
        must be numbered files in one of this tree's staging folders, through no link, and its
        targets must be inside the tree. Otherwise a forged journal could move any file in."""

        def refuse(why: str) -> NoReturn:
            raise InputError(f"{self.root / JOURNAL}: not a render journal fleetgen wrote: {why}; remove it and render again")

        if not isinstance(journal, dict) or not all(isinstance(journal.get(k), list) for k in ("moves", "removes")):
            refuse("it must name staging, moves and removes")
        staging = journal.get("staging")
        if not isinstance(staging, str) or not _STAGING_NAME.fullmatch(staging):
            refuse(f"{staging!r} is not a staging folder's name")
        moves: list[tuple[Path, Path]] = []
        for move in journal["moves"]:
            shaped = isinstance(move, list) and len(move) == 2 and all(isinstance(part, str) for part in move)
            if not shaped or not _STAGED_NAME.fullmatch(move[0]):
                refuse(f"{move!r} is not a move [staged file, path]")
            self._refuse_escape(move[1], named_in=JOURNAL)
            moves.append((self.root / staging / move[0], self.checked(move[1])))
        for rel in journal["removes"]:
            if not isinstance(rel, str):
                refuse(f"{rel!r} is not a path")
            self._refuse_escape(rel, named_in=JOURNAL)
        for folder in {self.root / staging, *(staged.parent for staged, _ in moves)}:
            if folder.is_symlink():
                refuse(f"{folder} is a symbolic link")
        return moves, [self.checked(rel) for rel in journal["removes"]]

    def _remove_empty_parents(self, folder: Path) -> None:
        while folder != self.root and folder.is_relative_to(self.root):
            try:
                folder.rmdir()  # only succeeds on an empty folder
            except OSError:
                return
            folder = folder.parent

    def _discard_staging(self) -> None:
        if not self.root.is_dir():
            return
        for leftover in self.root.glob(STAGING_PREFIX + "*"):
            if _STAGING_NAME.fullmatch(leftover.name) and _only_staged_files(leftover):
                shutil.rmtree(leftover, ignore_errors=True)
        (self.root / (JOURNAL + ".tmp")).unlink(missing_ok=True)


def _only_staged_files(folder: Path) -> bool:
    """Does `folder` hold what write() stages and nothing else, with no link among it (_STAGED_NAME)?

    A folder of that name that holds anything else was not left by fleetgen, so it is not removed."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    for parent, folders, files in os.walk(folder):  # links to folders are listed, not followed
        for name in folders + files:
            path = os.path.join(parent, name)
            if os.path.islink(path) or not _STAGED_NAME.fullmatch(os.path.relpath(path, folder)):
                return False
    return True


def _linked(path: str) -> InputError:
    return InputError(f"{path}: is a symbolic link; fleetgen does not write through links")


def _each(work: Callable[[_Item], object], items: list[_Item]) -> None:
    """Run `work` on every item; on a few threads, each with a contiguous share, when there are many.

    Creating files and folders is kernel time that the kernel spreads over the cores. On the 2-core
    machine this was measured on, the benchmark's first render (7,503 files in 2,800 folders) took a
    median 5.8 s this way against 8.6 s on one thread, in five alternating pairs. Contiguous shares
    keep the threads of a replay mostly in different folders."""
    share = _share_size(len(items))
    if share >= len(items):
        _in_turn(work, items)
        return
    from concurrent.futures import ThreadPoolExecutor  # with the logging it imports, only for a large write

    with ThreadPoolExecutor(_THREADS) as pool:
        shares = [pool.submit(_in_turn, work, items[start : start + share]) for start in range(0, len(items), share)]
        for done in shares:
            done.result()  # raises the first share's error, once every share has stopped


def _share_size(count: int) -> int:
    """How many of `count` items each thread of _each takes: all of them when they are few."""
    return count if _THREADS == 1 or count <= _FSYNC_AT_MOST else -(-count // _THREADS)


def _in_turn(work: Callable[[_Item], object], items: list[_Item]) -> None:
    for item in items:
        work(item)


def _move_staged(move: tuple[Path, Path]) -> None:
    staged, target = move
    try:
        os.replace(staged, target)
    except FileNotFoundError:
        if staged.exists():
            raise
        # moved already, by the replay that was interrupted


def _write_new(path: str, data: bytes, flush: bool) -> None:
    """Create `path` with `data`: the bare system calls, since a render may create thousands of files."""
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
        if flush:
            os.fsync(handle)
    finally:
        os.close(handle)


def _flush_folder(folder: Path) -> None:
    """Make a folder's entries durable: a new file's name lives in its folder, not in the file."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def replace_file(path: Path, data: bytes) -> None:
    """Write one file (fleet.yaml, a schema) so a crash leaves either the old or the new bytes."""
    pending = path.with_name(f".{path.name}.fleetgen-tmp")
    try:
        pending.write_bytes(data)
        os.replace(pending, path)
    except OSError as exc:
        pending.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None


def write_new_files(root: Path, files: dict[str, bytes]) -> None:
    """Write files fleetgen hands over once and then never owns (import's kept hand-written files).

    Each goes only where no file stands or the same bytes already do; nothing is written unless
    every one can be. Paths are relative and '/'-separated, and are never written through a link."""
    tree = Tree(root)
    to_write: dict[str, bytes] = {}
    for rel, data in sorted(files.items()):
        try:
            current = tree.checked(rel).read_bytes()
        except FileNotFoundError:
            to_write[rel] = data
            continue
        except InputError:
            raise InputError(f"{root / rel}: refusing to write through a symbolic link or outside {root}") from None
        except OSError as exc:
            raise InputError(f"{root / rel}: cannot read: {exc.strerror or exc}") from None
        if current != data:
            raise InputError(f"{root / rel}: exists with other content; move it away to keep the unmodelled objects there")
    for rel, data in to_write.items():
        target = tree.checked(rel)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{target.parent}: cannot create: {exc.strerror or exc}") from None
        replace_file(target, data)

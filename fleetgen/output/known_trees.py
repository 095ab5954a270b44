"""The ledger a fleet text renders to, kept in the cache, so `check` of a tree that matches it needs no render.

The rendered tree is a function of the fleet file's text and name (its files' headers name it) and of
fleetgen's code and data, which the cache's salt covers; its ledger lists every file with its SHA-256.
After a render or check that judged the text valid with the default options, the ledger its files make
is kept under the text, with the hand-written files the fleet lists (clusters' extraResources, which
must exist) and the window of time in which the text's verdict holds (checks/verdict_window.py: a
time-bound grant that has ended since fails the text, and check then judges it the full way). `check`
of the same text then reads the committed tree against that ledger alone: the committed ledger is,
byte for byte, the one kept, and every file it lists hashes to its entry. That
is the whole of what `check` asks (the same files, the same bytes, no orphan, the same ledger), and
it is answered without building the model: the pre-commit hook and a pull request's check of an
unchanged render pay for reading the tree only. Anything else (a text not kept, a fleet with its own
facts file, which is read beside it, a file that differs) is judged the full way, which also says
what explains each difference.

The entry also names the cache entries that hold the files' bytes (output/emitted.py), so `render` of a
text that `validate` (or a render) judged valid today writes the kept files, again without the model:
the files read back are taken only when their ledger is, byte for byte, the one kept.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from fleetgen.cache import Cache
from fleetgen.clock import VerdictWindow
from fleetgen.errors import InputError
from fleetgen.output.emitted import Entry, read_entries
from fleetgen.output.tree import LEDGER, Tree, TreeChanges, digest, ledger_bytes

_KIND = "tree-ledger"


class KnownTree(NamedTuple):
    """What the render of one fleet text is: its ledger, the hand-written files (tree paths) it needs, and the
    cache entries that hold its files (none when they were not kept)."""

    ledger: bytes
    hand_written: tuple[str, ...]
    window: VerdictWindow  # when the text's verdict holds (checks/verdict_window.py, fleetgen/clock.py)
    entries: tuple[Entry, ...] = ()

    def to_bytes(self) -> bytes:
        entry = {
            "ledger": self.ledger.decode("utf-8"),
            "handWritten": list(self.hand_written),
            "window": self.window.to_text(),
            "entries": [list(e) for e in self.entries],
        }
        return json.dumps(entry).encode("utf-8")

    @staticmethod
    def from_bytes(data: bytes) -> KnownTree | None:
        """The entry `data` holds, or None for anything that is not exactly what `to_bytes` writes."""
        try:
            entry = json.loads(data)
            ledger, hand_written, window, entries = entry["ledger"], entry["handWritten"], entry["window"], entry["entries"]
        except (ValueError, TypeError, KeyError, RecursionError):
            return None
        if not isinstance(ledger, str) or not isinstance(hand_written, list) or not all(isinstance(p, str) for p in hand_written):
            return None
        pairs = isinstance(entries, list) and all(isinstance(e, list) and len(e) == 2 for e in entries)
        if not pairs or not all(isinstance(part, str) for e in entries for part in e):
            return None
        held = VerdictWindow.from_text(window) if isinstance(window, str) else None
        if held is None:
            return None
        return KnownTree(ledger.encode("utf-8"), tuple(hand_written), held, tuple((kind, inputs) for kind, inputs in entries))


class KnownTrees:
    """Fleet texts whose render the cache knows, by the text and the fleet file's name."""

    def __init__(self, cache: Cache):
        self.cache = cache

    @staticmethod
    def _inputs(text: bytes, source_name: str) -> str:
        return f"{source_name}\0{hashlib.sha256(text).hexdigest()}"

    def record(
        self,
        text: bytes,
        source_name: str,
        files: dict[str, bytes],
        hand_written: list[str],
        window: VerdictWindow,
        entries: tuple[Entry, ...] = (),
    ) -> None:
        """Remember that `text` renders `files`, which `entries` hold (the caller judged it valid with the default
        options, a verdict that holds in `window`)."""
        entry = KnownTree(ledger_bytes(files), tuple(hand_written), window, entries)
        inputs = self._inputs(text, source_name)
        if self.cache.get(_KIND, inputs) != entry.to_bytes():
            self.cache.put(_KIND, inputs, entry.to_bytes())

    def files(self, text: bytes, source_name: str) -> tuple[KnownTree, dict[str, bytes]] | None:
        """The kept render of `text` and its files; None when it was not kept whole, its verdict does not hold now, or
        what is read back is not exactly the render kept (its ledger differs)."""
        data = self.cache.get(_KIND, self._inputs(text, source_name))
        known = KnownTree.from_bytes(data) if data is not None else None
        if known is None or not known.entries or not known.window.holds():
            return None
        files = read_entries(self.cache, known.entries)
        if files is None or ledger_bytes(files) != known.ledger:
            return None
        return known, files

    def fresh(self, fleet: Path, tree: Tree) -> int | None:
        """The number of files of `tree` when it is known to be the render of FLEET as it is now; None when that is not
        known (the caller then judges the tree the full way, which also reports any trouble reading it)."""
        try:
            text = fleet.read_bytes()
        except OSError:
            return None
        data = self.cache.get(_KIND, self._inputs(text, str(fleet)))
        known = KnownTree.from_bytes(data) if data is not None else None
        if known is None or not known.window.holds():
            return None
        try:
            tree.recover()  # as the full check does: a render interrupted after its commit point is finished first
            if tree.read(LEDGER) != known.ledger:
                return None
            listed = tree.ledger()
            for path, sha in listed.items():
                current = tree.read(path)
                if current is None or digest(current) != sha:
                    return None
        except InputError:
            return None
        if not all(os.path.lexists(tree.root / path) for path in known.hand_written):
            return None
        return len(listed)


def known_fresh(fleet: Path, out: Path | None) -> tuple[Path, int] | None:
    """`check`'s shortcut: the tree's folder and its number of files when the user's cache knows it is the render of
    FLEET as it is now; None when the full check has to say."""
    tree = Tree(out if out is not None else fleet.parent)
    count = KnownTrees(Cache.for_user()).fresh(fleet, tree)
    return (tree.root, count) if count is not None else None


def write_known(
    text: bytes, fleet: Path, out: Path | None, cache: Cache, stage: Callable[[str], None]
) -> tuple[Path, int, TreeChanges] | None:
    """`render`'s shortcut, for a fleet text the caller knows passed: write the files its kept render holds, when the
    cache has them and every hand-written file they need exists (else None: the full render says what is missing).
    The tree's folder, its number of files and what the write changed; `stage` shows progress."""
    kept = KnownTrees(cache).files(text, str(fleet))
    if kept is None:
        return None
    known, files = kept
    tree = Tree(out if out is not None else fleet.parent)
    if not all(os.path.lexists(tree.root / path) for path in known.hand_written):
        return None
    stage(f"writing {len(files)} files")
    return tree.root, len(files), tree.write(files)

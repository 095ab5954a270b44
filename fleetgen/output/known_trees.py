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
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from fleetgen.cache import Cache
from fleetgen.clock import VerdictWindow
from fleetgen.errors import InputError
from fleetgen.output.tree import LEDGER, Tree, digest, ledger_bytes

_KIND = "tree-ledger"


@dataclass(frozen=True)
class KnownTree:
    """What the render of one fleet text is: its ledger, and the hand-written files (tree paths) it needs."""

    ledger: bytes
    hand_written: tuple[str, ...]
    window: VerdictWindow  # when the text's verdict holds (checks/verdict_window.py, fleetgen/clock.py)

    def to_bytes(self) -> bytes:
        entry = {"ledger": self.ledger.decode("utf-8"), "handWritten": list(self.hand_written), "window": self.window.to_text()}
        return json.dumps(entry).encode("utf-8")

    @staticmethod
    def from_bytes(data: bytes) -> KnownTree | None:
        """The entry `data` holds, or None for anything that is not exactly what `to_bytes` writes."""
        try:
            entry = json.loads(data)
            ledger, hand_written, window = entry["ledger"], entry["handWritten"], entry["window"]
        except (ValueError, TypeError, KeyError, RecursionError):
            return None
        if not isinstance(ledger, str) or not isinstance(hand_written, list) or not all(isinstance(p, str) for p in hand_written):
            return None
        held = VerdictWindow.from_text(window) if isinstance(window, str) else None
        return KnownTree(ledger.encode("utf-8"), tuple(hand_written), held) if held is not None else None


class KnownTrees:
    """Fleet texts whose render the cache knows, by the text and the fleet file's name."""

    def __init__(self, cache: Cache):
        self.cache = cache

    @staticmethod
    def _inputs(text: bytes, source_name: str) -> str:
        return f"{source_name}\0{hashlib.sha256(text).hexdigest()}"

    def record(self, text: bytes, source_name: str, files: dict[str, bytes], hand_written: list[str], window: VerdictWindow) -> None:
        """Remember that `text` renders `files` (the caller judged it valid with the default options, a verdict that
        holds in `window`)."""
        entry = KnownTree(ledger_bytes(files), tuple(hand_written), window)
        inputs = self._inputs(text, source_name)
        if self.cache.get(_KIND, inputs) != entry.to_bytes():
            self.cache.put(_KIND, inputs, entry.to_bytes())

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

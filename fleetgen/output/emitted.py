"""Emitted files remembered by what they were emitted from, so a render emits only what changed.

A cluster's folder is remembered by the cluster's input fingerprint (render/fingerprint.py): a
cluster whose fingerprint an earlier render saw is neither planned nor emitted again. Files every
cluster shares (each top-level folder of base/, and FLEET.md) are planned every time, which is
cheap, and remembered by the exact value of their content (repr keeps 1, "1", True and 1.0 apart,
and keeps key order), so an unchanged folder is not emitted again. Either way the key also names
the fleet file, whose name every generated header carries, and the cache salts it with fleetgen's
code, so a change to the emitter or the layout misses. The tree's ledger and write-if-changed still
judge every file.

Each function also names the entry that holds what it returned (`Entry`), so the entries of a whole
tree can be listed under the fleet text that rendered it (output/known_trees.py) and read back
without the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from fleetgen.cache import Cache
from fleetgen.output.emit import files_of

if TYPE_CHECKING:  # a name only: render's shortcut (output/known_trees.py) reads entries without building the model
    from fleetgen.render import OutputFile

_BY_FINGERPRINT = "cluster-files"
_BY_CONTENT = "emitted-files"
_KINDS = (_BY_FINGERPRINT, _BY_CONTENT)

Entry = tuple[str, str]  # a cache entry of emitted files: (kind, inputs)


def _pack(files: dict[str, bytes]) -> bytes:
    """The files as one entry: a line of JSON listing their paths and sizes, then their bytes one after another (a
    JSON object of their texts took ten times as long to write and six times as long to read)."""
    return json.dumps([[path, len(data)] for path, data in files.items()]).encode() + b"\n" + b"".join(files.values())


def _unpack(entry: bytes | None) -> dict[str, bytes] | None:
    """The files an entry holds; None for a miss or anything that is not what `_pack` writes."""
    if entry is None:
        return None
    head, _, body = entry.partition(b"\n")
    try:
        index = json.loads(head)
    except (ValueError, RecursionError):  # RecursionError: an entry nested deeper than Python's stack
        return None
    if not isinstance(index, list) or not index:
        return None
    files: dict[str, bytes] = {}
    start = 0
    for item in index:
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str) or type(item[1]) is not int or item[1] < 0:
            return None
        files[item[0]] = body[start : start + item[1]]
        start += item[1]
    return files if start == len(body) and len(files) == len(index) else None


def cluster_files(cache: Cache, fingerprint: str, source_name: str, plan: Callable[[], list[OutputFile]]) -> tuple[dict[str, bytes], Entry]:
    """The files of a cluster's folder: remembered by its input fingerprint, else planned and emitted; and their entry."""
    entry = (_BY_FINGERPRINT, f"{source_name}\0{fingerprint}")
    known = _unpack(cache.get(*entry))
    if known is not None:
        return known, entry
    files = files_of(plan(), source_name)
    cache.put(*entry, _pack(files))
    return files, entry


def shared_files(cache: Cache, outputs: list[OutputFile], source_name: str) -> tuple[dict[str, bytes], list[Entry]]:
    """The files of `outputs`, each group (a top-level folder of base/, or a file of its own) taken
    whole from the cache when its content was emitted before; and the groups' entries."""
    out: dict[str, bytes] = {}
    entries: list[Entry] = []
    for group in _groups(outputs):
        content = [(o.path, o.markdown if o.markdown is not None else [m.body for m in o.manifests]) for o in group]
        # The content's digest stands for the content: an entry's name stays short enough to be listed.
        entry = (_BY_CONTENT, f"{source_name}\0{hashlib.sha256(repr(content).encode()).hexdigest()}")
        known = _unpack(cache.get(*entry))
        if known is None:
            known = files_of(group, source_name)
            cache.put(*entry, _pack(known))
        out.update(known)
        entries.append(entry)
    return out, entries


def read_entries(cache: Cache, entries: Iterable[Entry]) -> dict[str, bytes] | None:
    """The files the entries hold together; None when one of them is missing, unreadable or not emitted files."""
    out: dict[str, bytes] = {}
    for kind, inputs in entries:
        files = _unpack(cache.get(kind, inputs)) if kind in _KINDS else None
        if files is None:
            return None
        out.update(files)
    return out


def _groups(outputs: Iterable[OutputFile]) -> list[list[OutputFile]]:
    """`outputs` by their first two path segments (base/<folder>), in first-seen order."""
    groups: dict[str, list[OutputFile]] = {}
    for output in outputs:
        groups.setdefault("/".join(output.path.split("/")[:2]), []).append(output)
    return list(groups.values())

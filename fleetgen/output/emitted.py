"""Emitted files remembered by what they were emitted from, so a render emits only what changed.

A cluster's folder is remembered by the cluster's input fingerprint (render/fingerprint.py): a
cluster whose fingerprint an earlier render saw is neither planned nor emitted again. Files every
cluster shares (each top-level folder of base/, and FLEET.md) are planned every time, which is
cheap, and remembered by the exact value of their content (repr keeps 1, "1", True and 1.0 apart,
and keeps key order), so an unchanged folder is not emitted again. Either way the key also names
the fleet file, whose name every generated header carries, and the cache salts it with fleetgen's
code, so a change to the emitter or the layout misses. The tree's ledger and write-if-changed still
judge every file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from fleetgen.cache import Cache
from fleetgen.output.emit import files_of
from fleetgen.render import OutputFile

_BY_FINGERPRINT = "cluster-files"
_BY_CONTENT = "emitted-files"


def _pack(files: dict[str, bytes]) -> bytes:
    return json.dumps({path: data.decode("utf-8") for path, data in files.items()}, ensure_ascii=False).encode("utf-8")


def _unpack(entry: bytes | None) -> dict[str, bytes] | None:
    """The files an entry holds; None for a miss or anything that is not what `_pack` writes."""
    if entry is None:
        return None
    try:
        files = json.loads(entry)
    except (ValueError, RecursionError):  # RecursionError: an entry nested deeper than Python's stack
        return None
    if not isinstance(files, dict) or not files or not all(isinstance(v, str) for v in files.values()):
        return None
    try:
        return {path: text.encode("utf-8") for path, text in files.items()}
    except UnicodeEncodeError:  # a lone surrogate (JSON's "\ud800"): never what _pack writes
        return None


def cluster_files(cache: Cache, fingerprint: str, source_name: str, plan: Callable[[], list[OutputFile]]) -> dict[str, bytes]:
    """The files of a cluster's folder: remembered by its input fingerprint, else planned and emitted."""
    inputs = f"{source_name}\0{fingerprint}"
    known = _unpack(cache.get(_BY_FINGERPRINT, inputs))
    if known is not None:
        return known
    files = files_of(plan(), source_name)
    cache.put(_BY_FINGERPRINT, inputs, _pack(files))
    return files


def shared_files(cache: Cache, outputs: list[OutputFile], source_name: str) -> dict[str, bytes]:
    """The files of `outputs`, each group (a top-level folder of base/, or a file of its own) taken
    whole from the cache when its content was emitted before."""
    out: dict[str, bytes] = {}
    for group in _groups(outputs):
        content = [(o.path, o.markdown if o.markdown is not None else [m.body for m in o.manifests]) for o in group]
        inputs = f"{source_name}\0{content!r}"
        known = _unpack(cache.get(_BY_CONTENT, inputs))
        if known is None:
            known = files_of(group, source_name)
            cache.put(_BY_CONTENT, inputs, _pack(known))
        out.update(known)
    return out


def _groups(outputs: Iterable[OutputFile]) -> list[list[OutputFile]]:
    """`outputs` by their first two path segments (base/<folder>), in first-seen order."""
    groups: dict[str, list[OutputFile]] = {}
    for output in outputs:
        groups.setdefault("/".join(output.path.split("/")[:2]), []).append(output)
    return list(groups.values())

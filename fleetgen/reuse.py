"""Content-addressed reuse of emitted files: a file whose content is unchanged is not emitted again.

A file's key is the SHA-256 of everything its bytes depend on: the exact value of its objects (repr
keeps 1, "1", True and 1.0 apart, and keeps key order), the name of the fleet file in its header,
and the emitter itself (emit.py's source, PyYAML's version, fleetgen's version), so any change to
them misses. The cache is `.fleetgen-cache/emitted.json` (cachefile.py: checked by hash, ignored
by git, safe to delete); it holds the entries the last render used. An entry is used only if its
bytes start with fleetgen's generated-file header, and the tree's ledger and write-if-changed
still judge every file.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import yaml

from fleetgen import __version__
from fleetgen.cachefile import CACHE_FOLDER, read_entries, write_entries
from fleetgen.emit import HEADER, MARKDOWN_HEADER
from fleetgen.render import OutputFile, files_of

__all__ = ["CACHE_FOLDER", "EmitCache"]
_CACHE_FILE = "emitted.json"
_OWNED = (HEADER.split("{", 1)[0], MARKDOWN_HEADER.split("{", 1)[0])


def _emitter_salt() -> str:
    code = (resources.files("fleetgen") / "emit.py").read_bytes()
    return f"{__version__} {yaml.__version__} {hasattr(yaml, 'CSafeDumper')} {hashlib.sha256(code).hexdigest()}"


class EmitCache:
    """Emitted bytes by content key, read from (and saved to) `root`/.fleetgen-cache when given."""

    def __init__(self, root: Path | None = None):
        self.root = root
        self._salt = _emitter_salt()
        self._loaded = {k: v for k, v in read_entries(root, _CACHE_FILE, self._salt).items() if v.startswith(_OWNED)}
        self._used: dict[str, str] = {}

    def files_of(self, outputs: list[OutputFile], source_name: str) -> dict[str, bytes]:
        """What render.files_of gives, taking each file whose key is known from the cache."""
        out: dict[str, bytes] = {}
        for output in outputs:
            content = output.markdown if output.markdown is not None else [m.body for m in output.manifests]
            key = hashlib.sha256(f"{self._salt}\0{source_name}\0{content!r}".encode()).hexdigest()
            text = self._used.get(key) or self._loaded.get(key)
            if text is None:
                text = files_of([output], source_name)[output.path].decode("utf-8")
            self._used[key] = text
            out[output.path] = text.encode("utf-8")
        return out

    def save(self) -> None:
        """Keep the entries this run used, when they differ from what was read."""
        if self._used != self._loaded:
            write_entries(self.root, _CACHE_FILE, self._salt, self._used)

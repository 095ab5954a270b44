"""Content-addressed reuse of emitted files: a file whose content is unchanged is not emitted again.

A file's key is the SHA-256 of everything its bytes depend on: the exact value of its objects (repr
keeps 1, "1", True and 1.0 apart, and keeps key order), the name of the fleet file in its header,
and the emitter itself (emit.py's source, PyYAML's version, fleetgen's version), so any change to
them misses. The cache is `.fleetgen-cache/emitted.json` (cachefile.py: checked by hash, ignored
by git, safe to delete); it holds the entries the last render used. An entry is used only if its
bytes start with fleetgen's generated-file header, and the tree's ledger and write-if-changed
still judge every file.

Each cluster's folder is also remembered whole, by the cluster's input fingerprint (fingerprint.py):
`.fleetgen-cache/planned.json` maps it to the paths and keys of the cluster's files, salted with
all of fleetgen's code and the installed versions (cachefile.code_salt), since the layout code, not
only the emitter, decides them. A cluster found there is neither planned nor emitted again; one whose
entry names a key the emit cache lacks is planned as if it were unknown.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

import yaml

from fleetgen import __version__
from fleetgen.cachefile import CACHE_FOLDER, code_salt, read_entries, write_entries
from fleetgen.emit import GENERATED_MARKS
from fleetgen.render import OutputFile, files_of

__all__ = ["CACHE_FOLDER", "EmitCache"]
_CACHE_FILE = "emitted.json"
_PLANNED_FILE = "planned.json"


def _emitter_salt() -> str:
    code = (resources.files("fleetgen") / "emit.py").read_bytes()
    return f"{__version__} {yaml.__version__} {hasattr(yaml, 'CSafeDumper')} {hashlib.sha256(code).hexdigest()}"


class EmitCache:
    """Emitted bytes by content key, and each cluster's files by fingerprint, read from (and saved to)
    `root`/.fleetgen-cache when given."""

    def __init__(self, root: Path | None = None):
        self.root = root
        self._salt = _emitter_salt()
        self._loaded = {k: v for k, v in read_entries(root, _CACHE_FILE, self._salt).items() if v.startswith(GENERATED_MARKS)}
        self._used: dict[str, str] = {}
        self._planned_salt = code_salt()
        self._planned_loaded = read_entries(root, _PLANNED_FILE, self._planned_salt)
        self._planned_used: dict[str, str] = {}

    def files_of(self, outputs: list[OutputFile], source_name: str, cluster: str | None = None) -> dict[str, bytes]:
        """What render.files_of gives, taking each file whose key is known from the cache.

        `cluster`: the input fingerprint of the cluster whose folder `outputs` is, to remember it by."""
        out: dict[str, bytes] = {}
        keys: list[list[str]] = []
        for output in outputs:
            content = output.markdown if output.markdown is not None else [m.body for m in output.manifests]
            key = hashlib.sha256(f"{self._salt}\0{source_name}\0{content!r}".encode()).hexdigest()
            text = self._text(key)
            if text is None:
                text = files_of([output], source_name)[output.path].decode("utf-8")
            self._used[key] = text
            out[output.path] = text.encode("utf-8")
            keys.append([output.path, key])
        if cluster is not None:
            self._planned_used[self._cluster_key(cluster, source_name)] = json.dumps(keys)
        return out

    def cluster_files(self, fingerprint: str, source_name: str, folder: str) -> dict[str, bytes] | None:
        """The files of a cluster with this input fingerprint as an earlier render emitted them; None when unknown.

        `folder` is the cluster's folder (clusters/<name>/): an entry naming a path outside it, or no
        path at all, is not taken."""
        entry_key = self._cluster_key(fingerprint, source_name)
        entry = self._planned_used.get(entry_key) or self._planned_loaded.get(entry_key)
        if entry is None:
            return None
        try:
            pairs = json.loads(entry)
        except ValueError:
            return None
        if not isinstance(pairs, list) or not pairs:
            return None
        texts: dict[str, tuple[str, str]] = {}
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair) and pair[0].startswith(folder)):
                return None
            path, key = pair
            text = self._text(key)
            if text is None:
                return None  # its emitted files are gone from the cache: plan it again
            texts[path] = (key, text)
        for key, text in texts.values():
            self._used[key] = text
        self._planned_used[entry_key] = entry
        return {path: text.encode("utf-8") for path, (_, text) in texts.items()}

    def _text(self, key: str) -> str | None:
        """The emitted text under `key`, from this run or the cache read."""
        return self._used.get(key) or self._loaded.get(key)

    def _cluster_key(self, fingerprint: str, source_name: str) -> str:
        return hashlib.sha256(f"{source_name}\0{fingerprint}".encode()).hexdigest()

    def save(self) -> None:
        """Keep the entries this run used, when they differ from what was read."""
        if self._used != self._loaded:
            write_entries(self.root, _CACHE_FILE, self._salt, self._used)
        if self._planned_used != self._planned_loaded:
            write_entries(self.root, _PLANNED_FILE, self._planned_salt, self._planned_used)

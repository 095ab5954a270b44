"""Fleet files known to pass validation, so `check` and `diff` need not validate them again.

Validating what a fleet renders (schemas, CEL and API-server rules, reconcile, lints) is a function
of the fleet file's text and of the code and data that judge it. A verdict is kept only for a text
that passed with the default options (no --crd, --strict or --fail-on), keyed by the SHA-256 of the
text and of a salt over every file of the fleetgen package and the version of every installed
distribution, so a change to the code, its data or a dependency misses. A fleet that names its own
facts file is never remembered (that file is read beside it). Only passing is remembered, so a miss
validates again. Stored as `.fleetgen-cache/validated.json` (cachefile.py), the newest KEEP texts.

`ClusterVerdicts` remembers, per cluster, what validating its objects found (passing or not), so a
render after a small edit validates only the clusters the edit touches. Its key is everything that
validation reads: the cluster's input fingerprint (fingerprint.py: the whole fleet but other
clusters' teams, which fixes its objects and Kubernetes version), the CRDs given with --crd,
--strict, and the same salt. Fleet-wide checks (driver versions, the model's own) are never
remembered here; reconcile follows only the clusters without a kept verdict, since verdicts are
saved only after a run that passed, reconcile included. Stored as `.fleetgen-cache/clusters.json`:
the entries the last run used.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from fleetgen.cachefile import code_salt, read_entries, write_entries
from fleetgen.errors import FieldPath, Severity
from fleetgen.load import LoadedFleet

KEEP = 16
_CACHE_FILE = "validated.json"
_CLUSTERS_FILE = "clusters.json"


class Verdicts:
    """Texts that passed validation with the default options, read from `root`/.fleetgen-cache."""

    def __init__(self, root: Path):
        self.root = root
        self._salt = code_salt()
        self._passed = read_entries(root, _CACHE_FILE, self._salt)

    def _key(self, loaded: LoadedFleet) -> str | None:
        if loaded.fleet.compatibility.facts_file is not None:
            return None
        return hashlib.sha256(loaded.source.text.encode()).hexdigest()

    def passed(self, loaded: LoadedFleet) -> bool:
        key = self._key(loaded)
        return key is not None and key in self._passed

    def record(self, loaded: LoadedFleet) -> None:
        """Remember that `loaded` passed with the default options (the caller knows it did)."""
        key = self._key(loaded)
        if key is None or key in self._passed:
            return
        newest = [*sorted(self._passed, key=lambda k: self._passed[k]), key][-KEEP:]
        self._passed = {k: f"{rank:04d}" for rank, k in enumerate(newest)}  # a rank, not a time: the same runs, the same bytes
        write_entries(self.root, _CACHE_FILE, self._salt, self._passed)


@dataclass(frozen=True)
class ClusterVerdict:
    """What validating one cluster's objects found: its problems, and the (apiVersion, kind) pairs it rendered."""

    findings: tuple[tuple[FieldPath, str, Severity], ...]
    kinds: tuple[tuple[str, str], ...]

    def to_text(self) -> str:
        return json.dumps({"findings": [[list(p), m, s.value] for p, m, s in self.findings], "kinds": [list(k) for k in self.kinds]})

    @staticmethod
    def from_text(text: str) -> ClusterVerdict | None:
        """The verdict `text` holds, or None for anything that is not exactly what `to_text` writes."""
        try:
            data = json.loads(text)
            findings = tuple((_field_path(p), m, Severity(s)) for p, m, s in data["findings"])
            kinds = tuple((a, k) for a, k in data["kinds"])
        except (ValueError, TypeError, KeyError):
            return None
        if not all(isinstance(m, str) for _, m, _ in findings) or not all(isinstance(a, str) and isinstance(k, str) for a, k in kinds):
            return None
        return ClusterVerdict(findings, kinds)


def _field_path(items: object) -> FieldPath:
    if not isinstance(items, list) or not all(isinstance(i, str | int) and not isinstance(i, bool) for i in items):
        raise TypeError("not a field path")
    return tuple(items)


class ClusterVerdicts:
    """Each cluster's verdict by cluster fingerprint, read from (and saved to) `root`/.fleetgen-cache when given.

    `schemas` names the schema set beyond fleetgen's own (the --crd CRDs); `strict` is --strict."""

    def __init__(self, root: Path | None, schemas: str, strict: bool):
        self.root = root
        self._salt = code_salt()
        self._options = f"{schemas}\0{strict}"
        self._loaded = read_entries(root, _CLUSTERS_FILE, self._salt)
        self._used: dict[str, str] = {}

    def _key(self, fingerprint: str) -> str:
        return hashlib.sha256(f"{self._options}\0{fingerprint}".encode()).hexdigest()

    def get(self, fingerprint: str) -> ClusterVerdict | None:
        """The remembered verdict of a cluster with this fingerprint; None when there is none or it does not parse."""
        key = self._key(fingerprint)
        text = self._used.get(key) or self._loaded.get(key)
        if text is None:
            return None
        verdict = ClusterVerdict.from_text(text)
        if verdict is not None:
            self._used[key] = text
        return verdict

    def keep(self, fingerprint: str, verdict: ClusterVerdict) -> None:
        self._used[self._key(fingerprint)] = verdict.to_text()

    def save(self) -> None:
        """Keep the entries this run used, when they differ from what was read."""
        if self._used != self._loaded:
            write_entries(self.root, _CLUSTERS_FILE, self._salt, self._used)

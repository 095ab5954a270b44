"""Validation verdicts kept in the cache, so a fleet or cluster validated before is not validated again.

Validating what a fleet renders (schemas, CEL and API-server rules, reconcile, lints) is a function
of the fleet file's text and of the code and data that judge it, which the cache's salt covers.
`FleetVerdicts` remembers texts that passed with the default options (no --crd, --strict or
--fail-on), so `check` and `diff` need not validate them again, for as long as the checks that read
the clock would pass it too (checks/verdict_window.py: until its first time-bound grant ends); a fleet
that names its own facts file is never remembered (that file is read beside it), and only passing is
remembered, so a miss validates again.

`ClusterVerdicts` remembers, per cluster, what validating its objects found (passing or not), so a
render after a small edit validates only the clusters the edit touches. Its inputs are everything
that validation reads: the cluster's input fingerprint (render/fingerprint.py: the whole fleet but
other clusters' teams, which fixes its objects and Kubernetes version), the CRDs given with --crd
and --strict. Fleet-wide checks (driver versions, the model's own) are never remembered here;
reconcile follows only the clusters without a kept verdict, since verdicts are kept only after a
run that passed, reconcile included.
"""

import hashlib
import json
from typing import NamedTuple

from fleetgen.cache import Cache
from fleetgen.checks.kept_values import KeptValues
from fleetgen.checks.load import LoadedFleet
from fleetgen.checks.verdict_window import verdict_window
from fleetgen.clock import VerdictWindow
from fleetgen.errors import FieldPath, Severity

_PASSED = "fleet-passed"
_CLUSTER = "cluster-verdict"


class FleetVerdicts:
    """Fleet texts that passed validation with the default options."""

    def __init__(self, cache: Cache):
        self.cache = cache

    def _inputs(self, loaded: LoadedFleet) -> str | None:
        if loaded.fleet.compatibility.facts_file is not None:
            return None
        return hashlib.sha256(loaded.source.text.encode()).hexdigest()

    def passed(self, loaded: LoadedFleet) -> bool:
        """Whether the text passed, in a run whose verdict still holds now (checks/verdict_window.py, fleetgen/clock.py)."""
        inputs = self._inputs(loaded)
        return inputs is not None and self._passed(inputs)

    def passed_text(self, text: bytes) -> bool:
        """`passed` before the text is typed: a text whose fleet names its own facts file is never kept, so one the cache
        knows names none."""
        return self._passed(hashlib.sha256(text).hexdigest())

    def _passed(self, inputs: str) -> bool:
        entry = self.cache.get(_PASSED, inputs)
        if entry is None or not entry.startswith(b"passed "):
            return False
        window = VerdictWindow.from_text(entry[len(b"passed ") :].decode("utf-8", "replace"))
        return window is not None and window.holds()

    def record(self, loaded: LoadedFleet) -> None:
        """Remember that `loaded` passed with the default options (the caller knows it did), for as long as that holds,
        and what its text parses to, for a reader of a text that passed (checks/kept_values.py)."""
        inputs = self._inputs(loaded)
        if inputs is not None and not self.passed(loaded):
            self.cache.put(_PASSED, inputs, b"passed " + verdict_window(loaded.fleet).to_text().encode("utf-8"))
            KeptValues(self.cache).keep(loaded.source)


class ClusterVerdict(NamedTuple):
    """What validating one cluster's objects found: its problems, and the (apiVersion, kind) pairs it rendered."""

    findings: tuple[tuple[FieldPath, str, Severity], ...]
    kinds: tuple[tuple[str, str], ...]

    def to_text(self) -> str:
        return json.dumps({"findings": [[list(p), m, s.value] for p, m, s in self.findings], "kinds": [list(k) for k in self.kinds]})

    @staticmethod
    def from_text(text: str) -> "ClusterVerdict | None":
        """The verdict `text` holds, or None for anything that is not exactly what `to_text` writes."""
        try:
            data = json.loads(text)
            findings = tuple((_field_path(p), m, Severity(s)) for p, m, s in data["findings"])
            kinds = tuple((a, k) for a, k in data["kinds"])
        except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: nested deeper than Python's stack
            return None
        if not all(isinstance(m, str) for _, m, _ in findings) or not all(isinstance(a, str) and isinstance(k, str) for a, k in kinds):
            return None
        return ClusterVerdict(findings, kinds)


def _field_path(items: object) -> FieldPath:
    if not isinstance(items, list) or not all(isinstance(i, str | int) and not isinstance(i, bool) for i in items):
        raise TypeError("not a field path")
    return tuple(items)


class ClusterVerdicts:
    """Each cluster's verdict by cluster fingerprint, kept in `cache` by `save` after a run that passed.

    `schemas` names the schema set beyond fleetgen's own (the --crd CRDs); `strict` is --strict."""

    def __init__(self, cache: Cache, schemas: str, strict: bool):
        self.cache = cache
        self._options = f"{schemas}\0{strict}"
        self._read: dict[str, ClusterVerdict | None] = {}
        self._new: dict[str, ClusterVerdict] = {}

    def _inputs(self, fingerprint: str) -> str:
        return f"{self._options}\0{fingerprint}"

    def get(self, fingerprint: str) -> ClusterVerdict | None:
        """The remembered verdict of a cluster with this fingerprint; None when there is none or it does not parse."""
        if fingerprint in self._new:
            return self._new[fingerprint]
        if fingerprint not in self._read:
            entry = self.cache.get(_CLUSTER, self._inputs(fingerprint))
            self._read[fingerprint] = ClusterVerdict.from_text(entry.decode("utf-8", "replace")) if entry is not None else None
        return self._read[fingerprint]

    def keep(self, fingerprint: str, verdict: ClusterVerdict) -> None:
        if self._read.get(fingerprint) is None:  # one read from the cache is there already
            self._new[fingerprint] = verdict

    def save(self) -> None:
        """Keep the verdicts this run found."""
        for fingerprint, verdict in self._new.items():
            self.cache.put(_CLUSTER, self._inputs(fingerprint), verdict.to_text().encode("utf-8"))

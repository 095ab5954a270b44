"""What `validate` reported for a fleet text, kept in the cache, so validating the same text again needs no model.

Validating a fleet is a function of the fleet file's text and name (findings name the file), of the
options (--strict, --fail-on), of fleetgen's code and data (the cache's salt covers them) and of the
day: end-of-life warnings and time-bound grants read today's date in UTC, and an upgrade record later
than now only becomes acceptable as time passes. So a report is kept under the text, the file's name,
the options and the UTC date, and only for a run that passed: a failing fleet is judged afresh each
time. A fleet that names its own facts file (read beside it) or a run with --crd (files read beside
it) is never kept. The pre-commit hook's `validate` after a `render` of the same text then prints
the kept report without building the model; anything else is validated the full way.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from fleetgen.cache import Cache
from fleetgen.errors import Finding, Severity

if TYPE_CHECKING:
    from fleetgen.output.tree import TreeChanges

_KIND = "validate-report"


class KnownReport(NamedTuple):
    """A passing validation's findings, and the fleet's numbers of clusters and teams (validate's closing line)."""

    findings: tuple[Finding, ...]
    clusters: int
    teams: int

    def to_bytes(self) -> bytes:
        findings = [f.to_json() for f in self.findings]
        return json.dumps({"findings": findings, "clusters": self.clusters, "teams": self.teams}).encode("utf-8")

    @staticmethod
    def from_bytes(data: bytes) -> KnownReport | None:
        """The report `data` holds, or None for anything that is not exactly what `to_bytes` writes."""
        try:
            entry = json.loads(data)
            findings = tuple(Finding.from_json(item) for item in entry["findings"])
            clusters, teams = entry["clusters"], entry["teams"]
        except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: nested deeper than Python's stack
            return None
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (clusters, teams)):
            return None
        return KnownReport(findings, clusters, teams)


def utc_date() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


class KnownReports:
    """Reports of passing validations, by fleet text, file name, options and UTC date."""

    def __init__(self, cache: Cache):
        self.cache = cache

    @staticmethod
    def _inputs(text: bytes, source_name: str, strict: bool, fail_on: Severity, day: datetime.date) -> str:
        return f"{source_name}\0{hashlib.sha256(text).hexdigest()}\0{strict}\0{fail_on.value}\0{day.isoformat()}"

    def record(self, text: bytes, source_name: str, strict: bool, fail_on: Severity, day: datetime.date, report: KnownReport) -> None:
        """Remember what a passing validation of `text` (with no --crd and no facts file of its own) reported on `day`."""
        inputs = self._inputs(text, source_name, strict, fail_on, day)
        if self.cache.get(_KIND, inputs) != report.to_bytes():
            self.cache.put(_KIND, inputs, report.to_bytes())

    def get(self, fleet: Path, strict: bool, fail_on: Severity, day: datetime.date) -> KnownReport | None:
        """The report kept for FLEET as it is now; None when there is none (the caller validates the full way)."""
        try:
            text = fleet.read_bytes()
        except OSError:
            return None  # the full way reports the trouble
        return self.of_text(text, str(fleet), strict, fail_on, day)

    def of_text(self, text: bytes, source_name: str, strict: bool, fail_on: Severity, day: datetime.date) -> KnownReport | None:
        """The report kept for `text`; None when there is none."""
        data = self.cache.get(_KIND, self._inputs(text, source_name, strict, fail_on, day))
        return KnownReport.from_bytes(data) if data is not None else None


def known_report(fleet: Path, strict: bool, fail_on: Severity) -> KnownReport | None:
    """`validate`'s shortcut: what validating FLEET reported today, when the user's cache kept it."""
    return KnownReports(Cache.for_user()).get(fleet, strict, fail_on, utc_date())


class KnownRender(NamedTuple):
    """What `render` of a text judged valid today did: the report kept, and the tree written from the kept files."""

    report: KnownReport
    root: Path
    files: int
    changes: TreeChanges


def known_render(fleet: Path, out: Path | None, strict: bool, fail_on: Severity, stage: Callable[[str], None]) -> KnownRender | None:
    """`render`'s shortcut: when the user's cache kept what validating FLEET as it is now reported today, and the
    files its render makes, write those files without building the model (the README's `validate && render`); None
    when the full render has to (anything not kept, or not kept whole)."""
    try:
        text = fleet.read_bytes()  # read once: the report and the files are the same text's
    except OSError:
        return None  # the full way reports the trouble
    from fleetgen.output.known_trees import write_known  # the emitter's and the writer's modules: render's, not validate's

    cache = Cache.for_user()
    report = KnownReports(cache).of_text(text, str(fleet), strict, fail_on, utc_date())
    written = write_known(text, fleet, out, cache, stage) if report is not None else None
    if report is None or written is None:
        return None
    cache.prune()
    return KnownRender(report, *written)

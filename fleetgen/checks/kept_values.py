"""What a fleet text that passed parses to, kept in the cache, so reading that text again needs no YAML parse.

`diff` reads two revisions of fleet.yaml, each most often a text that an earlier `validate`, `render` or `check` parsed
and passed moments before (the base branch's run, the pull request's own check); parsing a 22,000-line fleet costs
more than typing it. The command that parsed and passed a text keeps its values here (source/plain_values.py:
JSON, with the text of every number that keeps one), keyed by the text's SHA-256 and salted with fleetgen's code like
every entry of the cache; a reader of that text takes the values instead of parsing it, and reads the positions from
the text only when something is placed in it (source/reader.py `Source`).

An entry holds the SHA-256 of the text it was parsed from and a SHA-256 of itself: one written for another text, cut
short or changed on the disk is a miss, and the text is parsed as before.
"""

from __future__ import annotations

import hashlib

from fleetgen.cache import Cache
from fleetgen.source.plain_values import values_from_json, values_json
from fleetgen.source.reader import Source

_KIND = "fleet-values"
_DIGEST = 64  # hex digits of a SHA-256


class KeptValues:
    """The values of fleet texts that passed, by the text."""

    def __init__(self, cache: Cache):
        self.cache = cache

    def keep(self, source: Source) -> None:
        """Keep what `source` parsed to (the caller knows its text passed); skipped for a value JSON cannot hold."""
        text = hashlib.sha256(source.text.encode("utf-8")).hexdigest()
        try:
            body = text.encode("ascii") + b"\n" + values_json(source.data)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's stack
            return
        self.cache.put(_KIND, text, hashlib.sha256(body).hexdigest().encode("ascii") + b"\n" + body)

    def source(self, raw: bytes, file: str) -> Source | None:
        """`raw` as parsing it gives it, positions read on first use; None when no sound entry is kept for it."""
        text = hashlib.sha256(raw).hexdigest()
        entry = self.cache.get(_KIND, text)
        if entry is None:
            return None
        data = _unwrapped(entry, text)
        if data is None:
            return None
        values = values_from_json(data)
        if values is None:
            return None
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:  # a text that passed was UTF-8: this entry is not for it
            return None
        return Source(file, values, decoded, positions=None)


def _unwrapped(entry: bytes, text: str) -> bytes | None:
    """The JSON of an entry whose own digest holds and that names `text`; None for anything else."""
    digest, body = entry[:_DIGEST], entry[_DIGEST + 1 :]
    if entry[_DIGEST : _DIGEST + 1] != b"\n" or hashlib.sha256(body).hexdigest().encode("ascii") != digest:
        return None
    if body[:_DIGEST] != text.encode("ascii") or body[_DIGEST : _DIGEST + 1] != b"\n":
        return None
    return body[_DIGEST + 1 :]

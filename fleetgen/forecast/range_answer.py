"""A Prometheus range-query answer (`/api/v1/query_range`, resultType matrix), read one series at a time.

An answer for 100 clusters' pools and teams over 90 days of hourly samples is tens of megabytes. The
reader never holds it whole: it walks the top-level object by hand and hands `json` one series (a
`{"metric": ..., "values": ...}` object) at a time, reading more of the stream only while that one
series is incomplete. A malformed answer is one error naming the file, line and column.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from fleetgen.errors import InputError

READ_SIZE = 1 << 16
_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"
LAST_TIME = 221_845_392_000  # 9000-01-01 in seconds since 1970: a forecast's dates, two years on, are still dates


@dataclass(frozen=True)
class Series:
    """One series of the answer: its labels, and its samples as seconds since the epoch and values."""

    labels: dict[str, str]
    times: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]
    where: str = ""  # `file:line:column: data.result[n].values`, for an error about what the values mean


class _Reader:
    """A window over a text stream that remembers how many lines it has dropped, for positions in errors."""

    def __init__(self, stream: IO[str], name: str, read_size: int) -> None:
        self.stream, self.name, self.read_size = stream, name, read_size
        self.text, self.at = "", 0
        self.dropped_lines, self.dropped_line_start = 0, 0  # lines before the window; where the window's first line began
        self.ended = False
        self.started = 0  # where in the window the last value read began

    def more(self, size: int | None = None) -> bool:
        """Drop what was read, append the next `size` characters; False at the end of the stream."""
        if self.ended:
            return False
        try:
            chunk = self.stream.read(size or self.read_size)
        except UnicodeDecodeError as exc:  # the bytes' place in the text is not known: the end of the text read so far
            raise InputError(f"{self.where(len(self.text))}: not UTF-8 (byte 0x{exc.object[exc.start]:02x})") from None
        except (OSError, http.client.HTTPException) as exc:  # a file or a server's connection that fails half-way
            raise InputError(f"{self.where(len(self.text))}: cannot read on: {getattr(exc, 'strerror', None) or exc!r}") from None
        done = self.text[: self.at]
        newlines = done.count("\n")
        if newlines:
            self.dropped_lines += newlines
            self.dropped_line_start = len(done) - done.rfind("\n") - 1
        else:
            self.dropped_line_start += len(done)
        self.text, self.at = self.text[self.at :] + chunk, 0
        self.ended = chunk == ""
        return not self.ended

    def where(self, at: int | None = None) -> str:
        at = self.at if at is None else at
        before = self.text[:at]
        newlines = before.count("\n")
        column = at - before.rfind("\n") if newlines else self.dropped_line_start + at + 1
        return f"{self.name}:{self.dropped_lines + newlines + 1}:{column}"

    def fail(self, path: str, message: str, at: int | None = None) -> InputError:
        return InputError(f"{self.where(at)}: {path}: {message}")

    def peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            while self.at < len(self.text) and self.text[self.at] in _SPACE:
                self.at += 1
            if self.at < len(self.text) or not self.more():
                return self.text[self.at : self.at + 1]

    def expect(self, char: str, path: str) -> None:
        found = self.peek()
        if found != char:
            raise self.fail(path, f"expected {char!r}, found {found or 'the end of the file'!r} (not a Prometheus range-query answer)")
        self.at += 1

    def value(self, path: str) -> Any:
        """The next JSON value, reading on while it is cut off by the end of the window."""
        self.peek()
        size = self.read_size
        while True:
            self.started = self.at
            try:
                found, end = _DECODER.raw_decode(self.text, self.at)
            except RecursionError:  # arrays or objects nested deeper than json reads: no series is
                raise self.fail(path, "nested too deep (not a Prometheus range-query answer)", self.at) from None
            except json.JSONDecodeError as exc:
                shift = 0 if self.ended else self.at  # what more() drops from the front of the window
                if self.more(size):
                    size *= 2  # a long series: fewer, larger reads, so it is parsed a bounded number of times
                    continue
                raise self.fail(path, f"not JSON: {exc.msg}", exc.pos - shift) from None
            if end == len(self.text) and not self.ended and isinstance(found, int | float):
                self.more()  # a number at the end of the window may go on in the next read
                continue
            self.at = end
            return found


def _series(raw: Any, reader: _Reader, path: str, at: int) -> Series:
    if not isinstance(raw, dict) or not isinstance(raw.get("metric"), dict) or not isinstance(raw.get("values"), list):
        raise reader.fail(path, 'a series is an object with `metric` (labels) and `values` ([time, "value"] pairs)', at)
    labels = raw["metric"]
    if not all(isinstance(v, str) for v in labels.values()):
        raise reader.fail(f"{path}.metric", "label values are strings", at)
    samples = raw["values"]
    try:
        if not all(isinstance(pair, list) and len(pair) == 2 for pair in samples):  # not an object of two keys, nor a text
            raise ValueError
        # One list per column, then one conversion each: ten times faster than numpy parsing the pairs as strings.
        times = np.array([pair[0] for pair in samples], dtype=np.float64)
        values = np.array([float(pair[1]) for pair in samples], dtype=np.float64)
        if not ((times >= 0) & (times < LAST_TIME)).all():  # NaN too: no hour, no date, no bounded history
            raise ValueError
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer beyond any float
        raise reader.fail(
            f"{path}.values", 'each sample is [seconds, "value"] with a number in both, seconds since 1970 before 9000', at
        ) from None
    return Series(labels, times, values, f"{reader.where(at)}: {path}.values")


def read_answer(stream: IO[str], name: str, read_size: int = READ_SIZE) -> Iterator[Series]:
    """The series of one range-query answer, in the order it lists them; raises InputError at the first problem."""
    reader = _Reader(stream, name, read_size)
    reader.expect("{", "(document)")
    for key, path in _keys(reader, ""):
        if key == "status":
            status = reader.value(path)
            if status != "success":
                raise reader.fail(path, f"the query did not succeed (status {status!r})", reader.started)
        elif key == "data":
            reader.expect("{", path)
            for inner, inner_path in _keys(reader, path):
                if inner == "resultType":
                    kind = reader.value(inner_path)
                    if kind != "matrix":
                        raise reader.fail(
                            inner_path, f"a range query answers with a matrix, not {kind!r} (use query_range)", reader.started
                        )
                elif inner == "result":
                    yield from _result(reader, inner_path)
                else:
                    reader.value(inner_path)
        else:
            reader.value(path)
    if reader.peek():
        raise reader.fail("(document)", "text after the answer")


def _keys(reader: _Reader, path: str) -> Iterator[tuple[str, str]]:
    """The keys of the object just opened, each before its value is read; consumes the closing brace."""
    if reader.peek() == "}":
        reader.at += 1
        return
    while True:
        key = reader.value(path or "(document)")
        if not isinstance(key, str):
            raise reader.fail(path or "(document)", "object keys are strings")
        reader.expect(":", path)
        yield key, f"{path}.{key}" if path else key
        following = reader.peek()
        reader.at += 1
        if following == "}":
            return
        if following != ",":
            raise reader.fail(path or "(document)", f"expected ',' or '}}', found {following or 'the end of the file'!r}", reader.at - 1)


def _result(reader: _Reader, path: str) -> Iterator[Series]:
    reader.expect("[", path)
    if reader.peek() == "]":
        reader.at += 1
        return
    index = 0
    while True:
        item = f"{path}[{index}]"
        raw = reader.value(item)
        yield _series(raw, reader, item, reader.started)
        following = reader.peek()
        reader.at += 1
        if following == "]":
            return
        if following != ",":
            raise reader.fail(path, f"expected ',' or ']', found {following or 'the end of the file'!r}", reader.at - 1)
        index += 1

"""Hypothesis strategies that mutate a faithful document the way hostile input differs from it.

`mutated(doc)` replaces one to three values anywhere in a copy of `doc`: a type swap (scalar <-> list <->
mapping), a size no one writes by hand (a 5,000-digit number, a 100,000-character string, nesting 200 deep,
2,000 items), or an encoding trap (a line separator, a lone surrogate, NUL, a byte-order mark).
`encoded(text)` gives the bytes of a text as a file could hold them: UTF-8 with and without a BOM,
UTF-16, Latin-1, cut inside a character. Every fuzz target of an untrusted reader draws from these.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

Path = tuple[str | int, ...]

TRAPS = ["\u2028", "\u2029", "\x85", "\x00", "\ufeff", "\ud800", "\u202e", "é", "on", "0777", "1e3", "~", ": ", "- ", "#", "&a", "*a"]
LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(TRAPS),
)


def _deep(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


HUGE = st.one_of(
    st.just(10**4000 - 1),  # below Python's 4,300-digit limit for printing an int, far above any bound
    st.just("9" * 5000),
    st.just("x" * 100_000),
    st.integers(1, 5).map(lambda n: _deep(40 * n, "x")),  # up to 200 deep
    st.just(["item"] * 2000),
    st.just({f"k{i}": i for i in range(2000)}),
)


def swaps(value: Any) -> st.SearchStrategy[Any]:
    """`value` in another type: a scalar in a list or a mapping, a collection flattened to a scalar or re-shaped."""
    if isinstance(value, dict):
        return st.one_of(st.just(list(value.values())), st.just(list(value)), LEAF, st.just({}))
    if isinstance(value, list):
        firsts = value[:1]
        return st.one_of(st.just(firsts[0] if firsts else None), st.just({str(i): v for i, v in enumerate(value)}), LEAF, st.just([]))
    return st.one_of(st.just([value]), st.just({"value": value}), st.just(str(value)), LEAF)


def paths_of(doc: Any, here: Path = ()) -> Iterator[Path]:
    """Every path in `doc`, the root's too."""
    yield here
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from paths_of(value, (*here, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from paths_of(value, (*here, index))


def _replace(doc: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    holder = doc
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = value
    return doc


def _at(doc: Any, path: Path) -> Any:
    for part in path:
        if not isinstance(doc, dict | list):  # a string is indexable, but no place to put a value
            raise TypeError(part)
        doc = doc[part]
    return doc


def mutated(doc: Any, *, max_changes: int = 3) -> st.SearchStrategy[Any]:
    """Copies of `doc` with one to `max_changes` values swapped for another type, a huge size or a trap."""
    paths = list(paths_of(doc))

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        out = copy.deepcopy(doc)
        for _ in range(draw(st.integers(1, max_changes))):
            targets = [p for p in paths if _exists(out, p)]
            path = draw(st.sampled_from(targets))
            out = _replace(out, path, draw(st.one_of(swaps(_at(out, path)), HUGE, LEAF)))
        return out

    return build()


def _exists(doc: Any, path: Path) -> bool:
    try:
        _at(doc, path)
    except (KeyError, IndexError, TypeError):
        return False
    return True


def encoded(text: str) -> st.SearchStrategy[bytes]:
    """The bytes of `text` as a file may hold them."""
    utf8 = text.encode("utf-8", "surrogatepass")
    return st.one_of(
        st.just(utf8),
        st.just(b"\xef\xbb\xbf" + utf8),
        st.just(text.encode("utf-16", "surrogatepass")),
        st.just(text.encode("latin-1", "replace")),
        st.integers(0, max(len(utf8) - 1, 0)).map(lambda cut: utf8[:cut] + b"\xc3"),  # cut inside a character
    )

"""Fold the interim version sets of a finished upgrade back into one set per distinct version row.

While an upgrade rolls out, the clusters of a wave that do not take their whole set along move to
an interim set `<set>-w<N>` (apply.py). Once the last wave is applied every cluster has reached the
target, so an interim set holds the same row as its original: its clusters go back to the original
name and the interim set goes, in the same ruamel round trip, keeping every comment and blank line.
Only interim sets are folded: two sets a person wrote with equal rows stay as they are.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import CommentMark
from ruamel.yaml.tokens import CommentToken

from fleetgen.model import UPGRADE_COMPONENTS, Upgrade, Version
from fleetgen.source.edit import like

_INTERIM = re.compile(r"^(?P<base>.+)-w(?P<wave>\d{1,6})$")

Row = tuple[tuple[int, ...], ...]


def is_interim(name: str, sets: dict[str, Any], record: Upgrade) -> bool:
    """`<set>-w<N>` beside its set `<set>`, N a wave of this upgrade: a set apply.py wrote."""
    match = _INTERIM.fullmatch(name)
    return bool(match) and match["base"] in sets and int(match["wave"]) in {w.wave for w in record.waves}  # type: ignore[index]


def _row(versions: dict[str, Version]) -> Row:
    return tuple(versions[c].key if c in versions else () for c in UPGRADE_COMPONENTS)


def folds(rows: dict[str, dict[str, Version]], record: Upgrade) -> dict[str, str]:
    """Interim set -> the set its clusters go to: the first set (in file order) with the same row, preferring one a person named."""
    groups: dict[Row, list[str]] = {}
    for name, versions in rows.items():
        groups.setdefault(_row(versions), []).append(name)
    out: dict[str, str] = {}
    for names in groups.values():
        keeper = next((n for n in names if not is_interim(n, rows, record)), names[0])
        out |= {n: keeper for n in names if n != keeper and is_interim(n, rows, record)}
    return out


def fold_version_sets(document: Any, rows: dict[str, dict[str, Version]], record: Upgrade) -> dict[str, str]:
    """Repoint the clusters of every foldable interim set and remove the set; returns what was folded into what."""
    moves = folds(rows, record)
    for entry in document["clusters"]:
        if entry["versionSet"] in moves:
            entry["versionSet"] = like(entry["versionSet"], moves[entry["versionSet"]])
    sets: CommentedMap = document["versionSets"]
    for name in moves:
        _remove_keeping_comments(sets, name)
    return moves


def _trailing(mapping: CommentedMap, key: Any) -> tuple[CommentedMap, Any] | None:
    """Where the comment after `key`'s entry lives: on the key, or on the last key of its block-style value."""
    value = mapping[key]
    if isinstance(value, CommentedMap) and len(value) and not value.fa.flow_style():
        return _trailing(value, list(value)[-1])
    return (mapping, key)


def _remove_keeping_comments(sets: CommentedMap, name: str) -> None:
    """Delete `name`; the comment lines after it (they introduce whatever follows) move to the entry before it."""
    names = list(sets)
    index = names.index(name)
    place = _trailing(sets, name)
    token = place[0].ca.items.get(place[1], [None, None, None, None])[2] if place else None
    del sets[name]
    rest = token.value.partition("\n")[2] if token is not None else ""  # drop the removed line's own end-of-line comment
    if not rest or index == 0:
        return
    before = _trailing(sets, names[index - 1])
    if before is None:
        return
    mapping, key = before
    slot = mapping.ca.items.setdefault(key, [None, None, None, None])
    if slot[2] is None:
        slot[2] = CommentToken("\n" + rest, CommentMark(0), None)
    else:
        slot[2].value = slot[2].value + rest

"""What a fleet text that passed parses to, kept in the cache (checks/kept_values.py), is what parsing it gives.

`validate`, `render` and `check` keep the values of a text they passed; `diff` reads a revision the cache knows passed
from that entry instead of parsing it, and reads its positions from the text only when something is placed in it.
The promises: the values, every number's text, the key order and the positions a reader gets are a fresh parse's; a
diff prints the same bytes with the entry and without it; an entry that is damaged, cut short or kept for another
text is a miss (the text is parsed), never a wrong answer or a traceback.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from conftest import EXAMPLE, examples, git, run_cli
from generated_fleets import fleet_text, fleets, pull_requests
from hypothesis import HealthCheck, assume, given
from hypothesis import strategies as st

from fleetgen.cache import Cache
from fleetgen.checks import load
from fleetgen.checks.kept_values import KeptValues
from fleetgen.checks.load import passed_fleet, passed_fleet_text
from fleetgen.errors import FindingsError
from fleetgen.source.plain_values import values_from_json, values_json
from fleetgen.source.reader import parse_fleet
from fleetgen.source.yaml_nodes import SourceFloat, SourceInt

Run = Callable[..., subprocess.CompletedProcess[str]]


def same(a: Any, b: Any) -> bool:
    """`a` and `b` are the same values of the same types in the same order: a number keeps its text, NaN is NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, SourceFloat | SourceInt) and a.text != b.text:
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)  # NaN, -0.0 and the infinities too
    return bool(a == b)


# Scalars as fleet.yaml may write them: numbers in every form the reader keeps the text of, strings YAML 1.1 would
# read otherwise, the characters YAML 1.1 takes for line breaks.
SCALARS = (
    "0x1F", "-0x1f", "+5", "010", "0o17", "007", "1_000", "12.10", "1.", ".5", "+1.5e3", "-0.0", ".nan", ".NaN",
    "-.inf", "+.inf", ".Inf", "3", "-12", "true", "False", "null", "~", "on", "yes", '"\\u2028 \\u0085"', "'it''s'",
    '""', "12.10.1", "1e400", "0.1",
)  # fmt: skip


def flow(value: Any) -> str:
    """`value` (a tree of mappings, lists and scalar texts) as flow-style YAML."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return str(value)


documents = st.recursive(
    st.sampled_from(SCALARS) | st.integers().map(str) | st.floats().map(lambda f: repr(f) if math.isfinite(f) else ".nan"),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True), inner, max_size=4),
    max_leaves=20,
)


@examples(100)
@given(documents)
def test_a_document_read_back_from_json_is_the_document_parsing_gives(document: Any) -> None:
    text = f"doc: {flow(document)}\nanchored: &a {{k: {flow(document)}}}\nmerged: {{<<: *a, own: 0x2A}}\nwhole: *a\n"
    parsed = parse_fleet(text.encode(), "doc.yaml", positions=False).data
    assert same(values_from_json(values_json(parsed)), parsed)
    root = parse_fleet(flow(document).encode() if document != "" else b"x: 1", "doc.yaml", positions=False).data
    assert same(values_from_json(values_json(root)), root)  # a document that is one number or one list


@examples(30, suppress_health_check=[HealthCheck.too_slow])
@given(fleets())
def test_what_the_cache_kept_of_a_passed_text_reads_as_a_fresh_parse(
    tmp_path_factory: pytest.TempPathFactory, fleet: dict[str, Any]
) -> None:
    raw = fleet_text(fleet).encode()
    fresh = parse_fleet(raw, "fleet.yaml")
    kept = KeptValues(Cache(tmp_path_factory.mktemp("cache")))
    kept.keep(fresh)
    got = kept.source(raw, "fleet.yaml")
    assert got is not None and same(got.data, fresh.data) and got.text == fresh.text and got.file == fresh.file
    assert got.positions is None  # not read until asked for
    assert got.values == fresh.values and got.keys == fresh.keys and got.positions is not None
    try:
        typed = passed_fleet_text(raw)
    except FindingsError:
        return
    assert passed_fleet(kept.source(raw, "fleet.yaml")).fleet == typed.fleet  # type: ignore[arg-type]


def _entry_path(folder: Path) -> Path:
    (entry,) = (folder / "v3" / "fleet-values").glob("*")
    return entry


@examples(100)
@given(at=st.integers(0, 10**6), how=st.sampled_from(("flip", "cut", "grow")))
def test_a_damaged_or_foreign_entry_is_a_miss(tmp_path_factory: pytest.TempPathFactory, at: int, how: str) -> None:
    folder = tmp_path_factory.mktemp("cache")
    kept = KeptValues(Cache(folder))
    raw = EXAMPLE.read_bytes()
    kept.keep(parse_fleet(raw, "fleet.yaml"))
    entry = _entry_path(folder)
    data = entry.read_bytes()
    at %= len(data)
    damaged = {
        "flip": data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :],
        "cut": data[:at],
        "grow": data[:at] + b" " + data[at:],
    }[how]
    entry.write_bytes(damaged)
    assert kept.source(raw, "fleet.yaml") is None
    other = raw + b"# another text\n"
    kept.keep(parse_fleet(other, "fleet.yaml"))
    foreign = next(p for p in (folder / "v3" / "fleet-values").glob("*") if p != entry)
    entry.write_bytes(foreign.read_bytes())  # the other text's sound entry under this text's key
    assert kept.source(raw, "fleet.yaml") is None
    assert kept.source(other, "fleet.yaml") is not None


def _diffs(repo: Path, cache: Path) -> tuple[list[tuple[int, str, str]], int]:
    """Every format of `diff --base HEAD` with `cache`, the markdown file beside them; and how many revisions were parsed
    to be typed (a revision read from a kept entry is not)."""
    env = {"XDG_CACHE_HOME": str(cache)}
    out = []
    with mock.patch.object(load, "parse_fleet", wraps=load.parse_fleet) as parsed:
        for fmt in ("text", "json", "github"):
            done = run_cli("diff", "--base", "HEAD", "--format", fmt, "--markdown-file", "comment.md", cwd=repo, env=env)
            out.append((done.returncode, done.stdout, (repo / "comment.md").read_text(encoding="utf-8")))
    return out, parsed.call_count


@pytest.mark.slow  # each example validates both revisions and diffs them twelve times
@examples(20, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(pull_requests())
def test_a_diff_prints_the_same_bytes_with_the_kept_values_without_them_and_with_damaged_ones(
    tmp_path_factory: pytest.TempPathFactory, pair: tuple[dict[str, Any], dict[str, Any], list[str]]
) -> None:
    base, head, _ = pair
    top = tmp_path_factory.mktemp("pr")
    repo = top / "repo"
    repo.mkdir()
    env = {"XDG_CACHE_HOME": str(top / "kept")}
    (repo / "fleet.yaml").write_text(fleet_text(base), encoding="utf-8")
    passed = run_cli("validate", cwd=repo, env=env).returncode == 0
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "fleet.yaml")
    git(repo, "commit", "-qm", "base")
    (repo / "fleet.yaml").write_text(fleet_text(head), encoding="utf-8")
    assume(passed and run_cli("validate", cwd=repo, env=env).returncode == 0)
    entries = sorted((top / "kept" / "fleetgen" / "v3" / "fleet-values").glob("*"))
    assert len(entries) == (2 if fleet_text(base) != fleet_text(head) else 1)
    shutil.copytree(top / "kept", top / "none")
    shutil.rmtree(top / "none" / "fleetgen" / "v3" / "fleet-values")
    shutil.copytree(top / "kept", top / "damaged")
    damaged = sorted((top / "damaged" / "fleetgen" / "v3" / "fleet-values").glob("*"))
    damaged[0].write_bytes(damaged[0].read_bytes()[:-1] + b"}")  # cut short and mended to JSON: its digest no longer holds
    damaged[-1].write_bytes(entries[0].read_bytes() if len(entries) == 2 else b"")  # the other revision's entry: foreign

    with_entries, parsed_with = _diffs(repo, top / "kept")
    without, parsed_without = _diffs(repo, top / "none")
    assert with_entries == without
    assert (parsed_with, parsed_without) == (0, 6)  # both revisions read from the kept entries, or parsed, each run
    again, _ = _diffs(repo, top / "damaged")
    assert again == without

"""The suite's own rules: a consumer's test never skips silently in CI, and golden files are never
rewritten by a run that also compares with them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO, skip_without

TESTS = REPO / "tests"
# Skips that are not about a missing tool, each with why it may skip at all.
ALLOWED_SKIPS = {
    ("test_reliability.py", "mounting a small tmpfs needs root here"): "a full disk is simulated with a mount only root may make",
    ("test_reliability.py", "a read-only bind mount needs root here"): "likewise a read-only tree",
    ("conftest.py", "regenerated"): "a --regenerate run rewrote a golden file and proves nothing about it",
}


def _text(node: ast.expr | None) -> str:
    """The literal text of a string argument (an f-string's literal parts), else ''."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(part) for part in node.values if isinstance(part, ast.Constant))
    return ""


def _skips(path: Path) -> list[tuple[str, str]]:
    """(how, reason) of each pytest.skip / skipif / importorskip call in `path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in {"skip", "skipif", "importorskip"}:
            reasons = [_text(a) for a in [*node.args, *(k.value for k in node.keywords)]]
            found.append((node.func.attr, next((r for r in reasons if r), "")))
    return found


def test_every_skip_is_a_missing_tool_or_a_stated_exception() -> None:
    """A skip for a missing tool goes through skip_without, which fails under FLEETGEN_REQUIRE_TOOLS=1;
    any other skip must be listed above with its reason."""
    unexplained = []
    for path in sorted(TESTS.rglob("*.py")):
        for how, reason in _skips(path):
            if path.name == "conftest.py" and how == "skip" and reason == "":
                continue  # skip_without's own skip, of the reason it is given
            if not any(path.name == file and reason.startswith(start) for file, start in ALLOWED_SKIPS):
                unexplained.append(f"{path.relative_to(REPO)}: {how}({reason!r})")
    assert unexplained == [], "skip through conftest.skip_without(tool, why), or list the skip in ALLOWED_SKIPS with why"


def test_a_missing_tool_fails_where_every_tool_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    import conftest

    monkeypatch.setattr(conftest, "REQUIRE_TOOLS", True)
    with pytest.raises(pytest.fail.Exception, match="promtool is required here"):
        skip_without("promtool", "promtool is not installed")
    monkeypatch.setattr(conftest, "REQUIRE_TOOLS", False)
    with pytest.raises(pytest.skip.Exception, match="promtool is not installed"):
        skip_without("promtool", "promtool is not installed")


def test_golden_files_are_written_only_by_a_regenerating_run() -> None:
    """No test reads an environment variable to rewrite its golden files: only `--regenerate` does, and such a run skips."""
    for path in sorted(set(TESTS.glob("test_*.py")) - {Path(__file__)}):
        assert "FLEETGEN_REGENERATE" not in path.read_text(encoding="utf-8"), path.name


def _asserted_lookups(path: Path) -> list[int]:
    """Lines of `path` that assert a tool was found by shutil.which, directly or through a name bound to a lookup
    (in the asserting function, or at module level and not rebound there)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def looks_up(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "which" for n in ast.walk(node))

    def bound(body: list[ast.stmt], lookup: bool) -> set[str]:
        assigns = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Assign) and looks_up(n.value) == lookup]
        return {t.id for n in assigns for t in n.targets if isinstance(t, ast.Name)}

    module = bound(tree.body, lookup=True)
    lines = set()
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        names = bound(function.body, lookup=True) | (module - bound(function.body, lookup=False))
        for node in (n for n in ast.walk(function) if isinstance(n, ast.Assert)):
            if looks_up(node.test) or any(isinstance(m, ast.Name) and m.id in names for m in ast.walk(node.test)):
                lines.add(node.lineno)
    return sorted(lines)


def test_no_test_asserts_that_a_tool_is_installed() -> None:
    """A missing tool (Chromium, promtool, helm...) skips with its reason locally and fails in CI: skip_without
    does both, while an assert fails the README's test command on every machine without the tool."""
    asserted = [f"{path.name}:{line}" for path in sorted(TESTS.glob("test_*.py")) for line in _asserted_lookups(path)]
    assert asserted == [], "use conftest.skip_without(tool, why) where a tool may be missing"

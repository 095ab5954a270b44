"""The documentation site: generated pages are fresh, the README stays short, user pages tell no history,
and the strict build refuses a page left out of the navigation and a broken link.

Regenerate the generated pages with `fleetgen docs`.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli, skip_without

from fleetgen.cli.reference_doc import generated_pages

DOCS = REPO / "docs"
HISTORY = re.compile(r"\bissues? #?\d+|\brounds? \d+|\bthis round\b|\bafter issues?\b|\bPR #\d+", re.I)


def test_generated_pages_are_fresh() -> None:
    pages = generated_pages()
    assert len(pages) == 4
    for path, text in pages.items():
        assert (REPO / path).read_text(encoding="utf-8") == text, f"{path} is stale: run `fleetgen docs`"


def test_the_readme_is_short_and_starts_with_the_two_set_up_commands() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, len(lines)
    assert lines[3].startswith("python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/fleetgen validate fleet.yaml")
    assert lines[4] == "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -n auto"


def test_the_readme_first_command_renders_nothing_new_on_the_shipped_fleet(tmp_path: Path) -> None:
    """Its fleetgen steps, as the line runs them, on a copy of the repository's fleet and committed tree."""
    line = (REPO / "README.md").read_text(encoding="utf-8").splitlines()[3]
    steps = [s.strip().removeprefix(".venv/bin/").split() for s in line.split("&&") if "fleetgen" in s]
    assert [s[:2] for s in steps] == [["fleetgen", "validate"], ["fleetgen", "render"]]
    for name in ("fleet.yaml", "base", "clusters", "FLEET.md", ".fleetgen-ledger"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy)(REPO / name, tmp_path / name)
    for argv in steps:
        done = run_cli(*argv[1:], cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert ": 0 written, 0 removed" in done.stderr  # the README says the committed tree is its output


def test_ci_runs_the_readme_test_command_and_the_strict_docs_build() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert ".venv/bin/pip install --quiet -e '.[test,docs]'" in ci and ".venv/bin/python -m pytest -q -n auto" in ci
    assert ".venv/bin/mkdocs build --strict" in ci


@pytest.mark.parametrize("page", sorted([REPO / "README.md", *DOCS.rglob("*.md")]), ids=lambda p: str(p.relative_to(REPO)))
def test_user_pages_tell_no_history(page: Path) -> None:
    found = HISTORY.findall(page.read_text(encoding="utf-8"))
    assert not found, f"{page.relative_to(REPO)} tells history ({found}): that belongs in CHANGELOG.md or benchmarks/README.md"


def nav_pages(nav: list[object]) -> list[str]:
    found: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        found += nav_pages(value) if isinstance(value, list) else [str(value)]
    return found


def test_every_page_is_in_the_navigation() -> None:
    """The strict build says so too; this names the page without building."""
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages == set(nav_pages(config["nav"]))


def test_the_strict_build_refuses_an_orphan_page_and_a_broken_link(tmp_path: Path) -> None:
    if shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None:
        skip_without("mkdocs", "the docs extra is not installed (pip install -e '.[docs]')")
    mkdocs = str(Path(sys.executable).parent / "mkdocs")
    site = tmp_path / "site"
    shutil.copytree(DOCS, site / "docs")
    shutil.copy(REPO / "mkdocs.yml", site / "mkdocs.yml")
    build = [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "out")]
    assert subprocess.run(build, cwd=site, capture_output=True, text=True, check=False).returncode == 0
    (site / "docs" / "orphan.md").write_text("# Not in the navigation\n", encoding="utf-8")
    orphan = subprocess.run(build, cwd=site, capture_output=True, text=True, check=False)
    assert orphan.returncode != 0 and "orphan.md" in orphan.stderr
    (site / "docs" / "orphan.md").unlink()
    index = site / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\n[gone](how-to/no-such-page.md)\n", encoding="utf-8")
    broken = subprocess.run(build, cwd=site, capture_output=True, text=True, check=False)
    assert broken.returncode != 0 and "no-such-page.md" in broken.stderr


TEST_REFERENCE = re.compile(r"(?:tests/)?(test_\w+\.py)(?:::(test_\w+))?")


def test_every_test_a_page_names_exists() -> None:
    """A page that says which test proves a promise names a test that is there."""
    named = 0
    for page in [REPO / "README.md", *DOCS.rglob("*.md")]:
        for module, function in TEST_REFERENCE.findall(page.read_text(encoding="utf-8")):
            source = REPO / "tests" / module
            assert source.is_file(), f"{page.relative_to(REPO)} names {module}, which does not exist"
            if function:
                prefix = function.endswith("_")  # `test_lint_*`: the tests whose names start so
                assert f"def {function}{'' if prefix else '('}" in source.read_text(encoding="utf-8"), (
                    f"{page.relative_to(REPO)} names {module}::{function}"
                )
                named += 1
    assert named >= 10, named


def test_the_findings_reference_holds_every_module_that_raises_findings() -> None:
    page = (DOCS / "reference" / "findings.md").read_text(encoding="utf-8")
    raising = sorted(
        p.relative_to(REPO / "fleetgen").with_suffix("").as_posix()
        for p in (REPO / "fleetgen").rglob("*.py")
        if re.search(r"\bFinding\(\s*\S", p.read_text(encoding="utf-8"))
        and p.name not in {"errors.py", "findings_doc.py"}  # the type, and the page's reader
    )
    assert raising and all(f"\n## {module}\n" in page for module in raising), [m for m in raising if f"\n## {m}\n" not in page]
    assert "| error | `the pool is partitioned two ways (timeSlicing and mig): choose one` | Choose one |" in page
    assert page.count("\n| error |") + page.count("\n| warning |") > 150


def test_every_finding_says_how_to_fix_it() -> None:
    """Each finding's fix is its own closing instruction or the `# fix:` comment above the code that raises it."""
    from fleetgen.cli.findings_doc import finding_entries

    entries = [(module, entry) for module, _, found in finding_entries() for entry in found]
    assert len(entries) > 150, len(entries)  # the reader finds the findings (one that finds none checks nothing)
    missing = [f"{module}: {entry.message}" for module, entry in entries if not entry.fix]
    assert not missing, "findings without a fix (add a `# fix: ...` comment above the statement):\n" + "\n".join(missing)


def test_a_fix_comment_is_read_from_right_above_the_statement_that_raises_the_finding() -> None:
    from fleetgen.cli.findings_doc import _entries

    source = (
        "def check():\n"
        "    # why the check exists, not its fix\n"
        "    # fix: Lower maxNodes or\n"
        "    #   request an increase\n"
        "    yield Finding((), 'too many nodes')\n"
        "    yield Finding((), 'too few nodes')\n"
    )
    first, second = _entries(ast.parse(source), source.splitlines(), is_model=False)
    assert first.fix == "Lower maxNodes or request an increase"
    assert second.fix == ""  # a comment serves the statement right below it only
    source = (
        "def check():  # fix: name a known pool\n"
        "    yield Finding((), 'unknown pool')\n"
        "    yield Finding((), 'the text  # fix: inside a string is code')  # fix: drop the pool\n"
    )
    first, second = _entries(ast.parse(source), source.splitlines(), is_model=False)
    assert (first.fix, second.fix) == ("Name a known pool", "Drop the pool")  # the def line's, then the statement's own

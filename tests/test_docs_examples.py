"""The examples of the README and the documentation site run, and show what fleetgen prints.

The README's tour and the tutorial start from an empty folder and build their fleet as the reader
does, in order (tests/page_examples.py reads the pages). Every other page's console sessions run on
the shipped example fleet, committed in a Git repository, with what the page's commands read from a
cluster, a Prometheus or another repository set up beside it (tests/page_fixtures.py). A `fleetgen`
command in a shell block that is not a console session would run nowhere, so no page may show one.
`pytest tests/test_docs_examples.py --regenerate` writes the output fleetgen prints
into the pages (review it, and put `...` back where a page shows only part of it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from committed_repo import Build
from conftest import REPO, regenerated
from page_examples import Command, Edit, Session, matches, shell_blocks, steps
from page_fixtures import FIXTURES, example_repository

DOCS = REPO / "docs"
FROM_EMPTY = [REPO / "README.md", DOCS / "tutorial" / "first-fleet.md"]  # pages that build their own fleet
PAGES = sorted([REPO / "README.md", *DOCS.rglob("*.md")])
ON_EXAMPLE = [p for p in PAGES if p not in FROM_EMPTY and any(isinstance(s, Command) for s in steps(p.read_text(encoding="utf-8")))]
FLEETGEN_URL = "https://github.com/fleetgen/fleetgen"  # what the pages' `init --fleetgen-source` names


def session_env(tmp_path: Path, fleetgen_repository: tuple[Path, str]) -> dict[str, str]:
    """git as on a reader's machine: an identity, and fleetgen's public URL served by a local copy of this source."""
    config = tmp_path / "gitconfig"
    config.write_text(
        f'[user]\n\tname = Ada\n\temail = ada@example.com\n[init]\n\tdefaultBranch = main\n[url "file://{fleetgen_repository[0]}"]\n'
        f"\tinsteadOf = {FLEETGEN_URL}\n",
        encoding="utf-8",
    )
    return {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1", "COLUMNS": "200"}


def follow(page: Path, session: Session, regenerate: bool) -> None:
    """Run the page's steps in order; fail at the first command whose output or exit code differs."""
    text = page.read_text(encoding="utf-8")
    rewritten = text.splitlines()
    shift = 0
    for step in steps(text):
        if isinstance(step, Edit):
            session.edit(step)
            continue
        code, output = session.run(step)
        where = f"{page.relative_to(REPO)}:{step.at}: $ {step.line}"
        if regenerate and not matches(step.shown, output):
            first = step.at - 1 + step.span + shift  # the output's first line, 0-based, in the rewritten page
            rewritten[first : first + len(step.shown)] = [(step.indent + line).rstrip() for line in output]
            shift += len(output) - len(step.shown)
            continue
        assert code == step.exit_code, f"{where}\nexit {code}, the page expects {step.exit_code}:\n" + "\n".join(output)
        assert matches(step.shown, output), (
            f"{where}\nthe page shows:\n" + "\n".join(step.shown) + "\nfleetgen printed:\n" + "\n".join(output)
        )
    if regenerate and rewritten != text.splitlines():
        page.write_text("\n".join(rewritten) + "\n", encoding="utf-8")
        regenerated(page)


@pytest.mark.parametrize("page", FROM_EMPTY, ids=lambda p: str(p.relative_to(REPO)))
def test_a_page_that_builds_its_fleet_runs_from_an_empty_folder(
    page: Path, tmp_path: Path, fleetgen_repository: tuple[Path, str], regenerate: bool
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    follow(page, Session(folder, session_env(tmp_path, fleetgen_repository)), regenerate)


@pytest.mark.parametrize("page", ON_EXAMPLE, ids=lambda p: str(p.relative_to(REPO)))
def test_a_page_runs_on_the_shipped_fleet(
    page: Path, tmp_path: Path, fleetgen_repository: tuple[Path, str], kustomize: Build, regenerate: bool
) -> None:
    folder = tmp_path / "fleet"
    example_repository(folder)
    setup = FIXTURES.get(page.relative_to(REPO).as_posix())
    if setup is not None:
        setup(folder, kustomize)
    follow(page, Session(folder, session_env(tmp_path, fleetgen_repository)), regenerate)


def test_every_fixture_serves_a_page_that_runs() -> None:
    """A fixture whose page no longer exists or no longer runs a command would set up nothing anyone reads."""
    for name in FIXTURES:
        assert REPO / name in ON_EXAMPLE, name


def test_the_tutorial_ends_with_what_it_promises() -> None:
    """A reader who follows it alone ends with a valid fleet, a rendered tree, a diff naming its approvers, a planned upgrade."""
    commands = [s.line for s in steps((DOCS / "tutorial" / "first-fleet.md").read_text(encoding="utf-8")) if isinstance(s, Command)]
    for promised in ("fleetgen init ", "fleetgen validate", "fleetgen render", "fleetgen diff --base main", "fleetgen upgrade plan "):
        assert any(c.startswith(promised) for c in commands), promised
    diff = next(
        s
        for s in steps((DOCS / "tutorial" / "first-fleet.md").read_text(encoding="utf-8"))
        if isinstance(s, Command) and s.line.startswith("fleetgen diff")
    )
    assert any("approv" in line for line in diff.shown), "the tutorial's diff shows no approvers"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_fleetgen_command_a_page_shows_runs(page: Path) -> None:
    """A `fleetgen` line in a plain shell block is never run, so it could go stale unseen: it belongs in a console session."""
    unrun = [f"{page.relative_to(REPO)}:{line}: {command}" for line, command in shell_blocks(page.read_text(encoding="utf-8"))]
    assert not unrun, "shown in a shell block, where no test runs it; make it a ```console session:\n" + "\n".join(unrun)


def test_a_fleetgen_command_in_a_shell_block_is_found() -> None:
    page = "```sh\nfleetgen render \\\n  --out x\n```\n\n```console\n$ fleetgen validate\n```\n"
    assert shell_blocks(page) == [(3, "fleetgen render  --out x")]  # shell blocks are read; console sessions run instead

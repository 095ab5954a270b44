"""The examples of the README and the documentation site run, and show what fleetgen prints.

The README's tour and the tutorial start from an empty folder and build their fleet as the reader
does, in order (tests/page_examples.py reads the pages). Every other page's console sessions run on
the shipped example fleet, committed in a Git repository, with what the page's commands read from a
cluster, a Prometheus or another repository set up beside it (tests/page_fixtures.py). `fleetgen`
commands in other shell blocks must at least name commands and options that exist. `pytest tests/test_docs_examples.py --regenerate` writes the output fleetgen prints
into the pages (review it, and put `...` back where a page shows only part of it).
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from committed_repo import Build
from conftest import REPO, regenerated
from page_examples import Command, Edit, Session, matches, shell_blocks, steps
from page_fixtures import FIXTURES, example_repository

from fleetgen.cli import cli

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
def test_every_shown_command_names_options_that_exist(page: Path) -> None:
    """A `fleetgen` line in a plain shell block names a command and options it has (nothing runs)."""
    for line, command in shell_blocks(page.read_text(encoding="utf-8")):
        for words in _invocations(Command(command, (), line).argv):
            problem = _unknown(words)
            assert problem is None, f"{page.relative_to(REPO)}:{line}: {command}\n{problem}"


def _invocations(argv: list[str]) -> list[list[str]]:
    """The fleetgen commands of one shell line (`a && b | c > f` runs a and b; a pipe's reader is not fleetgen)."""
    found, current, skip = [], [], False
    for word in argv:
        if word in {"&&", "||", ";", "|", ">", ">>", "2>"}:
            if current and current[0] == "fleetgen":
                found.append(current[1:])
            current, skip = [], word in {">", ">>", "2>"}
        elif skip:
            skip = False
        else:
            current.append(word)
    if current and current[0] == "fleetgen":
        found.append(current[1:])
    return found


def _unknown(words: list[str]) -> str | None:
    """What in `words` fleetgen would not know: a command, or an option of the command it names; None when all is known."""
    command: click.Command = cli
    path = ["fleetgen"]
    rest = list(words)
    while isinstance(command, click.Group):
        names = [w for w in rest if not w.startswith("-")]
        if not names:
            return None  # a group alone (or with --help) prints its help
        sub = command.commands.get(names[0])
        if sub is None:
            return f"`{' '.join(path)}` has no command {names[0]!r}"
        rest = rest[rest.index(names[0]) + 1 :]
        command, path = sub, [*path, names[0]]
    known = {"-h", "--help"} | {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    for word in rest:
        option = word.split("=", 1)[0]
        if word.startswith("-") and word != "-" and option not in known:
            return f"`{' '.join(path)}` has no option {option}"
    return None


def test_the_command_check_refuses_what_fleetgen_lacks() -> None:
    assert _unknown(["render", "--out", "x"]) is None and _unknown(["upgrade", "plan", "--set", "driver=1"]) is None
    assert _unknown(["render", "--colour"]) == "`fleetgen render` has no option --colour"
    assert _unknown(["team", "adopt"]) == "`fleetgen team` has no command 'adopt'"
    page = "```sh\nfleetgen render \\\n  --out x\n```\n\n```console\n$ fleetgen validate\n```\n"
    assert shell_blocks(page) == [(3, "fleetgen render  --out x")]  # shell blocks are read; console sessions run instead

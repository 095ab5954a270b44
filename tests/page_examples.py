"""The runnable examples of a documentation page: its shell sessions and the file edits between them.

A page is read top to bottom as a reader follows it:

- a ```console block (at the margin, or indented under a list item) holds commands (`$ ` lines) each followed by the output it shows. A line `...`
  in the output stands for any number of lines; everything else must match, after `normalise`.
  A command ends in `# exits N` when it is meant to fail.
- a fenced block titled `title="FILE: add after `LINE`"` inserts its lines after the first line of
  FILE that reads LINE exactly; `title="FILE: replace `LINE`"` puts its lines in place of that line.

`fleetgen` commands run in this process (click's CliRunner, as the suite's `cli_run`), and one that
ends in `> FILE` writes what it prints to stdout into FILE; `cd` moves the session; anything else
(git, ls) runs as a process in the session's folder.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from fleetgen.cli import cli

FENCE = re.compile(r"^( *)```(\S*)(.*)$")
EDIT = re.compile(r'title="(?P<file>[^:"]+): (?P<how>add after|replace) `(?P<line>[^`]*)`"')
EXITS = re.compile(r"\s+# exits (\d+)$")


@dataclass(frozen=True)
class Command:
    line: str  # as the page shows it, without `$ `, its continued lines joined
    shown: tuple[str, ...]  # the output the page shows
    at: int  # the page's line of the command
    span: int = 1  # the lines it takes on the page
    indent: str = ""  # the block's indentation on the page (a block under a list item)

    @property
    def argv(self) -> list[str]:
        return shlex.split(EXITS.sub("", self.line), comments=True)

    @property
    def exit_code(self) -> int:
        found = EXITS.search(self.line)
        return int(found.group(1)) if found else 0


@dataclass(frozen=True)
class Edit:
    file: str
    how: str  # "add after" or "replace"
    anchor: str
    lines: tuple[str, ...]
    at: int


Step = Command | Edit


def steps(text: str) -> list[Step]:
    """The page's commands and edits in reading order."""
    found: list[Step] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent = fence.group(1)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```"))
        body, start = [line.removeprefix(indent) for line in lines[i + 1 : end]], i + 2
        if fence.group(2) == "console":
            found += _commands(body, start, indent)
        elif edit := EDIT.search(fence.group(3)):
            found.append(Edit(edit["file"], edit["how"], edit["line"], tuple(body), start - 1))
        i = end + 1
    return found


def _commands(body: list[str], start: int, indent: str) -> list[Command]:
    commands: list[Command] = []
    n = 0
    while n < len(body):
        if not body[n].startswith("$ "):
            n += 1
            continue
        at, line = start + n, body[n][2:]
        while line.endswith("\\") and n + 1 < len(body):  # a command continued on the next line
            n += 1
            line = line[:-1] + " " + body[n].strip()
        n += 1
        span = start + n - at
        shown = []
        while n < len(body) and not body[n].startswith("$ "):
            shown.append(body[n])
            n += 1
        commands.append(Command(line, tuple(shown), at, span, indent))
    return commands


def shell_blocks(text: str) -> list[tuple[int, str]]:
    """(line, command) of every `fleetgen` command in a shell block (sh, bash, or none named) that is not a console session."""
    found: list[tuple[int, str]] = []
    lines = text.splitlines()
    fenced, kind = False, ""
    for n, line in enumerate(lines, start=1):
        fence = FENCE.match(line)
        if fence:
            fenced, kind = (not fenced, fence.group(2)) if not fenced else (False, "")
            continue
        command = line.strip()
        if fenced and kind in {"", "sh", "bash", "shell"} and command.startswith("fleetgen "):
            while command.endswith("\\") and n < len(lines):
                command, n = command[:-1] + " " + lines[n].strip(), n + 1
            found.append((n, command))
    return found


def normalise(text: str, folder: Path) -> list[str]:
    """The output as the page would show it: the session's folder as `.`, no trailing blanks."""
    text = text.replace(str(folder.resolve()) + "/", "").replace(str(folder) + "/", "")
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(shown: tuple[str, ...], actual: list[str]) -> bool:
    """Whether `actual` is what `shown` says, a `...` line standing for any run of lines."""
    if not shown:
        return not actual
    if shown[0] == "...":
        return any(matches(shown[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and shown[0] == actual[0] and matches(shown[1:], actual[1:])


@dataclass
class Session:
    """A reader's shell: a folder, an environment, the commands run so far."""

    folder: Path
    env: dict[str, str]

    def run(self, command: Command) -> tuple[int, list[str]]:
        argv = command.argv
        if argv[0] == "cd":
            self.folder = (self.folder / argv[1]).resolve()
            return 0, []
        if argv[0] == "fleetgen":
            target = argv[-1] if len(argv) > 2 and argv[-2] == ">" else None
            before = Path.cwd()
            os.chdir(self.folder)
            try:
                result = CliRunner().invoke(cli, argv[1:-2] if target else argv[1:], env=self.env, prog_name="fleetgen")
            finally:
                os.chdir(before)
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                raise result.exception
            if target is not None:
                (self.folder / target).write_text(result.stdout, encoding="utf-8")
                return result.exit_code, normalise(result.stderr, self.folder)
            return result.exit_code, normalise(result.output, self.folder)
        done = subprocess.run(argv, cwd=self.folder, env={**os.environ, **self.env}, capture_output=True, text=True, check=False)
        return done.returncode, normalise(done.stdout + done.stderr, self.folder)

    def edit(self, edit: Edit) -> None:
        path = self.folder / edit.file
        lines = path.read_text(encoding="utf-8").splitlines()
        if edit.anchor not in lines:
            raise AssertionError(f"line {edit.at}: {edit.file} has no line {edit.anchor!r} to {edit.how}")
        k = lines.index(edit.anchor)
        lines[k : k + 1] = [*([edit.anchor] if edit.how == "add after" else []), *edit.lines]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

"""The command-line reference page, written from the click commands themselves (`fleetgen docs`).

Each command gets its usage line, its help, its example (the epilog `--help` prints, which the tests
run) and a table of its options, so no flag exists that the page does not list.
"""

from __future__ import annotations

import click

CLI_REFERENCE_PATH = "docs/reference/cli.md"

INTRO = """\
# Command line

Written by `fleetgen docs` from fleetgen's commands; a test fails while it is stale. `fleetgen COMMAND
--help` prints the same.

Every command exits 0 when all is fine, 1 on findings (an invalid fleet, a stale tree, a diff, drift, a
refused upgrade target or wave) and 2 on usage or I/O trouble (a bad option, an unreadable file, a file
in the way, a revision that does not render). Findings print as text, as JSON (`--format json`, a
versioned shape: `schemas/output/`) or as GitHub annotations (`--format github`). Text lists the first
three findings of one kind, then how many more there are; `--all` lists every one. `--debug` shows
tracebacks; without it every error is one line.

Shell completion: `eval "$(_FLEETGEN_COMPLETE=bash_source fleetgen)"` (zsh: `zsh_source`, fish: `fish_source`).
"""


def cli_reference_markdown(root: click.Group) -> str:
    sections = [INTRO]
    for path, command, ctx in _commands(root, click.Context(root, info_name="fleetgen", **root.context_settings)):
        sections.append(_section(path, command, ctx))
    return "\n".join(sections)


def _commands(group: click.Group, ctx: click.Context) -> list[tuple[str, click.Command, click.Context]]:
    """Every command under `group` with its context, each a child of its group's (as `--help` sees it: -h too)."""
    found: list[tuple[str, click.Command, click.Context]] = [(ctx.command_path, group, ctx)]
    for name in sorted(group.commands):
        command = group.commands[name]
        child = click.Context(command, info_name=name, parent=ctx, **command.context_settings)
        found += _commands(command, child) if isinstance(command, click.Group) else [(child.command_path, command, child)]
    return found


def _section(path: str, command: click.Command, ctx: click.Context) -> str:
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [f"## `{path}`\n", f"```text\n{path} {usage}\n```\n", _prose(command.help or ""), ""]
    if command.epilog:
        lines += [_prose(command.epilog), ""]
    options = [p for p in command.get_params(ctx) if isinstance(p, click.Option) and not p.hidden]
    if options:
        lines += ["| option | meaning |", "|---|---|"]
        for option in options:
            record = option.get_help_record(ctx)
            if record is not None:
                names, text = record
                lines.append(f"| `{_cell(names)}` | {_cell(text)} |")
        lines.append("")
    if isinstance(command, click.Group):
        lines.append("Commands: " + ", ".join(f"`{path} {name}`" for name in sorted(command.commands)) + ".\n")
    return "\n".join(lines)


def _prose(text: str) -> str:
    """Help text as Markdown: click's paragraphs kept, its `\\b` markers dropped, an example as code."""
    paragraphs = [" ".join(p.replace("\b", "").split()) for p in text.split("\n\n")]
    out = []
    for paragraph in paragraphs:
        if paragraph.startswith("Example: "):
            out.append(f"Example: `{paragraph.removeprefix('Example: ')}`")
        elif paragraph:
            out.append(paragraph)
    return "\n\n".join(out)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def generated_pages() -> dict[str, str]:
    """Every page of the documentation that fleetgen writes: path (from the repository's root) -> text."""
    from fleetgen.cli import cli
    from fleetgen.cli.findings_doc import FINDINGS_REFERENCE_PATH, findings_reference_markdown
    from fleetgen.compat.reference_doc import COMPAT_REFERENCE_PATH, compat_reference_markdown
    from fleetgen.model.reference_doc import reference_markdown
    from fleetgen.output.generated_paths import REFERENCE_PATH

    return {
        REFERENCE_PATH: reference_markdown(),
        CLI_REFERENCE_PATH: cli_reference_markdown(cli),
        COMPAT_REFERENCE_PATH: compat_reference_markdown(),
        FINDINGS_REFERENCE_PATH: findings_reference_markdown(),
    }

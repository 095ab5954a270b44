"""The command line: click commands that parse options, call one workflow and print its result.

One module per command group: `fleet` (validate, render, check, schema, docs, report, init),
`doctor`, `explain`, `review` (diff, drift), `team`, `upgrade`, `adopt` (import), `job` (golden paths) and `forecast`. `common`
holds the console and the one map from errors to exit codes.

Start-up is every command's cost, paid again on each Tab of shell completion and each pre-commit run:
these modules import click and little else, and each command imports its workflow and the stages it
uses inside its body. tests/test_import_budget.py fails when start-up pulls in more.
"""

from __future__ import annotations

import click

from fleetgen import __version__
from fleetgen.cli import adopt, doctor, explain, fleet, forecast, job, process, review, team, upgrade
from fleetgen.cli.common import Console
from fleetgen.errors import EXIT_OK, EXIT_TROUBLE


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Example: fleetgen validate fleet.yaml && fleetgen render fleet.yaml\n\n"
    "Exit codes: 0 fine, 1 findings (invalid fleet, stale tree, diff or drift), 2 usage or I/O trouble.",
)
@click.version_option(__version__, prog_name="fleetgen")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """fleetgen: one typed fleet.yaml in, validated kustomize trees for a GPU fleet out."""
    ctx.obj = {"debug": debug, "console": Console()}


for group in (fleet, doctor, explain, review, team, upgrade, adopt, job, forecast):
    for command in group.COMMANDS:
        cli.add_command(command)


def main() -> None:
    process.start()
    try:
        cli(prog_name="fleetgen")
    except KeyboardInterrupt:
        click.echo("fleetgen: interrupted", err=True)
        process.finish(EXIT_TROUBLE)
    except SystemExit as done:  # click ends every command so, in standalone mode
        process.finish(done.code)
    process.finish(EXIT_OK)

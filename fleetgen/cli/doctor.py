"""`doctor`: the GitHub settings a fleet repository's files assume, and the files' own gaps."""

from __future__ import annotations

from pathlib import Path

import click

from fleetgen.cli.common import console, reports_errors
from fleetgen.errors import DifferencesFound


@click.command("doctor", epilog="Example: fleetgen doctor my-fleet   (exit 1 when the files leave the gate open)")
@click.argument("folder", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--fleet", default="fleet.yaml", show_default=True, help="The fleet file, as a path from FOLDER.")
@reports_errors
def doctor(folder: Path, fleet: str) -> None:
    """Say which branch protection, environments and code owners the repository in FOLDER relies on, and check its
    workflow and CODEOWNERS against fleet.yaml."""
    from fleetgen import workflows
    from fleetgen.authoring.doctor import report_lines

    found = workflows.examine_repository(folder, fleet)
    console().out("\n".join(report_lines(found)))
    if found.problems:
        raise DifferencesFound(f"{len(found.problems)} problem(s): the gate is not binding until they are fixed")


COMMANDS = [doctor]

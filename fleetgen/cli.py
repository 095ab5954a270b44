"""The command line: thin click commands over the library; the one place errors become exit codes."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from fleetgen import __version__
from fleetgen.crdschema import read_crds
from fleetgen.errors import EXIT_TROUBLE, Finding, FindingsError, FleetgenError, InputError, Severity
from fleetgen.load import LoadedFleet, load_fleet
from fleetgen.render import render_files
from fleetgen.report import FORMATS, format_findings, summary
from fleetgen.schema import SCHEMA_PATH, fleet_json_schema
from fleetgen.tree import Tree
from fleetgen.validate import Schemas, check_loaded

F = TypeVar("F", bound=Callable[..., Any])

fleet_argument = click.argument("fleet", default="fleet.yaml", type=click.Path(dir_okay=False, path_type=Path))
format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="How findings are printed."
)


def checking_options(command: F) -> F:
    """--crd, --strict and --fail-on: how rendered objects are checked before anything is trusted."""
    options = [
        click.option(
            "--crd",
            "crds",
            multiple=True,
            type=click.Path(exists=True, path_type=Path),
            help="CRD manifest file or folder (e.g. `kubectl get crd NAME -o yaml`); its schemas win over the shipped ones.",
        ),
        click.option("--strict", is_flag=True, help="A kind with no schema is an error, not a warning."),
        click.option(
            "--fail-on",
            type=click.Choice(["error", "warning"]),
            default="error",
            show_default=True,
            help="Exit 1 on warnings too.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def checked(fleet: Path, crds: tuple[Path, ...], strict: bool, fail_on: str) -> tuple[LoadedFleet, list[Finding]]:
    """Load FLEET and validate it and everything it renders; raises FindingsError when it fails."""
    loaded = load_fleet(fleet)
    try:
        user_crds = read_crds(crds)
    except (OSError, ValueError) as exc:
        raise InputError(f"--crd: cannot read CRDs: {exc}") from None
    findings = check_loaded(loaded, Schemas(user_crds), strict=strict, fail_on=Severity(fail_on))
    return loaded, findings


def reports_errors(command: F) -> F:
    """Print fleetgen's own errors without a traceback (unless --debug) and exit with their code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        fmt = kwargs.get("fmt", "text")
        try:
            return command(*args, **kwargs)
        except FindingsError as exc:
            if ctx.obj["debug"]:
                raise
            click.echo(format_findings(exc.findings, fmt), err=fmt == "text")
            if fmt == "text":
                click.echo(summary(exc.findings), err=True)
            ctx.exit(exc.exit_code)
        except FleetgenError as exc:
            if ctx.obj["debug"]:
                raise
            click.echo(f"fleetgen: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except Exception as exc:  # a bug: still one line, and the way to see more
            if ctx.obj["debug"]:
                raise
            click.echo(f"fleetgen: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)", err=True)
            ctx.exit(EXIT_TROUBLE)

    return wrapper  # type: ignore[return-value]


@click.group(
    epilog="Example: fleetgen validate fleet.yaml && fleetgen render fleet.yaml\n\n"
    "Exit codes: 0 fine, 1 findings (invalid fleet, stale tree, diff or drift), 2 usage or I/O trouble."
)
@click.version_option(__version__, prog_name="fleetgen")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """fleetgen: one typed fleet.yaml in, validated kustomize trees for a GPU fleet out."""
    ctx.obj = {"debug": debug}


@cli.command(epilog="Example: fleetgen validate fleet.yaml --format github --crd crds/")
@fleet_argument
@format_option
@checking_options
@reports_errors
def validate(fleet: Path, fmt: str, crds: tuple[Path, ...], strict: bool, fail_on: str) -> None:
    """Check FLEET (default: fleet.yaml) and every object it renders; report each problem with its line."""
    loaded, findings = checked(fleet, crds, strict, fail_on)
    _report(findings, fmt)
    if fmt == "text":
        model = loaded.fleet
        click.echo(f"{fleet}: valid ({len(model.clusters)} clusters, {len(model.teams)} teams; {summary(findings)})")


@cli.command(epilog="Example: fleetgen render fleet.yaml --out .")
@fleet_argument
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder that receives base/ and clusters/ (default: the folder of FLEET).",
)
@format_option
@checking_options
@reports_errors
def render(fleet: Path, out: Path | None, fmt: str, crds: tuple[Path, ...], strict: bool, fail_on: str) -> None:
    """Write the kustomize tree of FLEET: base/ and clusters/<name>/, only the files that change.

    Nothing is written unless FLEET and every object it renders are valid."""
    loaded, findings = checked(fleet, crds, strict, fail_on)
    _report(findings, fmt)
    root = out if out is not None else fleet.parent
    files = render_files(loaded.fleet, fleet.name)
    changes = Tree(root).write(files)
    unchanged = len(files) - len(changes.written)
    click.echo(f"{root}: {len(changes.written)} written, {len(changes.removed)} removed, {unchanged} unchanged", err=True)


@cli.command(epilog="Example: fleetgen schema --out schemas/fleet.schema.json")
@click.option("--out", default=SCHEMA_PATH, show_default=True, help="Where to write the schema ('-' for standard output).")
@reports_errors
def schema(out: str) -> None:
    """Write the JSON Schema of fleet.yaml, for editors (yaml-language-server) and CI."""
    text = fleet_json_schema()
    if out == "-":
        click.echo(text, nl=False)
        return
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{out}: cannot write: {exc.strerror}") from None
    click.echo(f"{out}: written", err=True)


def _report(findings: list[Finding], fmt: str) -> None:
    if findings:
        click.echo(format_findings(findings, fmt), err=fmt == "text")


def main() -> None:
    try:
        cli(prog_name="fleetgen")
    except KeyboardInterrupt:
        click.echo("fleetgen: interrupted", err=True)
        sys.exit(EXIT_TROUBLE)


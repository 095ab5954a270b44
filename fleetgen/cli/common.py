"""What every command shares: the console (progress, output), common options, and the error map.

This is the one place errors become exit codes: FindingsError and DifferencesFound exit 1, every
other FleetgenError exits 2, and a bug is one line (a traceback only with --debug).
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from fleetgen.errors import EXIT_TROUBLE, DifferencesFound, Finding, FindingsError, FleetgenError, Severity
from fleetgen.output.findings import FORMATS, format_findings, summary

if TYPE_CHECKING:
    from fleetgen.workflows import CheckOptions

F = TypeVar("F", bound=Callable[..., Any])

fleet_argument = click.argument("fleet", default="fleet.yaml", type=click.Path(dir_okay=False, path_type=Path))
fleet_option = click.option(
    "--fleet", default="fleet.yaml", show_default=True, type=click.Path(dir_okay=False, path_type=Path), help="The fleet file to edit."
)


def findings_format_option(command: F) -> F:
    """--format and --all: how findings are printed, and whether text lists every repeat."""
    command = click.option("--all", "all_findings", is_flag=True, help="List every finding; text otherwise counts repeats.")(command)
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="How findings are printed.")(
        command
    )


class Console:
    """Progress on a terminal only (CI logs and pipes stay clean), cleared before anything else is printed.

    With TERM=dumb or NO_COLOR set, the line is redrawn with a carriage return and spaces, never
    with escape codes."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty() and not os.environ.get("CI")
        self.plain = os.environ.get("TERM") == "dumb" or "NO_COLOR" in os.environ
        self.started = time.monotonic()
        self._shown = 0

    def stage(self, text: str) -> None:
        if not self.enabled:
            return
        line = f"{text} ({time.monotonic() - self.started:.1f}s)"
        self.clear()
        click.echo(line, err=True, nl=False)
        self._shown = len(line)

    def clear(self) -> None:
        if self._shown:
            click.echo(f"\r{' ' * self._shown}\r" if self.plain else "\r\x1b[K", err=True, nl=False)
            self._shown = 0

    def out(self, text: str, *, nl: bool = True) -> None:
        """A result, on standard output."""
        self.clear()
        click.echo(text, nl=nl)

    def err(self, text: str) -> None:
        """A message, on standard error."""
        self.clear()
        click.echo(text, err=True)

    def findings(self, findings: list[Finding], fmt: str, *, every: bool = False) -> None:
        """Findings as asked (text counts repeats unless `every`); text goes to standard error, machine formats to standard output."""
        if not findings:
            return
        self.clear()
        click.echo(format_findings(findings, fmt, every=every), err=fmt == "text")


def console() -> Console:
    obj = click.get_current_context().obj
    return obj["console"]  # type: ignore[no-any-return]


def cluster_dumps_option(purpose: str) -> Callable[[F], F]:
    """`--live CLUSTER=PATH`, repeatable: a cluster's `kubectl get ... -o yaml` dump, for `purpose`."""
    return click.option("--live", "live", multiple=True, metavar="CLUSTER=PATH", help=f"Live dump of a cluster, {purpose}.")


def cluster_contexts_option(purpose: str) -> Callable[[F], F]:
    """`--context CLUSTER=CONTEXT`, repeatable: read a cluster's evidence through kubectl and this kubeconfig context."""
    return click.option(
        "--context", "contexts", multiple=True, metavar="CLUSTER=CONTEXT", help=f"Read a cluster through kubectl instead, {purpose}."
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


def check_options(crds: tuple[Path, ...], strict: bool, fail_on: str) -> CheckOptions:
    from fleetgen.workflows import CheckOptions

    return CheckOptions(crds, strict, Severity(fail_on))


def reports_errors(command: F) -> F:
    """Print fleetgen's own errors without a traceback (unless --debug) and exit with their code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        fmt = kwargs.get("fmt", "text")
        shell = console()
        try:
            return command(*args, **kwargs)
        except FindingsError as exc:
            if ctx.obj["debug"]:
                raise
            shell.findings(exc.findings, fmt if fmt in FORMATS else "text", every=bool(kwargs.get("all_findings")))
            if fmt == "text":
                shell.err(summary(exc.findings))
            ctx.exit(exc.exit_code)
        except DifferencesFound as exc:
            if str(exc):
                shell.err(str(exc))
            ctx.exit(exc.exit_code)
        except FleetgenError as exc:
            if ctx.obj["debug"]:
                raise
            shell.err(f"fleetgen: {exc}")
            ctx.exit(exc.exit_code)
        except Exception as exc:  # a bug: still one line, and the way to see more
            if ctx.obj["debug"]:
                raise
            shell.err(f"fleetgen: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)")
            ctx.exit(EXIT_TROUBLE)
        finally:
            shell.clear()

    return wrapper  # type: ignore[return-value]

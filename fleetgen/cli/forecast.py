"""`fleetgen forecast`: when each cluster, node pool and team quota runs out of GPUs."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fleetgen.cli.common import console, fleet_argument, reports_errors
from fleetgen.errors import DifferencesFound, InputError

if TYPE_CHECKING:
    from fleetgen.forecast.build import Answer, Forecast
    from fleetgen.model import Fleet


def _split(value: str, clusters: set[str]) -> tuple[str | None, str]:
    """`CLUSTER=WHERE` when the part before `=` names a cluster of the fleet, else the whole value."""
    name, sep, rest = value.partition("=")
    return (name, rest) if sep and name in clusters else (None, value)


def _answers(stack: ExitStack, fleet: Fleet, history: tuple[str, ...], servers: tuple[str, ...], days: int) -> Iterator[Answer]:
    """Each answer opened only when the one before it has been read: one open stream at a time."""
    from fleetgen.forecast.build import Answer
    from fleetgen.live.prometheus import QUERIES, range_answer

    clusters = {c.name for c in fleet.clusters}
    for value in history:
        cluster, where = _split(value, clusters)
        if where == "-":
            yield Answer("<stdin>", sys.stdin, cluster)
            continue
        try:
            stream = stack.enter_context(open(where, encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"{where}: cannot read: {exc.strerror}") from None
        yield Answer(where, stream, cluster)
    end = int(time.time()) // 3600 * 3600  # the live path asks for the window up to the last whole hour
    for value in servers:
        cluster, base = _split(value, clusters)
        for query in QUERIES:
            yield Answer(base, stack.enter_context(range_answer(base, query, end - days * 86400, end)), cluster)


@click.command(
    "forecast",
    epilog="Example: fleetgen forecast --history gpu-history.json --format html > forecast.html\n\n"
    "Exit 1 when a cluster, pool or team quota may run out inside the lead time (capacity.leadTimeWeeks).",
)
@fleet_argument
@click.option(
    "--history",
    multiple=True,
    metavar="[CLUSTER=]FILE",
    help="A Prometheus range-query answer (JSON; '-' for standard input); CLUSTER= for series without a cluster label.",
)
@click.option(
    "--prometheus", "servers", multiple=True, metavar="[CLUSTER=]URL", help="Ask a Prometheus for the history instead (read only)."
)
@click.option("--days", default=90, show_default=True, type=click.IntRange(7, 730), help="How much history to ask --prometheus for.")
@click.option(
    "--lookback-weeks", default=13, show_default=True, type=click.IntRange(3, 104), help="Whole weeks of history the trend is fitted on."
)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@reports_errors
def forecast(fleet: Path, history: tuple[str, ...], servers: tuple[str, ...], days: int, lookback_weeks: int, fmt: str) -> None:
    """When each cluster, node pool and team GPU quota of FLEET runs out, from the weekly trend of GPUs in use."""
    from fleetgen.checks.load import load_model
    from fleetgen.forecast.build import build_forecast
    from fleetgen.forecast.chart import forecast_html
    from fleetgen.forecast.output import forecast_json, forecast_text

    if not history and not servers:
        raise InputError("forecast needs --history FILE or --prometheus URL")
    model = load_model(fleet)
    shell = console()
    with ExitStack() as stack:
        shell.stage("reading history")
        result = build_forecast(model, _answers(stack, model, history, servers, days), lookback_weeks)
    shell.out({"json": forecast_json, "html": forecast_html}.get(fmt, forecast_text)(result), nl=fmt == "json")
    _flag(result)


def _flag(result: Forecast) -> None:
    flagged = result.flagged
    if flagged:
        raise DifferencesFound(f"{len(flagged)} of {len(result.rows)} may run out inside the lead time ({result.lead_time_weeks} weeks)")


COMMANDS = [forecast]

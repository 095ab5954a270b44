"""`fleetgen upgrade plan|apply|status`: canary upgrades of the fleet's version sets."""

from __future__ import annotations

import datetime
from pathlib import Path

import click

from fleetgen import workflows
from fleetgen.cli.common import console, fleet_argument, reports_errors
from fleetgen.errors import InputError
from fleetgen.load import load_fleet
from fleetgen.model import COMPONENTS, Fleet, Version
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.plan import plan_upgrade, versions_of
from fleetgen.upgrade.report import plan_json, plan_markdown, plan_text, status_text
from fleetgen.upgrade.status import upgrade_status


def _utc(text: str | None, option: str) -> datetime.datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{option} {text!r}: expected a date and time such as 2026-11-24T09:00Z") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def _requested(fleet: Fleet, sets: tuple[str, ...], to: str | None) -> dict[str, Version]:
    if sets and to:
        raise InputError("give --set or --to, not both")
    if to is not None:
        if to not in fleet.version_sets:
            raise InputError(f"--to {to}: no such version set (known: {', '.join(fleet.version_sets)})")
        return versions_of(fleet.version_sets[to])
    out: dict[str, Version] = {}
    for item in sets:
        component, sep, version = item.partition("=")
        if not sep or component not in COMPONENTS:
            raise InputError(f"--set {item!r}: expected COMPONENT=VERSION with COMPONENT one of {', '.join(COMPONENTS)}")
        try:
            out[component] = Version.parse(version)
        except ValueError as exc:
            raise InputError(f"--set {item!r}: {exc}") from None
    return out


set_option = click.option(
    "--set", "sets", multiple=True, metavar="COMPONENT=VERSION", help="A target version, e.g. driver=560.35.03 (repeat for more)."
)
to_option = click.option("--to", default=None, metavar="VERSION_SET", help="Move every cluster to the versions of this version set.")


@click.group()
def upgrade() -> None:
    """Canary upgrades of drivers, CUDA, cuDNN, containerd and Kubernetes across the fleet."""


@upgrade.command("plan", epilog="Example: fleetgen upgrade plan --set driver=560.35.03 --start 2026-11-24T09:00Z")
@fleet_argument
@set_option
@to_option
@click.option("--start", default=None, help="When the first wave may start (UTC); gives every wave a date and the plan an ETA.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@reports_errors
def upgrade_plan(fleet: Path, sets: tuple[str, ...], to: str | None, start: str | None, fmt: str) -> None:
    """Plan the waves that move the fleet to the target versions; refuse targets the rules reject."""
    model = load_fleet(fleet).fleet
    requested = _requested(model, sets, to)
    if not requested:
        raise InputError("say what to upgrade to: --set COMPONENT=VERSION or --to VERSION_SET")
    result = plan_upgrade(model, requested, _utc(start, "--start"))
    console().out({"json": plan_json, "markdown": plan_markdown}.get(fmt, plan_text)(result), nl=fmt != "markdown")


@upgrade.command("apply", epilog="Example: fleetgen upgrade apply --wave 1 --set driver=560.35.03")
@fleet_argument
@click.option("--wave", "number", type=int, required=True, help="The wave to write into fleet.yaml.")
@set_option
@to_option
@click.option("--at", default=None, help="When the wave is applied (UTC; default now); status counts its soak from here.")
@click.option("--no-render", is_flag=True, help="Only rewrite fleet.yaml; do not render the tree.")
@reports_errors
def upgrade_apply(fleet: Path, number: int, sets: tuple[str, ...], to: str | None, at: str | None, no_render: bool) -> None:
    """Rewrite FLEET for one wave, keeping its comments and layout, then render the tree."""
    loaded = load_fleet(fleet)
    requested = _requested(loaded.fleet, sets, to) or None
    moment = _utc(at, "--at") or workflows.utc_now()
    console().err(workflows.write_validated(fleet, apply_wave(loaded, number, requested, moment), render=not no_render))


@upgrade.command("status", epilog="Example: fleetgen upgrade status")
@fleet_argument
@click.option("--now", default=None, help="The time to judge soaks by (UTC; default now).")
@reports_errors
def upgrade_status_command(fleet: Path, now: str | None) -> None:
    """Which wave the fleet is in, which clusters are behind, and when the current soak ends."""
    moment = _utc(now, "--now") or workflows.utc_now()
    console().out(status_text(upgrade_status(load_fleet(fleet).fleet, moment), moment))


COMMANDS = [upgrade]

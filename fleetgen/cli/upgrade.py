"""`fleetgen upgrade plan|apply|status`: canary upgrades of the fleet's version sets."""

from __future__ import annotations

from pathlib import Path

import click

from fleetgen.cli.common import cluster_contexts_option, cluster_dumps_option, console, fleet_argument, reports_errors
from fleetgen.errors import InputError

set_option = click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="COMPONENT=VERSION",
    help="A target version, e.g. driver=560.35.03 (repeat for more); nodeImage=IMAGE where node images carry the driver.",
)
to_option = click.option("--to", default=None, metavar="VERSION_SET", help="Move every cluster to the versions of this version set.")
downgrade_option = click.option(
    "--allow-downgrade",
    is_flag=True,
    help="Plan a target below a cluster's current version, a Kubernetes patch included (refused otherwise; never a Kubernetes minor).",
)


@click.group()
def upgrade() -> None:
    """Canary upgrades of drivers, CUDA, cuDNN, containerd and Kubernetes across the fleet."""


@upgrade.command("plan", epilog="Example: fleetgen upgrade plan --set driver=560.35.03 --start 2026-11-24T09:00Z")
@fleet_argument
@set_option
@to_option
@click.option("--start", default=None, help="When the first wave may start (UTC); gives every wave a date and the plan an ETA.")
@downgrade_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@reports_errors
def upgrade_plan(fleet: Path, sets: tuple[str, ...], to: str | None, start: str | None, allow_downgrade: bool, fmt: str) -> None:
    """Plan the waves that move the fleet to the target versions; refuse targets the rules reject."""
    from fleetgen.checks.load import load_fleet
    from fleetgen.upgrade.arguments import parse_moment, requested_image, requested_versions
    from fleetgen.upgrade.output import plan_json, plan_markdown, plan_text
    from fleetgen.upgrade.plan import plan_upgrade

    loaded = load_fleet(fleet)
    requested = requested_versions(loaded.fleet, sets, to)
    if not requested:
        raise InputError("say what to upgrade to: --set COMPONENT=VERSION or --to VERSION_SET")
    moment = parse_moment(start, "--start")
    image = requested_image(sets)
    result = plan_upgrade(loaded.fleet, requested, moment, loaded.facts, allow_downgrade=allow_downgrade, node_image=image)
    console().out({"json": plan_json, "markdown": plan_markdown}.get(fmt, plan_text)(result), nl=fmt != "markdown")


@upgrade.command("apply", epilog="Example: fleetgen upgrade apply --wave 1 --set driver=560.35.03")
@fleet_argument
@click.option("--wave", "number", type=int, required=True, help="The wave to write into fleet.yaml.")
@set_option
@to_option
@click.option(
    "--at", default=None, help="When the wave is applied (UTC; default now; never later than now); status counts its soak from here."
)
@click.option("--no-render", is_flag=True, help="Only rewrite fleet.yaml; do not render the tree.")
@downgrade_option
@cluster_dumps_option("the previous wave's clusters: their Nodes (kubectl get nodes -o yaml), the evidence it is done")
@cluster_contexts_option("for the previous wave's clusters")
@click.option(
    "--override-soak",
    default=None,
    metavar="REASON",
    help="Start this wave before the previous wave is done on its nodes and soaked; the reason is recorded in fleet.yaml.",
)
@reports_errors
def upgrade_apply(
    fleet: Path,
    number: int,
    sets: tuple[str, ...],
    to: str | None,
    at: str | None,
    no_render: bool,
    allow_downgrade: bool,
    live: tuple[str, ...],
    contexts: tuple[str, ...],
    override_soak: str | None,
) -> None:
    """Rewrite FLEET for one wave, keeping its comments and layout, then render the tree.

    Refused until the previous wave is done on its nodes (--live or --context) and has soaked since it was
    verified, outside rollout windows and inside freezes."""
    from fleetgen import workflows
    from fleetgen.checks.load import load_fleet
    from fleetgen.upgrade.apply import apply_wave
    from fleetgen.upgrade.arguments import override_reason, recorded_moment, requested_image, requested_versions
    from fleetgen.upgrade.moments import utc_now
    from fleetgen.workflows import live_state

    loaded = load_fleet(fleet)
    requested = requested_versions(loaded.fleet, sets, to) or None
    moment = recorded_moment(at, "--at", utc_now())
    reason = override_reason(override_soak)
    evidence = live_state.cluster_evidence(live, contexts) if number > 1 and reason is None else {}
    edited = apply_wave(
        loaded, number, requested, moment, reason, allow_downgrade=allow_downgrade, evidence=evidence, node_image=requested_image(sets)
    )
    console().err(workflows.write_validated(fleet, edited, render=not no_render))


@upgrade.command("verify", epilog="Example: fleetgen upgrade verify --wave 1 --live dev-eastus=dev-nodes.yaml")
@fleet_argument
@click.option("--wave", "number", type=int, required=True, help="The applied wave whose clusters' nodes to check.")
@cluster_dumps_option("for each of the wave's clusters: its Nodes (kubectl get nodes,configmaps -A -o yaml)")
@cluster_contexts_option("for each of the wave's clusters")
@click.option(
    "--at", default=None, help="When the nodes were seen done (UTC; default now; never later than now); the wave's soak starts here."
)
@reports_errors
def upgrade_verify(fleet: Path, number: int, live: tuple[str, ...], contexts: tuple[str, ...], at: str | None) -> None:
    """Record in FLEET that a wave is done: every GPU node of its clusters runs its versions. Its soak starts then."""
    from fleetgen import workflows
    from fleetgen.checks.load import load_fleet
    from fleetgen.checks.record_times import CLOCK_SKEW
    from fleetgen.upgrade.arguments import recorded_moment
    from fleetgen.upgrade.moments import utc_now
    from fleetgen.upgrade.verify import verify_wave
    from fleetgen.workflows import live_state

    loaded = load_fleet(fleet)
    now = utc_now()
    moment = recorded_moment(at, "--at", now)
    if contexts and moment < now - CLOCK_SKEW:  # the nodes are read now: an earlier time would shorten the soak
        raise InputError("--at: with --context the nodes are seen now; --at names when a --live dump was taken")
    edited, soak = verify_wave(loaded, number, live_state.cluster_evidence(live, contexts), moment)
    console().err(workflows.write_validated(fleet, edited, render=False))
    console().out(soak)


@upgrade.command("status", epilog="Example: fleetgen upgrade status")
@fleet_argument
@click.option("--now", default=None, help="The time to judge soaks by (UTC; default now).")
@cluster_dumps_option("with its Nodes and fleet-versions ConfigMap, to show what it runs")
@cluster_contexts_option("to show what it runs")
@reports_errors
def upgrade_status_command(fleet: Path, now: str | None, live: tuple[str, ...], contexts: tuple[str, ...]) -> None:
    """Which wave the fleet is in, which clusters are behind, what their nodes run, and when the current soak ends."""
    from fleetgen.checks.load import load_fleet
    from fleetgen.upgrade.arguments import parse_moment
    from fleetgen.upgrade.moments import utc_now
    from fleetgen.upgrade.output import status_text
    from fleetgen.upgrade.status import live_nodes, live_versions, upgrade_status
    from fleetgen.workflows import live_state

    moment = parse_moment(now, "--now") or utc_now()
    loaded = load_fleet(fleet)
    evidence = live_state.cluster_evidence(live, contexts)
    states = live_versions(loaded.fleet, evidence)
    nodes = live_nodes(loaded.fleet, evidence, loaded.facts, moment)
    console().out(status_text(upgrade_status(loaded.fleet, moment), moment, states, nodes))


COMMANDS = [upgrade]

"""`explain`: where each field of a rendered object comes from in fleet.yaml."""

from __future__ import annotations

from pathlib import Path

import click

from fleetgen.cli.common import console, reports_errors


@click.command(epilog="Example: fleetgen explain training-eastus ResourceQuota/team-nlp/gpu-quota --field spec.hard")
@click.argument("cluster")
@click.argument("object_ref", metavar="KIND/[NAMESPACE/]NAME")
@click.option("--fleet", default="fleet.yaml", show_default=True, type=click.Path(dir_okay=False, path_type=Path), help="The fleet file.")
@click.option("--field", "field_path", default=None, metavar="PATH", help="Only this field and what is below it, e.g. spec.hard.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@reports_errors
def explain(cluster: str, object_ref: str, fleet: Path, field_path: str | None, fmt: str) -> None:
    """Each field of object KIND/[NAMESPACE/]NAME as CLUSTER gets it, with the fleet.yaml line it comes from."""
    from fleetgen import workflows
    from fleetgen.report.explain import explain_json, explain_text

    result = workflows.explain(fleet, cluster, object_ref, field_path)
    show = explain_json if fmt == "json" else explain_text
    console().out(show(result.cluster, result.key, result.fields))


COMMANDS = [explain]

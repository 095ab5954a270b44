"""`fleetgen team add|remove`: onboard and offboard teams by editing fleet.yaml in place."""

from __future__ import annotations

from pathlib import Path

import click

from fleetgen.cli.common import console, findings_format_option, fleet_option, reports_errors
from fleetgen.errors import InputError


@click.group()
def team() -> None:
    """Onboard and offboard teams: edit fleet.yaml in place, validate, render."""


@team.command(
    "add",
    epilog="Example: fleetgen team add vision --group 7c1d... --cost-center cc-6100 --cluster dev-eastus --gpu 2 --cpu 16 --memory 64Gi "
    "--registry ghcr.io/contoso-vision --storage managed-csi-premium=500Gi --volume dev-eastus:checkpoints=200Gi",
)
@click.argument("name")
@fleet_option
@click.option("--group", required=True, help="Identity-provider group bound to the team's Role.")
@click.option("--cost-center", required=True, help="Cost centre label of the team's objects.")
@click.option("--project", default=None, help="Project label (default: the team name).")
@click.option("--cluster", "clusters", multiple=True, required=True, help="A cluster the team runs on (repeat for more).")
@click.option("--gpu", type=click.IntRange(min=0), required=True, help="GPU quota (requests.nvidia.com/gpu) on each cluster.")
@click.option("--cpu", default=None, help="CPU request quota, e.g. 32.")
@click.option("--memory", default=None, help="Memory request quota, e.g. 128Gi.")
@click.option("--pods", type=click.IntRange(min=0), default=None, help="Pod count quota.")
@click.option(
    "--queue", "queues", multiple=True, help="CLUSTER=QUEUE: the ClusterQueue the team feeds there (needed where a cluster has several)."
)
@click.option(
    "--registry",
    "registries",
    multiple=True,
    metavar="REGISTRY",
    help="A registry the team's images may come from besides the fleet's (repeat).",
)
@click.option(
    "--storage", "storage", multiple=True, metavar="CLASS=SIZE", help="Storage quota of one storage class, e.g. managed-csi=1Ti (repeat)."
)
@click.option(
    "--volume",
    "volumes",
    multiple=True,
    metavar="CLUSTER:NAME=SIZE[,storageClass=C][,accessMode=M][,mountPath=P]",
    help="A volume (PersistentVolumeClaim) the team gets on one of its clusters (repeat).",
)
@findings_format_option
@reports_errors
def team_add(
    name: str,
    fleet: Path,
    group: str,
    cost_center: str,
    project: str | None,
    clusters: tuple[str, ...],
    gpu: int,
    cpu: str | None,
    memory: str | None,
    pods: int | None,
    queues: tuple[str, ...],
    registries: tuple[str, ...],
    storage: tuple[str, ...],
    volumes: tuple[str, ...],
    fmt: str,
    all_findings: bool,
) -> None:
    """Add team NAME to fleet.yaml; refused, with the usual errors, when the fleet would be invalid."""
    from fleetgen import workflows
    from fleetgen.authoring.onboarding import NewTeam, add_team
    from fleetgen.checks.load import load_fleet

    loaded = load_fleet(fleet)
    chosen = []
    for pair in queues:
        cluster, _, queue = pair.partition("=")
        if not queue or cluster not in clusters:
            raise InputError(f"--queue {pair!r}: CLUSTER=QUEUE, for a cluster given with --cluster")
        chosen.append((cluster, queue))
    new = NewTeam(
        name,
        group,
        cost_center,
        clusters,
        gpu,
        project=project,
        cpu=cpu,
        memory=memory,
        pods=pods,
        queues=tuple(chosen),
        registries=registries,
        storage=tuple(_pair("--storage", text, "CLASS=SIZE") for text in storage),
        volumes=tuple(_volume(text, clusters) for text in volumes),
    )
    console().err(workflows.write_validated(fleet, add_team(loaded.source.text, loaded.fleet, new)))


def _pair(option: str, text: str, shape: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    if not key or not value:
        raise InputError(f"{option} {text!r}: {shape}")
    return key, value


VOLUME_FIELDS = ("storageClass", "accessMode", "mountPath")


def _volume(text: str, clusters: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """`CLUSTER:NAME=SIZE[,field=value...]` -> (cluster, the volume as fleet.yaml writes it); fleet.yaml's checks judge the values."""
    shape = f"CLUSTER:NAME=SIZE[,{'=...][,'.join(VOLUME_FIELDS)}=...], for a cluster given with --cluster"
    cluster, _, rest = text.partition(":")
    first, *extra = rest.split(",")
    name, size = _pair("--volume", first, shape) if cluster in clusters else ("", "")
    if not name:
        raise InputError(f"--volume {text!r}: {shape}")
    fields = {"name": name, "size": size}
    for item in extra:
        key, value = _pair("--volume", item, shape)
        if key not in VOLUME_FIELDS:
            raise InputError(f"--volume {text!r}: unknown field {key!r} (fields: {', '.join(VOLUME_FIELDS)})")
        fields[key] = value
    return cluster, fields


@team.command("remove", epilog="Example: fleetgen team remove vision")
@click.argument("name")
@fleet_option
@findings_format_option
@reports_errors
def team_remove(name: str, fleet: Path, fmt: str, all_findings: bool) -> None:
    """Remove team NAME from fleet.yaml and its files from the tree; its namespaces stay until retired (see "Offboard a team")."""
    from fleetgen import workflows
    from fleetgen.authoring.onboarding import removal_notes, remove_team
    from fleetgen.checks.load import load_fleet

    loaded = load_fleet(fleet)
    shell = console()
    shell.err(workflows.write_validated(fleet, remove_team(loaded.source.text, loaded.fleet, name)))
    for note in removal_notes(loaded.fleet, name):
        shell.err(note)


@team.command("devcontainer", epilog="Example: fleetgen team devcontainer nlp --cluster dev-eastus")
@click.argument("name")
@fleet_option
@click.option("--cluster", required=True, help="The cluster whose CUDA the container gets (the team must be on it).")
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The project folder; .devcontainer/devcontainer.json is written in it.",
)
@click.option("--force", is_flag=True, help="Replace a devcontainer.json that differs.")
@reports_errors
def team_devcontainer(name: str, fleet: Path, cluster: str, folder: Path, force: bool) -> None:
    """Write .devcontainer/devcontainer.json for team NAME: GPU passthrough, the CUDA image of the cluster's version set."""
    from fleetgen.authoring.devcontainer import PATH, devcontainer, devcontainer_text
    from fleetgen.checks.load import load_fleet

    document = devcontainer(load_fleet(fleet).fleet, name, cluster)
    target = folder / PATH
    data = devcontainer_text(document)
    try:
        if target.exists() and not force:
            try:
                existing: str | None = target.read_text(encoding="utf-8")
            except UnicodeDecodeError:  # not UTF-8 text: not the file fleetgen writes
                existing = None
            if existing != data:
                raise InputError(f"{target}: in the way (a different devcontainer.json); --force replaces it")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{target}: cannot write: {exc.strerror or exc}") from None
    console().err(f"{target}: {document['image']}, GPU passthrough")


COMMANDS = [team]

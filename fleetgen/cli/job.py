"""`fleetgen job new`: a Job (or inference Deployment) for a team on a cluster, built from fleet.yaml so the cluster admits it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fleetgen.cli.common import console, reports_errors
from fleetgen.errors import InputError

if TYPE_CHECKING:
    from fleetgen.jobs.serving import Serving
    from fleetgen.model import Fleet, Quantity

_DURATION = re.compile(r"(\d{1,5})([smh]?)")


@click.group()
def job() -> None:
    """Golden paths: workloads for data scientists, built from fleet.yaml."""


@job.command(
    "new",
    epilog="Example: fleetgen job new --team nlp --cluster training-eastus --name finetune-7b --image "
    "contosoai.azurecr.io/llm-trainer:v1 --gpus 4 --nodes 2 --command 'torchrun train.py'\n\n"
    "Exit codes: 0 written, 1 the ask is refused (the line says what is allowed), 2 usage or I/O trouble.",
)
@click.option("--fleet", default="fleet.yaml", show_default=True, type=click.Path(dir_okay=False, path_type=Path), help="The fleet file.")
@click.option("--team", required=True, help="The team that runs the job (its namespace, queue and quota).")
@click.option("--cluster", default=None, help="The cluster to run on; the team must be placed there.")
@click.option(
    "--fleet-wide",
    is_flag=True,
    help="Submit to the MultiKueue manager (fleet.yaml multiKueue): its queue sends the Job to a worker that admits it.",
)
@click.option("--name", required=True, help="Name of the Job or Deployment.")
@click.option("--image", required=True, help="Container image.")
@click.option(
    "--gpus",
    type=click.IntRange(min=0, max=64),
    default=None,
    help="GPUs (or slices) per pod: per node, or per replica; 0 for CPU-only pools.",
)
@click.option("--gpu-slice", default=None, help="Ask for slices instead of whole GPUs: mig-1g.10gb (MIG) or gpu.shared (time-sliced).")
@click.option("--cpu", default=None, help="CPU per pod, e.g. 8 or 500m; default: the pod's GPU share of a node after the system reserve.")
@click.option("--memory", default=None, help="Memory per pod, e.g. 64Gi; default: the pod's GPU share of a node after the system reserve.")
@click.option("--gpu-model", default=None, help="GPU model, e.g. A100; default: the first the team's queue hands out.")
@click.option(
    "--priority",
    default=None,
    help="Priority class; default: scheduling.defaultPriorityClasses of training or the SLO tier, as the team may use it.",
)
@click.option("--nodes", type=click.IntRange(min=1, max=1000), default=1, show_default=True, help="Nodes of a distributed training job.")
@click.option("--command", "command_line", default=None, help="Command of the container, as one shell-quoted string.")
@click.option("--kind", type=click.Choice(["training", "inference"]), default="training", show_default=True, help="A Job or a Deployment.")
@click.option("--endpoint", default=None, help="Inference: the team's endpoint (fleet.yaml) this serves; its tier labels it.")
@click.option("--tier", default=None, help="Inference: the SLO tier (fleet.yaml's slo tiers) of an endpoint not in fleet.yaml yet.")
@click.option("--load-time", default=None, help="Inference: how long the model takes to load, e.g. 90s, 10m (default 5m).")
@click.option("--replicas", type=click.IntRange(min=1, max=1000), default=None, help="Inference: replicas (default 2; 1 is warned about).")
@click.option("--port", type=click.IntRange(min=1, max=65535), default=None, help="Inference: the server's HTTP port (default 8080).")
@click.option("--health-path", default=None, help="Inference: the liveness and startup probes' HTTP path (default /health).")
@click.option("--ready-path", default=None, help="Inference: the readiness probe's HTTP path (default /ready).")
@click.option("--metrics-path", default=None, help="Inference: the path Prometheus scrapes (default /metrics).")
@click.option(
    "--volume",
    "volumes",
    multiple=True,
    help="Mount one of the team's volumes on the cluster (fleet.yaml), e.g. checkpoints; repeat for more.",
)
@click.option("--shm", default=None, help="Size of /dev/shm, e.g. 16Gi; counted in the pod's memory (default: a quarter of it).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write to this file instead of printing.")
@click.option("--force", is_flag=True, help="With --out: overwrite a file fleetgen did not write.")
@click.option(
    "--crd", "crds", multiple=True, type=click.Path(exists=True, path_type=Path), help="CRD manifest file or folder; its schemas win."
)
@reports_errors
def job_new(
    fleet: Path,
    team: str,
    cluster: str | None,
    fleet_wide: bool,
    name: str,
    image: str,
    gpus: int | None,
    gpu_slice: str | None,
    cpu: str | None,
    memory: str | None,
    gpu_model: str | None,
    priority: str | None,
    nodes: int,
    command_line: str | None,
    kind: str,
    endpoint: str | None,
    tier: str | None,
    load_time: str | None,
    replicas: int | None,
    port: int | None,
    health_path: str | None,
    ready_path: str | None,
    metrics_path: str | None,
    shm: str | None,
    volumes: tuple[str, ...],
    out: Path | None,
    force: bool,
    crds: tuple[Path, ...],
) -> None:
    """Print (or write with --out) a workload for TEAM on CLUSTER that the cluster admits.

    Training: a suspended Job in the team's Kueue LocalQueue (with Kueue's topology request where the
    pool declares a Topology); with --nodes > 1 an indexed Job and its headless Service, or a Volcano
    gang Job on a cluster that runs Volcano. Inference: a Deployment spread over nodes with the
    seed's probes (startupProbe.failureThreshold = ceil(load time / 10 s)), its Service, a
    ServiceMonitor whose series carry the labels the endpoint's SLO rules select, and a
    PodDisruptionBudget. Every pod runs restricted, with a memory-backed /dev/shm."""
    from fleetgen.checks.load import load_fleet
    from fleetgen.jobs.golden_paths import job_objects
    from fleetgen.jobs.job_target import Ask
    from fleetgen.output.emit import dump_documents
    from fleetgen.validation.crd_schemas import read_crds
    from fleetgen.validation.rendered_objects import Schemas

    if kind == "training" and endpoint is not None:
        raise InputError("--endpoint: only with --kind inference")
    if gpus is None and gpu_slice is None:
        raise InputError("--gpus: how many GPUs per pod (or --gpu-slice for part of one)")
    if gpus == 0 and gpu_slice is not None:
        raise InputError("--gpus 0: a CPU-only pod asks for no --gpu-slice")
    sizes = {"cpu": _quantity("--cpu", cpu), "memory": _quantity("--memory", memory)}
    count = 1 if gpus is None else gpus
    loaded = load_fleet(fleet)
    cluster = _cluster(loaded.fleet, cluster, fleet_wide)
    ask = Ask(
        team, cluster, name, image, count, nodes, gpu_model, priority, _command(command_line), **sizes, gpu_slice=gpu_slice, volumes=volumes
    )
    selector: dict[str, str] = {}
    if endpoint is not None:
        tier, selector = _endpoint_tier(loaded.fleet, team, cluster, endpoint, tier)
    paths = {"health_path": health_path, "ready_path": ready_path, "metrics_path": metrics_path}
    serving = _serving(kind, nodes, tier, list(loaded.fleet.slo.all_tiers), load_time, replicas, port, paths, selector)
    try:
        schemas = Schemas(read_crds(crds))
    except (OSError, ValueError) as exc:
        raise InputError(f"--crd: cannot read CRDs: {exc}") from None
    shm_size = _quantity("--shm", shm)
    built = job_objects(loaded.fleet, ask, schemas, serving, shm_size.value if shm_size else None)
    data = dump_documents(built.objects, fleet.name)
    shell = console()
    if out is None:
        shell.out(data.decode("utf-8"), nl=False)
        shell.err(built.summary)
    else:
        _write(out, data, force)
        shell.err(f"{out}: {built.summary}")
    for warning in built.warnings:
        shell.err(f"warning: {warning}")


def _serving(
    kind: str,
    nodes: int,
    tier: str | None,
    tiers: list[str],
    load_time: str | None,
    replicas: int | None,
    port: int | None,
    paths: dict[str, str | None],
    selector: dict[str, str],
) -> Serving | None:
    from fleetgen.jobs.serving import Serving

    if kind == "training":
        serving_only = [("--tier", tier), ("--load-time", load_time), ("--replicas", replicas), ("--port", port)]
        serving_only += [("--" + key.replace("_", "-"), value) for key, value in paths.items()]
        given = [flag for flag, value in serving_only if value is not None]
        if given:
            raise InputError(f"{', '.join(given)}: only with --kind inference")
        return None
    if nodes > 1:
        raise InputError("--nodes: only for training; inference scales with --replicas")
    if tier is None:
        raise InputError(f"--kind inference needs --endpoint (one of the team's in fleet.yaml) or --tier ({', '.join(tiers)})")
    if tier not in tiers:  # a fleet's own slo.tiers count, so this is checked here and not by click
        raise InputError(f"--tier {tier}: not a tier of fleet.yaml ({', '.join(tiers)})")
    given_paths = {key: _http_path("--" + key.replace("_", "-"), value) for key, value in paths.items() if value is not None}
    return Serving(tier, _seconds(load_time or "5m"), port or 8080, replicas or 2, selector=selector, **given_paths)


def _cluster(fleet: Fleet, cluster: str | None, fleet_wide: bool) -> str:
    """--cluster, or with --fleet-wide the MultiKueue manager (`--fleet` names the fleet file, hence the longer flag)."""
    if not fleet_wide:
        if cluster is None:
            raise InputError("--cluster: the cluster to run on (or --fleet-wide for the MultiKueue manager's queue)")
        return cluster
    if fleet.multi_kueue is None:
        raise InputError("--fleet-wide: the fleet has no multiKueue section; name a --cluster")
    if cluster is not None and cluster != fleet.multi_kueue.manager:
        raise InputError(f"--fleet-wide submits on the manager, {fleet.multi_kueue.manager}; leave out --cluster {cluster}")
    return fleet.multi_kueue.manager


def _http_path(flag: str, text: str) -> str:
    if not text.startswith("/") or any(ch.isspace() or not ch.isprintable() for ch in text):
        raise InputError(f"{flag} {text!r}: an HTTP path starting with '/', without spaces, such as /healthz")
    return text


def _endpoint_tier(fleet: Fleet, team_name: str, cluster: str, endpoint_name: str, tier: str | None) -> tuple[str, dict[str, str]]:
    """The SLO tier of the team's endpoint `endpoint_name` served on `cluster`, and the labels its SLO rules select."""
    team = next((t for t in fleet.teams if t.name == team_name), None)
    if team is None:
        return tier or "", {}  # the ask's own check names the unknown team
    endpoint = next((e for e in team.endpoints if e.name == endpoint_name), None)
    if endpoint is None:
        served = ", ".join(e.name for e in team.endpoints) or "none"
        raise InputError(f"--endpoint {endpoint_name}: team {team_name} serves no such endpoint (it serves: {served})")
    if cluster not in endpoint.clusters:
        raise InputError(f"--endpoint {endpoint_name}: served on {', '.join(endpoint.clusters)}, not on {cluster}")
    if tier is not None and tier != endpoint.tier:
        raise InputError(f"--tier {tier}: endpoint {endpoint_name} is {endpoint.tier} in fleet.yaml")
    return endpoint.tier, dict(endpoint.metrics.selector)


def _quantity(flag: str, text: str | None) -> Quantity | None:
    from fleetgen.model import Quantity

    if text is None:
        return None
    try:
        value = Quantity(text.strip())
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from None
    if value.value <= 0:
        raise InputError(f"{flag} {text!r}: more than zero, such as 8, 500m or 64Gi")
    return value


def _seconds(text: str) -> int:
    match = _DURATION.fullmatch(text.strip())
    seconds = int(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)] if match else 0
    if not 1 <= seconds <= 86400:
        raise InputError(f"--load-time {text!r}: a duration from 1s to 24h, such as 90s, 10m or 1h")
    return seconds


def _command(text: str | None) -> tuple[str, ...]:
    if text is None:
        return ()
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise InputError(f"--command {text!r}: {exc}") from None
    if not words:
        raise InputError("--command: empty")
    return words


def _write(path: Path, data: bytes, force: bool) -> None:
    """Atomically; never over a file fleetgen did not write, unless forced."""
    from fleetgen.output.tree import Tree, replace_file

    if path.is_dir():
        raise InputError(f"{path}: is a folder")
    try:
        current = path.read_bytes() if path.exists() else None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not Tree.owned(path.name, current, {}) and not force:  # the rule render keeps for its own tree
        raise InputError(f"{path}: exists and was not written by fleetgen; pass --force to overwrite it")
    replace_file(path, data)


COMMANDS = [job]

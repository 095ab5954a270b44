"""`fleetgen team devcontainer`: a dev container with GPU passthrough on the CUDA of a cluster's matrix row.

Code written in it runs on the cluster later, so it is built against the CUDA the cluster's version set
names (compat/cuda_images.yaml: NVIDIA's CUDA image of that minor, with cuDNN and the toolkit). The host
must have a GPU (`hostRequirements.gpu`), and the container gets the host's GPUs (`--gpus all`, which
Docker's NVIDIA runtime hook serves); its CPU and memory requirements are one GPU's share of the
smallest GPU node the team's queue hands out there, after the system reserve, so what fits in the dev
container fits in a one-GPU job.
"""

from __future__ import annotations

import json
import math
from typing import Any

from fleetgen.checks.admission import room
from fleetgen.compat.cuda_images import cuda_image, cuda_images
from fleetgen.errors import InputError, RefusedAsk
from fleetgen.model import Cluster, Fleet, NodePool
from fleetgen.model.multikueue import queue_workers

SCHEMA = "https://raw.githubusercontent.com/devcontainers/spec/main/schemas/devContainer.schema.json"
PATH = ".devcontainer/devcontainer.json"


def devcontainer(fleet: Fleet, team_name: str, cluster_name: str) -> dict[str, Any]:
    """The devcontainer.json of `team_name` for `cluster_name`; InputError for unknown names, RefusedAsk without an image."""
    teams = {t.name: t for t in fleet.teams}
    clusters = {c.name: c for c in fleet.clusters}
    if team_name not in teams:
        raise InputError(f"TEAM {team_name}: no such team (known: {', '.join(teams) or 'none'})")
    if cluster_name not in clusters:
        raise InputError(f"--cluster {cluster_name}: no such cluster (known: {', '.join(clusters)})")
    team, cluster = teams[team_name], clusters[cluster_name]
    if cluster.name not in team.clusters:
        raise RefusedAsk(f"team {team.name} is not on {cluster.name}; it is on {', '.join(team.clusters)}")
    versions = fleet.version_sets[cluster.version_set]
    image = cuda_image(versions.cuda)
    if image is None:
        known = ", ".join(str(row.cuda) for row in cuda_images().images)
        raise RefusedAsk(
            f"no CUDA image is known for CUDA {versions.cuda} ({cluster.name}'s version set {cluster.version_set}; known: {known})"
        )
    pools = _gpu_pools(fleet, cluster, team.queue_on(cluster))
    host: dict[str, Any] = {"gpu": True}
    if pools:
        cpus = min(room(p, "cpu") / p.gpus_per_node for p in pools)
        memory = min(room(p, "memory") / p.gpus_per_node for p in pools)
        host |= {"cpus": max(1, math.floor(cpus)), "memory": f"{math.floor(memory / 1024**3)}gb"}
    return {
        "$schema": SCHEMA,
        "name": f"{team.name} on {cluster.name} (CUDA {versions.cuda}, driver {versions.driver})",
        "image": image.image,
        "hostRequirements": host,
        "runArgs": ["--gpus", "all"],
        "containerEnv": {"FLEETGEN_TEAM": team.name, "FLEETGEN_CLUSTER": cluster.name, "KUBERNETES_NAMESPACE": team.namespace},
    }


def _gpu_pools(fleet: Fleet, cluster: Cluster, queue_name: str) -> list[NodePool]:
    """The GPU pools a job in `queue_name` on `cluster` may land on: its flavors' pools, or for a MultiKueue manager's
    queue the pools of its GPU model on the workers it dispatches to."""
    mk = fleet.multi_kueue
    manager_queue = next((q for q in mk.queues if q.name == queue_name), None) if mk and cluster.name == mk.manager else None
    if mk is not None and manager_queue is not None:
        workers = set(queue_workers(mk, fleet.clusters)[manager_queue.name])
        on_workers = [p for c in fleet.clusters if c.name in workers for p in c.node_pools]
        return [p for p in on_workers if p.gpus_per_node and p.gpu_model == manager_queue.gpu_model]
    queue = next((q for q in cluster.queues if q.name == queue_name), None)
    return [p for p in cluster.node_pools if p.gpus_per_node and (queue is None or queue.flavors is None or p.name in queue.flavors)]


def devcontainer_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

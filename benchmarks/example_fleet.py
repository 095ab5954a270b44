"""The shipped example, replicated to any size with the features the synthetic fleet leaves out.

    python benchmarks/example_fleet.py --replicas 25 > example-100.yaml    # 4 clusters a replica, + a manager

Each replica copies the example's clusters and teams under names of their own (`<name>-r<N>`): its
node pools, storage, notebooks (JupyterHub profiles), data-science's volumes, inference endpoints
and SLOs, training queues, cohorts and grants, as the example writes them. On top of the example:
a MultiKueue manager without GPUs whose queues spread A100 jobs over the replicas' training
clusters (a team per queue submits there), the fleet's Secrets from an External Secrets store,
and a private Git repository read with a deploy key. The cloud account covers every cluster.
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "fleet.yaml"
MANAGER = "dispatch-eastus"
WORKERS_PER_QUEUE = 20  # a MultiKueueConfig lists at most 20 workers


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """`value` with every string that names a cluster or team replaced by the replica's name for it."""
    if isinstance(value, dict):
        return {names.get(k, k) if isinstance(k, str) else k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return names.get(value, value) if isinstance(value, str) else value


def example_fleet(replicas: int) -> dict[str, Any]:
    fleet = yaml.safe_load(EXAMPLE.read_text())
    clusters, teams = fleet["clusters"], fleet["teams"]
    own_names = [c["name"] for c in clusters] + [t["name"] for t in teams]  # what the clusters' and teams' sections name
    fleet["clusters"], fleet["teams"] = [], []
    for r in range(replicas):
        names = {name: f"{name}-r{r}" for name in own_names}
        fleet["clusters"] += [_renamed(copy.deepcopy(c), names) for c in clusters]
        fleet["teams"] += [_renamed(copy.deepcopy(t), names) for t in teams]
    for account in fleet.get("cloudAccounts", []):
        account["clusters"] = [c["name"] for c in fleet["clusters"]]
        for region in account["regions"].values():  # room for every replica's pools
            region["families"] = {family: {"vcpus": quota["vcpus"] * replicas} for family, quota in region["families"].items()}
            if "spotVcpus" in region:
                region["spotVcpus"] *= replicas
    _multikueue(fleet, replicas)
    fleet["gitops"] |= {
        "repository": "ssh://git@github.com/contoso/fleet-config",
        "credentials": {"kind": "ssh", "secretName": "fleet-git"},
    }
    fleet["secrets"] = {"externalSecrets": {"clusterSecretStore": "fleet-vault", "keyPrefix": "fleet/"}}
    return fleet


def _multikueue(fleet: dict[str, Any], replicas: int) -> None:
    """A manager without GPUs; each queue spreads A100 jobs over up to 20 replicas' training clusters."""
    first = next(c for c in fleet["clusters"] if c["name"].startswith("training-eastus"))
    manager = {k: first[k] for k in ("region", "environment", "versionSet")}
    manager |= {"name": MANAGER, "purpose": "MultiKueue manager; teams submit here"}
    manager["nodePools"] = [
        {"name": "system", "vmSize": "Standard_D8s_v5", "gpusPerNode": 0, "cpuPerNode": 7, "memoryPerNode": "28Gi", "maxNodes": 3}
        | {"scaling": "on-demand", "labels": {"pool": "system"}}
    ]
    fleet["clusters"].insert(0, manager)
    workers = [f"training-eastus-r{r}" for r in range(replicas)]
    chunks = [workers[i : i + WORKERS_PER_QUEUE] for i in range(0, len(workers), WORKERS_PER_QUEUE)]
    queues = [{"name": f"fleet-a100-{k}", "gpuModel": "A100", "workers": chunk} for k, chunk in enumerate(chunks)]
    fleet["multiKueue"] = {"manager": MANAGER, "queues": queues}
    template = next(t for t in fleet["teams"] if t["name"].startswith("robotics"))
    for queue in queues:
        team = copy.deepcopy(template) | {"name": f"pooled-{queue['name']}"}
        # On each worker the team's LocalQueue feeds the example's training queue, which the manager's queue dispatches to.
        team["clusters"] = {MANAGER: {"queue": queue["name"]}} | {worker: {"queue": "gpu-cluster-queue"} for worker in queue["workers"]}
        fleet["teams"].append(team)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=25)
    print(yaml.safe_dump(example_fleet(parser.parse_args().replicas), sort_keys=False, width=1000), end="")


if __name__ == "__main__":
    main()

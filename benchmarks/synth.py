"""A synthetic fleet of any size, for the benchmark and the scale tests.

python benchmarks/synth.py --clusters 100 --teams 400 --clusters-per-team 10 > big-fleet.yaml
"""

from __future__ import annotations

import argparse

import yaml


def _a100_pool(kind: str, nodes: int, taints: list[dict[str, str]] | None = None) -> dict[str, object]:
    """A pool of 8-GPU A100 nodes, spot or on-demand."""
    pool: dict[str, object] = {
        "name": f"a100-{kind}",
        "vmSize": "Standard_ND96asr_v4",
        "gpuModel": "A100",
        "gpusPerNode": 8,
        "cpuPerNode": 64,
        "memoryPerNode": "256Gi",
        "maxNodes": nodes,
        "scaling": "spot" if kind == "spot" else "on-demand",
        "labels": {"accelerator": "nvidia-a100", "pool": kind},
    }
    if taints:
        pool["taints"] = taints
    return pool


MULTIKUEUE_WORKERS = 20  # a MultiKueueConfig lists at most 20 workers: one manager queue per 20


def synthetic_fleet(clusters: int, teams: int, clusters_per_team: int, multikueue: bool | None = None) -> str:
    """multikueue None: the benchmark fleet. False or True: the first cluster is a MultiKueue manager whose teams are
    on every worker of their queue (listed, so that both fleets hold the same placements), with (True) or without
    (False) the multiKueue section and the teams' namespaces on the manager: the pair the MultiKueue benchmark compares."""
    per_cluster = -(-teams * clusters_per_team // clusters)  # teams landing on one cluster, rounded up
    nodes = max(1, -(-per_cluster * 2 // 8))  # enough 8-GPU nodes for 2 GPUs a team
    names = [f"c{i:04d}-{'dev' if i % 10 == 0 else 'prod'}" for i in range(clusters)]
    fleet_clusters = []
    for i, name in enumerate(names):
        production = i % 10 != 0
        partner = None
        if production and i % 10 in (1, 3, 5, 7) and i + 1 < clusters:
            partner = names[i + 1]
        elif production and i % 10 in (2, 4, 6, 8):
            partner = names[i - 1]
        entry = {
            "name": name,
            "region": ["eastus", "westeurope", "westus2"][i % 3],
            "environment": "production" if production else "dev",
            "purpose": "synthetic",
            "versionSet": "prod" if production else "dev",
            "nodePools": [_a100_pool("spot", nodes, taints=[{"key": "sku", "value": "gpu"}]), _a100_pool("ondemand", nodes)],
        }
        if partner and partner in names:
            entry["drPartner"] = partner
        fleet_clusters.append(entry)
    fleet_teams = []
    for t in range(teams):
        placements = {}
        for k in range(min(clusters_per_team, clusters)):
            cluster = names[(t * 7 + k) % clusters]
            placements[cluster] = {"requests": {"gpu": 1}, "limits": {"gpu": 1}} if k % 2 else None
        fleet_teams.append(
            {
                "name": f"team-{t:04d}",
                "group": f"00000000-0000-4000-8000-{t:012d}",
                "costCenter": f"cc-{1000 + t}",
                "project": f"project-{t % 50}",
                "quota": {
                    "requests": {"cpu": 16, "memory": "64Gi", "gpu": 2},
                    "limits": {"cpu": 32, "memory": "128Gi", "gpu": 2},
                    "pods": 50,
                },
                "clusters": placements,
                "allowedIngressNamespaces": ["monitoring"],
            }
        )
    extra: dict[str, object] = {}
    if multikueue is not None:
        extra = _pooled(names, fleet_clusters, fleet_teams, multikueue)
    fleet = {
        "apiVersion": "fleetgen/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "synthetic", "costCenter": "cc-1"},
        "gitops": {"engine": "flux", "repository": "https://example.com/fleet.git"},
        "versionSets": {
            "prod": {"kubernetes": "1.29.4", "driver": "550.163.01", "cuda": "12.4", "cudnn": "9.1.0", "containerd": "1.7"},
            "dev": {"kubernetes": "1.30.1", "driver": "570.195.03", "cuda": "12.8", "cudnn": "9.10.0", "containerd": "1.7"},
        },
        "priorityClasses": [
            {"name": "production-inference", "value": 1000000},
            {"name": "exploratory", "value": 1000, "globalDefault": True, "preemptionPolicy": "Never"},
        ],
        "clusters": fleet_clusters,
        "teams": fleet_teams,
        **extra,
    }
    return yaml.safe_dump(fleet, sort_keys=False, width=1000)


def _pooled(names: list[str], clusters: list[dict[str, object]], teams: list[dict[str, object]], on: bool) -> dict[str, object]:
    """names[0] becomes a manager without GPUs; its teams submit to one of its queues and are on that queue's workers
    (without MultiKueue they are on the same workers, and not on the manager)."""
    manager = names[0]
    clusters[0]["nodePools"] = [
        {"name": "system", "vmSize": "Standard_D8s_v5", "gpusPerNode": 0, "cpuPerNode": 7, "memoryPerNode": "28Gi", "maxNodes": 3}
        | {"scaling": "on-demand", "labels": {"pool": "system"}}
    ]
    clusters[0].pop("drPartner", None)
    workers = names[1:]
    chunks = [workers[i : i + MULTIKUEUE_WORKERS] for i in range(0, len(workers), MULTIKUEUE_WORKERS)]
    queues = [{"name": f"fleet-a100-{k}", "gpuModel": "A100", "workers": chunk} for k, chunk in enumerate(chunks)]
    placed = [t for t in teams if manager in t["clusters"]]  # type: ignore[operator]
    for n, team in enumerate(placed):
        queue = queues[n % len(queues)]
        placements: dict[str, object] = team["clusters"]  # type: ignore[assignment]
        if on:
            placements[manager] = {"queue": queue["name"]}
        else:  # without MultiKueue nothing submits on the manager, which has no GPUs
            del placements[manager]
        for worker in queue["workers"]:  # type: ignore[attr-defined]
            placements.setdefault(worker, None)
    return (
        {"multiKueue": {"manager": manager, "queues": queues}, "capacity": {"gpuOvercommit": 100.0}}
        if on
        else {"capacity": {"gpuOvercommit": 100.0}}
    )


def size_arguments(description: str) -> argparse.Namespace:
    """--clusters, --teams and --clusters-per-team, defaulting to the benchmark fleet."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--teams", type=int, default=400)
    parser.add_argument("--clusters-per-team", type=int, default=10)
    return parser.parse_args()


def main() -> None:
    args = size_arguments(__doc__.splitlines()[0])
    print(synthetic_fleet(args.clusters, args.teams, args.clusters_per_team), end="")


if __name__ == "__main__":
    main()

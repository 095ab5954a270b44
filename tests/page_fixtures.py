"""What a how-to page's commands read that a reader has and the tests do not: a cluster, a Prometheus, a repository.

A page that runs on the shipped example fleet starts in a Git repository holding it and its rendered tree, as a
reader's fleet repository does. A page whose commands read a cluster's objects, a GPU history or a hand-written
repository gets it here, shaped as its source leaves it (tests/gitops_dumps.py, tests/node_dumps.py,
benchmarks/synth_history.py, tests/import_repo), and the page says what the file holds.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from committed_repo import Build, committed_example, flux_dump
from conftest import REPO
from node_dumps import node, nodes_dump, wave_evidence

from fleetgen.checks.load import load_fleet_text
from fleetgen.cli import cli

Setup = Callable[[Path, Build], None]


def example_repository(folder: Path) -> None:
    """The shipped example fleet with its rendered tree, committed on main in a new repository at `folder`."""
    committed_example(folder)


def _write_list(path: Path, items: list[dict[str, Any]]) -> None:
    path.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}), encoding="utf-8"
    )


def drifted_dev_eastus(folder: Path, kustomize: Build) -> None:
    """dev-eastus.yaml: `kubectl get` of dev-eastus as Flux synced it from the committed tree, and its nodes, after
    someone raised team data-science's GPU quota with `kubectl edit` and one T4 node kept an older driver."""
    from conftest import git

    commit = git(folder, "rev-parse", "HEAD").strip()
    items = flux_dump(kustomize, folder, "dev-eastus", commit)["items"]
    quota = next(o for o in items if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == "team-data-science")
    quota["spec"]["hard"]["requests.nvidia.com/gpu"] = "4"
    fleet = load_fleet_text((folder / "fleet.yaml").read_bytes()).fleet
    nodes = nodes_dump(fleet, "dev-eastus")["items"]
    first_t4 = next(i for i, n in enumerate(nodes) if "t4spot" in n["metadata"]["name"])
    nodes[first_t4] = node(fleet, "dev-eastus", "t4-spot", 0, driver="550.54.15")
    _write_list(folder / "dev-eastus.yaml", items + nodes)


UPGRADE = ["upgrade", "apply", "--wave", "1", "--set", "driver=560.35.03", "--at", "2026-11-24T09:00Z", "--no-render"]


def upgraded_dev_eastus(folder: Path, kustomize: Build) -> None:
    """dev-eastus.yaml: dev-eastus's nodes and its fleet-versions ConfigMap once the upgrade page's first wave
    (UPGRADE) reached every node."""
    scratch = folder.parent / "upgrade-scratch"
    scratch.mkdir()
    shutil.copy(folder / "fleet.yaml", scratch / "fleet.yaml")
    done = CliRunner().invoke(cli, [*UPGRADE, str(scratch / "fleet.yaml")])
    assert done.exit_code == 0, done.output
    fleet = load_fleet_text((scratch / "fleet.yaml").read_bytes()).fleet
    _write_list(folder / "dev-eastus.yaml", wave_evidence(fleet, 1)["dev-eastus"])
    shutil.rmtree(scratch)


def gpu_history(folder: Path, kustomize: Build) -> None:
    """gpu-history.json: a Prometheus range-query answer of 13 weeks of GPUs in use on training-eastus's node pools,
    each growing at its own rate (benchmarks/synth_history.py)."""
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from synth_history import gpus_in_use, write_answer
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    hours = 13 * 7 * 24
    series = [
        ({"cluster": "training-eastus", "flavor": "a100-spot"}, gpus_in_use(hours, 13, 0.4, weekly=1.0, noise=0.3, seed=1)),
        ({"cluster": "training-eastus", "flavor": "a100-ondemand"}, gpus_in_use(hours, 3, 0.05, weekly=0.5, noise=0.2, seed=2)),
        ({"cluster": "training-eastus", "flavor": "h100-ondemand"}, gpus_in_use(hours, 9, 0.3, weekly=0.5, noise=0.3, seed=3)),
    ]
    with (folder / "gpu-history.json").open("w", encoding="utf-8") as out:
        write_answer(out, series)


def hand_written_repository(folder: Path, kustomize: Build) -> None:
    """../fleet-config: a fleet repository written by hand, three clusters and four teams (tests/import_repo)."""
    shutil.copytree(REPO / "tests" / "import_repo", folder.parent / "fleet-config")


FIXTURES: dict[str, Setup] = {
    "docs/how-to/read-drift.md": drifted_dev_eastus,
    "docs/how-to/plan-upgrade.md": upgraded_dev_eastus,
    "docs/how-to/forecast-capacity.md": gpu_history,
    "docs/how-to/adopt-repository.md": hand_written_repository,
}

"""Safe offboarding: a removed team's namespace, and the data in it, stays until a retention step deletes it.

The engines prune what leaves Git; a team namespace carries each engine's own protection, so what
goes is the team's access (Role, binding, quotas, queue), not its volumes and checkpoints. Removing a
team needs the platform owners, whatever the pull request does to the rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import kubernetes_validate
import pytest
from conftest import EXAMPLE, git, replace_once

Run = Callable[..., CompletedProcess[str]]
TEXT = EXAMPLE.read_text()
KEEP = {
    "flux": {"kustomize.toolkit.fluxcd.io/prune": "disabled"},
    "argocd": {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"},
}


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_team_namespaces_carry_their_engine_s_prune_protection_through_kustomize(
    engine: str, tmp_path: Path, cli_run: Run, kustomize: Callable[[Path], list[dict[str, Any]]]
) -> None:
    (tmp_path / "fleet.yaml").write_text(replace_once(TEXT, "engine: flux ", f"engine: {engine} "))
    done = cli_run("render")
    assert done.returncode == 0, done.stderr
    built = kustomize(tmp_path / "clusters" / "dev-eastus")
    namespaces = [o for o in built if o["kind"] == "Namespace"]
    assert {o["metadata"]["name"] for o in namespaces} == {"team-data-science", "team-nlp", "team-robotics"}
    for namespace in namespaces:
        assert namespace["metadata"]["annotations"] == KEEP[engine]
        kubernetes_validate.validate(namespace, "1.30.1", strict=True)


def test_team_remove_says_what_stays_and_how_it_goes_and_the_pull_request_needs_approval(repo: Path, cli_run: Run) -> None:
    assert cli_run("render", cwd=repo).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rendered")
    done = cli_run("team", "remove", "robotics", cwd=repo)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[1:] == [
        "team robotics: namespace team-robotics stays on training-eastus, dev-eastus with everything in it (volumes, checkpoints): "
        "the GitOps engine does not prune team namespaces; once its retention ends, run `kubectl delete namespace team-robotics` on each of them",
        "team robotics: its pull request needs the platform owners' approval (fleetgen-removal: platform-leads)",
    ]
    # the namespace leaves Git (the engine keeps it on the clusters); the team's access goes
    assert not (repo / "base" / "namespaces" / "robotics").exists() and not (repo / "base" / "rbac" / "robotics").exists()
    report = json.loads(cli_run("diff", "--base", "HEAD", "--format", "json", cwd=repo).stdout)
    removal = next(a for a in report["approvals"] if a["rule"] == "fleetgen-removal")
    assert removal["approvers"] == ["platform-leads"]
    assert removal["changes"] == ["team robotics removed from 2 clusters (training-eastus, dev-eastus)"]
    assert lines[1].removeprefix("team robotics: ") in "\n".join(report["warnings"])


def test_a_removal_that_also_drops_the_rules_and_renames_the_owners_still_needs_the_base_s_owners(repo: Path, cli_run: Run) -> None:
    text = TEXT[: TEXT.index("  - name: robotics")] + TEXT[TEXT.index("# GPU alerts and Grafana") :]
    text = text[: text.index("approvals:\n")] + "approvals: []\n"
    text = text.replace("platformOwners: [platform-leads]", "platformOwners: [robotics-lead]")
    (repo / "fleet.yaml").write_text(text)
    done = cli_run("diff", "--base", "HEAD", "--format", "github", cwd=repo)
    assert done.returncode == 1, done.stderr
    assert "approvals-required=true" in done.stdout and "approvers=platform-leads\n" in done.stdout
    assert "rules=fleetgen-gate,fleetgen-removal" in done.stdout


def test_a_team_leaving_one_cluster_keeps_its_namespace_there(repo: Path, cli_run: Run) -> None:
    text = replace_once(
        TEXT,
        "      training-eastus: {queue: gpu-cluster-queue}\n      dev-eastus:\n    priorityClasses",
        "      training-eastus: {queue: gpu-cluster-queue}\n    priorityClasses",
    )
    (repo / "fleet.yaml").write_text(text)
    report = json.loads(cli_run("diff", "--base", "HEAD", "--format", "json", cwd=repo).stdout)
    assert [a["rule"] for a in report["approvals"]] == ["fleetgen-removal"]
    assert (
        "team robotics: namespace team-robotics stays on dev-eastus with everything in it (volumes, checkpoints): the GitOps engine "
        "does not prune team namespaces; once its retention ends, run `kubectl delete namespace team-robotics` on it"
    ) in report["warnings"]

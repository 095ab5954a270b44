"""What a removal leaves behind: a team's namespace keeps its volumes and checkpoints until it is retired.

Team namespaces carry their engine's prune protection (render/team.py KEEP): when fleet.yaml
drops a team, or a team leaves a cluster, or a team is renamed (a new namespace), the engine prunes
the team's Role, binding, quotas and queue but leaves the Namespace and everything in it. Deleting
it is a step of its own, once the data's retention ends (README: Offboarding). `diff` warns with
these lines and `team remove` prints them.
"""

from __future__ import annotations

from fleetgen.model import Fleet, Team


def retire_command(namespace: str) -> str:
    return f"kubectl delete namespace {namespace}"


def left_behind(team: Team, clusters: list[str]) -> str:
    """One line: where the team's namespace stays, and the retention step that removes it."""
    where = ", ".join(clusters)
    return (
        f"namespace {team.namespace} stays on {where} with everything in it (volumes, checkpoints): the GitOps engine "
        f"does not prune team namespaces; once its retention ends, run `{retire_command(team.namespace)}` on "
        + ("each of them" if len(clusters) > 1 else "it")
    )


def removal_warnings(base: Fleet, head: Fleet) -> list[str]:
    """A warning per team namespace the change leaves behind on some cluster of the base."""
    out = []
    now = {t.name: t for t in head.teams}
    existing = {c.name for c in head.clusters}
    for team in base.teams:
        after = now.get(team.name)
        # A cluster that leaves the fleet takes its namespaces out of fleetgen's hands with it: not listed here.
        gone = [c for c in team.clusters if c in existing and (after is None or c not in after.clusters)]
        if gone:
            out.append(f"team {team.name}: {left_behind(team, gone)}")
    return out

"""What a removal leaves behind: a team's namespace keeps its volumes and checkpoints until it is retired.

Team namespaces and the claims of the team's volumes carry their engine's prune protection (render/team.py KEEP): when fleet.yaml
drops a team, or a team leaves a cluster, or a team is renamed (a new namespace), the engine prunes
the team's Role, binding, quotas and queue but leaves the Namespace and everything in it. Deleting
it is a step of its own, once the data's retention ends (docs/how-to/offboard-team.md). `diff` warns with
these lines and `team remove` prints them.
"""

from __future__ import annotations

from fleetgen.model import Fleet, Team


def retire_command(namespace: str) -> str:
    return f"kubectl delete namespace {namespace}"


def left_behind(team: Team, clusters: list[str]) -> str:
    """One line: where the team's namespace stays (with the claims fleet.yaml gave it), and the retention step that removes it."""
    where = ", ".join(clusters)
    claims = "; ".join(f"{c}: {', '.join(v.name for v in team.volumes_on(c))}" for c in clusters if team.volumes_on(c))
    kept, pruned = (f" and its claims ({claims})", "team namespaces or their claims") if claims else ("", "team namespaces")
    return (
        f"namespace {team.namespace} stays on {where} with everything in it (volumes, checkpoints){kept}: the GitOps engine "
        f"does not prune {pruned}; once its retention ends, run `{retire_command(team.namespace)}` on "
        + ("each of them" if len(clusters) > 1 else "it")
    )


def dropped_claims(team: Team, after: Team, cluster: str) -> str | None:
    """One line when `after` (the team in the change) no longer names volumes `team` had on `cluster`: the claims stay."""
    gone = [v.name for v in team.volumes_on(cluster) if v.name not in {w.name for w in after.volumes_on(cluster)}]
    if not gone:
        return None
    return (
        f"team {team.name}: claim(s) {', '.join(gone)} stay in {team.namespace} on {cluster} with their data: the GitOps engine "
        f"does not prune claims; once their retention ends, run `kubectl delete pvc -n {team.namespace} {' '.join(gone)}` there"
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
        if after is not None:
            out += [line for c in team.clusters if c in after.clusters for line in [dropped_claims(team, after, c)] if line]
    return out

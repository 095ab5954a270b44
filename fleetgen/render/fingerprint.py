"""Per-cluster input fingerprints: a hash of every model value that feeds what one cluster gets.

What a cluster gets (`cluster_objects`, `entry_point`) is built from the cluster, the teams placed
on it (at their positions, which the objects' source paths name) and fleet-wide sections, some of
which read every cluster (Argo CD destinations, chart repositories). Of a team placed on it, a
cluster reads the team's own fields, its placement there and which clusters the team is on (Argo CD
projects, alert rules that ask whether any of them has MIG), never what the team's placement on
another cluster says. So a fingerprint covers the whole fleet but its teams, plus what each team on
the cluster says but its other placements: editing one placement of a team changes that cluster's
fingerprint alone, editing the rest of a team the fingerprints of the clusters it is or was on, any
other edit all of them. Values are hashed by their repr, which keeps a quantity's text (`1Gi` and
`1024Mi` differ) and key order. Clusters with equal fingerprints get equal objects; unequal ones
may still (a repr that differs for equal values only costs a render).
"""

from __future__ import annotations

import hashlib

from fleetgen.model import Fleet


def _digest(value: object) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()


def cluster_fingerprints(fleet: Fleet) -> list[str]:
    """One fingerprint per cluster, in the fleet's order."""
    shared = _digest(fleet.model_dump(exclude={"teams"}))
    team_hashes: dict[int, str] = {}  # a team's fields but its placements, with the names of its clusters
    out = []
    for index, cluster in enumerate(fleet.clusters):
        placed = []
        for t, team in fleet.placements[cluster.name]:
            if t not in team_hashes:
                team_hashes[t] = _digest((team.model_dump(exclude={"clusters"}), list(team.clusters)))
            placement = team.clusters[cluster.name]
            placed.append(f"{t}:{team_hashes[t]}:{_digest(placement.model_dump() if placement is not None else None)}")
        out.append(hashlib.sha256(f"{shared}\0{index}\0{','.join(placed)}".encode()).hexdigest())
    return out

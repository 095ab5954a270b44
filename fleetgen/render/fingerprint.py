"""Per-cluster input fingerprints: a hash of every model value that feeds what one cluster gets.

What a cluster gets (`cluster_objects`, `entry_point`) is built from the cluster, the teams placed
on it (at their positions, which the objects' source paths name) and fleet-wide sections, some of
which read every cluster (Argo CD destinations, chart repositories). So a fingerprint covers the
whole fleet but its teams, plus the teams placed on the cluster: editing a team changes only the
fingerprints of the clusters it is or was on; any other edit changes them all. Values are hashed
by their repr, which keeps a quantity's text (`1Gi` and `1024Mi` differ) and key order. Clusters
with equal fingerprints get equal objects; unequal ones may still (a repr that differs for equal
values only costs a render).
"""

from __future__ import annotations

import hashlib

from fleetgen.model import Fleet


def cluster_fingerprints(fleet: Fleet) -> list[str]:
    """One fingerprint per cluster, in the fleet's order."""
    shared = hashlib.sha256(repr(fleet.model_dump(exclude={"teams"})).encode()).hexdigest()
    team_hashes: dict[int, str] = {}
    out = []
    for index, cluster in enumerate(fleet.clusters):
        placed = []
        for t, team in fleet.placements[cluster.name]:
            if t not in team_hashes:
                team_hashes[t] = hashlib.sha256(repr(team.model_dump()).encode()).hexdigest()
            placed.append(f"{t}:{team_hashes[t]}")
        out.append(hashlib.sha256(f"{shared}\0{index}\0{','.join(placed)}".encode()).hexdigest())
    return out

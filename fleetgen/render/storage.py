"""A team's volumes on one cluster: a PersistentVolumeClaim per volume fleet.yaml names there.

Each claim names its storage class (the cluster's default class when the volume names none), so the
claim means the same whatever the cluster's own default is. Claims carry the engine's prune protection,
as the team's namespace does (render/team.py KEEP): dropping a volume, or the team, from fleet.yaml
leaves the claim and its data in place until someone deletes it on purpose (docs/reference/team.md, "When a team leaves").
"""

from __future__ import annotations

from fleetgen.errors import FieldPath
from fleetgen.model import Cluster, Fleet, Team
from fleetgen.model.storage import storage_class_of
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, k8s_object, team_labels
from fleetgen.render.provenance import NOWHERE, Recorder
from fleetgen.render.team import KEEP


def claims(fleet: Fleet, team: Team, at: FieldPath, cluster: Cluster, cluster_at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    """The team's claims on `cluster` (at fleet.yaml path `cluster_at`), in the order fleet.yaml lists the volumes."""
    out: list[Manifest] = []
    for v, volume in enumerate(team.volumes_on(cluster.name)):
        volume_at = at + ("clusters", cluster.name, "volumes", v)
        spec = {
            "accessModes": [volume.access_mode],
            "storageClassName": storage_class_of(cluster.storage_classes, volume),
            "resources": {"requests": {"storage": str(volume.size)}},
        }
        body = k8s_object(
            "v1",
            "PersistentVolumeClaim",
            volume.name,
            team_labels(fleet, team),
            namespace=team.namespace,
            annotations=KEEP[fleet.gitops.engine],
            spec=spec,
        )
        if why.on:
            why.meta(body, volume_at + ("name",), prov.team_labels(at), prov.derived("team-<name>", at + ("name",)))
            kept = prov.derived("the engine's prune protection: a dropped volume keeps its data", ("gitops", "engine"))
            why.set(body, ("metadata", "annotations"), kept)
            if volume.storage_class is not None:
                why.set(body, ("spec", "storageClassName"), volume_at + ("storageClass",))
            else:
                c = next(i for i, sc in enumerate(cluster.storage_classes) if sc.default)
                why.set(
                    body,
                    ("spec", "storageClassName"),
                    prov.derived("the cluster's default storage class", cluster_at + ("storageClasses", c)),
                )
            mode = volume_at + ("accessMode",) if prov.written(volume, "accessMode") else prov.default("ReadWriteOnce")
            why.set(body, ("spec", "accessModes"), mode)
            why.set(body, ("spec", "resources", "requests", "storage"), volume_at + ("size",))
        out.append(Manifest(body, volume_at))
    return out

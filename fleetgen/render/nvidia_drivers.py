"""One NVIDIADriver per GPU node pool, where the cluster's GPU Operator manages the driver that way (v26.7 and later).

Each resource selects exactly its pool's nodes: its nodeSelector is the pool's labels, the labels the pool's
Kueue ResourceFlavor selects with, and validate refuses pools whose labels hold all of another's
(checks/capacity.py), so no two resources select one node (the operator would put both into notReady with
ConflictingNodeSelector) and every GPU pool has its own. None is the default resource: the chart's default CR is
off, and a node in no pool gets no driver from fleetgen. Each carries its pool's driver and upgrade policy;
`waitForCompletion` waits for the pods of Kueue-admitted jobs, so running training ends before a node is cordoned.
"""

from __future__ import annotations

from typing import Any

from fleetgen.compat.pool_drivers import driver_crd_on, pool_driver, pool_policy
from fleetgen.errors import FieldPath
from fleetgen.model import Cluster, Fleet
from fleetgen.model.platform import DriverUpgrade
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.platform import setting_at
from fleetgen.render.provenance import NOWHERE, Recorder

API = "nvidia.com/v1alpha1"
KUEUE_POD_SELECTOR = "kueue.x-k8s.io/podset"  # Kueue labels the pod template of every job it admits with its PodSet
# The chart's own default NVIDIADriver takes the driver image from these values (driver.repository, driver.image).
REPOSITORY, IMAGE = "nvcr.io/nvidia", "driver"


def upgrade_policy(policy: DriverUpgrade) -> dict[str, Any]:
    """An NVIDIADriver's `upgradePolicy` from fleetgen's (a count of nodes as a number, a percentage as text)."""
    unavailable = policy.max_unavailable
    wait: dict[str, Any] = {"timeoutSeconds": policy.wait_for_completion.timeout_seconds}
    if policy.wait_for_completion.kueue_jobs:
        wait["podSelector"] = KUEUE_POD_SELECTOR
    return {
        "autoUpgrade": True,
        "maxParallelUpgrades": policy.max_parallel_upgrades,
        "maxUnavailable": int(unavailable) if isinstance(unavailable, str) and unavailable.isdigit() else unavailable,
        "waitForCompletion": wait,
        "podDeletion": {
            "force": policy.pod_deletion.force,
            "timeoutSeconds": policy.pod_deletion.timeout_seconds,
            "deleteEmptyDir": policy.pod_deletion.delete_empty_dir,
        },
        "drain": {
            "enable": policy.drain.enabled,
            "force": policy.drain.force,
            "timeoutSeconds": policy.drain.timeout_seconds,
            "deleteEmptyDir": policy.drain.delete_empty_dir,
        },
    }


def nvidia_drivers(fleet: Fleet, cluster: Cluster, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    if not driver_crd_on(fleet, cluster):
        return []
    out = []
    for p, pool in enumerate(cluster.node_pools):
        if not pool.gpus_per_node:
            continue
        tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        tolerations += [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in pool.taints if t.key != "nvidia.com/gpu"]
        spec = {
            "default": False,
            "driverType": "gpu",
            "repository": REPOSITORY,
            "image": IMAGE,
            "version": str(pool_driver(fleet, cluster, pool)),
            "nodeSelector": dict(sorted(pool.labels.items())),
            "tolerations": tolerations,
            "upgradePolicy": upgrade_policy(pool_policy(fleet, cluster, pool)),
        }
        # the driver pods' own metadata: a change of it alone restarts them in place, with no drain (v26.7)
        if pool.driver.pod_labels:
            spec["labels"] = dict(sorted(pool.driver.pod_labels.items()))
        if pool.driver.pod_annotations:
            spec["annotations"] = dict(sorted(pool.driver.pod_annotations.items()))
        labels = {**fleet_labels(fleet), "fleetgen/gpu-model": pool.gpu_model or "none"}
        body = k8s_object(API, "NVIDIADriver", pool.name, labels, spec=spec)
        pool_at = at + ("nodePools", p)
        out.append(Manifest(body, pool_at + ("driver",)))
        if why.on:
            why.meta(body, pool_at + ("name",), {**prov.fleet_labels(), "fleetgen/gpu-model": pool_at + ("gpuModel",)})
            why.set(body, ("spec",), prov.default("an NVIDIADriver of the GPU driver type, not the default one"))
            own = pool.driver.version is not None
            why.set(body, ("spec", "version"), pool_at + ("driver", "version") if own else ("versionSets", cluster.version_set, "driver"))
            why.set(body, ("spec", "nodeSelector"), pool_at + ("labels",), mirror=True)
            for name, field in (("labels", "podLabels"), ("annotations", "podAnnotations")):
                if name in spec:
                    why.set(body, ("spec", name), pool_at + ("driver", field), mirror=True)
            why.set(body, ("spec", "tolerations"), prov.derived("the GPU taint and the pool's taints", pool_at + ("taints",)))
            fleet_policy = setting_at(fleet, int(at[1]), "gpuOperator", "driverUpgrade")
            if pool.driver.upgrade is None:
                why.set(body, ("spec", "upgradePolicy"), fleet_policy)
            else:
                policy = prov.derived(
                    "the cluster's driverUpgrade with the pool's own fields", fleet_policy, pool_at + ("driver", "upgrade")
                )
                why.set(body, ("spec", "upgradePolicy"), policy)
    return out

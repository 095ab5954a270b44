"""The ConfigMap `kube-public/fleet-info`: a cluster's facts that no other object states.

Hand-written fleet repositories keep such a ConfigMap per cluster; `fleetgen import` reads it, and
render writes the same keys so an imported fleet round-trips: fleet, cluster, region, environment,
purpose, dr-partner, the version-set row (kubernetes, driver, cuda, cudnn, containerd) and, per
node pool (named like its Kueue ResourceFlavor), nodepool.<pool>.<fact>.
"""

from __future__ import annotations

from fleetgen.errors import FieldPath
from fleetgen.model import COMPONENTS, Cluster, Fleet
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.provenance import NOWHERE, Recorder

NAME, NAMESPACE = "fleet-info", "kube-public"


def fleet_info_data(fleet: Fleet, cluster: Cluster) -> dict[str, str]:
    data = {"fleet": fleet.metadata.name, "cluster": cluster.name, "region": cluster.region, "environment": cluster.environment}
    if cluster.purpose:
        data["purpose"] = cluster.purpose
    if cluster.dr_partner:
        data["dr-partner"] = cluster.dr_partner
    versions = fleet.version_sets.get(cluster.version_set)
    if versions is not None:
        data |= {c: str(getattr(versions, c)) for c in COMPONENTS}
    for pool in cluster.node_pools:
        facts = {
            "vm-size": pool.vm_size,
            "gpu-model": pool.gpu_model or "none",  # a CPU-only pool
            "gpus-per-node": str(pool.gpus_per_node),
            "cpu-per-node": pool.cpu_per_node.canonical(binary=False),
            "memory-per-node": pool.memory_per_node.canonical(),
            "min-nodes": str(pool.min_nodes),
            "max-nodes": str(pool.max_nodes),
            "scaling": pool.scaling,
        }
        data |= {f"nodepool.{pool.name}.{key}": value for key, value in facts.items()}
    return dict(sorted(data.items()))


POOL_FACTS = ("vmSize", "gpuModel", "gpusPerNode", "cpuPerNode", "memoryPerNode", "minNodes", "maxNodes", "scaling")


def fleet_info(fleet: Fleet, cluster: Cluster, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    body = k8s_object("v1", "ConfigMap", NAME, fleet_labels(fleet), namespace=NAMESPACE, data=fleet_info_data(fleet, cluster))
    if why.on:
        why.meta(
            body,
            prov.default("the fleet-info convention's name"),
            prov.fleet_labels(),
            prov.default("the fleet-info convention's namespace"),
        )
        sources: dict[str, FieldPath] = {
            "fleet": ("metadata", "name"),
            "cluster": at + ("name",),
            "region": at + ("region",),
            "environment": at + ("environment",),
            "purpose": at + ("purpose",),
            "dr-partner": at + ("drPartner",),
        }
        sources |= {c: ("versionSets", cluster.version_set, c) for c in COMPONENTS}
        for p, pool in enumerate(cluster.node_pools):
            for fact in POOL_FACTS:
                sources[f"nodepool.{pool.name}.{_kebab(fact)}"] = at + ("nodePools", p, fact)
        for key in body["data"]:
            why.set(body, ("data", key), sources[key])
    return [Manifest(body, at)]


def _kebab(name: str) -> str:
    """gpusPerNode -> gpus-per-node: the ConfigMap's key for a model field."""
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in name)

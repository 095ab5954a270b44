"""The GPU Operator values that make a cluster's partitioned node pools real: time-slicing and MIG.

Time-slicing: the device plugin's ConfigMap (`devicePlugin.config`, created by the chart from its
values) holds one key per time-sliced pool, named after the pool, plus `default` for every other
node; a node picks its key by the label `nvidia.com/device-plugin.config`. MIG: `mig.strategy` is the
cluster's (one per ClusterPolicy), and the MIG manager's ConfigMap (`migManager.config`) holds
`all-disabled` (the default) and each pool's layout; a node picks its layout by the label
`nvidia.com/mig.config`. The pool's labels carry those labels (a check insists), so the cloud node
pool that applies them and the Kueue ResourceFlavor that selects them agree.
"""

from __future__ import annotations

from typing import Any

import yaml

from fleetgen.compat.partitioning import layout_key, resolved_layout
from fleetgen.errors import FieldPath
from fleetgen.model import GPU_RESOURCE, Cluster, Fleet, NodePool
from fleetgen.render import provenance as prov
from fleetgen.render.provenance import Recorder

DEVICE_PLUGIN_CONFIG = "time-slicing-config"
MIG_CONFIG = "fleetgen-mig-config"
MIG_DEFAULT = "all-disabled"
_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _text(data: dict[str, Any]) -> str:
    """A configuration file the operand reads, as YAML text built from data (never spliced)."""
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, width=10_000)


def time_sliced(cluster: Cluster) -> list[tuple[int, NodePool]]:
    return [(p, pool) for p, pool in enumerate(cluster.node_pools) if pool.partitioning.kind == "time-slicing"]


def mig_pools(cluster: Cluster) -> list[tuple[int, NodePool]]:
    return [(p, pool) for p, pool in enumerate(cluster.node_pools) if pool.partitioning.kind == "mig"]


def mig_strategy(cluster: Cluster) -> str | None:
    """The cluster's MIG strategy: its MIG pools' (a check makes them agree); None without MIG pools."""
    pools = mig_pools(cluster)
    mig = pools[0][1].partitioning.mig if pools else None
    return mig.strategy if mig else None


def device_plugin_config(pool: NodePool | None, strategy: str | None) -> dict[str, Any]:
    """The device plugin's configuration for a time-sliced pool, or the default for every other node."""
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": strategy or "none"}}
    if pool is not None and pool.partitioning.time_slicing is not None:
        sharing = pool.partitioning.time_slicing
        config["flags"]["migStrategy"] = "none"
        config["sharing"] = {
            "timeSlicing": {"renameByDefault": sharing.rename, "resources": [{"name": GPU_RESOURCE, "replicas": sharing.replicas}]}
        }
    return config


def mig_configs(cluster: Cluster) -> dict[str, Any]:
    """mig-parted's configuration: all-disabled for every other node, then each pool's layout by its key."""
    configs: dict[str, Any] = {MIG_DEFAULT: [{"devices": "all", "mig-enabled": False}]}
    for _, pool in mig_pools(cluster):
        layout = resolved_layout(pool) or {}
        devices = {profile: layout[profile] for profile in sorted(layout)}
        configs.setdefault(layout_key(pool), [{"devices": "all", "mig-enabled": True, "mig-devices": devices}])
    return {"version": "v1", "mig-configs": configs}


def partitioning_values(cluster: Cluster) -> dict[str, Any]:
    """The chart values of the cluster's partitioning; nothing for a cluster of whole GPUs."""
    values: dict[str, Any] = {}
    strategy = mig_strategy(cluster)
    sliced = time_sliced(cluster)
    if sliced:
        data = {"default": _text(device_plugin_config(None, strategy))}
        data |= {pool.name: _text(device_plugin_config(pool, strategy)) for _, pool in sliced}
        values["devicePlugin"] = {"config": {"create": True, "name": DEVICE_PLUGIN_CONFIG, "default": "default", "data": data}}
    if strategy is not None:
        values["mig"] = {"strategy": strategy}
        config = {"create": True, "name": MIG_CONFIG, "default": MIG_DEFAULT, "data": {"config.yaml": _text(mig_configs(cluster))}}
        values["migManager"] = {"config": config}
    return values


def record(why: Recorder, body: dict[str, Any], at: tuple[str | int, ...], fleet: Fleet, index: int) -> None:
    """Origins of the values partitioning_values sets, below pointer `at` (the chart values)."""
    cluster = fleet.clusters[index]
    pool_at: FieldPath = ("clusters", index, "nodePools")
    sliced, migs = time_sliced(cluster), mig_pools(cluster)
    if sliced:
        config = (*at, "devicePlugin", "config")
        why.set(body, config, prov.default("the chart creates the device plugin's ConfigMap; a node picks its key by label"))
        why.set(body, (*config, "data", "default"), prov.default("whole GPUs on every node without a time-slicing label"))
        for p, pool in sliced:
            why.set(body, (*config, "data", pool.name), (*pool_at, p, "partitioning", "timeSlicing"))
    if migs:
        inputs = [(*pool_at, p, "partitioning", "mig", "strategy") for p, _ in migs]
        why.set(body, (*at, "mig", "strategy"), prov.derived("the strategy of the cluster's MIG pools", *inputs))
        layouts = [(*pool_at, p, "partitioning", "mig", "layout") for p, _ in migs]
        note = "all-disabled for other nodes, then each MIG pool's layout by the name its nvidia.com/mig.config label picks"
        why.set(body, (*at, "migManager", "config"), prov.derived(note, *layouts))

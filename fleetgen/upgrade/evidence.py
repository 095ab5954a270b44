"""Evidence that a cluster runs what an upgrade wanted: its nodes, and the versions ConfigMap its sync applied.

What the nodes report settles the versions that live on them: the kubelet (`status.nodeInfo.kubeletVersion`),
containerd (`containerRuntimeVersion`) and the driver (GPU Feature Discovery's
`nvidia.com/cuda.driver-version.full`). A cluster is on a target when every GPU node of its pools reports it and
no node's driver upgrade failed. CUDA and cuDNN live in images, not on nodes: for them the evidence is the
`kube-public/fleet-versions` ConfigMap the cluster synced. The GPU Operator release shows through the driver it
installs.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from fleetgen.compat.pool_drivers import upgrade_budget
from fleetgen.live.node_checks import covers
from fleetgen.live.nodes import SKIP_UPGRADE_LABEL, UPGRADE_DONE, UPGRADE_FAILED, NodeFacts, nodes_in, pool_of, retry_hint
from fleetgen.live.shapes import of_kind
from fleetgen.model import Cluster, Fleet, Version
from fleetgen.upgrade.operator import component_text

NODE_COMPONENTS = ("kubernetes", "containerd", "driver")
IMAGE_COMPONENTS = ("cuda", "cudnn")
VERSIONS_CONFIGMAP = ("kube-public", "fleet-versions")  # namespace, name (render/kueue.py)


def node_version(node: NodeFacts, component: str) -> Version | None:
    return {"kubernetes": node.kubelet, "containerd": node.containerd, "driver": node.driver}[component]


def versions_configmap(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The data of the cluster's fleet-versions ConfigMap in a dump, or None when the dump has none."""
    for body in of_kind(objects, "ConfigMap"):
        meta = body.get("metadata")
        if isinstance(meta, dict) and (meta.get("namespace"), meta.get("name")) == VERSIONS_CONFIGMAP:
            data = body.get("data")
            return data if isinstance(data, dict) else {}
    return None


def _same(live: Any, want: Version) -> bool:
    try:
        return Version.parse(str(live)) == want
    except ValueError:
        return False


@dataclass(frozen=True)
class Progress:
    """How far one cluster is on `wanted`, by the evidence."""

    cluster: str
    wanted: tuple[tuple[str, Version], ...]
    nodes: tuple[str, ...]  # the GPU nodes of its pools
    on_target: tuple[str, ...]  # those that report every node-borne version wanted
    failed: tuple[str, ...]  # driver upgrade failed
    upgrading: tuple[tuple[str, str], ...]  # (node, upgrade state) of a driver upgrade under way
    images: tuple[str, ...] = ()  # image versions the synced ConfigMap does not have yet: "cuda 12.4 live, 12.6 wanted"
    node_image: str | None = None  # the node image wanted where node images carry the driver
    unreadable: tuple[str, ...] = ()  # GPU nodes a wanted version of which cannot be read (live/node_versions.py)
    skipped: tuple[str, ...] = ()  # GPU nodes the upgrade controller leaves alone (their skip label)

    @property
    def on_nodes(self) -> tuple[tuple[str, Version], ...]:
        return tuple((c, v) for c, v in self.wanted if c in NODE_COMPONENTS)

    @property
    def done(self) -> bool:
        nodes_done = not self.on_nodes or (bool(self.nodes) and len(self.on_target) == len(self.nodes))
        return nodes_done and not self.failed and not self.upgrading and not self.images  # upgrade-done, or no state at all

    @property
    def text(self) -> str:
        parts = []
        if self.on_nodes:
            versions = ", ".join(f"{c} {component_text(c, v)}" for c, v in self.on_nodes)
            versions += f", node image {self.node_image}" if self.node_image else ""
            parts.append(
                f"{len(self.on_target)} of {len(self.nodes)} GPU nodes on {versions}" if self.nodes else "no GPU nodes in the evidence"
            )
        parts += [f"cannot verify node {name}: a version it reports cannot be read" for name in self.unreadable]
        if self.failed:
            parts.append("driver upgrade failed on " + ", ".join(self.failed) + f" ({retry_hint(' '.join(self.failed))})")
        if self.skipped:
            parts.append(f"left out of driver upgrades ({SKIP_UPGRADE_LABEL}=true): " + ", ".join(self.skipped))
        if self.upgrading:
            parts.append("upgrading " + ", ".join(f"{n} ({state})" for n, state in self.upgrading))
        parts += [f"images: {i}" for i in self.images]
        if not parts:
            parts.append("images synced" if len(self.on_nodes) < len(self.wanted) else "nothing on the nodes to wait for")
        return "; ".join(parts) + (": done" if self.done else "")


def _own(cluster: Cluster, node: NodeFacts, component: str, want: Version) -> Version:
    """What `node` should run of `component`: a pool with a driver of its own (one NVIDIADriver per pool) keeps it
    whatever its cluster's version set moves to."""
    pool = pool_of(cluster, node) if component == "driver" else None
    return pool.driver.version if pool is not None and pool.driver.version is not None else want


def progress(
    cluster: Cluster,
    wanted: dict[str, Version],
    objects: list[dict[str, Any]],
    node_image: str | None = None,
    pools: frozenset[str] | None = None,
) -> Progress:
    """Where `cluster` stands on `wanted` (node-borne and image versions; others are ignored) by its dump, and on
    `node_image` where its node images carry the driver (a node whose provider does not label its image is judged
    by its driver alone); only the nodes of `pools` when a wave moves just those pools of the cluster."""
    node_wanted = [(c, wanted[c]) for c in NODE_COMPONENTS if c in wanted]
    image_wanted = [(c, wanted[c]) for c in IMAGE_COMPONENTS if c in wanted]
    gpu_nodes = [
        n
        for n in nodes_in(objects)
        if (pool := pool_of(cluster, n)) is not None and pool.gpus_per_node and (pools is None or pool.name in pools)
    ]
    on_target = tuple(
        n.name
        for n in gpu_nodes
        if all((v := node_version(n, c)) is not None and covers(v, _own(cluster, n, c, want)) for c, want in node_wanted)
        and (node_image is None or n.image in (None, node_image))
    )
    unreadable = tuple(n.name for n in gpu_nodes if any(node_version(n, c) is None for c, _ in node_wanted))
    failed = tuple(n.name for n in gpu_nodes if n.upgrade_state == UPGRADE_FAILED)
    upgrading = tuple((n.name, str(n.upgrade_state)) for n in gpu_nodes if n.upgrade_state not in (None, "", UPGRADE_DONE, UPGRADE_FAILED))
    images: list[str] = []
    if image_wanted:
        data = versions_configmap(objects)
        if data is None:
            images.append("no fleet-versions ConfigMap in kube-public: the cluster has not synced fleetgen's tree")
        else:
            images += [f"{c} {data.get(c, 'missing')} live, {v} wanted" for c, v in image_wanted if not _same(data.get(c), v)]
    return Progress(
        cluster.name,
        tuple(node_wanted + image_wanted),
        tuple(n.name for n in gpu_nodes),
        on_target,
        failed,
        upgrading,
        tuple(images),
        node_image,
        unreadable,
        tuple(n.name for n in gpu_nodes if n.skips_upgrades),
    )


UPGRADE_REQUIRED = "upgrade-required"


def overdue(fleet: Fleet, cluster: Cluster, objects: list[dict[str, Any]], waited: datetime.timedelta) -> list[str]:
    """The nodes still in upgrade-required `waited` after their wave was applied, longer than their pool's upgrade
    policy lets the whole pool take: the upgrade controller is not moving them (autoUpgrade off, a drain or a
    pod that never ends, a node it cannot cordon)."""
    late: dict[str, list[str]] = {}
    for node in nodes_in(objects):
        pool = pool_of(cluster, node)
        if pool is None or not pool.gpus_per_node or node.upgrade_state != UPGRADE_REQUIRED:
            continue
        budget = upgrade_budget(fleet, cluster, pool)
        if budget is not None and waited > budget:
            late.setdefault(pool.name, []).append(node.name)
    return [
        f"warning: {', '.join(names)} of pool {name} still {UPGRADE_REQUIRED} {_hours(waited)} after the wave was applied, "
        f"longer than the pool's upgrade policy lets all its nodes take: see the GPU Operator's events for the node"
        for name, names in late.items()
    ]


def _hours(waited: datetime.timedelta) -> str:
    return f"{waited.total_seconds() / 3600:.1f}h"

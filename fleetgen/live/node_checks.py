"""The nodes as evidence: what a cluster's nodes run, judged against what fleet.yaml says they run.

Per node pool (its nodes found by the pool's labels): the node count against minNodes and maxNodes; per
node, the allocatable GPUs against gpusPerNode, the pool's taints, the kubelet and containerd against the
version set, the driver, the CUDA it runs and the GPU model from GPU Feature Discovery's labels, the GPU
Operator's driver upgrade state, and the compatibility matrix applied to what the node actually runs. A
finding names its pool and the nodes it holds for, so a hundred nodes on the wrong driver are one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fleetgen.compat import Facts, version_set_problems
from fleetgen.compat.gpu_operator import image_driver
from fleetgen.compat.pool_drivers import driver_crd_on
from fleetgen.errors import Severity
from fleetgen.live.node_versions import runtime_version
from fleetgen.live.nodes import (
    DEPLOY_DRIVER_LABEL,
    DRIVER_LABEL,
    DRIVER_OWNER_LABEL,
    SKIP_UPGRADE_LABEL,
    UPGRADE_DONE,
    UPGRADE_FAILED,
    UPGRADE_STATE_LABEL,
    NodeFacts,
    is_model,
    pool_of,
    retry_hint,
)
from fleetgen.model import Cluster, Fleet, NodePool, Version, VersionSet

SHOWN_NODES = 3  # node names a finding lists before "and N more"


@dataclass(frozen=True)
class NodeFinding:
    severity: Severity
    pool: str  # "" for nodes of no pool
    nodes: tuple[str, ...]  # () for a finding about the pool as a whole
    message: str
    kind: str = ""  # what it is about: size, gpus, taint, version, unverified, gpu, upgrade, matrix, ready, pool

    @property
    def text(self) -> str:
        where = self.pool or "no node pool"
        names = ", ".join(self.nodes[:SHOWN_NODES]) + (
            f" and {len(self.nodes) - SHOWN_NODES} more" if len(self.nodes) > SHOWN_NODES else ""
        )
        named = len(self.nodes) == 1 and f"node {self.nodes[0]}" in self.message  # "cannot verify node X" names it already
        return f"{where}: {self.message}" + (f" ({names})" if names and not named else "")


@dataclass(frozen=True)
class PoolNodes:
    pool: NodePool
    nodes: tuple[NodeFacts, ...]


@dataclass(frozen=True)
class NodeEvidence:
    cluster: str
    pools: tuple[PoolNodes, ...]
    findings: tuple[NodeFinding, ...]
    # warnings of nodes left in upgrade-required past their pool's upgrade policy, counted from the wave in fleet.yaml's
    # upgrade record that moves their driver (upgrade/status.py says them; judge_nodes has no record or clock to count by)
    late: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def gpu_nodes(self) -> tuple[NodeFacts, ...]:
        return tuple(n for p in self.pools if p.pool.gpus_per_node for n in p.nodes)


def covers(live: Version, want: Version) -> bool:
    """Whether `live` is the version `want` names: 1.7.15 is containerd 1.7; 1.29.4 is only 1.29.4."""
    return live.parts[: len(want.parts)] == want.parts


def judge_nodes(fleet: Fleet, cluster: Cluster, nodes: list[NodeFacts], data: Facts | None = None) -> NodeEvidence:
    row = fleet.version_sets[cluster.version_set]
    found: dict[tuple[Severity, str, str, str], list[str]] = {}
    members: dict[str, list[NodeFacts]] = {p.name: [] for p in cluster.node_pools}
    per_pool = driver_crd_on(fleet, cluster)
    for node in nodes:
        pool = pool_of(cluster, node)
        if pool is None:
            if node.has_gpus:
                found.setdefault((Severity.WARNING, "", "GPU nodes whose labels match no node pool", "pool"), []).append(node.name)
            continue
        members[pool.name].append(node)
        own = row if pool.driver.version is None else row.model_copy(update={"driver": pool.driver.version})  # its NVIDIADriver's
        for severity, kind, message in node_problems(node, pool, own, data, from_image=image_driver(fleet, cluster)):
            found.setdefault((severity, pool.name, message, kind), []).append(node.name)
        owner = node.labels.get(DRIVER_OWNER_LABEL)
        if pool.gpus_per_node and per_pool and owner not in (None, pool.name):
            message = f"its driver is owned by NVIDIADriver {owner}, not the pool's {pool.name} ({DRIVER_OWNER_LABEL})"
            found.setdefault((Severity.ERROR, pool.name, message, "owner"), []).append(node.name)
    for pool in cluster.node_pools:
        count = len(members[pool.name])
        if count < pool.min_nodes:
            found.setdefault((Severity.ERROR, pool.name, f"{count} node(s), below minNodes {pool.min_nodes}", "size"), [])
        if count > pool.max_nodes:
            found.setdefault((Severity.ERROR, pool.name, f"{count} node(s), above maxNodes {pool.max_nodes}", "size"), [])
    findings = tuple(NodeFinding(s, pool, tuple(names), message, kind) for (s, pool, message, kind), names in found.items())
    pools = tuple(PoolNodes(p, tuple(members[p.name])) for p in cluster.node_pools)
    return NodeEvidence(cluster.name, pools, findings)


def node_problems(
    node: NodeFacts, pool: NodePool, row: VersionSet, data: Facts | None = None, *, from_image: bool = False
) -> Iterator[tuple[Severity, str, str]]:
    """What one node of `pool` runs that fleet.yaml does not say it runs (`from_image`: its image should bring the driver)."""
    if not node.ready:
        yield Severity.WARNING, "ready", "not Ready"
    if pool.gpus_per_node and node.gpus != pool.gpus_per_node:
        yield (
            Severity.ERROR,
            "gpus",
            f"allocatable nvidia.com/gpu {node.gpus or 0}, the pool's nodes have {pool.gpus_per_node} (gpusPerNode)",
        )
    for taint in pool.taints:
        if (taint.key, taint.value, taint.effect) not in node.taints:
            yield Severity.ERROR, "taint", f"no taint {taint.key}={taint.value}:{taint.effect}, which the pool's nodes carry"
    yield from _versions(node, row)
    if node.product is not None and pool.gpu_model is None:
        yield Severity.ERROR, "gpu", f"GPU {node.product} on a node of a CPU-only pool (no gpuModel)"
    elif node.product is not None and pool.gpu_model is not None and not is_model(node.product, pool.gpu_model):
        yield Severity.ERROR, "gpu", f"GPU {node.product}, the pool's gpuModel is {pool.gpu_model}"
    if node.skips_upgrades and pool.gpus_per_node:
        yield Severity.WARNING, "upgrade", f"left out of driver upgrades ({SKIP_UPGRADE_LABEL}=true): it keeps the driver it runs"
    if node.upgrade_state == UPGRADE_FAILED:
        yield (
            Severity.ERROR,
            "upgrade",
            f"driver upgrade failed ({UPGRADE_STATE_LABEL}={UPGRADE_FAILED}); {retry_hint('NODE')}",
        )
    elif node.upgrade_state not in (None, "", UPGRADE_DONE):
        yield Severity.WARNING, "upgrade", f"driver upgrade in progress ({UPGRADE_STATE_LABEL}={node.upgrade_state})"
    if pool.gpus_per_node and DEPLOY_DRIVER_LABEL in node.labels and node.image_driver != from_image:
        yield (
            Severity.WARNING,
            "driver-source",
            (
                "the GPU Operator installs its driver, but fleet.yaml says its node image brings it (driverSource: node-image)"
                if from_image
                else "its node image brings its own driver, so the GPU Operator installs none (driverSource: operator)"
            ),
        )
    yield from _matrix(node, pool, row, data)


def _shown(text: str | None) -> str:
    return "none" if text is None else repr(text) if len(text) <= 60 else repr(text[:57]) + "..."


def _versions(node: NodeFacts, row: VersionSet) -> Iterator[tuple[Severity, str, str]]:
    if node.kubelet is None:  # what it runs is unknown: never a pass (live/node_versions.py reads every distribution's form)
        yield (
            Severity.ERROR,
            "unverified",
            f"cannot verify node {node.name}: status.nodeInfo.kubeletVersion {_shown(node.kubelet_text)} is not a version fleetgen reads",
        )
    elif not covers(node.kubelet, row.kubernetes):
        yield Severity.ERROR, "version", f"kubelet {node.kubelet}, the version set says Kubernetes {row.kubernetes}"
    runtime = runtime_version(node.runtime)
    if runtime is None:
        yield (
            Severity.ERROR,
            "unverified",
            f"cannot verify node {node.name}: status.nodeInfo.containerRuntimeVersion {_shown(node.runtime)} "
            "is not a version fleetgen reads",
        )
    elif node.containerd is None:
        yield Severity.ERROR, "version", f"container runtime {node.runtime}, the version set says containerd {row.containerd}"
    elif not covers(node.containerd, row.containerd):
        yield Severity.ERROR, "version", f"containerd {node.containerd}, the version set says {row.containerd}"
    if node.driver is None:
        if node.has_gpus:
            yield Severity.WARNING, "version", f"no GPU Feature Discovery driver label ({DRIVER_LABEL}.full): its driver is not known"
    elif node.driver != row.driver:
        yield Severity.ERROR, "version", f"driver {node.driver}, the version set says {row.driver}"
    if node.cuda is not None and node.cuda.parts[0] < row.cuda.parts[0]:  # minor-version compatibility stops at the major
        yield Severity.ERROR, "version", f"its driver runs CUDA up to {node.cuda}, and cannot run the images' CUDA {row.cuda}"


def _matrix(node: NodeFacts, pool: NodePool, row: VersionSet, data: Facts | None) -> Iterator[tuple[Severity, str, str]]:
    """The compatibility rules applied to what the node runs (its kubelet, containerd and driver; the images' CUDA)."""
    if node.kubelet is None or node.containerd is None or node.driver is None:
        return
    live = row.model_copy(update={"kubernetes": node.kubelet, "containerd": node.containerd, "driver": node.driver})
    models = frozenset({pool.gpu_model} if pool.gpu_model else ())  # a CPU-only pool has no GPU model to check
    known = {p.message for p in version_set_problems(row, models, data)}  # validate's to report
    for problem in version_set_problems(live, models, data):
        if problem.severity is Severity.ERROR and problem.message not in known:
            yield Severity.ERROR, "matrix", f"what it runs breaks the compatibility matrix: {problem.message}"

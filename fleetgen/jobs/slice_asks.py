"""Golden paths for part of a GPU: `job new --gpu-slice SLICE` asks for MIG slices or shared GPUs instead of whole GPUs.

SLICE names the extended resource as quotas do: `mig-1g.10gb` (a MIG slice, mixed strategy; `1g.10gb`
is read the same) or `gpu.shared` (a time-sliced GPU its pool renames). The pods go to the team's
reachable pools that yield that resource; the ask is held to the team's slice quota on the cluster
(as whole GPUs are to its GPU quota) and to what one node of those pools yields (a pod's slices come
from one node). CPU and memory per unit are its share of a node: a GPU's share of the node times the
unit's share of the GPU (1/replicas of a time-sliced GPU, a MIG slice's compute slices over its
layout's: 3g.40gb of 3g+2g+1g+1g takes 3/7), for whole GPUs, replicas and slices alike.
"""

from __future__ import annotations

from fractions import Fraction

from fleetgen.compat.partitioning import per_gpu, share_of_gpu
from fleetgen.errors import InputError, RefusedAsk
from fleetgen.model import GPU_RESOURCE, Cluster, NodePool, Team
from fleetgen.model.partitioning import SHARED, slice_resource

_MIG_PREFIX = "mig-"


def slice_name(asked: str) -> str:
    """The slice as quotas name it: `1g.10gb` -> `mig-1g.10gb`; `nvidia.com/gpu.shared` -> `gpu.shared`."""
    name = asked.strip().removeprefix("nvidia.com/")
    if name[:1].isdigit():
        name = _MIG_PREFIX + name
    if name != SHARED and not name.startswith(_MIG_PREFIX):
        raise InputError(f"--gpu-slice {asked!r}: a MIG profile (mig-1g.10gb, 1g.10gb) or {SHARED}")
    return name


def resource_of(asked: str | None) -> str:
    """The extended resource the pod requests: nvidia.com/gpu without a slice."""
    return GPU_RESOURCE if asked is None else slice_resource(slice_name(asked))


def units_per_node(pool: NodePool, resource: str) -> int:
    """How many of `resource` one node of the pool advertises: GPUs, time-sliced replicas or MIG slices; 0 if none."""
    return per_gpu(pool).get(resource, 0) * pool.gpus_per_node


def node_share(pool: NodePool, resource: str) -> Fraction:
    """The share of one node of the pool that one unit of `resource` takes (CPU and memory follow it)."""
    return share_of_gpu(pool, resource) / pool.gpus_per_node


def slice_pools(
    cluster: Cluster, reachable: list[NodePool], resource: str, per_pod: int, scheduler: str
) -> tuple[str | None, tuple[NodePool, ...]]:
    """(GPU model, pools) that give a pod `per_pod` of `resource` on one node; refuses with what is possible."""
    if not reachable:
        yielding = [p.name for p in cluster.node_pools if units_per_node(p, resource)]
        where = f"pools {', '.join(yielding)} yield it but are not handed out there" if yielding else f"no pool of {cluster.name} yields it"
        others = sorted({r for p in cluster.node_pools for r in per_gpu(p) if r != GPU_RESOURCE})
        known = f" (slices on {cluster.name}: {', '.join(others)})" if others else ""
        raise RefusedAsk(f"{scheduler} hands out no {resource}: {where}{known}")
    fitting = tuple(p for p in reachable if units_per_node(p, resource) >= per_pod)
    if not fitting:
        most = max(units_per_node(p, resource) for p in reachable)
        raise RefusedAsk(f"a node of {cluster.name} yields at most {most} {resource}; ask for at most {most} per pod (--gpus)")
    return fitting[0].gpu_model, tuple(p for p in fitting if p.gpu_model == fitting[0].gpu_model)


def check_slice_quota(team: Team, cluster: Cluster, resource: str, pods: int, per_pod: int) -> None:
    """The team's quota of the slice on the cluster bounds the ask; no quota of it admits none."""
    name = resource.removeprefix("nvidia.com/")
    quota = team.quota_on(cluster.name).requests.slices.get(name)
    asked = pods * per_pod
    if quota is None:
        held = ", ".join(sorted(team.quota_on(cluster.name).requests.slices)) or "none"
        raise RefusedAsk(f"team {team.name} has no {name} quota on {cluster.name} (its slice quotas: {held}); add slices: {{{name}: N}}")
    if asked > quota:
        raise RefusedAsk(
            f"team {team.name}'s {name} quota on {cluster.name} is {quota}; this asks for {asked} ({pods} x {per_pod}): "
            f"ask for at most {quota}"
        )

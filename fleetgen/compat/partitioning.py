"""GPU partitioning facts (partitioning.yaml) and what a partitioned node pool yields from them.

A pool's GPUs become extended resources: whole GPUs (`nvidia.com/gpu`), time-sliced replicas
(`nvidia.com/gpu` x replicas, or `nvidia.com/gpu.shared` when renamed), or MIG slices
(`nvidia.com/mig-<profile>` per the layout with the mixed strategy; `nvidia.com/gpu` per slice with the
single strategy). A named MIG layout (all-1g.10gb, all-balanced) means different profiles on different
GPUs, so it is resolved here against the GPU's row. A queue's nominal quota is worked out here too: GPUs
or slices it states bring their share of the pool's CPU and memory, each unit at its share of a GPU.
Checks, render, report and `job new` ask these functions; none of them reads partitioning.yaml itself.
"""

import re
from fractions import Fraction
from functools import cache
from typing import NamedTuple

from fleetgen.compat.shipped import row, rows, shipped_data
from fleetgen.model import GPU_RESOURCE, NodePool
from fleetgen.model.partitioning import SHARED, slice_resource
from fleetgen.model.sharing import FlavorResources, pool_total

_PROFILE = re.compile(r"^([1-7])g\.([1-9][0-9]*)gb(\+me)?$")


class MigGpu(NamedTuple):
    """One GPU model at one memory size, with the MIG profiles NVIDIA lists for it."""

    gpu: str
    memory: int  # GB, as NVIDIA names the product
    slices: int  # compute slices per GPU
    memory_slices: int  # the memory is cut in as many
    profiles: dict[str, int]
    balanced: dict[str, int]
    source: str
    url: str
    provisional: str = ""

    @property
    def name(self) -> str:
        return f"{self.gpu} {self.memory}GB"

    def memory_slices_of(self, profile: str) -> int:
        """The memory slices a profile takes: its size as a share of the GPU's (3g.40gb of 80GB: 4 of 8)."""
        match = _PROFILE.match(profile)
        assert match, profile
        return max(1, round(int(match[2]) * self.memory_slices / self.memory))


class NoMig(NamedTuple):
    gpu: str
    source: str
    url: str
    provisional: str = ""


class TimeSlicingLimit(NamedTuple):
    lacks: str
    says: str
    source: str
    url: str
    provisional: str = ""


class Since(NamedTuple):
    series: str  # a GPU Operator release series, YY.MM
    source: str
    url: str
    provisional: str = ""


class PartitioningFacts(NamedTuple):
    mig_gpus: tuple[MigGpu, ...]
    no_mig: tuple[NoMig, ...]
    time_slicing: tuple[TimeSlicingLimit, ...]
    mig_config_from_values: Since
    exporter_virtual_gpus: Since


@cache
def partitioning_facts() -> PartitioningFacts:
    written = shipped_data("partitioning.yaml")
    return PartitioningFacts(
        mig_gpus=rows(MigGpu, written["migGpus"]),
        no_mig=rows(NoMig, written["noMig"]),
        time_slicing=rows(TimeSlicingLimit, written["timeSlicing"]),
        mig_config_from_values=row(Since, written["migConfigFromValues"]),
        exporter_virtual_gpus=row(Since, written["exporterVirtualGpus"]),
    )


def compute_slices(profile: str) -> int:
    """3g.40gb -> 3: the compute slices a profile takes."""
    match = _PROFILE.match(profile)
    assert match, profile
    return int(match[1])


def mig_rows(gpu_model: str | None) -> list[MigGpu]:
    """The MIG rows of a GPU model; none for a CPU-only pool (no model)."""
    return [r for r in partitioning_facts().mig_gpus if gpu_model is not None and r.gpu.lower() == gpu_model.lower()]


def mig_gpu(pool: NodePool) -> MigGpu | None:
    """The pool's GPU row: its model, at its gpuMemory when the model comes in several sizes; None when not one row."""
    rows = mig_rows(pool.gpu_model)
    if pool.gpu_memory is not None:
        rows = [r for r in rows if r.memory == pool.gpu_memory]
    return rows[0] if len(rows) == 1 else None


def layout_key(pool: NodePool) -> str:
    """The name a node's nvidia.com/mig.config label picks: NVIDIA's layout name, or the pool's for its own layout."""
    mig = pool.partitioning.mig
    assert mig is not None
    return mig.layout if isinstance(mig.layout, str) else pool.name


def resolved_layout(pool: NodePool) -> dict[str, int] | None:
    """Profiles and counts per GPU of a MIG pool; None when its GPU or a named layout's profile has no row."""
    mig = pool.partitioning.mig
    if mig is None:
        return None
    if isinstance(mig.layout, dict):
        return dict(mig.layout)
    row = mig_gpu(pool)
    if row is None:
        return None
    if mig.layout == "all-balanced":
        return dict(row.balanced)
    profile = mig.layout.removeprefix("all-")
    return {profile: row.profiles[profile]} if profile in row.profiles else None


def fit_problems(row: MigGpu, layout: dict[str, int]) -> list[str]:
    """Why a layout does not fit on one GPU of `row`: a profile over its count, or the slices it takes over the GPU's."""
    problems = [
        f"{count} x {profile} is more than the {row.profiles[profile]} a {row.name} holds"
        for profile, count in layout.items()
        if profile in row.profiles and count > row.profiles[profile]
    ]
    known = {p: n for p, n in layout.items() if p in row.profiles}
    compute = sum(compute_slices(p) * n for p, n in known.items())
    memory = sum(row.memory_slices_of(p) * n for p, n in known.items())
    if compute > row.slices:
        problems.append(f"it takes {compute} compute slices, a {row.name} has {row.slices}")
    if memory > row.memory_slices:
        problems.append(f"it takes {memory} memory slices, a {row.name} has {row.memory_slices}")
    return problems


def per_gpu(pool: NodePool) -> dict[str, int]:
    """The extended resources one GPU of the pool becomes; empty when a MIG layout cannot be resolved (a check says why)."""
    parts = pool.partitioning
    if parts.time_slicing is not None and parts.mig is None:
        name = slice_resource(SHARED) if parts.time_slicing.rename else GPU_RESOURCE
        return {name: parts.time_slicing.replicas}
    if parts.mig is None:
        return {GPU_RESOURCE: 1}
    layout = resolved_layout(pool)
    if layout is None:
        return {}
    if parts.mig.strategy == "single":
        return {GPU_RESOURCE: sum(layout.values())}
    return {slice_resource(f"mig-{profile}"): count for profile, count in sorted(layout.items())}


def pool_yield(pool: NodePool) -> dict[str, int]:
    """The pool at its maximum size: each resource of per_gpu x gpusPerNode x maxNodes."""
    return {name: count * pool.gpus_per_node * pool.max_nodes for name, count in per_gpu(pool).items()}


def share_of_gpu(pool: NodePool, resource: str) -> Fraction:
    """The share of one GPU-hour that one unit of `resource` of the pool takes: 1/replicas, or a MIG slice's compute
    slices over the layout's (all-1g.10gb: 1/7; 3g.40gb of 3g+2g+1g+1g: 3/7); 1 for a whole GPU."""
    parts = pool.partitioning
    if parts.time_slicing is not None and parts.mig is None:
        return Fraction(1, parts.time_slicing.replicas)
    layout = resolved_layout(pool) if parts.mig else None
    if not layout:
        return Fraction(1)
    total = sum(compute_slices(p) * n for p, n in layout.items())
    if parts.mig and parts.mig.strategy == "single":
        return Fraction(1, sum(layout.values()))
    profile = resource.removeprefix("nvidia.com/mig-")
    return Fraction(compute_slices(profile), total) if profile in layout else Fraction(1)


def stated_gpus(pool: NodePool, given: FlavorResources) -> Fraction | None:
    """The pool's GPUs a queue's entry states: each nvidia.com/gpu or slice it names at its share of one GPU (a replica
    1/replicas, a MIG slice its compute slices over its layout's); None when it names none. An nvidia.com/gpu count on a
    pool that yields no nvidia.com/gpu (MIG mixed, renamed shares) counts whole GPUs."""
    yielded = per_gpu(pool)
    amounts = [(r, given.amount(r)) for r in sorted({GPU_RESOURCE, *yielded})]
    stated = [(r, a) for r, a in amounts if a is not None]
    if not stated:
        return None
    return sum((a * (share_of_gpu(pool, r) if r in yielded else 1) for r, a in stated), Fraction(0))


def nominal(pool: NodePool, given: FlavorResources | None, resource: str) -> Fraction:
    """A queue's nominal quota of one resource of `pool`, as its ClusterQueue states it: as given, else the share of the
    pool its GPUs and slices state (8 replicas of a pool of 4 GPUs x 4 replicas: half its CPU and memory), else the whole
    pool. The pool's GPUs and slices are what it yields (time-sliced replicas, MIG slices; 0 of what it does not)."""
    value = given.amount(resource) if given is not None else None
    if value is not None:
        return value
    if resource not in ("cpu", "memory"):
        return Fraction(pool_yield(pool).get(resource, 0))
    gpus, stated = pool_total(pool, GPU_RESOURCE), stated_gpus(pool, given) if given is not None else None
    if stated is not None and gpus:
        return pool_total(pool, resource) * stated / gpus
    return pool_total(pool, resource)


def describe(pool: NodePool) -> str:
    """The pool's partitioning in one phrase: "time-sliced, 4 replicas per GPU (nvidia.com/gpu.shared)"."""
    parts = pool.partitioning
    if parts.time_slicing is not None and parts.mig is None:
        named = " (nvidia.com/gpu.shared)" if parts.time_slicing.rename else ""
        return f"time-sliced, {parts.time_slicing.replicas} replicas per GPU{named}"
    if parts.mig is not None:
        layout = resolved_layout(pool) or {}
        cut = ", ".join(f"{n} x {p}" for p, n in sorted(layout.items()))
        return f"MIG {layout_key(pool)} ({cut or 'unresolved'}) per GPU, {parts.mig.strategy} strategy"
    return "whole GPUs"

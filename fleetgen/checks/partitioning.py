"""Checks of GPU partitioning: MIG only where the GPU has it, layouts that fit, labels that select the
configuration, slice quotas the pools can give, and time-slicing where multi-GPU training runs.

The facts (profiles, instances per GPU, GPUs without MIG) are fleetgen/compat/partitioning.yaml's.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleetgen.compat.gpu_operator import series_of
from fleetgen.compat.partitioning import fit_problems, layout_key, mig_gpu, mig_rows, partitioning_facts, pool_yield, resolved_layout
from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import Cluster, Fleet, NodePool
from fleetgen.model.partitioning import DEVICE_PLUGIN_LABEL, MIG_LABEL, slice_resource
from fleetgen.model.platform import cluster_platform


def _selecting_label(pool: NodePool) -> tuple[str, str] | None:
    """The node label (key, value) that picks the pool's configuration; None for whole GPUs."""
    parts = pool.partitioning
    if parts.mig is not None:
        return MIG_LABEL, layout_key(pool)
    if parts.time_slicing is not None:
        return DEVICE_PLUGIN_LABEL, pool.name
    return None


def _pool_findings(fleet: Fleet, c: int, p: int) -> Iterator[Finding]:
    cluster = fleet.clusters[c]
    pool = cluster.node_pools[p]
    here: FieldPath = ("clusters", c, "nodePools", p)
    parts = pool.partitioning
    if parts.mig is not None and parts.time_slicing is not None:
        yield Finding(here + ("partitioning", "mig"), "the pool is partitioned two ways (timeSlicing and mig): choose one")
        return
    wanted = _selecting_label(pool)
    for key in (DEVICE_PLUGIN_LABEL, MIG_LABEL):
        value = pool.labels.get(key)
        if value is not None and (wanted is None or wanted[0] != key):
            how = "whole GPUs" if wanted is None else "time-slicing" if parts.time_slicing else "MIG"
            yield Finding(
                here + ("labels", key),
                f"label {key}={value} selects a {'MIG layout' if key == MIG_LABEL else 'device-plugin configuration'} "
                f"fleetgen does not render for this pool ({how}): the pool would be partitioned two ways; drop the label",
            )
    if wanted is not None and pool.labels.get(wanted[0]) != wanted[1]:
        has = pool.labels.get(wanted[0])
        got = f" (it has {has!r})" if has else ""
        yield Finding(
            here + (("labels", wanted[0]) if has else ("labels",)),
            f"the pool's labels need {wanted[0]}: {wanted[1]}{got}: the node label picks the configuration fleetgen renders "
            "for this pool; set it on the cloud node pool too",
        )
    if wanted is not None:
        operator = cluster_platform(fleet.platform, cluster.platform).gpu_operator
        if not operator.enabled:
            # fix: Turn the GPU Operator on for the cluster, or drop the pool's partitioning
            yield Finding(
                here + ("partitioning",),
                f"partitioning is configured through the GPU Operator, which is off on {cluster.name} (platform.gpuOperator.enabled)",
            )
        elif parts.mig is not None and _series(series_of(operator.version)) < _series(partitioning_facts().mig_config_from_values.series):
            since = partitioning_facts().mig_config_from_values
            yield Finding(
                here + ("partitioning", "mig"),
                f"GPU Operator {operator.version} cannot create the MIG manager's ConfigMap from its values (migManager.config.create "
                f"arrived in {since.series}, {since.url}); upgrade platform.gpuOperator first",
            )
        elif parts.time_slicing is not None and _series(series_of(operator.version)) < _series(
            partitioning_facts().exporter_virtual_gpus.series
        ):
            since = partitioning_facts().exporter_virtual_gpus
            yield Finding(
                here + ("partitioning", "timeSlicing"),
                f"the DCGM exporter of GPU Operator {operator.version} labels only one of the pods sharing a GPU, so the GPU alerts "
                f"and dashboards of the other teams miss it (every pod from {since.series} on, {since.url}); upgrade platform.gpuOperator",
                Severity.WARNING,
            )
    if parts.mig is not None:
        yield from _mig_findings(pool, here)


def _series(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def _mig_findings(pool: NodePool, here: FieldPath) -> Iterator[Finding]:
    mig = pool.partitioning.mig
    assert mig is not None
    at = here + ("partitioning", "mig")
    if pool.gpu_model is None:
        # fix: Drop the partitioning from the CPU-only pool
        yield Finding(at, "a CPU-only pool (no gpuModel) has no GPUs to partition")
        return
    barred = next((r for r in partitioning_facts().no_mig if r.gpu.lower() == pool.gpu_model.lower()), None)
    if barred is not None:
        # fix: Use time-slicing for that GPU, or a GPU with MIG
        yield Finding(at, f"{pool.gpu_model} has no MIG ({barred.source}, {barred.url}); time-slicing can share it, without isolation")
        return
    rows = mig_rows(pool.gpu_model)
    if not rows:
        known = sorted({r.gpu for r in partitioning_facts().mig_gpus})
        # fix: Use a GPU model fleetgen knows MIG facts for, or add its facts in a facts file
        yield Finding(at, f"no MIG facts for {pool.gpu_model} (MIG GPUs fleetgen knows: {', '.join(known)})")
        return
    row = mig_gpu(pool)
    if row is None:
        sizes = " and ".join(f"{r.memory}" for r in rows)
        if pool.gpu_memory is None:
            yield Finding(here + ("gpuModel",), f"{pool.gpu_model} comes in {sizes} GB, whose MIG profiles differ: set gpuMemory")
        else:
            # fix: State gpuMemory as one of the known sizes, or add the facts in a facts file
            yield Finding(here + ("gpuMemory",), f"no {pool.gpu_model} with {pool.gpu_memory} GB has MIG facts (known: {sizes} GB)")
        return
    profiles = ", ".join(p for p in row.profiles if "+" not in p)
    if isinstance(mig.layout, str):
        if resolved_layout(pool) is None:
            # fix: Use a profile of that GPU from the list in the message
            yield Finding(at + ("layout",), f"unknown MIG profile {mig.layout.removeprefix('all-')!r} of {row.name} (profiles: {profiles})")
            return
    else:
        for profile in mig.layout:
            if profile not in row.profiles:
                # fix: Use a profile of that GPU from the list in the message
                yield Finding(at + ("layout", profile), f"unknown MIG profile {profile!r} of {row.name} (profiles: {profiles})")
    layout = resolved_layout(pool) or {}
    problems = fit_problems(row, layout)
    if problems:
        # fix: Choose profiles that fit one GPU together (fewer or smaller slices)
        yield Finding(at + ("layout",), f"the layout does not fit one {row.name}: {'; '.join(problems)}")
    if mig.strategy == "single" and len(layout) > 1:
        yield Finding(
            at + ("strategy",), f"the single strategy needs one profile per GPU; the layout has {len(layout)}: use strategy mixed"
        )


def _training_pools(cluster: Cluster) -> dict[str, str]:
    """Pool name -> why multi-GPU training runs there: Volcano gang-schedules on it, or Kueue packs jobs by its topology."""
    why: dict[str, str] = {}
    if cluster.volcano is not None:
        names = cluster.volcano.node_pools if cluster.volcano.node_pools is not None else [p.name for p in cluster.node_pools]
        why |= {name: "Volcano gang-schedules multi-GPU training jobs on it" for name in names}
    for pool in cluster.node_pools:
        if pool.topology:
            why.setdefault(pool.name, "its Kueue Topology packs multi-node training jobs")
    return why


def check_pools(fleet: Fleet) -> Iterator[Finding]:
    limits = "; ".join(f"no {r.lacks}: {r.says}" for r in partitioning_facts().time_slicing)
    for c, cluster in enumerate(fleet.clusters):
        for p in range(len(cluster.node_pools)):
            yield from _pool_findings(fleet, c, p)
        training = _training_pools(cluster)
        teams = ", ".join(team.name for _, team in fleet.placements[cluster.name]) or "no team yet"
        first_mig: int | None = None
        layouts: dict[str, tuple[int, dict[str, int] | None]] = {}
        for p, pool in enumerate(cluster.node_pools):
            here: FieldPath = ("clusters", c, "nodePools", p, "partitioning")
            if pool.partitioning.time_slicing is not None and pool.name in training:
                # fix: Move multi-GPU training to an unshared pool, or drop time-slicing here
                yield Finding(
                    here + ("timeSlicing",),
                    f"time-slicing on a pool used for multi-GPU training ({training[pool.name]}; teams on {cluster.name}: {teams}): "
                    f"{limits}",
                    Severity.WARNING,
                )
            mig = pool.partitioning.mig
            if mig is None or pool.partitioning.time_slicing is not None:
                continue
            if first_mig is None:
                first_mig = p
            elif mig.strategy != (cluster.node_pools[first_mig].partitioning.mig or mig).strategy:
                other = cluster.node_pools[first_mig].name
                # fix: Use one mig.strategy for every MIG pool of the cluster
                yield Finding(
                    here + ("mig", "strategy"),
                    f"MIG strategy {mig.strategy} differs from node pool {other!r}'s: the GPU Operator's mig.strategy is one per cluster",
                )
            key, layout = layout_key(pool), resolved_layout(pool)
            seen = layouts.setdefault(key, (p, layout))
            if seen[1] != layout and seen[0] != p:
                yield Finding(
                    here + ("mig", "layout"),
                    f"layout {key} means {layout} here but {seen[1]} on node pool {cluster.node_pools[seen[0]].name!r} "
                    f"({cluster.node_pools[seen[0]].gpu_model}): one name, one layout per cluster; give this pool its own profiles",
                )


def check_slice_quotas(fleet: Fleet) -> Iterator[Finding]:
    """Per cluster, the teams' slice quotas must fit what the pools' GPUs yield of each slice."""
    for cluster in fleet.clusters:
        yields: dict[str, list[tuple[str, int]]] = {}
        for pool in cluster.node_pools:
            for resource, count in pool_yield(pool).items():
                yields.setdefault(resource, []).append((pool.name, count))
        held: dict[str, list[tuple[int, str, int]]] = {}
        for t, team in fleet.placements[cluster.name]:
            for name, count in team.quota_on(cluster.name).requests.slices.items():
                held.setdefault(name, []).append((t, team.name, count))
        for name, holders in sorted(held.items()):
            resource, total = slice_resource(name), sum(n for _, _, n in holders)
            have = sum(n for _, n in yields.get(resource, ()))
            if total <= have:
                continue
            t, team_name, _ = max(holders, key=lambda h: h[2])
            team = fleet.teams[t]
            placement = team.clusters.get(cluster.name)
            own = placement is not None and name in placement.requests.slices
            at: FieldPath = ("teams", t, "clusters", cluster.name) if own else ("teams", t, "quota")
            pools = ", ".join(f"{pool} {n}" for pool, n in yields.get(resource, ())) or "no pool yields it"
            # fix: Lower the teams' slice quotas, or grow the partitioned pools
            yield Finding(
                at + ("requests", "slices", name),
                f"{name} quotas on {cluster.name} add up to {total} ({', '.join(f'{who} {n}' for _, who, n in holders)}), "
                f"above the {have} its pools' GPUs yield ({pools})",
            )


def check_queue_slices(fleet: Fleet) -> Iterator[Finding]:
    """A queue's slice quota must name a slice its pool yields."""
    for c, cluster in enumerate(fleet.clusters):
        pools = {p.name: p for p in cluster.node_pools}
        for q, queue in enumerate(cluster.queues):
            for field, per_flavor in (("nominalQuota", queue.nominal_quota), ("borrowingLimit", queue.borrowing_limit)):
                for flavor, amounts in per_flavor.items():
                    yielded = pool_yield(pools[flavor]) if flavor in pools else {}
                    for name in amounts.slices:
                        if slice_resource(name) not in yielded:
                            has = ", ".join(sorted(yielded)) or "nothing"
                            # fix: Name a slice the pool yields (the message lists them), or partition the pool to yield it
                            yield Finding(
                                ("clusters", c, "queues", q, field, flavor, "slices", name),
                                f"node pool {flavor} yields no {slice_resource(name)} (it yields: {has})",
                            )


PARTITIONING_CHECKS = (check_pools, check_slice_quotas, check_queue_slices)

"""A driver per GPU node pool: which driver each pool runs, under which upgrade policy, and the checks of both.

From GPU Operator v26.7 (gpu_operator.yaml, `driverCrd`) the operator manages the driver with NVIDIADriver
resources, one per node pool (render/nvidia_drivers.py), so a pool may run a driver other than its cluster's
version set (`nodePools[].driver.version`): a B200 pool on a newer branch beside A100 pools. Each such driver is
checked as the version set's is: against the pool's GPU and the cluster's CUDA (the compatibility matrix, which
the jobs placed on the pool run with), the notebook images the cluster offers, and the operator release's list.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterator

from fleetgen.compat.facts import Facts
from fleetgen.compat.gpu_operator import operator_release
from fleetgen.compat.rules import cuda_on_driver, version_set_problems
from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import Cluster, Fleet, NodePool, Version
from fleetgen.model.platform import DriverUpgrade, over

OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"  # the operator's own label on each node: the NVIDIADriver owning it


def driver_crd_on(fleet: Fleet, cluster: Cluster) -> bool:
    """Whether the cluster's GPU Operator manages its driver with one NVIDIADriver per node pool: platform.gpuOperator.driverCrd
    on, a release that supports it, and the operator installing the driver."""
    operator = fleet.platform_of(cluster).gpu_operator
    if not operator.enabled or operator.driver_source != "operator" or not operator.driver_crd:
        return False
    release = operator_release(operator.version)
    return release is not None and release.driver_crd


def pool_driver(fleet: Fleet, cluster: Cluster, pool: NodePool) -> Version:
    """The driver the pool runs: its own, else its cluster's version set's."""
    return pool.driver.version or fleet.version_sets[cluster.version_set].driver


def pool_policy(fleet: Fleet, cluster: Cluster, pool: NodePool) -> DriverUpgrade:
    """The pool's upgrade policy: the cluster's driverUpgrade with the fields the pool writes replacing it."""
    base = fleet.platform_of(cluster).gpu_operator.driver_upgrade
    if pool.driver.upgrade is None:
        return base
    merged: DriverUpgrade = over(base, pool.driver.upgrade)
    return merged


def upgrade_budget(fleet: Fleet, cluster: Cluster, pool: NodePool) -> datetime.timedelta | None:
    """How long the pool's upgrade policy lets a new driver take over all its nodes, `maxParallelUpgrades` at a time:
    for each, the wait for running jobs, then the drain or the GPU pods' deletion; None when it waits for ever."""
    policy = pool_policy(fleet, cluster, pool)
    wait = policy.wait_for_completion
    if wait.kueue_jobs and wait.timeout_seconds == 0:
        return None
    node = (wait.timeout_seconds if wait.kueue_jobs else 0) + policy.pod_deletion.timeout_seconds
    node += policy.drain.timeout_seconds if policy.drain.enabled else 0
    return datetime.timedelta(seconds=node * math.ceil(pool.max_nodes / policy.max_parallel_upgrades))


def rollover(nodes: int, drain: bool, parallel: int, budget: datetime.timedelta | None) -> str:
    """What a new driver does to a pool's nodes, as the diff and the upgrade plan say it: "16 nodes drain, 2 at a time,
    up to ~101h by its upgrade policy"."""
    one = nodes == 1
    if drain:
        how = "node drains" if one else "nodes drain"
    else:
        how = "node has its GPU pods deleted, no drain" if one else "nodes have their GPU pods deleted, no drain"
    took = f"up to ~{budget.total_seconds() / 3600:.0f}h by its upgrade policy" if budget else "no bound: it waits for running jobs"
    return f"{nodes} {how}, {parallel} at a time, {took}"


def gpu_pools(cluster: Cluster) -> list[NodePool]:
    return [pool for pool in cluster.node_pools if pool.gpus_per_node]


def check_pool_drivers(fleet: Fleet, data: Facts | None = None) -> Iterator[Finding]:
    """A pool's driver settings only where they act (a GPU pool, the per-pool path on), its own driver checked, and no
    NVIDIADriver selecting by the operator's own owner label."""
    for c, cluster in enumerate(fleet.clusters):
        if cluster.version_set not in fleet.version_sets:
            continue  # check_references says so
        per_pool = driver_crd_on(fleet, cluster)
        yield from _crd_unsupported(fleet, c, cluster)
        yield from _second_canaries(c, cluster)
        for p, pool in enumerate(cluster.node_pools):
            at: FieldPath = ("clusters", c, "nodePools", p, "driver")
            written = pool.driver.model_fields_set
            if not pool.gpus_per_node:
                if written:
                    # fix: Drop the driver settings from the CPU-only pool
                    yield Finding(at, f"node pool {pool.name} has no GPUs (gpusPerNode: 0): it has no driver to set")
                continue
            if OWNER_LABEL in pool.labels and per_pool:
                # fix: Select the pool's nodes by a label of your own
                yield Finding(
                    ("clusters", c, "nodePools", p, "labels", OWNER_LABEL),
                    f"{OWNER_LABEL} is the GPU Operator's own label (the NVIDIADriver owning the node); "
                    "an NVIDIADriver may not select by it",
                )
            if not per_pool and written:
                yield from _without_crd(fleet, cluster, pool, at)
                continue
            if pool.driver.version is not None:
                yield from _driver_problems(fleet, cluster, pool, at + ("version",), data)


def _second_canaries(c: int, cluster: Cluster) -> Iterator[Finding]:
    """One canary pool a cluster: a second one marked is refused where it stands, so no order of the pools decides."""
    marked = [(p, pool) for p, pool in enumerate(cluster.node_pools) if pool.gpus_per_node and pool.driver.canary]
    first = marked[0][1].name if marked else ""
    for p, pool in marked[1:]:
        yield Finding(
            ("clusters", c, "nodePools", p, "driver", "canary"),
            f"node pool {pool.name} is a second driver canary of {cluster.name} ({first} is one): mark one pool per cluster",
        )


def driver_crd_at(c: int, cluster: Cluster) -> FieldPath:
    """Where the cluster's driverCrd is written: under its own platform, else the fleet's."""
    own = cluster.platform is not None and "driver_crd" in cluster.platform.gpu_operator.model_fields_set
    return ("clusters", c, "platform", "gpuOperator", "driverCrd") if own else ("platform", "gpuOperator", "driverCrd")


def _crd_unsupported(fleet: Fleet, c: int, cluster: Cluster) -> Iterator[Finding]:
    """driverCrd on a cluster whose GPU Operator release predates the NVIDIADriver path fleetgen renders."""
    operator = fleet.platform_of(cluster).gpu_operator
    if not (operator.enabled and operator.driver_crd and operator.driver_source == "operator") or driver_crd_on(fleet, cluster):
        return
    yield Finding(
        driver_crd_at(c, cluster),
        f"GPU Operator {operator.version} on {cluster.name} has no NVIDIADriver per node pool fleetgen renders (v26.7 and later); "
        "move the cluster to such a release with driverCrd false first, then set it true",
    )


def _without_crd(fleet: Fleet, cluster: Cluster, pool: NodePool, at: FieldPath) -> Iterator[Finding]:
    """A pool's driver settings on a cluster whose one driver the ClusterPolicy (or the node image) provides."""
    operator = fleet.platform_of(cluster).gpu_operator
    why = (
        "its node images bring the driver (driverSource: node-image)"
        if operator.driver_source == "node-image"
        else "platform.gpuOperator.driverCrd is not true"
        if not operator.driver_crd and operator.enabled
        else f"GPU Operator {operator.version} manages one driver a cluster (its ClusterPolicy; v26.7 and later: an NVIDIADriver a pool)"
        if operator.enabled
        else "the GPU Operator is off there"
    )
    if pool.driver.version is not None:
        # fix: Make the change the message names (driverCrd, the operator release), or drop the pool's driver
        yield Finding(at + ("version",), f"node pool {pool.name} cannot run a driver of its own on {cluster.name}: {why}")
    if pool.driver.upgrade is not None:
        # fix: Turn driverCrd on for the cluster to give each pool its own policy, or drop the pool's setting
        yield Finding(at + ("upgrade",), f"ignored on {cluster.name}: {why}, so one upgrade policy moves all its pools", Severity.WARNING)
    for field, written in (("podLabels", pool.driver.pod_labels), ("podAnnotations", pool.driver.pod_annotations)):
        if written:
            message = f"ignored on {cluster.name}: {why}, so no driver pods of the pool's own carry them"
            # fix: Turn driverCrd on for the cluster to give the pool's driver pods their own labels, or drop the field
            yield Finding(at + (field,), message, Severity.WARNING)


def _driver_problems(fleet: Fleet, cluster: Cluster, pool: NodePool, at: FieldPath, data: Facts | None) -> Iterator[Finding]:
    """The pool's own driver against its operator release, its GPU, the cluster's CUDA and the notebook images there."""
    driver = pool_driver(fleet, cluster, pool)
    chart = fleet.platform_of(cluster).gpu_operator.version
    release = operator_release(chart)
    if release is not None and driver not in release.drivers:
        listed = ", ".join(str(d) for d in release.drivers)
        # fix: Choose a driver the release supports, or a release that supports it
        yield Finding(at, f"driver {driver} of node pool {pool.name} is not supported by GPU Operator {chart} (it supports {listed})")
    row = fleet.version_sets[cluster.version_set]
    gpus = frozenset({pool.gpu_model} if pool.gpu_model else ())
    known = {p.message for p in version_set_problems(row, gpus, data)}  # the version set's own: validate says them there
    mine = row.model_copy(update={"driver": driver})
    for problem in version_set_problems(mine, gpus, data):
        if problem.message not in known:
            # fix: Choose a driver for the pool that the rule accepts
            yield Finding(at, f"on node pool {pool.name} ({pool.gpu_model}): {problem.message}", problem.severity)
    hub = fleet.platform_of(cluster).jupyterhub
    for image in hub.images if hub.enabled else ():
        runs = cuda_on_driver(image.cuda, driver, data)
        if runs is not None and runs.field == "driver":
            # fix: Give the pool a driver that fully runs the image's CUDA, or stop offering the image there
            yield Finding(
                at,
                f"notebook image {image.name} (CUDA {image.cuda}) offered on {cluster.name} would not run fully on node pool "
                f"{pool.name}'s driver {driver}: {runs.message}",
            )

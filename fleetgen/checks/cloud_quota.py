"""The cloud layer of the quota stack: every node pool at its largest size against its account's regional VM-family quota.

A pool's vCPUs are `maxNodes` x the vCPUs of its VM size, counted against the quota of the size's VM
family in the cluster's region (fleetgen's table of sizes, compat/vm_sizes.yaml, or the pool's own
`vmFamily` and `vcpusPerNode`); spot pools count against the region's spot vCPUs instead. Above the quota
is an error (the autoscaler would stop short of maxNodes), above 80% a warning, above 60% a note: GPU
quota increases take days, so the operations chapter files them at 60%.
"""

from collections.abc import Iterator
from typing import NamedTuple

from fleetgen.compat.vm_sizes import family_key, vm_size
from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import Fleet
from fleetgen.model.cloud_quota import RegionQuota
from fleetgen.model.node_pool import NodePool

SPOT = "spot vCPUs"
PLAN, WARN = 60, 80  # percent of a quota


class QuotaUse(NamedTuple):
    """What the pools of one account, region and VM family (or its spot vCPUs) can grow to, against its quota."""

    account: str
    region: str
    family: str  # the quota's name as fleet.yaml or the size table writes it; SPOT for the spot vCPUs
    vcpus: int
    gpus: int
    pools: tuple[tuple[str, str, int, int], ...]  # (cluster, pool, maxNodes, vCPUs of one node)
    limit: int | None  # vCPUs; None when fleet.yaml states no quota for it
    gpu_limit: int | None
    at: FieldPath  # the quota's value in fleet.yaml, or the region's families when none is stated

    @property
    def percent(self) -> float | None:
        if self.limit is None:
            return None
        return 100.0 * self.vcpus / self.limit if self.limit else (0.0 if not self.vcpus else float("inf"))


def _family_and_vcpus(pool: NodePool) -> tuple[str | None, int | None]:
    """The pool's VM family and vCPUs per node, as fleet.yaml states them or fleetgen's size table knows them."""
    known = vm_size(pool.vm_size)
    return pool.vm_family or (known.family if known else None), pool.vcpus_per_node or (known.vcpus if known else None)


def _family_of(region: RegionQuota, family: str) -> str | None:
    return next((name for name in region.families if family_key(name) == family_key(family)), None)


def quota_uses(fleet: Fleet) -> tuple[list[QuotaUse], list[Finding]]:
    """Every account's use per region and family, and what could not be counted (unknown clusters and VM sizes)."""
    clusters = {c.name: (i, c) for i, c in enumerate(fleet.clusters)}
    found: list[Finding] = []
    groups: dict[tuple[int, str, str], tuple[str, list[tuple[str, str, int, int, int]]]] = {}
    for a, account in enumerate(fleet.cloud_accounts):
        for n, name in enumerate(account.clusters):
            if name not in clusters:
                # fix: List only clusters fleet.yaml declares under the account's clusters
                found.append(Finding(("cloudAccounts", a, "clusters", n), f"unknown cluster {name!r}"))
                continue
            index, cluster = clusters[name]
            if cluster.region not in account.regions:
                message = f"no quota stated for {cluster.region}, the region of {name}: its node pools are not checked against the cloud"
                # fix: State the region's quotas under the account (cloudAccounts[].quotas) to have its pools checked
                found.append(Finding(("cloudAccounts", a, "clusters", n), message, Severity.NOTE))
                continue
            for p, pool in enumerate(cluster.node_pools):
                family, vcpus = _family_and_vcpus(pool)
                if family is None or vcpus is None:
                    message = f"fleetgen does not know VM size {pool.vm_size}: state vmFamily and vcpusPerNode to check its cloud quota"
                    found.append(Finding(("clusters", index, "nodePools", p, "vmSize"), message, Severity.WARNING))
                    continue
                spot = pool.scaling == "spot"
                key = (a, cluster.region, SPOT if spot else family_key(family))
                shown, rows = groups.setdefault(key, (SPOT if spot else family, []))
                rows.append((name, pool.name, pool.max_nodes, vcpus, pool.max_nodes * pool.gpus_per_node))
    uses = [_use(fleet, a, region, shown, rows) for (a, region, _), (shown, rows) in sorted(groups.items())]
    return uses, found


def _use(fleet: Fleet, a: int, region: str, family: str, rows: list[tuple[str, str, int, int, int]]) -> QuotaUse:
    account = fleet.cloud_accounts[a]
    quota = account.regions[region]
    here: FieldPath = ("cloudAccounts", a, "regions", region)
    limit = gpu_limit = None
    at: FieldPath = (*here, "families")
    if family == SPOT:
        limit, at = quota.spot_vcpus, (*here, "spotVcpus") if quota.spot_vcpus is not None else here
    elif (stated := _family_of(quota, family)) is not None:
        limit, gpu_limit, family = quota.families[stated].vcpus, quota.families[stated].gpus, stated
        at = (*here, "families", stated, "vcpus")
    pools = tuple((c, p, nodes, vcpus) for c, p, nodes, vcpus, _ in rows)
    return QuotaUse(account.name, region, family, sum(n * v for _, _, n, v in pools), sum(r[4] for r in rows), pools, limit, gpu_limit, at)


def _pools(use: QuotaUse) -> str:
    return ", ".join(f"{c}/{p} {n} x {v}" for c, p, n, v in use.pools)


def check_cloud_quotas(fleet: Fleet) -> Iterator[Finding]:
    uses, found = quota_uses(fleet)
    yield from found
    for use in uses:
        what = f"{use.account} {use.region} {use.family}"
        if use.limit is None:
            if use.family != SPOT:  # a GPU family's quota starts at 0 in most subscriptions: say it is missing
                message = f"no quota stated for {use.family}: its pools need {use.vcpus} vCPUs at their largest ({_pools(use)})"
                # fix: State the VM family's quota under the account, or lower the pools' maxNodes
                yield Finding(use.at, message, Severity.WARNING)
            continue
        percent = use.percent or 0.0
        need = f"node pools at their largest need {use.vcpus} of {use.limit} vCPUs of {what} ({_pools(use)})"
        if use.vcpus > use.limit:
            yield Finding(use.at, f"{need}: above the quota; lower maxNodes or request an increase")
        elif percent > WARN:
            yield Finding(use.at, f"{need}: {percent:.0f}%, above {WARN}%; request an increase before the pools grow", Severity.WARNING)
        elif percent > PLAN:
            yield Finding(use.at, f"{need}: {percent:.0f}%; request the increase now: GPU quota increases take days", Severity.NOTE)
        if use.gpu_limit is not None and use.gpus > use.gpu_limit:
            # fix: Lower the pools' maxNodes, or raise the account's GPU limit (and request the increase)
            yield Finding((*use.at[:-1], "gpus"), f"node pools at their largest hold {use.gpus} GPUs of {what}, above its {use.gpu_limit}")
    seen: dict[str, int] = {}
    for a, account in enumerate(fleet.cloud_accounts):
        for n, name in enumerate(account.clusters):
            if name in seen and seen[name] != a:
                # fix: List each cluster under one account only
                yield Finding(("cloudAccounts", a, "clusters", n), f"{name} is already in account {fleet.cloud_accounts[seen[name]].name}")
            seen.setdefault(name, a)
    yield from _clusters_in_no_account(fleet, seen)


def _clusters_in_no_account(fleet: Fleet, listed: dict[str, int]) -> Iterator[Finding]:
    """Once cloudAccounts is declared, a cluster none lists would grow unchecked: the fleet's one cloud layer has a hole."""
    if not fleet.cloud_accounts:
        return
    for index, cluster in enumerate(fleet.clusters):
        if cluster.name in listed or not cluster.node_pools:
            continue
        vcpus = sum(pool.max_nodes * (_family_and_vcpus(pool)[1] or 0) for pool in cluster.node_pools)
        message = (
            f"{cluster.name} is in no cloud account: its node pools ({vcpus} vCPUs at their largest) are not checked "
            "against a cloud quota; list it under an account's clusters"
        )
        yield Finding(("clusters", index, "name"), message, Severity.WARNING)


CLOUD_QUOTA_CHECKS = (check_cloud_quotas,)

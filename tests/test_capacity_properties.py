"""The capacity promises, as properties over generated fleets (tests/generated_fleets.py): every nominal quota a
queue or cohort holds fits its pool, no flavor selects another pool's nodes, and every capacity change shows in
the diff summary and is judged by the approval rules, counted by an oracle written here from the dict alone."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest
from generated_fleets import GPU, GPU_HOUR, LAYOUTS, NODE_HOUR, edited, fleet_text, fleets, units
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import FindingsError
from fleetgen.model import Fleet
from fleetgen.render import cluster_objects
from fleetgen.report.capacity import build_report
from fleetgen.report.capacity_output import report_json
from fleetgen.review.approvals import required_approvals
from fleetgen.review.changes import fleet_changes

HOURS = 730
ORACLE_RULES = {"large-gpu-allocation", "more-capacity", "dearer"}  # the generated fleets' rules this oracle models


def _errors(fleet: dict[str, Any]) -> list[str]:
    try:
        load_fleet_text(fleet_text(fleet).encode())
    except FindingsError as exc:
        return [f"{f.dotted_path}: {f.message}" for f in exc.findings if f.severity.value == "error"]
    return []


def _model(fleet: dict[str, Any]) -> Fleet:
    """The model of a dict that need not pass the checks (a mutation may break one): the diff reads models."""
    return Fleet.model_validate(fleet, by_alias=True, by_name=False)


def _owned(cluster: dict[str, Any], pool: dict[str, Any], resource: str) -> int:
    """What the queues and cohorts of `cluster` hold of one resource of `pool`, read from the dict: a queue that lists
    the pool and states no amount holds all of it."""
    total = 0
    for queue in cluster["queues"]:
        if pool["name"] in queue["flavors"]:
            entry = queue.get("nominalQuota", {}).get(pool["name"])
            stated = None if entry is None else entry.get("gpu") if resource == GPU else entry.get("slices", {}).get(resource[11:])
            total += units(pool)[resource] if stated is None else stated
    for cohort in cluster.get("cohorts", []):
        entry = cohort.get("nominalQuota", {}).get(pool["name"], {})
        total += (entry.get("gpu") if resource == GPU else entry.get("slices", {}).get(resource[11:])) or 0
    return total


@given(fleets())
def test_generated_fleets_are_valid_and_every_guarantee_fits_its_pool(fleet: dict[str, Any]) -> None:
    assert _errors(fleet) == []
    model = load_fleet_text(fleet_text(fleet).encode()).fleet
    for index, cluster in enumerate(fleet["clusters"]):
        rendered: dict[tuple[str, str], int] = {}  # what the rendered ClusterQueues and Cohorts hold, as Kueue reads them
        for made in cluster_objects(model, index):
            if made.body["kind"] in ("ClusterQueue", "Cohort"):
                for group in made.body["spec"].get("resourceGroups", []):
                    for flavor in group["flavors"]:
                        for resource in flavor["resources"]:
                            if resource["name"].startswith("nvidia.com/"):
                                key = (flavor["name"], resource["name"])
                                rendered[key] = rendered.get(key, 0) + int(resource["nominalQuota"])
        for pool in cluster["nodePools"]:
            for resource, count in units(pool).items():
                assert rendered.get((pool["name"], resource), 0) == _owned(cluster, pool, resource) <= count


@given(fleets(), st.data())
def test_a_queue_that_owns_a_pool_beside_others_is_refused_unless_overcommit_allows_it(fleet: dict[str, Any], data: st.DataObject) -> None:
    c = data.draw(st.sampled_from(range(len(fleet["clusters"]))))
    cluster = fleet["clusters"][c]
    gpu_pools = [p for p in cluster["nodePools"] if units(p)]
    if not gpu_pools:
        return
    pool = data.draw(st.sampled_from(gpu_pools))
    over = edited(fleet)
    over["clusters"][c]["queues"].append({"name": "greedy", "flavors": [pool["name"]]})  # owns all of it: no nominalQuota
    owners = {r: _owned(over["clusters"][c], pool, r) for r in units(pool)}
    overcommitted = [r for r, n in owners.items() if n > units(pool)[r]]
    found = [e for e in _errors(over) if e.startswith(f"clusters[{c}].queues[{len(cluster['queues'])}].")]
    assert len(found) == len(overcommitted), found
    for resource in overcommitted:
        assert any(f" {resource} of {pool['name']} " in e and "queue greedy" in e for e in found)
    ratio = max(Fraction(n, units(pool)[r]) for r, n in owners.items())
    over["capacity"] = {"gpuOvercommit": float(ratio) + 0.01}
    assert [e for e in _errors(over) if "nominal quotas" in e] == []


@given(fleets(), st.data())
def test_no_flavor_selects_another_pools_nodes_and_a_pool_that_would_is_refused(fleet: dict[str, Any], data: st.DataObject) -> None:
    model = load_fleet_text(fleet_text(fleet).encode()).fleet
    for index, cluster in enumerate(model.clusters):
        flavors = [m.body for m in cluster_objects(model, index) if m.body["kind"] == "ResourceFlavor"]
        for flavor in flavors:
            if "nodeLabels" not in flavor["spec"]:  # a MultiKueue manager's flavor of a GPU model: it selects no node there
                assert model.multi_kueue is not None and cluster.name == model.multi_kueue.manager
                continue
            wanted = set(flavor["spec"]["nodeLabels"].items())
            selected = [p.name for p in cluster.node_pools if wanted <= set(p.labels.items())]
            assert selected == [flavor["metadata"]["name"]]
    c = data.draw(st.sampled_from(range(len(fleet["clusters"]))))
    pools = fleet["clusters"][c]["nodePools"]
    if len(pools) < 2:
        return
    a, b = data.draw(st.lists(st.sampled_from(range(len(pools))), min_size=2, max_size=2, unique=True))
    overlapping = edited(fleet)
    overlapping["clusters"][c]["nodePools"][b]["labels"] = {**pools[a]["labels"], "fleetgen.test/also": "b"}  # all of a's, and more
    found = [e for e in _errors(overlapping) if e.startswith(f"clusters[{c}].nodePools[{b}].labels:")]
    assert any(f"include all of {pools[a]['name']}'s" in e for e in found), found


def _equivalent(cluster: dict[str, Any], resource: str) -> Fraction:
    """The oracle's GPU-equivalent of one unit of `resource` on `cluster`: 1 for nvidia.com/gpu beside whole GPUs, else
    the yield-weighted share of a GPU over the pools that yield it (1/replicas; a slice's compute over its layout's)."""
    yielding = [(p, units(p)[resource]) for p in cluster["nodePools"] if resource in units(p)]
    if resource == GPU and any(not p.get("partitioning") for p, _ in yielding):
        return Fraction(1)
    if not yielding:
        return Fraction(1)
    total = Fraction(0)
    for pool, count in yielding:
        parts = pool["partitioning"]
        if "timeSlicing" in parts:
            share = Fraction(1, parts["timeSlicing"]["replicas"])
        else:
            layout = parts["mig"]["layout"]
            share = Fraction(int(resource.removeprefix("nvidia.com/mig-")[0]), sum(int(p[0]) * n for p, n in layout.items()))
        total += count * share
    return total / sum(n for _, n in yielding)


def _quota_equivalents(cluster: dict[str, Any], requests: dict[str, Any]) -> Fraction:
    units_ = {GPU: requests.get("gpu", 0), **{f"nvidia.com/{n}": c for n, c in requests.get("slices", {}).items()}}
    return sum((n * _equivalent(cluster, r) for r, n in units_.items() if n), Fraction(0))


def _capacity_rules(pool: dict[str, Any], nodes: int) -> set[str]:
    """The rules `nodes` more nodes of `pool` fire: 8+ physical GPUs; 10,000 a month or more, or a price unknown (a CPU-only
    VM's gpuHour entry is its node's price; nodeHour prices a node)."""
    fired = {"more-capacity"} if pool["gpusPerNode"] * nodes >= 8 else set()
    gpu_hour = GPU_HOUR.get(pool["vmSize"])
    price = NODE_HOUR.get(pool["vmSize"]) if gpu_hour is None else gpu_hour * (pool["gpusPerNode"] or 1)
    if price is None or price * nodes * HOURS >= 10000:
        fired.add("dearer")
    return fired


MUTATIONS = ("raise-quota", "add-pool", "grow-pool", "remove-pool", "repartition", "price")


@given(fleets(), st.sampled_from(MUTATIONS), st.data())
def test_every_capacity_change_is_in_the_summary_and_judged_by_the_rules(fleet: dict[str, Any], mutation: str, data: st.DataObject) -> None:
    head = edited(fleet)
    c = data.draw(st.sampled_from(range(len(fleet["clusters"]))))
    cluster = head["clusters"][c]
    pool = data.draw(st.sampled_from(cluster["nodePools"]))
    expect_rules: set[str] = set()
    if mutation == "raise-quota":
        placed = [t for t in head["teams"] if cluster["name"] in t["clusters"]]
        if not placed:
            return
        team = data.draw(st.sampled_from(placed))
        own = copy.deepcopy(team["clusters"][cluster["name"]] or {})  # this cluster's values alone, not an alias's other uses
        team["clusters"][cluster["name"]] = own
        requests = own.setdefault("requests", {})
        before = _quota_equivalents(cluster, requests)
        resource = data.draw(st.sampled_from(sorted({r for p in cluster["nodePools"] for r in units(p)} or {GPU})))
        more = data.draw(st.integers(1, 64))
        if resource == GPU:
            requests["gpu"] = requests.get("gpu", 0) + more
        else:
            slices = requests.setdefault("slices", {})
            slices[resource[11:]] = slices.get(resource[11:], 0) + more
        subject = f"team {team['name']}: {resource} quota on {cluster['name']}"
        if _quota_equivalents(cluster, requests) > before and _quota_equivalents(cluster, requests) >= 8:
            expect_rules.add("large-gpu-allocation")
    elif mutation in ("add-pool", "grow-pool"):
        if mutation == "add-pool":
            added = {k: v for k, v in pool.items() if k not in ("partitioning", "gpuMemory")}
            added |= {"name": "added", "labels": {"fleetgen.test/pool": "added"}}
            if added["gpusPerNode"]:
                added["gpuModel"] = "H100"
            cluster["nodePools"].append(added)
            nodes, subject = added["maxNodes"], f"cluster {cluster['name']}: node pool added added"
        else:
            nodes = data.draw(st.integers(1, 10))
            next(p for p in cluster["nodePools"] if p["name"] == pool["name"])["maxNodes"] += nodes
            subject = f"cluster {cluster['name']}: node pool {pool['name']} maxNodes"
        expect_rules |= _capacity_rules(pool, nodes)
    elif mutation == "remove-pool":
        if len(cluster["nodePools"]) == 1:
            return  # a cluster keeps at least one pool
        cluster["nodePools"].remove(next(p for p in cluster["nodePools"] if p["name"] == pool["name"]))
        subject = f"cluster {cluster['name']}: node pool {pool['name']} removed"
    elif mutation == "repartition":
        target = next(p for p in cluster["nodePools"] if p["name"] == pool["name"])
        parts = target.get("partitioning", {})
        others = [
            layout for row, layout in LAYOUTS if "mig" in parts and (row.gpu, row.memory) == (target["gpuModel"], target["gpuMemory"])
        ]
        others = [layout for layout in others if "mig" in parts and layout != parts["mig"]["layout"]]
        if "timeSlicing" in parts:
            parts["timeSlicing"]["replicas"] += 1
            subject = f"cluster {cluster['name']}: node pool {pool['name']} partitioning time-sliced, "
        elif others:
            parts["mig"]["layout"] = data.draw(st.sampled_from(others))  # another of the GPU's layouts from the facts
            subject = f"cluster {cluster['name']}: node pool {pool['name']} partitioning MIG "
        else:
            target["maxNodes"] += 1  # a pool without shares to change: a resize is its capacity change
            expect_rules |= _capacity_rules(pool, 1)
            subject = f"cluster {cluster['name']}: node pool {pool['name']} maxNodes "
    else:
        vm = data.draw(st.sampled_from(sorted(GPU_HOUR)))
        head["pricing"]["gpuHour"][vm] = GPU_HOUR[vm] + 1
        subject = f"pricing.gpuHour {vm}: "
    base_model, head_model = _model(fleet), _model(head)
    changes = fleet_changes(base_model, head_model)
    assert any(c.text.startswith(subject) for c in changes), (subject, [c.text for c in changes])
    fired = {a.rule.name for a in required_approvals(base_model, changes) if not a.rule.builtin}
    assert fired & ORACLE_RULES == expect_rules, [c.text for c in changes]


@given(fleets())
def test_the_report_is_the_same_every_time_and_counts_physical_gpus_apart(fleet: dict[str, Any]) -> None:
    model = load_fleet_text(fleet_text(fleet).encode()).fleet
    report = build_report(model)
    assert report_json(report) == report_json(build_report(load_fleet_text(fleet_text(fleet).encode()).fleet))
    for cluster, data in zip(fleet["clusters"], report.clusters, strict=True):
        assert data.gpus == sum(p["gpusPerNode"] * p["maxNodes"] for p in cluster["nodePools"])
        shared = [p for p in cluster["nodePools"] if "timeSlicing" in p.get("partitioning", {})]
        assert data.shares == sum(sum(units(p).values()) for p in shared)
        assert data.monthly_cost is None or data.monthly_cost >= 0
        gpu_pools_priced = all(p["vmSize"] in GPU_HOUR for p in cluster["nodePools"] if p["gpusPerNode"])
        assert (data.monthly_cost is not None) == gpu_pools_priced  # a CPU-only pool never makes it unknown


pytestmark = pytest.mark.slow  # each example validates a whole generated fleet

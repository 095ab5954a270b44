"""Promises where features meet, as properties over the generated fleets (tests/generated_fleets.py), which use every
section of fleet.yaml at once: every command ends in 0, 1 or 2 without an internal error; a pull request that adds
capacity needs what the base's rules and prices ask for, whatever else it changes; `migrate`'s output validates,
warns of no deprecation and renders the same objects."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
from conftest import REPO, examples, git, run_cli
from generated_fleets import edited, fleet_text, fleets, units, write_fleet
from gitops_dumps import cluster_dump
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.authoring.migrate import migrate
from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.model import Fleet
from fleetgen.render.rendered import Rendered
from fleetgen.review.approvals import required_approvals
from fleetgen.review.changes import fleet_changes
from fleetgen.workflows.tree_files import render_files

sys.path.insert(0, str(REPO / "benchmarks"))
from synth_history import answer_text, gpus_in_use

pytestmark = pytest.mark.slow  # each example renders a whole generated fleet, most of them several times
HOURS = 730
ERRORS = re.compile(r"\b[1-9]\d* error\(s\)")


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One command, held to the exit codes' promise: 0 fine, 1 findings, 2 usage or I/O trouble; never an internal error."""
    done = run_cli(*args, cwd=folder)
    assert done.returncode in (0, 1, 2), (args, done.returncode, done.stderr[-2000:])
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, (args, done.stderr[-2000:])
    return done


def _history(fleet: dict[str, Any]) -> str:
    """A Prometheus range answer of 13 weeks: every GPU pool's use and every team's, flat or growing."""
    series = []
    for c, cluster in enumerate(fleet["clusters"]):
        for p, pool in enumerate(cluster["nodePools"]):
            for resource, count in units(pool).items():
                labels = {"cluster": cluster["name"], "flavor": pool["name"], "resource": resource}
                series.append((labels, gpus_in_use(91 * 24, count / 2, (c + p) % 3 / 4, noise=0.2, seed=len(series))))
        for team in fleet["teams"]:
            if cluster["name"] in team["clusters"]:
                labels = {"cluster": cluster["name"], "namespace": f"team-{team['name']}"}
                series.append((labels, gpus_in_use(91 * 24, 1, 0.05, noise=0.1, seed=len(series))))
    return answer_text(series)


@examples(12)
@given(fleets(files=True), st.data())
def test_every_command_ends_in_0_1_or_2_without_an_internal_error(fleet: dict[str, Any], data: st.DataObject) -> None:
    with TemporaryDirectory() as name:
        folder = Path(name)
        write_fleet(folder, fleet)
        validated = _run(folder, "validate", "--all")
        assert validated.returncode in (0, 1) and not ERRORS.search(validated.stdout + validated.stderr), validated.stderr[-3000:]
        assert _run(folder, "render").returncode == 0
        git(folder, "init", "-q", "-b", "main")
        git(folder, "add", "-A")
        git(folder, "commit", "-q", "-m", "base")
        assert _run(folder, "check").returncode == 0  # the tree render wrote is fresh
        _run(folder, "report", "--format", "json")
        model = load_fleet(folder / "fleet.yaml").fleet  # beside its facts file
        c = data.draw(st.sampled_from(range(len(model.clusters))), label="cluster")
        cluster = model.clusters[c]
        objects = Rendered(model).keyed(c)
        kind, namespace, object_name = data.draw(st.sampled_from(sorted((k.kind, k.namespace, k.name) for k in objects)), label="object")
        assert _run(folder, "explain", cluster.name, "/".join(p for p in (kind, namespace, object_name) if p)).returncode == 0
        for target in (["--set", "driver=580.95.05"], ["--to", "next"], ["--set", "nodeImage=ubuntu-2404-gpu-next"]):
            _run(folder, "upgrade", "plan", *target, "--format", "json")
        (folder / "history.json").write_text(_history(fleet))
        _run(folder, "forecast", "--history", "history.json", "--format", "json")
        team = data.draw(st.sampled_from(fleet["teams"]), label="team")
        on = data.draw(st.sampled_from(sorted(team["clusters"])), label="on")
        assert _run(folder, "team", "devcontainer", team["name"], "--cluster", on, "--dir", "dev").returncode == 0
        live = cluster_dump(list(objects.values()), model.gitops.engine)
        (folder / "live.yaml").write_text(json.dumps(live))
        _run(folder, "drift", "--cluster", cluster.name, "--live", "live.yaml", "--against", "fleet.yaml")
        head = edited(fleet)
        grown = next((p for p in head["clusters"][c]["nodePools"] if p["gpusPerNode"]), head["clusters"][c]["nodePools"][0])
        grown["maxNodes"] += 1
        head["pricing"]["gpuHour"] = {vm: price / 2 for vm, price in head["pricing"]["gpuHour"].items()}
        write_fleet(folder, head)
        assert _run(folder, "diff", "--base", "HEAD", "--format", "json").returncode == 1  # it changes something
        assert _run(folder, "migrate").returncode == 0


def _model(fleet: dict[str, Any]) -> Fleet:
    return load_fleet_text(fleet_text(fleet).encode()).fleet


def _base_rules_fired(base: dict[str, Any], pool: dict[str, Any], nodes: int) -> set[str]:
    """What the base's rules ask of `nodes` more nodes of `pool`, at the base's prices (worked out from the dict)."""
    prices = base["pricing"]
    per_node = prices.get("nodeHour", {}).get(pool["vmSize"])
    if per_node is None and pool["vmSize"] in prices["gpuHour"]:
        per_node = prices["gpuHour"][pool["vmSize"]] * (pool["gpusPerNode"] or 1)
    fired = set()
    for rule in base["approvals"]:
        when = rule["when"]
        if "addedGpusAtLeast" in when and pool["gpusPerNode"] * nodes >= when["addedGpusAtLeast"]:
            fired.add(rule["name"])
        if "addedMonthlyCostAtLeast" in when and (per_node is None or per_node * nodes * HOURS >= when["addedMonthlyCostAtLeast"]):
            fired.add(rule["name"])
    return fired


OTHER_EDITS = ("cut-price", "drop-rules", "relax-rules", "unprice", "grow-another", "rename-owners")


@examples(100)
@given(fleets(), st.data())
def test_added_capacity_needs_what_the_base_s_rules_and_prices_ask_whatever_else_the_pull_request_changes(
    fleet: dict[str, Any], data: st.DataObject
) -> None:
    c = data.draw(st.sampled_from(range(len(fleet["clusters"]))), label="cluster")
    head = edited(fleet)
    cluster = head["clusters"][c]
    index = data.draw(st.sampled_from(range(len(cluster["nodePools"]))), label="pool")
    pool = cluster["nodePools"][index] = copy.deepcopy(dict(cluster["nodePools"][index]))  # this cluster's pool alone
    nodes = data.draw(st.integers(1, 8), label="nodes")
    pool["maxNodes"] += nodes
    for edit in sorted(data.draw(st.sets(st.sampled_from(OTHER_EDITS)), label="also")):
        if edit == "cut-price":
            head["pricing"]["gpuHour"] = {vm: 0.01 for vm in head["pricing"]["gpuHour"]}
            head["pricing"]["nodeHour"] = {vm: 0.01 for vm in head["pricing"].get("nodeHour", {})}
        elif edit == "drop-rules":
            head["approvals"] = []
        elif edit == "relax-rules":
            head["approvals"] = [{**r, "when": {"addedGpusAtLeast": 100000}} if "budget" not in r["when"] else r for r in head["approvals"]]
        elif edit == "unprice":
            head["pricing"].pop("nodeHour", None)
        elif edit == "grow-another" and (len(head["clusters"]) - 1, len(head["clusters"][-1]["nodePools"]) - 1) != (c, index):
            other = head["clusters"][-1]["nodePools"][-1]
            head["clusters"][-1]["nodePools"][-1] = {**other, "maxNodes": other["maxNodes"] + 1}
        else:
            head["metadata"]["platformOwners"] = ["someone-else"]
    base_model, head_model = _model(fleet), Fleet.model_validate(head, by_alias=True, by_name=False)
    changes = fleet_changes(base_model, head_model)
    subject = f"cluster {cluster['name']}: node pool {pool['name']} maxNodes"
    assert any(change.text.startswith(subject) for change in changes), [change.text for change in changes]
    approvals = required_approvals(base_model, changes)
    asked = {a.rule.name for a in approvals if any(change.text.startswith(subject) for change in a.changes)}
    assert _base_rules_fired(fleet, pool, nodes) <= asked, (asked, [change.text for change in changes])
    by_rule = {a.rule.name: a.rule.approvers for a in approvals}
    for rule in fleet["approvals"]:  # the approvers are the base's
        if rule["name"] in by_rule:
            assert by_rule[rule["name"]] == tuple(rule["approvers"])
    if head["pricing"] != fleet["pricing"]:  # a price change is a change of the gate itself
        assert "fleetgen-gate" in by_rule


@examples(50)
@given(fleets())
def test_migrate_output_validates_warns_of_no_deprecation_and_renders_the_same_objects(fleet: dict[str, Any]) -> None:
    loaded = load_fleet_text(fleet_text(fleet).encode())
    result = migrate(loaded)
    after = load_fleet_text(result.text.encode())
    assert not [f.message for f in after.warnings if "deprecated" in f.message]
    assert render_files(after.fleet) == render_files(loaded.fleet)
    assert migrate(after).changes == ()  # nothing left to rewrite

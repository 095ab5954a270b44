"""A pull request that moves a driver on clusters with one NVIDIADriver per pool says, pool by pool, what it does to
the GPU nodes: how many drain (or only lose their GPU pods), how many at a time, and how long the pool's upgrade
policy lets it take. Over the generated fleets: one such line for each GPU pool on its cluster's driver, none for a
CPU-only pool or a pool with a driver of its own."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

from conftest import REPO, examples, git, line_of
from generated_fleets import edited, fleet_text, fleets
from hypothesis import HealthCheck, given, settings

from fleetgen.checks.load import load_fleet_text
from fleetgen.model import Version
from fleetgen.render.rendered import Rendered
from fleetgen.review import diff_fleets
from fleetgen.review.changes import fleet_changes
from fleetgen.upgrade.plan import plan_upgrade

Run = Callable[..., CompletedProcess[str]]

CASE = (REPO / "tests" / "cases" / "pool-drivers" / "fleet.yaml").read_text(encoding="utf-8")


def _pool_lines(base: str, head: str) -> list[str]:
    changes = fleet_changes(load_fleet_text(base.encode()).fleet, load_fleet_text(head.encode()).fleet)
    return [c.text for c in changes if c.text.startswith("driver ")]


def test_a_driver_change_names_each_pool_its_nodes_parallelism_and_time() -> None:
    head = CASE.replace("driver: 580.173.02", "driver: 610.57.04")
    assert _pool_lines(CASE, head) == [
        "driver 580.173.02 -> 610.57.04 on pool a100-small of training-eastus: 2 nodes drain, 1 at a time, up to ~25h by its upgrade policy",
        "driver 580.173.02 -> 610.57.04 on pool a100 of training-eastus: 6 nodes drain, 1 at a time, up to ~76h by its upgrade policy",
        "driver 580.173.02 -> 610.57.04 on pool h100-ondemand of training-eastus: 16 nodes drain, 2 at a time, up to ~101h by its upgrade policy",
    ]
    undrained = head.replace("drain: {timeoutSeconds: 1800}", "drain: {enabled: false}")
    undrained = undrained.replace("waitForCompletion: {timeoutSeconds: 43200}", "waitForCompletion: {timeoutSeconds: 0}")
    assert _pool_lines(CASE, undrained)[0] == (
        "driver 580.173.02 -> 610.57.04 on pool a100-small of training-eastus: 2 nodes have their GPU pods deleted, no drain, "
        "1 at a time, no bound: it waits for running jobs"
    )


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=fleets())
def test_each_gpu_pool_on_its_cluster_s_driver_gets_one_line(generated: dict[str, Any]) -> None:
    base = edited(generated)
    if not base.get("platform", {}).get("gpuOperator", {}).get("driverCrd"):  # the ClusterPolicy path: the cluster's driver line alone
        return
    head = edited(generated)
    head["versionSets"]["current"]["driver"] = "595.91.07"
    lines = _pool_lines(fleet_text(base), fleet_text(head))
    expected = [
        f"on pool {p['name']} of {c['name']}:"
        for c in base["clusters"]
        if c["versionSet"] == "current"  # the set the change moves
        for p in c["nodePools"]
        if p["gpusPerNode"] and p.get("driver", {}).get("version") in (None,)
    ]
    assert [line.split(": ")[0].split(" -> 595.91.07 ")[1] + ":" for line in lines] == expected


def _on_cluster_policy(text: str, release: str) -> str:
    """The case fleet before the switch: the ClusterPolicy manages the driver, on `release`, no pool on its own driver."""
    text = text.replace("driverCrd: true ", "driverCrd: false").replace(
        "        driver: {version: 595.91.07}   # Blackwell on the newer branch\n", ""
    )
    return text.replace("version: v26.7.0", f"version: {release}")


def _refusals(base: str, head: str) -> list[str]:
    """Each refusal of the diff as `line:column: path: message` in the head's fleet.yaml."""
    old, new = load_fleet_text(base.encode()), load_fleet_text(head.encode())
    found = diff_fleets(Rendered(old.fleet), Rendered(new.fleet), "base", "head").refusals
    return [f"{(at := new.source.locate(f.path)).line}:{at.column}: {f.dotted_path}: {f.message}" for f in found]


def test_turning_driver_crd_on_with_a_new_operator_release_in_one_pull_request_is_refused_at_driver_crd() -> None:
    head = CASE.replace("        driver: {version: 595.91.07}   # Blackwell on the newer branch\n", "")
    assert _refusals(_on_cluster_policy(CASE, "v26.7.0"), head) == []  # the second of the two Helm upgrades
    base = _on_cluster_policy(CASE, "v25.10.1").replace("driver: 580.173.02", "driver: 580.82.07")
    assert _refusals(base, _on_cluster_policy(CASE, "v26.7.0")) == []  # the first: the release, driverCrd still off
    assert _refusals(base, head) == [
        f"{line_of(head, 'driverCrd: true')}:16: platform.gpuOperator.driverCrd: turns driverCrd on for training-eastus in the "
        "same pull request that moves its GPU Operator v25.10.1 -> v26.7.0: the old controller would remove the driver pods "
        "before the new one owns them; split it into two pull requests, first the release with driverCrd false, then, once "
        "v26.7.0 runs, driverCrd true"
    ]


def test_the_pull_request_check_fails_on_a_refusal_with_an_error_at_its_line(repo: Path, cli_run: Run) -> None:
    base = _on_cluster_policy(CASE, "v25.10.1").replace("driver: 580.173.02", "driver: 580.82.07")
    head = CASE.replace("        driver: {version: 595.91.07}   # Blackwell on the newer branch\n", "")
    (repo / "fleet.yaml").write_text(base)
    git(repo, "commit", "-qam", "the ClusterPolicy on v25.10.1")
    (repo / "fleet.yaml").write_text(head)  # the pull request's working tree, as the check sees it
    line = line_of(head, "driverCrd: true")
    done = cli_run("diff", "--base", "HEAD", cwd=repo)
    assert done.returncode == 1
    refused = done.stdout.splitlines()[1:3]
    assert refused[0] == "refused (the pull request must change before it merges):"
    assert refused[1].startswith(f"  - error: fleet.yaml:{line}:16: platform.gpuOperator.driverCrd: turns driverCrd on for ")
    output = repo / "github-output"
    annotated = cli_run("diff", "--base", "HEAD", "--format", "github", cwd=repo, env={"GITHUB_OUTPUT": str(output)})
    assert (
        f"::error file=fleet.yaml,line={line},col=16,title=refused%3A platform.gpuOperator.driverCrd::turns driverCrd on"
        in annotated.stdout
    )
    assert "refused=true" in output.read_text().splitlines()
    payload = json.loads(cli_run("diff", "--base", "HEAD", "--format", "json", cwd=repo).stdout)
    assert [(r["line"], r["column"], r["path"]) for r in payload["refusals"]] == [(line, 16, "platform.gpuOperator.driverCrd")]


def test_a_change_of_the_driver_pods_metadata_alone_is_an_in_place_restart_a_version_change_drains() -> None:
    pool = "labels: {accelerator: nvidia-a100, pool: a100}"
    head = CASE.replace(pool, pool + "\n        driver: {podAnnotations: {prometheus.io/scrape: 'true'}}")
    assert _pool_lines(CASE, head) == [
        "driver pod annotations on pool a100 of training-eastus: in-place restart, no drain (the driver pods of its 6 nodes "
        "restart with the new metadata)"
    ]
    labelled = head.replace("{podAnnotations:", "{podLabels: {team: llm}, podAnnotations:")
    assert _pool_lines(head, labelled) == [
        "driver pod labels on pool a100 of training-eastus: in-place restart, no drain (the driver pods of its 6 nodes restart "
        "with the new metadata)"
    ]
    both = labelled.replace("driver: 580.173.02", "driver: 610.57.04")  # a new driver as well: the pods are replaced, nodes drain
    lines = _pool_lines(CASE, both)
    assert [line.split(": ")[0] for line in lines] == [
        f"driver 580.173.02 -> 610.57.04 on pool {name} of training-eastus" for name in ("a100-small", "a100", "h100-ondemand")
    ]
    assert all("nodes drain" in line for line in lines)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=fleets())
def test_new_driver_pod_metadata_on_every_gpu_pool_is_one_in_place_line_each_and_no_drain(generated: dict[str, Any]) -> None:
    base = edited(generated)
    head = edited(generated)
    per_pool = base.get("platform", {}).get("gpuOperator", {}).get("driverCrd") is True
    for cluster in head["clusters"]:
        for pool in cluster["nodePools"]:
            if pool["gpusPerNode"]:
                pool["driver"] = {**pool.get("driver", {}), "podLabels": {"fleetgen.test/restarted": "yes"}}
    lines = _pool_lines(fleet_text(base), fleet_text(head))
    expected = [
        f"driver pod labels on pool {p['name']} of {c['name']}: in-place restart, no drain"
        for c in base["clusters"]
        for p in c["nodePools"]
        if per_pool and p["gpusPerNode"] and p.get("driver", {}).get("podLabels") != {"fleetgen.test/restarted": "yes"}
    ]
    assert [line.split(" (")[0] for line in lines] == expected


def _on_release(generated: dict[str, Any], release: str, driver: str) -> dict[str, Any]:
    """A generated fleet with one NVIDIADriver per pool taken back to the ClusterPolicy path on `release`: driverCrd off,
    every version set on `driver`, no pool with a driver of its own (and no upgrade record, which names the drivers)."""
    fleet = edited(generated)
    fleet.pop("upgrade", None)
    fleet["platform"]["gpuOperator"] |= {"version": release, "driverCrd": False}
    for versions in fleet["versionSets"].values():
        versions["driver"] = driver
        if "gpuOperator" in versions:
            versions["gpuOperator"] = release
    for cluster in fleet["clusters"]:
        for pool in cluster["nodePools"]:
            if "version" in pool.get("driver", {}):
                pool["driver"] = {k: v for k, v in pool["driver"].items() if k != "version"}
    return fleet


@examples(20, suppress_health_check=[HealthCheck.too_slow])  # three fleets rendered and two plans an example
@given(generated=fleets())
def test_the_move_to_the_crd_in_one_pull_request_is_refused_in_two_it_passes_and_the_plan_names_the_second(
    generated: dict[str, Any],
) -> None:
    """Over generated fleets on the NVIDIADriver path: from the ClusterPolicy on an older release, the pull request that
    moves the release and turns driverCrd on at once is refused at driverCrd for each cluster with GPU nodes; the same
    move split in two (the release first, then driverCrd) passes both times; and the plan that moves the release
    names, after its wave, exactly the clusters that may then turn driverCrd on."""
    if generated.get("platform", {}).get("gpuOperator", {}).get("driverCrd") is not True:
        return
    head = edited(generated)
    head.pop("upgrade", None)
    base = _on_release(generated, "v25.10.1", "580.82.07")
    middle = _on_release(generated, "v26.7.0", "580.173.02")
    texts = [fleet_text(f) for f in (base, middle, head)]
    loaded = [load_fleet_text(t.encode()) for t in texts]
    split = [diff_fleets(Rendered(x.fleet), Rendered(y.fleet), "a", "b").refusals for x, y in zip(loaded, loaded[1:], strict=False)]
    assert split == [[], []]
    refused = diff_fleets(Rendered(loaded[0].fleet), Rendered(loaded[2].fleet), "base", "head").refusals
    with_gpus = [c["name"] for c in head["clusters"] if any(p["gpusPerNode"] for p in c["nodePools"])]
    assert [f.message.split(" for ")[1].split(" in the same")[0] for f in refused] == with_gpus
    for finding in refused:
        at = loaded[2].source.locate(finding.path)
        assert texts[2].splitlines()[at.line - 1][at.column - 1 :].startswith("true")  # the driverCrd: true it turns on
        assert "split it into two pull requests" in finding.message
    plan = plan_upgrade(loaded[0].fleet, {"driver": Version("580.173.02"), "gpuOperator": Version("26.7.0")})
    moved = {name: w.number for w in plan.waves if "gpuOperator" in dict(w.step) for name in w.clusters}
    assert sorted((s.after_wave, name) for s in plan.crd_switches for name in s.clusters) == sorted((moved[n], n) for n in with_gpus)


def test_a_pool_s_driver_section_is_summed_up_field_by_field_as_fleet_yaml_spells_it() -> None:
    pool = "labels: {accelerator: nvidia-a100, pool: a100}"
    head = CASE.replace(pool, pool + "\n        driver: {canary: true, podAnnotations: {prometheus.io/scrape: 'true'}}")
    changes = fleet_changes(load_fleet_text(CASE.encode()).fleet, load_fleet_text(head.encode()).fleet)
    assert [c.text for c in changes if c.kind == "node-pool" and c.text.startswith("cluster ")] == [
        "cluster training-eastus: node pool a100 driver.podAnnotations none -> prometheus.io/scrape=true",
        "cluster training-eastus: node pool a100 driver.canary false -> true",
    ]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=fleets())
def test_no_node_pool_change_reads_as_python(generated: dict[str, Any]) -> None:
    """Whatever a pull request changes in a pool's driver, each summary line names a fleet.yaml field and its values."""
    base = edited(generated)
    head = edited(generated)
    for cluster in head["clusters"]:
        for pool in cluster["nodePools"]:
            if pool["gpusPerNode"]:
                was = pool.get("driver", {})
                pool["driver"] = {**was, "podLabels": {"fleetgen.test/restarted": "yes"}, "canary": False}
    changes = fleet_changes(load_fleet_text(fleet_text(base).encode()).fleet, load_fleet_text(fleet_text(head).encode()).fleet)
    for change in (c for c in changes if c.kind == "node-pool" and c.text.startswith("cluster ")):
        assert not any(python in change.text for python in ("=None", "={", "Version(", "=False", "=True")), change.text
        assert " driver." in change.text or " driver " not in change.text, change.text


def test_a_one_node_pool_is_spoken_of_in_the_singular() -> None:
    pool = "labels: {accelerator: nvidia-a100, pool: a100}"
    base = CASE.replace("maxNodes: 6", "maxNodes: 1")  # the a100 pool, one node
    annotated = base.replace(pool, pool + "\n        driver: {podAnnotations: {prometheus.io/scrape: 'true'}}")
    assert _pool_lines(base, annotated) == [
        "driver pod annotations on pool a100 of training-eastus: in-place restart, no drain (the driver pod of its one node "
        "restarts with the new metadata)"
    ]
    moved = [line for line in _pool_lines(base, base.replace("driver: 580.173.02", "driver: 610.57.04")) if "pool a100 " in line]
    assert moved == [
        "driver 580.173.02 -> 610.57.04 on pool a100 of training-eastus: 1 node drains, 1 at a time, up to ~13h by its upgrade policy"
    ]
    undrained = base.replace("drain: {timeoutSeconds: 1800}", "drain: {enabled: false}")
    moved = [line for line in _pool_lines(undrained, undrained.replace("driver: 580.173.02", "driver: 610.57.04")) if "pool a100 " in line]
    assert moved[0].split(": ", 1)[1].startswith("1 node has its GPU pods deleted, no drain, 1 at a time")

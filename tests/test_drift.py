"""Drift on a GitOps-synced cluster: a dump shaped exactly as Flux 2.x or Argo CD 3.x leave the objects
(tests/gitops_dumps.py) shows no drift, and each change planted in it is exactly one finding."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE
from gitops_dumps import RESOURCE_IN_USE, cluster_dump
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.compare.object_diff import ObjectKey, show
from fleetgen.live.state import compare
from fleetgen.render.rendered import Rendered

Run = Callable[..., CompletedProcess[str]]
TRAINING, DEV = 2, 3  # training-eastus and dev-eastus in the example
VARIANTS = {  # engine, tracking, server-side apply
    "flux": ("flux", "annotation", True),
    "argocd-annotation": ("argocd", "annotation", False),
    "argocd-annotation+label": ("argocd", "annotation+label", False),
    "argocd-label-ssa": ("argocd", "label", True),
}


@cache
def rendered_dev(index: int = DEV) -> dict[ObjectKey, dict[str, Any]]:
    loaded = load_fleet_text(EXAMPLE.read_bytes())
    return Rendered(loaded.fleet).keyed(index)


def dump_of(variant: str, index: int = DEV) -> dict[str, Any]:
    engine, tracking, ssa = VARIANTS[variant]
    return cluster_dump(list(rendered_dev(index).values()), engine, tracking=tracking, ssa=ssa)


def item(dump: dict[str, Any], kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    return next(
        o for o in dump["items"] if (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) == (kind, namespace, name)
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_faithful_dump_of_a_synced_cluster_shows_no_drift(tmp_path: Path, cli_run: Run, variant: str) -> None:
    dump = dump_of(variant)
    # the dump carries everything a real one does, so the comparison has something to see past
    labels = [o["metadata"]["labels"] for o in dump["items"]]
    annotations = [o["metadata"].get("annotations", {}) for o in dump["items"]]
    if variant == "flux":
        assert all(lab["kustomize.toolkit.fluxcd.io/name"] == "contoso-ai" for lab in labels)
    else:
        assert all("kubectl.kubernetes.io/last-applied-configuration" in a for a in annotations) != variant.endswith("ssa")
        assert all(("argocd.argoproj.io/tracking-id" in a) == ("annotation" in variant) for a in annotations)
        assert all(("app.kubernetes.io/instance" in lab) == ("label" in variant) for lab in labels)
    assert item(dump, "ClusterQueue", "gpu-cluster-queue")["metadata"]["finalizers"] == [RESOURCE_IN_USE]
    assert item(dump, "ClusterQueue", "gpu-cluster-queue")["spec"]["queueingStrategy"] == "BestEffortFIFO"  # the CRD's default
    assert "globalDefault" not in item(dump, "PriorityClass", "production-inference")  # false is left out
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    (tmp_path / "live.yaml").write_text(yaml.safe_dump(dump))
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", "live.yaml", "--against", "fleet.yaml")
    assert (done.returncode, done.stdout, done.stderr) == (0, "dev-eastus: no drift\n", "")


def _quota(dump: dict[str, Any]) -> dict[str, Any]:
    return item(dump, "ResourceQuota", "gpu-quota", "team-nlp")


def _engine_entry(obj: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in obj["metadata"]["managedFields"] if e["manager"] in ("kustomize-controller", "argocd-controller"))


def edit_quota(dump: dict[str, Any]) -> None:
    _quota(dump)["spec"]["hard"]["requests.cpu"] = "80"


def drop_label(dump: dict[str, Any]) -> None:
    del item(dump, "Namespace", "team-nlp")["metadata"]["labels"]["cost-center"]


def widen_role(dump: dict[str, Any]) -> None:
    item(dump, "Role", "gpu-workload-role", "team-nlp")["rules"][1]["verbs"].append("patch")


def repoint_local_queue(dump: dict[str, Any]) -> None:
    item(dump, "LocalQueue", "team-nlp-queue", "team-nlp")["spec"]["clusterQueue"] = "shadow-queue"


def shrink_cluster_queue(dump: dict[str, Any]) -> None:
    flavor = item(dump, "ClusterQueue", "gpu-cluster-queue")["spec"]["resourceGroups"][0]["flavors"][0]
    next(r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")["nominalQuota"] = "6"


def delete_network_policy(dump: dict[str, Any]) -> None:
    dump["items"].remove(item(dump, "NetworkPolicy", "deny-other-namespaces", "team-nlp"))


def keep_an_unrendered_field(dump: dict[str, Any]) -> None:
    """A quota key fleetgen rendered before and no longer does: the engine's field manager still owns it."""
    quota = _quota(dump)
    quota["spec"]["hard"]["requests.storage"] = "10Ti"
    _engine_entry(quota)["fieldsV1"]["f:spec"]["f:hard"]["f:requests.storage"] = {}


def leave_a_retired_namespace(dump: dict[str, Any]) -> None:
    stray = copy.deepcopy(item(dump, "Namespace", "team-nlp"))
    stray["metadata"]["name"] = "team-retired"
    dump["items"].append(stray)


PLANTED: dict[str, tuple[Callable[[dict[str, Any]], None], str, str, str | None]] = {
    # change: (plant, state, object, "path: rendered -> live" of its one field; None to check only the path's start)
    "quota edited": (edit_quota, "changed", "ResourceQuota team-nlp/gpu-quota", "spec.hard[requests.cpu]: 64 -> 80"),
    "label removed": (drop_label, "changed", "Namespace team-nlp", "metadata.labels.cost-center: cc-4780 -> (absent)"),
    "role widened": (widen_role, "changed", "Role team-nlp/gpu-workload-role", None),
    "local queue repointed": (
        repoint_local_queue,
        "changed",
        "LocalQueue team-nlp/team-nlp-queue",
        "spec.clusterQueue: gpu-cluster-queue -> shadow-queue",
    ),
    "cluster queue shrunk": (shrink_cluster_queue, "changed", "ClusterQueue gpu-cluster-queue", None),
    "object deleted": (delete_network_policy, "missing", "NetworkPolicy team-nlp/deny-other-namespaces", None),
    "field no longer rendered": (
        keep_an_unrendered_field,
        "changed",
        "ResourceQuota team-nlp/gpu-quota",
        "spec.hard[requests.storage]: (absent) -> 10Ti",
    ),
    "retired object left behind": (leave_a_retired_namespace, "extra", "Namespace team-retired", None),
}


def drift_of(dump: dict[str, Any], index: int = DEV) -> list[tuple[str, str, list[str]]]:
    drift = compare(rendered_dev(index), dump["items"])
    return [
        (o.state, o.title, [f"{f.path}: {show(f.old)} -> {show(f.new)}" for f in o.fields])
        for o in drift.missing + drift.extra + drift.changed
    ]


@pytest.mark.parametrize("variant", ["flux", "argocd-annotation"])
@pytest.mark.parametrize("change", PLANTED)
def test_each_planted_change_is_exactly_one_finding(variant: str, change: str) -> None:
    plant, state, title, line = PLANTED[change]
    dump = dump_of(variant)
    plant(dump)
    [(found_state, found_title, fields)] = drift_of(dump)
    assert (found_state, found_title) == (state, title)
    if state == "changed":
        assert len(fields) == 1, fields
        assert fields[0] == line if line else fields[0].startswith(("rules", "spec.resourceGroups")), fields


def test_a_field_nobody_renders_or_applies_is_not_drift() -> None:
    """The same quota key as above, added by another field manager (not the engine): the cluster's, not fleetgen's."""
    dump = dump_of("flux")
    quota = _quota(dump)
    quota["spec"]["hard"]["requests.storage"] = "10Ti"
    quota["metadata"]["managedFields"].append(
        {
            "manager": "kubectl-edit",
            "operation": "Update",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:hard": {"f:requests.storage": {}}}},
        }
    )
    assert drift_of(dump) == []


def test_training_eastus_with_cohorts_lending_limits_and_volcano_queues_shows_no_drift() -> None:
    """Its lending and borrowing limits and Volcano guarantees come back as strings (Quantities): equal by value."""
    dump = dump_of("flux", TRAINING)
    queue = item(dump, "Queue", "team-nlp")
    assert queue["spec"]["capability"]["cpu"] == "128" and queue["status"]["state"] == "Open"
    assert drift_of(dump, TRAINING) == []
    queue["spec"]["guarantee"]["resource"]["nvidia.com/gpu"] = "4"
    assert drift_of(dump, TRAINING) == [("changed", "Queue team-nlp", ["spec.guarantee.resource[nvidia.com/gpu]: 8 -> 4"])]


def test_quantities_compare_by_value_and_the_engine_owning_a_label_is_not_fleetgens() -> None:
    dump = dump_of("flux")
    _quota(dump)["spec"]["hard"]["requests.memory"] = "262144Mi"  # 256Gi, as another writer put it
    namespace = item(dump, "Namespace", "team-nlp")
    assert "f:kustomize.toolkit.fluxcd.io/name" in _engine_entry(namespace)["fieldsV1"]["f:metadata"]["f:labels"]
    assert drift_of(dump) == []
    _quota(dump)["spec"]["hard"]["requests.memory"] = "262143Mi"
    assert drift_of(dump) == [("changed", "ResourceQuota team-nlp/gpu-quota", ["spec.hard[requests.memory]: 256Gi -> 262143Mi"])]


def test_a_planted_change_through_the_real_drift_command(tmp_path: Path, cli_run: Run) -> None:
    dump = dump_of("argocd-annotation")
    edit_quota(dump)
    _quota(dump)["status"]["used"]["requests.nvidia.com/gpu"] = "3"  # above the 2 the render (and the cluster) has
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    (tmp_path / "live.yaml").write_text(yaml.safe_dump(dump))
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", "live.yaml", "--against", "fleet.yaml")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        "dev-eastus: 0 missing, 0 extra, 1 changed",
        "  ~ ResourceQuota team-nlp/gpu-quota",
        "      spec.hard[requests.cpu]: 64 -> 80",
        "warning: team nlp on dev-eastus: requests.nvidia.com/gpu quota of 2 is below its current use of 3; "
        "running pods stay, every new pod is rejected until use drops",
    ]


@pytest.mark.slow  # a dump of the whole cluster per example
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.sets(st.sampled_from(sorted(PLANTED)), min_size=1), variant=st.sampled_from(sorted(VARIANTS)))
def test_any_set_of_planted_changes_is_exactly_those_findings(changes: set[str], variant: str) -> None:
    """Changes planted together are found together: each object once, with the fields each change moved, and nothing else."""
    dump = copy.deepcopy(_dump(variant))
    for change in sorted(changes):
        PLANTED[change][0](dump)
    found = {(state, title): fields for state, title, fields in drift_of(dump)}
    assert set(found) == {(PLANTED[c][1], PLANTED[c][2]) for c in changes}
    for change in changes:
        _, state, title, line = PLANTED[change]
        if line is not None:
            assert line in found[(state, title)], (change, found[(state, title)])


@cache
def _dump(variant: str) -> dict[str, Any]:
    return dump_of(variant)

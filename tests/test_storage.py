"""Storage per team: claims of declared classes, per-class storage quotas that admit them, claims kept when dropped.

The property test generates a cluster's storage classes, a team's storage quota and its volumes, and
holds validate to an independent verdict; for every fleet it accepts, the ResourceQuota render writes
admits every claim render writes, counted as the API server's quota admission counts claims (each
claim's request against `<class>.storageclass.storage.k8s.io/requests.storage`, one against
`persistentvolumeclaims`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import FindingsError
from fleetgen.model import Quantity
from fleetgen.render.layout import cluster_objects
from tests.conftest import EXAMPLE, findings_of, git, line_of, replace_once

Run = Callable[..., subprocess.CompletedProcess[str]]
GiB = 1024**3
STORAGE = ".storageclass.storage.k8s.io/requests.storage"

HEAD = """apiVersion: fleetgen/v1alpha1
kind: Fleet
metadata: {name: mini, costCenter: cc-1000}
gitops: {engine: flux, repository: https://github.com/example/fleet}
platform: {gpuOperator: {version: v24.3.0}}
versionSets:
  v1: {kubernetes: 1.30.1, driver: 550.90.07, cuda: "12.6", cudnn: 9.3.0, containerd: "1.7"}
"""
POOL = {
    "name": "a100",
    "vmSize": "vm",
    "gpuModel": "A100",
    "gpusPerNode": 8,
    "cpuPerNode": 96,
    "memoryPerNode": "900Gi",
    "maxNodes": 2,
    "scaling": "on-demand",
    "labels": {"pool": "a100"},
}
MODES = ["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"]


@st.composite
def storage_fleets(draw: st.DrawFn) -> dict[str, Any]:
    classes = [
        {"name": f"sc{i}", "default": i == 0, "accessModes": draw(st.lists(st.sampled_from(MODES), min_size=1, max_size=3, unique=True))}
        for i in range(draw(st.integers(1, 3)))
    ]
    names = [c["name"] for c in classes] + ["undeclared"]
    storage = {name: f"{draw(st.integers(1, 40))}Gi" for name in draw(st.lists(st.sampled_from(names), max_size=3, unique=True))}
    volumes = []
    for v in range(draw(st.integers(0, 4))):
        volume: dict[str, Any] = {"name": f"vol{v}", "size": f"{draw(st.integers(1, 30))}Gi", "accessMode": draw(st.sampled_from(MODES))}
        chosen = draw(st.none() | st.sampled_from(names))
        if chosen is not None:
            volume["storageClass"] = chosen
        volumes.append(volume)
    placement: dict[str, Any] = {"volumes": volumes}
    claims = draw(st.none() | st.integers(0, 4))
    if claims is not None:
        placement["persistentVolumeClaims"] = claims
    cluster = {"name": "gpu-east", "region": "eastus", "environment": "dev", "versionSet": "v1", "nodePools": [POOL]}
    cluster["storageClasses"] = classes
    team = {"name": "vision", "group": "g", "costCenter": "cc-1", "project": "p", "quota": {"requests": {"gpu": 8}, "storage": storage}}
    team["clusters"] = {"gpu-east": placement}
    return {"clusters": [cluster], "teams": [team]}


def text_of(doc: dict[str, Any]) -> str:
    return HEAD + "".join(f"{key}: {json.dumps(value)}\n" for key, value in doc.items())


def expected_problems(doc: dict[str, Any]) -> bool:
    """An independent verdict: is anything about the storage wrong?"""
    classes = {c["name"]: c for c in doc["clusters"][0]["storageClasses"]}
    team = doc["teams"][0]
    placement, quota = team["clusters"]["gpu-east"], team["quota"]["storage"]
    if any(name not in classes for name in quota):
        return True
    totals: dict[str, Fraction] = {}
    for volume in placement["volumes"]:
        name = volume.get("storageClass", "sc0")  # sc0 is the default
        if name not in classes or volume["accessMode"] not in classes[name]["accessModes"]:
            return True
        totals[name] = totals.get(name, Fraction(0)) + Quantity(volume["size"]).value
    if any(name in quota and total > Quantity(quota[name]).value for name, total in totals.items()):
        return True
    return len(placement["volumes"]) > placement.get("persistentVolumeClaims", len(placement["volumes"]))


def admitted(objects: list[dict[str, Any]]) -> bool:
    """Whether the rendered ResourceQuota admits all the rendered claims, as quota admission counts them."""
    [quota] = [o for o in objects if o["kind"] == "ResourceQuota" and "scopeSelector" not in o["spec"]]
    hard = quota["spec"]["hard"]
    claims = [o for o in objects if o["kind"] == "PersistentVolumeClaim"]
    if "persistentvolumeclaims" in hard and len(claims) > int(hard["persistentvolumeclaims"]):
        return False
    used: dict[str, Fraction] = {}
    for claim in claims:
        key = claim["spec"]["storageClassName"] + STORAGE
        used[key] = used.get(key, Fraction(0)) + Quantity(claim["spec"]["resources"]["requests"]["storage"]).value
    return all(key not in hard or total <= Quantity(hard[key]).value for key, total in used.items())


@pytest.mark.slow
@settings(deadline=None)
@given(storage_fleets())
def test_validate_accepts_exactly_the_storage_whose_claims_the_quota_admits(doc: dict[str, Any]) -> None:
    try:
        fleet = load_fleet_text(text_of(doc).encode()).fleet
    except FindingsError as refused:
        assert expected_problems(doc), [f.message for f in refused.findings]
        return
    assert not expected_problems(doc)
    objects = [m.body for m in cluster_objects(fleet, 0)]
    assert admitted(objects)
    claims = [o for o in objects if o["kind"] == "PersistentVolumeClaim"]
    assert [c["metadata"]["name"] for c in claims] == [v["name"] for v in doc["teams"][0]["clusters"]["gpu-east"]["volumes"]]
    for claim in claims:
        assert claim["metadata"]["annotations"] == {"kustomize.toolkit.fluxcd.io/prune": "disabled"}
        kubernetes_validate.validate(claim, "1.30.1", strict=True)


EXAMPLE_FLEET = load_fleet_text(EXAMPLE.read_bytes()).fleet
DEV = next(i for i, c in enumerate(EXAMPLE_FLEET.clusters) if c.name == "dev-eastus")


def test_the_example_gives_data_science_its_claims_and_their_quota_on_dev() -> None:
    objects = {m.key: m.body for m in cluster_objects(EXAMPLE_FLEET, DEV)}
    datasets = objects[("PersistentVolumeClaim", "team-data-science", "datasets")]["spec"]
    checkpoints = objects[("PersistentVolumeClaim", "team-data-science", "checkpoints")]["spec"]
    assert datasets == {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "managed-csi-premium",  # the cluster's default class, written out
        "resources": {"requests": {"storage": "500Gi"}},
    }
    assert checkpoints["accessModes"] == ["ReadWriteMany"] and checkpoints["storageClassName"] == "azurefile-csi-premium"
    hard = objects[("ResourceQuota", "team-data-science", "gpu-quota")]["spec"]["hard"]
    assert hard["managed-csi-premium" + STORAGE] == "1Ti" and hard["azurefile-csi-premium" + STORAGE] == "2Ti"
    assert hard["persistentvolumeclaims"] == "6"
    assert admitted([body for key, body in objects.items() if key[1] == "team-data-science"])


def test_argo_cd_keeps_claims_too() -> None:
    text = replace_once(EXAMPLE.read_text(), "engine: flux ", "engine: argocd")
    fleet = load_fleet_text(text.encode()).fleet
    claims = [m.body for m in cluster_objects(fleet, DEV) if m.key[0] == "PersistentVolumeClaim"]
    assert claims and all(c["metadata"]["annotations"] == {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"} for c in claims)


@pytest.mark.parametrize(
    ("old", "new", "needle", "message"),
    [
        (
            "storageClass: azurefile-csi-premium, accessMode",
            "storageClass: premium-nfs, accessMode",
            "premium-nfs",
            "teams[0].clusters.dev-eastus.volumes[1].storageClass: storage class 'premium-nfs' is not one dev-eastus declares "
            "(it declares managed-csi-premium, azurefile-csi-premium)",
        ),
        (
            "{name: datasets, size: 500Gi}",
            "{name: datasets, size: 500Gi, accessMode: ReadWriteMany}",
            "accessMode: ReadWriteMany}",
            "teams[0].clusters.dev-eastus.volumes[0].accessMode: storage class managed-csi-premium on dev-eastus offers ReadWriteOnce, "
            "not ReadWriteMany",
        ),
        (
            "storage: {managed-csi-premium: 1Ti, azurefile-csi-premium: 2Ti}",
            "storage: {managed-csi-premium: 1Ti, azurefile-csi-premium: 512Gi}",
            "volumes:   # claims",
            "teams[0].clusters.dev-eastus.volumes: volumes of class azurefile-csi-premium on dev-eastus add up to more than the team's "
            "512Gi storage quota of it (checkpoints 1Ti)",
        ),
    ],
)
def test_validate_refuses_storage_the_cluster_cannot_give_at_its_line(old: str, new: str, needle: str, message: str) -> None:
    text = replace_once(EXAMPLE.read_text(), old, new)
    errors = findings_of(text)
    assert len(errors) == 1 and errors[0].startswith(f"{line_of(text, needle)}:") and errors[0].endswith(message), errors


def test_team_remove_and_a_dropped_volume_keep_the_claims_and_say_so(repo: Path, cli_run: Run) -> None:
    assert cli_run("render", cwd=repo).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rendered")
    text = (repo / "fleet.yaml").read_text()
    dropped = replace_once(
        text, "          - {name: datasets, size: 500Gi}                                              # the default class\n", ""
    )
    (repo / "fleet.yaml").write_text(dropped)
    report = json.loads(cli_run("diff", "--base", "HEAD", "--format", "json", cwd=repo).stdout)
    assert (
        "team data-science: claim(s) datasets stay in team-data-science on dev-eastus with their data: the GitOps engine does not "
        "prune claims; once their retention ends, run `kubectl delete pvc -n team-data-science datasets` there"
    ) in report["warnings"]
    (repo / "fleet.yaml").write_text(text)
    done = cli_run("team", "remove", "data-science", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert (
        "team data-science: namespace team-data-science stays on training-eastus, prod-inference-eastus, dev-eastus with everything "
        "in it (volumes, checkpoints) and its claims (dev-eastus: datasets, checkpoints): the GitOps engine does not prune team "
        "namespaces or their claims"
    ) in done.stderr
    assert not (repo / "clusters" / "dev-eastus" / "teams" / "data-science").exists()  # out of Git; the engine leaves the claims


def _job(cli_run: Run, *args: str) -> subprocess.CompletedProcess[str]:
    base = ["job", "new", "--fleet", str(EXAMPLE), "--team", "data-science", "--cluster", "dev-eastus", "--name", "ft"]
    return cli_run(*base, "--image", "contosoai.azurecr.io/trainer:v1", *args)


def test_job_new_mounts_the_teams_checkpoint_volume_when_asked(cli_run: Run) -> None:
    done = _job(cli_run, "--gpus", "1", "--volume", "checkpoints")
    assert done.returncode == 0, done.stderr
    import yaml

    [job] = [d for d in yaml.safe_load_all(done.stdout) if d]
    pod = job["spec"]["template"]["spec"]
    assert {"name": "checkpoints", "persistentVolumeClaim": {"claimName": "checkpoints"}} in pod["volumes"]
    assert {"name": "checkpoints", "mountPath": "/mnt/checkpoints"} in pod["containers"][0]["volumeMounts"]


def test_job_new_refuses_a_volume_the_team_lacks_or_one_node_mounts_for_many_pods(cli_run: Run) -> None:
    unknown = _job(cli_run, "--gpus", "1", "--volume", "scratch")
    assert unknown.returncode == 1
    assert (
        unknown.stderr.strip()
        == "fleetgen: --volume scratch: team data-science has no such volume on dev-eastus (it has: datasets, checkpoints)"
    )
    shared = _job(cli_run, "--gpus", "1", "--nodes", "2", "--volume", "datasets")
    assert shared.returncode == 1 and "--volume datasets: ReadWriteOnce, so one node mounts it at a time" in shared.stderr
    assert _job(cli_run, "--gpus", "1", "--nodes", "2", "--volume", "checkpoints").returncode == 0

"""GPU notebook profiles: one per shape a team may get, inside its quota and one node, with images the driver runs.

The values go through the real `helm template` of the pinned zero-to-jupyterhub chart in
tests/test_helm_charts.py (every value lands in the hub's configuration); here: the profiles against
the quota and the nodes on generated fleets, the hub's filter by group run as the hub runs it, the
objects each team namespace gets, and validate's refusals at their lines.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen.checks.admission import room
from fleetgen.checks.load import load_fleet_text
from fleetgen.model import Quantity, Version
from fleetgen.render.layout import cluster_objects
from fleetgen.render.notebooks import PROFILE_FILTER, hub_values
from fleetgen.render.platform import add_ons, helm_values
from fleetgen.upgrade.plan import PlanRefused, plan_upgrade
from fleetgen.validation.pod_security import violations
from tests.conftest import EXAMPLE, findings_of, line_of, replace_once

HEAD = """apiVersion: fleetgen/v1alpha1
kind: Fleet
metadata: {name: mini, costCenter: cc-1000}
gitops: {engine: flux, repository: https://github.com/example/fleet}
platform:
  gpuOperator: {version: v24.3.0}
  jupyterhub: {enabled: true, images: [{name: PyTorch, image: "nvcr.io/nvidia/pytorch:24.05-py3", cuda: "12.4"}]}
versionSets:
  v1: {kubernetes: 1.30.1, driver: 550.90.07, cuda: "12.6", cudnn: 9.3.0, containerd: "1.7"}
priorityClasses:
  - {name: exploratory, value: 1000, globalDefault: true, preemptionPolicy: Never}
capacity: {gpuOvercommit: 100}
"""


@st.composite
def notebook_fleets(draw: st.DrawFn) -> dict[str, Any]:
    pools = [
        {
            "name": f"p{i}",
            "vmSize": f"vm{i}",
            "gpuModel": draw(st.sampled_from(["A100", "T4"])),
            "gpusPerNode": draw(st.sampled_from([1, 2, 4, 8])),
            "cpuPerNode": draw(st.integers(4, 96)),
            "memoryPerNode": f"{draw(st.integers(16, 900))}Gi",
            "maxNodes": draw(st.integers(1, 4)),
            "scaling": "on-demand",
            "labels": {"pool": f"p{i}"},
        }
        for i in range(draw(st.integers(1, 3)))
    ]
    quota: dict[str, Any] = {"requests": {"gpu": draw(st.integers(1, 16))}}
    if draw(st.booleans()):
        quota["requests"]["cpu"] = draw(st.integers(1, 64))
    cluster = {"name": "lab", "region": "eastus", "environment": "dev", "versionSet": "v1", "nodePools": pools}
    team = {"name": "vision", "group": "g-1", "costCenter": "cc-1", "project": "p", "quota": quota, "clusters": {"lab": None}}
    return {"clusters": [cluster], "teams": [team]}


def _text(doc: dict[str, Any]) -> str:
    return HEAD + "".join(f"{key}: {json.dumps(value)}\n" for key, value in doc.items())


@settings(deadline=None)
@given(notebook_fleets())
def test_every_profile_fits_the_teams_quota_and_one_node_and_every_size_up_to_them_is_offered(doc: dict[str, Any]) -> None:
    fleet = load_fleet_text(_text(doc).encode()).fleet
    profiles = hub_values(fleet, 0)["singleuser"]["profileList"]
    pools = fleet.clusters[0].node_pools
    quota = doc["teams"][0]["quota"]["requests"]
    offered: dict[str, set[int]] = {}
    for profile in profiles:
        override = profile["kubespawner_override"]
        gpus = int(override["extra_resource_limits"]["nvidia.com/gpu"])
        model = profile["display_name"].split("x ", 1)[1]
        terms = [{e["key"]: e["values"][0] for e in term["matchExpressions"]} for term in override["node_affinity_required"]]
        holding = [p for p in pools if any(p.labels.items() >= term.items() for term in terms)]
        assert holding and all(p.gpu_model == model for p in holding), profile["slug"]
        assert gpus <= quota["gpu"] and holding, profile["slug"]
        assert all(p.gpus_per_node >= gpus for p in holding)  # one node holds the notebook
        for p in holding:  # its CPU and memory fit beside its share of a node after the system reserve
            assert override["cpu_limit"] <= room(p, "cpu") * gpus / p.gpus_per_node
            assert Quantity(override["mem_limit"] + "i").value <= room(p, "memory") * gpus / p.gpus_per_node
        assert override["cpu_limit"] <= quota.get("cpu", override["cpu_limit"])
        assert override["extra_labels"]["kueue.x-k8s.io/queue-name"] == "team-vision-queue"
        assert override["priority_class_name"] == "exploratory" and override["namespace"] == "team-vision"
        offered.setdefault(model, set()).add(gpus)
    for model in {p.gpu_model for p in pools if p.gpu_model}:
        most = min(max(p.gpus_per_node for p in pools if p.gpu_model == model), quota["gpu"])
        assert offered[model] == {n for n in range(1, most + 1) if n & (n - 1) == 0 or n == most}, (model, offered)


EXAMPLE_FLEET = load_fleet_text(EXAMPLE.read_bytes()).fleet
DEV = next(i for i, c in enumerate(EXAMPLE_FLEET.clusters) if c.name == "dev-eastus")


def test_only_clusters_that_enable_jupyterhub_get_it() -> None:
    for index, cluster in enumerate(EXAMPLE_FLEET.clusters):
        names = [name for name, _, _ in add_ons(EXAMPLE_FLEET, index)]
        assert ("jupyterhub" in names) == (cluster.name == "dev-eastus"), cluster.name
        kinds = {(m.key.kind, m.key.name) for m in cluster_objects(EXAMPLE_FLEET, index)}
        assert (("Role", "jupyterhub-spawner") in kinds) == (cluster.name == "dev-eastus")


def _hub_profiles(groups: set[str]) -> list[str]:
    """Run fleetgen's extra hub configuration as the hub does (after the chart has set profile_list) for a user in `groups`."""
    values = helm_values(EXAMPLE_FLEET, DEV, "jupyterhub", EXAMPLE_FLEET.platform_of(EXAMPLE_FLEET.clusters[DEV]).jupyterhub)
    config = types.SimpleNamespace(KubeSpawner=types.SimpleNamespace(profile_list=values["singleuser"]["profileList"]))
    z2jh = types.ModuleType("z2jh")
    z2jh.get_config = lambda key, default=None: values["custom"]["fleetgenTeams"] if key == "custom.fleetgenTeams" else default  # type: ignore[attr-defined]
    sys.modules["z2jh"] = z2jh
    try:
        scope: dict[str, Any] = {"c": config}
        exec(values["hub"]["extraConfig"]["fleetgen-team-profiles"], scope)
    finally:
        del sys.modules["z2jh"]
    user = types.SimpleNamespace(groups=[types.SimpleNamespace(name=g) for g in sorted(groups)])
    return [p["slug"] for p in config.KubeSpawner.profile_list(types.SimpleNamespace(user=user))]


def test_a_scientist_sees_the_profiles_of_their_teams_only() -> None:
    nlp = next(t for t in EXAMPLE_FLEET.teams if t.name == "nlp")
    robotics = next(t for t in EXAMPLE_FLEET.teams if t.name == "robotics")
    assert _hub_profiles({nlp.group}) == ["nlp-gpu-1-t4", "nlp-gpu-1-a10g"]
    assert _hub_profiles({nlp.group, robotics.group}) == ["nlp-gpu-1-t4", "nlp-gpu-1-a10g", "robotics-gpu-1-t4", "robotics-gpu-1-a10g"]
    assert _hub_profiles({"someone-else"}) == []
    assert "fleetgen" in PROFILE_FILTER  # the code is fleetgen's constant: no fleet.yaml text is spliced into it


def test_a_notebook_pod_is_one_the_restricted_namespace_admits() -> None:
    [profile, *_] = hub_values(EXAMPLE_FLEET, DEV)["singleuser"]["profileList"]
    override = profile["kubespawner_override"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "jupyter-ada", "namespace": override["namespace"]},
        "spec": {
            "securityContext": override["pod_security_context"],
            "containers": [
                {"name": "notebook", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "securityContext": override["container_security_context"]}
            ],
        },
    }
    assert violations("restricted", pod["metadata"], pod["spec"]) == []


def test_each_team_namespace_lets_the_hub_start_and_reach_notebooks() -> None:
    objects = {m.key: m.body for m in cluster_objects(EXAMPLE_FLEET, DEV)}
    binding = objects[("RoleBinding", "team-nlp", "jupyterhub-spawner")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "hub", "namespace": "jupyterhub"}]
    policy = objects[("NetworkPolicy", "team-nlp", "allow-jupyterhub")]["spec"]
    assert policy["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "jupyterhub"}}}]}]


def test_an_image_whose_cuda_the_driver_cannot_run_is_refused_at_its_line() -> None:
    text = replace_once(
        EXAMPLE.read_text(),
        'image: "nvcr.io/nvidia/pytorch:24.05-py3", cuda: "12.4"',
        'image: "nvcr.io/nvidia/pytorch:25.01-py3", cuda: "12.8"',
    )
    line = line_of(text, "pytorch:25.01-py3")
    assert findings_of(text) == [
        f"{line}:80: platform.jupyterhub.images[0].cuda: notebook image PyTorch 24.05 (nvcr.io/nvidia/pytorch:25.01-py3) on "
        "dev-eastus: driver 550.90.07 runs CUDA 12.8 only through minor-version compatibility (full support needs 570.26 or later; "
        "PTX JIT and newer features fail) [NVIDIA CUDA Toolkit Release Notes, Table 3]; a notebook needs full support"
    ]
    newer = replace_once(EXAMPLE.read_text(), 'cuda: "12.4"}\n      - {name: TensorFlow', 'cuda: "13.0"}\n      - {name: TensorFlow')
    [error] = findings_of(newer)
    assert "driver 550.90.07 is too old for CUDA 13.0: it needs 580.65.06 or later" in error


def test_an_image_from_outside_a_teams_registries_is_refused_at_its_line() -> None:
    text = replace_once(EXAMPLE.read_text(), '"nvcr.io/nvidia/tensorflow:24.05-tf2-py3"', '"docker.io/tensorflow/tensorflow:2.16.1-gpu"')
    assert findings_of(text) == [
        f"{line_of(text, 'docker.io/tensorflow')}:41: platform.jupyterhub.images[1].image: notebook image "
        "docker.io/tensorflow/tensorflow:2.16.1-gpu is not from the registries of data-science, nlp, robotics, whose notebooks on "
        "dev-eastus offer it"
    ]


def test_an_upgrade_plan_that_takes_the_driver_below_an_images_cuda_names_the_notebook_image() -> None:
    with pytest.raises(PlanRefused) as refused:
        plan_upgrade(EXAMPLE_FLEET, {"driver": Version("535.183.01")}, allow_downgrade=True)
    dev = [f.message for f in refused.value.findings if f.message.startswith("dev-eastus after driver")]
    assert any(
        "the notebook profiles' image PyTorch 24.05 (CUDA 12.4) would not run fully: driver 535.183.01 runs CUDA 12.4 only" in m
        for m in dev
    ), dev
    raised = plan_upgrade(EXAMPLE_FLEET, {"driver": Version("550.90.07")})  # up on production, nothing a profile needs breaks
    assert raised.waves and not [w for w in raised.warnings if "notebook" in w]


def test_a_team_whose_queue_on_the_hubs_cluster_is_a_multikueue_manager_queue_gets_no_profile_there() -> None:
    """Notebooks are pods, which a MultiKueue manager does not dispatch: a team feeding one on the hub's cluster has no
    node pools there to offer, and the other teams keep theirs (the render used to stop on the missing ClusterQueue)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    text = replace_once(
        text,
        "registries: [contosoai.azurecr.io, nvcr.io/nvidia]\n",
        "registries: [contosoai.azurecr.io, nvcr.io/nvidia]\n"
        "multiKueue:\n  manager: dev-eastus\n  queues:\n    - {name: fleet-a100, gpuModel: A100, workers: [training-eastus]}\n",
    )
    nlp = text.index("  - name: nlp\n")
    text = text[:nlp] + replace_once(
        text[nlp:], "      dev-eastus: {requests: {gpu: 2}}", "      dev-eastus: {requests: {gpu: 2}, queue: fleet-a100}"
    )
    fleet = load_fleet_text(text.encode()).fleet
    assert findings_of(text) == []
    slugs = [p["slug"] for p in hub_values(fleet, DEV)["singleuser"]["profileList"]]
    assert not any(s.startswith("nlp-") for s in slugs), slugs
    assert "robotics-gpu-1-t4" in slugs and "data-science-gpu-1-t4" in slugs, slugs

"""Node evidence on every distribution: the kubelet and runtime versions AKS, EKS, GKE, k3s, RKE2 and OpenShift nodes
report are read (live/node_versions.py), so the checks run on them; a version no reader knows is a finding
("cannot verify node X"), never a skipped check."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import EXAMPLE
from hypothesis import given
from hypothesis import strategies as st
from node_dumps import DISTRIBUTIONS, gfd_labels, nodes_dump, on_distribution

from fleetgen.checks.load import load_fleet_text
from fleetgen.live.node_checks import judge_nodes
from fleetgen.live.node_versions import kubelet_version, runtime_version
from fleetgen.live.nodes import nodes_in
from fleetgen.model import Version
from fleetgen.upgrade.evidence import progress

FLEET = load_fleet_text(EXAMPLE.read_bytes()).fleet
DEV = next(c for c in FLEET.clusters if c.name == "dev-eastus")  # Kubernetes 1.30.1, containerd 1.7, CUDA 12.6


def messages(dump: dict[str, Any]) -> list[str]:
    return [f.text for f in judge_nodes(FLEET, DEV, nodes_in(dump["items"])).findings]


def gpu_nodes(dump: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in dump["items"] if "nvidia.com/gpu.present" in o["metadata"]["labels"]]


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_each_distribution_s_nodes_are_read_and_judged(distribution: str) -> None:
    """The issue's case: a node on driver 520.61.05 (too old for CUDA 12.6) is reported on every distribution."""
    dump = on_distribution(nodes_dump(FLEET, "dev-eastus"), distribution, "1.30.1", "1.7.15")
    old = gpu_nodes(dump)[0]
    old["metadata"]["labels"].update(gfd_labels("520.61.05"))
    found = messages(dump)
    name = old["metadata"]["name"]
    assert f"t4-spot: driver 520.61.05, the version set says 550.90.07 ({name})" in found
    assert not any("cannot verify" in m or "kubelet" in m for m in found), found
    runtime = [m for m in found if "container runtime" in m]
    if distribution == "openshift":  # CRI-O, read as such: the version set's containerd is not what it runs
        assert runtime and all("cri-o://1.27.1" in m and "the version set says containerd 1.7" in m for m in runtime)
    else:
        assert runtime == []
        assert any("what it runs breaks the compatibility matrix: driver 520.61.05 is too old for CUDA 12.6" in m for m in found)


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_a_kubelet_on_another_patch_is_caught_on_each_distribution(distribution: str) -> None:
    dump = on_distribution(nodes_dump(FLEET, "dev-eastus"), distribution, "1.30.5", "1.7.15")
    assert any("kubelet 1.30.5, the version set says Kubernetes 1.30.1" in m for m in messages(dump))


@pytest.mark.parametrize(
    ("kubelet", "runtime", "unread"),
    [
        ("v1.30.1-custom", "containerd://1.7.15-1", "status.nodeInfo.kubeletVersion 'v1.30.1-custom'"),
        ("v1.31.0-rc.1", "containerd://1.7.15-1", "status.nodeInfo.kubeletVersion 'v1.31.0-rc.1'"),
        (None, "containerd://1.7.15-1", "status.nodeInfo.kubeletVersion none"),
        ("v1.30.1", "containerd://2.0.0-rc.1", "status.nodeInfo.containerRuntimeVersion 'containerd://2.0.0-rc.1'"),
        ("v1.30.1", "containerd", "status.nodeInfo.containerRuntimeVersion 'containerd'"),
    ],
)
def test_a_version_no_reader_knows_is_a_node_that_cannot_be_verified(kubelet: str | None, runtime: str, unread: str) -> None:
    dump = nodes_dump(FLEET, "dev-eastus")
    node = gpu_nodes(dump)[1]
    info = node["status"]["nodeInfo"]
    info.pop("kubeletVersion")
    info |= {"containerRuntimeVersion": runtime, **({"kubeletVersion": kubelet} if kubelet else {})}
    found = judge_nodes(FLEET, DEV, nodes_in(dump["items"])).findings
    name = node["metadata"]["name"]
    unverified = [f for f in found if f.kind == "unverified"]
    assert [(f.severity.value, f.text) for f in unverified] == [
        ("error", f"t4-spot: cannot verify node {name}: {unread} is not a version fleetgen reads")
    ]


RELEASES = st.tuples(st.integers(1, 3), st.integers(0, 99), st.integers(0, 999))


@given(release=RELEASES, distribution=st.sampled_from(sorted(DISTRIBUTIONS)))
def test_every_distribution_s_kubelet_form_reads_as_its_upstream_release(release: tuple[int, int, int], distribution: str) -> None:
    text = ".".join(map(str, release))
    kubelet, runtime = DISTRIBUTIONS[distribution]
    assert kubelet_version(kubelet.format(k=text)) == Version(text)
    read = runtime_version(runtime.format(c=text))
    assert read is not None and (read.version == Version(text) or read.name == "cri-o")


@given(release=RELEASES, tag=st.sampled_from(["-rc.1", "-alpha.2", "-beta.0", "-rc1", "+rc.2"]))
def test_a_pre_release_is_never_read_as_the_release(release: tuple[int, int, int], tag: str) -> None:
    text = ".".join(map(str, release)) + tag
    assert kubelet_version("v" + text) is None
    assert runtime_version("containerd://" + text) is None


@given(release=RELEASES, build=st.sampled_from([".0", "-dirty", "+", "-eks", "-gke", "+k3s", "-custom-1"]))
def test_a_kubelet_build_no_distribution_writes_is_not_read(release: tuple[int, int, int], build: str) -> None:
    assert kubelet_version("v" + ".".join(map(str, release)) + build) is None


def test_a_wave_waits_on_a_node_it_cannot_verify_and_says_which() -> None:
    objects = nodes_dump(FLEET, "dev-eastus")["items"]
    node = gpu_nodes({"items": objects})[0]
    node["status"]["nodeInfo"]["kubeletVersion"] = "v1.30.1-custom"
    report = progress(DEV, {"kubernetes": Version("1.30.1")}, objects)
    assert not report.done and report.unreadable == (node["metadata"]["name"],)
    assert f"cannot verify node {node['metadata']['name']}: a version it reports cannot be read" in report.text

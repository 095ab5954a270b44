"""What a cluster's nodes say they run, read from `kubectl get nodes -o yaml`: the evidence behind drift and upgrades.

A Node carries its own facts: `status.nodeInfo.kubeletVersion` and `containerRuntimeVersion`, the allocatable
`nvidia.com/gpu` the device plugin advertises, its taints, and the labels NVIDIA's components write. GPU Feature
Discovery (part of the GPU Operator) labels the installed driver (`nvidia.com/cuda.driver-version.full`, or its
major/minor/revision parts; older releases wrote `nvidia.com/cuda.driver.major` and so on), the newest CUDA that
driver runs (`nvidia.com/cuda.runtime-version.*`) and the GPU (`nvidia.com/gpu.product`, e.g.
NVIDIA-A100-SXM4-80GB). The GPU Operator's upgrade controller labels where each node is in a driver upgrade
(`nvidia.com/gpu-driver-upgrade-state`: upgrade-required ... upgrade-done, or upgrade-failed), and marks a node
whose image brought its own driver with `nvidia.com/gpu.deploy.driver=pre-installed`. Where one NVIDIADriver per
pool manages the driver, `nvidia.com/gpu-operator.driver.owner` names the resource that owns a node's driver, and
`nvidia.com/gpu-driver-upgrade.skip=true` keeps a node out of every driver upgrade.

Nodes are matched to node pools by the pool's labels (the most specific pool wins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetgen.live.node_versions import kubelet_version, runtime_version
from fleetgen.live.shapes import of_kind
from fleetgen.model import GPU_RESOURCE, Cluster, NodePool, Quantity, Version

DRIVER_LABEL = "nvidia.com/cuda.driver-version"
CUDA_LABEL = "nvidia.com/cuda.runtime-version"
OLD_DRIVER_LABEL, OLD_CUDA_LABEL = "nvidia.com/cuda.driver", "nvidia.com/cuda.runtime"  # GFD's deprecated names
PRODUCT_LABEL = "nvidia.com/gpu.product"
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
DEPLOY_DRIVER_LABEL = "nvidia.com/gpu.deploy.driver"
# The node image a node booted from: AKS writes its image version, EKS managed node groups the AMI id.
IMAGE_LABELS = ("kubernetes.azure.com/node-image-version", "eks.amazonaws.com/nodegroup-image")
UPGRADE_DONE, UPGRADE_FAILED = "upgrade-done", "upgrade-failed"
SKIP_UPGRADE_LABEL = "nvidia.com/gpu-driver-upgrade.skip"  # "true": the upgrade controller leaves the node's driver alone
DRIVER_OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"  # the NVIDIADriver that owns the node's driver


def retry_hint(nodes: str) -> str:
    """How a failed driver upgrade is tried again, once its cause is fixed.

    Both ways are NVIDIA's. The GPU Operator's documentation (gpu-driver-upgrades.rst, "Troubleshooting") restarts a
    node's upgrade by labelling it upgrade-required again. The upgrade state machine the operator runs
    (NVIDIA/k8s-operator-libs, pkg/upgrade: ProcessUpgradeFailedNodes) also moves an upgrade-failed node on by itself
    (to uncordon-required, or upgrade-done where the node was unschedulable before) as soon as its driver pod runs the
    driver daemon set's current revision and is Ready."""
    return (
        f"to retry, fix the cause, then kubectl label node {nodes} {UPGRADE_STATE_LABEL}=upgrade-required --overwrite; "
        "a node whose driver pod comes up Ready on the new driver moves on by itself"
    )


@dataclass(frozen=True)
class NodeFacts:
    """One Node as the evidence reads it; None where the node does not say."""

    name: str
    labels: dict[str, str]
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    gpus: int | None  # allocatable nvidia.com/gpu
    kubelet: Version | None  # the upstream release in kubeletVersion (node_versions.py); None when it cannot be read
    runtime: str | None  # containerRuntimeVersion as written, e.g. containerd://1.7.15-1
    driver: Version | None
    cuda: Version | None  # the newest CUDA the driver runs
    product: str | None
    upgrade_state: str | None
    ready: bool
    kubelet_text: str | None = None  # kubeletVersion as written, e.g. v1.30.1-eks-a737599

    @property
    def skips_upgrades(self) -> bool:
        return self.labels.get(SKIP_UPGRADE_LABEL) == "true"

    @property
    def has_gpus(self) -> bool:
        return bool(self.gpus) or self.product is not None or self.driver is not None

    @property
    def containerd(self) -> Version | None:
        """containerd's version from `containerd://1.7.15-1` (a distribution's build dropped); None for another runtime."""
        runtime = runtime_version(self.runtime)
        return runtime.version if runtime is not None and runtime.name == "containerd" else None

    @property
    def image(self) -> str | None:
        """The node image the node booted from, when its provider labels it."""
        return next((self.labels[k] for k in IMAGE_LABELS if k in self.labels), None)

    @property
    def image_driver(self) -> bool:
        """The node image brought the driver (the GPU Operator's driver is off for it)."""
        return self.labels.get(DEPLOY_DRIVER_LABEL) == "pre-installed"


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _version(text: Any) -> Version | None:
    try:
        return Version.parse(str(text)) if isinstance(text, str) and text else None
    except ValueError:
        return None


def _labelled_version(labels: dict[str, str], prefix: str, old: str) -> Version | None:
    """GFD's `<prefix>.full`, else its parts (`.major`, `.minor`, `.revision`), else the deprecated `<old>.*` names."""
    full = _version(labels.get(f"{prefix}.full"))
    if full is not None:
        return full
    for base, last in ((prefix, "revision"), (old, "rev")):
        major, minor, revision = (labels.get(f"{base}.{part}") for part in ("major", "minor", last))
        found = _version(".".join(p for p in (major, minor, revision) if p)) if major and minor else None
        if found is not None:
            return found
    return None


def _gpus(allocatable: dict[str, Any]) -> int | None:
    raw = allocatable.get(GPU_RESOURCE)
    if raw is None:
        return None
    try:
        return int(Quantity.parse(str(raw)).value)
    except (ValueError, TypeError):
        return None


def node_facts(node: dict[str, Any]) -> NodeFacts:
    meta, spec, status = _map(node.get("metadata")), _map(node.get("spec")), _map(node.get("status"))
    labels = {str(k): str(v) for k, v in _map(meta.get("labels")).items()}
    taints = tuple(
        (str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", ""))) for t in _list(spec.get("taints")) if isinstance(t, dict)
    )
    info = _map(status.get("nodeInfo"))
    conditions = _list(status.get("conditions"))
    ready = any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    runtime, kubelet = info.get("containerRuntimeVersion"), info.get("kubeletVersion")
    return NodeFacts(
        name=str(meta.get("name", "")),
        labels=labels,
        taints=taints,
        gpus=_gpus(_map(status.get("allocatable"))),
        kubelet=kubelet_version(kubelet),
        runtime=runtime if isinstance(runtime, str) else None,
        driver=_labelled_version(labels, DRIVER_LABEL, OLD_DRIVER_LABEL),
        cuda=_labelled_version(labels, CUDA_LABEL, OLD_CUDA_LABEL),
        product=labels.get(PRODUCT_LABEL),
        upgrade_state=labels.get(UPGRADE_STATE_LABEL),
        ready=ready,
        kubelet_text=kubelet if isinstance(kubelet, str) else None,
    )


def nodes_in(objects: list[dict[str, Any]]) -> list[NodeFacts]:
    """The Nodes of a dump as live_objects read it (their shape checked; other objects are ignored), by name."""
    return sorted((node_facts(o) for o in of_kind(objects, "Node")), key=lambda n: n.name)


def pool_of(cluster: Cluster, node: NodeFacts) -> NodePool | None:
    """The node pool whose labels the node carries (the one with the most labels when several do)."""
    fits = [p for p in cluster.node_pools if all(node.labels.get(k) == v for k, v in p.labels.items())]
    return max(fits, key=lambda p: len(p.labels)) if fits else None


def is_model(product: str, model: str) -> bool:
    """Whether GFD's product (NVIDIA-A100-SXM4-80GB, Tesla-T4, NVIDIA-A10G-SHARED) names the pool's GPU model."""
    return model.upper() in product.upper().replace("_", "-").split("-")

"""`kubectl get nodes -o yaml` of an AKS cluster with the NVIDIA GPU Operator, as its nodes report themselves.

Each node of a pool carries what AKS writes (agentpool labels, instance type, region and zone, the node image
version, `status.nodeInfo` with kubeletVersion `v1.30.1` and containerRuntimeVersion `containerd://1.7.15-1`),
what Node Feature Discovery writes (`feature.node.kubernetes.io/pci-10de.present`), what GPU Feature Discovery
writes (`nvidia.com/cuda.driver-version.{full,major,minor,revision}`, `nvidia.com/cuda.runtime-version.*`, the
deprecated `nvidia.com/cuda.driver.*`, `nvidia.com/gpu.product`, count, memory, family, compute capability,
`nvidia.com/gfd.timestamp`), the GPU Operator's `nvidia.com/gpu.deploy.*` and
`nvidia.com/gpu-driver-upgrade-state=upgrade-done`, the pool's own labels and taints, and the allocatable
`nvidia.com/gpu` the device plugin advertises.
A CPU-only pool's nodes carry none of the GPU stack's labels; a GPU model on a VM size the table below lacks reports
what that model reports elsewhere.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import yaml

from fleetgen.model import Cluster, Fleet, NodePool

# GFD's nvidia.com/gpu.product for each GPU model on the example's VM sizes, as nvidia-smi names them
PRODUCTS = {
    ("T4", "Standard_NC4as_T4_v3"): ("Tesla-T4", "15360", "turing", "7", "5"),
    ("A10G", "Standard_NV36ads_A10_v5"): ("NVIDIA-A10G", "23028", "ampere", "8", "6"),
    ("A100", "Standard_NC24ads_A100_v4"): ("NVIDIA-A100-80GB-PCIe", "81920", "ampere", "8", "0"),
    ("A100", "Standard_ND96asr_v4"): ("NVIDIA-A100-SXM4-40GB", "40960", "ampere", "8", "0"),
    ("H100", "Standard_ND96isr_H100_v5"): ("NVIDIA-H100-80GB-HBM3", "81559", "hopper", "9", "0"),
    ("B200", "Standard_ND128isr_B200_v6"): ("NVIDIA-B200", "183359", "blackwell", "10", "0"),
}
# what GFD reports for a GPU model on a VM size the table above lacks (the generated fleets pair models and sizes freely)
PRODUCT_OF_MODEL = {
    "T4": PRODUCTS[("T4", "Standard_NC4as_T4_v3")],
    "A10G": PRODUCTS[("A10G", "Standard_NV36ads_A10_v5")],
    "L4": ("NVIDIA-L4", "23034", "ada-lovelace", "8", "9"),
    "A100": PRODUCTS[("A100", "Standard_NC24ads_A100_v4")],
    "H100": PRODUCTS[("H100", "Standard_ND96isr_H100_v5")],
    "A30": ("NVIDIA-A30", "24576", "ampere", "8", "0"),
    "H200": ("NVIDIA-H200", "143771", "hopper", "9", "0"),
    "GH200": ("NVIDIA-GH200-480GB", "97871", "hopper", "9", "0"),
    "B200": PRODUCTS[("B200", "Standard_ND128isr_B200_v6")],
    "GB200": ("NVIDIA-GB200", "189471", "blackwell", "10", "0"),
}
CUDA_OF_DRIVER = {
    "520": "11.8",
    "535": "12.2",
    "550": "12.4",
    "555": "12.5",
    "560": "12.6",
    "565": "12.7",
    "570": "12.8",
    "575": "12.9",
    "580": "13.0",
    "590": "13.1",
    "595": "13.2",
    "610": "13.2",
}


def gfd_labels(driver: str) -> dict[str, str]:
    """GPU Feature Discovery's driver and CUDA labels for a driver version (the CUDA it runs is its branch's)."""
    major, minor, revision = driver.split(".")
    cuda = CUDA_OF_DRIVER[major]
    cuda_major, cuda_minor = cuda.split(".")
    return {
        "nvidia.com/cuda.driver-version.full": driver,
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": revision,
        "nvidia.com/cuda.driver.major": major,
        "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": revision,
        "nvidia.com/cuda.runtime-version.full": cuda,
        "nvidia.com/cuda.runtime-version.major": cuda_major,
        "nvidia.com/cuda.runtime-version.minor": cuda_minor,
        "nvidia.com/cuda.runtime.major": cuda_major,
        "nvidia.com/cuda.runtime.minor": cuda_minor,
    }


def gpu_labels(fleet: Fleet, cluster: Cluster, pool: NodePool, driver: str) -> dict[str, str]:
    """What Node Feature Discovery, GPU Feature Discovery and the GPU Operator write on a GPU node of the pool running
    `driver` (or the pool's own driver); with one NVIDIADriver per pool, the name of the one that owns the node's driver."""
    product, memory, family, cc_major, cc_minor = PRODUCTS.get((pool.gpu_model, pool.vm_size)) or PRODUCT_OF_MODEL[str(pool.gpu_model)]
    labels = {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gfd.timestamp": "1732609124",
        "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
        "nvidia.com/gpu.compute.major": cc_major,
        "nvidia.com/gpu.compute.minor": cc_minor,
        "nvidia.com/gpu.count": str(pool.gpus_per_node),
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.dcgm": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.driver": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.node-status-exporter": "true",
        "nvidia.com/gpu.deploy.operator-validator": "true",
        "nvidia.com/gpu.family": family,
        "nvidia.com/gpu.memory": memory,
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/mig.capable": "true" if pool.gpu_model in ("A100", "H100") else "false",
        **gfd_labels(str(pool.driver.version) if pool.driver.version else driver),
    }
    if fleet.platform_of(cluster).gpu_operator.driver_crd:
        labels["nvidia.com/gpu-operator.driver.owner"] = pool.name
    return labels


def node(fleet: Fleet, cluster_name: str, pool_name: str, number: int, *, driver: str | None = None) -> dict[str, Any]:
    """One GPU node of the pool, running what its version set says (or `driver`); a pool with a driver of its own runs
    that, and where the GPU Operator manages the driver per pool the node carries the owning NVIDIADriver's name."""
    cluster = next(c for c in fleet.clusters if c.name == cluster_name)
    pool = next(p for p in cluster.node_pools if p.name == pool_name)
    row = fleet.version_sets[cluster.version_set]
    agentpool = pool.name.replace("-", "")[:12]
    name = f"aks-{agentpool}-31245789-vmss{number:06d}"
    zone = f"{cluster.region}-{number % 3 + 1}"
    labels = {
        "agentpool": agentpool,
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": pool.vm_size,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.azure.com/agentpool": agentpool,
        "kubernetes.azure.com/cluster": f"MC_rg-ai-platform_{cluster.name}_{cluster.region}",
        "kubernetes.azure.com/mode": "user",
        "kubernetes.azure.com/node-image-version": "AKSUbuntu-2204gen2containerd-202411.12.0",
        "kubernetes.azure.com/os-sku": "Ubuntu",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": pool.vm_size,
        "topology.kubernetes.io/region": cluster.region,
        "topology.kubernetes.io/zone": zone,
    }
    resources = {"cpu": str(pool.cpu_per_node), "memory": f"{pool.memory_per_node.value // 1024}Ki", "pods": "110"}
    if pool.gpu_model is not None and pool.gpus_per_node:  # a CPU-only pool's nodes carry none of the GPU stack's labels
        labels |= gpu_labels(fleet, cluster, pool, driver or str(row.driver))
        resources["nvidia.com/gpu"] = str(pool.gpus_per_node)
    labels |= pool.labels
    taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"0d4b2a6e-5c1f-4a0e-9b7d-{number:012d}",
            "resourceVersion": str(912_000 + number),
            "creationTimestamp": "2026-11-20T06:12:41Z",
            "labels": dict(sorted(labels.items())),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "nfd.node.kubernetes.io/feature-labels": "pci-10de.present",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "providerID": f"azure:///subscriptions/0000/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/"
            f"aks-{agentpool}-31245789-vmss/virtualMachines/{number}",
            **({"taints": taints} if taints else {}),
        },
        "status": {
            "addresses": [{"type": "InternalIP", "address": f"10.224.0.{10 + number}"}, {"type": "Hostname", "address": name}],
            "allocatable": resources,
            "capacity": {**resources, "ephemeral-storage": "129886128Ki"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"},
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": f"containerd://{row.containerd}.15-1"
                if len(row.containerd.parts) == 2
                else f"containerd://{row.containerd}",
                "kernelVersion": "5.15.0-1074-azure",
                "kubeProxyVersion": f"v{row.kubernetes}",
                "kubeletVersion": f"v{row.kubernetes}",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.5 LTS",
            },
        },
    }


def nodes_dump(fleet: Fleet, cluster_name: str, *, driver: str | None = None) -> dict[str, Any]:
    """Every pool's nodes: its minNodes, at least two where maxNodes allows (and a system pool's CPU node, no GPU)."""
    cluster = next(c for c in fleet.clusters if c.name == cluster_name)
    items, number = [], 0
    for pool in cluster.node_pools:
        for _ in range(max(pool.min_nodes, min(2, pool.max_nodes))):
            items.append(node(fleet, cluster_name, pool.name, number, driver=driver))
            number += 1
    system = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "aks-system-31245789-vmss000000",
            "labels": {"kubernetes.azure.com/mode": "system", "kubernetes.io/os": "linux", "agentpool": "system"},
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": "3860m", "memory": "12880468Ki", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kubeletVersion": "v1.30.1", "containerRuntimeVersion": "containerd://1.7.15-1"},
        },
    }
    return {"apiVersion": "v1", "kind": "List", "items": [system, *items], "metadata": {"resourceVersion": ""}}


def evidence_of(fleet: Fleet, cluster_name: str, *, driver: str | None = None) -> list[dict[str, Any]]:
    """`kubectl get nodes,configmaps -A -o yaml` of a cluster that runs what `fleet` says: its Nodes and the
    fleet-versions ConfigMap its sync applied."""
    from fleetgen.render.kueue import fleet_versions

    index = next(i for i, c in enumerate(fleet.clusters) if c.name == cluster_name)
    configmap = fleet_versions(fleet, fleet.clusters[index], ("clusters", index))[0].body
    return [*nodes_dump(fleet, cluster_name, driver=driver)["items"], configmap]


def wave_evidence(fleet: Fleet, number: int) -> dict[str, list[dict[str, Any]]]:
    """Evidence that wave `number` of the fleet's upgrade is done: each of its clusters on what fleet.yaml now says."""
    assert fleet.upgrade is not None
    return {name: evidence_of(fleet, name) for name in fleet.upgrade.waves[number - 1].clusters}


def verified(text: str, number: int, at: datetime.datetime) -> str:
    """fleet.yaml after `fleetgen upgrade verify --wave N` saw the wave's clusters done at `at`."""
    from fleetgen.checks.load import load_fleet_text
    from fleetgen.upgrade.verify import verify_wave

    loaded = load_fleet_text(text.encode())
    return verify_wave(loaded, number, wave_evidence(loaded.fleet, number), at)[0]


def evidence_files(folder: Path, fleet: Fleet, number: int) -> list[str]:
    """The wave's evidence written as dumps in `folder`, as `--live CLUSTER=FILE` arguments."""
    args = []
    for name, objects in wave_evidence(fleet, number).items():
        path = folder / f"{name}-evidence.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
        args += ["--live", f"{name}={path}"]
    return args


# How each distribution's Nodes write their versions (status.nodeInfo), for Kubernetes K and containerd C: EKS
# (Bottlerocket and AL2023 alike), GKE, k3s and RKE2 (whose containerd is k3s' build), OpenShift (CRI-O, not
# containerd), AKS as node() writes it. Forms as `kubectl get nodes -o yaml` shows them on each.
DISTRIBUTIONS = {
    "aks": ("v{k}", "containerd://{c}-1"),
    "eks": ("v{k}-eks-a737599", "containerd://{c}"),
    "gke": ("v{k}-gke.1156000", "containerd://{c}"),
    "k3s": ("v{k}+k3s1", "containerd://{c}-k3s1"),
    "rke2": ("v{k}+rke2r1", "containerd://{c}-k3s1"),
    "openshift": ("v{k}+4fab27b", "cri-o://1.27.1-6.rhaos4.14.git38e9d75.el9"),
}


def on_distribution(dump: dict[str, Any], distribution: str, kubernetes: str, containerd: str) -> dict[str, Any]:
    """`dump` with every Node's kubelet and runtime versions written as `distribution` writes them."""
    kubelet, runtime = DISTRIBUTIONS[distribution]
    for item in (o for o in dump["items"] if o["kind"] == "Node"):
        info = item["status"]["nodeInfo"]
        info["kubeletVersion"] = info["kubeProxyVersion"] = kubelet.format(k=kubernetes)
        info["containerRuntimeVersion"] = runtime.format(c=containerd)
    return dump

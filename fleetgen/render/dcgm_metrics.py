"""The DCGM exporter's metrics list: every field a rendered alert or panel reads, and the usual health fields.

The exporter exports only the fields its collectors file lists, and the file the GPU Operator
ships leaves the ECC counters commented out: a double-bit ECC alert on the default list can never
fire. So fleetgen renders its own list as a ConfigMap in the operator's namespace and names it in
the chart's `dcgmExporter.config.name`. The operator mounts key `dcgm-metrics.csv` of that
ConfigMap at `/etc/dcgm-exporter/dcgm-metrics.csv`; `DCGM_EXPORTER_COLLECTORS` points the exporter
there. The chart's `env` list is replaced as a whole by a value, so the exporter's listen address
and Kubernetes mapping (which adds the workload's namespace and pod) are set again beside it.

Time-sliced pools: the exporter gives a GPU's series the namespace and pod of one pod holding it,
so of the pods sharing a time-sliced GPU only one (whichever the kubelet lists last, scrape by
scrape) would carry labels, and a pod holding `nvidia.com/gpu.shared` none at all: the exporter
maps only nvidia.com/gpu, nvidia.com/mig-* and the names in NVIDIA_RESOURCE_NAMES. On a cluster
with time-sliced pools fleetgen sets KUBERNETES_VIRTUAL_GPUS (dcgm-exporter 4.1.1-4.0.3 on, GPU
Operator 25.3 on): every pod sharing the GPU gets its own copy of the GPU's series, with a `vgpu`
label (the replica); and NVIDIA_RESOURCE_NAMES=nvidia.com/gpu.shared where a pool renames its
shares. The values are the whole GPU's in every copy (DCGM sees one device). Up to 4.5.3-4.8.2
the exporter in that mode drops the series of a GPU no pod holds while another GPU on the node is
held (dcgm-exporter pkg transformation/kubernetes.go, fixed in #594).

The ConfigMap renders with the alerts (observability.yaml); until it exists the operator keeps the
exporter waiting, then starts it with this list.
"""

from __future__ import annotations

from typing import Any

from fleetgen.errors import FieldPath
from fleetgen.model import Cluster, Fleet
from fleetgen.model.partitioning import SHARED, slice_resource
from fleetgen.model.platform import GpuOperator
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.provenance import NOWHERE, Recorder

NAME = "fleetgen-dcgm-metrics"
KEY = "dcgm-metrics.csv"  # the key the operator mounts (its MetricsConfigFileName)
MOUNTED_AT = "/etc/dcgm-exporter/" + KEY

# (DCGM field, Prometheus type, help). Profiling fields (DCGM_FI_PROF_*) are what MIG instances report utilisation in.
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data."),
)


def collectors_csv() -> str:
    """The collectors file: a header comment, then one `field, type, help` line per field."""
    lines = ["# DCGM field, Prometheus metric type, help message (rendered by fleetgen)"]
    lines += [f"{field}, {kind}, {help_text}" for field, kind, help_text in FIELDS]
    return "\n".join(lines) + "\n"


def exporter_values(cluster: Cluster) -> dict[str, Any]:
    """The chart's dcgmExporter values that make the exporter read fleetgen's list (and label every pod of a shared GPU)."""
    env = [
        {"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
        {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
        {"name": "DCGM_EXPORTER_COLLECTORS", "value": MOUNTED_AT},
    ]
    sliced = [pool.partitioning.time_slicing for pool in cluster.node_pools if pool.partitioning.time_slicing is not None]
    if sliced:
        env.append({"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"})
    if any(sharing.rename for sharing in sliced):
        env.append({"name": "NVIDIA_RESOURCE_NAMES", "value": slice_resource(SHARED)})
    return {"config": {"name": NAME}, "env": env}


def metrics_config_map(fleet: Fleet, operator: GpuOperator, at: FieldPath, why: Recorder = NOWHERE) -> Manifest:
    """The list as a ConfigMap in the namespace of the GPU Operator that fleetgen installs (written at `at`)."""
    body = k8s_object("v1", "ConfigMap", NAME, fleet_labels(fleet), namespace=operator.namespace, data={KEY: collectors_csv()})
    if why.on:
        why.meta(
            body,
            prov.default("the DCGM exporter's metrics list: the fields fleetgen's alerts read"),
            prov.fleet_labels(),
            (*at, "namespace"),
        )
        why.set(body, ("data",), prov.default("every DCGM field a rendered alert or panel reads, ECC counters included"))
    return Manifest(body, at)

"""A GPU node pool: the nodes one VM size brings, what they offer, and how they scale and are bought."""

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from fleetgen.model.partitioning import Partitioning
from fleetgen.model.platform import DriverUpgrade
from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Identifier, Int, unique_by
from fleetgen.model.types import DnsLabel, LabelKey, LabelValue, Quantity, Text, Token, Version

GPU_RESOURCE = "nvidia.com/gpu"
_GPU_MODEL = r"^[A-Za-z0-9][A-Za-z0-9-]*$"


class Taint(Spec):
    key: LabelKey
    """Taint key on the pool's nodes."""
    value: LabelValue = ""
    """Taint value; empty tolerates any value."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """Taint effect."""


class PoolDriver(Spec):
    """The driver of one GPU node pool, where the GPU Operator manages the driver per pool (platform.gpuOperator.driverCrd)."""

    version: Version | None = None
    """The pool's own driver, e.g. 595.91.07 on a B200 pool beside A100 pools on the cluster's; the version set's when
    left out. Checked for the pool's GPU, the cluster's CUDA and notebook images, and the operator release."""
    upgrade: DriverUpgrade | None = None
    """How a new driver rolls over this pool's nodes: only the fields written here replace platform.gpuOperator.driverUpgrade."""
    pod_labels: dict[LabelKey, LabelValue] = {}
    """Labels on the pool's driver pods (its NVIDIADriver's `labels`), e.g. what a team's monitoring selects. A change of
    these or of podAnnotations alone restarts the driver pods in place, without draining a node (GPU Operator v26.7)."""
    pod_annotations: dict[LabelKey, Text] = {}
    """Annotations on the pool's driver pods (its NVIDIADriver's `annotations`); changing them alone restarts the driver
    pods in place, without draining a node."""
    canary: Bool = False
    """true: a new driver of the cluster's version set reaches this pool first, and the cluster's other GPU pools only
    after it has soaked (one pool a cluster; the smallest pool by GPUs when none is)."""


class NodePool(Spec):
    name: DnsLabel
    """Node pool name; also the name of its Kueue ResourceFlavor."""
    vm_size: Identifier
    """Cloud VM SKU, e.g. Standard_NC24ads_A100_v4."""
    vm_family: Identifier | None = None
    """The VM family whose cloud quota the pool counts against (standardNDSH100v5Family); fleetgen's table of VM sizes when
    left out."""
    vcpus_per_node: Int | None = Field(default=None, ge=1, le=1024)
    """vCPUs of one VM, as the cloud's quota counts them; fleetgen's table of VM sizes when left out."""
    gpu_model: Annotated[Token, Field(pattern=_GPU_MODEL), WithJsonSchema({"type": "string", "pattern": _GPU_MODEL})] | None = None
    """GPU model of the nodes: T4, A10G, A100, L4, H100, H200, B200 ...; left out for a CPU-only pool (gpusPerNode 0)."""
    gpus_per_node: Int = Field(ge=0, le=64)
    """GPUs on each node (nvidia.com/gpu); 0 for a CPU-only pool."""
    gpu_memory: Int | None = Field(default=None, ge=1, le=4096)
    """GPU memory in GB as NVIDIA names the product (A100 40 or 80, H100 80 or 94): picks the MIG profiles of the size."""
    cpu_per_node: Quantity
    """CPU a node offers to workloads (allocatable), e.g. 64."""
    memory_per_node: Quantity
    """Memory a node offers to workloads (allocatable), e.g. 256Gi."""
    min_nodes: Int = Field(default=0, ge=0, le=5000)
    """Fewest nodes the autoscaler keeps."""
    max_nodes: Int = Field(ge=1, le=5000)
    """Most nodes the pool can grow to; capacity and Kueue quotas count these."""
    scaling: Literal["spot", "on-demand", "reserved"]
    """How the nodes are bought: spot (preemptible), on-demand, or reserved capacity."""
    labels: dict[LabelKey, LabelValue] = Field(min_length=1)
    """Node labels that select this pool's nodes; Kueue's ResourceFlavor uses them."""
    taints: tuple[Taint, ...] = ()
    """Taints on the pool's nodes; workloads admitted to its flavor get matching tolerations."""
    topology: Annotated[tuple[LabelKey, ...], unique_by()] = ()
    """Node labels of the pool's network topology, broadest first (e.g. block, rack, kubernetes.io/hostname): a Kueue Topology."""
    partitioning: Partitioning = Partitioning()
    """How the pool's GPUs are shared: whole (left out), time-sliced or cut into MIG slices; the pool's labels must select it."""
    driver: PoolDriver = PoolDriver()
    """The pool's driver and its upgrade policy (NVIDIADriver per node pool)."""

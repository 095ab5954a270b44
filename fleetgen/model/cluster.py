"""A cluster of the fleet: where it runs, its row of the compatibility matrix, its node pools and queues."""

from typing import Annotated, Literal

from pydantic import Field

from fleetgen.model.alerts import AlertName, AlertOverride
from fleetgen.model.node_pool import NodePool
from fleetgen.model.platform import Platform
from fleetgen.model.sharing import Cohort, Queue, Volcano
from fleetgen.model.spec import Spec
from fleetgen.model.storage import StorageClass
from fleetgen.model.strict import unique_by
from fleetgen.model.types import DnsLabel, DnsSubdomain, HandWrittenPath, Line, Version


class VersionSet(Spec):
    kubernetes: Version
    """Kubernetes version of the cluster's control plane and nodes, e.g. 1.29.4."""
    driver: Version
    """NVIDIA GPU driver version baked into the node image, e.g. 550.54.15."""
    cuda: Version
    """CUDA toolkit version of the platform's images, e.g. 12.4."""
    cudnn: Version
    """cuDNN version, e.g. 9.1.0."""
    containerd: Version
    """containerd version of the nodes, e.g. 1.7."""
    gpu_operator: Version | None = None
    """The NVIDIA GPU Operator chart release that installs this row's driver, e.g. v24.6.1 (a cluster's own
    platform.gpuOperator.version wins; the fleet's platform.gpuOperator.version when left out). Upgrades move it
    with the driver, wave by wave: one Helm upgrade of the operator changes both."""


class Cluster(Spec):
    name: DnsLabel
    """Cluster name; its folder is clusters/<name>/."""
    region: DnsLabel
    """Cloud region, e.g. eastus."""
    environment: Literal["dev", "staging", "production"]
    """Environment; labels every object on the cluster and decides upgrade order."""
    purpose: Line = ""
    """What the cluster is for; shown in reports."""
    version_set: DnsLabel
    """Name of an entry of versionSets: the cluster's row of the compatibility matrix."""
    dr_partner: DnsLabel | None = None
    """The cluster that takes over this one's traffic in a disaster (both name each other)."""
    node_pools: Annotated[tuple[NodePool, ...], unique_by("name")] = Field(min_length=1)
    """GPU node pools; each becomes a Kueue ResourceFlavor."""
    queues: Annotated[tuple[Queue, ...], unique_by("name")] = (Queue(),)
    """Kueue ClusterQueues; one queue over all node pools when left out. A team's LocalQueue feeds the first unless it names another."""
    cohorts: Annotated[tuple[Cohort, ...], unique_by("name")] = ()
    """Kueue Cohorts the queues share quota in (a queue may also name a cohort not listed here)."""
    volcano: Volcano | None = None
    """Volcano as the gang scheduler for distributed training, on the node pools Kueue does not hand out."""
    alerts: dict[AlertName, AlertOverride] = {}
    """Changes to the fleet's alerts on this cluster."""
    platform: Platform | None = None
    """Add-on settings that differ on this cluster: only the fields written here replace the fleet's."""
    image_pull_secret: DnsSubdomain | None = None
    """The Secret (type kubernetes.io/dockerconfigjson) the operator provides in each team namespace here; put on the
    team's default ServiceAccount, so every pod pulls with it. Left out: nodes pull with the cloud's node identity
    (e.g. AKS's kubelet identity with AcrPull)."""
    storage_classes: Annotated[tuple[StorageClass, ...], unique_by("name")] = ()
    """StorageClasses the cluster has, for the teams' volumes and storage quotas."""
    extra_resources: Annotated[tuple[HandWrittenPath, ...], unique_by()] = ()
    """Hand-written kustomize files or folders in clusters/<name>/ that its kustomization lists; fleetgen never writes or removes them."""

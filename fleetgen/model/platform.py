"""The platform add-ons every GPU cluster needs, each a Helm chart pinned to one version.

The fleet declares them once (`platform:`); a cluster may change any field (`clusters[].platform:`),
and only the fields it writes replace the fleet's. The GPU Operator's driver version is not set
here: it is the cluster's version set's `driver`, so the compatibility matrix is what runs.
"""

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, PlainValidator, WithJsonSchema

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Int, unique_by
from fleetgen.model.types import DnsLabel, Token, Version

ChartRepository = Token  # an https:// Helm repository or an oci:// registry path
_REPOSITORY = r"^(https://|oci://)[^\s/]+(/\S*)?$"
_PINNED = r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$"  # one exact version: no ranges, no "latest"
_CHART = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class AddOn(Spec):
    enabled: Bool = True
    """false leaves the add-on out (the cluster runs it some other way)."""
    repository: Token = Field(default="", pattern=_REPOSITORY)
    """Helm repository (https://...) or OCI registry path (oci://...) that serves the chart."""
    chart: Token = Field(default="", pattern=_CHART)
    """Chart name in that repository."""
    version: Token = Field(default="", pattern=_PINNED)
    """The chart version, pinned exactly (e.g. 0.19.2 or v24.3.0)."""
    namespace: DnsLabel = "default"
    """Namespace the chart is installed in (created when missing)."""


class WaitForPodsReady(Spec):
    """All or nothing for admitted jobs: a workload whose pods are not all ready in time is evicted and requeued."""

    enabled: Bool = True
    """false turns it off (Kueue 0.19 and later turn it on by default; fleetgen then sets the DisableWaitForPodsReady gate)."""
    timeout: Token = Field(default="30m", pattern=r"^[1-9]\d{0,5}[smh]$")
    """How long an admitted workload may take to get all its pods ready: a whole number of s, m or h (e.g. 10m)."""
    block_admission: Bool = False
    """Admit no other workload of the cluster until the admitted ones have all their pods ready (one gang starts at a time)."""


class Kueue(AddOn):
    """Kueue: the CRDs and controller behind the fleet's ClusterQueues, ResourceFlavors and LocalQueues."""

    repository: Token = Field(default="oci://registry.k8s.io/kueue/charts", pattern=_REPOSITORY)
    """OCI registry path that serves the chart."""
    chart: Token = Field(default="kueue", pattern=_CHART)
    """Chart name."""
    version: Token = Field(default="0.19.2", pattern=_PINNED)
    """Chart version; it must serve kueue.x-k8s.io/v1beta2 (Kueue 0.15 or later)."""
    namespace: DnsLabel = "kueue-system"
    """Namespace of the controller."""
    wait_for_pods_ready: WaitForPodsReady = WaitForPodsReady()
    """Evict and requeue a workload whose pods are not all ready in time, so a half-started gang does not hold GPUs."""
    manage_jobs_without_queue_name: Bool = True
    """Jobs and pods in team namespaces that name no LocalQueue wait in Kueue instead of starting; other namespaces are not affected."""
    fair_sharing: Bool | None = None
    """Kueue's fair sharing (queue and cohort fairSharingWeight); left out: on where a queue or cohort of the cluster sets a weight."""


class Drain(Spec):
    enabled: Bool = True
    """Drain a node (kubectl drain) before its driver is replaced, not only delete its GPU pods."""
    timeout_seconds: Int = Field(default=300, ge=1, le=86_400)
    """How long a drain may take before the upgrade of that node is marked failed."""
    delete_empty_dir: Bool = True
    """Evict pods that use emptyDir volumes (their scratch data is lost)."""
    force: Bool = False
    """Also delete pods no controller manages."""


_PERCENT = r"^(\d+|\d{1,2}%|100%)$"


def _nodes_or_percent(value: Any) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and re.fullmatch(_PERCENT, value):
        return value
    # fix: Write a number of nodes or a percentage such as 25%
    raise ValueError("must be a number of nodes (0 or more) or a percentage such as 25%")


NodesOrPercent = Annotated[
    int | str,
    PlainValidator(_nodes_or_percent),
    WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": _PERCENT}]}),
]


class WaitForCompletion(Spec):
    """Before a node is cordoned for its new driver, wait for the pods of the jobs Kueue admitted there to finish."""

    kueue_jobs: Bool = True
    """Wait for the pods of Kueue-admitted jobs (Kueue labels them kueue.x-k8s.io/podset); false waits for none."""
    timeout_seconds: Int = Field(default=86_400, ge=0, le=2_592_000)
    """How long to wait before the node is upgraded anyway (0: wait for ever); a day when left out."""


class PodDeletion(Spec):
    """How the pods that use the GPUs are deleted when a node's driver is replaced without a drain."""

    timeout_seconds: Int = Field(default=300, ge=1, le=86_400)
    """How long their termination may take before the upgrade of that node is marked failed."""
    force: Bool = False
    """Also delete such pods no controller manages."""
    delete_empty_dir: Bool = False
    """Also delete such pods that use emptyDir volumes (their scratch data is lost)."""


class DriverUpgrade(Spec):
    """How the GPU Operator rolls a new driver over a cluster's nodes (its `driver.upgradePolicy`, or each node pool's
    NVIDIADriver's `upgradePolicy` where the operator manages the driver per pool)."""

    max_parallel_upgrades: Int = Field(default=1, ge=1, le=100)
    """Most nodes whose driver is replaced at the same time (the chart's 0, all at once, is not allowed)."""
    max_unavailable: NodesOrPercent = "25%"
    """Most GPU nodes unavailable during the upgrade: a number or a percentage."""
    drain: Drain = Drain()
    """Node drain before the driver reload."""
    wait_for_completion: WaitForCompletion = WaitForCompletion()
    """Running training ends before a node is cordoned (NVIDIADriver per node pool only; the ClusterPolicy path has no
    selector fleetgen sets)."""
    pod_deletion: PodDeletion = PodDeletion()
    """Deletion of the GPU pods when the driver is replaced (NVIDIADriver per node pool only)."""


class GpuOperator(AddOn):
    """The NVIDIA GPU Operator: driver, container toolkit, device plugin and DCGM exporter on every GPU node."""

    repository: Token = Field(default="https://helm.ngc.nvidia.com/nvidia", pattern=_REPOSITORY)
    """NVIDIA's Helm repository (NGC)."""
    chart: Token = Field(default="gpu-operator", pattern=_CHART)
    """Chart name."""
    version: Token = Field(default="v25.10.1", pattern=_PINNED)
    """Chart version; the drivers of the clusters' version sets must be among those this release supports (gpu_operator.yaml)."""
    namespace: DnsLabel = "gpu-operator"
    """Namespace of the operator and its operands."""
    driver_upgrade: DriverUpgrade = DriverUpgrade()
    """How a driver change rolls over the nodes."""
    driver_crd: Bool = False
    """true: manage the driver with one NVIDIADriver resource per GPU node pool (each pool its own driver version and
    upgrade policy) instead of the ClusterPolicy; v26.7 and later. A cluster moves to it in two Helm upgrades: first
    to the release with this false, then, once that runs, true (in one upgrade the old controller removes the driver
    pods before the new one owns them)."""
    driver_source: Literal["operator", "node-image"] = "operator"
    """Who installs the driver: the operator (its driver daemonset, the version set's driver) or the node image
    (pre-baked images, EKS GPU AMIs: the operator's driver is off, and an upgrade's step is a node image change,
    `upgrade plan --set nodeImage=IMAGE`)."""


class PrometheusOperatorCrds(AddOn):
    """The Prometheus Operator CRDs (monitoring.coreos.com) the alerts and the DCGM ServiceMonitor need."""

    enabled: Bool = False
    """true when the clusters do not already run the Prometheus Operator (e.g. kube-prometheus-stack)."""
    repository: Token = Field(default="oci://ghcr.io/prometheus-community/charts", pattern=_REPOSITORY)
    """OCI registry path that serves the chart."""
    chart: Token = Field(default="prometheus-operator-crds", pattern=_CHART)
    """Chart name."""
    version: Token = Field(default="31.0.0", pattern=_PINNED)
    """Chart version (31.0.0 brings the CRDs of Prometheus Operator v0.93.0)."""
    namespace: DnsLabel = "monitoring"
    """Namespace of the Helm release (the CRDs themselves are cluster-wide)."""


class VolcanoChart(AddOn):
    """Volcano's scheduler, controllers and CRDs, on the clusters that hand node pools to Volcano (clusters[].volcano)."""

    enabled: Bool = True
    """false leaves it out (the clusters install Volcano some other way); clusters without `volcano` never get it."""
    repository: Token = Field(default="https://volcano-sh.github.io/helm-charts", pattern=_REPOSITORY)
    """Volcano's Helm repository."""
    chart: Token = Field(default="volcano", pattern=_CHART)
    """Chart name."""
    version: Token = Field(default="1.15.1", pattern=_PINNED)
    """Chart version; it must serve scheduling.volcano.sh/v1beta1 Queues and batch.volcano.sh/v1alpha1 Jobs."""
    namespace: DnsLabel = "volcano-system"
    """Namespace of the scheduler, controllers and admission webhook."""


class ExternalSecretsChart(AddOn):
    """The External Secrets Operator: writes the Secrets the tree names from the fleet's store (secrets.externalSecrets)."""

    enabled: Bool = True
    """false leaves it out (the clusters run the operator some other way); fleets without secrets.externalSecrets never get it."""
    repository: Token = Field(default="https://charts.external-secrets.io", pattern=_REPOSITORY)
    """The External Secrets Operator's Helm repository."""
    chart: Token = Field(default="external-secrets", pattern=_CHART)
    """Chart name."""
    version: Token = Field(default="2.9.0", pattern=_PINNED)
    """Chart version; it must serve external-secrets.io/v1 ExternalSecrets (the chart installs its CRDs)."""
    namespace: DnsLabel = "external-secrets"
    """Namespace of the operator, its webhook and certificate controller."""


class NotebookImage(Spec):
    """An image a notebook profile offers, with the CUDA it was built against."""

    name: Token = Field(max_length=63)
    """What the scientist picks, e.g. PyTorch 2.x."""
    image: Token = Field(pattern=r"^[a-z0-9][a-z0-9._:/@-]*$", max_length=255)
    """The image, registry named in full, e.g. nvcr.io/nvidia/pytorch:24.05-py3."""
    cuda: Version
    """The CUDA version the image's libraries need; offered only where the cluster's driver runs it."""


class JupyterHub(AddOn):
    """JupyterHub (zero-to-jupyterhub): GPU notebooks in each team's namespace, one profile per GPU shape it may get."""

    enabled: Bool = False
    """true on the clusters that run notebooks (a cluster's own platform.jupyterhub usually)."""
    repository: Token = Field(default="https://hub.jupyter.org/helm-chart/", pattern=_REPOSITORY)
    """JupyterHub's Helm repository."""
    chart: Token = Field(default="jupyterhub", pattern=_CHART)
    """Chart name."""
    version: Token = Field(default="4.4.0", pattern=_PINNED)
    """Chart version (4.4.0 runs JupyterHub 5.5.0)."""
    namespace: DnsLabel = "jupyterhub"
    """Namespace of the hub and proxy; notebooks run in the team namespaces."""
    images: Annotated[tuple[NotebookImage, ...], unique_by("name")] = ()
    """Images every profile offers; each one's CUDA must run on the cluster's driver (the compatibility matrix)."""


class Platform(Spec):
    kueue: Kueue = Kueue()
    """Kueue, which the fleet's queues need."""
    gpu_operator: GpuOperator = GpuOperator()
    """The NVIDIA GPU Operator, which installs the version set's driver."""
    prometheus_operator_crds: PrometheusOperatorCrds = PrometheusOperatorCrds()
    """The Prometheus Operator CRDs, for clusters that do not run the operator already."""
    volcano: VolcanoChart = VolcanoChart()
    """Volcano, which the Volcano Queues and gang Jobs of clusters with `volcano` need."""
    jupyterhub: JupyterHub = JupyterHub()
    """JupyterHub with GPU notebook profiles per team, off unless enabled (on the clusters that run notebooks)."""
    external_secrets: ExternalSecretsChart = ExternalSecretsChart()
    """The External Secrets Operator, on every cluster of a fleet whose Secrets come from a store (secrets.externalSecrets)."""


AddOnName = Literal["prometheusOperatorCrds", "externalSecrets", "kueue", "gpuOperator", "volcano", "jupyterhub"]
ADD_ONS: tuple[tuple[AddOnName, str], ...] = (  # fleet.yaml name, attribute; in install order
    ("prometheusOperatorCrds", "prometheus_operator_crds"),
    ("externalSecrets", "external_secrets"),
    ("kueue", "kueue"),
    ("gpuOperator", "gpu_operator"),
    ("volcano", "volcano"),
    ("jupyterhub", "jupyterhub"),
)


def over(base: BaseModel, top: BaseModel) -> Any:
    """`base` with every field `top` sets (written in fleet.yaml) replaced, nested models field by field."""
    update: dict[str, Any] = {}
    for name in top.model_fields_set:
        mine, theirs = getattr(base, name), getattr(top, name)
        update[name] = over(mine, theirs) if isinstance(mine, BaseModel) and isinstance(theirs, BaseModel) else theirs
    return base.model_copy(update=update)


def cluster_platform(fleet_platform: Platform, cluster_platform: Platform | None) -> Platform:
    """The add-ons of one cluster: the fleet's, with what the cluster writes replacing them."""
    return fleet_platform if cluster_platform is None else over(fleet_platform, cluster_platform)

"""How a node pool's GPUs are handed out: whole, time-sliced between pods, or cut into MIG slices.

What a partitioned pool yields per GPU (which extended resource, how many) depends on NVIDIA's
facts (a named MIG layout's profiles differ by GPU), so it is worked out in
fleetgen.compat.partitioning; the checks that span pools and teams live in
fleetgen.checks.partitioning. Here is only what fleet.yaml says.
"""

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Int

# A MIG profile as NVIDIA names it: compute slices, then memory (1g.10gb, 3g.40gb). Media-extension
# profiles (1g.10gb+me) are not laid out by fleetgen: their resource name is not a Kubernetes name.
MigProfile = Annotated[str, StringConstraints(pattern=r"^[1-7]g\.[1-9][0-9]{0,2}gb$")]
# NVIDIA's named layouts: every GPU cut into one profile (all-1g.10gb), or its balanced mix (all-balanced).
LayoutName = Annotated[str, StringConstraints(pattern=r"^all-([1-7]g\.[1-9][0-9]{0,2}gb|balanced)$")]
# What a team's quota or a queue names besides whole GPUs: a MIG slice (mixed strategy) or a renamed shared GPU.
SliceName = Annotated[str, StringConstraints(pattern=r"^(mig-[1-7]g\.[1-9][0-9]{0,2}gb|gpu\.shared)$")]
SHARED = "gpu.shared"  # the resource a time-sliced GPU becomes with rename: nvidia.com/gpu.shared

DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"  # picks the node's key of the device plugin's ConfigMap
MIG_LABEL = "nvidia.com/mig.config"  # picks the node's layout of the MIG manager's ConfigMap


def slice_resource(name: str) -> str:
    """mig-1g.10gb -> nvidia.com/mig-1g.10gb: the extended resource a slice quota counts."""
    return f"nvidia.com/{name}"


class TimeSlicing(Spec):
    """The device plugin hands each GPU to several pods in turn. No memory or fault isolation between them."""

    replicas: Int = Field(ge=2, le=64)
    """How many pods share one GPU: each node advertises gpusPerNode x replicas."""
    rename: Bool = False
    """true: the shared GPUs are advertised as nvidia.com/gpu.shared (renameByDefault), so a pod asks for a share by name."""


class Mig(Spec):
    """The MIG manager cuts each GPU of the pool into slices with their own memory, cache and compute."""

    layout: LayoutName | dict[MigProfile, Annotated[Int, Field(ge=1, le=7)]]
    """NVIDIA's named layout (all-1g.10gb, all-balanced) or profiles and counts per GPU ({3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2})."""
    strategy: Literal["single", "mixed"] = "mixed"
    """mixed: each slice is nvidia.com/mig-<profile>; single: every slice is an nvidia.com/gpu (the layout must have one profile)."""


class Partitioning(Spec):
    """One way to share the pool's GPUs; both at once is refused."""

    time_slicing: TimeSlicing | None = None
    """Time-slicing: pods take turns on a GPU (notebooks, small inference); no isolation."""
    mig: Mig | None = None
    """Multi-Instance GPU: isolated slices of A100, A30, H100, H200, B200 or GB200 GPUs."""

    @property
    def kind(self) -> Literal["none", "time-slicing", "mig"]:
        return "mig" if self.mig else "time-slicing" if self.time_slicing else "none"


SliceCounts = dict[SliceName, Annotated[Int, Field(ge=0)]]

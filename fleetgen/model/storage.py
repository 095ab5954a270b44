"""Storage: the classes a cluster offers and the named volumes a team gets there."""

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, unique_by
from fleetgen.model.types import DnsSubdomain, Quantity

AccessMode = Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]
MountPath = Annotated[str, StringConstraints(pattern=r"^/[A-Za-z0-9._/-]*$", max_length=255)]


class StorageClass(Spec):
    """A StorageClass the cluster has (the cloud's or the operator's; fleetgen does not render it)."""

    name: DnsSubdomain
    """The StorageClass's name, e.g. managed-csi-premium or azurefile-csi."""
    default: Bool = False
    """The class of a volume that names none (at most one per cluster)."""
    access_modes: Annotated[tuple[AccessMode, ...], unique_by()] = Field(default=("ReadWriteOnce",), min_length=1)
    """Access modes its volumes support: block disks ReadWriteOnce, file shares also ReadWriteMany."""


class Volume(Spec):
    """A PersistentVolumeClaim the team gets in its namespace on one cluster: datasets, checkpoints, a shared scratch."""

    name: DnsSubdomain
    """The claim's name; `job new --volume NAME` mounts it."""
    size: Quantity
    """Requested size, e.g. 500Gi."""
    storage_class: DnsSubdomain | None = None
    """One of the cluster's storageClasses; its default class when left out."""
    access_mode: AccessMode = "ReadWriteOnce"
    """ReadWriteOnce: pods of one node; ReadWriteMany: pods on every node (a multi-node job's shared checkpoints)."""
    mount_path: MountPath | None = None
    """Where `job new` mounts it; /mnt/<name> when left out."""

    @property
    def mount_at(self) -> str:
        return self.mount_path or f"/mnt/{self.name}"


Volumes = Annotated[tuple[Volume, ...], unique_by("name")]


def storage_class_of(classes: tuple[StorageClass, ...], volume: Volume) -> str | None:
    """The class the volume's claim names: its own, else the cluster's default; None when there is no default."""
    if volume.storage_class is not None:
        return volume.storage_class
    return next((c.name for c in classes if c.default), None)

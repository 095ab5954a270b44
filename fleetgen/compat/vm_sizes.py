"""The cloud VM sizes fleetgen knows (vm_sizes.yaml): each size's vCPUs, GPUs and the VM family whose quota it counts against."""

from functools import cache
from typing import NamedTuple

from fleetgen.compat.shipped import rows, shipped_data


class VmSize(NamedTuple):
    size: str
    family: str
    vcpus: int
    gpus: int
    source: str
    url: str


def family_key(name: str) -> str:
    """A VM family's name compared as the cloud means it: "Standard NDASv4_A100 Family" is standardNDASv4A100Family."""
    return "".join(ch for ch in name.lower() if ch not in " _-")


@cache
def known_sizes() -> dict[str, VmSize]:
    """VM size (lower case) -> its row."""
    return {row.size.lower(): row for row in rows(VmSize, shipped_data("vm_sizes.yaml")["sizes"])}


def vm_size(name: str) -> VmSize | None:
    """A size Azure names case-insensitively (Standard_ND96asr_v4 is standard_nd96asr_v4)."""
    return known_sizes().get(name.lower())

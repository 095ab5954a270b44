"""The cloud VM sizes fleetgen knows (vm_sizes.yaml): each size's vCPUs, GPUs and the VM family whose quota it counts against."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field


class VmSize(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    size: str
    family: str
    vcpus: int = Field(ge=1)
    gpus: int = Field(ge=0)
    source: str = Field(min_length=1, pattern=r"\S")
    url: str = Field(pattern=r"^https://\S+$")


class _Sizes(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    sizes: tuple[VmSize, ...]


def family_key(name: str) -> str:
    """A VM family's name compared as the cloud means it: "Standard NDASv4_A100 Family" is standardNDASv4A100Family."""
    return "".join(ch for ch in name.lower() if ch not in " _-")


@cache
def known_sizes() -> dict[str, VmSize]:
    """VM size (lower case) -> its row."""
    text = (resources.files("fleetgen.compat") / "vm_sizes.yaml").read_text(encoding="utf-8")
    rows = _Sizes.model_validate(yaml.load(text, Loader=yaml.CSafeLoader)).sizes
    return {row.size.lower(): row for row in rows}


def vm_size(name: str) -> VmSize | None:
    """A size Azure names case-insensitively (Standard_ND96asr_v4 is standard_nd96asr_v4)."""
    return known_sizes().get(name.lower())

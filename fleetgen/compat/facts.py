"""The compatibility facts of facts.yaml, loaded once into typed rows."""

from __future__ import annotations

import datetime
from functools import cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from fleetgen.model.types import Version


class Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, arbitrary_types_allowed=True)
    source: str


class CudaDriver(Row):
    cuda: Version
    min_driver: Version


class CudaMinorCompat(Row):
    cuda_major: int
    min_driver: Version


class CudnnCuda(Row):
    cudnn: Version
    cuda_min: Version
    cuda_max: Version


class GpuModel(Row):
    gpu: str
    compute_capability: Version
    min_cuda: Version
    min_driver: Version


class ContainerdKubernetes(Row):
    kubernetes: Version
    containerd: Version


class KubernetesRelease(Row):
    kubernetes: Version
    end_of_life: datetime.date


class RemovedApi(Row):
    api_version: str
    kind: str  # "*": every kind of that apiVersion
    removed_in: Version
    replacement: str


class Facts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel)
    as_of: datetime.date
    cuda_driver: tuple[CudaDriver, ...]
    cuda_minor_compat: tuple[CudaMinorCompat, ...]
    cudnn_cuda: tuple[CudnnCuda, ...]
    gpu_models: tuple[GpuModel, ...]
    containerd_kubernetes: tuple[ContainerdKubernetes, ...]
    kubernetes_releases: tuple[KubernetesRelease, ...]
    removed_apis: tuple[RemovedApi, ...]


@cache
def facts() -> Facts:
    text = (resources.files("fleetgen.compat") / "facts.yaml").read_text(encoding="utf-8")
    return Facts.model_validate(yaml.safe_load(text))

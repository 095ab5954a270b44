"""The schema of a facts file (facts.yaml's format): what a fleet's own facts file is validated against.

Each class here has the name and the fields of the row it checks (facts.py), so a message about a bad row
reads the same as when the shipped rows were these classes themselves. The tests validate the shipped
facts.yaml against `Facts` and compare the result with facts.py's plain reading of it. A command builds
these classes only when its fleet names a facts file (compat/extra.py).
"""

from __future__ import annotations

import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from fleetgen.compat.facts import ROW_TYPES
from fleetgen.compat.facts import Facts as PlainFacts
from fleetgen.model.types import Version


class Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, arbitrary_types_allowed=True)
    source: str = Field(min_length=1, pattern=r"\S")
    """Title of the page the fact comes from."""
    url: str = Field(pattern=r"^https?://\S+$")
    """Where that page is."""
    provisional: str = ""
    """What the source's own text did not confirm; empty for a confirmed row."""


class CudaDriver(Row):
    cuda: Version
    min_driver: Version


class CudaMinorCompat(Row):
    cuda_major: int = Field(ge=1)
    min_driver: Version


class CudnnCuda(Row):
    cudnn: Version
    cuda_min: Version
    cuda_max: Version

    @model_validator(mode="after")
    def _ordered(self) -> CudnnCuda:
        if self.cuda_max < self.cuda_min:
            raise ValueError(f"cudaMax {self.cuda_max} is below cudaMin {self.cuda_min}")
        return self


class GpuModel(Row):
    gpu: str = Field(min_length=1)
    compute_capability: Version
    min_cuda: Version
    min_driver: Version


class ContainerdKubernetes(Row):
    kubernetes: Version
    containerd: Version


class ContainerdRelease(Row):
    containerd: Version  # a release line such as 1.7
    end_of_life: datetime.date


class KubernetesRelease(Row):
    kubernetes: Version
    end_of_life: datetime.date
    patch: Version | None = None


class RemovedApi(Row):
    api_version: str
    kind: str  # "*": every kind of that apiVersion
    removed_in: Version
    replacement: str


class _Tables(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel)
    cuda_driver: tuple[CudaDriver, ...] = ()
    cuda_minor_compat: tuple[CudaMinorCompat, ...] = ()
    cudnn_cuda: tuple[CudnnCuda, ...] = ()
    gpu_models: tuple[GpuModel, ...] = ()
    containerd_kubernetes: tuple[ContainerdKubernetes, ...] = ()
    containerd_releases: tuple[ContainerdRelease, ...] = ()
    kubernetes_releases: tuple[KubernetesRelease, ...] = ()
    removed_apis: tuple[RemovedApi, ...] = ()

    def plain_tables(self) -> dict[str, tuple[Any, ...]]:
        """Each table's rows as facts.py's rows."""
        return {
            table: tuple(cls(**{name: getattr(row, name) for name in type(row).model_fields}) for row in getattr(self, table))
            for table, cls in ROW_TYPES.items()
        }


class Facts(_Tables):
    as_of: datetime.date

    def plain(self) -> PlainFacts:
        return PlainFacts(as_of=self.as_of, **self.plain_tables())


class ExtraFacts(_Tables):
    """A fleet's own facts file: any of the tables, each row with its source; asOf only if it is later."""

    as_of: datetime.date | None = None

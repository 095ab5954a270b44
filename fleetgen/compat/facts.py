"""The compatibility facts of facts.yaml, loaded once into typed rows, and merged with a fleet's own facts file.

Every row names its source (a title and a URL); a row not confirmed in its source's own text says what is
unconfirmed in `provisional`. A fleet's extra facts file has the same format: its rows add to the shipped ones,
or replace the shipped row with the same key (`row_key`), and each replacement is reported.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

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
    """A released patch of this minor (upstream's final one once the minor is out of support): the version an
    upgrade that crosses the minor passes through. A minor without one cannot be crossed by a plan."""


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

    def rows(self) -> list[Row]:
        return [row for table in TABLES for row in getattr(self, table)]


class Facts(_Tables):
    as_of: datetime.date  # end-of-life rules compare against this date, never the clock


class ExtraFacts(_Tables):
    """A fleet's own facts file: any of the tables, each row with its source; asOf only if it is later."""

    as_of: datetime.date | None = None


def _minor(version: Version) -> tuple[int, int]:
    return version.minor


# The key a row is known by: a row of the extra facts file with the key of a shipped row replaces it.
ROW_KEYS: dict[str, Callable[[Any], Hashable]] = {
    "cuda_driver": lambda r: _minor(r.cuda),
    "cuda_minor_compat": lambda r: r.cuda_major,
    "cudnn_cuda": lambda r: (_minor(r.cudnn), r.cuda_min.parts[0]),
    "gpu_models": lambda r: r.gpu.lower(),
    "containerd_kubernetes": lambda r: (_minor(r.kubernetes), _minor(r.containerd)),
    "containerd_releases": lambda r: _minor(r.containerd),
    "kubernetes_releases": lambda r: _minor(r.kubernetes),
    "removed_apis": lambda r: (r.api_version, r.kind),
}
TABLES = tuple(ROW_KEYS)


@dataclass(frozen=True)
class Override:
    """A row of the extra facts file that replaces a shipped row: where it stands and what it replaced."""

    table: str  # camelCase, as written in the file
    index: int
    replaced: Row


def merge(shipped: Facts, extra: ExtraFacts) -> tuple[Facts, list[Override]]:
    """The shipped facts with the extra rows added or replacing the shipped row of the same key."""
    tables: dict[str, Any] = {}
    overrides: list[Override] = []
    for table, key in ROW_KEYS.items():
        rows: dict[Hashable, Row] = {key(r): r for r in getattr(shipped, table)}
        for index, row in enumerate(getattr(extra, table)):
            replaced = rows.get(key(row))
            if replaced is not None:
                overrides.append(Override(to_camel(table), index, replaced))
            rows[key(row)] = row
        tables[table] = tuple(rows.values())
    as_of = max(shipped.as_of, extra.as_of) if extra.as_of else shipped.as_of
    return shipped.model_copy(update={**tables, "as_of": as_of}), overrides


@cache
def facts() -> Facts:
    """The facts fleetgen ships (facts.yaml)."""
    text = (resources.files("fleetgen.compat") / "facts.yaml").read_text(encoding="utf-8")
    return Facts.model_validate(yaml.load(text, Loader=yaml.CSafeLoader))  # libyaml: 10x the pure-Python loader, same result

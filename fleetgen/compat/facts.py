"""The compatibility facts of facts.yaml, loaded once into typed rows, and merged with a fleet's own facts file.

Every row names its source (a title and a URL); a row not confirmed in its source's own text says what is
unconfirmed in `provisional`. A fleet's extra facts file has the same format: its rows add to the shipped ones,
or replace the shipped row with the same key (`row_key`), and each replacement is reported.

The rows are plain named tuples read without pydantic (shipped.py); the file's schema, which validates a
fleet's own facts file and, in the tests, this one, is facts_file.py.
"""

import datetime
from collections.abc import Callable, Hashable, Mapping
from functools import cache
from typing import Any, NamedTuple

from fleetgen.compat.shipped import camel, row, rows, shipped_data
from fleetgen.model.types import Version


class CudaDriver(NamedTuple):
    cuda: Version
    min_driver: Version
    source: str  # the title of the page the fact comes from
    url: str  # where that page is
    provisional: str = ""  # what the source's own text did not confirm; empty for a confirmed row


class CudaMinorCompat(NamedTuple):
    cuda_major: int
    min_driver: Version
    source: str
    url: str
    provisional: str = ""


class CudnnCuda(NamedTuple):
    cudnn: Version
    cuda_min: Version
    cuda_max: Version
    source: str
    url: str
    provisional: str = ""


class GpuModel(NamedTuple):
    gpu: str
    compute_capability: Version
    min_cuda: Version
    min_driver: Version
    source: str
    url: str
    provisional: str = ""


class ContainerdKubernetes(NamedTuple):
    kubernetes: Version
    containerd: Version
    source: str
    url: str
    provisional: str = ""


class ContainerdRelease(NamedTuple):
    containerd: Version  # a release line such as 1.7
    end_of_life: datetime.date
    source: str
    url: str
    provisional: str = ""


class KubernetesRelease(NamedTuple):
    kubernetes: Version
    end_of_life: datetime.date
    source: str
    url: str
    provisional: str = ""
    patch: Version | None = None
    """A released patch of this minor (upstream's final one once the minor is out of support): the version an
    upgrade that crosses the minor passes through. A minor without one cannot be crossed by a plan."""


class RemovedApi(NamedTuple):
    api_version: str
    kind: str  # "*": every kind of that apiVersion
    removed_in: Version
    replacement: str
    source: str
    url: str
    provisional: str = ""


Row = CudaDriver | CudaMinorCompat | CudnnCuda | GpuModel | ContainerdKubernetes | ContainerdRelease | KubernetesRelease | RemovedApi

# Each table's rows, in the order of the file.
ROW_TYPES: dict[str, type[Row]] = {
    "cuda_driver": CudaDriver,
    "cuda_minor_compat": CudaMinorCompat,
    "cudnn_cuda": CudnnCuda,
    "gpu_models": GpuModel,
    "containerd_kubernetes": ContainerdKubernetes,
    "containerd_releases": ContainerdRelease,
    "kubernetes_releases": KubernetesRelease,
    "removed_apis": RemovedApi,
}
TABLES = tuple(ROW_TYPES)


class Facts(NamedTuple):
    as_of: datetime.date  # end-of-life rules compare against this date, never the clock
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


class Override(NamedTuple):
    """A row of the extra facts file that replaces a shipped row: where it stands and what it replaced."""

    table: str  # camelCase, as written in the file
    row: int  # its index in that table
    replaced: Row


def merge(shipped: Facts, extra: Mapping[str, tuple[Row, ...]], as_of: datetime.date | None) -> tuple[Facts, list[Override]]:
    """The shipped facts with the extra rows (by table) added or replacing the shipped row of the same key; the later asOf."""
    tables: dict[str, Any] = {}
    overrides: list[Override] = []
    for table, key in ROW_KEYS.items():
        by_key: dict[Hashable, Row] = {key(r): r for r in getattr(shipped, table)}
        for index, added in enumerate(extra.get(table, ())):
            replaced = by_key.get(key(added))
            if replaced is not None:
                overrides.append(Override(camel(table), index, replaced))
            by_key[key(added)] = added
        tables[table] = tuple(by_key.values())
    return shipped._replace(**tables, as_of=max(shipped.as_of, as_of) if as_of else shipped.as_of), overrides


def read_facts(written: Mapping[str, Any]) -> Facts:
    """Facts from a facts file's mapping as YAML read it (the shipped file: the tests validate it)."""
    tables = {table: rows(cls, written.get(camel(table), ())) for table, cls in ROW_TYPES.items()}
    return row(Facts, {"asOf": written["asOf"]}, **tables)


@cache
def facts() -> Facts:
    """The facts fleetgen ships (facts.yaml)."""
    return read_facts(shipped_data("facts.yaml"))

"""The data files fleetgen ships validate against their schemas, and fleetgen's plain reading of them agrees.

A command reads these files into named tuples without pydantic (fleetgen/compat/shipped.py): validating
them at every start would build a pydantic class per row type first. So the validation happens here:
each file against its pydantic schema (the facts file's is fleetgen's own, compat/facts_file.py, since a
fleet's own facts file is validated with it; the others' are below), and the validated rows, turned into
fleetgen's rows field by field, must equal what the command reads, down to their types and the text of
every version.
"""

from __future__ import annotations

import datetime
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from fleetgen.compat import chart_kinds, cuda_images, dcgm_exporter, facts_file, gpu_operator, partitioning, vm_sizes
from fleetgen.compat.facts import facts, read_facts
from fleetgen.compat.shipped import plain_data, shipped_data
from fleetgen.model.types import Version
from tests.conftest import REPO


class _Shipped(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, arbitrary_types_allowed=True)


class _Sourced(_Shipped):
    source: str = Field(min_length=1, pattern=r"\S")
    url: str = Field(pattern=r"^https://\S+$")


# partitioning.yaml
class MigGpu(_Sourced):
    gpu: str
    memory: int = Field(ge=1)
    slices: int = Field(ge=1, le=7)
    memory_slices: int = Field(ge=1, le=8)
    profiles: dict[str, int]
    balanced: dict[str, int]
    provisional: str = ""


class NoMig(_Sourced):
    gpu: str
    provisional: str = ""


class TimeSlicingLimit(_Sourced):
    lacks: str
    says: str
    provisional: str = ""


class Since(_Sourced):
    series: str = Field(pattern=r"^\d+\.\d+$")
    provisional: str = ""


class PartitioningFacts(_Shipped):
    mig_gpus: tuple[MigGpu, ...]
    no_mig: tuple[NoMig, ...]
    time_slicing: tuple[TimeSlicingLimit, ...]
    mig_config_from_values: Since
    exporter_virtual_gpus: Since


# dcgm_exporter.yaml
class Bundle(_Sourced):
    series: str = Field(pattern=r"^\d+\.\d+$")
    exporter: str = Field(pattern=r"^\d+\.\d+\.\d+-\d+\.\d+\.\d+$")  # <DCGM>-<exporter>
    provisional: bool = False


class Generation(_Sourced):
    since: Version
    host_label: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    known: bool = True


class ExporterFacts(_Shipped):
    bundles: tuple[Bundle, ...]
    generations: tuple[Generation, ...]


# gpu_operator.yaml
class OperatorRelease(_Sourced):
    series: str = Field(pattern=r"^\d+\.\d+$")
    documents: str
    default: Version
    drivers: tuple[Version, ...] = Field(min_length=1)
    driver_crd: bool = False


class OperatorFacts(_Shipped):
    releases: tuple[OperatorRelease, ...]


# chart_kinds.yaml
class Kind(_Shipped):
    group: str
    kind: str = Field(min_length=1)


class ChartKinds(_Shipped):
    chart: str
    version: str
    kinds: tuple[Kind, ...]
    derived: str = Field(min_length=1)


class ChartKindsFile(_Shipped):
    charts: tuple[ChartKinds, ...]


# vm_sizes.yaml
class VmSize(_Sourced):
    size: str
    family: str
    vcpus: int = Field(ge=1)
    gpus: int = Field(ge=0)


class VmSizes(_Shipped):
    sizes: tuple[VmSize, ...]


# cuda_images.yaml
class CudaImage(_Sourced):
    cuda: Version
    image: str
    provisional: str = ""


class CudaImages(_Shipped):
    images: tuple[CudaImage, ...]


def as_read(value: Any, module: ModuleType) -> Any:
    """A validated value as fleetgen reads it: each model the module's row of the same name, field by field."""
    if isinstance(value, BaseModel):
        row = getattr(module, type(value).__name__)
        return row(**{name: as_read(getattr(value, name), module) for name in type(value).model_fields})
    if isinstance(value, tuple):
        return tuple(as_read(item, module) for item in value)
    return value


# file: its schema, the module whose rows fleetgen reads it into, and what fleetgen reads (the rows of the validated file)
SHIPPED: dict[str, tuple[type[BaseModel], ModuleType, Callable[[], Any], Callable[[Any], Any]]] = {
    "facts.yaml": (facts_file.Facts, importlib.import_module("fleetgen.compat.facts"), facts, lambda v: v),
    "partitioning.yaml": (PartitioningFacts, partitioning, partitioning.partitioning_facts, lambda v: v),
    "dcgm_exporter.yaml": (ExporterFacts, dcgm_exporter, dcgm_exporter.exporter_facts, lambda v: v),
    "gpu_operator.yaml": (OperatorFacts, gpu_operator, gpu_operator.operator_facts, lambda v: v),
    "chart_kinds.yaml": (ChartKindsFile, chart_kinds, chart_kinds.chart_kinds, lambda v: v),
    "vm_sizes.yaml": (VmSizes, vm_sizes, lambda: tuple(vm_sizes.known_sizes().values()), lambda v: v.sizes),
    "cuda_images.yaml": (CudaImages, cuda_images, cuda_images.cuda_images, lambda v: v),
}


@pytest.mark.parametrize("name", list(SHIPPED))
def test_a_shipped_file_validates_and_reads_the_same_without_pydantic(name: str) -> None:
    schema, module, read, rows_of = SHIPPED[name]
    expected = as_read(rows_of(schema.model_validate(shipped_data(name))), module)
    assert repr(read()) == repr(expected)  # the same rows, of the same types, each version as written
    assert read() == expected


def test_the_facts_schema_turns_rows_into_fleetgens_own() -> None:
    """What a fleet's facts file becomes after validation (compat/extra.py) is what the shipped file reads as."""
    validated = facts_file.Facts.model_validate(shipped_data("facts.yaml"))
    assert repr(validated.plain()) == repr(facts())


def test_a_date_written_as_text_or_as_a_date_reads_the_same() -> None:
    written = {"asOf": datetime.date(2026, 1, 2)}
    assert read_facts(written) == read_facts({"asOf": "2026-01-02"}) == facts_file.Facts.model_validate(written).plain()


def _loaded(text: str) -> str:
    """What PyYAML's libyaml loader reads, as a repr: True and 1, 1 and 1.0 are equal in Python but not the same value."""
    return repr(yaml.load(text, Loader=yaml.CSafeLoader))


@pytest.mark.parametrize("name", [*SHIPPED, "multikueue.yaml"])
def test_a_shipped_file_reads_as_pyyamls_loader_reads_it(name: str) -> None:
    text = (REPO / "fleetgen" / "compat" / name).read_text(encoding="utf-8")
    assert repr(shipped_data(name)) == _loaded(text)


_LOOK_ALIKES = st.sampled_from(["1", "0x1F", "yes", "~", "1.5e3", "2026-01-02", "<<"])  # strings a resolver could take for more
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.dates() | st.text() | _LOOK_ALIKES
_DATA = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_SCALARS, inner, max_size=4), max_leaves=20)


@given(_DATA, st.booleans())
def test_the_plain_reading_is_pyyamls_for_any_document(data: Any, flow: bool) -> None:
    """Strings, mappings and lists are taken from libyaml's nodes, the rest built by PyYAML: together, its reading."""
    text = yaml.dump(data, Dumper=yaml.CSafeDumper, default_flow_style=flow, allow_unicode=True)
    assert repr(plain_data(text)) == _loaded(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# nothing",
        "base: &base {cpu: 1, gpu: two}\nderived:\n  <<: *base\n  gpu: 3\nlist: [*base, !!str 12, 2026-01-02, 1.5, ~]\n",
        "true: bool key\n1: int key\n2026-01-02: date key\n",
        "merged:\n  <<: [{a: 1}, {b: 2}]\n  c: 3\n",
    ],
)
def test_the_plain_reading_keeps_aliases_merge_keys_tags_and_other_keys(text: str) -> None:
    assert repr(plain_data(text)) == _loaded(text)

"""Every row of compat/partitioning.yaml against its sources' figures, row by row.

The instances per GPU of each profile and each GPU's balanced layout are checked against the GPU
Operator's own MIG manager configuration (tests/nvidia, v25.10.1, unmodified): NVIDIA's `all-<profile>`
layout holds as many of the profile as fit on one GPU, and `all-balanced` names each GPU (by its PCI
device ids) with its balanced mix. The MIG user guide's figures are transcribed below with their page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO

from fleetgen.compat import facts
from fleetgen.compat.partitioning import MigGpu, fit_problems, partitioning_facts

DATA = partitioning_facts()
OPERATOR = yaml.safe_load(
    yaml.safe_load((REPO / "tests" / "nvidia" / "default-mig-parted-config-v25.10.1.yaml").read_text(encoding="utf-8"))["data"][
        "config.yaml"
    ]
)["mig-configs"]

# https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html: "Max Number of Instances" per product.
GUIDE_MAX_INSTANCES = {
    ("A100", 40): 7,
    ("A100", 80): 7,
    ("A30", 24): 4,
    ("H100", 80): 7,
    ("H100", 94): 7,
    ("GH200", 96): 7,
    ("H200", 141): 7,
    ("B200", 180): 7,
    ("GB200", 186): 7,
}
# https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html: the A30-24GB table and the
# A100-SXM4-40GB table as far as it was read ("Number of Instances Available").
GUIDE_TABLES = {
    ("A30", 24): {"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1},
    ("A100", 40): {"1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2},
}


def _filters(entry: dict[str, Any]) -> set[str]:
    given = entry.get("device-filter", [])
    return {given} if isinstance(given, str) else set(given)


def _devices_of(row: MigGpu) -> set[str]:
    """The PCI device ids the operator's all-balanced gives this row's balanced mix."""
    [entry] = [e for e in OPERATOR["all-balanced"] if e["mig-devices"] == row.balanced]
    return _filters(entry)


def ids(row: MigGpu) -> str:
    return row.name


@pytest.mark.parametrize("row", DATA.mig_gpus, ids=ids)
def test_instances_per_gpu_are_the_operators(row: MigGpu) -> None:
    devices = _devices_of(row)
    assert devices, f"the operator's all-balanced names no device for {row.name}"
    for profile, count in row.profiles.items():
        layout = OPERATOR[f"all-{profile.replace('+', '.')}"]
        entries = [e for e in layout if not _filters(e) or _filters(e) & devices]
        assert len(entries) == 1, (row.name, profile)
        assert entries[0]["mig-devices"] == {profile: count}, (row.name, profile)


@pytest.mark.parametrize("row", DATA.mig_gpus, ids=ids)
def test_the_guides_figures(row: MigGpu) -> None:
    expected = GUIDE_MAX_INSTANCES.get((row.gpu, row.memory))
    if expected is None:
        assert row.provisional, f"{row.name} is not in the guide's table of supported GPUs: its row must say so"
    else:
        assert row.slices == expected
    table = GUIDE_TABLES.get((row.gpu, row.memory), {})
    assert {p: row.profiles[p] for p in table} == table
    assert row.url.startswith("https://") and row.source


@pytest.mark.parametrize("row", DATA.mig_gpus, ids=ids)
def test_each_profile_fits_at_its_count_and_not_one_more(row: MigGpu) -> None:
    """The fit rule (compute and memory slices, instances per profile) agrees with every figure of the row."""
    plain = {p: n for p, n in row.profiles.items() if "+" not in p}
    for profile, count in plain.items():
        assert fit_problems(row, {profile: count}) == [], (row.name, profile)
        assert fit_problems(row, {profile: count + 1}) != [], (row.name, profile)
        assert profile.endswith(("gb",)) and int(profile.split(".")[1][:-2]) <= row.memory
    assert fit_problems(row, row.balanced) == []
    assert set(row.balanced) <= set(plain)


def test_gpus_without_mig_are_gpus_fleetgen_knows_and_none_has_a_mig_row() -> None:
    known = {r.gpu.lower() for r in facts().gpu_models}
    barred = {r.gpu.lower() for r in DATA.no_mig}
    assert {"t4", "a10", "l4", "l40s"} <= barred <= known
    assert not barred & {r.gpu.lower() for r in DATA.mig_gpus}


def test_time_slicing_facts_name_memory_and_fault_isolation() -> None:
    lacks = [r.lacks for r in DATA.time_slicing]
    assert lacks[:2] == ["memory isolation", "fault isolation"]
    assert all("gpu-sharing" in r.url for r in DATA.time_slicing)


def test_provisional_rows_are_listed_in_the_compatibility_reference() -> None:
    page = (REPO / "docs" / "reference" / "compatibility.md").read_text(encoding="utf-8")
    for row in DATA.mig_gpus:
        if row.provisional:
            assert f"- `migGpus` {row.gpu}, {row.memory}, {row.slices}: {row.provisional}\n" in page


def test_the_vendored_configuration_is_the_pinned_operators(tmp_path: Path) -> None:
    sources = (REPO / "tests" / "nvidia" / "SOURCES.md").read_text(encoding="utf-8")
    assert "| default-mig-parted-config-v25.10.1.yaml | NVIDIA/gpu-operator | v25.10.1 |" in sources
    assert "all-balanced" in OPERATOR and "all-disabled" in OPERATOR

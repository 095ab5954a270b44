"""Every row of facts.yaml, tested at its boundary: the minimum passes, one step below fails.

The cases are generated from the facts, so a new row is tested without new test code. Then a fleet's
own facts file: it adds rows, replaces shipped ones with a warning, and a bad row is a positioned error.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from conftest import EXAMPLE, line_of, replace_once

from fleetgen.checks.load import load_fleet
from fleetgen.compat import facts, removed_api, version_set_problems
from fleetgen.compat.facts import ContainerdKubernetes, ContainerdRelease, CudaDriver, CudnnCuda, GpuModel, KubernetesRelease, RemovedApi
from fleetgen.errors import FindingsError, Severity
from fleetgen.model import Version, VersionSet

DATA = facts()
HIGH_DRIVER = "999.99.99"


def version_set(**changes: str) -> VersionSet:
    values = {"kubernetes": "1.35.2", "driver": HIGH_DRIVER, "cuda": "12.6", "cudnn": "9.5.0", "containerd": "2.3.0"}
    return VersionSet.model_validate({**values, **changes})


def below(version: Version) -> str:
    """The version one step below: 570.26 -> 570.25, 580 -> 579, 1.7.0 -> 1.6.999."""
    parts = list(version.parts)
    i = len(parts) - 1
    while parts[i] == 0:
        parts[i] = 999
        i -= 1
    parts[i] -= 1
    return ".".join(map(str, parts))


def minor_below(version: Version) -> str:
    major, minor = version.minor
    return f"{major}.{minor - 1}" if minor else f"{major - 1}.99"


def minor_above(version: Version) -> str:
    major, minor = version.minor
    return f"{major}.{minor + 1}"


def messages(vs: VersionSet, field: str, gpus: frozenset[str] = frozenset()) -> list[tuple[Severity, str]]:
    return [(p.severity, p.message) for p in version_set_problems(vs, gpus) if p.field == field]


def ids(rows: tuple[object, ...] | list[object]) -> list[str]:
    return [" ".join(str(v) for k, v in row._asdict().items() if k not in ("source", "url", "provisional")) for row in rows]


@pytest.mark.parametrize("row", DATA.cuda_driver, ids=ids(DATA.cuda_driver))
def test_cuda_minimum_driver(row: CudaDriver) -> None:
    assert messages(version_set(cuda=str(row.cuda), driver=str(row.min_driver)), "driver") == []
    [(severity, message)] = messages(version_set(cuda=str(row.cuda), driver=below(row.min_driver)), "driver")
    floor = next((r.min_driver for r in DATA.cuda_minor_compat if r.cuda_major == row.cuda.parts[0]), None)
    if floor is not None and Version(below(row.min_driver)) >= floor:
        assert (severity, "only through minor-version compatibility" in message) == (Severity.WARNING, True)
    else:
        assert (severity, "is too old" in message) == (Severity.ERROR, True)


MINOR_COMPAT = [(floor, row) for floor in DATA.cuda_minor_compat for row in DATA.cuda_driver if row.cuda.parts[0] == floor.cuda_major]


@pytest.mark.parametrize(
    ("floor", "row"),
    [(f, r) for f, r in MINOR_COMPAT if r.min_driver > f.min_driver],
    ids=lambda v: str(v.cuda_major if hasattr(v, "cuda_major") else v.cuda),
)
def test_minor_version_compatibility_floor(floor: object, row: CudaDriver) -> None:
    at_floor = messages(version_set(cuda=str(row.cuda), driver=str(floor.min_driver)), "driver")  # type: ignore[attr-defined]
    assert [s for s, _ in at_floor] == [Severity.WARNING]
    under = messages(version_set(cuda=str(row.cuda), driver=below(floor.min_driver)), "driver")  # type: ignore[attr-defined]
    assert [s for s, _ in under] == [Severity.ERROR]


def test_every_cuda_11_row_has_its_floor() -> None:
    """CUDA 11.0-11.8 are all known, so the 11.x minor-version floor applies to each of them."""
    assert {str(r.cuda) for r in DATA.cuda_driver if r.cuda.parts[0] == 11} == {f"11.{m}" for m in range(9)}
    assert {str(r.cuda) for r in DATA.cuda_driver if r.cuda.parts[0] == 13} >= {"13.0", "13.1", "13.2", "13.3"}


@pytest.mark.parametrize("row", DATA.cudnn_cuda, ids=ids(DATA.cudnn_cuda))
def test_cudnn_cuda_range(row: CudnnCuda) -> None:
    cudnn = f"{row.cudnn}.0"
    for inside in (row.cuda_min, row.cuda_max):
        assert messages(version_set(cudnn=cudnn, cuda=str(inside)), "cudnn") == []
    siblings = [r for r in DATA.cudnn_cuda if r.cudnn == row.cudnn]
    for outside in (minor_below(row.cuda_min), minor_above(row.cuda_max)):
        if not any(r.cuda_min <= Version(outside) <= r.cuda_max for r in siblings):  # not inside another row's range
            [(severity, message)] = messages(version_set(cudnn=cudnn, cuda=outside), "cudnn")
            assert severity is Severity.ERROR and message.startswith(f"cuDNN {cudnn} does not support CUDA {outside}")


@pytest.mark.parametrize("row", DATA.gpu_models, ids=[r.gpu for r in DATA.gpu_models])
def test_gpu_minimum_driver_and_cuda(row: GpuModel) -> None:
    gpus = frozenset({row.gpu})

    def gpu_problems(vs: VersionSet) -> list[str]:
        return [p.message for p in version_set_problems(vs, gpus) if p.message.startswith(f"{row.gpu} ")]

    assert gpu_problems(version_set(cuda=str(row.min_cuda), driver=str(row.min_driver))) == []
    assert [m.split(" [")[0] for m in gpu_problems(version_set(cuda=str(row.min_cuda), driver=below(row.min_driver)))] == [
        f"{row.gpu} needs driver {row.min_driver} or later, not {below(row.min_driver)}"
    ]
    [message] = gpu_problems(version_set(cuda=minor_below(row.min_cuda), driver=str(row.min_driver)))
    assert message.startswith(f"{row.gpu} (compute capability {row.compute_capability}) needs CUDA {row.min_cuda} or later")


@pytest.mark.parametrize("row", DATA.containerd_kubernetes, ids=ids(DATA.containerd_kubernetes))
def test_containerd_lowest_patch_for_kubernetes(row: ContainerdKubernetes) -> None:
    kubernetes = f"{row.kubernetes}.0"
    errors = [
        m for s, m in messages(version_set(kubernetes=kubernetes, containerd=str(row.containerd)), "containerd") if s is Severity.ERROR
    ]
    assert errors == []
    if row.containerd.parts[-1] > 0:  # a .0 has no lower patch in its line
        [(severity, message)] = [
            (s, m)
            for s, m in messages(version_set(kubernetes=kubernetes, containerd=below(row.containerd)), "containerd")
            if s is Severity.ERROR
        ]
        assert message.startswith(f"containerd {below(row.containerd)} is below {row.containerd}")


def _end_of_life(vs: VersionSet, as_of: datetime.date) -> list[tuple[str, Severity]]:
    data = DATA._replace(as_of=as_of)
    return [(p.field, p.severity) for p in version_set_problems(vs, data=data) if "end of life" in p.message]


@pytest.mark.parametrize("row", DATA.containerd_releases, ids=[str(r.containerd) for r in DATA.containerd_releases])
def test_containerd_end_of_life(row: ContainerdRelease) -> None:
    line, eol = row.containerd, row.end_of_life
    vs = version_set(containerd=f"{line}.0")
    assert ("containerd", Severity.WARNING) not in _end_of_life(vs, eol)  # supported through its last day
    assert ("containerd", Severity.WARNING) in _end_of_life(vs, eol + datetime.timedelta(days=1))


@pytest.mark.parametrize("row", DATA.kubernetes_releases, ids=[str(r.kubernetes) for r in DATA.kubernetes_releases])
def test_kubernetes_end_of_life(row: KubernetesRelease) -> None:
    vs = version_set(kubernetes=f"{row.kubernetes}.0")
    assert ("kubernetes", Severity.WARNING) not in _end_of_life(vs, row.end_of_life)
    assert ("kubernetes", Severity.WARNING) in _end_of_life(vs, row.end_of_life + datetime.timedelta(days=1))


@pytest.mark.parametrize("row", DATA.removed_apis, ids=[f"{r.api_version} {r.kind}" for r in DATA.removed_apis])
def test_removed_api(row: RemovedApi) -> None:
    kind = "AnyKind" if row.kind == "*" else row.kind
    assert row.replacement in (removed_api(row.api_version, kind, Version(f"{row.removed_in}.0")) or "")
    assert removed_api(row.api_version, kind, Version(f"{minor_below(row.removed_in)}.0")) is None


def test_provisional_rows_are_listed_in_the_compatibility_reference() -> None:
    page = (EXAMPLE.parent / "docs" / "reference" / "compatibility.md").read_text(encoding="utf-8")
    for row in DATA.rows():
        if row.provisional:
            assert f": {row.provisional}\n" in page, row


# --- a fleet's own facts file -----------------------------------------------------------------------------

ROW_SOURCE = 'source: "Our driver qualification", url: "https://wiki.example.com/gpu/drivers"'


def fleet_with_facts(tmp_path: Path, facts_text: str, example_text: str) -> Path:
    text = replace_once(example_text, "\nversionSets:\n", "\ncompatibility:\n  factsFile: extra-facts.yaml\n\nversionSets:\n")
    (tmp_path / "fleet.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "extra-facts.yaml").write_text(facts_text, encoding="utf-8")
    return tmp_path / "fleet.yaml"


def test_extra_facts_add_a_row(tmp_path: Path, example_text: str) -> None:
    text = replace_once(example_text, 'cuda: "12.6"', 'cuda: "13.4"')
    before = [p.message for p in version_set_problems(version_set(cuda="13.4"))]
    assert any(m.startswith("no compatibility data for CUDA 13.4") for m in before)
    extra = f'cudaDriver:\n  - {{cuda: "13.4", minDriver: "616.00", {ROW_SOURCE}}}\n'
    with pytest.raises(FindingsError) as raised:  # the dev set's 550.90.07 is now known to be too old for 13.4
        load_fleet(fleet_with_facts(tmp_path, extra, text))
    errors = [f"{f.dotted_path}: {f.message}" for f in raised.value.findings if f.dotted_path.endswith(".driver")]
    assert errors == [
        "versionSets.dev-2024q4.driver: driver 550.90.07 is too old for CUDA 13.4: it needs 616.00 or later [Our driver qualification]"
    ]


def test_extra_facts_override_a_row_with_a_warning(tmp_path: Path, example_text: str) -> None:
    extra = f'# our own qualification\ncudaDriver:\n  - {{cuda: "12.6", minDriver: "550.90.07", {ROW_SOURCE}}}\n'
    loaded = load_fleet(fleet_with_facts(tmp_path, extra, example_text))
    shown = [f"{f.location}: {f.dotted_path}: {f.message}" for f in loaded.warnings]
    assert (
        f"{tmp_path / 'extra-facts.yaml'}:3:5: cudaDriver[0]: replaces fleetgen's own cudaDriver row " in "".join(shown).split("[NVIDIA")[0]
    )
    assert not any("minor-version compatibility" in w for w in shown)  # the dev set's driver is now fully supported


def test_extra_facts_bad_row_is_a_positioned_error(tmp_path: Path, example_text: str) -> None:
    extra = 'gpuModels:\n  - {gpu: MI300X, computeCapability: "9.4", minCuda: "12.0", minDriver: "x1"}\n'
    with pytest.raises(FindingsError) as raised:
        load_fleet(fleet_with_facts(tmp_path, extra, example_text))
    shown = [f"{f.location}: {f.dotted_path}: {f.message}" for f in raised.value.findings]
    where = tmp_path / "extra-facts.yaml"
    column = extra.splitlines()[1].index('"x1"') + 1
    assert shown == [
        f"{where}:2:5: gpuModels[0].source: required field is missing (every row needs source and url)",
        f"{where}:2:5: gpuModels[0].url: required field is missing (every row needs source and url)",
        f"{where}:2:{column}: gpuModels[0].minDriver: 'x1' is not a version such as 1.29.4 or 550.54.15",
    ]


def test_missing_extra_facts_file_points_at_fleet_yaml(tmp_path: Path, example_text: str) -> None:
    path = fleet_with_facts(tmp_path, "", example_text)
    (tmp_path / "extra-facts.yaml").unlink()
    with pytest.raises(FindingsError) as raised:
        load_fleet(path)
    [finding] = raised.value.findings
    text = path.read_text(encoding="utf-8")
    assert (finding.location.line, finding.dotted_path) == (line_of(text, "factsFile:"), "compatibility.factsFile")  # type: ignore[union-attr]
    assert "no such file" in finding.message

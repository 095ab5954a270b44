"""Compatibility facts and rules: each rule, its message and its severity."""

from __future__ import annotations

import pytest
from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.compat import facts, removed_api, version_set_problems
from fleetgen.errors import Severity
from fleetgen.model import Version, VersionSet


def version_set(**changes: str) -> VersionSet:
    values = {"kubernetes": "1.35.2", "driver": "560.35.03", "cuda": "12.6", "cudnn": "9.3.0", "containerd": "1.7.28"}
    return VersionSet.model_validate({**values, **changes})


def problems(vs: VersionSet, gpus: frozenset[str] = frozenset()) -> list[tuple[str, Severity, str]]:
    """The problems but containerd's end of life (1.7 here; tests/test_compat_facts.py tests that rule)."""
    found = [(p.field, p.severity, p.message.split(" [")[0]) for p in version_set_problems(vs, gpus)]
    return [p for p in found if not (p[0] == "containerd" and "reached end of life" in p[2])]


def test_every_fact_row_has_a_source() -> None:
    data = facts()
    rows = [*data.cuda_driver, *data.cudnn_cuda, *data.gpu_models, *data.containerd_kubernetes, *data.removed_apis]
    assert len(rows) > 80 and all(row.source.strip() for row in rows)
    assert {r.gpu for r in data.gpu_models} >= {
        "T4",
        "A10G",
        "A100",
        "L4",
        "L40",
        "L40S",
        "H100",
        "H200",
        "GH200",
        "B200",
        "GB200",
        "B300",
        "GB300",
    }
    assert all(row.url.startswith("https://") for row in data.rows())
    assert {str(r.cuda): str(r.min_driver) for r in data.cuda_driver if str(r.cuda) in ("12.4", "12.6", "12.8", "13.0")} == {
        "12.4": "550.54.14",
        "12.6": "560.28.03",
        "12.8": "570.26",
        "13.0": "580.65.06",
    }


def test_a_consistent_version_set_passes() -> None:
    assert problems(version_set(), frozenset({"A100", "H100", "T4"})) == []


def test_driver_too_old_for_cuda_is_an_error() -> None:
    assert problems(version_set(driver="520.61.05")) == [
        ("driver", Severity.ERROR, "driver 520.61.05 is too old for CUDA 12.6: it needs 560.28.03 or later")
    ]


def test_minor_version_compatibility_is_a_warning_not_a_pass() -> None:
    [(field, severity, message)] = problems(version_set(driver="550.90.07"))
    assert (field, severity) == ("driver", Severity.WARNING)
    assert message.startswith("driver 550.90.07 runs CUDA 12.6 only through minor-version compatibility (full support needs 560.28.03")


def test_cudnn_outside_its_cuda_range() -> None:
    assert problems(version_set(cudnn="9.1.0")) == [
        ("cudnn", Severity.ERROR, "cuDNN 9.1.0 does not support CUDA 12.6 (it supports 12.0-12.4, 11.8-11.8)")
    ]


def test_gpu_models_need_their_driver_and_cuda() -> None:
    old = version_set(kubernetes="1.35.0", driver="560.35.03", cuda="12.6", cudnn="9.3.0")
    assert problems(old, frozenset({"B200"})) == [
        ("driver", Severity.ERROR, "B200 needs driver 570.133.20 or later, not 560.35.03"),
        ("cuda", Severity.ERROR, "B200 (compute capability 10.0) needs CUDA 12.8 or later"),
    ]
    assert problems(old, frozenset({"MI300X"})) == [
        ("driver", Severity.WARNING, "no compatibility data for GPU MI300X; its driver and CUDA needs are not checked")
    ]


def test_containerd_must_support_the_kubernetes_minor() -> None:
    assert problems(version_set(kubernetes="1.36.0", containerd="1.7.28")) == [
        ("containerd", Severity.ERROR, "containerd 1.7.28 is not supported on Kubernetes 1.36 (supported: 2.3.0+, 2.2.0+)")
    ]
    assert problems(version_set(kubernetes="1.35.1", containerd="1.7.22")) == [
        ("containerd", Severity.ERROR, "containerd 1.7.22 is below 1.7.28, the first 1.7 patch for Kubernetes 1.35")
    ]
    assert problems(version_set(kubernetes="1.35.0", containerd="1.7")) == []  # a release line, not a patch


def test_kubernetes_too_old_or_past_end_of_life() -> None:
    assert (
        "kubernetes",
        Severity.ERROR,
        "Kubernetes 1.24 is older than 1.25, the oldest minor fleetgen's data and schemas cover",
    ) in problems(version_set(kubernetes="1.24.9", containerd="1.7.0"))
    eol = problems(version_set(kubernetes="1.31.4", containerd="1.7.20"))
    assert eol == [
        (
            "kubernetes",
            Severity.WARNING,
            "Kubernetes 1.31 reached upstream end of life on 2025-11-11 (data as of 2026-11-23); plan the upgrade unless your provider extends support",
        )
    ]


def test_removed_api_names_its_replacement() -> None:
    assert removed_api("batch/v1beta1", "CronJob", Version("1.29.4")) == (
        "batch/v1beta1 CronJob is no longer served since Kubernetes 1.25; use batch/v1 [Kubernetes Deprecated API Migration Guide, v1.25]"
    )
    assert removed_api("batch/v1beta1", "CronJob", Version("1.24.0")) is None
    assert removed_api("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", Version("1.32.0")) is not None


def test_production_clusters_must_agree(example_text: str) -> None:
    text = replace_once(
        example_text,
        "    versionSet: prod-2024q4\n    drPartner: prod-inference-eastus",
        "    versionSet: dev-2024q4\n    drPartner: prod-inference-eastus",
    )
    errors = findings_of(text)
    line = line_of(text, "versionSet: dev-2024q4")  # the first hit is prod-inference-westeu's
    assert errors == [
        f"{line}:17: clusters[1].versionSet: production clusters must run identical versions: "
        "'dev-2024q4' differs from 'prod-2024q4' of prod-inference-eastus"
    ]


def test_dev_at_most_one_kubernetes_minor_ahead(example_text: str) -> None:
    text = replace_once(example_text, "kubernetes: 1.30.1", "kubernetes: 1.31.1")
    text = replace_once(text, "driver: 550.90.07", "driver: 560.35.03")
    assert findings_of(text) == [
        f"{line_of(text, 'versionSet: dev-2024q4')}:17: clusters[3].versionSet: dev may run at most one Kubernetes minor "
        "ahead of production (1.29), not 1.31"
    ]


def test_the_example_warns_about_what_is_really_wrong(example_text: str) -> None:
    warnings = findings_of(example_text, Severity.WARNING)
    assert [w.split(": ")[1] for w in warnings] == [
        "versionSets.prod-2024q4.kubernetes",
        "versionSets.prod-2024q4.containerd",
        "versionSets.dev-2024q4.kubernetes",
        "versionSets.dev-2024q4.driver",
        "versionSets.dev-2024q4.containerd",
        "clusters[0].versionSet",  # Kubernetes 1.29: the teams' registries are not enforced there
        "clusters[1].versionSet",
        "clusters[2].versionSet",
        "teams[0].quota.limits.gpu",
        "teams[0].clusters.prod-inference-eastus.limits.gpu",
        "teams[0].clusters.dev-eastus.limits.gpu",
    ]


@pytest.mark.parametrize("cuda", ["12.10", "12.7"])
def test_unknown_cuda_is_a_warning(cuda: str) -> None:
    assert ("cuda", Severity.WARNING, f"no compatibility data for CUDA {cuda}; its driver requirement is not checked") in problems(
        version_set(cuda=cuda)
    )


def test_example_file_is_the_one_tested() -> None:
    assert EXAMPLE.read_text().startswith("# yaml-language-server: $schema=schemas/fleet.schema.json\n")

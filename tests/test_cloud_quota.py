"""The cloud layer of the quota stack: node pools at their largest size against each region's VM-family vCPU quota.

The example's contoso-ai-prod subscription holds 384 vCPUs of standardNDSH100v5Family in eastus;
training-eastus' h100-ondemand pool (Standard_ND96isr_H100_v5, 96 vCPUs) can grow to 2 nodes: 192.
"""

from __future__ import annotations

import pytest
from conftest import findings_of, line_of, replace_once
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen.checks.cloud_quota import check_cloud_quotas, quota_uses
from fleetgen.checks.load import load_fleet_text
from fleetgen.compat.vm_sizes import family_key, known_sizes, vm_size
from fleetgen.errors import Severity
from fleetgen.model import Fleet

H100_QUOTA = "          standardNDSH100v5Family: {vcpus: 384}"
H100_POOL = "        vmSize: Standard_ND96isr_H100_v5\n        gpuModel: H100\n        gpusPerNode: 8\n        cpuPerNode: 88\n        memoryPerNode: 1600Gi\n        maxNodes: 2"
AT = "cloudAccounts[0].regions.eastus.families.standardNDSH100v5Family.vcpus"


def _at_quota(text: str, severity: Severity) -> list[str]:
    return [f for f in findings_of(text, severity) if AT in f]


def test_eight_h100_nodes_in_a_region_whose_quota_holds_four_is_an_error_at_the_quota(example_text: str) -> None:
    text = replace_once(example_text, H100_POOL, H100_POOL.replace("maxNodes: 2", "maxNodes: 8"))
    line = line_of(text, H100_QUOTA)
    assert _at_quota(text, Severity.ERROR) == [
        f"{line}:44: {AT}: node pools at their largest need 768 of 384 vCPUs of contoso-ai-prod eastus standardNDSH100v5Family"
        " (training-eastus/h100-ondemand 8 x 96): above the quota; lower maxNodes or request an increase"
    ]


@pytest.mark.slow
@settings(deadline=None)
@given(quota=st.integers(0, 1000))
def test_the_severity_follows_the_chapters_thresholds(example_text: str, quota: int) -> None:
    """192 vCPUs of H100s against any quota: an error above it, a warning above 80%, a note above 60%, else nothing."""
    stated = H100_QUOTA.replace("384", str(quota))
    text = replace_once(example_text, H100_QUOTA, stated)
    found = {s: _at_quota(text, s) for s in Severity}
    percent = 192 / quota * 100 if quota else float("inf")
    expected = Severity.ERROR if percent > 100 else Severity.WARNING if percent > 80 else Severity.NOTE if percent > 60 else None
    assert {s for s, f in found.items() if f} == ({expected} if expected else set())
    for s, lines in found.items():
        assert all(f.startswith(f"{line_of(text, stated)}:") for f in lines), s


def test_spot_pools_count_against_the_regions_spot_vcpus(example_text: str) -> None:
    text = replace_once(example_text, "        spotVcpus: 800", "        spotVcpus: 300")
    errors = [f for f in findings_of(text) if "spotVcpus" in f]
    # a100-spot 2 x 96, t4-spot 8 x 4, a10g-spot 4 x 36: 368 vCPUs, none of them against a family's quota
    assert len(errors) == 1 and "need 368 of 300 vCPUs" in errors[0]
    assert "training-eastus/a100-spot 2 x 96, dev-eastus/t4-spot 8 x 4, dev-eastus/a10g-spot 4 x 36" in errors[0]
    assert errors[0].startswith(f"{line_of(text, 'spotVcpus: 300')}:20:")


def test_an_unknown_vm_size_says_what_to_state_and_a_stated_family_is_used(example_text: str) -> None:
    unknown = replace_once(example_text, "vmSize: Standard_NC4as_T4_v3", "vmSize: Standard_NX8_Future_v9")
    warnings = [f for f in findings_of(unknown, Severity.WARNING) if "does not know VM size" in f]
    assert warnings == [
        f"{line_of(unknown, 'Standard_NX8_Future_v9')}:17: clusters[3].nodePools[0].vmSize: fleetgen does not know VM size"
        " Standard_NX8_Future_v9: state vmFamily and vcpusPerNode to check its cloud quota"
    ]
    stated = replace_once(
        unknown.replace("        spotVcpus: 800\n", "        spotVcpus: 800\n", 1),
        "vmSize: Standard_NX8_Future_v9",
        "vmSize: Standard_NX8_Future_v9\n        vmFamily: standardNDSH100v5Family\n        vcpusPerNode: 100",
    )
    stated = stated.replace(
        "        scaling: spot\n        labels: {accelerator: nvidia-t4}",
        "        scaling: on-demand\n        labels: {accelerator: nvidia-t4}",
    )
    errors = _at_quota(stated, Severity.ERROR)  # 192 of the H100s and 8 x 100 of the stated family: 992 of 384
    assert len(errors) == 1 and "need 992 of 384" in errors[0] and "dev-eastus/t4-spot 8 x 100" in errors[0]


def test_a_family_without_a_stated_quota_and_an_unknown_cluster_are_reported(example_text: str) -> None:
    text = replace_once(example_text, H100_QUOTA + "\n", "")
    warnings = [f for f in findings_of(text, Severity.WARNING) if "no quota stated for standardNDSH100v5Family" in f]
    assert len(warnings) == 1 and warnings[0].startswith(f"{line_of(text, 'StandardNCADSA100v4Family: {vcpus: 200}') - 1}:")
    wrong = replace_once(
        example_text, "clusters: [prod-inference-eastus, training-eastus,", "clusters: [prod-inference-eastus, training-eastux,"
    )
    assert any("cloudAccounts[0].clusters[1]: unknown cluster 'training-eastux'" in f for f in findings_of(wrong))


def test_the_example_fits_its_quotas_and_every_layer_is_counted(example_text: str) -> None:
    fleet = load_fleet_text(example_text.encode()).fleet
    uses, problems = quota_uses(fleet)
    assert problems == []
    by = {(u.region, u.family): (u.vcpus, u.limit) for u in uses}
    assert by == {
        ("eastus", "StandardNCADSA100v4Family"): (96, 200),
        ("eastus", "StandardNVADSA10v5Family"): (144, 288),
        ("eastus", "Standard NDASv4_A100 Family"): (96, 192),
        ("eastus", "standardNDSH100v5Family"): (192, 384),
        ("eastus", "spot vCPUs"): (368, 800),
        ("westeurope", "StandardNCADSA100v4Family"): (96, 192),
        ("westeurope", "StandardNVADSA10v5Family"): (144, 288),
    }


def test_every_known_size_names_its_family_as_azure_writes_it() -> None:
    for name, row in known_sizes().items():
        assert vm_size(name.upper()) == row and row.gpus >= 1 and row.vcpus >= 4
        assert family_key(row.family).startswith("standard") and family_key(row.family).endswith("family"), row.family


@pytest.mark.slow
@settings(deadline=None)
@given(
    clusters=st.integers(1, 6),
    quotas=st.lists(st.integers(0, 3000), min_size=2, max_size=2),
    spot=st.integers(0, 3000),
)
def test_every_pool_is_counted_once_in_a_generated_fleet_and_findings_follow_the_percentages(
    clusters: int, quotas: list[int], spot: int
) -> None:
    """benchmarks/synth.py's fleets (spot and on-demand A100 pools on every cluster, three regions) under one account."""
    import sys

    from conftest import REPO

    sys.path.insert(0, str(REPO / "benchmarks"))
    import yaml
    from synth import synthetic_fleet

    data = yaml.safe_load(synthetic_fleet(clusters, 4, 2))
    regions = sorted({c["region"] for c in data["clusters"]})
    data["cloudAccounts"] = [
        {
            "name": "sub",
            "clusters": [c["name"] for c in data["clusters"]],
            "regions": {
                r: {"families": {"standardNDASv4_A100Family": {"vcpus": quotas[i % 2]}}, "spotVcpus": spot} for i, r in enumerate(regions)
            },
        }
    ]
    fleet = Fleet.model_validate(data, by_alias=True, by_name=False)
    uses, problems = quota_uses(fleet)
    assert problems == []
    for region in regions:  # each region's vCPUs: every pool of its clusters, once, at maxNodes x 96
        pools = [p for c in fleet.clusters if c.region == region for p in c.node_pools]
        for spotted in (True, False):
            expected = sum(p.max_nodes * 96 for p in pools if (p.scaling == "spot") == spotted)
            counted = [u.vcpus for u in uses if u.region == region and (u.family == "spot vCPUs") == spotted]
            assert sum(counted) == expected and len(counted) == (1 if expected else 0)
    found = list(check_cloud_quotas(fleet))
    for u in uses:
        percent = u.percent
        assert percent is not None
        severity = None if percent <= 60 else Severity.NOTE if percent <= 80 else Severity.WARNING if percent <= 100 else Severity.ERROR
        assert [f.severity for f in found if f.path == u.at] == ([severity] if severity else [])


def test_a_stated_gpu_quota_is_checked_too(example_text: str) -> None:
    text = replace_once(example_text, H100_QUOTA, H100_QUOTA.replace("{vcpus: 384}", "{vcpus: 384, gpus: 8}"))
    errors = [f for f in findings_of(text) if "standardNDSH100v5Family.gpus" in f]
    assert len(errors) == 1 and "hold 16 GPUs of contoso-ai-prod eastus standardNDSH100v5Family, above its 8" in errors[0]


def test_the_report_shows_every_layer_per_cluster(example_text: str) -> None:
    from fleetgen.report.capacity import build_report
    from fleetgen.report.capacity_output import report_json, report_markdown

    report = build_report(load_fleet_text(example_text.encode()).fleet)
    training = next(layer for layer in report.layers if layer.cluster == "training-eastus")
    assert (training.pool_gpus, training.namespace_gpus, training.nominal_gpus) == (40, 20, 16)
    assert training.local_queues == (("gpu-cluster-queue", 12, 16), ("data-science-queue", 8, 8))  # 16 owned; 0 owned + 8 borrowable
    assert ("contoso-ai-prod/eastus/standardNDSH100v5Family", 192, 384) in training.cloud
    markdown = report_markdown(report)
    assert "## Quota layers" in markdown and "| training-eastus | contoso-ai-prod/eastus/spot vCPUs 368/800 (46%);" in markdown
    assert '"quotaLayers"' in report_json(report)


def test_a_cluster_in_no_cloud_account_is_a_warning_naming_it(example_text: str) -> None:
    """With cloudAccounts declared, a cluster none of them lists has pools no quota is checked against: say so at the
    cluster (2 x 96 + 1 x 96 + 2 x 96 vCPUs: its A100 spot, A100 and H100 pools)."""
    text = replace_once(
        example_text, "clusters: [prod-inference-eastus, training-eastus, dev-eastus,", "clusters: [prod-inference-eastus, dev-eastus,"
    )
    warnings = [f for f in findings_of(text, Severity.WARNING) if "in no cloud account" in f]
    assert warnings == [
        f"{line_of(text, '- name: training-eastus')}:11: clusters[2].name: training-eastus is in no cloud account: "
        "its node pools (480 vCPUs at their largest) are not checked against a cloud quota; list it under an account's clusters"
    ]
    assert not [f for f in findings_of(example_text, Severity.WARNING) if "in no cloud account" in f]

"""The approval gate cannot remove itself: policy changes are changes, and fleetgen's built-in rules gate them.

Each test is a pull request a hostile or careless author could open; the gate of the base revision
must name it and ask the base's platform owners.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.checks.load import load_fleet_text
from fleetgen.model import Version
from fleetgen.render.rendered import Rendered
from fleetgen.review import FleetDiff, diff_fleets
from fleetgen.upgrade.apply import apply_wave

Run = Callable[..., CompletedProcess[str]]
TEXT = EXAMPLE.read_text()
UTC = datetime.UTC


def review(base: str, head: str) -> FleetDiff:
    return diff_fleets(Rendered(load_fleet_text(base.encode()).fleet), Rendered(load_fleet_text(head.encode()).fleet), "base", "head")


def gated(diff: FleetDiff) -> dict[str, list[str]]:
    """Rule name -> the texts of the changes it gates."""
    return {a.rule.name: [c.text for c in a.changes] for a in diff.approvals}


def weakened_gate(text: str) -> str:
    """The pull request of the issue: the GPU threshold raised, production-versions deleted, soak and waves relaxed."""
    text = replace_once(text, "when: {gpuQuotaAtLeast: 8}", "when: {gpuQuotaAtLeast: 1000}")
    rule = text[text.index("  - name: production-versions") : text.index("  - name: priority-classes")]
    text = text.replace(rule, "")
    return text + "\nrollout:\n  soak: 1h\n  maxWaveSize: 5\ncapacity:\n  gpuOvercommit: 3.0\n"


def test_a_pull_request_that_weakens_the_gate_needs_the_platform_owners(repo: Path, cli_run: Run) -> None:
    (repo / "fleet.yaml").write_text(weakened_gate(TEXT))
    done = cli_run("diff", "--base", "HEAD", "--format", "json", cwd=repo)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [s["text"] for s in report["summary"]] == [
        "approval rule production-versions removed (was: productionVersions, approved by platform-leads)",
        "approval rule large-gpu-allocation: gpuQuotaAtLeast 8 -> gpuQuotaAtLeast 1000",
        "rollout.soak: 48h -> 1h",
        "rollout.maxWaveSize: 2 -> 5",
        "capacity.gpuOvercommit: none -> 3.0",
    ]
    [approval] = report["approvals"]
    assert approval["rule"] == "fleetgen-gate" and approval["approvers"] == ["platform-leads"]
    assert len(approval["changes"]) == 5
    github = cli_run("diff", "--base", "HEAD", "--format", "github", cwd=repo)
    assert "approvals-required=true" in github.stdout and "rules=fleetgen-gate" in github.stdout
    assert 'approver-groups=["platform-leads"]\n' in github.stdout  # the workflow's matrix: one environment per group
    # the annotation stands where the first change is: the list the removed rule left
    assert f"line={line_of(weakened_gate(TEXT), 'approvals:')},col=1,title=approval required (fleetgen-gate)" in github.stdout


def test_the_built_in_rules_are_the_base_s_even_when_the_head_renames_the_owners_and_drops_every_rule() -> None:
    head = weakened_gate(TEXT).replace("platformOwners: [platform-leads]", "platformOwners: [mallory]")
    head = head[: head.index("approvals:\n")] + "approvals: []\n" + head[head.index("\nrollout:") :]
    result = gated(review(TEXT, head))
    assert set(result) == {"fleetgen-gate"}
    assert "platform owners platform-leads -> mallory" in result["fleetgen-gate"]
    assert "approval rule priority-classes removed (was: priorityClasses, approved by platform-leads)" in result["fleetgen-gate"]
    [approval] = review(TEXT, head).approvals
    assert approval.rule.approvers == ("platform-leads",)  # the base's owners, not the head's


def test_without_platform_owners_the_owner_team_approves() -> None:
    base = TEXT.replace("  platformOwners: [platform-leads]", "")
    [approval] = review(base, base.replace("maxWaveSize", "x") + "\nrollout: {maxWaveSize: 3}\n").approvals
    assert approval.rule.name == "fleetgen-gate" and approval.rule.approvers == ("platform",)


def test_a_fleet_rule_may_not_pass_for_a_built_in_one() -> None:
    text = replace_once(TEXT, "  - name: new-cluster\n", "  - name: fleetgen-gate\n")
    assert findings_of(text) == [
        f"{line_of(text, 'name: fleetgen-gate')}:11: approvals[1].name: names starting with 'fleetgen-' are fleetgen's built-in rules (see the documentation: Review a pull request)"
    ]


def test_rewriting_the_upgrade_record_is_a_gate_change_applying_a_wave_is_not() -> None:
    plannable = replace_once(TEXT, "gpuOperator: {version: v24.3.0}", "gpuOperator: {enabled: false}")
    at = datetime.datetime(2026, 11, 24, 9, tzinfo=UTC)
    wave1 = apply_wave(load_fleet_text(plannable.encode()), 1, {"driver": Version("560.35.03")}, at)
    started = review(plannable, wave1)
    assert "upgrade to driver 560.35.03 planned in 4 wave(s)" in [c.text for c in started.changes]
    assert "fleetgen-gate" not in gated(started)  # the version change itself is production-versions' to judge, if any
    # backdating wave 1 lets wave 2 start at once; dropping the record forgets the waves applied
    backdated = replace_once(wave1, "appliedAt: '2026-11-24T09:00:00Z'", "appliedAt: '2026-11-01T09:00:00Z'")
    assert gated(review(wave1, backdated))["fleetgen-gate"] == [
        "upgrade wave 1: appliedAt 2026-11-24T09:00:00Z -> 2026-11-01T09:00:00Z (the next wave's soak counts from it)"
    ]
    dropped = wave1[: wave1.index("\nupgrade:")] + "\n"
    assert gated(review(wave1, dropped))["fleetgen-gate"] == [
        "upgrade to driver 560.35.03 in progress (waves 1 applied) removed from fleet.yaml"
    ]
    wave2 = apply_wave(load_fleet_text(wave1.encode()), 2, None, at + datetime.timedelta(hours=1), override_soak="pager fix")
    assert gated(review(wave1, wave2))["fleetgen-gate"] == ["upgrade wave 2: soak of wave 1 cut short (overrideSoak: pager fix)"]


def test_a_team_that_gains_a_priority_class_needs_the_platform_owners_one_that_loses_one_does_not() -> None:
    gains = replace_once(TEXT, "priorityClasses: [scheduled-training, exploratory]", "priorityClasses: [production-inference, exploratory]")
    result = review(TEXT, gains)
    assert gated(result)["fleetgen-tenant-access"] == [
        "team robotics: may use priority classes scheduled-training, exploratory -> production-inference, exploratory"
    ]
    loses = replace_once(TEXT, "priorityClasses: [scheduled-training, exploratory]", "priorityClasses: [exploratory]")
    result = review(TEXT, loses)
    assert "team robotics: may use priority classes scheduled-training, exploratory -> exploratory" in [c.text for c in result.changes]
    assert gated(result) == {}


def test_removing_a_team_or_a_team_from_a_cluster_needs_the_platform_owners() -> None:
    start, end = TEXT.index("  - name: robotics"), TEXT.index("# GPU alerts and Grafana")
    without = TEXT[:start] + TEXT[end:]
    assert gated(review(TEXT, without))["fleetgen-removal"] == ["team robotics removed from 2 clusters (training-eastus, dev-eastus)"]
    off_dev = replace_once(
        TEXT,
        "      training-eastus: {queue: gpu-cluster-queue}\n      dev-eastus:\n    priorityClasses",
        "      training-eastus: {queue: gpu-cluster-queue}\n    priorityClasses",
    )
    assert gated(review(TEXT, off_dev)) == {"fleetgen-removal": ["team robotics removed from dev-eastus"]}


H100_GROWS = (
    "        maxNodes: 2\n        scaling: on-demand\n        labels: {accelerator: nvidia-h100}",
    "        maxNodes: 4\n        scaling: on-demand\n        labels: {accelerator: nvidia-h100}",
)
H100_PRICE = ("Standard_ND96isr_H100_v5: 12.29", "Standard_ND96isr_H100_v5: 0.01")


def test_added_capacity_is_priced_at_the_base_s_prices_whatever_the_head_says_they_are() -> None:
    grown = replace_once(TEXT, *H100_GROWS)
    alone = gated(review(TEXT, grown))
    assert alone["added-capacity"] == [
        "cluster training-eastus: node pool h100-ondemand maxNodes 2 -> 4 (now 4 x 8 H100; +16 GPUs, +143,547 USD/month)"
    ]
    # the same growth with its price cut to nothing in the same pull request: still 16 H100s at the base's 12.29 an hour
    cheap = gated(review(TEXT, replace_once(grown, *H100_PRICE)))
    assert cheap["added-capacity"] == alone["added-capacity"]
    assert cheap["fleetgen-gate"] == ["pricing.gpuHour Standard_ND96isr_H100_v5: 12.29 -> 0.01"]


def test_a_price_change_alone_is_a_gate_change_for_the_platform_owners() -> None:
    for edit in (H100_PRICE, ("Standard_ND96isr_H100_v5: 12.29", "Standard_ND96isr_H100_v5: 20.0"), ("currency: USD", "currency: EUR")):
        diff = review(TEXT, replace_once(TEXT, *edit))
        assert list(gated(diff)) == ["fleetgen-gate"], gated(diff)
        [approval] = diff.approvals
        assert approval.rule.approvers == ("platform-leads",)
    # a price the base did not have, for a pool added in the same pull request: unknown at the base's prices, so it asks
    added = replace_once(TEXT, "    Standard_NC4as_T4_v3: 0.53", "    Standard_NC4as_T4_v3: 0.53\n    Standard_ND96isr_H200_v5: 0.01")
    added = replace_once(added, *H100_GROWS)
    added = added.replace("vmSize: Standard_ND96isr_H100_v5", "vmSize: Standard_ND96isr_H200_v5", 1)
    assert "+16 GPUs, cost unknown: no price for its VM size" in " ".join(gated(review(TEXT, added))["added-capacity"])

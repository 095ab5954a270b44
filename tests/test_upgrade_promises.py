"""The seed's upgrade promises kept by `upgrade apply` (soak, windows, freezes, an override on record),
interim version sets folded back after the last wave, live versions against fleet.yaml in status."""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, git, replace_once
from node_dumps import evidence_files, evidence_of, gfd_labels, verified, wave_evidence

from fleetgen.checks.load import LoadedFleet, load_fleet_text
from fleetgen.errors import InputError
from fleetgen.live.state import read_live
from fleetgen.model import Version
from fleetgen.review.changes import fleet_changes
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.fold import folds
from fleetgen.upgrade.output import status_text
from fleetgen.upgrade.plan import PlanRefused
from fleetgen.upgrade.status import live_versions, upgrade_status
from fleetgen.upgrade.verify import verify_wave

Run = Callable[..., CompletedProcess[str]]
UTC = datetime.UTC
AT = datetime.datetime(2026, 11, 24, 9, tzinfo=UTC)  # a Tuesday
H = datetime.timedelta(hours=1)
DRIVER = {"driver": Version("560.35.03")}
# The example with its GPU Operator off: its v24.3.0 supports no driver above 550.90.07, so a plan to 560.35.03 is
# refused there (tests/test_upgrade_operator.py). The waves, soaks and records tested here do not depend on it.
PLANNABLE = replace_once(EXAMPLE.read_text(), "gpuOperator: {version: v24.3.0}", "gpuOperator: {enabled: false}")
WINDOWS = (
    "\nrollout:\n  soak: 24h\n  windows: [{days: [tue, wed, thu], start: '09:00', end: '16:00'}]\n"
    "  freezes: [{start: 2026-11-26, end: 2026-11-30, reason: holiday}]\n"
)


def loaded(text: str) -> LoadedFleet:
    return load_fleet_text(text.encode())


def refused(text: str, number: int, at: datetime.datetime, requested: dict[str, Version] | None = None) -> str:
    with pytest.raises(PlanRefused) as caught:
        apply_wave(loaded(text), number, requested, at)
    assert len(caught.value.findings) == 1
    return caught.value.findings[0].message


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


V = AT + 6 * H  # wave 1's nodes seen on the new driver


@pytest.fixture(scope="module")
def wave1() -> str:
    """Wave 1 applied at AT, and verified on dev-eastus's nodes six hours later: the soak counts from there."""
    return verified(apply_wave(loaded(PLANNABLE), 1, DRIVER, AT), 1, V)


def evidence(text: str, number: int = 1) -> dict[str, list[dict[str, Any]]]:
    return wave_evidence(loaded(text).fleet, number)


# -- evidence, soak, windows, freezes --------------------------------------------------------------


def test_a_wave_starts_only_when_the_previous_one_is_done_on_its_nodes_and_verified() -> None:
    applied = apply_wave(loaded(PLANNABLE), 1, DRIVER, AT)
    assert refused(applied, 2, AT + 60 * H) == (
        "wave 2 needs wave 1 done on the nodes: no evidence for dev-eastus: give --live dev-eastus=DUMP or "
        "--context dev-eastus=CONTEXT (kubectl get nodes,configmaps -A -o yaml); wait, or give --override-soak REASON"
    )
    fleet = loaded(applied).fleet
    halfway = {"dev-eastus": evidence_of(fleet, "dev-eastus")}
    nodes = [o for o in halfway["dev-eastus"] if o["kind"] == "Node" and "nvidia.com/gpu.present" in o["metadata"]["labels"]]
    nodes[0]["metadata"]["labels"].update(gfd_labels("550.90.07"))  # not replaced yet
    nodes[0]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "drain-required"
    nodes[1]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = "upgrade-failed"
    first, second = nodes[0]["metadata"]["name"], nodes[1]["metadata"]["name"]
    with pytest.raises(PlanRefused) as caught:
        apply_wave(loaded(applied), 2, None, AT + 60 * H, evidence=halfway)
    assert caught.value.findings[0].message == (
        f"wave 2 needs wave 1 done on the nodes: dev-eastus: 3 of 4 GPU nodes on driver 560.35.03; driver upgrade failed on "
        f"{second} (to retry, fix the cause, then kubectl label node {second} nvidia.com/gpu-driver-upgrade-state=upgrade-required "
        "--overwrite; a node whose driver pod comes up Ready on the new driver moves on by itself); upgrading "
        f"{first} (drain-required); wait, or give --override-soak REASON"
    )
    with pytest.raises(PlanRefused) as caught:  # the wave is done now, but nobody saw it done before: no soak yet
        apply_wave(loaded(applied), 2, None, AT + 60 * H, evidence=evidence(applied))
    assert caught.value.findings[0].message == (
        "wave 1 is done on this evidence, but its soak has not started: record it with `fleetgen upgrade verify --wave 1` "
        "(its 48h soak starts then), or give --override-soak REASON"
    )
    with pytest.raises(PlanRefused, match="wave 1 is not done on its nodes: dev-eastus: 3 of 4 GPU nodes on driver 560.35.03"):
        verify_wave(loaded(applied), 1, halfway, AT + H)


def test_a_wave_before_the_previous_soak_ends_is_refused_with_the_time_it_may_start(wave1: str) -> None:
    with pytest.raises(PlanRefused) as caught:
        apply_wave(loaded(wave1), 2, None, AT + 30 * H, evidence=evidence(wave1))
    assert caught.value.findings[0].message == (
        "wave 2 may start at 2026-11-26 15:00 UTC: wave 1, verified on its nodes 2026-11-24 15:00 UTC, soaks 48h "
        "(rollout.soak; 1d left); wait, or give --override-soak REASON"
    )
    assert "appliedAt: '2026-11-26T15:00:00Z'" in apply_wave(loaded(wave1), 2, None, V + 48 * H, evidence=evidence(wave1))


def test_an_override_is_recorded_shown_by_status_and_by_the_change_summary(wave1: str) -> None:
    wave2 = apply_wave(loaded(wave1), 2, None, AT + 30 * H, override_soak="CVE-2026-1234: driver fix")
    assert changed_lines(wave1, wave2)[-1] == (
        "+    - {wave: 2, step: {driver: 560.35.03}, clusters: [training-eastus], appliedAt: '2026-11-25T15:00:00Z', "
        "overrideSoak: 'CVE-2026-1234: driver fix'}"
    )
    head = loaded(wave2).fleet
    status = upgrade_status(head, AT + 31 * H)
    assert "soak overridden: wave 2 started before wave 1 was done and soaked: CVE-2026-1234: driver fix" in status_text(
        status, AT + 31 * H
    )
    summary = [c.text for c in fleet_changes(loaded(wave1).fleet, head)]
    assert "upgrade wave 2: soak of wave 1 cut short (overrideSoak: CVE-2026-1234: driver fix)" in summary
    # wave 3 waits for wave 2 like any other: done on training-eastus's nodes, verified, soaked
    wave2 = verified(wave2, 2, AT + 32 * H)
    with pytest.raises(PlanRefused, match=r"^wave 3 may start at 2026-11-27 17:00 UTC: wave 2, verified on its nodes 2026-11-25 17:00"):
        apply_wave(loaded(wave2), 3, None, AT + 50 * H, evidence=evidence(wave2, 2))


def test_an_override_that_changes_nothing_is_not_recorded(wave1: str) -> None:
    wave2 = apply_wave(loaded(wave1), 2, None, AT + 60 * H, override_soak="just in case", evidence=evidence(wave1))
    assert "overrideSoak" not in wave2 and "just in case" not in wave2


def test_a_wave_starts_only_inside_a_window_and_outside_freezes() -> None:
    text = PLANNABLE + WINDOWS
    monday_evening = datetime.datetime(2026, 11, 23, 20, tzinfo=UTC)
    assert refused(text, 1, monday_evening, DRIVER) == (
        "wave 1 may start at 2026-11-24 09:00 UTC: 2026-11-23 20:00 UTC is outside the maintenance windows (rollout.windows)"
    )
    wave1 = verified(apply_wave(loaded(text), 1, DRIVER, AT), 1, AT)
    thursday = datetime.datetime(2026, 11, 26, 10, tzinfo=UTC)  # soak over, inside the window, but frozen
    with pytest.raises(PlanRefused) as caught:
        apply_wave(loaded(wave1), 2, None, thursday, evidence=evidence(wave1))
    assert caught.value.findings[0].message == (
        "wave 2 may start at 2026-12-01 09:00 UTC: 2026-11-26 10:00 UTC is inside the freeze 2026-11-26 to 2026-11-30 (holiday) "
        "(rollout.freezes)"
    )
    # before the soak ends, the time given is the first window after it and after the freeze
    with pytest.raises(PlanRefused) as caught:
        apply_wave(loaded(wave1), 2, None, AT + H, evidence=evidence(wave1))
    assert caught.value.findings[0].message.startswith(
        "wave 2 may start at 2026-11-25 09:00 UTC: wave 1, verified on its nodes 2026-11-24 09:00 UTC, soaks 24h (rollout.soak; 23h left)"
    )
    with pytest.raises(PlanRefused, match="inside the freeze"):  # an override cuts the soak short, never a freeze
        apply_wave(loaded(wave1), 2, None, thursday, override_soak="urgent")


def test_apply_before_the_soak_is_a_one_line_finding_on_the_real_cli(tmp_path: Path, cli_run: Run, wave1: str) -> None:
    (tmp_path / "fleet.yaml").write_text(wave1)
    done = cli_run("upgrade", "apply", "--wave", "2", "--at", "2026-11-25T09:00Z", "--no-render")
    assert done.returncode == 1 and "no evidence for dev-eastus" in done.stderr
    args = evidence_files(tmp_path, loaded(wave1).fleet, 1)
    done = cli_run("upgrade", "apply", "--wave", "2", "--at", "2026-11-25T09:00Z", "--no-render", *args)
    assert done.returncode == 1
    problems = [line for line in done.stderr.splitlines() if not line.endswith("warning(s)")]
    assert problems == [
        "upgrade: wave 2 may start at 2026-11-26 15:00 UTC: wave 1, verified on its nodes 2026-11-24 15:00 UTC, soaks 48h "
        "(rollout.soak; 1d 6h left); wait, or give --override-soak REASON"
    ]
    assert (tmp_path / "fleet.yaml").read_text() == wave1
    done = cli_run("upgrade", "apply", "--wave", "2", "--at", "2026-11-26T15:00Z", "--no-render", *args)
    assert done.returncode == 0, done.stderr


# -- folding interim version sets ----------------------------------------------------------------


def all_waves(text: str, requested: dict[str, Version], soak: datetime.timedelta = 48 * H) -> list[str]:
    """fleet.yaml after each wave, each verified on its nodes when applied and the next applied when its soak ends."""
    out = [verified(apply_wave(loaded(text), 1, requested, AT), 1, AT)]
    record = loaded(out[0]).fleet.upgrade
    assert record is not None
    for number in range(2, len(record.waves) + 1):
        at = AT + (number - 1) * soak
        out.append(verified(apply_wave(loaded(out[-1]), number, None, at, evidence=evidence(out[-1], number - 1)), number, at))
    return out


def comment_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("#")]


def test_the_last_wave_folds_interim_sets_back_and_closes_the_record() -> None:
    before = PLANNABLE
    waves = all_waves(before, DRIVER)
    assert "prod-2024q4-w2" in waves[1]
    final = waves[-1]
    assert "-w2" not in final.split("upgrade:")[0]
    result = loaded(final)  # validates: every reference resolves, the policy holds
    fleet = result.fleet
    assert {c.name: c.version_set for c in fleet.clusters if c.environment == "production"} == dict.fromkeys(
        ("prod-inference-eastus", "prod-inference-westeu", "training-eastus"), "prod-2024q4"
    )
    assert fleet.upgrade is not None and fleet.upgrade.closed_at == AT + 144 * H
    assert not [w for w in result.warnings if "identical" in w.message]
    # only the versions and the record differ from the fleet before the upgrade: comments and layout kept
    upgrade_lines = [line for line in changed_lines(before, final) if not line.startswith(("-    driver:", "+    driver:"))]
    assert all(line.startswith("+") for line in upgrade_lines)
    assert upgrade_lines[-1] == "+  closedAt: '2026-11-30T09:00:00Z'"
    assert comment_lines(final)[: len(comment_lines(before))] == comment_lines(before)
    assert "complete (4 wave(s) applied); closed 2026-11-30 09:00 UTC, interim version sets folded back" in status_text(
        upgrade_status(fleet, AT + 150 * H), AT + 150 * H
    )


def test_folding_keeps_the_comments_after_an_interim_set_that_ends_its_block() -> None:
    """Here the production set is the last of versionSets: its interim set comes last, before a comment."""
    text = PLANNABLE
    prod = text[text.index("  prod-2024q4:\n") : text.index("  dev-2024q4:\n")]
    dev_end = text.index("\n\n", text.index("  dev-2024q4:\n")) + 1
    dev = text[text.index("  dev-2024q4:\n") : dev_end]
    reordered = replace_once(text, prod + dev, dev + prod)
    waves = all_waves(reordered, DRIVER)
    assert "  prod-2024q4-w2:\n" in waves[1]
    final = waves[-1]
    assert "-w2" not in final.split("upgrade:")[0]
    assert comment_lines(final)[: len(comment_lines(reordered))] == comment_lines(reordered)
    assert all(line.startswith(("+", "-    driver:")) for line in changed_lines(reordered, final))
    loaded(final)


def test_kubernetes_minor_by_minor_ends_on_the_original_set_names() -> None:
    before = PLANNABLE
    final = all_waves(before, {"kubernetes": Version("1.31.2")})[-1]
    fleet = loaded(final).fleet
    assert list(fleet.version_sets) == ["prod-2024q4", "dev-2024q4"]
    assert {str(vs.kubernetes) for vs in fleet.version_sets.values()} == {"1.31.2"}
    assert fleet.upgrade is not None and fleet.upgrade.complete and fleet.upgrade.closed_at is not None


def test_only_interim_sets_are_folded_never_sets_a_person_named() -> None:
    record = loaded(all_waves(PLANNABLE, DRIVER)[0]).fleet.upgrade
    assert record is not None
    row = {"containerd": "1.7", "kubernetes": "1.29.4", "driver": "560.35.03", "cuda": "12.4", "cudnn": "9.1.0"}
    same = {k: Version(v) for k, v in row.items()}
    rows = {"prod": same, "prod-copy": same, "prod-w2": same, "other-w2": same, "prod-w9": same}
    # prod-w2 is interim (wave 2 of a 3-wave upgrade beside prod); other-w2 has no `other`, prod-w9 no wave 9
    assert folds(rows, record) == {"prod-w2": "prod"}


# -- live versions ----------------------------------------------------------------------------------


def configmap_dump(fleet_text: str, tmp_path: Path, name: str, **overrides: str) -> Path:
    """A `kubectl get configmap -A -o yaml` dump holding the cluster's rendered fleet-versions, with server noise."""
    from fleetgen.render.kueue import fleet_versions

    fleet = loaded(fleet_text).fleet
    cluster = next(c for c in fleet.clusters if c.name == name)
    body: dict[str, Any] = fleet_versions(fleet, cluster, ("clusters", 0))[0].body
    body = {**body, "data": {**body["data"], **overrides}}
    body["metadata"] = {**body["metadata"], "uid": "0b6c", "resourceVersion": "4711", "creationTimestamp": "2026-11-20T08:00:00Z"}
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": "default"}, "data": {}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [other, body]}))
    return path


def test_status_reads_live_versions_and_names_the_clusters_that_lag(tmp_path: Path, wave1: str) -> None:
    original = PLANNABLE
    (tmp_path / "empty.yaml").write_text("apiVersion: v1\nkind: List\nitems: []\n")
    live = {
        "dev-eastus": read_live([configmap_dump(original, tmp_path, "dev-eastus")]),  # wave 1 not synced yet
        "training-eastus": read_live([configmap_dump(original, tmp_path, "training-eastus")]),
        "prod-inference-eastus": read_live([tmp_path / "empty.yaml"]),
    }
    fleet = loaded(wave1).fleet
    states = live_versions(fleet, live)
    assert [(s.cluster, s.lags, s.missing) for s in states] == [
        ("prod-inference-eastus", (), True),
        ("training-eastus", (), False),
        ("dev-eastus", ("driver 550.90.07 live, 560.35.03 in fleet.yaml",), False),
    ]
    text = status_text(upgrade_status(fleet, AT + H), AT + H, states)
    assert text.splitlines()[-3:] == [
        "live prod-inference-eastus: no fleet-versions ConfigMap in kube-public; the cluster has not synced fleetgen's tree",
        "live training-eastus: runs what fleet.yaml says",
        "live dev-eastus: lags fleet.yaml: driver 550.90.07 live, 560.35.03 in fleet.yaml",
    ]


def test_live_dumps_of_the_wrong_cluster_or_an_unknown_one_are_usage_errors(tmp_path: Path) -> None:
    fleet = loaded(PLANNABLE).fleet
    dump = read_live([configmap_dump(PLANNABLE, tmp_path, "dev-eastus")])
    with pytest.raises(InputError, match="^--live training-eastus: the dump's fleet-versions ConfigMap is of cluster dev-eastus$"):
        live_versions(fleet, {"training-eastus": dump})
    with pytest.raises(InputError, match="^--live nope: no such cluster in fleet.yaml"):
        live_versions(fleet, {"nope": dump})
    garbage = read_live([configmap_dump(PLANNABLE, tmp_path, "dev-eastus", driver="x\ny" * 50)])
    (state,) = live_versions(fleet, {"dev-eastus": garbage})
    assert state.lags[0].startswith("driver 'x\\nyx\\nyx") and "\n" not in state.lags[0]


def test_a_reverted_wave_is_still_caught_before_the_soak_gate(wave1: str) -> None:
    reverted = replace_once(wave1, '    driver: 560.35.03\n    cuda: "12.6"', '    driver: 550.90.07\n    cuda: "12.6"')
    assert (
        refused(reverted, 2, AT + 60 * H)
        == "dev-eastus runs driver 550.90.07, not 560.35.03 as an applied wave set it; fix fleet.yaml first"
    )


def test_status_end_to_end_after_the_last_wave(tmp_path: Path, cli_run: Run) -> None:
    (tmp_path / "fleet.yaml").write_text(PLANNABLE)
    # a year back: apply and verify refuse a time later than now
    for number, at in ((1, "2025-11-24T09:00Z"), (2, "2025-11-26T09:00Z"), (3, "2025-11-28T09:00Z"), (4, "2025-11-30T09:00Z")):
        args = (
            ["--set", "driver=560.35.03"]
            if number == 1
            else evidence_files(tmp_path, loaded((tmp_path / "fleet.yaml").read_text()).fleet, number - 1)
        )
        done = cli_run("upgrade", "apply", "--wave", str(number), *args, "--at", at, "--no-render")
        assert done.returncode == 0, done.stderr
        fleet = loaded((tmp_path / "fleet.yaml").read_text()).fleet
        done = cli_run("upgrade", "verify", "--wave", str(number), *evidence_files(tmp_path, fleet, number), "--at", at)
        assert done.returncode == 0, done.stderr
    assert "prod-2024q4-w2" not in (tmp_path / "fleet.yaml").read_text()
    status = cli_run("upgrade", "status", "--now", "2025-12-01T09:00Z")
    assert "closed 2025-11-30 09:00 UTC, interim version sets folded back" in status.stdout


def test_override_soak_on_the_real_cli_is_recorded_and_shown_by_status_and_diff(repo: Path, cli_run: Run) -> None:
    (repo / "fleet.yaml").write_text(PLANNABLE)
    first = cli_run("upgrade", "apply", "--wave", "1", "--set", "driver=560.35.03", "--at", "2026-11-24T09:00Z", "--no-render", cwd=repo)
    assert first.returncode == 0, first.stderr
    git(repo, "commit", "-qam", "wave 1")
    early = ["upgrade", "apply", "--wave", "2", "--at", "2026-11-25T15:00Z", "--no-render"]
    assert cli_run(*early, cwd=repo).returncode == 1  # the soak has 18h left
    second = cli_run(*early, "--override-soak", "CVE-2026-1234: driver fix", cwd=repo)
    assert second.returncode == 0, second.stderr
    assert "overrideSoak: 'CVE-2026-1234: driver fix'" in (repo / "fleet.yaml").read_text()
    status = cli_run("upgrade", "status", "--now", "2026-11-25T16:00Z", cwd=repo)
    assert "soak overridden: wave 2 started before wave 1 was done and soaked: CVE-2026-1234: driver fix" in status.stdout
    diff = cli_run("diff", "--base", "HEAD", cwd=repo)
    assert "upgrade wave 2: soak of wave 1 cut short (overrideSoak: CVE-2026-1234: driver fix)" in diff.stdout + diff.stderr

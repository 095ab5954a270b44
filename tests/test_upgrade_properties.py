"""The upgrade promises as properties over generated fleets (tests/generated_versions.py): several clusters a stage,
DR pairs, version sets with their own GPU Operator pins and Kubernetes patches, and the targets a team asks for.

Each property is one promise: a plan rolls every phase out dev -> staging -> production canary -> production with DR
halves apart, whatever the steps carry; it is a pure function of fleet.yaml and the request, under any hash seed; no
component moves down without --allow-downgrade; Kubernetes crosses minors one at a time at real patches; and no time
the caller gives starts a wave before the previous one has soaked; a wave is verified on the nodes of every
distribution (EKS, GKE, k3s, RKE2, OpenShift, AKS).
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

import pytest
from generated_versions import TARGETS, VersionFleet, _fleet, targets, version_fleets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from node_dumps import DISTRIBUTIONS, evidence_of, on_distribution, wave_evidence

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import InputError
from fleetgen.model import Fleet, Version
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.arguments import recorded_moment
from fleetgen.upgrade.operator import cluster_versions
from fleetgen.upgrade.plan import STAGES, Plan, PlanRefused, plan_upgrade
from fleetgen.upgrade.verify import verify_wave

UTC = datetime.UTC
STAGE_RANK = {"canary (dev)": 0, "canary (staging)": 1, "production canary": 2, "production": 3}
AT = datetime.datetime(2025, 11, 24, 9, tzinfo=UTC)
H = datetime.timedelta(hours=1)
FAST = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def requested(target: dict[str, str]) -> dict[str, Version]:
    return {k: Version(v) for k, v in target.items()}


def plan_or_refusal(fleet: Fleet, target: dict[str, str], *, allow_downgrade: bool = False) -> Plan | list[str]:
    try:
        return plan_upgrade(fleet, requested(target), allow_downgrade=allow_downgrade)
    except PlanRefused as refused:
        return [f.message for f in refused.findings]


def phase_of(step: tuple[tuple[str, Version], ...]) -> tuple[int, tuple[int, ...]]:
    group = next(i for i, stage in enumerate(STAGES) if step[0][0] in stage)
    versions = dict(step)
    return group, versions["kubernetes"].minor if "kubernetes" in versions else ()


@FAST
@given(generated=version_fleets(), target=targets())
def test_every_phase_rolls_out_in_stage_order_with_dr_halves_apart(generated: VersionFleet, target: dict[str, str]) -> None:
    fleet = load_fleet_text(generated.text.encode()).fleet
    plan = plan_or_refusal(fleet, target)
    if not isinstance(plan, Plan):
        return  # refusals are the next property's business
    phases: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for wave in plan.waves:
        phases.setdefault(phase_of(wave.step), []).append(STAGE_RANK[wave.stage])
        assert {generated.environments[c] for c in wave.clusters} == {
            "canary (dev)": {"dev"},
            "canary (staging)": {"staging"},
        }.get(wave.stage, {"production"})
        assert not any(generated.partners.get(c) in wave.clusters for c in wave.clusters), wave
        assert len(wave.clusters) <= (1 if wave.stage == "production canary" else fleet.rollout.max_wave_size) or wave.stage != "production"
    assert all(ranks == sorted(ranks) for ranks in phases.values()), phases
    assert list(phases) == sorted(phases)  # phases in a cluster's own order: containerd, Kubernetes by minor, driver, images
    for cluster in fleet.clusters:  # one step a phase, and each cluster ends on the target
        moves = [w for w in plan.waves if cluster.name in w.clusters]
        assert len({phase_of(w.step) for w in moves}) == len(moves)
        state = cluster_versions(fleet, cluster)
        for wave in moves:
            state.update(dict(wave.step))
        assert all(state[c] == v for c, v in requested(target).items() if c in state)


@FAST
@given(generated=version_fleets(), target=targets())
def test_no_component_moves_down_without_allow_downgrade(generated: VersionFleet, target: dict[str, str]) -> None:
    fleet = load_fleet_text(generated.text.encode()).fleet
    below = sorted(
        (c.name, part)
        for c in fleet.clusters
        for part, want in requested(target).items()
        if part in (have := cluster_versions(fleet, c)) and want < have[part]
    )
    outcome = plan_or_refusal(fleet, target)
    if below:
        assert isinstance(outcome, list) and all(
            any(m.startswith(f"{name}: ") and "downgrade" in m for m in outcome) for name, _ in below
        ), (below, outcome)
        allowed = plan_or_refusal(fleet, target, allow_downgrade=True)
        clusters = {c.name: cluster_versions(fleet, c) for c in fleet.clusters}
        minor_down = any(p == "kubernetes" and requested(target)[p].minor < clusters[n][p].minor for n, p in below)
        downgrades = [m for m in ([] if isinstance(allowed, Plan) else allowed) if "downgrade" in m]
        assert all("Kubernetes cannot be downgraded" in m for m in downgrades) and (minor_down or not downgrades), downgrades
        return
    assert isinstance(outcome, Plan), outcome
    for cluster in fleet.clusters:
        state = cluster_versions(fleet, cluster)
        for wave in (w for w in outcome.waves if cluster.name in w.clusters):
            for part, version in wave.step:
                assert part not in state or version >= state[part], (cluster.name, part, state[part], version)
                if part == "kubernetes":  # one minor a step, each a real patch release
                    assert len(version.parts) == 3 or version == requested(target).get("kubernetes")
                    assert version.minor[1] - state[part].minor[1] <= 1
                state[part] = version


@FAST
@given(generated=version_fleets(), target=targets())
def test_a_plan_is_a_pure_function_of_the_fleet_and_the_request(generated: VersionFleet, target: dict[str, str]) -> None:
    first = plan_or_refusal(load_fleet_text(generated.text.encode()).fleet, target)
    again = plan_or_refusal(load_fleet_text(generated.text.encode()).fleet, target)
    assert first == again if isinstance(first, list) else isinstance(again, Plan) and first.waves == again.waves


def plan_under_seed(text: str, folder: Path, seed: int, target: dict[str, str]) -> str:
    (folder / "fleet.yaml").write_text(text)
    sets = [arg for part, version in target.items() for arg in ("--set", f"{part}={version}")]
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-m", "fleetgen", "upgrade", "plan", "--format", "json", *sets],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


# Fleets where the hash seed used to decide: operator pins that split one driver step in two, several clusters a
# stage, a DR pair, every stage.
SEEDED = (
    (_fleet(["production", "dev", "production", "production"], [0, 3, 0, 0], [2, 0, 1, 2], 1, 2), TARGETS[0]),
    (_fleet(["dev", "staging", "staging", "production", "production", "dev"], [3, 4, 2, 0, 0, 2], [0, 1, 2, 0, 1, 2], 1, 1), TARGETS[0]),
    (_fleet(["staging", "production", "dev", "production"], [2, 1, 3, 1], [1, 1, 0, 2], 2, 3), TARGETS[4]),
)


@pytest.mark.slow
@pytest.mark.parametrize(("generated", "target"), SEEDED)
def test_the_plan_is_byte_identical_under_several_hash_seeds(tmp_path: Path, generated: VersionFleet, target: dict[str, str]) -> None:
    outputs = {plan_under_seed(generated.text, tmp_path, seed, target) for seed in (0, 1, 7)}
    assert len(outputs) == 1 and outputs.pop().startswith("exit 0\n")


@pytest.mark.slow
@FAST
@given(
    generated=version_fleets(),
    verified_after=st.integers(0, 72),
    at_after=st.integers(-24, 400),
    now_after=st.integers(0, 400),
)
def test_no_time_the_caller_gives_starts_a_wave_before_the_soak_ends(
    generated: VersionFleet, verified_after: int, at_after: int, now_after: int
) -> None:
    """Wave 1 applied at AT and seen done `verified_after` hours later; wave 2 asked for at any `--at`, run at any now."""
    loaded = load_fleet_text(generated.text.encode())
    try:
        wave1 = apply_wave(loaded, 1, {"driver": Version("560.35.03")}, AT)
    except PlanRefused:
        return  # every cluster already runs it, or nothing else to test
    record = load_fleet_text(wave1.encode())
    assert record.fleet.upgrade is not None
    if len(record.fleet.upgrade.waves) < 2:
        return
    verified = AT + verified_after * H
    text = verify_wave(record, 1, wave_evidence(record.fleet, 1), verified)[0]
    now = AT + now_after * H
    asked = (AT + at_after * H).strftime("%Y-%m-%dT%H:%MZ")
    try:
        at = recorded_moment(asked, "--at", now)
    except InputError:
        assert AT + at_after * H > now  # refused only when later than now (beyond the allowance)
        return
    soak_end = verified + record.fleet.rollout.soak
    try:
        applied = apply_wave(load_fleet_text(text.encode()), 2, None, at, evidence=wave_evidence(load_fleet_text(text.encode()).fleet, 1))
    except PlanRefused as refused:
        assert at < soak_end, refused.findings  # refused for the soak, or the window: never past its end
        return
    assert at >= soak_end and at <= now + datetime.timedelta(minutes=5) and "overrideSoak" not in applied


@pytest.mark.slow
@FAST
@given(generated=version_fleets(), target=st.sampled_from(["1.30.5", "1.31.2"]), distribution=st.sampled_from(sorted(DISTRIBUTIONS)))
def test_a_kubernetes_wave_is_verified_on_every_distribution_s_nodes(generated: VersionFleet, target: str, distribution: str) -> None:
    """The wave's nodes report its Kubernetes as their distribution writes it: done; one patch behind: not done, and
    never a node that cannot be verified."""
    loaded = load_fleet_text(generated.text.encode())
    try:
        wave1 = load_fleet_text(apply_wave(loaded, 1, {"kubernetes": Version(target)}, AT).encode())
    except PlanRefused:
        return  # a downgrade, or nothing to move
    assert wave1.fleet.upgrade is not None
    wave = wave1.fleet.upgrade.waves[0]
    reached = str(wave.step["kubernetes"])
    major, minor, patch = (reached.split(".") + ["0"])[:3]
    for kubelet, done in ((reached, True), (f"{major}.{minor}.{int(patch) + 1}", False)):
        evidence = {
            name: on_distribution({"items": evidence_of(wave1.fleet, name)}, distribution, kubelet, "1.7.15")["items"]
            for name in wave.clusters
        }
        try:
            verify_wave(wave1, 1, evidence, AT + H)
            assert done
        except PlanRefused as refused:
            assert not done and "cannot verify" not in refused.findings[0].message, refused.findings

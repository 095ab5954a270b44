"""A step that changes GPU nodes (driver, GPU Operator, CUDA, cuDNN) moves only clusters with GPU pools, as a
property over the generated fleets (tests/generated_fleets.py): they hold CPU-only clusters now and then, in any
environment, and the production canary named or chosen. Every wave of such a step holds only clusters with GPU
pools, the production canary goes first and alone, every GPU cluster reaches the target, and a named canary
without GPUs is refused in one line that names it."""

from __future__ import annotations

from typing import Any

from generated_fleets import edited, fleet_text, fleets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.model import Version
from fleetgen.upgrade.plan import STAGES, PlanRefused, Wave, plan_upgrade

# Targets the generated fleets (driver 580.82.07, CUDA 13.0, GPU Operator v25.10.1) can reach; CUDA 13.1 implies a
# newer driver, so its plan has two GPU phases.
GPU_TARGETS = ({"driver": "580.95.05"}, {"driver": "590.48.01"}, {"cuda": "13.1"})
# The same for fleets on GPU Operator v26.7 (driver 580.173.02): a driver it lists, and CUDA 13.1 (driver 595.91.07)
PER_POOL_TARGETS = ({"driver": "595.91.07"}, {"driver": "610.57.04"}, {"cuda": "13.1"})
GPU_PARTS = {"driver", "gpuOperator", "cuda", "cudnn"}


def _phase(wave: Wave) -> int:
    """The plan's phase of a wave: its group in STAGES, so a driver step that also moves a cluster's GPU Operator (its
    release lacks the driver) is the same phase as the driver alone on the other clusters (plan.py)."""
    return next(i for i, stage in enumerate(STAGES) if next(iter(dict(wave.step))) in stage)


def _gpu_clusters(fleet: dict[str, Any]) -> set[str]:
    return {c["name"] for c in fleet["clusters"] if any(p["gpusPerNode"] for p in c["nodePools"])}


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=fleets(), target=st.sampled_from(GPU_TARGETS), pick=st.integers(0, 5))
def test_every_wave_of_a_step_that_changes_gpu_nodes_holds_gpu_clusters_canary_first(
    generated: dict[str, Any], target: dict[str, str], pick: int
) -> None:
    fleet = edited(generated)
    production = [c["name"] for c in fleet["clusters"] if c["environment"] == "production"]
    named = production[pick] if pick < len(production) else None  # a production cluster named as canary, or none
    if named is not None:
        fleet["rollout"] = {"productionCanary": named}
    gpu = _gpu_clusters(fleet)
    if "platform" in fleet:  # the GPU Operator release with a driver per node pool
        target = PER_POOL_TARGETS[GPU_TARGETS.index(target)]
    model = load_fleet_text(fleet_text(fleet).encode()).fleet
    try:
        # a node image for the GPU clusters whose images carry the driver (plan refuses one that no moving cluster needs)
        baked = any(model.platform_of(c).gpu_operator.driver_source == "node-image" for c in model.clusters if c.name in gpu)
        plan = plan_upgrade(model, {k: Version(v) for k, v in target.items()}, node_image="ubuntu-2404-gpu-next" if baked else None)
    except PlanRefused as refused:
        messages = [f.message for f in refused.findings]
        assert named is not None and named not in gpu and len(messages) == 1, messages
        assert messages[0].startswith(f"rollout.productionCanary: {named} has no GPU node pools"), messages
        return
    assert named is None or named in gpu or not gpu & set(production)
    reached: dict[str, set[str]] = {}
    for phase in sorted({_phase(w) for w in plan.waves}):
        waves = [w for w in plan.waves if _phase(w) == phase]
        for wave in waves:
            assert GPU_PARTS >= set(dict(wave.step)), wave.step  # the targets change only GPU nodes
            assert set(wave.clusters) <= gpu, (wave, gpu)
            for name in wave.clusters:
                reached.setdefault(name, set()).update(dict(wave.step))
        stages = [w.stage for w in waves]
        moving_production = gpu & set(production)
        if moving_production:
            first = stages.index("production canary")
            canary = [w for w in waves if w.stage == "production canary"]  # a second when the canary moves pool by pool
            assert len({w.clusters for w in canary}) == 1 and len(waves[first].clusters) == 1
            assert len(canary) == 1 or (len(canary) == 2 and canary[0].ahead and not canary[1].ahead)
            assert "production" not in stages[:first]  # the canary before the rest of production
            assert named is None or waves[first].clusters == (named,)
    assert set(reached) == gpu  # every GPU cluster moves, and none without GPUs

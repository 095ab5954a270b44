"""Canary upgrade planning: which clusters move, in which waves, when. Pure: no disk, no clock.

A cluster moves one component at a time, in COMPONENTS order (the driver before the CUDA and
cuDNN images), and Kubernetes one minor at a time; every state it passes through is checked
against the compatibility rules (the facts validate uses: fleetgen's own merged with the fleet's
facts file) and a driver against those its cluster's GPU Operator release supports. A phase is
one such step (e.g. "driver 560.35.03"); each phase rolls out in waves: dev, then staging, then
one production cluster while its DR partner stays behind, then the other production clusters,
never both halves of a DR pair in one wave and at most `maxWaveSize` a wave. Each wave soaks before the next starts.
Where a cluster's GPU Operator manages the driver per node pool, a driver step moves its canary pool in the stage's
first wave and the rest of its GPU pools in a wave of their own after it (pool_waves.py).
A step that changes GPU nodes (driver, GPU Operator, CUDA, cuDNN) moves only the clusters with GPU pools: a cluster
without them (a MultiKueue manager) has nothing to show for it, so it is never such a step's canary.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field

from fleetgen.compat import Facts, facts, version_set_problems
from fleetgen.compat.dcgm_exporter import exporter_rename
from fleetgen.compat.gpu_operator import image_driver
from fleetgen.compat.pool_drivers import driver_crd_on
from fleetgen.compat.rules import cuda_on_driver
from fleetgen.errors import Finding, FindingsError, InputError, Severity
from fleetgen.model import COMPONENTS, UPGRADE_COMPONENTS, Cluster, Fleet, Rollout, Version, VersionSet
from fleetgen.model.stages import stages_of
from fleetgen.upgrade.crd_switch import CrdSwitch, crd_switches
from fleetgen.upgrade.moments import later
from fleetgen.upgrade.operator import cluster_versions, component_text, operator_problem, supports
from fleetgen.upgrade.pool_waves import PoolMove, moves_by_pool, pool_moves
from fleetgen.upgrade.targets import complete_target

Step = tuple[tuple[str, Version], ...]  # the (component, version) pairs one step sets
# CUDA and cuDNN ship in the same images; the GPU Operator release and the driver move in one Helm upgrade
STAGES = (("containerd",), ("kubernetes",), ("driver", "gpuOperator"), ("cuda", "cudnn"))
# What changes GPU nodes (or the images that run on them): only clusters with GPU pools take these steps
GPU_NODE_COMPONENTS = frozenset(("driver", "gpuOperator", "cuda", "cudnn"))


class PlanRefused(FindingsError):
    """The rules reject the target, or a state on the way to it (exit 1, with the reasons)."""

    def __init__(self, reasons: list[str]):
        # fix: Choose a target the rule allows, or plan the step it names first
        super().__init__([Finding(("upgrade",), reason) for reason in reasons])
        self.args = ("; ".join(reasons),)


@dataclass(frozen=True)
class Wave:
    number: int
    step: Step
    stage: str  # canary (dev), canary (staging), production canary, production
    clusters: tuple[str, ...]
    start: datetime.datetime | None = None
    soak_until: datetime.datetime | None = None
    node_image: str | None = None  # the image this wave rolls its clusters' node pools to (their images carry the driver)
    pools: tuple[PoolMove, ...] = ()  # the GPU pools it moves on clusters with a driver per pool (pool_waves.py)
    ahead: tuple[str, ...] = ()  # of those, the canary pools (cluster/pool) it moves before the rest of their cluster


@dataclass
class Plan:
    target: dict[str, Version]
    implied: list[str]
    waves: list[Wave]
    soak: datetime.timedelta
    warnings: list[str] = field(default_factory=list)
    node_image: str | None = None
    crd_switches: list[CrdSwitch] = field(default_factory=list)  # what may follow the waves, in a pull request each

    @property
    def eta(self) -> datetime.datetime | None:
        return self.waves[-1].soak_until if self.waves and self.waves[-1].soak_until else None


def versions_of(vs: VersionSet) -> dict[str, Version]:
    """A version set's versions: the matrix row, and its GPU Operator release when it names one."""
    out: dict[str, Version] = {c: getattr(vs, c) for c in COMPONENTS}
    if vs.gpu_operator is not None:
        out["gpuOperator"] = vs.gpu_operator
    return out


def _with(values: dict[str, Version]) -> VersionSet:
    return VersionSet.model_validate({k: str(v) for k, v in values.items()})


def step_label(step: Step) -> str:
    return ", ".join(f"{component} {component_text(component, version)}" for component, version in step)


def cluster_steps(
    current: dict[str, Version], target: dict[str, Version], data: Facts | None = None, *, allow_downgrade: bool = False
) -> tuple[list[Step], list[str]]:
    """The steps from `current` to `target`, and the reasons any target is out of reach. Kubernetes moves one minor a
    step, through the patch release the facts name for each minor it crosses; it never goes down a minor, and down a
    patch only with `allow_downgrade`."""
    steps: list[Step] = []
    refused: list[str] = []
    for stage in STAGES:
        moves = tuple((c, target[c]) for c in stage if c in target and target[c] != current[c])
        if not moves:
            continue
        if stage == ("kubernetes",):
            have, want = current["kubernetes"], target["kubernetes"]
            if want.minor < have.minor:
                refused.append(f"Kubernetes cannot be downgraded ({have} -> {want})")
                continue
            if want < have and not allow_downgrade:
                refused.append(f"kubernetes {have} -> {want} is a downgrade; give --allow-downgrade to plan it")
                continue
            passing, reasons = _minors_between(have, want, data or facts())
            refused += reasons
            steps += [(("kubernetes", patch),) for patch in passing]
        steps.append(moves)
    return steps, refused


def _minors_between(have: Version, want: Version, data: Facts) -> tuple[list[Version], list[str]]:
    """The patch release of each minor strictly between `have` and `want` (the version-skew policy: one minor at a
    time), from the facts' kubernetesReleases; a minor the facts name no patch of is a reason to refuse."""
    patches = {row.kubernetes.minor: row.patch for row in data.kubernetes_releases}
    major, minor = have.minor
    passing: list[Version] = []
    refused: list[str] = []
    for between in range(minor + 1, want.minor[1]):
        patch = patches.get((major, between))
        if patch is None:
            refused.append(
                f"Kubernetes {major}.{between} lies between {have} and {want}, and the compatibility facts name no patch "
                "release of it to pass through (kubernetesReleases[].patch: add it in the fleet's facts file)"
            )
        else:
            passing.append(patch)
    return passing, refused


def plan_upgrade(
    fleet: Fleet,
    requested: dict[str, Version],
    start: datetime.datetime | None = None,
    data: Facts | None = None,
    *,
    allow_downgrade: bool = False,
    node_image: str | None = None,
) -> Plan:
    """The waves from the fleet's versions to `requested`, judged by `data` (the shipped facts unless given:
    pass LoadedFleet.facts so a fleet's own facts file counts). A target below a cluster's version is refused
    unless `allow_downgrade` (Kubernetes never goes down). Clusters whose node images carry the driver move it by
    a node image change: `node_image`, which the plan lists on their waves."""
    data = data or facts()
    if fleet.upgrade is not None and not fleet.upgrade.complete:
        pending = next(w.wave for w in fleet.upgrade.waves if w.applied_at is None)
        raise PlanRefused([f"an upgrade is in progress (wave {pending} of {len(fleet.upgrade.waves)} is next); finish it first"])
    beyond = beyond_the_data(requested, data)
    if beyond:
        raise PlanRefused(beyond)
    completed = complete_target(fleet, requested, data)
    target = completed.versions
    per_cluster: dict[str, list[Step]] = {}
    refused: list[str] = []
    warnings: set[str] = set()
    for cluster in fleet.clusters:
        current = cluster_versions(fleet, cluster)
        wanted = _wanted(current, target, completed.implied_parts)
        if not has_gpu_pools(cluster):  # nothing on its nodes to change, and nothing to show a canary's evidence
            wanted = {c: v for c, v in wanted.items() if c not in GPU_NODE_COMPONENTS}
        steps, reasons = cluster_steps(current, wanted, data, allow_downgrade=allow_downgrade)
        refused += [f"{cluster.name}: {r}" for r in reasons]
        if not allow_downgrade:
            refused += [
                f"{cluster.name}: {c} {component_text(c, current[c])} -> {component_text(c, wanted[c])} is a downgrade; "
                "give --allow-downgrade to plan it"
                for c in wanted
                if c != "kubernetes" and wanted[c] < current[c]  # cluster_steps judges Kubernetes
            ]
        gpus = frozenset(p.gpu_model for p in cluster.node_pools if p.gpu_model)  # CPU-only pools have none
        state = dict(current)
        known = {message for message, _ in _problems(state, gpus, data)}  # not news: validate shows them
        for step in steps:
            renamed = exporter_rename(state.get("gpuOperator"), dict(step).get("gpuOperator"))
            if renamed:
                warnings.add(f"{cluster.name} after {step_label(step)}: {renamed}")
            state.update(step)
            for message, severity in _problems(state, gpus, data) + _notebook_problems(fleet, cluster, state, data):
                text = f"{cluster.name} after {step_label(step)}: {message}"
                if severity is Severity.ERROR:
                    refused.append(text)
                elif message not in known:
                    warnings.add(text)
        per_cluster[cluster.name] = steps
    imaged = {c.name for c in fleet.clusters if image_driver(fleet, c)}
    refused += _image_problems(imaged, per_cluster, target, node_image)
    refused += _canary_without_gpus(fleet, per_cluster)
    if refused:
        raise PlanRefused(refused)
    waves = [
        dataclasses.replace(w, node_image=node_image) if "driver" in dict(w.step) and imaged & set(w.clusters) else w
        for w in _waves(fleet, per_cluster)
    ]
    if start is not None:
        waves = schedule(waves, fleet.rollout, start)
    return Plan(
        target,
        completed.implied,
        waves,
        fleet.rollout.soak,
        sorted(warnings),
        node_image,
        crd_switches(fleet, [(w.number, dict(w.step), w.clusters) for w in waves]),
    )


def has_gpu_pools(cluster: Cluster) -> bool:
    return any(pool.gpus_per_node for pool in cluster.node_pools)


def _canary_without_gpus(fleet: Fleet, per_cluster: dict[str, list[Step]]) -> list[str]:
    """A named production canary without GPU pools takes no step that changes GPU nodes: planning one would move every
    GPU cluster of production together after a canary that proves nothing."""
    named = next((c for c in fleet.clusters if c.name == fleet.rollout.production_canary), None)
    gpu_steps = sorted({s for steps in per_cluster.values() for s in steps if GPU_NODE_COMPONENTS & dict(s).keys()}, key=_step_order)
    if named is None or has_gpu_pools(named) or not gpu_steps:
        return []
    others = [c.name for c in fleet.clusters if c.environment == "production" and has_gpu_pools(c)]
    return [
        f"rollout.productionCanary: {named.name} has no GPU node pools, so it cannot show a step that changes GPU nodes "
        f"({step_label(gpu_steps[0])}); name a production cluster with GPUs: {', '.join(others) or 'none'}"
    ]


def _image_problems(imaged: set[str], per_cluster: dict[str, list[Step]], target: dict[str, Version], image: str | None) -> list[str]:
    """A driver change on clusters whose node images carry the driver needs the image that has it, and only then."""
    moving = sorted(name for name in imaged if any("driver" in dict(step) for step in per_cluster[name]))
    if moving and image is None:
        return [
            f"{', '.join(moving)}: the node image carries the driver (platform.gpuOperator.driverSource: node-image); "
            f"give --set nodeImage=IMAGE, the image with driver {target['driver']}"
        ]
    if image is not None and not moving:
        return [f"--set nodeImage={image}: no cluster whose node image carries the driver moves its driver"]
    return []


def _wanted(current: dict[str, Version], target: dict[str, Version], implied: set[str]) -> dict[str, Version]:
    """What this cluster moves to: the target's components it has (the GPU Operator only where it installs the
    driver), an implied driver only upward, an implied operator release only where the current one lacks the driver."""
    wanted = {c: v for c, v in target.items() if c in current}
    if "driver" in implied and "driver" in wanted and current["driver"] >= wanted["driver"]:
        wanted.pop("driver")
    if "gpuOperator" in implied and "gpuOperator" in wanted and supports(current["gpuOperator"], wanted.get("driver", current["driver"])):
        wanted.pop("gpuOperator")
    return wanted


def _problems(state: dict[str, Version], gpus: frozenset[str], data: Facts) -> list[tuple[str, Severity]]:
    """What the compatibility rules, and the GPU Operator release's list of drivers, say about a cluster's state."""
    found = [(p.message, p.severity) for p in version_set_problems(_with(state), gpus, data)]
    operator = operator_problem(state["gpuOperator"], state["driver"]) if "gpuOperator" in state else None
    return found + ([operator] if operator else [])


def _notebook_problems(fleet: Fleet, cluster: Cluster, state: dict[str, Version], data: Facts) -> list[tuple[str, Severity]]:
    """The JupyterHub images of the cluster whose CUDA the driver of `state` would no longer fully run: the notebook
    profiles offering them would start notebooks that fail (checks/onboarding.py refuses the same in fleet.yaml)."""
    hub = fleet.platform_of(cluster).jupyterhub
    if not hub.enabled or "driver" not in state:
        return []
    out = []
    for image in hub.images:
        problem = cuda_on_driver(image.cuda, state["driver"], data)
        if problem is not None and problem.field == "driver":
            out.append(
                (f"the notebook profiles' image {image.name} (CUDA {image.cuda}) would not run fully: {problem.message}", Severity.ERROR)
            )
    return out


def beyond_the_data(target: dict[str, Version], data: Facts | None = None) -> list[str]:
    """Targets the compatibility data cannot judge, refused before planning: Kubernetes moves one minor a
    step, so a minor past the data's newest would be steps nobody can check (and, for 1.100000, no end of them)."""
    want = target.get("kubernetes")
    if want is None:
        return []
    newest = max(row.kubernetes.minor for row in (data or facts()).kubernetes_releases)
    if want.minor <= newest:
        return []
    shown = want.text if len(want.text) <= 20 else want.text[:17] + "..."
    return [f"Kubernetes {shown}: fleetgen's compatibility data knows Kubernetes up to {newest[0]}.{newest[1]}; update fleetgen first"]


def _phase(step: Step) -> tuple[int, tuple[int, ...]]:
    """What a step does, whatever else it carries: its group in STAGES and, for Kubernetes, the minor it reaches. A
    driver step that also moves the GPU Operator (where the cluster's release lacks the driver) is the same phase as
    one that does not, so the driver rolls out dev first on every cluster."""
    group = next(i for i, stage in enumerate(STAGES) if step[0][0] in stage)
    components = dict(step)
    return group, components["kubernetes"].minor if "kubernetes" in components else ()


def _step_order(step: Step) -> tuple[tuple[int, tuple[int, ...]], ...]:
    return tuple((UPGRADE_COMPONENTS.index(component), version.key) for component, version in step)


def _waves(fleet: Fleet, per_cluster: dict[str, list[Step]]) -> list[Wave]:
    """Phase by phase, the stages in order (dev, staging, production canary, production); a stage whose clusters
    take different steps of one phase is one wave per step. Only sorted values decide: no set order, no hash seed."""
    waves: list[Wave] = []
    for phase in sorted({_phase(s) for steps in per_cluster.values() for s in steps}):
        step_of = {name: s for name, steps in per_cluster.items() for s in steps if _phase(s) == phase}
        moving = [c for c in fleet.clusters if c.name in step_of]
        for stage, names in stages_of(fleet, moving, fleet.rollout.max_wave_size):
            for step in sorted({step_of[n] for n in names}, key=_step_order):
                for clusters, pools, ahead in _pool_split(fleet, [n for n in names if step_of[n] == step], step):
                    waves.append(Wave(len(waves) + 1, step, stage, clusters, pools=pools, ahead=ahead))
    return waves


def _pool_split(fleet: Fleet, names: list[str], step: Step) -> list[tuple[tuple[str, ...], tuple[PoolMove, ...], tuple[str, ...]]]:
    """One stage's clusters taking one step, as waves: (clusters, pools moved, canary pools moved ahead). Clusters that
    move pool by pool send their canary pool with the others' whole move, then the rest of their pools in a second wave."""
    clusters = {c.name: c for c in fleet.clusters}
    by_pool = [n for n in names if moves_by_pool(fleet, clusters[n], step)]
    per_pool = [n for n in names if "driver" in dict(step) and driver_crd_on(fleet, clusters[n])]
    first = tuple(m for n in per_pool for m in pool_moves(fleet, clusters[n], True if n in by_pool else None))
    out = [(tuple(names), first, tuple(m.ref for m in first if m.cluster in by_pool))]
    if by_pool:
        out.append((tuple(by_pool), tuple(m for n in by_pool for m in pool_moves(fleet, clusters[n], False)), ()))
    return out


# -- when -------------------------------------------------------------------------------------

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _clock(text: str) -> datetime.time:
    hours, minutes = text.split(":")
    return datetime.time(int(hours), int(minutes))


def earliest_start(after: datetime.datetime, rollout: Rollout) -> datetime.datetime:
    """The first moment at or after `after` inside a window (if any) and outside every freeze."""
    try:
        return _earliest_start(after, rollout)
    except OverflowError:  # a freeze or window reaching past 9999-12-31
        raise InputError(f"the first start after {after:%Y-%m-%d %H:%M} UTC outside the freezes would fall after 9999-12-31") from None


def _earliest_start(after: datetime.datetime, rollout: Rollout) -> datetime.datetime:
    moment = after
    for _ in range(1000):  # windows and freezes are finite: this settles in a few rounds
        freeze = next((f for f in rollout.freezes if f.start <= moment.date() <= f.end), None)
        if freeze is not None:
            moment = datetime.datetime.combine(freeze.end + datetime.timedelta(days=1), datetime.time(), moment.tzinfo)
            continue
        if not rollout.windows or _in_window(moment, rollout):
            return moment
        moment = _next_window_opening(moment, rollout)
    raise PlanRefused(["no start time fits the maintenance windows and freezes"])


def _in_window(moment: datetime.datetime, rollout: Rollout) -> bool:
    day = _DAYS[moment.weekday()]
    return any(day in w.days and _clock(w.start) <= moment.time() < _clock(w.end) for w in rollout.windows)


def _next_window_opening(moment: datetime.datetime, rollout: Rollout) -> datetime.datetime:
    openings = []
    for ahead in range(8):
        day = moment.date() + datetime.timedelta(days=ahead)
        for window in rollout.windows:
            if _DAYS[day.weekday()] in window.days:
                opening = datetime.datetime.combine(day, _clock(window.start), moment.tzinfo)
                if opening > moment:
                    openings.append(opening)
    if not openings:
        raise PlanRefused(["the maintenance windows never open"])
    return min(openings)


def schedule(waves: list[Wave], rollout: Rollout, start: datetime.datetime) -> list[Wave]:
    out = []
    moment = start
    for wave in waves:
        begins = earliest_start(moment, rollout)
        ends = later(begins, rollout.soak, f"the end of wave {wave.number}'s soak")
        out.append(dataclasses.replace(wave, start=begins, soak_until=ends))
        moment = ends
    return out

"""Canary upgrade planning: which clusters move, in which waves, when. Pure: no disk, no clock.

A cluster moves one component at a time, in COMPONENTS order (the driver before the CUDA and
cuDNN images), and Kubernetes one minor at a time; every state it passes through is checked
against the compatibility rules (the facts validate uses: fleetgen's own merged with the fleet's
facts file) and a driver against those its cluster's GPU Operator release supports. A phase is
one such step (e.g. "driver 560.35.03"); each phase rolls out in waves: dev, then staging, then
one production cluster while its DR partner stays behind, then the other production clusters,
never both halves of a DR pair in one wave and at most `maxWaveSize` a wave. Each wave soaks before the next starts.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field

from fleetgen.compat import Facts, facts, version_set_problems
from fleetgen.compat.gpu_operator import image_driver
from fleetgen.compat.rules import cuda_on_driver
from fleetgen.errors import Finding, FindingsError, InputError, Severity
from fleetgen.model import COMPONENTS, UPGRADE_COMPONENTS, Cluster, Fleet, Rollout, Version, VersionSet
from fleetgen.upgrade.moments import later
from fleetgen.upgrade.operator import cluster_versions, component_text, operator_problem, supports
from fleetgen.upgrade.targets import complete_target

Step = tuple[tuple[str, Version], ...]  # the (component, version) pairs one step sets
# CUDA and cuDNN ship in the same images; the GPU Operator release and the driver move in one Helm upgrade
STAGES = (("containerd",), ("kubernetes",), ("driver", "gpuOperator"), ("cuda", "cudnn"))


class PlanRefused(FindingsError):
    """The rules reject the target, or a state on the way to it (exit 1, with the reasons)."""

    def __init__(self, reasons: list[str]):
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


@dataclass
class Plan:
    target: dict[str, Version]
    implied: list[str]
    waves: list[Wave]
    soak: datetime.timedelta
    warnings: list[str] = field(default_factory=list)
    node_image: str | None = None

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


def cluster_steps(current: dict[str, Version], target: dict[str, Version]) -> tuple[list[Step], list[str]]:
    """The steps from `current` to `target`, and the reasons any target is out of reach."""
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
            major, minor = have.minor
            for between in range(minor + 1, want.minor[1]):  # one minor at a time (version-skew policy)
                steps.append((("kubernetes", Version(f"{major}.{between}")),))
        steps.append(moves)
    return steps, refused


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
        steps, reasons = cluster_steps(current, wanted)
        refused += [f"{cluster.name}: {r}" for r in reasons]
        if not allow_downgrade:
            refused += [
                f"{cluster.name}: {c} {component_text(c, current[c])} -> {component_text(c, wanted[c])} is a downgrade; "
                "give --allow-downgrade to plan it"
                for c in wanted
                if c != "kubernetes" and wanted[c] < current[c]
            ]
        gpus = frozenset(p.gpu_model for p in cluster.node_pools if p.gpu_model)  # CPU-only pools have none
        state = dict(current)
        known = {message for message, _ in _problems(state, gpus, data)}  # not news: validate shows them
        for step in steps:
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
    if refused:
        raise PlanRefused(refused)
    waves = [
        dataclasses.replace(w, node_image=node_image) if "driver" in dict(w.step) and imaged & set(w.clusters) else w
        for w in _waves(fleet, per_cluster)
    ]
    if start is not None:
        waves = schedule(waves, fleet.rollout, start)
    return Plan(target, completed.implied, waves, fleet.rollout.soak, sorted(warnings), node_image)


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


def _waves(fleet: Fleet, per_cluster: dict[str, list[Step]]) -> list[Wave]:
    phases = sorted({s for steps in per_cluster.values() for s in steps}, key=lambda s: (UPGRADE_COMPONENTS.index(s[0][0]), s[0][1]))
    waves: list[Wave] = []
    for phase in phases:
        moving = [c for c in fleet.clusters if phase in per_cluster[c.name]]
        for stage, names in _stages(fleet, moving, fleet.rollout.max_wave_size):
            waves.append(Wave(len(waves) + 1, phase, stage, tuple(names)))
    return waves


def rollout_stages(fleet: Fleet) -> list[tuple[str, list[str]]]:
    """The waves any step of an upgrade takes over the whole fleet: dev, staging, one production
    canary whose DR partner stays behind, then the rest (Argo CD's rollout labels and steps follow them)."""
    return _stages(fleet, list(fleet.clusters), fleet.rollout.max_wave_size)


def production_canary(fleet: Fleet, production: list[Cluster]) -> Cluster:
    """The production cluster that moves first: `rollout.productionCanary`, else one outside any DR pair, else the
    DR partner listed second, so that a pair's primary is never the canary while another production cluster exists."""
    named = next((c for c in production if c.name == fleet.rollout.production_canary), None)
    if named is not None:
        return named
    order = [c.name for c in fleet.clusters]
    alone = next((c for c in production if not c.dr_partner), None)
    second = next((c for c in production if c.dr_partner in order and order.index(c.dr_partner) < order.index(c.name)), None)
    return alone or second or production[0]


def _stages(fleet: Fleet, clusters: list[Cluster], cap: int) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for environment in ("dev", "staging"):
        names = [c.name for c in clusters if c.environment == environment]
        if names:
            out.append((f"canary ({environment})", names))
    production = [c for c in clusters if c.environment == "production"]
    if not production:
        return out
    partner = {c.name: c.dr_partner for c in production}
    canary = production_canary(fleet, production)  # its DR partner stays behind
    out.append(("production canary", [canary.name]))
    bins: list[list[str]] = []
    for cluster in production:
        if cluster is canary:
            continue
        home = next((b for b in bins if len(b) < cap and partner[cluster.name] not in b), None)
        if home is None:
            bins.append([cluster.name])
        else:
            home.append(cluster.name)
    out += [("production", b) for b in bins]
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

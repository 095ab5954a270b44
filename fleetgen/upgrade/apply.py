"""`fleetgen upgrade apply --wave N`: rewrite fleet.yaml for one wave, keeping its comments and layout.

ruamel's round-trip mode keeps every comment, key order, quote style and blank line, so the pull
request of a wave shows only the lines it must: the versions of the wave's clusters and the
upgrade record (`upgrade:` at the end of the file, one line a wave).

A cluster's versions live in its version set. When every cluster of a set moves in this wave, the
set is edited in place; otherwise the wave's clusters point to a set that already has the new
versions, or to a new set `<set>-w<N>` written right after the old one. The last wave folds those
interim sets back (fold.py) and closes the record. A wave starts only when gate.py lets it.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from fleetgen.checks.load import LoadedFleet
from fleetgen.compat import Facts
from fleetgen.model import COMPONENTS, UPGRADE_COMPONENTS, Fleet, Upgrade, UpgradeWave, Version
from fleetgen.source.edit import RoundTrip, flow_map, flow_seq, like
from fleetgen.upgrade.arguments import wave_number
from fleetgen.upgrade.fold import fold_version_sets
from fleetgen.upgrade.gate import Evidence, wave_gate
from fleetgen.upgrade.moments import as_utc
from fleetgen.upgrade.operator import cluster_versions, component_text
from fleetgen.upgrade.plan import GPU_NODE_COMPONENTS, PlanRefused, has_gpu_pools, plan_upgrade, versions_of

_WAVE_SUFFIX = re.compile(r"-w\d+$")


def timestamp(moment: datetime.datetime) -> str:
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def upgrade_record(
    fleet: Fleet,
    number: int,
    requested: dict[str, Version] | None,
    data: Facts | None = None,
    *,
    allow_downgrade: bool = False,
    node_image: str | None = None,
) -> Upgrade:
    """The upgrade this wave belongs to: the one in progress, or a new plan when wave 1 starts one."""
    record = fleet.upgrade
    if record is not None and not record.complete:
        different = requested and any(record.target.get(k) != v for k, v in requested.items())  # type: ignore[call-overload]
        if different or (node_image is not None and node_image != record.node_image):
            raise PlanRefused([f"an upgrade to {_target_text(record.target)} is in progress; finish it before starting another"])
        return record
    if not requested:
        raise PlanRefused(["no upgrade in progress: start one with --set COMPONENT=VERSION or --to VERSION_SET"])
    if number != 1:  # never list the waves up to `number`: it may be 99999999999999999999
        raise PlanRefused([f"wave 1 is not in fleet.yaml yet: apply wave 1 first, then the others in order up to {number}"])
    plan = plan_upgrade(fleet, requested, data=data, allow_downgrade=allow_downgrade, node_image=node_image)
    if not plan.waves:
        raise PlanRefused(["every cluster already runs these versions: nothing to apply"])
    waves = tuple(UpgradeWave(wave=w.number, step=dict(w.step), clusters=w.clusters, pools=w.ahead) for w in plan.waves)
    return Upgrade(target=plan.target, waves=waves, node_image=plan.node_image)


def _target_text(target: Mapping[Any, Version]) -> str:
    return ", ".join(f"{k} {component_text(str(k), v)}" for k, v in target.items())


def apply_wave(
    loaded: LoadedFleet,
    number: int,
    requested: dict[str, Version] | None,
    at: datetime.datetime,
    override_soak: str | None = None,
    *,
    allow_downgrade: bool = False,
    evidence: Evidence | None = None,
    node_image: str | None = None,
) -> str:
    """The new text of fleet.yaml with wave `number` applied at `at`; refuses out-of-order or stale waves, and waves
    before the previous one is done on `evidence` (each cluster's Nodes) and soaked (gate.py) unless `override_soak`
    gives the reason to start anyway."""
    fleet = loaded.fleet
    record = upgrade_record(fleet, wave_number(number), requested, loaded.facts, allow_downgrade=allow_downgrade, node_image=node_image)
    if not 1 <= number <= len(record.waves):
        raise PlanRefused([f"the upgrade has waves 1 to {len(record.waves)}, not {number}"])
    wave = record.waves[number - 1]
    if wave.applied_at is not None:
        raise PlanRefused([f"wave {number} is already in fleet.yaml (applied {timestamp(wave.applied_at)})"])
    missing = [w.wave for w in record.waves[: number - 1] if w.applied_at is None]
    if missing:
        raise PlanRefused([f"wave {missing[0]} is not in fleet.yaml yet: apply and merge it before wave {number}"])
    _check_earlier_waves_hold(fleet, record, number)
    before = record.waves[number - 2].applied_at if number > 1 else None
    if before is not None and as_utc(at) < as_utc(before):  # even with an override: the record keeps time in order
        raise PlanRefused([f"--at {timestamp(at)} is before wave {number - 1} was applied ({timestamp(before)})"])
    override = wave_gate(fleet, record, number, at, override_soak, evidence)

    document = RoundTrip(loaded.source.text)
    pinned = {ref for earlier in record.waves[: number - 1] for ref in earlier.pools}
    rows = _move_clusters(document.data, fleet, wave, number, pinned)
    _record(document.data, record, number, at, fresh=fleet.upgrade is None or fleet.upgrade.complete)
    if override is not None:
        document.data["upgrade"]["waves"][number - 1]["overrideSoak"] = override
    if number == len(record.waves):  # every earlier wave is applied (checked above): every cluster is at the target
        fold_version_sets(document.data, rows, record)
        document.data["upgrade"]["closedAt"] = timestamp(at)
    return document.text()  # the caller validates it as a whole before writing


def _check_earlier_waves_hold(fleet: Fleet, record: Upgrade, number: int) -> None:
    """Each cluster still runs what the last applied wave that moved it set (nobody reverted it)."""
    latest: dict[tuple[str, str], Version] = {}
    for wave in record.waves[: number - 1]:
        for moved in whole_clusters(wave):
            for component, version in wave.step.items():
                latest[(moved, component)] = version
    clusters = {c.name: c for c in fleet.clusters}
    for (name, part), version in latest.items():
        cluster = clusters.get(name)
        if cluster is None:
            raise PlanRefused([f"cluster {name} of the upgrade is no longer in fleet.yaml"])
        have = cluster_versions(fleet, cluster).get(part)
        if have != version:
            shown = "none" if have is None else component_text(part, have)
            raise PlanRefused(
                [f"{name} runs {part} {shown}, not {component_text(part, version)} as an applied wave set it; fix fleet.yaml first"]
            )


def _move_clusters(document: Any, fleet: Fleet, wave: UpgradeWave, number: int, pinned: set[str]) -> dict[str, dict[str, Version]]:
    """Move the wave's clusters in the document; returns every version set's versions afterwards."""
    rows = {name: versions_of(vs) for name, vs in fleet.version_sets.items()}
    sets: CommentedMap = document["versionSets"]
    clusters: CommentedSeq = document["clusters"]
    set_of = {c.name: c.version_set for c in fleet.clusters}
    step = {str(k): v for k, v in wave.step.items()}
    by_set: dict[str, list[str]] = {}
    _move_canary_pools(clusters, wave, pinned)
    for name in whole_clusters(wave):
        by_set.setdefault(set_of[name], []).append(name)
    gpu_step = set(step) <= GPU_NODE_COMPONENTS  # a cluster without GPU pools takes no wave of it: it rides along in its set
    for set_name, moving in by_set.items():
        new = {**rows[set_name], **step}
        users = [c.name for c in fleet.clusters if c.version_set == set_name and (has_gpu_pools(c) or not gpu_step)]
        if set(users) <= set(moving):  # every user moves: edit the set where it stands
            for component, version in step.items():
                _set_version(sets[set_name], component, version)
            rows[set_name] = new
            continue
        existing = next((n for n, vs in fleet.version_sets.items() if versions_of(vs) == new), None)
        target = existing or _new_set(sets, set_name, new, number)
        rows.setdefault(target, new)
        for entry in clusters:
            if entry["name"] in moving:
                entry["versionSet"] = like(entry["versionSet"], target)
    if "gpuOperator" in step:  # a cluster that names its own GPU Operator release moves it too
        for entry in clusters:
            own = ((entry.get("platform") or {}).get("gpuOperator") or {}) if entry["name"] in wave.clusters else {}
            if "version" in own:
                own["version"] = like(own["version"], component_text("gpuOperator", step["gpuOperator"]))
    return {name: rows[name] for name in sets}  # in file order


def whole_clusters(wave: UpgradeWave) -> list[str]:
    """The wave's clusters whose version set it moves: all but those it moves only a canary pool of."""
    ahead = {ref.split("/")[0] for ref in wave.pools}
    return [name for name in wave.clusters if name not in ahead]


def _move_canary_pools(clusters: CommentedSeq, wave: UpgradeWave, pinned: set[str]) -> None:
    """Give each canary pool of the wave the step's driver as its own, and drop that pin from the `pinned` canary pools
    of earlier waves whose clusters this wave moves whole (their version set now has the driver): a pin left behind
    would hold the pool back at the next driver step."""
    driver = wave.step.get("driver")
    if driver is None:
        return
    ahead = {tuple(ref.split("/")) for ref in wave.pools}
    whole = set(whole_clusters(wave))
    text = component_text("driver", driver)
    for entry in clusters:
        for pool in entry.get("nodePools") or []:
            own = pool.get("driver")
            if (entry["name"], pool["name"]) in ahead:
                if own is None:
                    pool["driver"] = flow_map({"version": text})
                else:
                    own["version"] = like(own.get("version"), text)
            elif f"{entry['name']}/{pool['name']}" in pinned and entry["name"] in whole and own is not None:
                del own["version"]
                if not own:
                    del pool["driver"]


def _set_version(row: CommentedMap, component: str, version: Version) -> None:
    """Write one version into a version set's row; a GPU Operator release it did not name goes after the driver."""
    text = like(row.get(component), component_text(component, version))
    if component in row or "driver" not in row:
        row[component] = text
    else:
        row.insert(list(row).index("driver") + 1, component, text)


def _new_set(sets: CommentedMap, after: str, values: dict[str, Version], number: int) -> str:
    name = f"{_WAVE_SUFFIX.sub('', after)}-w{number}"
    entry = CommentedMap()
    template = sets[after]
    keys: list[str] = [k for k in template if k in UPGRADE_COMPONENTS] or list(COMPONENTS)  # in the set's own order
    if "gpuOperator" in values and "gpuOperator" not in keys:
        keys.insert(keys.index("driver") + 1, "gpuOperator")
    for component in keys:
        entry[component] = like(template.get(component), component_text(component, values[component]))
    sets.insert(list(sets).index(after) + 1, name, entry)
    return name


def _record(document: Any, record: Upgrade, number: int, at: datetime.datetime, fresh: bool) -> None:
    if fresh or "upgrade" not in document:
        block = CommentedMap()
        block["target"] = flow_map({k: component_text(k, v) for k, v in record.target.items()})
        if record.node_image is not None:
            block["nodeImage"] = record.node_image
        waves = CommentedSeq()
        for wave in record.waves:
            item = flow_map(
                {
                    "wave": wave.wave,
                    "step": flow_map({k: component_text(k, v) for k, v in wave.step.items()}),
                    "clusters": flow_seq(list(wave.clusters)),
                }
            )
            if wave.pools:
                item["pools"] = flow_seq(list(wave.pools))
            waves.append(item)
        block["waves"] = waves
        document["upgrade"] = block
        document.yaml_set_comment_before_after_key(
            "upgrade",
            before="\nWritten by `fleetgen upgrade apply`, one line a wave; `fleetgen upgrade status` reads it.\n"
            "Set a wave's appliedAt to the time its pull request merged if that was later.",
        )
    document["upgrade"]["waves"][number - 1]["appliedAt"] = timestamp(at)

"""The pull-request workflow (`diff`): both revisions judged as `render` judges them, compared, and the gate's outputs.

The base revision lends the head every cluster whose inputs did not change (render/rendered.py), and a revision the
cache knows passed (validation/verdicts.py, inside its window of time) is neither checked again nor scanned for
secrets; its values are taken from what the command that passed it kept (checks/kept_values.py) instead of parsing it,
or, without such an entry, the base, in which nothing is placed, is parsed without positions.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fleetgen.cache import Cache
from fleetgen.checks.kept_values import KeptValues
from fleetgen.checks.load import checked_fleet, passed_fleet, passed_fleet_text, typed_fleet_text
from fleetgen.errors import FindingsError, InputError, Severity
from fleetgen.model.fleet import cluster_index
from fleetgen.render.rendered import Rendered
from fleetgen.source.git_revision import read_at
from fleetgen.source.reader import read_fleet_bytes
from fleetgen.validation.verdicts import FleetVerdicts
from fleetgen.workflows import Checked, _judged

if TYPE_CHECKING:
    from fleetgen.live.state import QuotaImpact
    from fleetgen.model import Fleet
    from fleetgen.review import FleetDiff


def _revision(raw: bytes, name: str, cache: Cache, lender: Rendered | None = None, *, positions: bool = True) -> Checked:
    """A side of a diff, judged exactly as `render` judges it: one that would not render is trouble (exit 2).

    A text the cache knows passed is not checked again, not even across the model or for secrets: a diff prints no
    warnings, and on a large fleet those checks cost what typing it does (a CI job's `check` has judged the head
    already). Its values are taken from the cache when it kept them (checks/kept_values.py), its positions then read
    only if something is placed in it; else without `positions` (the base: nothing is placed in it), such a text is
    parsed without them."""
    try:
        if FleetVerdicts(cache).passed_text(raw):
            kept = KeptValues(cache).source(raw, name)
            known = passed_fleet(kept) if kept is not None else passed_fleet_text(raw, name, positions=positions)
            return Checked(known, Rendered(known.fleet, lender=lender), [], cache)
        return _judged(checked_fleet(typed_fleet_text(raw, name)), cache, lender=lender)
    except FindingsError as exc:
        errors = [f for f in exc.findings if f.severity is Severity.ERROR] or exc.findings
        first = errors[0]
        raise InputError(
            f"{name}: does not render ({len(errors)} error(s)), first: {first.location}: {first.dotted_path}: {first.message}"
        ) from None


@dataclass(frozen=True)
class Review:
    diff: FleetDiff
    head: Checked
    impacts: dict[str, list[QuotaImpact]] = field(default_factory=dict)


def _facts_at(fleet_file: Path, fleet: Fleet, ref: str | None) -> bytes | None:
    """The bytes of the facts file `fleet` names, at `ref` (the working tree without one); None when it names none or
    the file is not there (validate reports a missing file; the diff shows the name change)."""
    name = fleet.compatibility.facts_file
    if name is None:
        return None
    path = fleet_file.parent / name
    try:
        return read_at(path, ref) if ref else read_fleet_bytes(path)
    except InputError:
        return None


def review(fleet: Path, base_ref: str, head_ref: str | None, live: tuple[str, ...] = ()) -> Review:
    """What a change to FLEET does to each cluster, and the approvals it needs (`diff`)."""
    from fleetgen.review import diff_fleets

    cache = Cache.for_user()
    base = _revision(read_at(fleet, base_ref), f"{fleet.name}@{base_ref}", cache, positions=False)
    head_name = f"{fleet.name}@{head_ref}" if head_ref else fleet.name
    head = _revision(read_at(fleet, head_ref) if head_ref else read_fleet_bytes(fleet), head_name, cache, base.rendered)
    facts = (_facts_at(fleet, base.fleet, base_ref), _facts_at(fleet, head.fleet, head_ref))
    result = diff_fleets(base.rendered, head.rendered, base_ref, head_ref or "working tree", facts)
    result.refusals = [f._replace(location=head.loaded.source.locate(f.path)) for f in result.refusals]
    return Review(result, head, _quota_impacts(head, live) if live else {})


def _quota_impacts(head: Checked, live: tuple[str, ...]) -> dict[str, list[QuotaImpact]]:
    """diff --live: each quota the head lowers below what a cluster's dump shows in use (live state is read only then)."""
    from fleetgen.live.state import quota_impacts
    from fleetgen.workflows.live_state import cluster_dumps

    return {
        cluster: quota_impacts(head.rendered.keyed(cluster_index(head.fleet, cluster, f"--live {cluster}")), objects)
        for cluster, objects in cluster_dumps(live).items()
    }


def github_outputs(result: FleetDiff) -> dict[str, str]:
    """Step outputs a required-review step can act on."""
    groups = sorted({g for a in result.approvals for g in a.rule.approvers})
    return {
        "changed": str(not result.empty).lower(),
        "approvals-required": str(bool(result.approvals)).lower(),
        "approvers": ",".join(groups),
        "approver-groups": json.dumps(groups, separators=(",", ":")),  # the workflow's matrix: one approval job and environment per group
        "rules": ",".join(a.rule.name for a in result.approvals),
        "refused": str(bool(result.refusals)).lower(),  # the check fails on it: the pull request must change first
    }


def write_github_output(outputs: dict[str, str], target: str) -> None:
    """Append step outputs to the file GitHub Actions names in $GITHUB_OUTPUT."""
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.writelines(f"{k}={v}\n" for k, v in outputs.items())
    except OSError as exc:
        raise InputError(f"GITHUB_OUTPUT {target}: {exc.strerror}") from None


def github_output_target() -> str | None:
    return os.environ.get("GITHUB_OUTPUT") or None

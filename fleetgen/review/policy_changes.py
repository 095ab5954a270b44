"""Changes to the policy that judges changes: the approval rules, rollout, the upgrade record, capacity
overcommit, the platform owners, and what each team may do on shared nodes.

A pull request is judged by its base's rules, but the next one is judged by whatever this one
leaves behind: so each of these is a change of its own in the summary, and fleetgen's built-in
rules (review/approvals.py) gate them whatever the fleet's own rules say.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

from fleetgen.model import ApprovalRule, Fleet, Upgrade
from fleetgen.model.tenancy import PSA_ORDER, Access, default_access
from fleetgen.review.changes import Change, ChangeKind


def policy_changes(base: Fleet, head: Fleet) -> list[Change]:
    return [
        *_platform_owners(base, head),
        *_approval_rules(base, head),
        *_rollout(base, head),
        *_capacity(base, head),
        *_upgrade_record(base, head),
        *_access(base, head),
    ]


def _text(value: Any) -> str:
    if isinstance(value, datetime.timedelta):
        return duration_text(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, (tuple, list, set, frozenset)):
        return ", ".join(sorted(str(v) for v in value)) if isinstance(value, (set, frozenset)) else ", ".join(str(v) for v in value)
    return "none" if value is None else str(value)


def duration_text(value: datetime.timedelta) -> str:
    """A duration as fleet.yaml writes it, in hours or minutes: 48h, 90m."""
    seconds = int(value.total_seconds())
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _policy(text: str, path: tuple[str | int, ...], old: Any = None, new: Any = None, field: str | None = None) -> Change:
    shown = ".".join(str(p) for p in path)
    return Change("policy", text, field=field or shown, old=_text(old), new=_text(new), path=path)


def _platform_owners(base: Fleet, head: Fleet) -> Iterator[Change]:
    if base.platform_owners != head.platform_owners:
        old, new = base.platform_owners, head.platform_owners
        yield _policy(f"platform owners {_text(old)} -> {_text(new)}", ("metadata", "platformOwners"), old, new)


def _condition(rule: ApprovalRule) -> str:
    """A rule's condition as fleet.yaml writes it: gpuQuotaAtLeast 8, newCluster."""
    for name, value in rule.when:
        alias = type(rule.when).model_fields[name].alias or name
        if value is True:
            return alias
        if value not in (None, False):
            return f"{alias} {value}"
    return "nothing"


def _approval_rules(base: Fleet, head: Fleet) -> Iterator[Change]:
    old = {r.name: r for r in base.approvals}
    new = {r.name: (i, r) for i, r in enumerate(head.approvals)}
    for name, rule in old.items():
        if name not in new:
            text = f"approval rule {name} removed (was: {_condition(rule)}, approved by {_text(rule.approvers)})"
            yield _policy(text, ("approvals",), _condition(rule), None, field=f"approvals.{name}")
    for name, (index, rule) in new.items():
        at: tuple[str | int, ...] = ("approvals", index)
        if name not in old:
            text = f"approval rule {name} added ({_condition(rule)}, approved by {_text(rule.approvers)})"
            yield _policy(text, at, None, _condition(rule), field=f"approvals.{name}")
            continue
        was = old[name]
        if _condition(was) != _condition(rule):
            text = f"approval rule {name}: {_condition(was)} -> {_condition(rule)}"
            yield _policy(text, (*at, "when"), _condition(was), _condition(rule), field=f"approvals.{name}.when")
        if was.approvers != rule.approvers:
            text = f"approval rule {name}: approvers {_text(was.approvers)} -> {_text(rule.approvers)}"
            yield _policy(text, (*at, "approvers"), was.approvers, rule.approvers, field=f"approvals.{name}.approvers")
        if was.description != rule.description:
            text = f"approval rule {name}: description changed"
            yield _policy(text, (*at, "description"), was.description, rule.description, field=f"approvals.{name}.description")


def _window_text(window: Any) -> str:
    return f"{','.join(window.days)} {window.start}-{window.end}"


def _freeze_text(freeze: Any) -> str:
    return f"{freeze.start}..{freeze.end}" + (f" ({freeze.reason})" if freeze.reason else "")


def _rollout(base: Fleet, head: Fleet) -> Iterator[Change]:
    a, b = base.rollout, head.rollout
    if a.soak != b.soak:
        yield _policy(f"rollout.soak: {_text(a.soak)} -> {_text(b.soak)}", ("rollout", "soak"), a.soak, b.soak)
    if a.max_wave_size != b.max_wave_size:
        text = f"rollout.maxWaveSize: {a.max_wave_size} -> {b.max_wave_size}"
        yield _policy(text, ("rollout", "maxWaveSize"), a.max_wave_size, b.max_wave_size)
    for field, alias, show in (("windows", "windows", _window_text), ("freezes", "freezes", _freeze_text)):
        old, new = [show(x) for x in getattr(a, field)], [show(x) for x in getattr(b, field)]
        if old != new:
            text = f"rollout.{alias}: {'; '.join(old) or 'none'} -> {'; '.join(new) or 'none'}"
            yield _policy(text, ("rollout", alias), "; ".join(old), "; ".join(new))


def _capacity(base: Fleet, head: Fleet) -> Iterator[Change]:
    old, new = base.capacity.gpu_overcommit, head.capacity.gpu_overcommit
    if old != new:
        yield _policy(f"capacity.gpuOvercommit: {_text(old)} -> {_text(new)}", ("capacity", "gpuOvercommit"), old, new)


def _target(record: Upgrade) -> str:
    return ", ".join(f"{component} {version}" for component, version in record.target.items())


def _upgrade_record(base: Fleet, head: Fleet) -> Iterator[Change]:
    """What `upgrade apply` writes is news (a wave applied, the record closed); anything else rewrites history
    the soak gate counts from (a wave's appliedAt, the plan of an upgrade in progress, the record itself)."""
    a, b = base.upgrade, head.upgrade
    if a == b:
        return
    at: tuple[str | int, ...] = ("upgrade",)
    if a is None or a.closed_at is not None:  # nothing in progress: a new upgrade may start, an old record may go
        if b is None:
            if a is not None:
                yield Change("upgrade-wave", f"closed upgrade record to {_target(a)} removed", field="upgrade", path=at)
        elif a is None or b.target != a.target or b.waves != a.waves:
            yield Change("upgrade-wave", f"upgrade to {_target(b)} planned in {len(b.waves)} wave(s)", field="upgrade", path=at)
            yield from _applied(None, b)
        else:
            yield _policy(f"upgrade to {_target(a)}: closedAt {_text(a.closed_at)} -> {_text(b.closed_at)}", at, a.closed_at, b.closed_at)
        return
    if b is None:
        applied = [w.wave for w in a.waves if w.applied_at is not None]
        yield _policy(f"upgrade to {_target(a)} in progress (waves {_text(applied)} applied) removed from fleet.yaml", at)
        return
    plan_a = (a.target, [(w.wave, w.step, w.clusters) for w in a.waves])
    plan_b = (b.target, [(w.wave, w.step, w.clusters) for w in b.waves])
    if plan_a != plan_b:
        yield _policy(f"upgrade to {_target(a)} in progress: plan changed (now to {_target(b)}, {len(b.waves)} wave(s))", at)
    waves_b = {w.wave: (i, w) for i, w in enumerate(b.waves)}
    for wave in a.waves:
        if wave.applied_at is None or wave.wave not in waves_b:
            continue
        index, now = waves_b[wave.wave]
        if now.applied_at != wave.applied_at:
            where = ("upgrade", "waves", index, "appliedAt")
            soak = "the next wave's soak counts from it"
            yield _policy(
                f"upgrade wave {wave.wave}: appliedAt {_text(wave.applied_at)} -> {_text(now.applied_at)} ({soak})",
                where,
                wave.applied_at,
                now.applied_at,
            )
    yield from _applied(a, b)
    if a.closed_at != b.closed_at:
        yield Change("upgrade-wave", f"upgrade to {_target(b)} closed", field="upgrade", path=at)


def _applied(a: Upgrade | None, b: Upgrade) -> Iterator[Change]:
    before = {w.wave for w in a.waves if w.applied_at is not None} if a else set()
    for index, wave in enumerate(b.waves):
        if wave.applied_at is not None and wave.wave not in before:
            text = f"upgrade wave {wave.wave} applied on {', '.join(wave.clusters)}"
            yield Change("upgrade-wave", text, field="upgrade", path=("upgrade", "waves", index))


def _grants_text(grants: set[tuple[str, str, str]]) -> str:
    """Permissions as `resource (verbs)`, one entry per resource: pods/exec (create, get)."""
    by: dict[str, list[str]] = {}
    for group, resource, verb in sorted(grants):
        by.setdefault(f"{group}/{resource}" if group else resource, []).append(verb)
    return "; ".join(f"{r} ({', '.join(v)})" for r, v in by.items())


def _gains(before: Access, after: Access) -> Iterator[tuple[ChangeKind, str, str, str, str]]:
    """(kind, field, what, before, after) of each way `after` differs from `before`; kind `access` for a gain."""

    def kind(gained: bool) -> ChangeKind:
        return "access" if gained else "access-narrowed"

    if before.priority_classes != after.priority_classes:
        gained = any(c not in before.priority_classes for c in after.priority_classes)
        old, new = _text(before.priority_classes) or "none", _text(after.priority_classes) or "none"
        yield kind(gained), "priorityClasses", "may use priority classes", old, new
    if before.pod_security != after.pod_security:
        weaker = PSA_ORDER.index(after.pod_security) > PSA_ORDER.index(before.pod_security)
        yield kind(weaker), "tenancy.podSecurity", "Pod Security level", before.pod_security, after.pod_security
    if before.service_types != after.service_types:
        gained = any(t not in before.service_types for t in after.service_types)
        old, new = (f"ClusterIP, {_text(t)}" if t else "ClusterIP only" for t in (before.service_types, after.service_types))
        yield kind(gained), "tenancy.serviceTypes", "Service types", old, new
    grants_a, grants_b = before.grants(), after.grants()
    if grants_b - grants_a:
        yield "access", "tenancy.role", "Role gains", "", _grants_text(grants_b - grants_a)
    if grants_a - grants_b:
        yield "access-narrowed", "tenancy.role", "Role loses", "", _grants_text(grants_a - grants_b)
    if before.limit_range != after.limit_range:
        old, new = ("on" if x else "off" for x in (before.limit_range, after.limit_range))
        yield "team", "tenancy.limitRange", "LimitRange", old, new


def _phrase(what: str, old: str, new: str) -> str:
    return f"{what} {new}" if not old else f"{what} {old} -> {new}"


def _access(base: Fleet, head: Fleet) -> Iterator[Change]:
    """What each team's pods may do, as it was and as it is: a gain needs the platform owners, a loss does not.

    A new team is held against what a team that sets nothing gets: asking for more on arrival is a gain too;
    the fleet's defaults are what every team added later gets without asking."""
    default_a = default_access(base.tenancy, base.priority_classes)
    default_b = default_access(head.tenancy, head.priority_classes)
    for kind, field, what, old, new in _gains(default_a, default_b):
        at = ("tenancy", field.removeprefix("tenancy."))
        text = f"a new team's {what}: {old} -> {new}" if old else f"a new team's {what} {new}"
        yield Change(kind, text, field=".".join(at), old=old or None, new=new, path=at)
    old_teams = {t.name: t for t in base.teams}
    names = {t.name for t in head.teams}
    renamed = {t.group: t for t in base.teams if t.name not in names}  # a new name for the same group: the same team
    for index, team in enumerate(head.teams):
        was = old_teams.get(team.name) or renamed.get(team.group)
        before = base.access(was) if was is not None else default_b
        for kind, field, what, old, new in _gains(before, head.access(team)):
            if was is None:
                if kind != "access":
                    continue  # a new team that asks for less than the default: nothing to approve, nothing to say
                text = f"team {team.name} added with {what} {new}" + (f" (a new team gets {old})" if old else " beyond a new team's")
            else:
                text = f"team {team.name}: {_phrase(what, old, new)}"
            yield Change(kind, text, team=team.name, field=field, old=old or None, new=new, path=("teams", index))

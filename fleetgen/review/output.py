"""How a pull-request review is shown: text, JSON (versioned), markdown for a PR comment, GitHub annotations.

The JSON Schema of the JSON form is schemas/output/diff.schema.json.

JSON shape, version 1 (`fleetgen diff --format json`):
  {"version": 1, "base": str, "head": str,
   "summary": [{"kind", "text", "cluster", "team", "field", "old", "new"}],
   "approvals": [{"rule", "description", "approvers": [str], "changes": [str]}],
   "warnings": [str], "refusals": [{"file", "line", "column", "path", "message"}],
   "quotaImpacts": [{"cluster", "namespace", "resource", "used", "hard"}],
   "clusters": [{"name", "environment", "state",
                 "objects": [{"kind", "namespace", "name", "state", "fields": [{"path", "old", "new"}]}]}]}
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import Any

from fleetgen.compare.object_diff import FieldChange, ObjectChange, json_value, object_lines, show
from fleetgen.errors import Finding, Location
from fleetgen.live.drift_output import Impacts, impact_text
from fleetgen.output.findings import escape_github
from fleetgen.review import FleetDiff
from fleetgen.review.changes import Change

MARKER = "<!-- fleetgen-diff -->"
COMMENT_LIMIT = 65_536  # GitHub's limit on a comment body
BUDGET = 60_000  # leaves room for the truncation note and what CI wraps around it


def refusal_text(finding: Finding) -> str:
    """`fleet.yaml:12:16: platform.gpuOperator.driverCrd: ...`: a refusal as validate writes a finding."""
    where = f"{finding.location}: " if finding.location else ""
    return f"{where}{finding.dotted_path}: {finding.message}"


def _summary_lines(diff: FleetDiff) -> list[str]:
    return [c.text for c in diff.changes]


def _approvers_of(diff: FleetDiff) -> dict[str, list[str]]:
    """Change text -> the rules (with approvers) that gate it."""
    out: dict[str, list[str]] = {}
    for approval in diff.approvals:
        for change in approval.changes:
            out.setdefault(change.text, []).append(f"{', '.join(approval.rule.approvers)} ({approval.rule.name})")
    return out


# -- text -------------------------------------------------------------------------------------


def diff_text(diff: FleetDiff, impacts: Impacts) -> str:
    lines = [f"fleetgen diff {diff.base}..{diff.head}: {len(_summary_lines(diff))} change(s), {len(diff.clusters)} cluster(s) affected"]
    gates = _approvers_of(diff)
    if diff.refusals:
        lines.append("refused (the pull request must change before it merges):")
        lines += [f"  - error: {refusal_text(f)}" for f in diff.refusals]
    if _summary_lines(diff):
        lines.append("summary:")
        for text in _summary_lines(diff):
            lines.append(f"  - {text}" + (f"  [needs {'; '.join(gates[text])}]" if text in gates else ""))
    if diff.approvals:
        lines.append("approvals required:")
        lines += [f"  - {a.rule.name}: {', '.join(a.rule.approvers)} ({len(a.changes)} change(s))" for a in diff.approvals]
    warnings = diff.warnings + [impact_text(c, i) for c, items in impacts.items() for i in items]
    if warnings:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in warnings]
    for cluster in diff.clusters:
        lines.append(f"{cluster.cluster} ({cluster.environment}): cluster {cluster.state}, {len(cluster.objects)} object(s)")
        lines += object_lines(cluster.objects)
    return "\n".join(lines)


# -- json -------------------------------------------------------------------------------------


def diff_json(diff: FleetDiff, impacts: Impacts) -> str:
    payload: dict[str, Any] = {
        "version": 1,
        "base": diff.base,
        "head": diff.head,
        "summary": [
            {"kind": c.kind, "text": c.text, "cluster": c.cluster, "team": c.team, "field": c.field, "old": c.old, "new": c.new}
            for c in diff.changes
        ],
        "approvals": [
            {
                "rule": a.rule.name,
                "description": a.rule.description,
                "approvers": list(a.rule.approvers),
                "changes": [c.text for c in a.changes],
            }
            for a in diff.approvals
        ],
        "warnings": diff.warnings,
        "refusals": [
            {
                "file": f.location.file if f.location else None,
                "line": f.location.line if f.location else None,
                "column": f.location.column if f.location else None,
                "path": f.dotted_path,
                "message": f.message,
            }
            for f in diff.refusals
        ],
        "quotaImpacts": [
            {"cluster": c, "namespace": i.namespace, "resource": i.resource, "used": i.used, "hard": i.hard}
            for c, items in impacts.items()
            for i in items
        ],
        "clusters": [
            {
                "name": c.cluster,
                "environment": c.environment,
                "state": c.state,
                "objects": [
                    {
                        "kind": o.kind,
                        "namespace": o.namespace,
                        "name": o.name,
                        "state": o.state,
                        "fields": [{"path": f.path, "old": json_value(f.old), "new": json_value(f.new)} for f in o.fields],
                    }
                    for o in c.objects
                ],
            }
            for c in diff.clusters
        ],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


# -- markdown ---------------------------------------------------------------------------------


def _code(value: Any) -> str:
    """A value inside a table cell: escaped so no value can break the table or the page."""
    text = html.escape(show(value)).replace("|", "&#124;").replace("\n", " ")
    return f"<code>{text[:200]}{'…' if len(text) > 200 else ''}</code>"


def _cell(text: str) -> str:
    return html.escape(text).replace("|", "&#124;").replace(" -&gt; ", " → ")


FieldSource = Callable[[str, ObjectChange, FieldChange], str]  # (cluster, object, field) -> "fleet.yaml:212"


def diff_markdown(diff: FleetDiff, impacts: Impacts, budget: int = BUDGET, source: FieldSource | None = None) -> str:
    """The PR comment; with `source`, each changed field names the fleet.yaml line(s) of the head it comes from."""
    gates = _approvers_of(diff)
    head = [MARKER, f"### fleetgen: {_cell(diff.base)} → {_cell(diff.head)}", ""]
    summary = _summary_lines(diff)
    if not summary and not diff.clusters:
        return "\n".join(head + ["No change to any cluster."]) + "\n"
    head.append(
        f"**{len(summary)} change(s), {len(diff.clusters)} cluster(s) affected.** "
        + (
            "Approval required from: " + ", ".join(sorted({g for a in diff.approvals for g in a.rule.approvers})) + "."
            if diff.approvals
            else "Self-service: no approval rule applies."
        )
    )
    if diff.refusals:
        head += ["", "**Refused: this pull request must change before it merges**", ""]
        head += [f"- ⛔ {_cell(refusal_text(f))}" for f in diff.refusals]
    head += ["", "| Change | Approval |", "|---|---|"]
    head += [f"| {_cell(text)} | {_cell('; '.join(gates.get(text, [])) or '—')} |" for text in summary]
    warnings = diff.warnings + [impact_text(c, i) for c, items in impacts.items() for i in items]
    if warnings:
        head += ["", "**Warnings**", ""] + [f"- ⚠️ {_cell(w)}" for w in warnings]
    body = "\n".join(head) + "\n"
    sections = [_cluster_section(c, source) for c in diff.clusters]
    kept = 0
    for section in sections:
        if len(body) + len(section) > budget:
            break
        body += section
        kept += 1
    if kept < len(sections):
        body += (
            f"\n> ✂️ Truncated to stay under GitHub's {COMMENT_LIMIT:,}-character comment limit: "
            f"{len(sections) - kept} more cluster(s) not shown. Run `fleetgen diff --base {_cell(diff.base)}` for the full diff.\n"
        )
    return body


def _cluster_section(cluster: Any, source: FieldSource | None) -> str:
    counts: dict[str, int] = {}
    for obj in cluster.objects:
        counts[obj.state] = counts.get(obj.state, 0) + 1
    tally = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    lines = [
        "",
        f"<details><summary><b>{_cell(cluster.cluster)}</b> ({cluster.environment}, cluster {cluster.state}): {tally}</summary>",
        "",
        "| Object | Field | Base | Head |" + (" From |" if source else ""),
        "|---|---|---|---|" + ("---|" if source else ""),
    ]
    for obj in cluster.objects:
        if obj.state == "changed":
            for f in obj.fields:
                line = f"| {_cell(obj.title)} | {_code(f.path)} | {_code(f.old)} | {_code(f.new)} |"
                lines.append(line + (f" {_cell(source(cluster.cluster, obj, f))} |" if source else ""))
        else:
            lines.append(f"| {_cell(obj.title)} | *{obj.state}* | | |" + (" |" if source else ""))
    lines += ["", "</details>", ""]
    return "\n".join(lines)


# -- GitHub Actions ---------------------------------------------------------------------------


def github_annotations(diff: FleetDiff, locate: Callable[[Change], Location]) -> str:
    """One error per refusal, at its field, and one warning per approval, at the fleet.yaml line of the change that
    triggered it."""
    lines = []
    for finding in diff.refusals:
        at = finding.location
        props = f"file={escape_github(at.file, prop=True)},line={at.line},col={at.column}," if at else ""
        title = escape_github(f"refused: {finding.dotted_path}", prop=True)
        lines.append(f"::error {props}title={title}::{escape_github(finding.message)}")
    for approval in diff.approvals:
        where = locate(approval.changes[0])
        changes = "; ".join(c.text for c in approval.changes)
        props = f"file={escape_github(where.file, prop=True)},line={where.line},col={where.column}"
        title = escape_github(f"approval required ({approval.rule.name})", prop=True)
        lines.append(f"::warning {props},title={title}::{escape_github(', '.join(approval.rule.approvers) + ' must approve: ' + changes)}")
    return "\n".join(lines)

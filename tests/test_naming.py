"""Names of a team's objects: fleet-wide templates, a team's own names, and the checks on both."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLE, REPO, findings_of, line_of, replace_once

from fleetgen import workflows
from fleetgen.checks.load import load_fleet_text
from fleetgen.render.layout import cluster_objects


def _names(text: str, cluster: int, namespace: str) -> set[tuple[str, str]]:
    fleet = load_fleet_text(text.encode()).fleet
    return {(m.key.kind, m.key.name) for m in cluster_objects(fleet, cluster) if m.key.namespace == namespace}


def test_default_names_leave_the_shipped_tree_byte_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert workflows.freshness(Path(EXAMPLE.name), None).found == []


def test_fleet_templates_and_a_team_override_name_the_objects(example_text: str) -> None:
    naming = "naming:\n  role: '{team}-workloads'\n  roleBinding: '{namespace}-members'\n  localQueue: default\n\n"
    text = replace_once(
        example_text, "priorityClasses:\n  - name: production-inference", naming + "priorityClasses:\n  - name: production-inference"
    )
    text = replace_once(
        text,
        "    allowedIngressNamespaces: [monitoring]\n",
        "    allowedIngressNamespaces: [monitoring]\n    names: {resourceQuota: nlp-gpu, networkPolicy: isolate, limitRange: nlp-defaults}\n",
    )
    assert findings_of(text) == []
    assert _names(text, 2, "team-nlp") == {
        ("Role", "nlp-workloads"),
        ("RoleBinding", "team-nlp-members"),
        ("ResourceQuota", "nlp-gpu"),
        ("NetworkPolicy", "isolate"),
        ("LocalQueue", "default"),
        ("LimitRange", "nlp-defaults"),
    }
    assert _names(text, 2, "team-robotics") >= {("ResourceQuota", "gpu-quota"), ("LocalQueue", "default"), ("Role", "robotics-workloads")}
    objects = {m.key: m.body for m in cluster_objects(load_fleet_text(text.encode()).fleet, 2)}
    assert objects["RoleBinding", "team-nlp", "team-nlp-members"]["roleRef"]["name"] == "nlp-workloads"


def test_unknown_placeholder_and_bad_name_are_errors_at_their_line(example_text: str) -> None:
    text = replace_once(
        example_text,
        "priorityClasses:\n  - name: production-inference",
        "naming:\n  role: '{cluster}-role'\n  localQueue: Team_Queue\n\npriorityClasses:\n  - name: production-inference",
    )
    role, queue = line_of(text, "{cluster}-role"), line_of(text, "Team_Queue")
    assert findings_of(text) == [
        f"{role}:9: naming.role: unknown placeholder {{cluster}} in '{{cluster}}-role'; the placeholders are {{team}} and {{namespace}}",
        f"{queue}:15: naming.localQueue: 'Team_Queue' does not make a DNS-1123 subdomain name (lowercase letters, digits, '-' and '.', "
        "at most 190 characters, with {team} and {namespace} as placeholders)",
    ]


def test_two_resource_quotas_with_one_name_are_an_error_at_the_name(example_text: str) -> None:
    text = replace_once(
        example_text,
        "    priorityClasses: [scheduled-training, exploratory]",
        "    priorityClasses: [scheduled-training, exploratory]\n    names: {priorityClassQuota: gpu-quota}",
    )
    line = line_of(text, "priorityClassQuota: gpu-quota")
    assert findings_of(text) == [
        f"{line}:33: teams[2].names.priorityClassQuota: ResourceQuota name 'gpu-quota' in team-robotics is also the team's "
        "resourceQuota; two objects of one kind in a namespace need different names"
    ]

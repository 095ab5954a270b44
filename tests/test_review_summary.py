"""The summary of a pull request says every edit that changes what a cluster gets.

The summary's readers describe in words what the approval gate judges; an edit they have no words for (an endpoint, a
registry, a cohort's quota, the driver upgrade policy) is listed by its path and values, so `diff` never reads
"0 change(s)" above a changed tree. An add-on's release on a production cluster is a version change the
productionVersions rule gates, as the driver is.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import examples
from generated_fleets import fleet_text, pull_requests
from hypothesis import HealthCheck, assume, given

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import FindingsError
from fleetgen.model import Fleet
from fleetgen.render.rendered import Rendered
from fleetgen.review import all_changes, diff_fleets
from fleetgen.review.approvals import required_approvals


def _model(fleet: dict[str, Any]) -> Fleet | None:
    try:
        return load_fleet_text(fleet_text(fleet).encode()).fleet
    except FindingsError:
        return None


@pytest.mark.slow  # each example renders both sides
@examples(40, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(pull_requests())
def test_a_pull_request_that_changes_a_cluster_s_objects_has_a_summary(pair: tuple[dict[str, Any], dict[str, Any], list[str]]) -> None:
    base, head, edits = pair
    old, new = _model(base), _model(head)
    assume(old is not None and new is not None)
    assert old is not None and new is not None
    before = Rendered(old)
    review = diff_fleets(before, Rendered(new, lender=before), "base", "head")
    assert review.changes or not review.clusters, (edits, [c.cluster for c in review.clusters])


def _edited(example_text: str, anchor: str, after: str) -> Fleet:
    assert anchor in example_text
    return load_fleet_text(example_text.replace(anchor, after, 1).encode()).fleet


def test_an_endpoint_added_is_named_in_the_summary(example_text: str) -> None:
    anchor = "        metrics: {<<: *http-metrics, selector: {service: moderation}}\n"
    endpoint = (
        "      - name: summarize\n        tier: near-real-time\n        clusters: [prod-inference-eastus]\n"
        "        metrics: {<<: *http-metrics, selector: {service: summarize}}\n"
    )
    base = load_fleet_text(example_text.encode()).fleet
    head = _edited(example_text, anchor, anchor + endpoint)
    assert [c.text for c in all_changes(base, head)] == ["team nlp: endpoints.summarize added"]
    selector = _edited(example_text, "selector: {service: moderation}", "selector: {service: moderation-v2}")
    assert [c.text for c in all_changes(base, selector)] == [
        "team nlp: endpoints.moderation.metrics.selector.service: moderation -> moderation-v2"
    ]


def test_a_kueue_release_on_production_needs_the_production_versions_approval(example_text: str) -> None:
    base = load_fleet_text(example_text.encode()).fleet
    version = base.platform.kueue.version
    anchor = "  gpuOperator: {version: v24.3.0}"
    head = _edited(example_text, anchor, f"  kueue: {{version: {version}-rc.1}}\n{anchor}")
    changes = all_changes(base, head)
    production = [c.cluster for c in changes if c.kind == "versions" and c.production]
    assert production == [c.name for c in base.clusters if c.environment == "production"]
    assert all(c.text.endswith(f"Kueue {version} -> {version}-rc.1") for c in changes)
    assert "production-versions" in [a.rule.name for a in required_approvals(base, changes)]

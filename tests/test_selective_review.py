"""The pull-request review compares only what a change reaches, and says exactly what comparing everything says.

`diff` renders and compares only the clusters whose inputs changed (the base lends the rest, tests/test_incremental.py),
and sums up only the teams whose entry, or a cluster they are on, changed. The properties run over generated pull
requests (tests/generated_fleets.py `pull_requests`): edits anywhere in fleet.yaml, shared sections included.
"""

from __future__ import annotations

import sys
from typing import Any
from unittest import mock

import pytest
import yaml
from conftest import EXAMPLE, examples
from generated_fleets import fleet_text, fleets, pull_requests
from hypothesis import HealthCheck, assume, given

from fleetgen.checks.load import load_fleet_text, passed_fleet_text
from fleetgen.errors import FindingsError
from fleetgen.model import Fleet
from fleetgen.output.emit import dump_documents
from fleetgen.render.rendered import Rendered
from fleetgen.review import changes as changes_module
from fleetgen.review import diff_fleets
from fleetgen.review.output import diff_json

sys.path.insert(0, str(EXAMPLE.parent / "benchmarks"))
from synth import synthetic_fleet


def _model(fleet: dict[str, Any]) -> Fleet | None:
    """The fleet a generated dict loads to; None when an edit left it invalid."""
    try:
        return load_fleet_text(fleet_text(fleet).encode()).fleet
    except FindingsError:
        return None


def _review(base: Fleet, head: Fleet) -> str:
    """What `diff --format json` prints, rendered as the command renders it: the head lent the base's clusters."""
    old = Rendered(base)
    return diff_json(diff_fleets(old, Rendered(head, lender=old), "base", "head"), {})


@pytest.mark.slow  # each example renders both sides twice
@examples(40, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(pull_requests())
def test_the_review_of_what_a_change_reaches_is_the_review_of_everything(pair: tuple[dict[str, Any], dict[str, Any], list[str]]) -> None:
    base, head, edits = pair
    old, new = _model(base), _model(head)
    assume(old is not None and new is not None)
    assert old is not None and new is not None
    selective = _review(old, new)
    with mock.patch.object(changes_module, "_untouched", return_value=False):  # every team compared
        full = _review(_model(base), _model(head))  # type: ignore[arg-type]  # fresh models: nothing cached from the first
    assert selective == full, edits


def test_a_one_team_change_compares_that_team_alone() -> None:
    fleet = yaml.safe_load(synthetic_fleet(10, 40, 3))
    base = load_fleet_text(yaml.safe_dump(fleet, sort_keys=False).encode()).fleet
    team = fleet["teams"][7]
    team["quota"]["pods"] += 1
    head = load_fleet_text(yaml.safe_dump(fleet, sort_keys=False).encode()).fleet
    compared = mock.Mock(wraps=changes_module._team)
    with mock.patch.object(changes_module, "_team", compared):
        found = changes_module.fleet_changes(base, head)
    assert [call.args[3].name for call in compared.call_args_list] == [team["name"]]
    assert [c.team for c in found] == [team["name"]] * len(team["clusters"])  # its pods quota on each of its clusters
    assert all(c.kind == "quota" and c.field == "pods" for c in found)


def test_a_team_whose_cluster_changed_is_compared_though_its_entry_did_not() -> None:
    """A cluster's one queue renamed moves every team placed there without naming a queue: each one's LocalQueue must
    be created again, which the review says (and warns of) though no team entry changed."""
    fleet = yaml.safe_load(synthetic_fleet(10, 40, 3))
    base = load_fleet_text(yaml.safe_dump(fleet, sort_keys=False).encode()).fleet
    fleet["clusters"][1]["queues"] = [{"name": "batch-queue"}]
    head = load_fleet_text(yaml.safe_dump(fleet, sort_keys=False).encode()).fleet
    moved = [c.team for c in changes_module.fleet_changes(base, head) if c.field == "queue"]
    placed = [t["name"] for t in fleet["teams"] if fleet["clusters"][1]["name"] in t["clusters"]]
    assert moved == placed and placed


@pytest.mark.slow  # each example renders every cluster of both sides
@examples(40, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(pull_requests())
def test_a_cluster_whose_fingerprint_a_change_leaves_alone_gets_the_same_objects(
    pair: tuple[dict[str, Any], dict[str, Any], list[str]],
) -> None:
    """What lets a render or a diff take the base's objects for a cluster: an equal fingerprint means equal objects."""
    base, head, edits = pair
    old, new = _model(base), _model(head)
    assume(old is not None and new is not None)
    assert old is not None and new is not None
    before, after = Rendered(old), Rendered(new)
    for index in range(len(new.clusters)):
        if after.same_as(before, index):
            assert after.keyed(index) == before.keyed(index), (new.clusters[index].name, edits)
            assert dump_documents([m.body for m in after.objects(index)]) == dump_documents([m.body for m in before.objects(index)])
            assert [m.source for m in after.objects(index)] == [m.source for m in before.objects(index)], edits  # where each came from


def test_one_placement_of_a_team_reaches_that_cluster_alone() -> None:
    fleet = yaml.safe_load(synthetic_fleet(10, 40, 3))
    base = Rendered(load_fleet_text(yaml.safe_dump(fleet, sort_keys=False).encode()).fleet)
    team = fleet["teams"][7]
    on = sorted(team["clusters"])[1]
    team["clusters"][on] = {"requests": {"gpu": 2}, "limits": {"gpu": 2}}
    head = Rendered(load_fleet_text(yaml.safe_dump(fleet, sort_keys=False).encode()).fleet)
    reached = [c.name for i, c in enumerate(head.fleet.clusters) if not head.same_as(base, i)]
    assert reached == [on]
    team["quota"]["pods"] += 1  # the team's own quota: every cluster it is on
    again = Rendered(load_fleet_text(yaml.safe_dump(fleet, sort_keys=False).encode()).fleet)
    assert [c.name for i, c in enumerate(again.fleet.clusters) if not again.same_as(base, i)] == sorted(team["clusters"])


@examples(20, suppress_health_check=[HealthCheck.too_slow])
@given(fleets())
def test_a_text_known_to_pass_types_to_the_same_fleet_without_positions_or_checks(fleet: dict[str, Any]) -> None:
    """A side of a diff whose text the cache knows passed is typed without the secret scan and the checks across the
    model, and the base without positions: the same data and the same Fleet as the full load."""
    raw = fleet_text(fleet).encode()
    try:
        full = load_fleet_text(raw)
    except FindingsError:
        assume(False)
        return
    for positions in (True, False):
        known = passed_fleet_text(raw, "fleet.yaml", positions=positions)
        assert known.fleet == full.fleet and known.source.data == full.source.data and known.source.text == full.source.text
        assert (known.source.values == full.source.values) is positions

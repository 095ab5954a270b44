"""A render builds each cluster's objects once, for its objects (what validate checks) and its folder's plan (what
render writes) alike: whichever a run asks for first, both are what the builders give on their own."""

from __future__ import annotations

from generated_fleets import fleet_text, fleets
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.render import cluster_objects
from fleetgen.render.gitops import entry_point
from fleetgen.render.layout import plan
from fleetgen.render.rendered import Rendered


@given(fleets(), st.booleans())
def test_objects_and_plan_built_once_are_what_the_builders_give(fleet: dict[str, object], plan_first: bool) -> None:
    model = load_fleet_text(fleet_text(fleet).encode(), "fleet.yaml").fleet
    rendered = Rendered(model)
    indexes = range(len(model.clusters))
    if plan_first:  # validate and render plan base/ first: a team's parts that no cluster changes are its base objects
        plans = [rendered.cluster_plan(i) for i in indexes]
        objects = [rendered.keyed(i) for i in indexes]
    else:  # a diff or drift asks for a few clusters' objects with base/ unplanned
        objects = [rendered.keyed(i) for i in indexes]
        plans = [rendered.cluster_plan(i) for i in indexes]
    alone = [{m.key: m.body for m in cluster_objects(model, i) + entry_point(model, i)} for i in indexes]
    assert [list(o.items()) for o in objects] == [list(o.items()) for o in alone]  # the same objects, in the same order
    assert [*rendered.base_files, *(f for p in plans for f in p), *rendered.hub_files] == plan(model)

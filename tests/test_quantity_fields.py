"""Quantities come from the schemas: every quantity field of every kind fleetgen renders, written back in each
canonical form the API server (or a webhook decoding into resource.Quantity) stores, is no drift and no diff;
the same field one unit off is exactly one change.

The canonical forms are written here after apimachinery's `resource.Quantity` (CanonicalizeBytes): DecimalSI
puts the largest SI suffix that leaves a whole mantissa (`0.5` -> `500m`, `1000` -> `1k`), BinarySI the largest
power of 1024 for a whole value of 1024 or more (else DecimalSI), DecimalExponent an exponent that is a multiple
of 3 (`500e-3`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
from conftest import EXAMPLE, replace_once
from hypothesis import assume, given
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.compare.object_diff import object_diff
from fleetgen.importer.verify import unreproduced
from fleetgen.live.managed import managed_view
from fleetgen.model import Quantity
from fleetgen.model.types import LARGEST_QUANTITY
from fleetgen.render import cluster_objects
from fleetgen.render.rendered import Rendered
from fleetgen.validation.quantity_fields import ITEM, quantity_fields

SI = [(18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "u"), (-9, "n")]
BINARY = [(60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")]


def decimal_si(value: Fraction) -> str:
    for exponent, suffix in SI:
        mantissa = value / Fraction(10) ** exponent
        if mantissa.denominator == 1 and (mantissa != 0 or exponent == 0):
            return f"{mantissa.numerator}{suffix}"
    raise AssertionError(f"{value} is finer than a nano")


def binary_si(value: Fraction) -> str:
    if value.denominator != 1 or abs(value) < 1024:
        return decimal_si(value)
    return next(
        (f"{value.numerator >> bits}{suffix}" for bits, suffix in BINARY if value.numerator % (1 << bits) == 0), str(value.numerator)
    )


def decimal_exponent(value: Fraction) -> str:
    for exponent in range(18, -12, -3):
        mantissa = value / Fraction(10) ** exponent
        if mantissa.denominator == 1 and (mantissa != 0 or exponent == 0):
            return f"{mantissa.numerator}" + (f"e{exponent}" if exponent else "")
    raise AssertionError(f"{value} is finer than a nano")


def server_forms(value: Any) -> set[Any]:
    """Every way the cluster may hand `value` back: the three canonical strings, and a whole number as a number."""
    exact = Quantity.parse(str(value)).value
    forms: set[Any] = {decimal_si(exact), binary_si(exact), decimal_exponent(exact)}
    if exact.denominator == 1:
        forms.add(exact.numerator)
    return forms


def test_the_canonical_forms_are_apimachinerys() -> None:
    assert server_forms("0.5") == {"500m", "500e-3"}
    assert server_forms("1.5") == {"1500m", "1500e-3"}
    assert server_forms("256Gi") == {"274877906944", "256Gi", 274877906944}
    assert server_forms(1000) == {"1k", "1e3", 1000}
    assert server_forms("1536") == {"1536", 1536}
    assert server_forms(10**18) == {"1E", "1e18", "976562500000000Ki", 10**18}
    assert Quantity.parse("1E").value == 10**18  # exa, not an exponent without digits (found by the property below)


def quantity_leaves(body: Any, api_version: str, kind: str, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(where, value) of every quantity the object holds; `where` indexes lists by position."""
    fields = quantity_fields(api_version, kind)
    if isinstance(body, dict):
        for key, value in body.items():
            yield from (((key, *w), v) for w, v in quantity_leaves(value, api_version, kind, (*path, key)))
    elif isinstance(body, list):
        for index, value in enumerate(body):
            yield from (((index, *w), v) for w, v in quantity_leaves(value, api_version, kind, (*path, ITEM)))
    elif fields.holds(path):
        yield (), body


def put(body: dict[str, Any], where: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    node: Any = out
    for step in where[:-1]:
        node = node[step]
    node[where[-1]] = value
    return out


@pytest.fixture(scope="module")
def rendered_kinds() -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every object of every cluster of the example, with a fair-sharing weight of 0.5, by (apiVersion, kind)."""
    text = replace_once(EXAMPLE.read_text(encoding="utf-8"), "fairSharingWeight: 1\n", "fairSharingWeight: 0.5\n")
    loaded = load_fleet_text(text.encode())
    rendered = Rendered(loaded.fleet)
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for index in range(len(loaded.fleet.clusters)):
        for body in rendered.keyed(index).values():
            out.setdefault((body["apiVersion"], body["kind"]), []).append(body)
    return out


def test_every_quantity_field_in_every_server_form_is_no_drift_and_no_diff(
    rendered_kinds: dict[tuple[str, str], list[dict[str, Any]]],
) -> None:
    seen: dict[str, set[tuple[Any, ...]]] = {}
    for (api_version, kind), bodies in sorted(rendered_kinds.items()):
        for body in bodies:
            for where, value in quantity_leaves(body, api_version, kind):
                seen.setdefault(kind, set()).add(tuple("[]" if isinstance(w, int) else w for w in where))
                for form in server_forms(value):
                    live = put(body, where, form)
                    assert managed_view(live, body) == body, (kind, where, value, form)
                    assert object_diff(body, live, kind) == [], (kind, where, value, form)
                one_more = Quantity.parse(str(value)).value + Fraction(1, 1000)
                live = put(body, where, decimal_si(one_more))
                [change] = object_diff(body, managed_view(live, body), kind)
                assert (change.old, change.new) == (value, decimal_si(one_more))
    # the fields the hand-kept lists knew, and those they missed, are all found from the schemas
    assert {"ResourceQuota", "LimitRange", "ClusterQueue", "Queue"} <= seen.keys(), sorted(seen)
    assert ("spec", "fairSharing", "weight") in seen["ClusterQueue"]
    assert {("spec", "capability", "cpu"), ("spec", "deserved", "nvidia.com/gpu")} & seen["Queue"]


def test_a_fair_sharing_weight_of_half_is_what_the_api_server_stores_as_500m(
    rendered_kinds: dict[tuple[str, str], list[dict[str, Any]]],
) -> None:
    [queue] = [b for b in rendered_kinds[("kueue.x-k8s.io/v1beta2", "ClusterQueue")] if b["metadata"]["name"] == "data-science-queue"]
    assert queue["spec"]["fairSharing"]["weight"] in ("0.5", 0.5)
    live = put(queue, ("spec", "fairSharing", "weight"), "500m")
    assert object_diff(queue, managed_view(live, queue), "ClusterQueue") == []


def test_a_field_that_is_not_a_quantity_is_never_taken_by_value() -> None:
    """A name or a label that happens to parse as a quantity is text: `1k` is not `1000` there."""
    body = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "labels": {"size": "1k"}},
        "spec": {"hard": {"pods": "1k"}},
    }
    live = put(put(body, ("metadata", "labels", "size"), "1000"), ("spec", "hard", "pods"), "1000")
    assert [c.path for c in object_diff(body, live, "ResourceQuota")] == ["metadata.labels.size"]
    assert quantity_fields("v1", "Namespace").patterns == frozenset()


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("v1", "K" * 300),  # a file name too long to open
        ("kueue.x-k8s.io/" + "v" * 300, "ClusterQueue"),
        ("a" * 253 + "/v1", "Q" * 63),  # each part within its own bound, the file name not
        ("v1", "../../etc/passwd"),
        ("v1", "Pod\x00"),
        ("../v1", "ResourceQuota"),
        ("", ""),
    ],
)
def test_an_unknown_or_over_long_kind_has_no_quantity_fields(api_version: str, kind: str) -> None:
    """What a dump or a pull request calls an object names no schema file: it has no quantity fields, and nothing is opened."""
    assert quantity_fields(api_version, kind).patterns == frozenset()
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "q"}, "spec": {"hard": {"cpu": "1"}}}
    assert [c.path for c in object_diff(body, put(body, ("spec", "hard", "cpu"), "1000m"), kind)] == ["spec.hard.cpu"]


@given(
    mantissa=st.integers(min_value=-(10**12), max_value=10**12),
    exponent=st.integers(min_value=-9, max_value=9),
)
def test_every_server_form_of_a_quantity_has_its_value(mantissa: int, exponent: int) -> None:
    value = Fraction(mantissa) * Fraction(10) ** exponent
    assume(abs(value) <= LARGEST_QUANTITY)  # beyond it the API server refuses the quantity, and so does fleetgen
    for form in server_forms(decimal_si(value)):
        assert Quantity.parse(str(form)).value == value


def test_imports_verification_takes_quantities_at_their_value(rendered_kinds: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    """import compares a repository's objects with the render through views that drop apiVersion: its quantities are
    matched first, so a quota the repository writes `262144Mi` reproduces a rendered `256Gi`, and 262143Mi does not."""
    loaded = load_fleet_text(EXAMPLE.read_bytes())
    index = [c.name for c in loaded.fleet.clusters].index("dev-eastus")
    original = [copy.deepcopy(m.body) for m in cluster_objects(loaded.fleet, index)]
    quotas = [o for o in original if o["kind"] == "ResourceQuota" and "requests.memory" in o["spec"].get("hard", {})]
    assert quotas
    for quota in quotas:
        quota["spec"]["hard"]["requests.memory"] = decimal_si(Quantity.parse(quota["spec"]["hard"]["requests.memory"]).value)
    assert not [c for c in unreproduced(original, loaded.fleet, index) if c.kind == "ResourceQuota"]
    quotas[0]["spec"]["hard"]["requests.memory"] = "1"
    [change] = [c for c in unreproduced(original, loaded.fleet, index) if c.kind == "ResourceQuota"]
    assert [f.path for f in change.fields] == ["hard[requests.memory]"]

"""schemas/fleet.schema.json (what an editor checks as you type) and validate's model say the same of every document.

Random mutations of the shipped fleet.yaml (plus the optional sections it leaves out) are fed to both
the JSON Schema (jsonschema, formats asserted) and the pydantic model as `validate` reads the file
(fleetgen's YAML 1.2 reader, fleet.yaml's camelCase names): type swaps, empty strings, negative and
fractional numbers, bad URLs, durations past their bound, dates, names with spaces. Both must accept
the document or both refuse it.

Only the model/type stage is compared; the cross-reference checks run after it and are no schema's.
What the schema cannot judge, and so is left out, each for its reason:
- a repeat in a list keyed by a field (two queues named alike): JSON Schema's uniqueItems compares
  whole items; plain lists of names do say uniqueItems;
- a Prometheus regular expression RE2 would read differently (`{` that starts no repetition);
- a day the calendar lacks (2026-02-30): a pattern checks the form of a date only;
- a number whose meaning depends on how it was written: JSON Schema calls 8.0 an integer, fleetgen
  reads `maxNodes: 8.0` as a fraction and refuses it; so fractions are drawn with a fraction part.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import jsonschema
import pytest
from conftest import EXAMPLE, examples
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from pydantic import ValidationError

from fleetgen.model import Fleet
from fleetgen.model.json_schema import fleet_json_schema
from fleetgen.source.reader import parse_fleet

Path_ = tuple[str | int, ...]

# The sections and fields the example leaves out, so that mutations reach them too.
OPTIONAL: dict[str, Any] = {
    "capacity": {"gpuOvercommit": 1.5},
    "scheduling": {"workloadPriorityClasses": True},
    "naming": {"role": "{team}-role", "localQueue": "{namespace}-lq"},
    "slo": {"tiers": {"gold": {"availability": 99.9, "latencyP99": "200ms"}}},
    "rollout": {
        "soak": "24h",
        "maxWaveSize": 1,
        "windows": [{"days": ["mon", "tue"], "start": "09:00", "end": "17:00"}],
        "freezes": [{"start": "2026-12-20", "end": "2027-01-02", "reason": "holidays"}],
    },
    "upgrade": {
        "target": {"driver": "560.35.03"},
        "waves": [{"wave": 1, "step": {"driver": "560.35.03"}, "clusters": ["dev-eastus"], "appliedAt": "2026-11-24T09:00:00Z"}],
    },
    "compatibility": {"factsFile": "extra-facts.yaml"},
}

# Values a person might slip in, beside the random ones.
TYPOS = [
    "",
    " ",
    " padded",
    "trailing ",
    "not a url",
    "https://runbooks.example/gpu",
    "ftp://x",
    "Upper_Case",
    "a b",
    "a\tb",
    "zero\u200bwidth",
    "line\u2028break",
    "-1",
    "4780",
    "1e3",
    "0.5",
    "system-critical",
    "10m",
    "0s",
    "366d",
    "365d",
    "8761h",
    "525601m",
    "{team}-x",
    "{foo}",
    "-{team}",
    "2026-11-24T09:00:00Z",
    "2026-11-24 09:00",
    "20261224",
    "2026-12-20",
    "x" * 64,
    "a.b.c",
    "kubernetes.io/hostname",
    "/leading",
    "25%",
    "101%",
]
FRACTION = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).filter(lambda f: f != int(f) and abs(f) >= 1e-3)
SCALAR = st.one_of(
    st.integers(min_value=-(10**7), max_value=10**7),
    FRACTION,
    st.booleans(),
    st.none(),
    st.sampled_from(TYPOS),
    st.text(alphabet="abcXYZ019-_./: %{}", max_size=12),
)
VALUE = st.one_of(SCALAR, st.lists(SCALAR, max_size=3), st.dictionaries(st.sampled_from(["a", "name", "gpu", "b c"]), SCALAR, max_size=2))


def _plain(value: Any) -> Any:
    """The reader's values as JSON sees them (a SourceFloat is a float)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return float(value) if isinstance(value, float) else value


@cache
def base() -> dict[str, Any]:
    doc: dict[str, Any] = _plain(parse_fleet(EXAMPLE.read_bytes(), "fleet.yaml").data)
    doc.update(copy.deepcopy(OPTIONAL))
    doc["clusters"][3]["extraResources"] = ["hand-written/limits.yaml"]
    doc["clusters"][3]["platform"] = {
        "kueue": {"waitForPodsReady": {"timeout": "5m"}},
        "gpuOperator": {"driverUpgrade": {"maxUnavailable": 1}},
    }
    doc["clusters"][2]["cohorts"][0]["fairSharingWeight"] = 2
    doc["teams"][0]["names"] = {"role": "ds-role"}
    doc["teams"][0]["alerts"] = {"gpuMemoryFull": {"threshold": 90, "for": "5m", "severity": "warning"}}
    doc["teams"][1]["endpoints"][0]["runbookUrl"] = "https://runbooks.example/chat"
    return doc


@cache
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(fleet_json_schema()), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def paths(value: Any, at: Path_ = ()) -> list[Path_]:
    found = [at]
    if isinstance(value, dict):
        found += [p for k, v in value.items() for p in paths(v, (*at, k))]
    elif isinstance(value, list):
        found += [p for i, v in enumerate(value) for p in paths(v, (*at, i))]
    return found


def _at(doc: Any, path: Path_) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def replaced(doc: Any, path: Path_, value: Any) -> Any:
    doc = copy.deepcopy(doc)
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return doc


# Model errors outside the schema's reach (see the module's note), by pydantic type and message.
def _out_of_reach(error: Any) -> bool:
    kind, message = error["type"], error["msg"]
    if kind == "duplicate_item":
        return error["ctx"]["what"] != "entry "  # a keyed repeat; a plain list's repeat is uniqueItems
    if kind in ("date_from_datetime_parsing", "datetime_from_date_parsing", "date_parsing", "datetime_parsing"):
        return "outside expected range" in message or "out of range" in message
    disagreed = ("a '{' that starts no repetition", "inside a character class", "RE2 syntax", "not a valid regular expression")
    return any(words in message for words in disagreed)


def verdicts(doc: dict[str, Any]) -> tuple[list[Any] | None, list[str]]:
    """(the model's errors, None when it accepts; the schema's errors) for a document written as JSON (valid YAML 1.2)."""
    text = json.dumps(doc, ensure_ascii=False)
    data = parse_fleet(text.encode("utf-8", "surrogatepass"), "fleet.yaml").data
    try:
        Fleet.model_validate(data, by_alias=True, by_name=False)
        model = None
    except ValidationError as exc:
        model = exc.errors()
    schema = [f"{'.'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator().iter_errors(json.loads(text))]
    return model, schema


def assert_agree(doc: dict[str, Any], what: str) -> None:
    model, schema = verdicts(doc)
    if model is not None:
        # pydantic counts a list short after dropping the items that failed: an echo of those, not a finding of its own
        causes = [e for e in model if e["type"] != "too_short"] or model
        if all(_out_of_reach(e) for e in causes):
            return
    shown = None if model is None else [(".".join(map(str, e["loc"])), e["msg"][:120]) for e in model]
    assert (model is None) == (schema == []), f"{what}: model {shown or 'accepts'}; schema {schema or 'accepts'}"


def test_the_documents_start_valid_for_both() -> None:
    assert verdicts(base()) == (None, [])


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("metadata", "costCenter"), 4780),  # both: a whole number is the name's digits
        (("teams", 0, "group"), ""),  # both refuse: an empty group
        (("pricing", "gpuHour", "Standard_NC24ads_A100_v4"), -3.67),  # both refuse: a negative price
        (("alerts", "runbookBaseUrl"), "not a url"),  # both refuse
        (("metadata", "costCenter"), 47.8),  # both refuse: how 47.80 was written decides the name
        (("rollout", "soak"), "366d"),  # both refuse: past the year a soak may last
        (("rollout", "soak"), True),  # both refuse (the model crashed on it before)
        (("rollout", "freezes", 0, "start"), 0),  # both refuse: no date is a number of seconds
        (("approvals", 1, "when", "newCluster"), False),  # both refuse: a rule with no condition
        (("teams", 0, "allowedIngressNamespaces"), ["monitoring", "monitoring"]),  # both refuse: a repeat
        (("naming", "role"), "-{team}"),  # both refuse: no DNS name once filled in
        (("clusters", 0, "nodePools", 0, "taints", 0, "key"), ""),  # both refuse: an empty label key
        (("clusters", 3, "extraResources", 0), "platform/mine.yaml"),  # both refuse: render's folder
    ],
)
def test_the_issues_cases_get_one_verdict(path: Path_, value: Any) -> None:
    assert_agree(replaced(base(), path, value), f"{'.'.join(map(str, path))} = {value!r}")


def test_the_cases_land_where_the_issue_says() -> None:
    accepted = {(("metadata", "costCenter"), 4780)}
    for path, value in [
        (("metadata", "costCenter"), 4780),
        (("teams", 0, "group"), ""),
        (("pricing", "gpuHour", "Standard_NC24ads_A100_v4"), -3.67),
        (("alerts", "runbookBaseUrl"), "not a url"),
    ]:
        model, schema = verdicts(replaced(base(), path, value))
        assert (model is None and schema == []) is ((path, value) in accepted), (path, value, model, schema)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    doc, done = base(), []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(paths(doc)[1:]))
        value = draw(st.one_of(VALUE, st.just("SPACE"), st.just("NEGATE")))
        old = _at(doc, path)
        if value == "SPACE":
            value = f"{old} " if isinstance(old, str) else old
        elif value == "NEGATE":
            value = -old if isinstance(old, (int, float)) and not isinstance(old, bool) else old
        doc = replaced(doc, path, value)
        done.append(f"{'.'.join(map(str, path))} = {value!r}")
    return doc, done


@pytest.mark.slow
@examples(1000, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated())
def test_random_documents_get_one_verdict(case: tuple[dict[str, Any], list[str]]) -> None:
    doc, done = case
    assert_agree(doc, "; ".join(done))


@pytest.mark.slow
def test_every_field_with_every_typo_gets_one_verdict() -> None:
    """Each place of the document, each value of a fixed list: the sweep that found the differences this file guards."""
    sweep = [0, 4780, 2.5, -1, True, None, "", " padded", "not a url", "-1", "366d", "/leading", "a b", "x" * 64]
    document, seen = base(), set()
    for path in paths(document)[1:]:
        shape = tuple("#" if isinstance(p, int) else p for p in path)
        if isinstance(_at(document, path), (dict, list)) or shape in seen:
            continue  # each kind of leaf once (the first team's, the first pool's): a container's type swap is the random test's
        seen.add(shape)
        for value in sweep:
            assert_agree(replaced(base(), path, value), f"{'.'.join(map(str, path))} = {value!r}")

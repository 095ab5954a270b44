"""Every entry point survives hostile input: live dumps, scalars in fleet.yaml, YAML edge cases.

Each reproduction of a reported crash or silent acceptance is a test; each class of input also has a
property test, as many examples as the hypothesis profile says (FLEETGEN_HYPOTHESIS_PROFILE: dev, ci,
thorough). Garbage dumps go through the drift workflow in process; a few run the installed command for
its exit codes. The readers added since (facts file, kubectl, git revisions, the import tree, the tree's
own bookkeeping) and the renderers are fuzzed in tests/test_fuzz_readers.py.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, assert_quick, findings_of, line_of, replace_once
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import FindingsError, InputError
from fleetgen.live.drift_output import drift_json, drift_text
from fleetgen.live.dumps import live_objects
from fleetgen.source.reader import parse_fleet
from fleetgen.workflows import live_state

Run = Callable[..., CompletedProcess[str]]
ONE_LINE = re.compile(r"^fleetgen: (?P<file>[^:]+):(?P<line>\d+):(?P<column>\d+): .+$")


def namespace(**changes: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"a": "b"}}}
    obj["metadata"].update(changes)
    return obj


def dump(items: list[Any]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, sort_keys=False)


def live_problem(text: str) -> str:
    with pytest.raises(InputError) as caught:
        live_objects(text.encode("utf-8", "surrogateescape"), "live.yaml")
    return str(caught.value)


# -- live dumps (22.1) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (namespace(labels="team=a"), "items[3].metadata.labels: expected a map, got a string"),
        (namespace(annotations=["a"]), "items[3].metadata.annotations: expected a map, got a list"),
        (namespace(labels={"a": 1}), "items[3].metadata.labels.a: expected a string, got an integer"),
        (namespace(name=["a", "b"]), "items[3].metadata.name: expected a name, got a list"),
        ({**namespace(), "metadata": "team-a"}, "items[3].metadata: expected a map, got a string"),
        ({**namespace(), "kind": None}, "items[3].kind: expected a kind such as ConfigMap, got null"),
        ({**namespace(), "status": "Active"}, "items[3].status: expected a map, got a string"),
        ({**namespace(), "status": {"used": [1]}}, "items[3].status.used: expected a map, got a list"),
        ({**namespace(), "kind": "Node", "status": {"allocatable": "8"}}, "items[3].status.allocatable: expected a map, got a string"),
        ({**namespace(), "kind": "Node", "status": {"nodeInfo": ["v1.30.1"]}}, "items[3].status.nodeInfo: expected a map, got a list"),
        ({**namespace(), "kind": "Node", "spec": {"taints": {"key": "sku"}}}, "items[3].spec.taints: expected a list, got a map"),
        ({"kind": "Namespace"}, "items[3].metadata: required field is missing"),
        ("just text", "items[3]: expected a Kubernetes object (a map), got a string"),
    ],
)
def test_malformed_live_objects_are_refused_at_their_line_and_field(item: Any, expected: str) -> None:
    text = dump([namespace(name=f"ok-{i}") for i in range(3)] + [item])
    message = live_problem(text)
    match = re.match(r"live\.yaml:(\d+):(\d+): (.*)$", message)
    assert match and match.group(3) == expected, message
    line = int(match.group(1))
    assert line > text[: text.index("ok-2")].count("\n") + 1  # at the fourth item, not at the top of the file


def test_live_yaml_problems_are_one_line_at_their_position() -> None:
    assert (
        live_problem("items: [\n  a: b\n") == "live.yaml:3:1: YAML syntax: did not find expected ',' or ']' (a flow sequence from line 1)"
    )
    assert live_problem("a: " + "[" * 200 + "]" * 200) == "live.yaml:1:1: nested more than 128 levels deep"
    assert live_problem("kind: List\nitems:\n- kind: A\n  metadata: {name: x}\n  kind: B\n") == (
        "live.yaml:5:3: items[0].kind: duplicate key 'kind' (first at line 3)"
    )
    assert "\n" not in live_problem("x: " + "[" * 3000 + "]" * 3000)
    assert live_problem("a: \x01") == "live.yaml:1:4: character U+0001 is not allowed in YAML; inside double quotes write it as \\u0001"


def test_drift_refuses_a_malformed_dump_with_one_line(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    (tmp_path / "live.yaml").write_text(dump([namespace(), namespace(name="b", labels="x")]))
    done = cli_run("drift", "--cluster", "dev-eastus", "--live", "live.yaml", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["fleetgen: live.yaml:14:13: items[1].metadata.labels: expected a map, got a string"]


LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["List", "Namespace", "", "9" * 5000, "x" * 20_000]),
)
KEYS = st.sampled_from(
    ["kind", "apiVersion", "metadata", "name", "namespace", "labels", "annotations", "status", "used", "items", "spec", "hard"]
    + ["allocatable", "capacity", "nodeInfo", "conditions", "taints", "data", "managedFields", "nvidia.com/gpu", "requests.cpu"]
)
GARBAGE = st.recursive(LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=5)), max_leaves=25)
OBJECT = st.fixed_dictionaries(
    {"kind": st.one_of(st.sampled_from(["Namespace", "ResourceQuota", "LocalQueue", "Node", "ConfigMap"]), GARBAGE), "metadata": GARBAGE},
    optional={"status": GARBAGE, "spec": GARBAGE, "apiVersion": GARBAGE},
)
DUMP = st.one_of(
    st.lists(st.one_of(OBJECT, GARBAGE), max_size=5).map(dump),
    st.lists(OBJECT, min_size=1, max_size=4).map(lambda docs: yaml.safe_dump_all(docs)),
    st.text(max_size=200),  # not YAML at all, or YAML of any shape
)


def check_drift(folder: Path, text: str) -> None:
    """The drift workflow (what `fleetgen drift --format json` runs) on one dump: a report, or one line naming the dump."""
    (folder / "live.yaml").write_bytes(text.encode("utf-8", "surrogateescape"))
    started = time.perf_counter()
    try:
        result = live_state.drift(folder / "fleet.yaml", "dev-eastus", (folder / "live.yaml",), None, against="fleet.yaml")
    except InputError as exc:  # exit 2
        [line] = str(exc).splitlines()
        assert line.startswith(str(folder / "live.yaml")), line
    else:  # exit 1: the dump lacks what the render holds, so drift is found and reported
        assert result.found
        assert json.loads(drift_json("dev-eastus", result))["cluster"] == "dev-eastus"
        assert drift_text("dev-eastus", result).startswith("dev-eastus: ")
    assert_quick(time.perf_counter() - started, 1000, "drift")


@pytest.fixture(scope="module")
def fleet_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("drift")
    shutil.copy(EXAMPLE, folder / "fleet.yaml")
    return folder


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=DUMP)
def test_garbage_live_dumps_through_the_drift_workflow(fleet_folder: Path, text: str) -> None:
    check_drift(fleet_folder, text)


@pytest.mark.parametrize(
    ("items", "code"),
    [
        ([namespace()], 1),  # read, and drift found: the render holds much more
        ([namespace(labels=["x"])], 2),
        ([{**namespace(), "kind": "ResourceQuota", "spec": {"hard": ["a"]}}], 2),
        ([{**namespace(), "kind": "Node", "status": {"allocatable": {"nvidia.com/gpu": "9" * 5000}}}], 2),
    ],
)
def test_the_installed_drift_command_exits_1_or_2_with_one_line(fleet_folder: Path, console_run: Run, items: list[Any], code: int) -> None:
    (fleet_folder / "live.yaml").write_text(dump(items))
    args = ("drift", "--cluster", "dev-eastus", "--live", "live.yaml", "--against", "fleet.yaml", "--format", "json")
    done = console_run(*args, cwd=fleet_folder)
    assert done.returncode == code, done.stderr
    if code == 2:
        [line] = done.stderr.splitlines()
        assert line.startswith("fleetgen: live.yaml:") and "internal error" not in line, line
    else:
        assert json.loads(done.stdout)["cluster"] == "dev-eastus"


# -- scalars mean what they say (22.3, 14.3) ---------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "gpusPerNode: 1\n        cpuPerNode: 22",
            "gpusPerNode: True\n        cpuPerNode: 22",
            "gpusPerNode: Input should be a valid integer, got true",
        ),
        ("maxNodes: 4          #", "maxNodes: true          #", "maxNodes: Input should be a valid integer, got true"),
        ("    value: 1000\n", "    value: false\n", "priorityClasses[2].value: Input should be a valid integer, got false"),
        ("memoryPerNode: 200Gi", "memoryPerNode: -1Gi", "memoryPerNode: '-1Gi' is negative; a size or quota is 0 or more"),
        ("cpuPerNode: 22", "cpuPerNode: -4", "cpuPerNode: '-4' is negative; a size or quota is 0 or more"),
        ("requests: {cpu: 64, memory: 256Gi, gpu: 8}\n", "requests: {cpu: -8, memory: 256Gi, gpu: 8}\n", "requests.cpu: '-8' is negative"),
        ("maxNodes: 4          #", "max_nodes: 4          #", "max_nodes: unknown field; did you mean 'maxNodes'?"),
    ],
)
def test_hostile_scalars_are_errors_at_their_line(example_text: str, old: str, new: str, expected: str) -> None:
    text = example_text.replace(old, new, 1)
    line = line_of(text, new.strip().splitlines()[0])
    found = [f for f in findings_of(text) if expected in f]
    assert found and found[0].startswith(f"{line}:"), findings_of(text)


def test_a_flavor_listed_twice_is_an_error_at_the_repeat(example_text: str) -> None:
    borrower = "        flavors: [a100-spot]\n        cohort: training\n        nominalQuota: {a100-spot: {gpu: 0}}"  # data-science-queue
    text = replace_once(example_text, borrower, borrower.replace("[a100-spot]", "[a100-spot, a100-spot]"))
    line = line_of(text, "flavors: [a100-spot, a100-spot]")
    column = text.splitlines()[line - 1].rindex("a100-spot") + 1
    assert findings_of(text) == [f"{line}:{column}: clusters[2].queues[1].flavors[1]: duplicate entry 'a100-spot' (first at line {line})"]


def test_python_construction_by_field_name_still_works(example_text: str) -> None:
    fleet = load_fleet_text(example_text.encode()).fleet
    pool = fleet.clusters[0].node_pools[0]
    assert type(pool)(**{**pool.model_dump(), "max_nodes": 7}).max_nodes == 7


def test_team_add_refuses_a_group_with_a_line_break(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    done = cli_run("team", "add", "newt", "--group", "g\x85", "--cost-center", "cc", "--cluster", "dev-eastus", "--gpu", "1", cwd=tmp_path)
    assert done.returncode == 1 and "teams[3].group: must not hold control or line-break characters (U+0085" in done.stderr
    assert (tmp_path / "fleet.yaml").read_bytes() == EXAMPLE.read_bytes()


SCALAR = st.one_of(
    st.booleans(),
    st.none(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["-1Gi", "-0", "1e400", "0x10", "yes", "on", "", "\x85", "\u2028", "a\x00b", "1_000", "64Gb", "~"]),
    st.text(max_size=10),
    st.lists(st.integers(), max_size=2),
)
FIELDS = st.sampled_from(
    [
        "gpusPerNode: 1",
        "cpuPerNode: 22",
        "memoryPerNode: 200Gi",
        "maxNodes: 4 ",
        "    value: 1000\n",
        "group: 0a7d3f91",
        "globalDefault: true",
    ]
)


def check_scalar(example_text: str, needle: str, value: Any) -> None:
    field = needle.strip().split(":")[0]
    written = (
        json.dumps(value, ensure_ascii=False) if isinstance(value, (str, list)) or value is None else yaml.safe_dump(value).split("\n")[0]
    )
    text = example_text.replace(needle.strip(), f"{field}: {written}", 1)
    started = time.perf_counter()
    try:
        load_fleet_text(text.encode("utf-8", "surrogatepass"))
    except FindingsError as exc:
        assert exc.findings and all(f.location is not None and "\n" not in f.message for f in exc.findings)
    assert_quick(time.perf_counter() - started, 250, field)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(needle=FIELDS, value=SCALAR)
def test_hostile_scalars_through_load(example_text: str, needle: str, value: Any) -> None:
    check_scalar(example_text, needle, value)


# -- YAML edge cases (22.5) --------------------------------------------------------------------


def problems(text: str) -> list[str]:
    with pytest.raises(FindingsError) as caught:
        parse_fleet(text.encode("utf-8", "surrogatepass"), "f.yaml")
    return [f"{f.location}: {f.message}" for f in caught.value.findings]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_line_separators_in_comments_and_values_are_yaml_1_2(separator: str) -> None:
    data = parse_fleet(f"a: 1  # one{separator}two\nb: x{separator}y\n".encode(), "f.yaml").data
    assert data == {"a": 1, "b": f"x{separator}y"}  # YAML 1.2: not a line break, so no stray `two` and no folding
    [problem] = problems(f"a: 1  # one{separator}two\nb: 2\nc: {{\n")
    assert problem.startswith("f.yaml:4:1: YAML syntax:"), problem  # the line counts are not shifted


def test_a_control_character_is_reported_at_its_line_and_column() -> None:
    assert problems("é: 1\nb: x\x01y\n") == [
        "f.yaml:2:5: character U+0001 is not allowed in YAML; inside double quotes write it as \\u0001"
    ]


def test_an_alias_used_as_a_key_is_reported_where_it_is_used() -> None:
    assert problems("base: &b {x: 1}\nother: 2\nuse:\n  *b : 3\n") == [
        "f.yaml:4:3: mapping keys must be plain strings (this key is an alias)"
    ]
    assert problems("name: &n foo\nx:\n  foo: 1\n  *n : 2\n") == ["f.yaml:4:3: duplicate key 'foo' (first at line 3)"]


YAML_PIECES = st.sampled_from(
    [
        "a",
        ": ",
        "\n",
        "  ",
        "- ",
        "[",
        "]",
        "{",
        "}",
        ",",
        "#",
        "&x ",
        "*x",
        "<<: ",
        "'",
        '"',
        "!t ",
        "|",
        ">",
        "? ",
        "---",
        "...",
        "\t",
        "%YAML 1.2\n",
    ]
)
HOSTILE_YAML = st.lists(
    st.one_of(
        YAML_PIECES, st.sampled_from(["\u2028", "\u2029", "\x85", "\x01", "\x7f", "\ufeff", "\x00", "\ud800", "\r"]), st.text(max_size=4)
    ),
    max_size=40,
).map("".join)


def check_yaml(text: str) -> None:
    started = time.perf_counter()
    try:
        parse_fleet(text.encode("utf-8", "surrogatepass"), "f.yaml")
    except FindingsError as exc:
        for finding in exc.findings:
            assert finding.location is not None and finding.location.file == "f.yaml" and finding.location.line >= 1
            assert "\n" not in finding.message and finding.message
    assert_quick(time.perf_counter() - started, 100, text[:20])


@settings(deadline=None)
@given(text=HOSTILE_YAML)
def test_yaml_edge_cases_through_the_reader(text: str) -> None:
    check_yaml(text)

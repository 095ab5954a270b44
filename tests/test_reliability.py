"""Proof that fleetgen cannot hurt a fleet: injection, round trips, crash safety, hostile input, scale.

The long tests carry the `slow` mark; CI runs them with bounded sizes (see each test).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, REPO, assert_quick, examples, run_cli
from hypothesis import HealthCheck, assume, given
from hypothesis import strategies as st
from ruamel.yaml import YAML

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import FindingsError
from fleetgen.output import emit
from fleetgen.output.emit import dump_documents
from fleetgen.output.tree import Tree
from fleetgen.render import plan
from fleetgen.render.rendered import Rendered
from fleetgen.review import diff_fleets
from fleetgen.review.freshness import check_tree
from fleetgen.workflows.tree_files import TreeFiles, render_files

sys.path.insert(0, str(REPO / "benchmarks"))
from synth import synthetic_fleet

Run = Callable[..., CompletedProcess[str]]
YAML_12 = YAML(typ="safe")
YAML_11 = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# -- 1. injection -----------------------------------------------------------------------------

SPECIALS = [
    ": ",
    "#",
    " #x",
    "---",
    "...",
    "{",
    "}",
    "[",
    "]",
    "'",
    '"',
    "&a",
    "*a",
    "!tag",
    "%",
    "@",
    "`",
    "|",
    ">",
    "? ",
    "- ",
    "on",
    "off",
    "yes",
    "no",
    "y",
    "n",
    "true",
    "null",
    "~",
    "0777",
    "0o17",
    "0o171_000",
    "0x1f",
    "1e3",
    "1_000",
    "12.10",
    ".inf",
    "<<",
    "=",
    "é",
    "日本",
    "\u2028",
    "\u00a0",
    "💥",
    "x" * 3000,
]
WORDS = st.sampled_from(SPECIALS)
LINE = st.lists(st.one_of(WORDS, st.text(st.characters(blacklist_categories=["Cc", "Cs"]), max_size=20)), min_size=1, max_size=6).map(
    "".join
)
# runbookBaseUrl is an http(s) URL: the hostile characters go in its path (a URL holds no whitespace).
URL = LINE.map(lambda line: "https://runbooks.example/" + "".join(line.split()))
TEXT = st.lists(
    st.one_of(WORDS, st.just("\n"), st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\r"), max_size=20)),
    min_size=1,
    max_size=8,
).map("".join)
# Identifiers (a group id, a VM size) may hold anything visible, but no control or line-break character (fleetgen.model.strict).
IDENTIFIER = LINE.map(lambda s: "".join(c for c in s if unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Zl", "Zp")).strip() or "g")
DNS_HOSTILE = st.sampled_from(["on", "off", "yes", "no", "y", "n", "true", "null", "0777", "1e3", "0x1f", "nan", "inf", "12", "a-b"])
LABEL_VALUE = st.one_of(DNS_HOSTILE, st.sampled_from(["True", "NO", "0o17", "1_000", "12.10", "a.b_c-d", ""]))


def small_fleet(
    description: str, text: str, purpose: str, cluster: str, vm: str, group: str, cost: str, project: str, label: str, url: str
) -> dict[str, Any]:
    return {
        "apiVersion": "fleetgen/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "f", "description": description, "costCenter": "cc"},
        "gitops": {"engine": "flux", "repository": "https://example.com/f.git"},
        "versionSets": {"v": {"kubernetes": "1.35.2", "driver": "580.95.05", "cuda": "13.0", "cudnn": "9.17.0", "containerd": "2.2.1"}},
        "priorityClasses": [{"name": "p", "value": 1, "description": text}],
        "clusters": [
            {
                "name": cluster,
                "region": "r",
                "environment": "dev",
                "purpose": purpose,
                "versionSet": "v",
                "nodePools": [
                    {
                        "name": "pool",
                        "vmSize": vm,
                        "gpuModel": "T4",
                        "gpusPerNode": 1,
                        "cpuPerNode": 2,
                        "memoryPerNode": "8Gi",
                        "maxNodes": 4,
                        "scaling": "spot",
                        "labels": {"pool": label or "x"},
                    }
                ],
            }
        ],
        "teams": [
            {
                "name": "t",
                "group": group,
                "costCenter": cost,
                "project": project or "p",
                "quota": {"requests": {"gpu": 1}},
                "clusters": {cluster: None},
            }
        ],
        "alerts": {"runbookBaseUrl": url},
    }


@pytest.mark.slow
@examples(2000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    description=LINE,
    text=TEXT,
    purpose=LINE,
    cluster=DNS_HOSTILE,
    vm=IDENTIFIER,
    group=IDENTIFIER,
    cost=LABEL_VALUE,
    project=LABEL_VALUE,
    label=LABEL_VALUE,
    url=URL,
)
def test_hostile_strings_never_change_the_structure(
    description: str, text: str, purpose: str, cluster: str, vm: str, group: str, cost: str, project: str, label: str, url: str
) -> None:
    data = small_fleet(description, text, purpose, cluster, vm, group.strip() or "g", cost, project, label, url)
    source = dump_documents([data])  # fleetgen's own emitter writes the fleet.yaml under test
    try:
        loaded = load_fleet_text(source)
    except FindingsError as exc:  # only a secret-looking value may be refused here
        assume(False) if any("looks like" in f.message for f in exc.findings) else pytest.fail(str(exc.findings[:2]))
        return
    fleet = loaded.fleet
    assert (fleet.metadata.description, fleet.priority_classes[0].description, fleet.clusters[0].purpose) == (description, text, purpose)
    assert (fleet.clusters[0].node_pools[0].vm_size, fleet.teams[0].group, fleet.alerts.runbook_base_url) == (vm, group.strip() or "g", url)
    for output in plan(fleet):
        assert all(part not in ("", ".", "..") for part in output.path.split("/")) and output.path.isascii()
        if output.markdown is not None:
            continue
        data_bytes = dump_documents([m.body for m in output.manifests])
        expected = [m.body for m in output.manifests]
        assert list(yaml.load_all(data_bytes, Loader=YAML_11)) == expected, output.path  # a YAML 1.1 reader
        assert list(YAML_12.load_all(data_bytes)) == expected, output.path  # a YAML 1.2 reader


@pytest.mark.parametrize(
    "value", ["0o171_000", "+0o7_7", "0o17", "1_000", "0x_1f", "0b1_0", "1_0.5", "1e3", "0777", "1_0001e3", "1_0.5_e3"]
)
def test_number_like_strings_stay_strings_for_both_readers(value: str) -> None:
    """Found by the property test above: 0o171_000 was written bare, and a YAML 1.2 reader took it for 61952
    (later 1_0001e3, which it took for 10001000.0)."""
    written = dump_documents([{"name": value}])
    assert yaml.load(written, Loader=YAML_11) == {"name": value}
    assert YAML_12.load(written) == {"name": value}


class _GenericDumper(emit._Dumper):
    """PyYAML's own representer and resolver, with fleetgen's string styles: what emit's shortcuts replace."""

    represent_data = yaml.representer.BaseRepresenter.represent_data
    resolve = yaml.resolver.BaseResolver.resolve


_GenericDumper.add_representer(
    str, lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", value, style=emit._str_style(value))
)

RENDERED_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)


@given(documents=st.lists(RENDERED_DATA, min_size=1, max_size=3))
def test_the_emitters_shortcuts_write_the_bytes_pyyamls_representer_does(documents: list[Any]) -> None:
    written = dump_documents(documents)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(emit, "_Dumper", _GenericDumper)
        assert written == (emit.generated_header("fleet.yaml") + emit._dumped(documents)).encode()


# Strings YAML readers treat specially, alone or leading a longer string: quoting, block scalars and their
# indentation and chomping indicators, line breaks only YAML 1.1 knows, keys too long to be simple keys.
YAML_SPECIAL = st.sampled_from(
    ["", "on", "yes", "~", "null", "0777", "1e3", "0o17", "- x", "a: b", "#c", " lead", "trail ", "a\nb", "a\n", "\n", "a\n\n",
     " a\nb", "\n a", "a \nb", "'q'", '"d"', "\x85", "\u2028x", "\t", "é", "{}", "[]", "*a", "&a", "!t", "%x", "@", "`", "...", "---",
     "x" * 130]
)  # fmt: skip
# Names, paths and versions, which the writer puts down plain unless the resolver reads them as a number, flag or null.
PLAIN_LOOKING = st.text(alphabet="0123456789_./=+@,: -abeEfFlLnNoOsStTuUxXyY#", min_size=1, max_size=8)
# Pieces of lines that decide whether libyaml writes them plain or in single quotes: indicators first or inside, `- `,
# `: `, ` #`, document markers, spaces and colons at either end, names the resolver reads as something else.
LINE_PIECES = ["-", "?", ":", "#", " ", "'", ".", "a", "0", "y", "é", "\xa0", "- ", "? ", ": ", " #", "---", "..."]
INDICATORS = list(",[]{}&*!|>'\"%@`")
# Pieces of literal blocks: line breaks alone, after a space or before one, at either end and in a row.
BLOCK_PIECES = ["\n", "\n\n", " \n", "\n ", " ", "a", "#", "- ", "'", "é"]
# Around each bound of the characters libyaml prints as they are (else it writes the string in double quotes, escaped):
# C0, DEL and C1 controls, NEL, the line and paragraph separators, the surrogates' neighbours, the BOM, the
# non-characters U+FFFE and U+FFFF, characters beyond the BMP.
CHARACTER_BOUNDS = [chr(c) for c in (0x9, 0x1F, 0x20, 0x7E, 0x7F, 0x85, 0x9F, 0xA0, 0x2027, 0x2028, 0x2029, 0x202A, 0xD7FF, 0xE000,
                                     0xFEFE, 0xFEFF, 0xFF00, 0xFFFD, 0xFFFE, 0xFFFF, 0x10000, 0x1F600)]  # fmt: skip
LINE_LOOKING = st.lists(st.sampled_from(LINE_PIECES + INDICATORS + CHARACTER_BOUNDS), min_size=1, max_size=5).map("".join)
BLOCK_LOOKING = st.lists(st.sampled_from(BLOCK_PIECES + CHARACTER_BOUNDS), min_size=1, max_size=5).map("".join)
STRINGS = (
    YAML_SPECIAL
    | st.text(max_size=8)
    | PLAIN_LOOKING
    | LINE_LOOKING
    | st.builds(str.__add__, LINE_LOOKING, PLAIN_LOOKING)
    | BLOCK_LOOKING
    | st.builds(str.__add__, YAML_SPECIAL, st.text(max_size=4))
    | st.builds(str.__add__, PLAIN_LOOKING, st.sampled_from(["", "x" * 126, "x" * 127, "x" * 128]))
)
NESTED = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | STRINGS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4),
    max_leaves=30,
)


@given(documents=st.lists(NESTED, min_size=1, max_size=3))
def test_the_direct_writer_writes_the_bytes_pyyaml_does(documents: list[Any]) -> None:
    """dump_documents lays out mappings and sequences itself and asks PyYAML only how to write each scalar:
    the bytes are PyYAML's, whatever the strings, nesting and empty containers."""
    assert dump_documents(documents) == (emit.generated_header("fleet.yaml") + emit._dumped(documents)).encode()


@given(value=STRINGS, depth=st.integers(0, 2))
def test_the_direct_writer_writes_each_string_as_pyyaml_does(value: str, depth: int) -> None:
    """Each string alone, as a mapping's value and a sequence's item at some depth: the text the writer puts down for
    it itself (plain, in single quotes, a literal block) is PyYAML's."""
    document: dict[str, Any] = {"k": value, "s": [value, {"k": value}]}
    for _ in range(depth):
        document = {"n": document}
    assert dump_documents([document]) == (emit.generated_header("fleet.yaml") + emit._dumped([document])).encode()


def test_the_direct_writer_writes_every_short_string_as_pyyaml_does() -> None:
    """Every line of up to three pieces that decide how libyaml writes it (indicators first or inside, `- `, `: `, ` #`,
    document markers, spaces and colons at either end, names the resolver reads as something else), every string of up
    to three pieces of a literal block, and each character at a bound of what libyaml prints as it is, in a line and in a
    block: as a mapping's values and as a sequence's items, the writer's own text is PyYAML's."""
    strings = ["".join(pieces) for count in (0, 1, 2, 3) for pieces in itertools.product(LINE_PIECES, repeat=count)]
    strings += ["".join(pieces) for count in (1, 2, 3) for pieces in itertools.product(BLOCK_PIECES, repeat=count)]
    strings += [s for c in INDICATORS + CHARACTER_BOUNDS for s in (c, f"a{c}", f"{c}a", f"a{c}a", f"a {c}", f"a\n{c}\n", f"{c}\na")]
    strings = [s for s in strings if not s.endswith("\n\n") and s != "\n"]  # PyYAML ends the document after a `|+` block
    documents = [{"n": {f"k{number}": s for number, s in enumerate(strings)}}, strings]
    written = emit._written(documents)
    assert written is not None and written == emit._dumped(documents)


def test_the_direct_writer_writes_every_printable_line_and_block_itself() -> None:
    """The exhaustive test above would pass with PyYAML writing everything: each line of printable pieces (é and
    U+00A0 among them) is written by the writer's own rules, and so is each block, but for those libyaml writes in
    double quotes (a space at the end of the string or of a line) or that keep their final line breaks."""
    lines = ["".join(p) for count in (0, 1, 2, 3) for p in itertools.product(LINE_PIECES + INDICATORS, repeat=count)]
    blocks = ["".join(p) for count in (1, 2, 3) for p in itertools.product(BLOCK_PIECES, repeat=count)]
    blocks = [b for b in blocks if "\n" in b and not b.endswith((" ", "\n\n")) and " \n" not in b and b != "\n"]
    assert [line for line in lines if "\n" not in line and emit._line_text(line) is None] == []
    assert [block for block in blocks if emit._block_text(block) is None] == []


def test_the_direct_writer_writes_rendered_files_itself() -> None:
    """The shortcut is taken for rendered files (literal blocks included), not left to the fallback."""
    documents = [{"kind": "ConfigMap", "data": {"a.json": '{"x": 1}\n', "b": ["on", {"c": " x\n\ny"}], "e": {}}}, {"kind": "Namespace"}]
    assert emit._written(documents) == emit._dumped(documents)


# -- 2. round trip ----------------------------------------------------------------------------


@pytest.mark.slow
@examples(25, suppress_health_check=[HealthCheck.too_slow])
@given(clusters=st.integers(1, 12), teams=st.integers(0, 15), per_team=st.integers(1, 4), seed=st.integers(0, 10**6))
def test_render_check_and_self_diff_round_trip(clusters: int, teams: int, per_team: int, seed: int) -> None:
    data = yaml.safe_load(synthetic_fleet(clusters, teams, per_team))
    rng = random.Random(seed)
    for team in data["teams"]:  # vary the quotas a little
        team["quota"]["requests"]["gpu"] = rng.randint(0, 2)
    raw = dump_documents([data])
    loaded = load_fleet_text(raw)
    files = render_files(loaded.fleet)
    with tempfile.TemporaryDirectory() as out:
        tree = Tree(out)
        tree.write(files)
        assert tree.write(render_files(load_fleet_text(raw).fleet)).empty  # idempotent
        assert check_tree(tree, files, TreeFiles(Rendered(loaded.fleet)).output, loaded.source) == []
    same = diff_fleets(Rendered(loaded.fleet), Rendered(load_fleet_text(raw).fleet), "a", "b")
    assert same.empty and same.clusters == [] and same.approvals == []


# -- 3. crash safety --------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, bytes]:
    """The tree a sync would see: without the staging folder."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".fleetgen-staging")
    }


def fleet_text(variant: int) -> str:
    data = yaml.safe_load(synthetic_fleet(12, 36, 6))  # ~800 files: past the count at which a render syncs once, not each file
    for team in data["teams"]:
        team["project"] = f"project-{variant}-{team['name']}"  # every team file changes between the variants
    return dump_documents([data]).decode()


def staging_begun(out: Path) -> bool:
    return any(p.name.startswith(".fleetgen-staging") or p.name == ".fleetgen-journal" for p in out.iterdir())


def committed(out: Path) -> bool:
    return (out / ".fleetgen-journal").exists()


def wait_for(ready: Callable[[], bool], process: subprocess.Popen[bytes]) -> None:
    while process.poll() is None and not ready():
        time.sleep(0.0005)


@pytest.mark.slow
def test_a_killed_render_leaves_the_old_or_the_new_tree(tmp_path: Path) -> None:
    """SIGKILL at 12 points of a render that rewrites every team's files: once while it starts, ten times spread over
    its writing from the moment its staging folder appears, and once just after its commit point (the journal), while
    it moves the staged files in; the next fleetgen command sees the old tree or the new one, never a mix."""
    exe = str(Path(sys.executable).parent / "fleetgen")
    out = tmp_path / "tree"
    fleet = tmp_path / "fleet.yaml"
    texts = {v: fleet_text(v) for v in (0, 1)}
    expected = {}
    for variant, text in texts.items():
        fleet.write_text(text)
        assert run_cli("render", str(fleet), "--out", str(tmp_path / f"expected-{variant}"), cwd=tmp_path).returncode == 0
        expected[variant] = snapshot(tmp_path / f"expected-{variant}")
    fleet.write_text(texts[0])
    assert run_cli("render", str(fleet), "--out", str(out), cwd=tmp_path).returncode == 0
    current, outcomes, mid_write = 0, set(), 0
    window = 0.0  # how long the writing lasts: from the staging folder's appearance to the process's end
    for number in range(13):
        target = 1 - current
        fleet.write_text(texts[target])
        process = subprocess.Popen([exe, "render", str(fleet), "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if number == 0:  # a full render: it times the window the kills below are spread over
            wait_for(lambda: staging_begun(out), process)
            began = time.monotonic()
            assert process.wait() == 0
            window = time.monotonic() - began
        else:
            if number == 1:
                time.sleep(0.05)  # while it starts: nothing written yet
            elif number < 12:
                wait_for(lambda: staging_begun(out), process)
                time.sleep(window * (number - 2) / 10)
            else:
                wait_for(lambda: committed(out), process)
            process.send_signal(signal.SIGKILL)
            process.wait()
            mid_write += staging_begun(out)
        check = run_cli("check", str(fleet), "--out", str(out), "--format", "json", cwd=tmp_path)
        assert check.returncode in (0, 1), check.stderr  # the check itself finishes an interrupted render first
        state = snapshot(out)
        assert state in (expected[0], expected[1]), f"a mix after kill {number}"
        current = 0 if state == expected[0] else 1
        if number:
            outcomes.add("new" if current == target else "old")
    assert mid_write >= 3, f"only {mid_write} kills landed while the render was writing"
    assert outcomes == {"old", "new"}, outcomes  # kills landed before the commit point (old) and after it (new)
    final = run_cli("render", str(fleet), "--out", str(out), cwd=tmp_path)
    assert final.returncode == 0 and snapshot(out) == expected[int(texts[1] == fleet.read_text())]


def mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0 or not mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)):
        pytest.skip("mounting a small tmpfs needs root here")
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


def test_a_full_disk_gives_a_clear_error_and_leaves_the_tree(small_disk: Path, tmp_path: Path, cli_run: Run) -> None:
    small = tmp_path / "small.yaml"
    shutil.copy(EXAMPLE, small)
    assert cli_run("render", str(small), "--out", str(small_disk)).returncode == 0
    before = snapshot(small_disk)
    big = tmp_path / "big.yaml"
    big.write_text(synthetic_fleet(30, 200, 5))
    done = cli_run("render", str(big), "--out", str(small_disk))
    assert done.returncode == 2 and "cannot write the rendered tree: No space left on device" in done.stderr
    assert snapshot(small_disk) == before
    assert not list(small_disk.glob(".fleetgen-staging-*")) and not list(small_disk.glob(".fleetgen-journal*"))


def test_a_read_only_tree_gives_a_clear_error_and_stays(tmp_path: Path, cli_run: Run) -> None:
    source, view = tmp_path / "tree", tmp_path / "read-only"
    source.mkdir()
    view.mkdir()
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    assert cli_run("render", "--out", str(source)).returncode == 0
    if os.geteuid() != 0 or not mount("--bind", str(source), str(view)):
        pytest.skip("a read-only bind mount needs root here")
    try:
        assert mount("-o", "remount,bind,ro", str(view))
        before = snapshot(view)
        (tmp_path / "fleet.yaml").write_text(EXAMPLE.read_text().replace("project: manipulation", "project: grasping"))
        done = cli_run("render", "--out", str(view))
        assert done.returncode == 2 and "Read-only file system" in done.stderr and "Traceback" not in done.stderr
        assert snapshot(view) == before
    finally:
        subprocess.run(["umount", str(view)], check=False)


# -- 4. hostile input -------------------------------------------------------------------------


def timed(run: Run, *args: str, cwd: Path | None = None) -> tuple[CompletedProcess[str], float]:
    started = time.perf_counter()
    done = run(*args, cwd=cwd)
    return done, time.perf_counter() - started


def test_hostile_files_fail_fast_with_one_line(tmp_path: Path, cli_run: Run) -> None:
    cases = {
        "alias-bomb.yaml": "\n".join(
            ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
        ),
        "deep.yaml": "a: " + "[" * 5000 + "]" * 5000,
        "binary.yaml": "apiVersion: \udcff",
        "huge.yaml": None,
        "traversal.yaml": EXAMPLE.read_text().replace("  - name: dev-eastus", "  - name: ../../etc").replace("dev-eastus:", "../../etc:"),
    }
    for name, text in cases.items():
        path = tmp_path / name
        if text is None:
            with path.open("wb") as handle:
                handle.write(b"# padding\n" * (5 * 1024 * 1024))  # 50 MB
        else:
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
        done, took = timed(cli_run, "render", str(path), "--out", str(tmp_path / "out"))
        assert done.returncode in (1, 2), (name, done.stderr[-300:])
        assert_quick(took, 200, name)  # two seconds where parsing the example takes 10 ms (a quiet machine here)
        assert "Traceback" not in done.stderr and done.stderr.strip(), name
        assert not (tmp_path / "out").exists(), name  # nothing written anywhere
    assert "larger than 16 MiB" in cli_run("validate", str(tmp_path / "huge.yaml")).stderr
    assert "'../../etc' is not a DNS-1123 label" in cli_run("validate", str(tmp_path / "traversal.yaml")).stderr


def test_a_symlinked_output_folder_is_refused(tmp_path: Path, cli_run: Run) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(EXAMPLE, repo / "fleet.yaml")
    (repo / "out").symlink_to(outside)
    done, took = timed(cli_run, "render", "--out", "out", cwd=repo)
    assert done.returncode == 2 and "the output folder is a symbolic link" in done.stderr
    assert_quick(took, 200, "a symlinked output folder")  # the same two seconds: a whole CLI run, start-up included
    assert list(outside.iterdir()) == []


# -- 5. secrets -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        ("description: Shared GPU fleet of the AI platform team", "description: '-----BEGIN RSA PRIVATE KEY----- MIIE'", "a private key"),
        ("purpose: Real-time serving\n", "purpose: 'token: hunter2hunter2'\n", "a password or token assignment"),
        ("group: 0a7d3f91-2c4b-4e8a-b6d1-93f2e5c7a810", "group: ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "a GitHub token"),
        ("project: language-models", "project: Zx8kQ2vN7pL4mR9tW3yB6cF1hJ5dG0sAq", "random secret"),
    ],
)
def test_secret_looking_values_are_refused(old: str, new: str, what: str) -> None:
    with pytest.raises(FindingsError) as caught:
        load_fleet_text(EXAMPLE.read_text().replace(old, new, 1).encode())
    [finding] = caught.value.findings
    assert what in finding.message and "keep secrets out" in finding.message and finding.location is not None


# -- 6. scale ---------------------------------------------------------------------------------


SCALE_SCRIPT = """
import json, resource, sys, time
sys.path.insert(0, {bench!r})
from synth import synthetic_fleet
from fleetgen.checks.load import load_fleet_text
from fleetgen.render.rendered import Rendered
from fleetgen.review import diff_fleets
from fleetgen.validation.rendered_objects import Schemas, validate_rendered
from fleetgen.workflows.tree_files import TreeFiles
started = time.perf_counter()
raw = synthetic_fleet({clusters}, {teams}, {per_team}).encode()
fleet = load_fleet_text(raw).fleet
rendered = Rendered(fleet)
problems = [f for f in validate_rendered(rendered, Schemas()) if f.severity.value != "note"]
files = TreeFiles(rendered).files
changed = load_fleet_text(raw.replace(b"gpu: 2", b"gpu: 1", 1)).fleet
diff = diff_fleets(rendered, Rendered(changed), "a", "b")
print(json.dumps({{"files": len(files), "problems": len(problems), "diffClusters": len(diff.clusters),
                   "seconds": time.perf_counter() - started,
                   "peakMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("clusters", "teams", "per_team"), [(100, 400, 10), (1000, 1000, 5)])
def test_large_fleets_complete_with_bounded_memory(clusters: int, teams: int, per_team: int) -> None:
    script = SCALE_SCRIPT.format(bench=str(REPO / "benchmarks"), clusters=clusters, teams=teams, per_team=per_team)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["problems"] == 0 and result["files"] > clusters * 4 and result["diffClusters"] >= 1
    assert result["peakMiB"] < 1024, result
    print(f"scale {clusters} clusters, {teams} teams x {per_team}: {result}")

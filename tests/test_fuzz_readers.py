"""Every reader of untrusted input, and every renderer, is fuzzed: types swapped, sizes blown up, encodings broken.

Untrusted input is whatever a user, a pull request or a cluster can put in front of fleetgen: fleet.yaml,
its facts file, live dumps and what kubectl prints, git revisions, `--crd` files, the import tree, and the
rendered tree's own bookkeeping (ledger, journal, the files `check` reads back) and cache entries. Each
reader either returns what it read or says what is wrong in one line (InputError, exit 2) or as findings
at their position (FindingsError, exit 1); any other exception is a crash. Renderers get every fleet the
mutations leave valid.

`test_every_reader_of_untrusted_input_has_a_fuzz_target` finds the readers by scanning the package for
the calls that read (files, YAML, JSON, subprocesses): a new one fails it until it is listed below with
the fuzz test that reaches it, or with the reason its input is fleetgen's own.
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, REPO, assert_quick, git
from gitops_dumps import cluster_dump
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mutations import TRAPS, encoded, mutated
from node_dumps import evidence_of

from fleetgen import workflows
from fleetgen.cache import Cache
from fleetgen.checks.kept_values import KeptValues
from fleetgen.checks.load import load_fleet_text, passed_fleet_text, typed_fleet_text
from fleetgen.compat import facts
from fleetgen.compat.extra import merge_facts_text
from fleetgen.errors import FindingsError, InputError, RefusedAsk, Severity
from fleetgen.jobs.serving import Serving
from fleetgen.live import state
from fleetgen.live.drift_output import drift_json
from fleetgen.output.emitted import _pack, _unpack, read_entries
from fleetgen.output.known_trees import KnownTree, KnownTrees, known_fresh
from fleetgen.output.tree import JOURNAL, LEDGER
from fleetgen.render.rendered import Rendered
from fleetgen.source.edit import RoundTrip
from fleetgen.source.git_revision import read_at
from fleetgen.source.plain_values import values_from_json
from fleetgen.source.reader import parse_fleet, read_fleet
from fleetgen.upgrade.status import live_nodes
from fleetgen.validation.crd_schemas import read_crds
from fleetgen.validation.known_reports import KnownReport, KnownReports, known_render
from fleetgen.validation.verdicts import ClusterVerdict
from fleetgen.workflows import live_state
from fleetgen.workflows.tree_files import TreeFiles

SLOW_ENOUGH = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
DEV = 3  # dev-eastus in the example


def one_line(exc: Exception) -> None:
    text = str(exc)
    assert text and "\n" not in text and "Traceback" not in text, text


def refused_cleanly(read: Callable[[], Any]) -> Any:
    """What `read` returns, None when it refuses in one line or with positioned findings; any other exception fails."""
    try:
        return read()
    except (InputError, RefusedAsk) as exc:  # exit 2; exit 1 for an ask the fleet does not allow
        one_line(exc)
    except FindingsError as exc:
        assert exc.findings and all(f.location is not None and "\n" not in f.message for f in exc.findings), exc.findings
    return None


def dumped(doc: Any) -> str:
    return dumped_all([doc]).removeprefix("---\n")


def dumped_all(docs: list[Any]) -> str:
    try:
        return yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True, width=10_000)
    except UnicodeEncodeError:  # libyaml cannot take a lone surrogate; PyYAML's own emitter escapes it
        return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=False, width=10_000)


# -- fleet.yaml, and every renderer ------------------------------------------------------------


@cache
def shipped_schemas() -> Any:
    from fleetgen.validation.rendered_objects import Schemas

    return Schemas()


@cache
def example_loaded() -> Any:
    return load_fleet_text(EXAMPLE.read_bytes())


@cache
def multikueue_loaded() -> Any:
    return load_fleet_text(MULTIKUEUE_FLEET.read_bytes())


MULTIKUEUE_FLEET = REPO / "tests" / "cases" / "multikueue-two-models" / "fleet.yaml"


@cache
def variants() -> tuple[dict[str, Any], ...]:
    """The example as it ships (Flux) and synced by Argo CD instead, and a MultiKueue fleet (a manager and two workers,
    which the example has not): between them every cluster renderer runs on what it renders."""
    text = EXAMPLE.read_text(encoding="utf-8")
    texts = (text, text.replace("engine: flux ", "engine: argocd", 1), MULTIKUEUE_FLEET.read_text(encoding="utf-8"))
    return tuple(dict(yaml.safe_load(t)) for t in texts)


def render_all(loaded: Any) -> dict[str, bytes]:
    """What render, diff's fingerprints and explain make of a fleet: every renderer a fleet reaches."""
    rendered = Rendered(loaded.fleet)
    assert len(rendered.fingerprints) == len(loaded.fleet.clusters)
    rendered.explained(len(loaded.fleet.clusters) - 1)
    return TreeFiles(rendered).files


@pytest.mark.slow  # about a quarter of a second an example: a load and a render
@SLOW_ENOUGH
@given(doc=st.deferred(lambda: st.one_of(*(mutated(v) for v in variants()))))
def test_fleet_yaml_mutated_anywhere_loads_or_is_refused_and_what_loads_renders(doc: Any) -> None:
    started = time.perf_counter()
    text = dumped(doc)
    loaded = refused_cleanly(lambda: load_fleet_text(text.encode("utf-8", "surrogatepass")))
    typed = refused_cleanly(lambda: typed_fleet_text(text.encode("utf-8", "surrogatepass")))  # diff's load of a text known to pass
    assert loaded is None or (typed is not None and typed.fleet == loaded.fleet)
    known = refused_cleanly(lambda: passed_fleet_text(text.encode("utf-8", "surrogatepass"), positions=False))  # the base of a diff
    assert loaded is None or (known is not None and known.fleet == loaded.fleet)
    if loaded is not None:  # valid after the mutation: every renderer gets it, and the editor takes its text
        files = render_all(loaded)
        assert files and all(isinstance(v, bytes) for v in files.values())
        edited = RoundTrip(text).text()  # what team add and upgrade apply start from: the same values
        assert parse_fleet(edited.encode("utf-8", "surrogatepass"), "fleet.yaml").data == loaded.source.data
    assert_quick(time.perf_counter() - started, 1500, "a mutated fleet.yaml")


@pytest.mark.parametrize("number", ["4.050229389964249e+16", "4.327670679050534e-21", "7.215400323407826e-07", "3.67", "12.290"])
def test_the_editor_writes_back_every_float_it_read(number: str) -> None:
    """Found by the property above: ruamel's round trip wrote 4.050229389964249e+16 back as 4.050229389964248e+16."""
    text = f"pricing:\n  gpuHour: {{a: {number}}}\n"
    edited = RoundTrip(text).text()
    assert parse_fleet(edited.encode(), "fleet.yaml").data == parse_fleet(text.encode(), "fleet.yaml").data
    assert parse_fleet(edited.encode(), "fleet.yaml").data["pricing"]["gpuHour"]["a"] == float(number)


def test_a_read_document_with_a_float_can_be_copied() -> None:
    """Found by the mutated MultiKueue tree property: import deep-copies what it read, and a float that remembers
    its text (12.10, a version) could not be copied."""
    import copy

    data = parse_fleet(b"a: 12.10\nb: [1.5e+3]\n", "fleet.yaml").data
    copied = copy.deepcopy(data)
    assert copied == data and copied["a"].text == "12.10" and copied["b"][0].text == "1.5e+3"


def test_an_imported_float_is_written_as_the_repository_wrote_it() -> None:
    """Found next by the same property: the fleet.yaml import writes could not represent such a float at all."""
    from fleetgen.importer.imported import Imported
    from fleetgen.importer.write import fleet_yaml

    data = parse_fleet(b"a: 12.10\nb: 18446744073709551616.0\n", "fleet.yaml").data
    written = fleet_yaml(Imported(data), "repo")
    assert written.splitlines()[-2:] == ["a: 12.10", "b: 18446744073709551616.0"]
    assert parse_fleet(written.encode(), "fleet.yaml").data == data


@SLOW_ENOUGH
@given(raw=st.deferred(lambda: encoded(EXAMPLE.read_text(encoding="utf-8"))))
def test_fleet_yaml_in_any_encoding_is_read_or_refused_in_one_line(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    path = tmp_path_factory.mktemp("encoded") / "fleet.yaml"
    path.write_bytes(raw)
    refused_cleanly(lambda: read_fleet(path))


QUANTITY_TEXT = st.one_of(st.sampled_from(["500m", "8", "64Gi", "1n", "7Ei", "0", str(2**63 - 1)]), st.integers(0, 2**63 - 1).map(str))
NAME = st.one_of(
    st.sampled_from(["nlp", "robotics", "data-science", "dev-eastus", "training-eastus", "prod-inference-eastus", "finetune"]),
    st.sampled_from(["llm", "vision", "dispatch-eastus", "training-westus2"]),  # the MultiKueue fleet's teams and clusters
    st.text(max_size=70),
)


@SLOW_ENOUGH
@given(
    multikueue=st.booleans(),
    team=NAME,
    cluster=NAME,
    name=NAME,
    image=st.one_of(st.just("registry.example.com/trainer:v1"), st.text(max_size=300)),
    gpus=st.integers(0, 64),  # what `job new` lets through (click.IntRange), small and large
    nodes=st.integers(1, 1000),
    gpu_model=st.one_of(st.none(), st.sampled_from(["A100", "H100", "T4", "A10G"]), st.text(max_size=8)),
    command=st.lists(st.one_of(st.text(max_size=20), st.sampled_from(TRAPS)), max_size=4).map(tuple),
    cpu=st.one_of(st.none(), QUANTITY_TEXT),
    memory=st.one_of(st.none(), QUANTITY_TEXT),
    gpu_slice=st.one_of(st.none(), st.sampled_from(["1g.10gb", "3g.40gb", "shared"]), st.text(max_size=10)),
    serving=st.one_of(
        st.none(),
        st.builds(
            Serving,
            tier=st.one_of(st.sampled_from(["real-time", "near-real-time", "batch"]), st.text(max_size=10)),
            load_time=st.integers(1, 10**6),
            port=st.integers(1, 65_535),
            replicas=st.integers(1, 1000),
            health_path=st.one_of(st.just("/health"), st.text(max_size=30)),
            selector=st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=3),
        ),
    ),
)
def test_job_new_builds_or_refuses_any_ask_in_one_line(
    multikueue: bool, team: str, cluster: str, name: str, image: str, gpus: int, nodes: int, gpu_model: str | None, command: tuple[str, ...],
    cpu: str | None, memory: str | None, gpu_slice: str | None, serving: Serving | None,
) -> None:  # fmt: skip
    """The golden-path renderers (jobs/: golden_paths, job_target, job_pod, slice_asks, serving, and job_dispatch on the
    MultiKueue fleet's manager) on asks no one would make."""
    from fleetgen.jobs.golden_paths import job_objects
    from fleetgen.jobs.job_target import Ask
    from fleetgen.model import Quantity

    loaded = multikueue_loaded() if multikueue else example_loaded()
    ask = Ask(team, cluster, name, image, gpus, nodes, gpu_model, None, command,
              Quantity(cpu) if cpu else None, Quantity(memory) if memory else None, gpu_slice)  # fmt: skip
    built = refused_cleanly(lambda: job_objects(loaded.fleet, ask, shipped_schemas(), serving))
    assert built is None or built.objects


@pytest.mark.parametrize(
    "given",
    [{"team": "\n"}, {"cluster": "dev\n"}, {"gpu_model": "A100\r"}, {"gpu_slice": "1g.10gb\x1b"}, {"volumes": ("data\n",)}],
    ids=["team", "cluster", "gpu-model", "gpu-slice", "volume"],
)
def test_a_name_with_a_line_break_is_refused_in_one_line(given: dict[str, Any]) -> None:
    """Found by the property above: `--team` given as a newline was echoed into the refusal, which then took two lines."""
    from fleetgen.jobs.golden_paths import job_objects
    from fleetgen.jobs.job_target import Ask

    ask = Ask(**{"team": "nlp", "cluster": "dev-eastus", "name": "train", "image": "registry.example.com/trainer:v1", "gpus": 1, **given})
    with pytest.raises(InputError) as refused:
        job_objects(example_loaded().fleet, ask, shipped_schemas())
    one_line(refused.value)
    assert "not a name" in str(refused.value)


# -- the repository files doctor reads --------------------------------------------------------


@cache
def gate_files() -> dict[str, str]:
    """The workflow and CODEOWNERS `fleetgen init` writes for the example, which a pull request may edit."""
    from fleetgen.authoring.codeowners import CODEOWNERS_PLACES, codeowners_text
    from fleetgen.authoring.scaffold import WORKFLOW_PATH, workflow_text

    owners = example_loaded().fleet.platform_owners
    return {
        WORKFLOW_PATH: workflow_text("pip install fleetgen").decode(),
        CODEOWNERS_PLACES[0]: codeowners_text("acme", tuple(owners), "fleet.yaml", None).decode(),
    }


LINE = st.one_of(st.text(max_size=60), st.sampled_from(TRAPS), st.just("x" * 100_000), st.just("* " + " ".join(["@a/b"] * 2000)))


@SLOW_ENOUGH
@given(data=st.data())
def test_a_workflow_or_codeowners_mutated_anywhere_is_examined_by_doctor(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """`fleetgen doctor` (authoring.doctor's _read and _workflow_problems): the workflow mutated as YAML, CODEOWNERS
    line by line, either in any encoding or missing; every problem is one line."""
    from fleetgen.authoring.doctor import examine

    folder = tmp_path_factory.mktemp("doctor")
    for name, text in gate_files().items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".yml"):
            changed = dumped(data.draw(mutated(yaml.safe_load(text))))
        else:
            lines = text.splitlines()
            lines[data.draw(st.integers(0, len(lines) - 1))] = data.draw(LINE)
            changed = "\n".join(lines)
        if data.draw(st.booleans()):  # else the file as init wrote it
            text = changed
        if data.draw(st.integers(0, 9)):  # else missing
            path.write_bytes(data.draw(encoded(text)))
    found = refused_cleanly(lambda: examine(folder, example_loaded().fleet))
    assert found is not None and all(isinstance(p, str) and "\n" not in p for p in found.problems)


# -- the facts file ----------------------------------------------------------------------------

FACTS_FILE = {
    "cudaDriver": [
        {"cuda": "12.8", "minDriver": "570.26", "source": "NVIDIA CUDA Toolkit Release Notes", "url": "https://docs.nvidia.com/cuda/"}
    ],
    "gpuModels": [
        {"model": "L40S", "minDriver": "525.60.13", "minCuda": "12.0", "source": "NVIDIA L40S", "url": "https://www.nvidia.com/l40s"}
    ],
}


@SLOW_ENOUGH
@given(doc=mutated(FACTS_FILE), plain=st.booleans())
def test_a_facts_file_mutated_anywhere_merges_or_is_refused_at_its_line(doc: Any, plain: bool) -> None:
    raw = dumped(doc).encode("utf-8", "surrogatepass")
    refused_cleanly(lambda: merge_facts_text(raw if plain else raw[: len(raw) // 2], "facts.yaml", facts()))


FACTS_TEXT = st.one_of(st.none(), st.deferred(lambda: mutated(FACTS_FILE).map(dumped).flatmap(encoded)), st.binary(max_size=100))


@SLOW_ENOUGH
@given(old=FACTS_TEXT, new=FACTS_TEXT)
def test_a_facts_file_mutated_at_either_revision_is_compared_in_review(old: bytes | None, new: bytes | None) -> None:
    """What the review of a pull request says of its facts file (review.capacity_changes's _tables): the base's and
    the head's bytes, each mutated, unreadable or absent."""
    from fleetgen.review.capacity_changes import facts_changes

    fleet = example_loaded().fleet
    head = fleet.model_copy(update={"compatibility": fleet.compatibility.model_copy(update={"facts_file": "facts.yaml"})})
    changes = refused_cleanly(lambda: list(facts_changes(fleet, head, (old, new))))
    assert changes is not None and all(c.text and c.field == "compatibility.factsFile" for c in changes)


# -- live dumps of every kind, through drift and the upgrade's evidence -------------------------


@cache
def faithful_dump() -> dict[str, Any]:
    loaded = load_fleet_text(EXAMPLE.read_bytes())
    rendered = Rendered(loaded.fleet).keyed(DEV, with_entry_point=False)
    dump = cluster_dump(list(rendered.values()), "argocd", tracking="annotation", ssa=False)
    quota = next(o for o in dump["items"] if o["kind"] == "ResourceQuota")
    quota["status"] = {"hard": dict(quota["spec"]["hard"]), "used": {k: "1" for k in quota["spec"]["hard"]}}
    small = [o for o in dump["items"] if o["kind"] in ("ResourceQuota", "Namespace", "LocalQueue", "ClusterQueue")][:8]
    return {"apiVersion": "v1", "kind": "List", "items": small + evidence_of(loaded.fleet, "dev-eastus")}


@pytest.fixture(scope="module")
def fleet_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fleet")
    shutil.copy(EXAMPLE, folder / "fleet.yaml")
    return folder


@pytest.mark.slow  # about a quarter of a second an example: a load and a render
@SLOW_ENOUGH
@given(doc=st.deferred(lambda: mutated(faithful_dump())))
def test_a_faithful_dump_mutated_anywhere_drifts_or_is_refused_in_one_line(fleet_folder: Path, doc: Any) -> None:
    (fleet_folder / "live.yaml").write_text(dumped(doc), encoding="utf-8", errors="surrogatepass")
    result = refused_cleanly(
        lambda: live_state.drift(fleet_folder / "fleet.yaml", "dev-eastus", (fleet_folder / "live.yaml",), None, against="fleet.yaml")
    )
    if result is not None:
        assert json.loads(drift_json("dev-eastus", result))["cluster"] == "dev-eastus"
        loaded = load_fleet_text(EXAMPLE.read_bytes())
        objects = state.read_live([fleet_folder / "live.yaml"])
        live_nodes(loaded.fleet, {"dev-eastus": objects}, loaded.facts)  # what `upgrade status` and `verify` read of them


def kubectl_printed(code: int, stdout: str, stderr: str, **run_options: Any) -> subprocess.CompletedProcess[Any]:
    """What subprocess.run gives for kubectl's output: its bytes, any of them (a lone surrogate in `stdout` or `stderr`
    stands for bytes that are not UTF-8), decoded strictly as subprocess.run decodes them when asked for text."""
    out, err = stdout.encode("utf-8", "surrogatepass"), stderr.encode("utf-8", "surrogatepass")
    if run_options.get("text") or run_options.get("encoding") or run_options.get("universal_newlines"):
        return subprocess.CompletedProcess(["kubectl"], code, out.decode(), err.decode())
    return subprocess.CompletedProcess(["kubectl"], code, out, err)


@SLOW_ENOUGH
@example(stdout="kind: List\nitems: []\n# \udcff", code=0, stderr="")  # not UTF-8: a traceback once
@example(stdout="", code=1, stderr="error: \udcff")
@given(
    stdout=st.one_of(st.deferred(lambda: mutated(faithful_dump()).map(dumped)), st.text(max_size=200)),
    code=st.sampled_from([0, 1, 255]),
    stderr=st.text(max_size=300),
)
def test_what_kubectl_prints_is_read_or_refused_in_one_line(monkeypatch: pytest.MonkeyPatch, stdout: str, code: int, stderr: str) -> None:
    monkeypatch.setattr(state.subprocess, "run", lambda *args, **kwargs: kubectl_printed(code, stdout, stderr, **kwargs))
    monkeypatch.setattr(state, "kubectl", lambda flag: "kubectl")
    objects = refused_cleanly(lambda: state.live_from_context("dev", ["node", "resourcequota"]))
    assert objects is None or code == 0


KUBECTL_STDERR = st.one_of(
    st.text(max_size=300),
    st.sampled_from(
        [
            'error: the server doesn\'t have a resource type "clusterqueues"',
            'Error from server (Forbidden): roles is forbidden: User "u" cannot list resource "roles"',
            "Unable to connect to the server: dial tcp: i/o timeout",
            "Error from server (NotFound): the server could not find the requested resource",
            "",
        ]
    ),
    st.sampled_from(TRAPS).map(lambda t: f"(Forbidden){t}\n{t}"),
)


@SLOW_ENOUGH
@example(stdout="kind: List\nitems: []\n# \udcff", code=0, stderr="", fails=None)  # not UTF-8: a traceback once
@example(stdout="", code=1, stderr="error: \udcff", fails=None)
@given(
    stdout=st.one_of(st.deferred(lambda: mutated(faithful_dump()).map(dumped)), st.text(max_size=200), st.sampled_from(TRAPS)),
    code=st.sampled_from([0, 1, 255]),
    stderr=KUBECTL_STDERR,
    fails=st.sampled_from([None, OSError(2, "No such file or directory"), subprocess.TimeoutExpired(["kubectl"], 45)]),
)
def test_what_kubectl_prints_kind_by_kind_is_read_or_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, stdout: str, code: int, stderr: str, fails: Exception | None
) -> None:
    """drift --context: each kind's `kubectl get` (live.cluster_reader's _read_kind) and the objects asked for by name (_read_one)."""
    from fleetgen.live import cluster_reader
    from fleetgen.render.manifest import ObjectKey

    def run(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        if fails is not None:
            raise fails
        return kubectl_printed(code, stdout, stderr, **kwargs)

    monkeypatch.setattr(cluster_reader.subprocess, "run", run)
    monkeypatch.setattr(cluster_reader, "kubectl", lambda flag: "kubectl")
    read = refused_cleanly(lambda: cluster_reader.read_cluster("dev", ["node", "resourcequota", "clusterqueue.kueue.x-k8s.io"]))
    if read is None:
        return
    assert all(isinstance(o, dict) for o in read.objects) and all("\n" not in why for why in read.unread.values())
    expected = {
        ObjectKey("ResourceQuota", "team-nlp", "gone"): {"apiVersion": "v1", "kind": "ResourceQuota"},
        ObjectKey("Namespace", "", "team-nlp"): {"apiVersion": "v1", "kind": "Namespace"},
    }
    found = refused_cleanly(lambda: cluster_reader.by_name("dev", expected, read))
    assert found is None or all(isinstance(o, dict) for o in found.objects)


# -- git revisions -----------------------------------------------------------------------------

REVISION = st.one_of(
    st.sampled_from(["HEAD", "HEAD~1", "HEAD^{tree}", "main", "nope", "HEAD:", "@{-1}", ":/fleet", "HEAD..HEAD", "x" * 5000]),
    st.text(max_size=30),
    st.sampled_from(TRAPS).map(lambda t: f"HEAD{t}"),
)


@pytest.fixture(scope="module")
def fleet_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("repo")
    git(folder, "init", "-q", "-b", "main")
    shutil.copy(EXAMPLE, folder / "fleet.yaml")
    git(folder, "add", "fleet.yaml")
    git(folder, "commit", "-qm", "fleet")
    return folder


@SLOW_ENOUGH
@given(ref=REVISION)
def test_any_git_revision_is_read_or_refused_in_one_line(fleet_repo: Path, ref: str) -> None:
    raw = refused_cleanly(lambda: read_at(fleet_repo / "fleet.yaml", ref))
    assert raw is None or isinstance(raw, bytes)


# -- the tree committed at a revision, and the revision an engine records -----------------------


@pytest.fixture(scope="module")
def committed_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A small fleet repository: fleet.yaml and the rendered tree of dev-eastus (its cluster folder and base/), committed."""
    folder = tmp_path_factory.mktemp("committed")
    shutil.copy(EXAMPLE, folder / "fleet.yaml")
    shutil.copytree(REPO / "base", folder / "base")
    shutil.copytree(REPO / "clusters" / "dev-eastus", folder / "clusters" / "dev-eastus")
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "fleet and its render")
    return folder, git(folder, "rev-parse", "HEAD").strip()


def committed_at(folder: Path, message: str) -> str:
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "--allow-empty", "-m", message)
    return git(folder, "rev-parse", "HEAD").strip()


@pytest.mark.slow  # each example commits and builds dev-eastus's folders with the real kubectl kustomize: about a second
@SLOW_ENOUGH
@given(data=st.data())
def test_a_committed_tree_mutated_anywhere_builds_or_is_refused_in_one_line(committed_repo: tuple[Path, str], data: st.DataObject) -> None:
    """drift's committed tree (live.committed): the kustomizations synced_folders reads, the files `git archive` gives,
    what `kubectl kustomize` makes of them; each rendered file of dev-eastus and base/ may be the one mutated."""
    from fleetgen.live.committed import Revision, committed_tree

    folder, _ = committed_repo
    path = data.draw(st.sampled_from(sorted(p for p in (folder / "clusters").rglob("*.yaml")) + sorted((folder / "base").rglob("*.yaml"))))
    before = path.read_bytes()
    try:
        docs = list(yaml.safe_load_all(before))
        changed = data.draw(mutated(docs, max_changes=2))
        path.write_bytes(data.draw(encoded(dumped_all(changed if isinstance(changed, list) else [changed]))))
        commit = committed_at(folder, "mutated")
        built = refused_cleanly(lambda: committed_tree(folder / "fleet.yaml", Revision(commit, "test"), "dev-eastus"))
        assert built is None or (built.commit == commit and all(isinstance(o, dict) for o in built.objects.values()))
    finally:  # the next example mutates the render as committed
        path.write_bytes(before)


@cache
def flux_engine_objects() -> list[dict[str, Any]]:
    """dev-eastus's Flux Kustomizations as the cluster shows them, each recording the commit it applied (filled in below)."""
    loaded = example_loaded()
    entry = [m.body for m in Rendered(loaded.fleet).entry_point(DEV) if m.body["kind"] == "Kustomization"]
    engines = cluster_dump(entry, "flux")["items"]
    for obj in engines:
        obj["status"] = {"lastAppliedRevision": "main@sha1:COMMIT", "observedGeneration": 1}
    return engines


RECORDED = st.one_of(
    st.sampled_from(["main@sha1:COMMIT", "main/COMMIT", "COMMIT", "main@sha256:COMMIT", "main@sha1:" + "0" * 40, "sha1:" + "f" * 64]),
    st.text(max_size=60),
    st.sampled_from(TRAPS).map(lambda t: f"main@sha1:COMMIT{t}"),
    st.just("main@sha1:" + "a" * 100_000),
)


@SLOW_ENOUGH
@given(data=st.data(), recorded=RECORDED)
def test_the_revision_an_engine_records_is_built_or_refused_in_one_line(
    committed_repo: tuple[Path, str], data: st.DataObject, recorded: str
) -> None:
    """What drift takes from a Flux Kustomization's status (live.committed's synced_revision), read from a dump, then
    the tree committed at it (committed_tree): a commit this repository has, or one line."""
    from fleetgen.live.committed import committed_tree, synced_revision
    from fleetgen.live.dumps import live_objects

    folder, head = committed_repo
    engines = [dict(o, status={**o["status"], "lastAppliedRevision": recorded.replace("COMMIT", head)}) for o in flux_engine_objects()]
    shown = data.draw(st.one_of(st.just(engines), mutated(engines, max_changes=2)))
    text = dumped({"apiVersion": "v1", "kind": "List", "items": shown})
    live = refused_cleanly(lambda: live_objects(text.encode("utf-8", "surrogatepass"), "live.yaml"))
    if live is None:
        return
    entry = {m.key: m.body for m in Rendered(example_loaded().fleet).entry_point(DEV)}
    revision = refused_cleanly(lambda: synced_revision(live, entry, "dev-eastus"))
    if revision is not None and revision.ref != head:  # the head's tree is built by the test above; others are refused before
        assert refused_cleanly(lambda: committed_tree(folder / "fleet.yaml", revision, "dev-eastus")) is None


@SLOW_ENOUGH
@given(ref=REVISION)
def test_any_revision_given_to_drift_is_built_or_refused_in_one_line(committed_repo: tuple[Path, str], ref: str) -> None:
    """`drift --ref REV`, and HEAD when nothing records one: committed_tree's git reads of any revision string."""
    from fleetgen.live.committed import Revision, committed_tree

    folder, head = committed_repo
    built = refused_cleanly(lambda: committed_tree(folder / "fleet.yaml", Revision(ref, "--ref"), "dev-eastus"))
    assert built is None or built.objects


# -- --crd files -------------------------------------------------------------------------------


@cache
def small_crd() -> dict[str, Any]:
    path = min((REPO / "tests" / "crds").rglob("*.yaml"), key=lambda p: p.stat().st_size)
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")))


@SLOW_ENOUGH
@given(doc=st.deferred(lambda: mutated(small_crd())), encoding=st.sampled_from(["utf-8", "utf-16", "cut"]))
def test_a_crd_file_mutated_anywhere_is_read_or_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, doc: Any, encoding: str
) -> None:
    path = tmp_path_factory.mktemp("crd") / "crd.yaml"
    raw = dumped(doc).encode("utf-8", "surrogatepass")
    path.write_bytes(
        raw.decode("utf-8", "surrogatepass").encode("utf-16", "surrogatepass")
        if encoding == "utf-16"
        else raw[:-3]
        if encoding == "cut"
        else raw
    )
    refused_cleanly(lambda: read_crds([path]))


# -- the rendered tree's bookkeeping and the files `check` reads back ---------------------------


@pytest.fixture(scope="module")
def rendered_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tree")
    shutil.copy(EXAMPLE, folder / "fleet.yaml")
    workflows.render_tree(folder / "fleet.yaml", None)
    return folder


LEDGER_LINE = st.one_of(
    st.sampled_from(
        ["", "# comment", "0" * 64 + "  clusters/dev-eastus/kustomization.yaml", "0" * 64 + "  ../escape", "0" * 64 + "  /etc/passwd"]
    ),
    st.text(max_size=80),
    st.sampled_from(TRAPS),
    st.just("x" * 100_000),
)
JOURNAL_DOC = {"moves": [[".fleetgen-staging/0/1", "clusters/x.yaml"]], "removes": ["base/a.yaml"]}


@pytest.mark.slow  # about a quarter of a second an example: a load and a render
@SLOW_ENOUGH
@given(data=st.data())
def test_a_forged_ledger_journal_or_tree_file_is_checked_or_refused_in_one_line(rendered_tree: Path, data: st.DataObject) -> None:
    """What `check` and `render` read back from the tree: the ledger, a journal, and the files fleetgen wrote."""
    target = data.draw(st.sampled_from(["ledger", "journal", "file"]))
    files = sorted(p for p in (rendered_tree / "clusters").rglob("*.yaml"))
    path = {"ledger": rendered_tree / LEDGER, "journal": rendered_tree / JOURNAL, "file": data.draw(st.sampled_from(files))}[target]
    before = path.read_bytes() if path.exists() else None
    try:
        if target == "ledger":
            lines = before.decode().splitlines() if before else [""]
            lines[data.draw(st.integers(0, len(lines) - 1))] = data.draw(LEDGER_LINE)
            path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
        elif target == "journal":
            path.write_bytes(
                data.draw(st.one_of(mutated(JOURNAL_DOC).map(json.dumps), st.just("[" * 100_000))).encode("utf-8", "surrogatepass")
            )
        else:
            documents = data.draw(mutated(list(yaml.safe_load_all(before or b""))))
            shown = dumped_all(documents if isinstance(documents, list) else [documents])
            path.write_bytes(shown.encode("utf-8", "surrogatepass"))
        shortcut = known_fresh(rendered_tree / "fleet.yaml", None)  # check's shortcut never raises: it answers or defers
        result = refused_cleanly(lambda: workflows.freshness(rendered_tree / "fleet.yaml", None))
        assert result is None or result.files > 0
        assert shortcut is None or (result is not None and not result.found)  # "up to date" only where the full check agrees
    finally:  # the next example starts from the rendered tree again
        if before is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(before)


@given(extra=st.binary(max_size=4))
def test_an_entry_of_emitted_files_with_bytes_after_it_is_a_miss(extra: bytes) -> None:
    """The index line gives every file's size: bytes beyond them (a write that did not end where it should) are no entry."""
    files = {"a.yaml": b"x: 1\n", "b.yaml": b"y: 2\n"}
    assert _unpack(_pack(files) + extra) == (None if extra else files)


@SLOW_ENOUGH
@given(
    entry=st.one_of(
        st.binary(max_size=200),
        st.just(b"[" * 100_000),
        mutated({"a.yaml": "x: 1"}).map(lambda d: json.dumps(d).encode()),
        mutated([["a.yaml", 5], ["b/c.yaml", 0], ["d.yaml", 5]]).map(lambda index: json.dumps(index).encode() + b"\nx: 1\ny: 2\n"),
        st.builds(bytes.__add__, st.just(_pack({"a.yaml": b"x: 1\n", "b.yaml": b"y: 2\n"})), st.binary(max_size=4)),
    )
)
def test_a_damaged_cache_entry_is_read_as_none_or_as_what_it_holds(tmp_path_factory: pytest.TempPathFactory, entry: bytes) -> None:
    store = Cache(tmp_path_factory.mktemp("cache"))
    store.put("files", "inputs", entry)
    assert store.get("files", "inputs") == entry
    files = _unpack(entry)
    assert files is None or all(isinstance(v, bytes) for v in files.values())
    verdict = ClusterVerdict.from_text(entry.decode("utf-8", "replace"))
    assert verdict is None or isinstance(verdict, ClusterVerdict)
    known = KnownTree.from_bytes(entry)
    assert known is None or (isinstance(known.ledger, bytes) and all(isinstance(p, str) for p in known.hand_written))
    assert known is None or all(isinstance(kind, str) and isinstance(inputs, str) for kind, inputs in known.entries)
    store.put("cluster-files", "inputs", entry)  # render's shortcut reads emitted files back as the full render does
    assert read_entries(store, [("cluster-files", "inputs")]) == files
    assert read_entries(store, [("files", "inputs")]) is None  # only entries of emitted files are read
    report = KnownReport.from_bytes(entry)
    assert report is None or all(isinstance(f.message, str) and isinstance(f.severity, Severity) for f in report.findings)
    fleet = tmp_path_factory.mktemp("fleet") / "fleet.yaml"
    fleet.write_bytes(entry)  # any bytes as fleet.yaml are only hashed: a miss here
    assert KnownReports(store).get(fleet, False, Severity.ERROR, datetime.date(2026, 1, 1)) is None
    assert KnownTrees(store).files(entry, "fleet.yaml") is None
    assert known_render(fleet, None, False, Severity.ERROR, print) is None
    values = values_from_json(entry)  # a fleet text's values (checks/kept_values.py): plain values, or None
    assert values is None or json.loads(json.dumps(values)) is not None
    store.put("fleet-values", hashlib.sha256(entry).hexdigest(), entry)  # under the very text it names: not its own digest
    assert KeptValues(store).source(entry, "fleet.yaml") is None


# -- the import tree ---------------------------------------------------------------------------

IMPORT_REPO = REPO / "tests" / "import_repo"


@pytest.mark.slow  # each example builds three clusters with the real kustomize
@SLOW_ENOUGH
@given(data=st.data())
def test_an_import_tree_mutated_anywhere_imports_or_is_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    from fleetgen.importer.imported import Given
    from fleetgen.importer.run import import_repository

    repo = tmp_path_factory.mktemp("import") / "repo"
    shutil.copytree(IMPORT_REPO, repo)
    path = data.draw(st.sampled_from(sorted(p for p in repo.rglob("*.yaml"))))
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8"))]
    changed = data.draw(mutated(docs, max_changes=2))
    raw = dumped_all(changed if isinstance(changed, list) else [changed])
    path.write_bytes(data.draw(encoded(raw)))
    given_ = Given("fleet", "cc-1000", "flux", "https://github.com/acme/fleet-config")
    refused_cleanly(lambda: import_repository(repo, given_))


MULTIKUEUE_TREE = REPO / "tests" / "cases" / "multikueue-two-models" / "expected"
MANAGER = "clusters/dispatch-eastus"


@pytest.mark.slow  # each example builds three clusters with the real kustomize
@SLOW_ENOUGH
@given(data=st.data())
def test_a_multikueue_tree_mutated_anywhere_imports_or_is_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """The MultiKueue import (importer.multikueue, its _dispatcher): a rendered MultiKueue tree whose manager also lists
    its platform folder, so that the Kueue HelmRelease's controllerManagerConfigYaml is read; the manager's objects,
    that HelmRelease, or the Kueue configuration inside it is the file mutated."""
    from fleetgen.importer.imported import Given
    from fleetgen.importer.run import import_repository

    repo = tmp_path_factory.mktemp("import") / "repo"
    shutil.copytree(MULTIKUEUE_TREE, repo)
    overlay = repo / MANAGER / "kustomization.yaml"
    overlay.write_text(overlay.read_text(encoding="utf-8") + "- platform\n", encoding="utf-8")
    path = repo / MANAGER / data.draw(st.sampled_from(["cluster.yaml", "platform/platform.yaml"]))
    docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    release = next((d for d in docs if d.get("kind") == "HelmRelease" and d["metadata"]["name"] == "kueue"), None)
    if release is not None and data.draw(st.booleans()):  # the Kueue configuration, a YAML text inside the values
        values = release["spec"]["values"]["managerConfig"]
        inner = data.draw(mutated(yaml.safe_load(values["controllerManagerConfigYaml"]), max_changes=2))
        values["controllerManagerConfigYaml"] = data.draw(st.one_of(st.just(dumped(inner)), st.sampled_from(TRAPS), st.just("[" * 10_000)))
        changed: Any = docs
    else:
        changed = data.draw(mutated(docs, max_changes=2))
    raw = dumped_all(changed if isinstance(changed, list) else [changed])
    path.write_bytes(data.draw(encoded(raw)))
    refused_cleanly(lambda: import_repository(repo, Given()))


@pytest.mark.parametrize(
    ("config", "dispatcher"),
    [
        (
            "multiKueue:\n  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental\n",
            "kueue.x-k8s.io/multikueue-dispatcher-incremental",
        ),
        ("[" * 10_000, ""),  # deeper than any parser's recursion: fleetgen's bounded reader refuses it
        ("{" * 200 + "}" * 200, ""),
        ("a: [1\n", ""),
        ("--- {}\n--- {}\n", ""),
        ("multiKueue: [dispatcherName]\n", ""),
        ("\ud800", ""),
        (7, ""),
    ],
)
def test_the_kueue_configuration_names_a_dispatcher_or_none(monkeypatch: pytest.MonkeyPatch, config: Any, dispatcher: str) -> None:
    """importer.multikueue's _dispatcher on the controllerManagerConfigYaml text of the manager's Kueue HelmRelease."""
    from types import SimpleNamespace

    from fleetgen.importer import multikueue

    kueue = SimpleNamespace(values={"managerConfig": {"controllerManagerConfigYaml": config}})
    monkeypatch.setattr(multikueue, "installs", lambda modelled: {"kueue": kueue})
    assert multikueue._dispatcher(SimpleNamespace(modelled=[])) == dispatcher  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("admissionChecksStrategy", [[{"name": "fleet-a100"}]]),  # found by the mutated-tree property above: a list, not a mapping
        ("admissionChecksStrategy", {"admissionChecks": "fleet-a100"}),
        ("admissionChecksStrategy", {"admissionChecks": [7, None, {"name": "fleet-a100"}]}),
        ("resourceGroups", [{"flavors": {"name": "multikueue-a100"}}]),
        ("resourceGroups", "multikueue-a100"),
    ],
)
def test_a_manager_queue_of_the_wrong_shape_reads_as_absent(field: str, value: Any) -> None:
    """importer.multikueue reads the repository's ClusterQueues, MultiKueueConfigs and MultiKueueClusters unvalidated."""
    from fleetgen.importer.build import Built
    from fleetgen.importer.imported import Imported
    from fleetgen.importer.multikueue import dispatching, multikueue_section
    from fleetgen.importer.recognise import ClusterView

    def body(kind: str, name: str, spec: Any) -> Built:
        return Built({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": name}, "spec": spec}, "cluster.yaml")

    queue_spec = {
        "resourceGroups": [{"flavors": [{"name": "multikueue-a100"}]}],
        "admissionChecksStrategy": {"admissionChecks": [{"name": "fleet-a100"}]},
    }
    view = ClusterView("dispatch-eastus")
    view.cluster_wide["ClusterQueue"] = [body("ClusterQueue", "fleet-a100", {**queue_spec, field: value})]
    view.multikueue = [
        body("AdmissionCheck", "fleet-a100", {"controllerName": "kueue.x-k8s.io/multikueue", "parameters": ["fleet-a100"]}),
        body("MultiKueueConfig", "fleet-a100", {"clusters": 7}),
        body("MultiKueueCluster", "training-eastus", {"clusterSource": [{"kubeConfig": {}}]}),
    ]
    gated, _ = dispatching(view)
    section = multikueue_section(Imported({}), [view])
    assert section is not None and section["manager"] == "dispatch-eastus"
    assert [q["name"] for q in section["queues"]] == [b["metadata"]["name"] for b in gated]
    assert all(q["workers"] == [] for q in section["queues"])  # `clusters: 7` names none
    wellformed = isinstance(value, dict) and any(isinstance(c, dict) for c in value.get("admissionChecks") or [])
    assert bool(gated) == (field == "resourceGroups" or wellformed)


# -- a Prometheus range-query answer, from a file or a live server --------------------------------

FORECAST_END = 1_790_000_000 // 3600 * 3600
FORECAST_STEP = 6 * 3600  # four samples a day over four weeks: the trend has weeks to fit, the mutations few paths


@cache
def range_answer_doc() -> dict[str, Any]:
    """A faithful answer: a pool of training-eastus growing, a team's used quota, and the cluster's GPU utilisation."""
    times = list(range(FORECAST_END - 28 * 86400 + FORECAST_STEP, FORECAST_END + 1, FORECAST_STEP))

    def series(labels: dict[str, str], start: float, per_sample: float) -> dict[str, Any]:
        return {"metric": labels, "values": [[t, f"{start + i * per_sample:.4g}"] for i, t in enumerate(times)]}

    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                series({"cluster": "training-eastus", "flavor": "a100-spot", "resource": "nvidia.com/gpu"}, 6, 0.05),
                series({"cluster": "training-eastus", "namespace": "team-nlp"}, 3, 0.01),
                series({"cluster": "training-eastus", "fleetgen_series": "gpu_busy_percent"}, 50, 0.1),
            ],
        },
    }


def answer_json(doc: Any) -> str:
    try:
        return json.dumps(doc, ensure_ascii=False)
    except ValueError:  # an int too long to print: the answer a server cut off
        return json.dumps(range_answer_doc())[:-7]


SAMPLE_TIME = st.one_of(
    st.sampled_from([0, -1, 1e10, 1e12, 2**63, 221_845_392_000, float("nan"), float("inf"), "1789999200", True]),
    st.integers(-(2**70), 2**70),
    st.floats(),
)
SAMPLE_VALUE = st.one_of(st.sampled_from(["NaN", "+Inf", "-Inf", "1e308", "-1e308", "0x10", "", 1e308, None]), st.floats().map(repr))


@st.composite
def resampled(draw: st.DrawFn) -> dict[str, Any]:
    """The answer with some samples' times or values out of the ordinary: far apart in time, huge, not numbers."""
    doc = json.loads(json.dumps(range_answer_doc()))
    for _ in range(draw(st.integers(1, 3))):
        series = draw(st.sampled_from(doc["data"]["result"]))
        sample = series["values"][draw(st.integers(0, len(series["values"]) - 1))]
        sample[draw(st.integers(0, 1))] = draw(SAMPLE_TIME if draw(st.booleans()) else SAMPLE_VALUE)
    return doc


ANSWER_BYTES = st.one_of(
    st.deferred(lambda: mutated(range_answer_doc(), max_changes=2).map(answer_json).flatmap(encoded)),
    resampled().map(lambda doc: answer_json(doc).encode("utf-8")),
    st.deferred(lambda: encoded(json.dumps(range_answer_doc()))),
    st.sampled_from(TRAPS).map(
        lambda t: json.dumps(range_answer_doc()).replace('"success"', json.dumps(t), 1).encode("utf-8", "surrogatepass")
    ),
    st.just(b"[" * 100_000),
    st.just(b'{"status": "success", "data": ' + b"[" * 100_000),
    st.binary(max_size=200),
)
ERROR_BODY = st.one_of(
    st.deferred(lambda: mutated({"status": "error", "errorType": "bad_data", "error": "parse error at char 1"}).map(answer_json)).map(
        lambda t: t.encode("utf-8", "surrogatepass")
    ),
    st.sampled_from(TRAPS).map(lambda t: json.dumps({"status": "error", "error": f"line one{t}\nline two"}).encode()),
    st.just(b"[" * 100_000),
    st.binary(max_size=200),
)


class _Answering:
    """What the Prometheus on 127.0.0.1 answers each query with, set by each example."""

    code = 200
    body = b""


@pytest.fixture(scope="module")
def fuzzed_prometheus() -> Iterator[tuple[str, type[_Answering]]]:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    answering = type("Answering", (_Answering,), {})

    class Handler(BaseHTTPRequestHandler):
        timeout = 10

        def do_GET(self) -> None:
            self.send_response(answering.code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answering.body)))
            self.end_headers()
            self.wfile.write(answering.body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answering
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@SLOW_ENOUGH
@given(
    live=st.booleans(),
    answer=ANSWER_BYTES,
    code=st.sampled_from([200, 200, 200, 400, 422, 503]),
    error=ERROR_BODY,
    cluster=st.sampled_from([None, "training-eastus", "nowhere"]),
)
def test_a_range_query_answer_mutated_anywhere_is_forecast_or_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory,
    fuzzed_prometheus: tuple[str, type[_Answering]],
    live: bool,
    answer: bytes,
    code: int,
    error: bytes,
    cluster: str | None,
) -> None:
    """`fleetgen forecast` (cli.forecast's _answers): an answer read from --history FILE, or from --prometheus on
    127.0.0.1, which may refuse the query with an error body of its own (live.prometheus's _reason); what is read is
    forecast and written as text, JSON and HTML."""
    from contextlib import ExitStack

    from fleetgen.cli.forecast import _answers
    from fleetgen.forecast.build import build_forecast
    from fleetgen.forecast.chart import forecast_html
    from fleetgen.forecast.output import forecast_json, forecast_text

    fleet = example_loaded().fleet
    prefix = f"{cluster}=" if cluster else ""
    if live:
        url, answering = fuzzed_prometheus
        answering.code, answering.body = code, answer if code == 200 else error
        history: tuple[str, ...] = ()
        servers: tuple[str, ...] = (prefix + url,)
    else:
        path = tmp_path_factory.mktemp("history") / "history.json"
        path.write_bytes(answer)
        history, servers = (prefix + str(path),), ()

    def forecast() -> Any:
        with ExitStack() as stack:
            return build_forecast(fleet, _answers(stack, fleet, history, servers, 7), 3)

    result = refused_cleanly(forecast)
    if result is not None:
        assert json.loads(forecast_json(result))
        assert forecast_text(result) and forecast_html(result).count("<html") == 1


# -- the registry of readers -------------------------------------------------------------------

READING_CALLS = {
    "read_bytes",
    "read_text",
    "parse_documents",
    "parse_fleet",
    "safe_load",
    "safe_load_all",
    "load",
    "load_all",
    "loads",
    "run",
    "open",
}
FUZZED: dict[str, str] = {
    "fleetgen.checks.load:load_fleet_text": "test_fleet_yaml_mutated_anywhere_loads_or_is_refused_and_what_loads_renders",
    "fleetgen.checks.load:typed_fleet_text": "test_fleet_yaml_mutated_anywhere_loads_or_is_refused_and_what_loads_renders",
    "fleetgen.checks.load:passed_fleet_text": "test_fleet_yaml_mutated_anywhere_loads_or_is_refused_and_what_loads_renders",
    "fleetgen.source.edit:__init__": "test_fleet_yaml_mutated_anywhere_loads_or_is_refused_and_what_loads_renders",
    "fleetgen.source.reader:read_fleet": "test_fleet_yaml_in_any_encoding_is_read_or_refused_in_one_line",
    "fleetgen.source.reader:read_fleet_bytes": "test_fleet_yaml_in_any_encoding_is_read_or_refused_in_one_line",
    "fleetgen.source.reader:read_bytes": "test_fleet_yaml_in_any_encoding_is_read_or_refused_in_one_line",
    "fleetgen.source.reader:parse_fleet": "test_fleet_yaml_in_any_encoding_is_read_or_refused_in_one_line",
    "fleetgen.compat.extra:merge_facts_text": "test_a_facts_file_mutated_anywhere_merges_or_is_refused_at_its_line",
    "fleetgen.live.dumps:read_live": "test_a_faithful_dump_mutated_anywhere_drifts_or_is_refused_in_one_line",
    "fleetgen.live.dumps:live_objects": "test_a_faithful_dump_mutated_anywhere_drifts_or_is_refused_in_one_line",
    "fleetgen.live.state:live_from_context": "test_what_kubectl_prints_is_read_or_refused_in_one_line",
    "fleetgen.source.git:run_git": "test_any_git_revision_is_read_or_refused_in_one_line",  # every git fleetgen runs goes through it
    "fleetgen.validation.crd_schemas:read_crds": "test_a_crd_file_mutated_anywhere_is_read_or_refused_in_one_line",
    "fleetgen.output.tree:ledger": "test_a_forged_ledger_journal_or_tree_file_is_checked_or_refused_in_one_line",
    "fleetgen.output.tree:recover": "test_a_forged_ledger_journal_or_tree_file_is_checked_or_refused_in_one_line",
    "fleetgen.output.tree:read": "test_a_forged_ledger_journal_or_tree_file_is_checked_or_refused_in_one_line",
    "fleetgen.output.known_trees:fresh": "test_a_forged_ledger_journal_or_tree_file_is_checked_or_refused_in_one_line",
    "fleetgen.review.freshness:_changes": "test_a_forged_ledger_journal_or_tree_file_is_checked_or_refused_in_one_line",
    "fleetgen.cache:get": "test_a_damaged_cache_entry_is_read_as_none_or_as_what_it_holds",
    "fleetgen.output.emitted:_unpack": "test_a_damaged_cache_entry_is_read_as_none_or_as_what_it_holds",
    "fleetgen.validation.verdicts:from_text": "test_a_damaged_cache_entry_is_read_as_none_or_as_what_it_holds",
    "fleetgen.output.known_trees:from_bytes": "test_a_damaged_cache_entry_is_read_as_none_or_as_what_it_holds",
    "fleetgen.validation.known_reports:from_bytes": "test_a_damaged_cache_entry_is_read_as_none_or_as_what_it_holds",
    "fleetgen.validation.known_reports:get": "test_a_damaged_cache_entry_is_read_as_none_or_as_what_it_holds",
    "fleetgen.validation.known_reports:known_render": "test_a_damaged_cache_entry_is_read_as_none_or_as_what_it_holds",
    "fleetgen.source.plain_values:values_from_json": "test_a_damaged_cache_entry_is_read_as_none_or_as_what_it_holds",
    "fleetgen.importer.addons:_argo": "test_an_import_tree_mutated_anywhere_imports_or_is_refused_in_one_line",
    "fleetgen.importer.build:_build": "test_an_import_tree_mutated_anywhere_imports_or_is_refused_in_one_line",
    "fleetgen.importer.build:_ask_for_origins": "test_an_import_tree_mutated_anywhere_imports_or_is_refused_in_one_line",
    "fleetgen.importer.build:_with_file": "test_an_import_tree_mutated_anywhere_imports_or_is_refused_in_one_line",
    "fleetgen.importer.keep:_content": "test_an_import_tree_mutated_anywhere_imports_or_is_refused_in_one_line",
    "fleetgen.importer.keep:_read_local": "test_an_import_tree_mutated_anywhere_imports_or_is_refused_in_one_line",
    "fleetgen.importer.multikueue:_dispatcher": "test_a_multikueue_tree_mutated_anywhere_imports_or_is_refused_in_one_line",
    "fleetgen.authoring.doctor:_read": "test_a_workflow_or_codeowners_mutated_anywhere_is_examined_by_doctor",
    "fleetgen.authoring.doctor:_workflow_problems": "test_a_workflow_or_codeowners_mutated_anywhere_is_examined_by_doctor",
    "fleetgen.review.capacity_changes:_tables": "test_a_facts_file_mutated_at_either_revision_is_compared_in_review",
    "fleetgen.live.cluster_reader:_read_kind": "test_what_kubectl_prints_kind_by_kind_is_read_or_refused_in_one_line",
    "fleetgen.live.cluster_reader:_read_one": "test_what_kubectl_prints_kind_by_kind_is_read_or_refused_in_one_line",
    "fleetgen.live.committed:synced_folders": "test_a_committed_tree_mutated_anywhere_builds_or_is_refused_in_one_line",
    "fleetgen.live.committed:_build": "test_a_committed_tree_mutated_anywhere_builds_or_is_refused_in_one_line",
    "fleetgen.live.committed:_extract": "test_a_committed_tree_mutated_anywhere_builds_or_is_refused_in_one_line",
    "fleetgen.live.committed:_files": "test_a_committed_tree_mutated_anywhere_builds_or_is_refused_in_one_line",
    "fleetgen.cli.forecast:_answers": "test_a_range_query_answer_mutated_anywhere_is_forecast_or_refused_in_one_line",
    "fleetgen.live.prometheus:_reason": "test_a_range_query_answer_mutated_anywhere_is_forecast_or_refused_in_one_line",
}
RENDER_FOLDERS = ("render", "jobs")  # what a fleet renders, and what `job new` renders for an ask
RENDERERS_OUTSIDE_RENDER_FILES = {  # reached by no fleet's render, only by `job new`: fuzzed above
    f"fleetgen.jobs.{name}": "test_job_new_builds_or_refuses_any_ask_in_one_line"
    for name in ("golden_paths", "job_pod", "job_target", "serving", "slice_asks", "job_dispatch")
}
NOT_UNTRUSTED: dict[str, str] = {
    "fleetgen.source.reader:_positions": "parse_fleet (fuzzed above) again, of a text the cache kept values of: it parsed and passed",
    "fleetgen.compat.shipped:shipped_data": "the compatibility data files shipped inside fleetgen",
    "fleetgen.validation.api_rules:load_rules": "the API rules shipped inside fleetgen",
    "fleetgen.validation.rendered_objects:_crd": "the CRD schemas shipped inside fleetgen",
    "fleetgen.validation.core_definitions:__init__": "kubernetes-validate's _definitions.json, installed with fleetgen",
    "fleetgen.validation.core_definitions:_all": "kubernetes-validate's _definitions.json, installed with fleetgen",
    "fleetgen.validation.rendered_objects:_core_schema": "the Kubernetes schemas shipped inside fleetgen",
    "fleetgen.model.json_schema:_schema": "the JSON Schema fleetgen generates from its own model",
    "fleetgen.model.reference_doc:reference_markdown": "the JSON Schema fleetgen generates from its own model",
    "fleetgen.compat.reference_doc:compat_reference_markdown": "the compatibility data files shipped inside fleetgen",
    "fleetgen.cli.findings_doc:finding_entries": "fleetgen's own source files, read to document their findings",
    "fleetgen.render.kueue_config:_yaml_of": "JSON fleetgen serialized itself a line before",
    "fleetgen.importer.infer:_role": "JSON the importer serialized itself to count equal rules",
    "fleetgen.importer.teams:_tenancy": "JSON the importer serialized itself to count equal rules",
    "fleetgen.cache:_whole_file": "fleetgen's own installed files, hashed for the cache key",
    "fleetgen.authoring.fleetgen_source:installed_source": "pip's record of how this fleetgen was installed",
    "fleetgen.cli.job:_write": "reads a file only to compare it with what it writes",
    "fleetgen.output.tree:_write_new": "opens a file to write it",
    "fleetgen.output.tree:_flush_folder": "opens a folder to flush it",
    "fleetgen.output.tree:write_new_files": "writes files",
    "fleetgen.workflows.pull_request:write_github_output": "appends to $GITHUB_OUTPUT",
    "fleetgen.validation.quantity_fields:_schema": "the CRD schemas shipped inside fleetgen and kubernetes-validate's core ones",
    "fleetgen.validation.quantity_fields:_core_definitions": "kubernetes-validate's _definitions.json, installed with fleetgen",
    "fleetgen.cli.team:team_devcontainer": "reads a file only to compare it with what it writes",
    "fleetgen.validation.cel_rules:_run": "runs a compiled CEL rule, reads nothing",
}


def readers_in(source: str, module: str) -> Iterator[str]:
    """`module:function` of each function of `source` that calls something that reads a file, YAML, JSON or a process."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            calls = (c.func for c in ast.walk(node) if isinstance(c, ast.Call))
            names = {f.attr if isinstance(f, ast.Attribute) else f.id for f in calls if isinstance(f, ast.Attribute | ast.Name)}
            if names & READING_CALLS:
                yield f"{module}:{node.name}"


def readers() -> Iterator[str]:
    for path in sorted((REPO / "fleetgen").rglob("*.py")):
        yield from readers_in(path.read_text(encoding="utf-8"), ".".join(path.relative_to(REPO).with_suffix("").parts))


def test_every_reader_of_untrusted_input_has_a_fuzz_target() -> None:
    found = set(readers())
    unlisted = sorted(found - FUZZED.keys() - NOT_UNTRUSTED.keys())
    assert unlisted == [], f"new readers: fuzz them in this module and list them in FUZZED (or say why not in NOT_UNTRUSTED): {unlisted}"
    assert sorted((FUZZED.keys() | NOT_UNTRUSTED.keys()) - found) == [], "listed readers that no longer read"
    tests = {name: value for name, value in globals().items() if name.startswith("test_")}
    for reader, test in FUZZED.items():
        assert test in tests and hasattr(tests[test], "hypothesis"), f"{reader}: {test} is not a property test here"


def test_the_reader_scan_sees_each_kind_of_read() -> None:
    source = (
        "import json, subprocess, yaml\n"
        "def a(p):\n    return p.read_text()\n"
        "def b(t):\n    return json.loads(t)\n"
        "def c(t):\n    return yaml.safe_load(t)\n"
        "def d():\n    return subprocess.run(['git'])\n"
        "def e(t):\n    return t.strip()\n"
    )
    assert list(readers_in(source, "m")) == ["m:a", "m:b", "m:c", "m:d"]


def data_only(path: Path) -> bool:
    """A module with no function, method or lambda: nothing of it runs after its import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) for n in ast.walk(tree))


def imports_of(path: Path) -> set[str]:
    """The fleetgen modules `path` imports by name (`import a.b`, `from a.b import c`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}


def test_the_render_reach_counts_a_data_module_only_through_a_module_that_ran(tmp_path: Path) -> None:
    data = tmp_path / "rows.py"
    data.write_text('ROWS = (("a", 1),)\n', encoding="utf-8")
    code = tmp_path / "code.py"
    code.write_text("from fleetgen.render.rows import ROWS\n\n\ndef rows():\n    return ROWS\n", encoding="utf-8")
    assert data_only(data) and not data_only(code)
    assert imports_of(code) == {"fleetgen.render.rows"} and imports_of(data) == set()


def test_every_render_module_is_reached_by_a_fuzzed_render() -> None:
    """The fleet.yaml fuzzer renders what still loads; so every render module must run when the example renders
    (or be listed with the fuzz test that reaches it): a renderer the example never calls would go unfuzzed."""
    import sys

    reached: set[str] = set()

    def seen(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            reached.add(frame.f_code.co_filename)

    sys.setprofile(seen)
    try:
        for variant in variants():
            render_all(load_fleet_text(dumped(variant).encode()))
    finally:
        sys.setprofile(None)
    modules = {p for folder in RENDER_FOLDERS for p in (REPO / "fleetgen" / folder).glob("*.py") if p.name != "__init__.py"}
    named = {".".join(p.relative_to(REPO).with_suffix("").parts): p for p in modules}
    # A module of data alone (alert_tiers: the threshold rows) has no function to call: its code ran once, at import.
    # It is reached when a module whose functions ran imports it, for they read its data as they render.
    imported = {name for p in named.values() if str(p) in reached for name in imports_of(p)}
    unreached = sorted(name for name, p in named.items() if str(p) not in reached and not (data_only(p) and name in imported))
    assert [m for m in unreached if m not in RENDERERS_OUTSIDE_RENDER_FILES] == [], unreached
    assert sorted(RENDERERS_OUTSIDE_RENDER_FILES.keys() - named.keys()) == [], "listed renderers that are no longer modules"
    tests = {name: value for name, value in globals().items() if name.startswith("test_")}
    assert all(hasattr(tests.get(test), "hypothesis") for test in RENDERERS_OUTSIDE_RENDER_FILES.values())

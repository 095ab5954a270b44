"""`render`'s shortcut: a fleet text that `validate` (or a render) judged valid today is written from the files kept
for it, without building the model.

The promise: what `render` writes, prints and exits with is the same with the shortcut as without it, on every
generated fleet and option; the shortcut is taken where validate kept the files (a passing run with the default
options and no facts file of the fleet's own); and files read back are written only when they are, byte for byte,
the render kept: a missing or altered cache entry, an edited text or a missing hand-written file go the full way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, examples, run_cli
from generated_fleets import HAND_WRITTEN, fleets, write_fleet
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from fleetgen import workflows
from fleetgen.cache import Cache
from fleetgen.output.emitted import _pack, _unpack
from fleetgen.output.known_trees import KnownTrees
from fleetgen.output.tree import ledger_bytes

OPTIONS = ([], ["--strict"], ["--fail-on", "warning"], ["--format", "json"], ["--format", "github", "--all"])


def _run(command: str, folder: Path, cache: Path, options: list[str]) -> tuple[int, str, str]:
    result = run_cli(command, *options, cwd=folder, env={"XDG_CACHE_HOME": str(cache)})
    return result.returncode, result.stdout, result.stderr


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


class _FullRenders:
    """Counts the renders that took the full way (workflows.render_tree)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.count = 0
        full = workflows.render_tree

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return full(*args, **kwargs)

        monkeypatch.setattr(workflows, "render_tree", counted)


@pytest.mark.slow  # three commands on a whole generated fleet an example
@examples(10, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(fleet=fleets(files=True), options=st.sampled_from(OPTIONS))
def test_render_after_validate_writes_and_prints_what_the_full_render_does(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, fleet: dict[str, Any], options: list[str]
) -> None:
    cold, warm = tmp_path_factory.mktemp("cold"), tmp_path_factory.mktemp("warm")
    write_fleet(cold, fleet)
    write_fleet(warm, fleet)
    full = _run("render", cold, tmp_path_factory.mktemp("cold-cache"), options)
    cache = tmp_path_factory.mktemp("warm-cache")
    validated = _run("validate", warm, cache, options)
    renders = _FullRenders(monkeypatch)
    assert _run("render", warm, cache, options) == full
    assert _tree(warm) == _tree(cold)  # the same files, byte for byte, and nothing written where the full render refused
    default_checks = "--strict" not in options and "--fail-on" not in options
    own_facts = bool((fleet.get("compatibility") or {}).get("factsFile"))
    assert renders.count == (0 if validated[0] == 0 and default_checks and not own_facts else 1)


def _example(folder: Path, hand_written: bool = False) -> Path:
    """The shipped example in `folder`; with `hand_written`, its first cluster lists a hand-written file, which is there."""
    folder.mkdir()
    if not hand_written:
        (folder / "fleet.yaml").write_bytes(EXAMPLE.read_bytes())
        return folder
    fleet = yaml.safe_load(EXAMPLE.read_text())
    fleet["clusters"][0]["extraResources"] = [HAND_WRITTEN]
    write_fleet(folder, fleet)
    return folder


def test_render_after_validate_builds_no_model(tmp_path: Path) -> None:
    """The README's `validate && render`: the render loads neither the model nor the render stage, nor pydantic."""
    folder = _example(tmp_path / "example")
    # What the command loaded, printed by an exit handler (main() ends the process); fleetgen's stand-in for pydantic's
    # plugin loader (fleetgen/cli/process.py), which has no file, is no pydantic code
    probe = (
        "import atexit, sys\nfrom fleetgen.cli import main\nsys.argv = ['fleetgen', sys.argv[1]]\n"
        "loaded = lambda: [m for m, module in sys.modules.items() if m.startswith(('fleetgen.model', 'fleetgen.render', 'pydantic'))"
        " and '__file__' in vars(module)]\n"
        "atexit.register(lambda: print(loaded()))\nmain()\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # both commands in processes of their own, as a user runs them
    loaded = []
    for command in ("validate", "render"):
        done = subprocess.run([sys.executable, "-c", probe, command], cwd=folder, capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        loaded.append(done.stdout.strip().splitlines()[-1])
    assert loaded[0] != "[]" and loaded[1] == "[]"  # validate built the model; render did not
    cold = _example(tmp_path / "cold")
    assert _run("render", cold, tmp_path / "cold-cache", [])[0] == 0
    assert _tree(folder) == _tree(cold)


@pytest.mark.parametrize("damage", ["entry gone", "entry unreadable", "text edited", "hand-written gone"])
def test_what_is_not_the_kept_render_goes_the_full_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    folder = _example(tmp_path / "example", hand_written=True)
    cache = tmp_path / "cache"
    assert _run("validate", folder, cache, [])[0] == 0
    store = Cache(cache / "fleetgen")
    kept = KnownTrees(store).files((folder / "fleet.yaml").read_bytes(), "fleet.yaml")
    assert kept is not None
    kind, inputs = kept[0].entries[len(kept[0].entries) // 2]
    cold = _example(tmp_path / "cold", hand_written=True)
    for where in (folder, cold):
        if damage == "text edited":
            (where / "fleet.yaml").write_bytes((where / "fleet.yaml").read_bytes() + b"# the same fleet, another text\n")
        elif damage == "hand-written gone":
            shutil.rmtree(where / "clusters")
    if damage == "entry gone":
        path = store.folder / kind if store.folder is not None else None
        assert path is not None
        removed = [entry.unlink() for entry in path.glob("*") if entry.read_bytes() == store.get(kind, inputs)]
        assert removed
    elif damage == "entry unreadable":
        store.put(kind, inputs, b"{")
    renders = _FullRenders(monkeypatch)
    result = _run("render", folder, cache, [])
    assert renders.count == 1
    assert result == _run("render", cold, tmp_path / "cold-cache", [])
    assert result[0] == (1 if damage == "hand-written gone" else 0)
    assert _tree(folder) == _tree(cold)


def test_files_read_back_are_taken_only_when_they_are_the_render_kept(tmp_path: Path) -> None:
    """An entry that holds other files than the ones kept (well-formed, but not the bytes the ledger lists) is no render."""
    folder = _example(tmp_path / "example")
    assert _run("validate", folder, tmp_path / "cache", [])[0] == 0
    store, text = Cache(tmp_path / "cache" / "fleetgen"), (folder / "fleet.yaml").read_bytes()
    kept = KnownTrees(store).files(text, "fleet.yaml")
    assert kept is not None
    known, files = kept
    assert ledger_bytes(files) == known.ledger and len(known.entries) > 1
    for kind, inputs in known.entries:
        held = _unpack(store.get(kind, inputs))
        assert held is not None
        path = next(iter(held))
        for altered in ({**held, path: held[path] + b"# edited\n"}, {k: v for k, v in held.items() if k != path} or {"x": b""}):
            store.put(kind, inputs, _pack(altered))
            assert KnownTrees(store).files(text, "fleet.yaml") is None
        store.put(kind, inputs, _pack(held))
    assert KnownTrees(store).files(text, "fleet.yaml") == kept

"""The import budget: what a command may load before it answers.

Start-up is paid on every command, on each Tab of shell completion and on each pre-commit run, so
`--version`, `--help` and a completion request load click and fleetgen's command-line modules only;
each command imports its workflow and stages inside its body. Beyond start-up, a command loads the
stages it uses and none that only other commands need: `validate` reads no git history, no live
cluster and no pull-request diff. Like the layers contract (pyproject.toml), which guards the
direction of every edge, this guards what an edge pulls in at start-up; a failure names the chain of
imports that brought the module in, so the fix (an import moved into the command that needs it) is
plain.

Each case runs the real command in a fresh interpreter under `python -X importtime`, whose report
gives every module and the module whose import loaded it.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ForwardRef

import pytest

from tests.conftest import EXAMPLE, REPO

# The fleetgen modules start-up may load: the command-line modules and the few small ones their options name.
START_UP = {
    "fleetgen",
    "fleetgen.cli",
    "fleetgen.errors",
    "fleetgen.output",
    "fleetgen.output.findings",  # --format's choices
    "fleetgen.output.generated_paths",  # the default --out of schema and docs
}
START_UP_PACKAGES = ("fleetgen.cli",)
# Outside the standard library, start-up loads click alone; inside it, none of these (tenths of a second together).
THIRD_PARTY_AT_START_UP = {"click"}
HEAVY_STANDARD_LIBRARY = ("ssl", "http.client", "urllib.request", "importlib.metadata", "asyncio", "email", "subprocess")

# What the commands of the pre-commit hook and the editor loop must not load: each is used by a few other commands only.
ONLY_SOME_COMMANDS = (
    "fleetgen.authoring",  # init, doctor, team, migrate
    "fleetgen.importer",  # import
    "fleetgen.jobs",  # job new
    "fleetgen.forecast",  # forecast
    "fleetgen.live",  # drift, upgrade, diff --live
    "fleetgen.report.explain",  # explain, diff --format markdown
    "numpy",  # forecast
    "deepdiff",  # diff
    "ruamel",  # the commands that edit fleet.yaml in place
    "concurrent.futures",  # render, writing a large tree on a few threads
    "html",  # report --format html
)
NOT_FOR_VALIDATE = (
    *ONLY_SOME_COMMANDS,
    "fleetgen.review",  # the pull-request diff
    "fleetgen.compare",
    "difflib",  # the hint for an unknown field in fleet.yaml
    "fleetgen.model.json_schema",  # the same hint's field lists, `schema` and `init`
)
# Where the pydantic classes a fleet without a facts file of its own needs are defined: the fleet model only. The data
# files fleetgen ships are read into plain rows (compat/shipped.py); their schemas are built for a fleet's facts file.
PYDANTIC_CLASSES_FROM = ("fleetgen.model", "pydantic")
# Defining a frozen dataclass compiles six generated methods: 0.5 to 0.9 ms each at import, against 0.1 to 0.2 ms
# for a named tuple. A plain record fleetgen builds at every validate is a NamedTuple; these are the dataclasses
# validate may still define (a cached_property needs an instance dict, a `count` or `index` field would hide a tuple
# method, a default built per instance needs default_factory, a mutable record is no tuple).
DATACLASSES_FOR_VALIDATE = 5
# typing.NamedTuple compiles each field's annotation when it is text (`from __future__ import annotations`): about 12 us a
# field, 281 such fields on validate's path once. A module whose records validate defines keeps that import out: at most these remain.
STRING_ANNOTATED_FIELDS_FOR_VALIDATE = 45


@dataclass(frozen=True)
class Imports:
    """The modules one run loaded, each with the module whose import loaded it (None: the run itself)."""

    parents: dict[str, str | None]
    loaded: frozenset[str]  # what was in sys.modules at the end: the report also lists imports that failed
    models: frozenset[str] = frozenset()  # the module of each pydantic class the run built
    dataclasses: frozenset[str] = frozenset()  # each dataclass fleetgen's loaded modules define
    plugin_scan: bool = False  # pydantic looked for plugins among the installed distributions' entry points

    @classmethod
    def parse(
        cls,
        report: str,
        loaded: frozenset[str],
        models: frozenset[str] = frozenset(),
        dataclasses: frozenset[str] = frozenset(),
        plugin_scan: bool = False,
    ) -> Imports:
        """`-X importtime` lists a module after the modules its import loaded, indented one step deeper."""
        parents: dict[str, str | None] = {}
        waiting: dict[int, list[str]] = {}  # by depth: modules whose importer comes later in the report
        for line in report.splitlines():
            if not line.startswith("import time:") or "imported package" in line:
                continue
            field = line.split("|", 2)[2]
            name = field.strip()
            depth = (len(field) - len(field.lstrip()) - 1) // 2
            for child in waiting.pop(depth + 1, []):
                parents[child] = name
            waiting.setdefault(depth, []).append(name)
            parents.setdefault(name, None)
        return cls(parents, loaded, models, dataclasses, plugin_scan)

    def chain(self, module: str) -> list[str]:
        """The imports that led to `module`, outermost first."""
        chain = [module]
        while (parent := self.parents.get(chain[-1])) is not None:
            chain.append(parent)
        return chain[::-1]

    def by_fleetgen(self) -> list[str]:
        """The modules fleetgen's own imports loaded (not the interpreter's start, which happens before fleetgen runs)."""
        return [m for m in self.parents if m in self.loaded and _within(self.chain(m)[0], ("fleetgen",))]


def _within(module: str, packages: tuple[str, ...] | set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _run(*args: str, env: dict[str, str] | None = None, tmp_path: Path, cwd: Path = REPO) -> Imports:
    """Run `fleetgen ARGS` in a fresh interpreter; the imports it made."""
    record = tmp_path / "modules.json"
    driver = (
        "import atexit, json, sys; sys.argv[0] = 'fleetgen'; "
        "models = lambda: sorted({c.__module__ for c in _subclasses(sys.modules['pydantic'].BaseModel)}) if 'pydantic' in sys.modules else []; "
        "_subclasses = lambda c: [c, *(s for d in c.__subclasses__() for s in _subclasses(d))]; "
        "dataclasses = lambda: sorted(f'{n}.{k}' for n, m in list(sys.modules.items()) if n.startswith('fleetgen') "
        "for k, v in vars(m).items() if isinstance(v, type) and v.__module__ == n and '__dataclass_fields__' in vars(v)); "
        # pydantic keeps the plugins it found in _loader._plugins, None until it has looked (read from the module's
        # namespace: asked with getattr, fleetgen's stand-in for the loader would run the real one to answer)
        "scanned = lambda: vars(sys.modules.get('pydantic.plugin._loader', sys)).get('_plugins') is not None; "
        f"atexit.register(lambda: open({str(record)!r}, 'w').write(json.dumps([sorted(sys.modules), models(), dataclasses(), scanned()]))); "
        "from fleetgen.cli import main; main()"
    )
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), **(env or {})}
    environment.pop("PYTHONPROFILEIMPORTTIME", None)
    environment.pop("PYDANTIC_DISABLE_PLUGINS", None)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", driver, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode in (0, 1), f"fleetgen {' '.join(args)}: exit {done.returncode}: {done.stderr[-2000:]}"
    modules, models, dataclasses, scanned = json.loads(record.read_text())
    return Imports.parse(done.stderr, frozenset(modules), frozenset(models), frozenset(dataclasses), scanned)


def _refused(imports: Imports, over: list[str]) -> str:
    """Each chain of imports up to the module where it left the budget (what it loaded beyond that is counted)."""
    first = [m for m in over if imports.parents.get(m) not in over]
    return "\n".join(f"{' -> '.join(imports.chain(m))} (and {sum(m in imports.chain(o) for o in over) - 1} more below it)" for m in first)


STARTS = {
    "--version": (["--version"], {}),
    "--help": (["--help"], {}),
    "a command's --help": (["upgrade", "plan", "--help"], {}),
    "completing a command": ([], {"_FLEETGEN_COMPLETE": "bash_complete", "COMP_WORDS": "fleetgen va", "COMP_CWORD": "1"}),
    "completing an option": ([], {"_FLEETGEN_COMPLETE": "bash_complete", "COMP_WORDS": "fleetgen diff --", "COMP_CWORD": "2"}),
}


@pytest.mark.parametrize("start", list(STARTS))
def test_start_up_loads_click_and_the_command_line_only(start: str, tmp_path: Path) -> None:
    args, env = STARTS[start]
    imports = _run(*args, env=env, tmp_path=tmp_path)
    loaded = imports.by_fleetgen()
    assert "fleetgen.cli" in loaded and "click" in loaded  # the report was read: the command line itself is in it
    stdlib = sys.stdlib_module_names  # with the interpreter's private helpers (_sysconfigdata...), whose names start with _
    over = [
        m
        for m in loaded
        if (m.startswith("fleetgen") and m not in START_UP and not _within(m, START_UP_PACKAGES))
        or (not m.startswith(("fleetgen", "_")) and m.split(".")[0] not in stdlib and m.split(".")[0] not in THIRD_PARTY_AT_START_UP)
        or _within(m, HEAVY_STANDARD_LIBRARY)
    ]
    assert not over, (
        f"`fleetgen {' '.join(args)}` ({start}) loads modules only some commands need; import them inside those commands:\n"
        + (_refused(imports, over))
    )


@pytest.mark.parametrize(("command", "refused"), [("validate", NOT_FOR_VALIDATE), ("check", ONLY_SOME_COMMANDS)])
def test_the_pre_commit_commands_load_only_what_they_use(command: str, refused: tuple[str, ...], tmp_path: Path) -> None:
    imports = _run(command, str(EXAMPLE), tmp_path=tmp_path)
    loaded = imports.by_fleetgen()
    assert "fleetgen.render.rendered" in loaded  # it did its work: the fleet was rendered
    over = [m for m in loaded if _within(m, refused)]
    assert not over, f"`fleetgen {command}` loads modules only other commands need; import them where those commands run:\n" + (
        _refused(imports, over)
    )
    assert "fleetgen.model.fleet" in imports.models  # the classes were read: the fleet model is among them
    built = sorted(m for m in imports.models if not _within(m, PYDANTIC_CLASSES_FROM))
    assert not built, f"`fleetgen {command}` builds pydantic classes outside the fleet model (each costs about a millisecond): {built}"
    assert not imports.plugin_scan, f"`fleetgen {command}` reads every installed distribution's entry points for pydantic plugins"
    # pydantic's own plugin loader imports importlib.metadata at its top (12 ms): fleetgen.cli.process stands in for it,
    # so the real loader never ran
    assert "importlib.metadata" not in imports.loaded, _refused(imports, ["importlib.metadata"])
    if command == "validate":
        assert "fleetgen.workflows.Checked" in imports.dataclasses  # the classes were read
        assert len(imports.dataclasses) <= DATACLASSES_FOR_VALIDATE, (
            f"`fleetgen validate` defines {len(imports.dataclasses)} dataclasses, more than {DATACLASSES_FOR_VALIDATE}: "
            f"make a plain record a NamedTuple: {sorted(imports.dataclasses)}"
        )
        stringly = _string_annotated_fields(loaded)
        assert stringly, "no NamedTuple field annotated with text was found: if none is left, set the budget to 0 and drop this"
        assert len(stringly) <= STRING_ANNOTATED_FIELDS_FOR_VALIDATE, (
            f"`fleetgen validate` defines {len(stringly)} NamedTuple fields annotated with text, more than "
            f"{STRING_ANNOTATED_FIELDS_FOR_VALIDATE}: drop `from __future__ import annotations` where they are defined: {stringly}"
        )


def _string_annotated_fields(modules: list[str]) -> list[str]:
    """module.Record.field of each NamedTuple field of these fleetgen modules whose annotation NamedTuple had to compile."""
    fields = []
    for name in modules:
        if _within(name, ("fleetgen",)):
            for value in vars(importlib.import_module(name)).values():
                if isinstance(value, type) and issubclass(value, tuple) and value.__module__ == name and hasattr(value, "_fields"):
                    annotations = value.__annotations__.items()
                    fields += [f"{name}.{value.__name__}.{field}" for field, kind in annotations if isinstance(kind, ForwardRef)]
    return fields


@pytest.mark.parametrize(
    ("command", "shortcut"), [("check", "fleetgen.output.known_trees"), ("validate", "fleetgen.validation.known_reports")]
)
def test_the_hook_after_a_render_builds_no_model(command: str, shortcut: str, tmp_path: Path) -> None:
    """The pre-commit hook after a render: check reads the tree against the ledger the cache kept (known_trees.py),
    validate prints the report kept for the same text (known_reports.py)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("fleet.yaml", "base", "clusters", "FLEET.md", ".fleetgen-ledger"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, repo / name)
    _run("render", tmp_path=tmp_path, cwd=repo)
    imports = _run(command, tmp_path=tmp_path, cwd=repo)
    loaded = imports.by_fleetgen()
    assert shortcut in loaded  # the shortcut ran
    over = [m for m in loaded if _within(m, ("fleetgen.model", "fleetgen.checks", "fleetgen.render", "pydantic"))]
    assert not over, f"`fleetgen {command}` after a render builds the model:\n" + _refused(imports, over)


def test_the_budget_names_the_chain_that_pulled_a_module_in() -> None:
    """The report's nesting is read right: children come before their importer, one step deeper."""
    report = "\n".join(
        [
            "import time: self [us] | cumulative | imported package",
            "import time:        10 |         10 |       pydantic_core",
            "import time:        10 |         20 |     pydantic",
            "import time:        10 |         30 |   fleetgen.model",
            "import time:        10 |         10 |   click",
            "import time:        10 |         50 | fleetgen.cli",
            "import time:        10 |         10 | site",
        ]
    )
    imports = Imports.parse(report, frozenset(["fleetgen.cli", "fleetgen.model", "pydantic", "pydantic_core", "click", "site"]))
    assert imports.chain("pydantic_core") == ["fleetgen.cli", "fleetgen.model", "pydantic", "pydantic_core"]
    assert imports.chain("click") == ["fleetgen.cli", "click"]
    assert sorted(imports.by_fleetgen()) == ["click", "fleetgen.cli", "fleetgen.model", "pydantic", "pydantic_core"]


def test_the_model_hands_pydantic_annotation_objects() -> None:
    """A module that defines models keeps `from __future__ import annotations` out: with it pydantic compiles and
    evaluates every field's annotation string at each start (fleetgen/model/__init__.py)."""
    import __future__

    from pydantic import BaseModel

    import fleetgen.model

    stringly = []
    for info in pkgutil.iter_modules(fleetgen.model.__path__, "fleetgen.model."):
        module = importlib.import_module(info.name)
        models = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == info.name]
        if models and getattr(module, "annotations", None) is __future__.annotations:
            stringly.append(info.name)
    assert not stringly, f"these modules define models with string annotations: {stringly}"

"""The package layout tells the architecture: stage packages, no import cycles, small modules."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "fleetgen"
MOST_LINES = 400
# Outside the stage packages: the entry points, the order of stages, and what every stage shares.
TOP_LEVEL = {"__init__.py", "__main__.py", "errors.py", "cache.py", "clock.py"}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The fleetgen modules `path` imports, anywhere in it (TYPE_CHECKING and function bodies too)."""
    known = {module_name(p) for p in PACKAGE.rglob("*.py")}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fleetgen"):
            for alias in node.names:  # `from fleetgen.x import y`: y may be a module of package x
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("fleetgen"))
    return found & known


def test_no_module_imports_itself_back() -> None:
    """No cycle between modules, counting imports inside functions and TYPE_CHECKING blocks: a
    cycle means two modules are one concept, or one of them is in the wrong stage."""
    graph = {module_name(p): imports_of(p) - {module_name(p)} for p in PACKAGE.rglob("*.py")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if target.startswith(module + ".") or module.startswith(target + "."):
                continue  # a package and its own modules (an __init__ re-exporting them)
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target] if target in path else [module, target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_modules_are_small_and_live_in_their_stage() -> None:
    too_long = {str(p.relative_to(REPO)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > MOST_LINES}
    assert too_long == {}
    flat = {p.name for p in PACKAGE.glob("*.py")} - TOP_LEVEL
    assert flat == set(), "a module of a stage belongs in that stage's package"
    for package in (p for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert docstring, f"{package.name}/__init__.py says what the package holds"


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's verdict on the fleetgen package under `root`, with the contract in `root`/pyproject.toml."""
    lint = Path(sys.executable).parent / "lint-imports"
    assert lint.exists(), "lint-imports is not installed; `pip install -e '.[test]'` brings it"
    env = {**os.environ, "PYTHONPATH": str(root)}
    config = root / "pyproject.toml"
    return subprocess.run(
        [str(lint), "--config", str(config), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, check=False
    )


def test_the_layers_contract_holds() -> None:
    done = _lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "back_edge"),
    [
        ("fleetgen/render/__init__.py", "fleetgen.workflows"),
        ("fleetgen/model/types.py", "fleetgen.checks"),
        ("fleetgen/jobs/__init__.py", "fleetgen.cli"),
    ],
)
def test_the_layers_contract_refuses_a_back_edge(tmp_path: Path, module: str, back_edge: str) -> None:
    """The contract bites: one import pointing up, added to a copy of the package, breaks it and is named."""
    shutil.copytree(PACKAGE, tmp_path / "fleetgen", ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\nimport {back_edge}  # a deliberate back-edge\n")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout
    assert "BROKEN" in done.stdout and back_edge in done.stdout

"""The CEL engine (common-expression-language), loaded without its package's interactive shell.

`import cel` runs the package's __init__, which imports its REPL (cel.cli: typer, rich,
prompt_toolkit) before the compiled engine: 90 ms of every fleetgen command, for a shell fleetgen
never starts. Here the compiled module (`cel.cel`) and `cel.stdlib` are loaded as submodules of a
package object whose __init__ is not run; the package entry is then dropped, so a later `import
cel` elsewhere still runs the real __init__ and gets the whole API (`cel.compile`, `cel.stdlib`),
though not the attribute `cel.cel`: write `import cel.cel` for the compiled module itself.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING

__all__ = ["engine", "stdlib"]


def _load() -> tuple[ModuleType, ModuleType]:
    whole = sys.modules.get("cel")
    if whole is not None and hasattr(whole, "compile"):
        return whole, whole.stdlib  # already imported the usual way
    spec = importlib.util.find_spec("cel")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("common-expression-language is not installed (pip install common-expression-language)")
    sys.modules["cel"] = importlib.util.module_from_spec(spec)  # the package, its __init__ not run
    try:
        return importlib.import_module("cel.cel"), importlib.import_module("cel.stdlib")
    finally:
        del sys.modules["cel"]


if TYPE_CHECKING:  # the package's own type stubs
    from cel import cel as engine
    from cel import stdlib
else:
    engine, stdlib = _load()

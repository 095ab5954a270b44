"""How a fleetgen process starts and ends: the interpreter settings a short command-line run wants.

A command is one short process. Three costs of a general-purpose interpreter buy it nothing, and each is
measured in benchmarks/README.md: the cycle collector, pydantic's search for plugins, and the teardown
after the answer is written.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import types
from typing import Any, NoReturn

_PLUGIN_LOADER = "pydantic.plugin._loader"
_PLUGINS_OFF = ("__all__", "1", "true")  # the values pydantic reads as "no plugins at all"


def start() -> None:
    """Settings for the whole run, before any command imports its stages."""
    # One command builds a large tree of acyclic dicts and lists and exits. Reference counting frees
    # all of it; the cyclic collector finds nothing to free, yet it rescans every live object again
    # and again as the fleet grows. On the benchmark fleet it took 30-40% of load + validate + render,
    # and more on the doubled fleet. Peak memory was the same with it off (benchmarks/bench.py).
    gc.disable()
    # Before it builds its first class, pydantic looks for plugins among the entry points of every
    # installed distribution: 6 ms of each command with fleetgen's test and docs extras installed
    # (160 distributions), for plugins (observability hooks) fleetgen's own models have no use for.
    # A value the user set is kept.
    if os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__") in _PLUGINS_OFF:
        sys.modules.setdefault(_PLUGIN_LOADER, _NoPluginLoader(_PLUGIN_LOADER))


class _NoPluginLoader(types.ModuleType):
    """pydantic's plugin loader where plugins are off: `get_plugins()` finds none, as the real one then does.

    The real module imports importlib.metadata (email, zipfile, csv: about 12 ms, 3% of a cold validate
    of the example) at its top, to look for entry points it is told not to read. Any other name asked of this
    stand-in runs the real module's code into it first, so a pydantic that wants more of its loader still
    gets all of it."""

    def get_plugins(self) -> tuple[()]:
        return ()

    def __getattr__(self, name: str) -> Any:
        # A module's own attributes (__path__, __file__...), which the import system asks for, and a name the real
        # module, once run, lacks too
        if name.startswith("__") or "__file__" in vars(self):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        import importlib.machinery  # the rare path: pydantic asks the loader for more than get_plugins

        package = importlib.import_module(self.__name__.rpartition(".")[0])
        spec = importlib.machinery.PathFinder.find_spec(self.__name__, package.__path__)
        if spec is None or spec.loader is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        self.__spec__, self.__loader__, self.__package__, self.__file__ = spec, spec.loader, spec.parent, spec.origin
        spec.loader.exec_module(self)
        return getattr(self, name)


def finish(code: int | str | None) -> NoReturn:
    """End the process with `code` once its output is written, without tearing the interpreter down.

    Python's exit frees every object and module one by one and runs a last full collection: 35 to 48 ms
    after a validate of the example (a tenth of it), for memory the operating system takes back at once.
    Everything fleetgen writes is closed where it is written; standard output and error are flushed here
    and the exit handlers run as usual. Where a thread still runs, or a stream cannot be flushed (a
    closed pipe), the exit is Python's own, with its usual reports."""
    if not isinstance(code, int) and code is not None:  # a message: Python prints it and exits 1
        raise SystemExit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # a closed pipe or stream, or none at all
        raise SystemExit(code) from None
    threading = sys.modules.get("threading")  # not imported: no thread was started with it
    if threading is not None and threading.active_count() > 1:
        raise SystemExit(code)
    atexit._run_exitfuncs()  # what the interpreter's own exit runs first; a private name, stable since Python 3.0
    try:
        sys.stdout.flush()  # what the exit handlers printed
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # a closed pipe or stream, or none at all
        raise SystemExit(code) from None
    os._exit(code or 0)

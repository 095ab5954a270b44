"""The fleetgen process (fleetgen/cli/process.py): its exit skips the interpreter's teardown and loses nothing, and
its stand-in for pydantic's plugin loader finds no plugins, as the real one does when told so, and is the real one for
anything else.

Each case runs a fresh interpreter: the exit ends the process, and the stand-in is installed in sys.modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE


def _python(code: str, *args: str, env: dict[str, str] | None = None, stdout: int = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("PYDANTIC_DISABLE_PLUGINS", "PYTHONUNBUFFERED")}
    environment.update(env or {})  # standard output buffered, as a command's usually is
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=environment, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120
    )


def _finishing(body: str, code: str) -> str:
    return f"import atexit, sys\nfrom fleetgen.cli import process\n{body}\nprocess.finish({code})"


@pytest.mark.parametrize(("code", "status"), [("0", 0), ("1", 1), ("2", 2), ("None", 0)])
def test_the_exit_keeps_the_status_the_output_and_the_exit_handlers(code: str, status: int) -> None:
    body = (
        "sys.stdout.write('answer ' * 5000)\n"  # more than a buffer's worth, and a last part still buffered
        "sys.stderr.write('a warning')\n"
        "atexit.register(lambda: print('handler ran'))\n"
        "print('unflushed line', end='')"
    )
    done = _python(_finishing(body, code))
    assert done.returncode == status
    assert done.stdout == "answer " * 5000 + "unflushed line" + "handler ran\n"
    assert done.stderr == "a warning"


def test_the_exit_skips_the_teardown() -> None:
    """What the fast exit saves, seen from outside: an object the teardown would free is never finalized, where
    Python's own exit finalizes it."""
    body = "class Kept:\n    def __del__(self):\n        print('torn down')\nkept = Kept()\nprint('answer')"
    ours, pythons = (
        _python(f"import sys\nfrom fleetgen.cli import process\n{body}\n{end}") for end in ("process.finish(0)", "sys.exit(0)")
    )
    assert (ours.returncode, ours.stdout) == (0, "answer\n")
    assert (pythons.returncode, pythons.stdout) == (0, "answer\ntorn down\n")


def test_a_message_for_an_exit_code_is_pythons_own_exit() -> None:
    done = _python(_finishing("", "'fleetgen: gone'"))
    assert (done.returncode, done.stderr) == (1, "fleetgen: gone\n")


def test_a_running_thread_is_waited_for_as_python_does() -> None:
    body = "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()"
    done = _python(_finishing(body, "0"))
    assert (done.returncode, done.stdout) == (0, "thread done\n")


def test_a_closed_pipe_ends_as_python_ends_it() -> None:
    """A reader that went away (`fleetgen ... | head -1`): the flush fails and Python's own exit reports it."""
    ends = []
    for finish in ("process.finish(0)", "sys.exit(0)"):  # fleetgen's exit, and Python's
        reader, writer = os.pipe()
        os.close(reader)
        try:
            code = f"import sys\nfrom fleetgen.cli import process\nprint('x' * 100)\n{finish}"
            ends.append(_python(code, stdout=writer))
        finally:
            os.close(writer)
    assert ends[0].returncode == ends[1].returncode == 120  # CPython's status when standard output cannot be flushed
    assert "BrokenPipeError" in ends[0].stderr and ends[0].stderr == ends[1].stderr


def test_a_command_exits_with_its_own_code_and_output(tmp_path: Path) -> None:
    """The installed command line, through main(): findings exit 1, the report intact."""
    broken = tmp_path / "fleet.yaml"
    broken.write_text(EXAMPLE.read_text().replace("gpusPerNode: 8", "gpusPerNode: eight", 1))
    main = "from fleetgen.cli import main; main()"
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    kept = "class Kept:\n    def __del__(self):\n        print('torn down')\nkept = Kept()\n"  # finalized only by a teardown
    done = _python(kept + main, "validate", str(EXAMPLE), env=env)
    assert done.returncode == 0 and "valid (4 clusters, 3 teams" in done.stdout
    assert "torn down" not in done.stdout  # validate took the fast exit: no thread of its own was left running
    done = _python(main, "validate", str(broken), env=env)
    assert done.returncode == 1 and "gpusPerNode: Input should be a valid integer" in done.stdout + done.stderr
    done = _python(main, "validate", str(tmp_path / "missing.yaml"), env=env)
    assert done.returncode == 2


STAND_IN = "import sys\nfrom fleetgen.cli import process\nprocess.start()\nfrom pydantic.plugin import _loader as loader\n"


def test_the_plugin_loader_stand_in_finds_no_plugins_and_reads_no_distributions() -> None:
    code = STAND_IN + (
        "from pydantic import BaseModel\n"
        "class A(BaseModel):\n    x: int\n"
        "print(type(loader).__name__, list(loader.get_plugins()), A(x=1).x, 'importlib.metadata' in sys.modules)"
    )
    assert _python(code).stdout.split() == ["_NoPluginLoader", "[]", "1", "False"]


def test_the_plugin_loader_stand_in_is_the_real_module_for_any_other_name() -> None:
    code = STAND_IN + (
        "print(loader.PYDANTIC_ENTRY_POINT_GROUP, list(loader.get_plugins()), loader.__file__.endswith('_loader.py'))\n"
        "print(hasattr(loader, 'no_such_name'))"
    )
    assert _python(code).stdout.split() == ["pydantic", "[]", "True", "False"]


def test_the_plugin_loader_stand_in_asked_before_pydantic_is_imported_imports_it() -> None:
    code = "import sys\nfrom fleetgen.cli import process\nprocess.start()\nprint(sys.modules['pydantic.plugin._loader'].PYDANTIC_ENTRY_POINT_GROUP)"
    assert _python(code).stdout.split() == ["pydantic"]


@pytest.mark.parametrize("value", ["", "logfire"])
def test_plugins_the_user_asks_for_are_searched_by_pydantic_itself(value: str) -> None:
    code = STAND_IN + "print(type(loader).__name__)"
    assert _python(code, env={"PYDANTIC_DISABLE_PLUGINS": value}).stdout.split() == ["module"]

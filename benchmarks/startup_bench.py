"""Times each command's start against importing fleetgen's own dependencies, side by side in one run.

    python benchmarks/startup_bench.py              # 7 rounds
    python benchmarks/startup_bench.py --rounds 15

The yardstick is a bare `python -c "import click, pydantic, ruamel.yaml, jinja2"`: what any Python
tool built on these libraries pays before it does anything. Each round runs every case once, in a
new order each round, so a busy moment on a shared machine falls on all of them alike; the figure is
each case's median over the rounds and its ratio to the yardstick's median. The cases:

- `--version`, `--help`, a completion request (bash, `fleetgen va<TAB>`): start-up alone.
- `validate` of the shipped example with a cold cache, as CI and a fresh clone run it.
- the pre-commit hook (.pre-commit-hooks.yaml: `validate`, then `check`) after a one-line change of
  the example's fleet.yaml that was rendered, with the cache the previous commit left, as on a
  developer's machine.

Every run is the installed `fleetgen` command beside this interpreter, with Python's bytecode cache
written as an installed package has it.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FLEETGEN = str(BIN / "fleetgen") if (BIN / "fleetgen").exists() else shutil.which("fleetgen") or "fleetgen"
BARE = [sys.executable, "-c", "import click, pydantic, ruamel.yaml, jinja2"]
EXAMPLE_FILES = ["fleet.yaml", "base", "clusters", "FLEET.md", ".fleetgen-ledger"]


def timed(command: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - started
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.decode()[-2000:]}")
    return seconds


def copy_example(target: Path) -> Path:
    target.mkdir(parents=True)
    for name in EXAMPLE_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name)
        else:
            shutil.copy2(source, target / name)
    return target


def one_line_change(fleet: Path, round_number: int) -> None:
    """A team's pods quota on the example, a different value each round (so each round's text is new to the cache)."""
    text = fleet.read_text()
    marker = "pods: "
    start = text.index(marker) + len(marker)
    end = text.index("\n", start)
    fleet.write_text(text[:start] + str(100 + round_number) + text[end:])


def cases(work: Path, env: dict[str, str]) -> dict[str, Callable[[int], float]]:
    example = copy_example(work / "example")
    hook = copy_example(work / "hook")
    hook_env = {**env, "XDG_CACHE_HOME": str(work / "hook-cache")}
    subprocess.run([FLEETGEN, "render"], cwd=hook, env=hook_env, check=True, capture_output=True)  # the previous commit's cache

    def cold_validate(n: int) -> float:
        cold = {**env, "XDG_CACHE_HOME": str(work / f"cold-{n}")}
        return timed([FLEETGEN, "validate"], example, cold)

    def pre_commit(n: int) -> float:
        one_line_change(hook / "fleet.yaml", n)
        subprocess.run([FLEETGEN, "render"], cwd=hook, env=hook_env, check=True, capture_output=True)  # the developer's render
        return timed([FLEETGEN, "validate"], hook, hook_env) + timed([FLEETGEN, "check"], hook, hook_env)

    completion = {**env, "_FLEETGEN_COMPLETE": "bash_complete", "COMP_WORDS": "fleetgen va", "COMP_CWORD": "1"}
    return {
        "bare import": lambda n: timed(BARE, work, env),
        "--version": lambda n: timed([FLEETGEN, "--version"], work, env),
        "--help": lambda n: timed([FLEETGEN, "--help"], work, env),
        "completion": lambda n: timed([FLEETGEN], work, completion),
        "validate (example, cold cache)": cold_validate,
        "pre-commit hook (one-line change)": pre_commit,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME")}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        table = cases(work, env)
        for run in table.values():  # once untimed: bytecode written, files in the page cache
            run(0)
        times: dict[str, list[float]] = {name: [] for name in table}
        order = list(table)
        for n in range(1, rounds + 1):
            random.Random(n).shuffle(order)
            for name in order:
                times[name].append(table[name](n))
    bare = statistics.median(times["bare import"])
    print(f"{rounds} rounds, medians; ratio to `python -c 'import click, pydantic, ruamel.yaml, jinja2'`")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:36} {median:6.3f} s  {median / bare:5.2f}x  (min {min(values):.3f}, max {max(values):.3f})")


if __name__ == "__main__":
    main()

"""Times fleetgen on synthetic fleets: load+check, render to bytes, first write, no-op re-render.

    python benchmarks/bench.py                      # 100 clusters, 400 teams, 10 clusters a team
    python benchmarks/bench.py --clusters 1000 --teams 2000 --clusters-per-team 10

Prints one line per fleet size, then the time ratio of the doubled fleet (ratios are what to
compare on shared machines). Peak memory is the process's maximum resident set.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import synthetic_fleet  # noqa: E402

from fleetgen.load import load_fleet_text  # noqa: E402
from fleetgen.render import render_files  # noqa: E402
from fleetgen.tree import Tree  # noqa: E402


def measure(clusters: int, teams: int, per_team: int) -> dict[str, float]:
    raw = synthetic_fleet(clusters, teams, per_team).encode()
    started = time.perf_counter()
    fleet = load_fleet_text(raw).fleet
    loaded = time.perf_counter()
    files = render_files(fleet)
    rendered = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        Tree(out).write(files)
        written = time.perf_counter()
        Tree(out).write(render_files(load_fleet_text(raw).fleet))
        again = time.perf_counter()
    return {
        "files": len(files),
        "load": loaded - started,
        "render": rendered - loaded,
        "write": written - rendered,
        "load+render+write": written - started,
        "no-op re-render": again - written,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--teams", type=int, default=400)
    parser.add_argument("--clusters-per-team", type=int, default=10)
    args = parser.parse_args()
    results = []
    for factor in (1, 2):
        size = (args.clusters * factor, args.teams * factor, args.clusters_per_team)
        result = measure(*size)
        results.append(result)
        timings = "  ".join(f"{k} {v:.2f}s" for k, v in result.items() if k != "files")
        print(f"{size[0]} clusters, {size[1]} teams x {size[2]}: {int(result['files'])} files  {timings}")
    ratio = results[1]["load+render+write"] / results[0]["load+render+write"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"doubled fleet / fleet time ratio: {ratio:.2f}  peak memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()

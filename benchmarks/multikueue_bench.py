"""MultiKueue's cost: the same synthetic fleet with and without a multiKueue section, validated and rendered.

    python benchmarks/multikueue_bench.py            # 100 clusters (one manager, 99 workers), 400 teams, 10 clusters a team

Both fleets hold the same team placements (the manager's teams are listed on their queue's workers), so the
difference is MultiKueue's own: the section, its checks, the manager's and the workers' objects and their
validation. Runs the pair `--runs` times, alternating, and prints each time and the ratio of the medians. Times are
CPU seconds of this process (time.process_time): on a shared machine wall-clock time measures the neighbours.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import synthetic_fleet

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.render.rendered import Rendered
from fleetgen.validation.rendered_objects import Schemas, validate_rendered

STEP = "load+validate+render"


def measure_text(raw: bytes) -> dict[str, float]:
    """CPU seconds of each step, as bench.py runs them (one render shared by validation and the files)."""
    started = time.process_time()
    fleet = load_fleet_text(raw).fleet
    loaded = time.process_time()
    render = Rendered(fleet)
    problems = [f for f in validate_rendered(render, Schemas()) if f.severity is not Severity.NOTE]
    validated = time.process_time()
    assert not problems, problems[:3]
    files = render.files
    rendered = time.process_time()
    return {"files": len(files), "validate": validated - loaded, STEP: rendered - started}


def main() -> None:
    gc.disable()  # as the fleetgen command does
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--teams", type=int, default=400)
    parser.add_argument("--clusters-per-team", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.runs):
        for on in (False, True):
            result = measure_text(synthetic_fleet(args.clusters, args.teams, args.clusters_per_team, on).encode())
            times[on].append(result[STEP])
            gc.collect()
            label = "with MultiKueue" if on else "without"
            print(f"{label:>16}: {int(result['files'])} files, {STEP} {result[STEP]:.2f}s, validate {result['validate']:.2f}s")
    ratio = statistics.median(times[True]) / statistics.median(times[False])
    print(f"with / without MultiKueue, median {STEP}: {ratio:.3f}")


if __name__ == "__main__":
    main()

"""Times `fleetgen forecast` on the benchmark fleet's pools: 100 clusters, 90 days of hourly samples.

    python benchmarks/forecast_bench.py                 # 100 clusters, 90 days
    python benchmarks/forecast_bench.py --clusters 200 --days 180

Prints the seconds of the forecast itself (reading the answer, fitting, printing JSON), of the whole
command in a fresh process (which also loads and checks fleet.yaml), and that process's peak memory,
for the history as asked and for one twice as long: memory should barely move, as each series is
read, folded into hourly sums and dropped.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import synthetic_fleet
from synth_history import fleet_pool_series, write_answer

from fleetgen.checks.load import load_fleet_text
from fleetgen.forecast.build import Answer, build_forecast
from fleetgen.forecast.output import forecast_json


def measure(folder: Path, clusters: int, days: int) -> dict[str, float]:
    fleet_text = synthetic_fleet(clusters, 400, 10)
    (folder / "fleet.yaml").write_text(fleet_text)
    history = folder / f"history-{days}.json"
    with history.open("w") as out:
        write_answer(out, fleet_pool_series(clusters, days))
    fleet = load_fleet_text(fleet_text.encode()).fleet
    started = time.perf_counter()
    with history.open() as stream:
        forecast_json(build_forecast(fleet, [Answer(history.name, stream)], 13))
    stage = time.perf_counter() - started
    command = [sys.executable, "-m", "fleetgen", "forecast", "--history", history.name, "--format", "json"]
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    whole = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    return {"mb": history.stat().st_size / 1e6, "stage": stage, "whole": whole, "peak": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--days", type=int, default=90)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for days in (args.days, args.days * 2):
            m = measure(Path(tmp), args.clusters, days)
            print(
                f"{args.clusters} clusters x 2 pools, {days} days hourly ({m['mb']:.1f} MB): forecast {m['stage']:.2f} s, "
                f"whole command {m['whole']:.2f} s, peak memory {m['peak']:.0f} MB"
            )


if __name__ == "__main__":
    main()

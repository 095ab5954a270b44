"""Synthetic GPU allocation history, shaped as Prometheus answers a range query, for the forecast's benchmark and tests.

python benchmarks/synth_history.py --clusters 100 --days 90 > gpu-history.json   # the pools of synth.py's fleet

A series is a straight line through `now_gpus` at the end, growing `per_week`, plus a weekly rhythm
(a sine of period one week) and Gaussian noise from a fixed seed: its true exhaustion is known.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import IO

import numpy as np
import numpy.typing as npt

HOUR = 3600
END = 1_790_000_000 // HOUR * HOUR  # a fixed now (2026-09-21), so the same arguments give the same file


def gpus_in_use(
    hours: int, now_gpus: float, per_week: float, weekly: float = 0.0, noise: float = 0.0, seed: int = 0
) -> npt.NDArray[np.float64]:
    """Hourly values, oldest first, the last at the end. GPUs in use are never negative: before the line reaches 0
    there is no sample (NaN, which the answer writes as Prometheus does), and rhythm and noise stop at 0."""
    back = np.arange(hours - 1, -1, -1, dtype=np.float64)  # hours before the end
    line = now_gpus - per_week * back / 168
    rhythm = weekly * np.sin(2 * np.pi * back / 168)
    scatter = np.random.default_rng(seed).normal(0.0, noise, hours) if noise else 0.0
    values = np.maximum(line + rhythm + scatter, 0.0)
    return np.asarray(np.where(line < 0, np.nan, values), dtype=np.float64)


def hours_to_run_out(capacity: float, now_gpus: float, per_week: float) -> float:
    """When the line (without rhythm or noise) meets capacity, in hours after the end."""
    return (capacity - now_gpus) / per_week * 168


def write_answer(out: IO[str], series: Iterable[tuple[dict[str, str], npt.NDArray[np.float64]]], end: int = END) -> None:
    """A range-query answer, written one series at a time (a large one is never built whole)."""
    out.write('{"status":"success","data":{"resultType":"matrix","result":[')
    for n, (labels, values) in enumerate(series):
        start = end - (values.size - 1) * HOUR
        samples = ",".join(f'[{start + i * HOUR},"{v:.4g}"]'.replace('"nan"', '"NaN"') for i, v in enumerate(values.tolist()))
        out.write(("," if n else "") + f'{{"metric":{json.dumps(labels)},"values":[{samples}]}}')
    out.write("]}}")


def answer_text(series: Iterable[tuple[dict[str, str], npt.NDArray[np.float64]]], end: int = END) -> str:
    import io

    buffer = io.StringIO()
    write_answer(buffer, series, end)
    return buffer.getvalue()


def fleet_pool_series(clusters: int, days: int) -> Iterable[tuple[dict[str, str], npt.NDArray[np.float64]]]:
    """The spot and on-demand pools of synth.py's fleet of `clusters` clusters, each growing at its own rate."""
    for i in range(clusters):
        name = f"c{i:04d}-{'dev' if i % 10 == 0 else 'prod'}"
        for k, pool in enumerate(("a100-spot", "a100-ondemand")):
            values = gpus_in_use(days * 24, 4 + (i % 7), 0.2 + 0.1 * (i % 5), weekly=2.0, noise=0.5, seed=i * 2 + k)
            yield {"cluster": name, "flavor": pool, "resource": "nvidia.com/gpu"}, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--days", type=int, default=90)
    args = parser.parse_args()
    write_answer(sys.stdout, fleet_pool_series(args.clusters, args.days))


if __name__ == "__main__":
    main()

"""A weekly linear trend and when it reaches capacity, with a 90% interval.

Hourly GPUs in use become weekly means over whole weeks ending at the forecast's now: a week's mean
cancels the weekly rhythm (quiet weekends, nightly batches), so what is left is the trend the
operations chapter asks for ("simple linear regression on weekly GPU utilization trends"). A week
with under 90% of its hours reported is left out rather than fitted low.

The least-squares line over those weeks gives the expected date (where it meets capacity). The
interval is where the 90% prediction band of a week's mean meets capacity: the upper edge gives the
earliest date to plan for, the lower the latest. The band widens with the residual scatter and with
the distance from the data, so a noisy or short history gives a wide interval, never a false date.
Student's t at 95% one-sided (90% two-sided), from the standard table (NIST/SEMATECH e-Handbook of
Statistical Methods, section 1.3.6.7.2, "Critical Values of the Student's t Distribution").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from fleetgen.forecast.history import WEEK_HOURS, Hourly

CONFIDENCE = 0.90
MIN_WEEKS = 3  # two points always fit a line; a third gives the first measure of scatter
MIN_COVERAGE = 0.9  # of a week's hours reported
HORIZON_WEEKS = 104  # two years: beyond it a linear trend says nothing worth a date
_T95: tuple[float, ...] = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761)
_T95 += (1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697)
_T95_LARGE = ((40, 1.684), (60, 1.671), (120, 1.658))
Status = Literal["exhausted", "runs-out", "no-growth", "too-little-history"]


def t95(df: int) -> float:
    """Student's t at 95% one-sided for `df` degrees of freedom (the nearest smaller tabled row above 30)."""
    if df <= len(_T95):
        return _T95[df - 1]
    # 31 to 39 take the row of 30, a little wider than the truth; 120 and more take 1.658, not the normal 1.645
    return next((t for limit, t in reversed(_T95_LARGE) if df >= limit), _T95[-1])


@dataclass(frozen=True)
class Weekly:
    """Weekly means: `weeks` are the middles of the weeks in weeks from now (-0.5 is the last week), `gpus` their means."""

    weeks: npt.NDArray[np.float64]
    gpus: npt.NDArray[np.float64]


def weekly_means(hourly: Hourly, as_of: int, lookback_weeks: int) -> Weekly:
    """The means of whole weeks ending at hour `as_of`, newest last; weeks under 90% reported are left out."""
    weeks, means = [], []
    for back in range(lookback_weeks - 1, -1, -1):
        end = as_of - back * WEEK_HOURS  # inclusive
        low, high = max(end - WEEK_HOURS + 1 - hourly.first, 0), min(end - hourly.first + 1, hourly.sums.size)
        if high - low <= 0:
            continue
        seen = hourly.seen[low:high]
        if seen.sum() < MIN_COVERAGE * WEEK_HOURS:
            continue
        weeks.append(-back - 0.5)
        means.append(float(hourly.sums[low:high][seen].mean()))
    return Weekly(np.array(weeks), np.array(means))


@dataclass(frozen=True)
class Outlook:
    """When a subject's GPUs in use reach its capacity, in days from now (None: not within two years)."""

    status: Status
    last_week: float | None  # the mean of the newest week fitted
    growth: float | None  # GPUs a week
    expected: float | None
    earliest: float | None
    latest: float | None
    line: tuple[float, float] | None = None  # the fitted level now and growth a week, for the chart
    band: float | None = None  # t x residual scatter: the chart's band at week x is band * sqrt(1 + 1/n + (x - mean)^2 / sxx)
    spread: tuple[int, float, float] = (0, 0.0, 1.0)  # n, mean week, sxx

    def within(self, days: float) -> bool:
        """Whether the subject may run out inside `days`: already out, or the earliest date of the interval before then."""
        return self.status == "exhausted" or (self.earliest is not None and self.earliest <= days)

    def band_at(self, week: float) -> float:
        n, mean, sxx = self.spread
        return (self.band or 0.0) * math.sqrt(1 + 1 / n + (week - mean) ** 2 / sxx) if n else 0.0


def outlook(weekly: Weekly, capacity: float) -> Outlook:
    n = weekly.weeks.size
    last = float(weekly.gpus[-1]) if n else None
    if n < MIN_WEEKS:
        return Outlook("too-little-history", last, None, None, None, None)
    x, y = weekly.weeks, weekly.gpus
    mean_x = float(x.mean())
    sxx = float(((x - mean_x) ** 2).sum())
    slope = float(((x - mean_x) * (y - y.mean())).sum() / sxx)
    level = float(y.mean() + slope * (0 - mean_x))  # the line at now
    residuals = y - (level + slope * x)
    scatter = math.sqrt(float((residuals**2).sum()) / (n - 2)) if n > 2 else 0.0
    band = t95(n - 2) * scatter
    fitted = ((level, slope), band, (n, mean_x, sxx))
    if (last is not None and last >= capacity) or level >= capacity:  # the last week, or the trend now, at capacity
        return Outlook("exhausted", last, slope, 0.0, 0.0, 0.0, *fitted)
    days = np.arange(0, HORIZON_WEEKS * 7 + 1, dtype=np.float64)
    week = days / 7
    centre = level + slope * week
    half = band * np.sqrt(1 + 1 / n + (week - mean_x) ** 2 / sxx)
    earliest, latest = _first(days, centre + half - capacity), _first(days, centre - half - capacity)
    if slope <= 0:
        return Outlook("no-growth", last, slope, None, earliest, None, *fitted)
    expected = max((capacity - level) / slope * 7, 0.0)
    return Outlook("runs-out", last, slope, expected if expected <= HORIZON_WEEKS * 7 else None, earliest, latest, *fitted)


def _first(days: npt.NDArray[np.float64], above: npt.NDArray[np.float64]) -> float | None:
    """The first day `above` (a curve minus capacity) reaches 0, between the days of the grid by linear interpolation."""
    hits = np.flatnonzero(above >= 0)
    if not hits.size:
        return None
    at = int(hits[0])
    if at == 0:
        return 0.0
    before, after = float(above[at - 1]), float(above[at])
    return float(days[at - 1]) + before / (before - after)

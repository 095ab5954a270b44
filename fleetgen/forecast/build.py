"""The forecast of a fleet: every subject with history, its weekly means, and when it runs out."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from fleetgen.forecast.history import HOUR, WEEK_HOURS, History, Subject, SubjectIndex
from fleetgen.forecast.range_answer import Series, read_answer
from fleetgen.forecast.trend import Outlook, Weekly, outlook, weekly_means
from fleetgen.model import Fleet


@dataclass(frozen=True)
class Answer:
    """One range-query answer to read: its name in errors, its text, and the cluster its series are about when they carry no
    `cluster` label (a cluster's own Prometheus)."""

    name: str
    stream: IO[str]
    cluster: str | None = None


@dataclass(frozen=True)
class Row:
    subject: Subject
    weekly: Weekly
    outlook: Outlook


@dataclass(frozen=True)
class Forecast:
    fleet: str
    as_of: datetime | None  # the last hour of history: the forecast's now
    lead_time_weeks: int
    lookback_weeks: int
    rows: tuple[Row, ...]
    without_history: tuple[Subject, ...]
    unknown: tuple[str, ...]  # cluster/pool and cluster/namespace in the history that fleet.yaml does not have
    ignored: int  # series of another resource or a hard limit, or naming no cluster

    @property
    def flagged(self) -> tuple[Row, ...]:
        """The rows that may run out inside the lead time."""
        return tuple(r for r in self.rows if r.outlook.within(self.lead_time_weeks * 7))


def _labelled(series: Series, cluster: str | None) -> dict[str, str]:
    return series.labels if cluster is None or "cluster" in series.labels else {**series.labels, "cluster": cluster}


def build_forecast(fleet: Fleet, answers: Iterable[Answer], lookback_weeks: int) -> Forecast:
    index = SubjectIndex(fleet)
    history = History(lookback_hours=lookback_weeks * WEEK_HOURS)
    for answer in answers:
        for series in read_answer(answer.stream, answer.name):
            history.add(series, index.of(_labelled(series, answer.cluster), history))
    as_of = history.as_of
    subjects = history.with_cluster_totals(index)
    rows = []
    if as_of is not None:
        for subject in sorted(subjects):
            weekly = weekly_means(subjects[subject], as_of, lookback_weeks)
            rows.append(Row(subject, weekly, outlook(weekly, subject.capacity)))
    known = {*index.clusters.values(), *index.pools.values(), *index.teams.values()}
    return Forecast(
        fleet=fleet.metadata.name,
        as_of=None if as_of is None else datetime.fromtimestamp((as_of + 1) * HOUR, UTC),
        lead_time_weeks=fleet.capacity.lead_time_weeks,
        lookback_weeks=lookback_weeks,
        rows=tuple(rows),
        without_history=tuple(sorted(known - set(subjects))),  # utilisation is optional: never listed as missing
        unknown=tuple(sorted(history.unknown)),
        ignored=history.ignored,
    )

"""`fleetgen forecast`: synthetic GPU allocation history with a known exhaustion date must land on it.

Each series is a line through `now` GPUs at the end of the history, growing `per_week`, plus a weekly
rhythm and noise (benchmarks/synth_history.py), for a subject of the example fleet: node pool
a100-spot on training-eastus (16 GPUs) unless said otherwise. Tolerances: a noiseless series (linear,
weekly-seasonal) within one day of the true date; a noisy one's 90% interval holds the true date for
at least 15 of 20 seeds, and its expected date lies within three weeks.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterable
from datetime import timedelta

import numpy as np
import numpy.typing as npt
import pytest
from conftest import EXAMPLE, REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet
from fleetgen.errors import InputError
from fleetgen.forecast.build import Answer, Forecast, Row, build_forecast
from fleetgen.forecast.history import WEEK_HOURS, History, Subject
from fleetgen.forecast.range_answer import Series, read_answer
from fleetgen.model import Fleet

sys.path.insert(0, str(REPO / "benchmarks"))
from synth_history import END, HOUR, answer_text, gpus_in_use, hours_to_run_out

FLEET = load_fleet(EXAMPLE).fleet
POOL = {"cluster": "training-eastus", "flavor": "a100-spot", "resource": "nvidia.com/gpu"}
DAYS = 90
Labelled = tuple[dict[str, str], npt.NDArray[np.float64]]


def forecast_of(series: Iterable[Labelled], fleet: Fleet = FLEET, lookback: int = 13) -> Forecast:
    return build_forecast(fleet, [Answer("history.json", io.StringIO(answer_text(series)))], lookback)


def forecast_of_text(text: str) -> Forecast:
    return build_forecast(FLEET, [Answer("history.json", io.StringIO(text))], 13)


def row_of(forecast: Forecast, kind: str = "pool", name: str = "a100-spot") -> Row:
    return next(r for r in forecast.rows if r.subject.kind == kind and r.subject.name == name)


def true_days(capacity: float, now: float, per_week: float) -> float:
    """Days from the forecast's now (the end of the last hour) to where the line meets capacity."""
    return (hours_to_run_out(capacity, now, per_week) - 1) / 24


@settings(deadline=None)
@given(per_week=st.floats(0.1, 1), weekly=st.floats(0, 1.5), data=st.data())
def test_a_linear_or_weekly_seasonal_series_runs_out_on_its_true_date(per_week: float, weekly: float, data: st.DataObject) -> None:
    """Whole weeks cancel a weekly rhythm: the date is the line's, within a day, and the interval is tight around it.
    The history is 13 weeks of GPUs in use of a pool of 16, so never below 0 there: that bounds the growth."""
    now = data.draw(st.floats(per_week * 13 + weekly, 15.5), label="now")
    forecast = forecast_of([(POOL, gpus_in_use(DAYS * 24, now, per_week, weekly=weekly))])
    outlook = row_of(forecast).outlook
    truth = true_days(16, now, per_week)
    assert outlook.status == "runs-out"
    if truth > 104 * 7:
        assert outlook.expected is None
        return
    assert outlook.expected == pytest.approx(truth, abs=1.0)
    assert outlook.earliest is not None and outlook.latest is not None
    assert outlook.earliest - 0.01 <= outlook.expected <= outlook.latest + 0.01
    assert outlook.latest - outlook.earliest <= 1
    assert outlook.within(forecast.lead_time_weeks * 7) == (outlook.earliest <= 12 * 7)


def test_noisy_series_hold_the_true_date_inside_their_interval() -> None:
    now, per_week, truth = 12.0, 0.6, true_days(16, 12.0, 0.6)  # almost seven weeks out
    held, errors = 0, []
    for seed in range(20):
        outlook = row_of(forecast_of([(POOL, gpus_in_use(DAYS * 24, now, per_week, weekly=2, noise=2.0, seed=seed))])).outlook
        assert outlook.expected is not None and outlook.earliest is not None and outlook.latest is not None
        assert outlook.earliest <= outlook.expected <= outlook.latest
        held += outlook.earliest <= truth <= outlook.latest
        errors.append(abs(outlook.expected - truth))
    assert held >= 15, f"the 90% interval held the truth {held} times in 20"
    assert max(errors) <= 21


@pytest.mark.parametrize("noise", [0.0, 1.0])
def test_a_flat_series_never_runs_out(noise: float) -> None:
    forecast = forecast_of([(POOL, gpus_in_use(DAYS * 24, 6, 0.0, weekly=2, noise=noise, seed=3))])
    outlook = row_of(forecast).outlook
    assert outlook.status in ("no-growth", "runs-out")  # noise may tilt the line a little either way
    assert outlook.expected is None  # but never within two years
    assert not outlook.within(forecast.lead_time_weeks * 7) and forecast.flagged == ()


def test_a_pool_at_capacity_is_flagged_now() -> None:
    forecast = forecast_of([(POOL, gpus_in_use(DAYS * 24, 16, 0.5))])
    outlook = row_of(forecast).outlook
    assert outlook.status == "exhausted" and outlook.expected == 0
    assert "a100-spot" in [r.subject.name for r in forecast.flagged]


def test_the_lead_time_comes_from_fleet_yaml() -> None:
    """Eight weeks out: inside the default twelve weeks, outside a lead time of four."""
    series = [(POOL, gpus_in_use(DAYS * 24, 8, 1.0))]
    assert "a100-spot" in [r.subject.name for r in forecast_of(series).flagged]
    short = FLEET.model_copy(update={"capacity": FLEET.capacity.model_copy(update={"lead_time_weeks": 4})})
    assert forecast_of(series, short).flagged == ()


def test_pools_add_up_to_their_cluster_and_teams_are_held_to_their_quota() -> None:
    spot = gpus_in_use(DAYS * 24, 8, 0.5)
    ondemand = gpus_in_use(DAYS * 24, 4, 0.25)
    team = gpus_in_use(DAYS * 24, 4, 0.5)
    forecast = forecast_of(
        [
            (POOL, spot),
            ({**POOL, "flavor": "a100-ondemand"}, ondemand),
            ({"cluster": "training-eastus", "namespace": "team-nlp", "resource": "requests.nvidia.com/gpu", "type": "used"}, team),
            ({"cluster": "training-eastus", "namespace": "team-nlp", "resource": "requests.nvidia.com/gpu", "type": "hard"}, team * 0 + 8),
        ]
    )
    cluster = row_of(forecast, "cluster", "training-eastus")
    assert cluster.subject.capacity == 40  # every whole-GPU pool at its largest size: 16 + 8 + 16
    pools = [row_of(forecast, "pool", name).outlook.last_week for name in ("a100-spot", "a100-ondemand")]
    assert cluster.outlook.last_week == pytest.approx(sum(p or 0 for p in pools))
    assert cluster.outlook.growth == pytest.approx(0.75)
    nlp = row_of(forecast, "team", "nlp")
    assert nlp.subject.capacity == 8 and nlp.outlook.expected == pytest.approx(true_days(8, 4, 0.5), abs=1.0)
    assert forecast.ignored == 1  # the quota's hard limit is not usage


def test_series_about_something_else_are_counted_not_forecast() -> None:
    line = gpus_in_use(DAYS * 24, 4, 0.5)
    forecast = forecast_of(
        [
            ({**POOL, "flavor": "no-such-pool"}, line),
            ({"cluster": "nowhere", "namespace": "team-nlp"}, line),
            ({**POOL, "resource": "cpu"}, line),
            ({"flavor": "a100-spot"}, line),
        ]
    )
    assert forecast.rows == () and forecast.unknown == ("nowhere/team-nlp", "training-eastus/no-such-pool") and forecast.ignored == 2


def test_weeks_with_too_few_hours_are_left_out_and_short_history_says_so() -> None:
    values = gpus_in_use(DAYS * 24, 8, 0.5)
    values[-100:-20] = np.nan  # the last week lost 80 of its 168 hours
    weeks = row_of(forecast_of([(POOL, values)])).weekly.weeks
    assert -0.5 not in weeks and -1.5 in weeks
    short = row_of(forecast_of([(POOL, gpus_in_use(15 * 24, 8, 0.5))])).outlook
    assert short.status == "too-little-history" and short.expected is None


def test_a_pool_series_missing_for_some_weeks_is_a_gap_in_its_cluster_not_zero_gpus() -> None:
    """Two flat pools, one unreported for four weeks: the cluster is as flat as they are (counting the gap as 0 GPUs
    gave it a false trend and a false alarm every run); the weeks the cluster cannot be summed are left out."""
    spot, ondemand = gpus_in_use(DAYS * 24, 8, 0.0), gpus_in_use(DAYS * 24, 4, 0.0)
    ondemand[-9 * WEEK_HOURS : -5 * WEEK_HOURS] = np.nan
    forecast = forecast_of([(POOL, spot), ({**POOL, "flavor": "a100-ondemand"}, ondemand)])
    cluster = row_of(forecast, "cluster", "training-eastus")
    assert cluster.outlook.growth == pytest.approx(0.0, abs=1e-9) and set(cluster.weekly.gpus) == {12.0}
    whole = row_of(forecast, "pool", "a100-spot").weekly.weeks.size
    assert cluster.weekly.weeks.size == row_of(forecast, "pool", "a100-ondemand").weekly.weeks.size == whole - 4
    assert forecast.flagged == ()


@pytest.mark.parametrize("value", ["-1000", "1e308", "Inf", "-0.5", "2e6"])
def test_a_value_no_gpu_count_can_be_is_refused_at_its_series_in_one_line(value: str) -> None:
    text = answer_text([(POOL, gpus_in_use(DAYS * 24, 8, 0.0))]).replace('"8"]', f'"{value}"]', 1)
    with pytest.raises(InputError) as raised:
        forecast_of_text(text)
    where = text.index('{"metric"') + 1  # the series, on the answer's one line
    assert str(raised.value).startswith(f"history.json:1:{where}: data.result[0].values: ")
    assert f"{float(value):g} is not a number of GPUs in use" in str(raised.value) and "\n" not in str(raised.value)


def test_a_value_of_a_series_the_forecast_does_not_count_is_not_judged() -> None:
    text = answer_text([({**POOL, "resource": "memory"}, gpus_in_use(DAYS * 24, 8, 0.0) * 1e12)])
    assert forecast_of_text(text).ignored == 1


@pytest.mark.slow
@settings(deadline=None)
@given(order=st.permutations(range(4)), split=st.integers(0, 4))
def test_the_same_history_gives_the_same_forecast_in_any_order_or_files(order: list[int], split: int) -> None:
    from fleetgen.forecast.output import forecast_json

    series = [
        (POOL, gpus_in_use(DAYS * 24, 8, 0.5, noise=1, seed=1)),
        ({**POOL, "flavor": "a100-ondemand"}, gpus_in_use(DAYS * 24, 3, 0.2, noise=1, seed=2)),
        ({**POOL, "flavor": "h100-ondemand"}, gpus_in_use(DAYS * 24, 12, 0.1, noise=1, seed=3)),
        ({"cluster": "dev-eastus", "namespace": "team-robotics"}, gpus_in_use(DAYS * 24, 2, 0.1, noise=0.3, seed=4)),
    ]
    reference = forecast_json(forecast_of(series))
    shuffled = [series[i] for i in order]
    answers = [Answer(f"part{n}.json", io.StringIO(answer_text(part))) for n, part in enumerate((shuffled[:split], shuffled[split:]))]
    assert forecast_json(build_forecast(FLEET, answers, 13)) == reference


@settings(deadline=None)
@given(read_size=st.integers(1, 400), count=st.integers(0, 3), length=st.integers(0, 30))
def test_the_streamed_reader_reads_what_json_reads_whatever_the_read_size(read_size: int, count: int, length: int) -> None:
    series = [({"cluster": f"c{i}", "flavor": "p"}, gpus_in_use(length, 1 + i, 0.5)) for i in range(count)] if length else []
    text = json.dumps(json.loads(answer_text(series)), indent=1)  # with newlines and spaces between tokens
    expected = json.loads(text)["data"]["result"]
    found = list(read_answer(io.StringIO(text), "h.json", read_size))
    assert [s.labels for s in found] == [e["metric"] for e in expected]
    for series_read, raw in zip(found, expected, strict=True):
        assert series_read.times.tolist() == [float(t) for t, _ in raw["values"]]
        assert series_read.values.tolist() == [float(v) for _, v in raw["values"]]


@settings(deadline=None)
@given(lookback=st.integers(1, 6), hours=st.lists(st.integers(0, 3000), min_size=1, max_size=40))
def test_a_subject_keeps_at_most_its_lookback_of_hours(lookback: int, hours: list[int]) -> None:
    history = History(lookback_hours=lookback * WEEK_HOURS)
    subject = Subject("c", 1, "p", "pool", 8)
    for start in hours:  # series arriving in any order, each a day long
        times = (END // HOUR - start + np.arange(24)) * HOUR
        history.add(Series({}, times.astype(np.float64), np.ones(24)), [subject])
    kept = history.subjects[subject]
    assert kept.sums.size <= lookback * WEEK_HOURS
    assert kept.last == END // HOUR - min(hours) + 23  # the newest hour always stays


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"]', "h.json:1:"),
        ('{"status":"error","errorType":"bad_data"}', "h.json:1:11: status: the query did not succeed"),
        ('{"data":{"resultType":"vector","result":[]}}', "h.json:1:23: data.resultType: a range query answers with a matrix"),
        ('{"data":{"resultType":"matrix",\n"result":[\n {"metric":{},"values":[[1,"x"]]}]}}', "h.json:3:2: data.result[0].values:"),
        ('{"data":{"result":[{"metric":{"a":1},"values":[]}]}}', "h.json:1:20: data.result[0].metric: label values are strings"),
        ("[1, 2]", "h.json:1:1: (document): expected '{'"),
        ('{"data":{"result":[]}} x', "h.json:1:24: (document): text after the answer"),
        ('{"data":{"result":[{"metric":{},"values":[{"0":1,"1":"2"}]}]}}', "h.json:1:20: data.result[0].values: each sample"),
        ('{"data":{"result":[{"metric":{},"values":["12"]}]}}', "h.json:1:20: data.result[0].values: each sample"),
        ('{"data":{"result":[{"metric":{},"values":[[1e12,"2"]]}]}}', "h.json:1:20: data.result[0].values: each sample"),
        ('{"data":{"result":[{"metric":{},"values":[[-1,"2"]]}]}}', "h.json:1:20: data.result[0].values: each sample"),
        ('{"data":{"result":[{"metric":{},"values":[[NaN,"2"]]}]}}', "h.json:1:20: data.result[0].values: each sample"),
        pytest.param(
            '{"data":{"result":[{"metric":{},"values":[[1' + "0" * 400 + ',"2"]]}]}}', "h.json:1:20: data.result[0].values", id="huge"
        ),
        pytest.param('{"data":{"result":' + "[" * 100_000, "h.json:1:20: data.result[0]: nested too deep", id="deep"),
    ],
)
def test_a_malformed_answer_is_one_error_at_its_line_and_column(text: str, where: str) -> None:
    with pytest.raises(InputError) as raised:
        list(read_answer(io.StringIO(text), "h.json", 8))
    assert str(raised.value).startswith(where), str(raised.value)
    assert "\n" not in str(raised.value)


def test_an_answer_that_is_not_utf8_is_one_error_where_the_text_stopped() -> None:
    raw = b'{"status":"success",\n"data":{"resultType":"matrix","result":[{"metric":{"team":"caf\xe9"}'
    with pytest.raises(InputError) as raised:
        list(read_answer(io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"), "h.json", 8))
    assert str(raised.value).startswith("h.json:") and "not UTF-8 (byte 0xe9)" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_samples_years_apart_cost_no_more_memory_than_the_lookback() -> None:
    """An hour near 1970 and one near 9000 in one series: only the lookback before the newest is ever allocated."""
    values = [[3600, "3"], [221_845_388_400, "4"]]
    text = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [{"metric": POOL, "values": values}]}})
    forecast = build_forecast(FLEET, [Answer("history.json", io.StringIO(text))], 13)
    assert forecast.as_of is not None and forecast.as_of.year == 9000
    history = History(lookback_hours=WEEK_HOURS)
    subject = Subject("c", 1, "p", "pool", 8)
    for hour in (0, 61_623_718, 5):  # the newest first, then hours far older: nothing older than the lookback is kept
        history.add(Series({}, np.array([hour * 3600.0]), np.ones(1)), [subject])
        assert history.subjects[subject].sums.size <= WEEK_HOURS
    assert history.subjects[subject].last == 61_623_718


def test_dates_count_from_the_last_hour_of_history() -> None:
    forecast = forecast_of([(POOL, gpus_in_use(DAYS * 24, 8, 1.0))])
    assert forecast.as_of is not None and forecast.as_of.timestamp() == END + HOUR
    outlook = row_of(forecast).outlook
    assert outlook.expected is not None
    assert (forecast.as_of + timedelta(days=outlook.expected)).date() == (forecast.as_of + timedelta(days=true_days(16, 8, 1.0))).date()


def test_a_clusters_gpu_utilisation_runs_out_at_100_percent() -> None:
    """avg by (cluster) (DCGM_FI_DEV_GPU_UTIL), labelled as utilisation: 55% growing 3 points a week reaches 100% in 15 weeks."""
    busy = {"cluster": "training-eastus", "fleetgen_series": "gpu_busy_percent"}
    forecast = forecast_of([(busy, gpus_in_use(DAYS * 24, 55, 3.0, weekly=8))])
    row = row_of(forecast, "busy", "training-eastus")
    assert row.subject.capacity == 100 and forecast.without_history  # the pools and teams had no history here
    assert row.outlook.expected == pytest.approx(true_days(100, 55, 3.0), abs=1.0)
    assert all(s.kind != "busy" for s in forecast.without_history)  # utilisation is optional, never missing

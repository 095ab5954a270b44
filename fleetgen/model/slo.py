"""Service-level objectives of inference endpoints: tiers, error budgets, and where an endpoint's metrics are.

The tiers are the seed's ("Defining what good looks like"): real-time (P99 under 200ms, 99.95%),
near-real-time (P99 under 2s, 99.9%) and batch (under 1h, 99.5%). A fleet may change their numbers
or add tiers under `slo.tiers`. Error budgets are counted over a rolling 30 days, the window the SRE
workbook's burn-rate thresholds (14.4x, 6x, 3x, 1x) are worked out for: 99.9% leaves 43.2 minutes.
"""

import datetime
import re
import warnings
from fractions import Fraction
from typing import Annotated

from pydantic import Field, WithJsonSchema

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Float, Identifier, unique_by
from fleetgen.model.types import DnsLabel, Token
from fleetgen.model.value_checks import After

BUDGET_WINDOW = datetime.timedelta(days=30)
_UNITS = {"ms": Fraction(1, 1000), "s": Fraction(1), "m": Fraction(60), "h": Fraction(3600)}


_METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z][a-zA-Z0-9_]*|_([a-zA-Z0-9][a-zA-Z0-9_]*)?")  # names starting with __ are Prometheus' own
_LATENCY = re.compile(r"(\d{1,6})(ms|s|m|h)")


def _matches(pattern: re.Pattern[str], what: str, max_length: int) -> After:
    def check(value: str) -> str:
        if len(value) > max_length or not pattern.fullmatch(value):
            # fix: Write a value of the kind the message names
            raise ValueError(f"{value!r} is not {what}")
        return value

    return After(check)


def _schema(pattern: re.Pattern[str], max_length: int) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "pattern": f"^({pattern.pattern})$", "maxLength": max_length})


_RE2_ESCAPES = set("afnrtvdDsSwWbBAzpPxQE")  # letters Prometheus' regular expressions (Go, RE2 syntax) know after a backslash
_NOT_RE2 = ("(?=", "(?!", "(?<=", "(?<!", "(?>", "(?(", "(?P=")  # lookaround, atomic groups, conditionals, backreferences


_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")
_RE2_MAX_REPEAT = 1000  # Go's regexp refuses a larger count: "invalid repeat count"


def _check_regex(value: str) -> str:
    """A regular expression Python reads and RE2 syntax allows: no backreference, lookaround or Python-only escape.

    Engines disagree on a `{` that starts no repetition (Go reads `{{` and `{,3}` as text, other
    PromQL readers refuse `{{` or read `{,3}` as a repetition), so outside a character class it must
    start `{n}`, `{n,}` or `{n,m}` (n, m at most 1000, RE2's limit); `\\{` is a literal brace. They disagree on
    a `[` inside a class too (`[[]`: a member for Go, a nested class for Rust's regex), so there it must be `\\[`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # Python's "possible nested set": refused below, with why
            re.compile(value)
    except re.error as error:
        # fix: Correct the regular expression
        raise ValueError(f"{value!r} is not a regular expression: {error}") from None
    i, in_class = 0, False
    while i < len(value):
        if value[i] == "\\":
            after = value[i + 1 : i + 2]
            if after not in _RE2_ESCAPES and not (after.isascii() and not after.isalnum()):  # else only ASCII punctuation
                # fix: Write the expression in RE2 syntax, without that escape
                raise ValueError(f"{value!r}: Prometheus' regular expressions (RE2 syntax) have no \\{after}")
            i += 2
        elif in_class:
            if value[i] == "[":  # RE2 (Prometheus) reads a member, Python and Rust's regex a nested class
                raise ValueError(f"{value!r}: a '[' inside a character class, which readers disagree on; write \\[ for a literal bracket")
            in_class = value[i] != "]"
            i += 1
        elif value[i] == "[":  # a class: `]` right after `[` or `[^` is a member, not its end
            i += 2 if value.startswith("[^", i) else 1
            i += 1 if value.startswith("]", i) else 0
            in_class = True
        elif value[i] == "{":
            i = _repeat_end(value, i)
        else:
            unsupported = next((p for p in _NOT_RE2 if value.startswith(p, i)), None)
            if unsupported:
                # fix: Write the expression in RE2 syntax, without that construct
                raise ValueError(f"{value!r}: Prometheus' regular expressions (RE2 syntax) have no {unsupported}...)")
            i += 1
    return value


def _repeat_end(value: str, i: int) -> int:
    """Where the repetition starting at value[i] (a `{`) ends; a ValueError when it is none RE2 takes."""
    repeat = _REPEAT.match(value, i)
    if repeat is None:
        raise ValueError(f"{value!r}: a '{{' that starts no repetition such as {{2}} or {{2,5}}; write \\{{ for a literal brace")
    if any(int(n) > _RE2_MAX_REPEAT for n in repeat.groups() if n):
        # fix: Repeat at most that many times (or use + or *)
        raise ValueError(f"{value!r}: Prometheus' regular expressions (RE2 syntax) repeat at most {_RE2_MAX_REPEAT} times")
    return repeat.end()


Latency = Annotated[str, _matches(_LATENCY, "a latency such as 200ms, 2s, 5m or 1h", 8), _schema(_LATENCY, 8)]
MetricName = Annotated[
    str, _matches(_METRIC, "a Prometheus metric name (letters, digits, '_' and ':', not starting with a digit)", 200), _schema(_METRIC, 200)
]
PromLabel = Annotated[
    str, _matches(_LABEL, "a Prometheus label name (letters, digits and '_', not starting with a digit or '__')", 100), _schema(_LABEL, 100)
]
Regex = Annotated[Identifier, After(_check_regex)]


def latency_seconds(latency: str) -> float:
    """A latency such as 200ms, 2s or 1h in seconds (the unit of Prometheus histograms)."""
    number, unit = _LATENCY.fullmatch(latency).groups()  # type: ignore[union-attr]
    return float(int(number) * _UNITS[unit])


def allowed_error_ratio(availability: float) -> float:
    """The share of requests that may fail at `availability` percent: 99.9 -> 0.001 (computed exactly, then rounded once)."""
    return float(1 - Fraction(str(availability)) / 100)


def error_budget(availability: float, window: datetime.timedelta = BUDGET_WINDOW) -> datetime.timedelta:
    """How long an endpoint may fail within `window` and still meet `availability` percent: 99.9 over 30 days -> 43.2 minutes."""
    return datetime.timedelta(seconds=window.total_seconds() * allowed_error_ratio(availability))


class Tier(Spec):
    availability: Float = Field(gt=0, lt=100)
    """Percentage of requests that must succeed over the 30-day budget window, e.g. 99.9."""
    latency_p99: Latency
    """The 99th-percentile latency the endpoint must stay under: a number and ms, s, m or h (200ms, 2s, 1h)."""


DEFAULT_TIERS: dict[str, Tier] = {
    "real-time": Tier(availability=99.95, latency_p99="200ms"),
    "near-real-time": Tier(availability=99.9, latency_p99="2s"),
    "batch": Tier(availability=99.5, latency_p99="1h"),
}


class Slo(Spec):
    tiers: dict[DnsLabel, Tier] = {}
    """Tiers besides the seed's real-time, near-real-time and batch; a tier named like one of them replaces it."""

    @property
    def all_tiers(self) -> dict[str, Tier]:
        return {**DEFAULT_TIERS, **self.tiers}


class EndpointMetrics(Spec):
    """The Prometheus series the endpoint's serving stack exposes."""

    requests: MetricName
    """Counter of every request the endpoint answered, e.g. http_requests_total."""
    errors: dict[PromLabel, Regex] = Field(min_length=1)
    """Labels of `requests` that mark a failed request, each with a regular expression, e.g. {code: "5.."}."""
    latency: MetricName
    """Histogram of request latency in seconds, named without its _bucket suffix, e.g. http_request_duration_seconds."""
    selector: dict[PromLabel, Identifier] = {}
    """Labels (exact values) that pick this endpoint's series, e.g. {service: chat}; namespace is the team's unless set here."""


_URL = r"^https?://\S+$"


class Endpoint(Spec):
    name: DnsLabel
    """Endpoint name, unique within the team; labels its rules and alerts."""
    tier: DnsLabel
    """SLO tier: real-time, near-real-time, batch or one of slo.tiers."""
    clusters: Annotated[tuple[DnsLabel, ...], unique_by()] = Field(min_length=1)
    """Clusters that serve the endpoint; each must be one the team is on."""
    metrics: EndpointMetrics
    """Where its request counts and latencies are."""
    runbook_url: Annotated[Token, Field(pattern=_URL), WithJsonSchema({"type": "string", "pattern": _URL})] | None = None
    """Runbook of the endpoint's alerts; alerts.runbookBaseUrl plus /<alert> when left out."""

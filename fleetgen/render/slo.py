"""SLO rules of inference endpoints (a PrometheusRule per cluster) and the error-budget panels of a team's dashboard.

Per endpoint and cluster, one rule group: the error ratio recorded over each window the alerts
read (5m to 3d), the ratio over the 30-day budget window, the budget left and the 1h burn rate, the
P99 latency; then the SRE workbook's multiwindow, multi-burn-rate alerts. An alert fires when both
its long and its short window burn the budget faster than its factor: 14.4x over 1h and 5m, 6x over
6h and 30m page; 3x over 1d and 2h, 1x over 3d and 6h open a ticket. Over 30 days those factors
spend 2%, 5%, 10% and 10% of the budget. The latency alert opens a ticket while the P99 stays above
the tier's threshold: slow answers do not spend the availability budget, so they do not page.
"""

from typing import Any, NamedTuple

from fleetgen.errors import FieldPath
from fleetgen.model import Fleet, Team
from fleetgen.model.slo import Endpoint, Tier, allowed_error_ratio, error_budget, latency_seconds
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.provenance import NOWHERE, Recorder

MONITORING_API = "monitoring.coreos.com/v1"
RULE_NAME = "fleetgen-slo"
WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
LATENCY_WINDOW = "5m"
LATENCY_FOR = "15m"


class BurnAlert(NamedTuple):
    alert: str
    factor: float  # times the rate that spends the budget exactly over the budget window
    long: str
    short: str
    severity: str


BURN_ALERTS: tuple[BurnAlert, ...] = (
    BurnAlert("ErrorBudgetBurn1h", 14.4, "1h", "5m", "page"),
    BurnAlert("ErrorBudgetBurn6h", 6, "6h", "30m", "page"),
    BurnAlert("ErrorBudgetBurn1d", 3, "1d", "2h", "ticket"),
    BurnAlert("ErrorBudgetBurn3d", 1, "3d", "6h", "ticket"),
)
LATENCY_ALERT = "LatencySLOBreach"


def error_ratio(window: str) -> str:
    """The recorded series of an endpoint's failed share of requests over `window`."""
    return f"slo:error_ratio:rate{window}"


ERROR_RATIO_30D = error_ratio("30d")  # the 5m ratios averaged over the budget window
BUDGET_LEFT = "slo:error_budget_remaining:ratio"
BURN_RATE = "slo:burn_rate:rate1h"
LATENCY_P99 = f"slo:latency_p99:seconds{LATENCY_WINDOW}"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _series(metric: str, equal: dict[str, str], regex: dict[str, str] | None = None) -> str:
    """A vector selector; values are quoted and escaped, so no value can change the expression."""
    matchers = [f"{k}={_quote(v)}" for k, v in equal.items()] + [f"{k}=~{_quote(v)}" for k, v in (regex or {}).items()]
    return f"{metric}{{{', '.join(matchers)}}}"


def _number(value: float) -> str:
    return f"{value:.10g}"


def _endpoint_rules(fleet: Fleet, cluster: str, team: Team, endpoint: Endpoint, tier: Tier) -> list[dict[str, Any]]:
    labels = {"team": team.name, "cluster": cluster, "endpoint": endpoint.name, "tier": endpoint.tier}
    own = {"team": team.name, "cluster": cluster, "endpoint": endpoint.name}  # picks the recorded series back out
    metrics = endpoint.metrics
    served = {"namespace": team.namespace, **metrics.selector}
    allowed = _number(allowed_error_ratio(tier.availability))
    rules: list[dict[str, Any]] = []
    for window in WINDOWS:
        failed = f"sum(rate({_series(metrics.requests, served, metrics.errors)}[{window}]))"
        total = f"sum(rate({_series(metrics.requests, served)}[{window}]))"
        rules.append({"record": error_ratio(window), "expr": f"{failed} / {total}", "labels": labels})
    rules += [
        {"record": ERROR_RATIO_30D, "expr": f"avg_over_time({_series(error_ratio('5m'), own)}[30d])", "labels": labels},
        {"record": BUDGET_LEFT, "expr": f"1 - {_series(ERROR_RATIO_30D, own)} / {allowed}", "labels": labels},
        {"record": BURN_RATE, "expr": f"{_series(error_ratio('1h'), own)} / {allowed}", "labels": labels},
        {
            "record": LATENCY_P99,
            "expr": f"histogram_quantile(0.99, sum by (le) (rate({_series(metrics.latency + '_bucket', served)}[{LATENCY_WINDOW}])))",
            "labels": labels,
        },
    ]
    budget_minutes = error_budget(tier.availability).total_seconds() / 60
    where = f"{team.name}/{endpoint.name} on {cluster}"
    for burn in BURN_ALERTS:
        threshold = f"({_number(burn.factor)} * {allowed})"
        expr = f"{_series(error_ratio(burn.long), own)} > {threshold} and {_series(error_ratio(burn.short), own)} > {threshold}"
        summary = (
            f"{where} spends its error budget {_number(burn.factor)}x as fast as its {endpoint.tier} SLO allows "
            f"(over {burn.long} and {burn.short}; {_number(budget_minutes)} minutes in 30 days at {tier.availability:g}%)"
        )
        rules.append(_alert(fleet, endpoint, burn.alert, expr, None, {**labels, "severity": burn.severity}, summary))
    limit = latency_seconds(tier.latency_p99)
    summary = f"{where}: P99 latency above the {endpoint.tier} SLO's {tier.latency_p99} for {LATENCY_FOR}"
    expr = f"{_series(LATENCY_P99, own)} > {_number(limit)}"
    rules.append(_alert(fleet, endpoint, LATENCY_ALERT, expr, LATENCY_FOR, {**labels, "severity": "ticket"}, summary))
    return rules


def _alert(
    fleet: Fleet, endpoint: Endpoint, name: str, expr: str, duration: str | None, labels: dict[str, str], summary: str
) -> dict[str, Any]:
    annotations = {"summary": summary}
    if endpoint.runbook_url:
        annotations["runbook_url"] = endpoint.runbook_url
    elif fleet.alerts.runbook_base_url:
        annotations["runbook_url"] = f"{fleet.alerts.runbook_base_url.rstrip('/')}/{name}"
    return {"alert": name, "expr": expr, **({"for": duration} if duration else {}), "labels": labels, "annotations": annotations}


def served_on(fleet: Fleet, cluster: str) -> list[tuple[FieldPath, Team, Endpoint]]:
    """The endpoints a cluster serves, with their fleet.yaml paths, in fleet order."""
    return [
        (("teams", t, "endpoints", e), team, endpoint)
        for t, team in fleet.placements[cluster]
        for e, endpoint in enumerate(team.endpoints)
        if cluster in endpoint.clusters
    ]


def prometheus_rule(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """The cluster's SLO rules: one group per endpoint it serves; nothing when it serves none."""
    cluster = fleet.clusters[index].name
    tiers = fleet.slo.all_tiers
    served = [s for s in served_on(fleet, cluster) if s[2].tier in tiers]  # an unknown tier is a finding of slo_checks
    if not served:
        return []
    groups = [
        {"name": f"slo-{team.name}-{endpoint.name}", "rules": _endpoint_rules(fleet, cluster, team, endpoint, tiers[endpoint.tier])}
        for _, team, endpoint in served
    ]
    labels = {**fleet_labels(fleet), **fleet.alerts.rule_labels}
    body = k8s_object(MONITORING_API, "PrometheusRule", RULE_NAME, labels, namespace=fleet.alerts.namespace, spec={"groups": groups})
    if why.on:
        rule_labels = {k: ("alerts", "ruleLabels", k) for k in fleet.alerts.rule_labels}
        why.meta(body, prov.default("fleetgen's SLO rule name"), {**prov.fleet_labels(), **rule_labels}, ("alerts", "namespace"))
        for g, (at, _, endpoint) in enumerate(served):
            tier_at: FieldPath = ("slo", "tiers", endpoint.tier)
            inputs = (at + ("metrics",), at + ("tier",)) + ((tier_at,) if prov.written(fleet, "slo", "tiers", endpoint.tier) else ())
            why.set(body, ("spec", "groups", g), prov.derived(f"the {endpoint.tier} tier's recording rules and burn-rate alerts", *inputs))
            why.set(body, ("spec", "groups", g, "name"), prov.derived("slo-<team>-<endpoint>", at[:2] + ("name",), at + ("name",)))
    return [Manifest(body, served[0][0])]


def budget_panel_targets(team: Team) -> list[tuple[str, str, str, str]]:
    """(title, panel type, expression, unit) of the error-budget panels of a team's dashboard; none without endpoints."""
    if not team.endpoints:
        return []
    mine = {"team": team.name}
    return [
        ("Error budget left (30 days)", "stat", _series(BUDGET_LEFT, mine), "percentunit"),
        ("Burn rate over 1h (1 = spends the budget in exactly 30 days)", "timeseries", _series(BURN_RATE, mine), "none"),
    ]

"""A cluster's metrics as Prometheus stores them, valued by knobs; and the numbers its rendered rules compare with.

`world` gives, for one rendered cluster, every series its alerts and dashboards read, labelled as
Prometheus stores them (stored_series.py) and valued by `Knobs`: GPU utilisation, memory,
temperature, XID and ECC per GPU, GPU quota used per namespace, pending workloads per
ClusterQueue, error ratio and latency per inference endpoint. The `healthy` knobs fire nothing.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import promql_parser
from stored_series import KSM, Labels, Target, dcgm_targets, kueue_target, service_monitor_target

from fleetgen.model.slo import allowed_error_ratio
from fleetgen.render.golden_paths import job_objects
from fleetgen.render.job_target import Ask
from fleetgen.render.platform import platform_of
from fleetgen.render.serving import Serving
from fleetgen.render.slo import served_on
from fleetgen.validation.rendered_objects import Schemas

GPU_QUOTA = "requests.nvidia.com/gpu"
FB_MIB = 81_920  # framebuffer of one GPU, in MiB (an 80 GB A100)
RATE = 6_000  # requests per minute of every endpoint
Knobs = dict[tuple[str, ...], Any]


@dataclass(frozen=True)
class Gpu:
    node: str
    index: int
    model: str
    driver: str
    holder: tuple[str, str, str] | None  # (namespace, pod, container) of the pod holding it

    @property
    def uuid(self) -> str:
        return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{self.node}/{self.index}"))


@dataclass(frozen=True)
class Endpoint:
    team: str
    name: str
    namespace: str
    requests: str
    errors: dict[str, str]
    latency: str
    selector: dict[str, str]
    allowed: float  # the share of requests its SLO lets fail
    target: Target  # its server pod, as the ServiceMonitor `job new` writes for it scrapes it


@dataclass
class Cluster:
    """What the world needs of one rendered cluster."""

    name: str
    rules: list[dict[str, Any]]  # every rule of its PrometheusRules, recording and alerting
    gpus: list[Gpu]
    dcgm: dict[str, Target]  # node -> the exporter pod's target
    kueue: Target | None
    quotas: dict[str, tuple[str, int]]  # namespace -> (ResourceQuota name, GPUs it allows)
    queues: list[str]
    endpoints: list[Endpoint]
    namespaces: dict[str, str] = field(default_factory=dict)  # team -> namespace

    def gpu_of(self, namespace: str) -> Gpu:
        return next(g for g in self.gpus if g.holder and g.holder[0] == namespace)


def build_cluster(
    fleet: Any, index: int, objects: list[dict[str, Any]], platform: list[dict[str, Any]], honor: bool | None = None
) -> Cluster:
    cluster = fleet.clusters[index]
    teams = [team for _, team in fleet.placements[cluster.name]]
    driver = str(fleet.version_sets[cluster.version_set].driver)
    gpus: list[Gpu] = []
    nodes: list[str] = []
    while len(gpus) <= len(teams):  # a GPU for each team, and one no pod holds
        pool = cluster.node_pools[len(nodes) % len(cluster.node_pools)]
        node = f"aks-{pool.name.replace('-', '')}-{31_415_926 + len(nodes)}-vmss{len(nodes):06d}"
        nodes.append(node)
        for i in range(min(pool.gpus_per_node, 2)):
            gpus.append(Gpu(node, i, f"NVIDIA {pool.gpu_model}", driver, None))
    for n, team in enumerate(teams):
        gpus[n] = Gpu(gpus[n].node, gpus[n].index, gpus[n].model, driver, (team.namespace, f"{team.name}-trainer-0", "trainer"))
    quotas = {
        body["metadata"]["namespace"]: (body["metadata"]["name"], int(body["spec"]["hard"][GPU_QUOTA]))
        for body in objects
        if body["kind"] == "ResourceQuota" and GPU_QUOTA in body["spec"].get("hard", {})
    }
    kueue = platform_of(fleet, index).kueue
    tiers = fleet.slo.all_tiers
    endpoints = [
        Endpoint(
            team.name,
            e.name,
            team.namespace,
            e.metrics.requests,
            dict(e.metrics.errors),
            e.metrics.latency,
            dict(e.metrics.selector),
            allowed_error_ratio(tiers[e.tier].availability),
            golden_path_target(fleet, cluster.name, team.name, e),
        )
        for _, team, e in served_on(fleet, cluster.name)
    ]
    return Cluster(
        cluster.name,
        [r for body in objects if body["kind"] == "PrometheusRule" for g in body["spec"]["groups"] for r in g["rules"]],
        gpus,
        dcgm_targets(platform, nodes, honor),
        kueue_target(objects, dict(fleet.alerts.rule_labels), kueue.namespace, kueue.chart, kueue.version),
        quotas,
        [body["metadata"]["name"] for body in objects if body["kind"] == "ClusterQueue"],
        endpoints,
        {team.name: team.namespace for team in teams},
    )


# -- the healthy world ------------------------------------------------------------------------------


def healthy(c: Cluster) -> Knobs:
    knobs: Knobs = {}
    for gpu in c.gpus:
        knobs |= {("util", gpu.uuid): 70, ("memory", gpu.uuid): 50, ("temp", gpu.uuid): 62, ("xid", gpu.uuid): 0, ("ecc", gpu.uuid): None}
    knobs |= {("quota", ns): hard // 4 for ns, (_, hard) in c.quotas.items()}
    knobs |= {("pending", q): (5, 2) for q in c.queues}
    for e in c.endpoints:
        knobs |= {("errors", e.team, e.name): e.allowed / 2, ("latency", e.team, e.name): "fast"}
    return knobs


def _alerts_of(c: Cluster, e: Endpoint) -> list[dict[str, Any]]:
    return [r for r in c.rules if "alert" in r and r["labels"].get("endpoint") == e.name and r["labels"]["team"] == e.team]


def _num(value: float) -> str:
    return f"{value:.12g}"


def _gauge(value: float, minutes: int) -> str:
    return f"{_num(value)}x{minutes}"


def _counter(per_minute: float, minutes: int, stop: int | None = None) -> str:
    """A counter growing by `per_minute`, flat from minute `stop` on."""
    if stop is None or stop >= minutes:
        return f"0+{_num(per_minute)}x{minutes}"
    return f"0+{_num(per_minute)}x{stop} {_num(per_minute * stop)}x{minutes - stop - 1}"


def world(c: Cluster, knobs: Knobs, minutes: int) -> list[tuple[Labels, str]]:
    """Every series of the cluster from minute 0 to `minutes`, one sample a minute."""
    out: list[tuple[Labels, str]] = []
    for target in [*c.dcgm.values(), KSM, *([c.kueue] if c.kueue else [])]:
        out.append(({"__name__": "up", **target.labels}, _gauge(1, minutes)))
    for gpu in c.gpus:
        exposed = {"gpu": str(gpu.index), "UUID": gpu.uuid, "device": f"nvidia{gpu.index}", "modelName": gpu.model, "Hostname": gpu.node}
        exposed["DCGM_FI_DRIVER_VERSION"] = gpu.driver
        if gpu.holder:
            exposed |= dict(zip(("namespace", "pod", "container"), gpu.holder, strict=True))
        target = c.dcgm[gpu.node]
        used = round(FB_MIB * knobs[("memory", gpu.uuid)] / 100)
        ecc = knobs[("ecc", gpu.uuid)]  # None: no error; (minute, errors): that many double-bit errors from that minute
        values = {
            "DCGM_FI_DEV_GPU_UTIL": _gauge(knobs[("util", gpu.uuid)], minutes),
            "DCGM_FI_DEV_FB_USED": _gauge(used, minutes),
            "DCGM_FI_DEV_FB_FREE": _gauge(FB_MIB - used, minutes),
            "DCGM_FI_DEV_GPU_TEMP": _gauge(knobs[("temp", gpu.uuid)], minutes),
            "DCGM_FI_DEV_XID_ERRORS": _gauge(knobs[("xid", gpu.uuid)], minutes),
            # Not in the GPU Operator's default collector list (README): a cluster that adds it stores it like this.
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": _gauge(0, minutes) if ecc is None else f"0x{ecc[0]} {ecc[1]}x{minutes - ecc[0] - 1}",
        }
        out += [(target.series(metric, exposed), v) for metric, v in values.items()]
    for ns, (name, hard) in c.quotas.items():
        for resource, used, limit in ((GPU_QUOTA, knobs[("quota", ns)], hard), ("requests.cpu", 64, 64)):  # a full CPU quota: not a GPU one
            for kind, value in (("used", used), ("hard", limit)):
                exposed = {"namespace": ns, "resourcequota": name, "resource": resource, "type": kind}
                out.append((KSM.series("kube_resourcequota", exposed), _gauge(value, minutes)))
    if c.kueue:
        for q in c.queues:
            active, inadmissible = knobs[("pending", q)]
            roles = ["leader", "follower"] if knobs.get(("follower", q)) else ["leader"]
            for role in roles:
                for status, value in (("active", active), ("inadmissible", inadmissible)):
                    exposed = {"cluster_queue": q, "status": status, "replica_role": role}
                    out.append((c.kueue.series("kueue_pending_workloads", exposed), _gauge(value, minutes)))
    for e in c.endpoints:
        out += _serving(e, knobs[("errors", e.team, e.name)], knobs[("latency", e.team, e.name)], _latency_limit(c, e), minutes)
    return out


def golden_path_target(fleet: Any, cluster: str, team: str, endpoint: Any) -> Target:
    """The endpoint's server as `fleetgen job new --kind inference --endpoint NAME` deploys it, scraped by its ServiceMonitor.

    The Deployment is named `<endpoint>-server`, unlike the endpoint's `service` label, so only the ServiceMonitor's own
    labelling can give its series the labels the SLO rules select."""
    ask = Ask(team, cluster, f"{endpoint.name}-server", "registry.example.com/server:v1", gpus=1)
    serving = Serving(endpoint.tier, 300, selector=dict(endpoint.metrics.selector))
    objects = {body["kind"]: body for body in job_objects(fleet, ask, Schemas(), serving).objects}
    return service_monitor_target(objects["ServiceMonitor"], objects["Service"], f"{ask.name}-5d8c7b9f6-m3n4p", "10.244.9.40")


def _serving(e: Endpoint, errors: float | tuple[float, int], latency: str, limit: float, minutes: int) -> list[tuple[Labels, str]]:
    target, exposed = e.target, {}  # the server labels nothing with the selector's labels: the scrape must add them
    ratio, stop = errors if isinstance(errors, tuple) else (errors, None)
    failed = _matching_code(e.errors)
    out = [({"__name__": "up", **target.labels}, _gauge(1, minutes))]
    for code, per_minute, until in (("200", RATE * (1 - ratio), None), (failed, RATE * ratio, stop)):
        labels = {**exposed, "code": code, "method": "POST"}
        out.append((target.series(e.requests, labels), _counter(per_minute, minutes, until)))
    if stop is not None:  # the failed requests of the recovered minutes succeed
        labels = {**exposed, "code": "201", "method": "POST"}
        out.append((target.series(e.requests, labels), _counter(0, stop) + " " + _counter(RATE * ratio, minutes - stop - 1)))
    # share of requests at or under each bucket: fast keeps the P99 far under the limit, near just under, slow over it
    shares = {"fast": (0.995, 1, 1, 1, 1), "near": (0.9, 0.985, 1, 1, 1), "slow": (0.9, 0.95, 0.97, 1, 1)}[latency]
    bounds = (limit / 4, limit / 2, limit, 2 * limit, 4 * limit)
    for bound, share in (*zip(bounds, shares, strict=True), (float("inf"), 1)):
        le = "+Inf" if bound == float("inf") else f"{bound:g}"
        out.append((target.series(e.latency + "_bucket", {**exposed, "le": le}), _counter(RATE * share, minutes)))
    return out


def _matching_code(errors: dict[str, str]) -> str:
    """A status code the endpoint's error matchers (regular expressions, anchored) take as failed."""
    assert set(errors) == {"code"}, f"the test's serving stack fails requests by code only, not by {sorted(errors)}"
    return next(code for code in ("500", "503", "429") if re.fullmatch(errors["code"], code))


def _latency_limit(c: Cluster, e: Endpoint) -> float:
    rule = next(r for r in _alerts_of(c, e) if r["alert"] == "LatencySLOBreach")
    return threshold(rule)


# -- reading the rendered rules ---------------------------------------------------------------------


def _number(node: Any) -> float:
    if isinstance(node, promql_parser.NumberLiteral):
        return float(node.val)
    if isinstance(node, promql_parser.ParenExpr):
        return _number(node.expr)
    assert isinstance(node, promql_parser.BinaryExpr) and str(node.op) in ("*", "/"), node
    left, right = _number(node.lhs), _number(node.rhs)
    return left * right if str(node.op) == "*" else left / right


def threshold(rule: dict[str, Any]) -> float:
    """The number the rule compares with: `... > 80`, or the long side's of `a > X and b > X`."""
    tree = promql_parser.parse(rule["expr"])
    if str(tree.op) in ("and", "or", "unless"):
        tree = tree.lhs
    assert str(tree.op) in (">", "<"), rule["expr"]
    return _number(tree.rhs)


def windows(rule: dict[str, Any]) -> tuple[int, int]:
    """(long, short) window of a burn-rate alert, in minutes, from the recorded ratios it reads."""
    tree = promql_parser.parse(rule["expr"])
    return _minutes(tree.lhs.lhs.name.rsplit("rate", 1)[1]), _minutes(tree.rhs.lhs.name.rsplit("rate", 1)[1])


def _minutes(duration: str) -> int:
    return int(duration[:-1]) * {"m": 1, "h": 60, "d": 1440}[duration[-1]]


def waits(rule: dict[str, Any]) -> int:
    return _minutes(rule["for"]) if "for" in rule else 0

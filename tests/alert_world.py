"""A cluster's metrics as Prometheus stores them, valued by knobs; and the numbers its rendered rules compare with.

`world` gives, for one rendered cluster, every series its alerts and dashboards read, labelled as
Prometheus stores them (stored_series.py) and valued by `Knobs`: GPU utilisation, memory,
temperature, XID and ECC per GPU, GPU quota used per namespace, pending workloads per
ClusterQueue, GPUs in use per node pool (Kueue's usage per ClusterQueue and flavor), error ratio and
latency per inference endpoint. The `healthy` knobs fire nothing.

Partitioned pools are shaped as the DCGM exporter reports them (dcgm-exporter's rendermetrics and
transformation/kubernetes.go, releases 4.4.x): a GPU of a MIG pool is monitored per slice, each
series labelled GPU_I_PROFILE and GPU_I_ID besides the GPU's own labels, with the namespace and pod
of the pod holding that slice; a slice reports DCGM_FI_PROF_GR_ENGINE_ACTIVE and its own framebuffer
and no usable DCGM_FI_DEV_GPU_UTIL (here 0, as exporters before 3.3 reported it: a rule reading it on
slices would see idle slices). Temperature, XID and ECC of a slice are its GPU's. A time-sliced GPU
held by a pod gets the `vgpu` label of the replica when the rendered exporter runs with
KUBERNETES_VIRTUAL_GPUS (render/dcgm_metrics.py); its values are the whole GPU's.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import promql_parser
from stored_series import KSM, Labels, Target, dcgm_targets, kueue_target, release_of, service_monitor_target

from fleetgen.compat.dcgm_exporter import bundle_of
from fleetgen.compat.partitioning import resolved_layout
from fleetgen.jobs.golden_paths import job_objects
from fleetgen.jobs.job_target import Ask
from fleetgen.jobs.serving import Serving
from fleetgen.model.slo import allowed_error_ratio
from fleetgen.render.platform import platform_of
from fleetgen.render.slo import served_on
from fleetgen.validation.rendered_objects import Schemas

GPU = "nvidia.com/gpu"
GPU_QUOTA = "requests." + GPU
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
    instance: tuple[str, int] | None = None  # (MIG profile, GPU instance id) of a MIG slice; None for a whole GPU
    shared: bool = False  # a time-sliced GPU, reported per pod holding a replica (vgpu) when the exporter is told to

    @property
    def uuid(self) -> str:
        """The physical GPU's UUID: every slice of a MIG GPU carries its GPU's."""
        return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{self.node}/{self.index}"))

    @property
    def unit(self) -> str:
        """What a pod holds: the GPU, or one MIG slice of it; its utilisation and memory knobs are keyed by this."""
        return self.uuid if self.instance is None else f"{self.uuid}/{self.instance[1]}"

    @property
    def fb_mib(self) -> int:
        return FB_MIB if self.instance is None else int(self.instance[0].split(".")[1].removesuffix("gb")) * 1024


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
    pools: dict[str, tuple[list[str], int]]  # GPU flavor (node pool) -> (the ClusterQueues handing it out, its GPUs at most)
    endpoints: list[Endpoint]
    namespaces: dict[str, str] = field(default_factory=dict)  # team -> namespace
    virtual_gpus: bool = False  # the exporter copies a shared GPU's series for each pod holding a replica
    slice_quotas: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)  # (namespace, slice quota) -> (name, hard)
    host_label: str = "Hostname"  # the node label of the cluster's DCGM exporter: `hostname` from dcgm-exporter 4.8.3 on
    nominal: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)  # (ClusterQueue, flavor) -> (cohort, nominal GPUs)

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
        layout = resolved_layout(pool) if pool.partitioning.kind == "mig" else None
        for i in range(min(pool.gpus_per_node, 2)):
            model, shared = f"NVIDIA {pool.gpu_model}", pool.partitioning.kind == "time-slicing"
            if layout is None:
                gpus.append(Gpu(node, i, model, driver, None, shared=shared))
                continue
            profiles = [profile for profile in sorted(layout) for _ in range(layout[profile])]
            gpus += [Gpu(node, i, model, driver, None, (profile, gi)) for gi, profile in enumerate(profiles, start=1)]
    for n, team in enumerate(teams):
        gpus[n] = replace(gpus[n], holder=(team.namespace, f"{team.name}-trainer-0", "trainer"))
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
    pools: dict[str, tuple[list[str], int]] = {}
    for body in objects:
        if body["kind"] != "ClusterQueue":
            continue
        for group in body["spec"]["resourceGroups"]:
            for flavor in group["flavors"] if GPU in group["coveredResources"] else []:
                pool = next(p for p in cluster.node_pools if p.name == flavor["name"])
                pools.setdefault(pool.name, ([], pool.max_nodes * pool.gpus_per_node))[0].append(body["metadata"]["name"])
    return Cluster(
        cluster.name,
        [r for body in objects if body["kind"] == "PrometheusRule" for g in body["spec"]["groups"] for r in g["rules"]],
        gpus,
        dcgm_targets(platform, nodes, honor),
        kueue_target(objects, dict(fleet.alerts.rule_labels), kueue.namespace, kueue.chart, kueue.version),
        quotas,
        [body["metadata"]["name"] for body in objects if body["kind"] == "ClusterQueue"],
        pools,
        endpoints,
        {team.name: team.namespace for team in teams},
        _exporter_env(platform).get("KUBERNETES_VIRTUAL_GPUS") == "true",
        {
            (body["metadata"]["namespace"], resource): (body["metadata"]["name"], int(hard))
            for body in objects
            if body["kind"] == "ResourceQuota"
            for resource, hard in body["spec"].get("hard", {}).items()
            if resource.startswith("requests.nvidia.com/") and resource != GPU_QUOTA  # a slice: requests.nvidia.com/mig-1g.10gb
        },
        exporter_host_label(platform),
        {
            (body["metadata"]["name"], flavor["name"]): (body["spec"].get("cohortName", ""), int(resource["nominalQuota"]))
            for body in objects
            if body["kind"] == "ClusterQueue"
            for group in body["spec"]["resourceGroups"]
            for flavor in group["flavors"]
            for resource in flavor["resources"]
            if resource["name"] == GPU
        },
    )


def exporter_host_label(platform: list[dict[str, Any]]) -> str:
    """What the exporter the cluster's GPU Operator chart bundles names a GPU's node: dcgm-exporter renamed `Hostname`
    to `hostname` in 4.8.3 (release 4.6.0-4.8.3, NVIDIA/dcgm-exporter PR #655). The bundled exporter per operator
    release is the shipped data's (compat/dcgm_exporter.yaml); the rename's version is stated here on its own."""
    chart = next(
        (
            b["spec"]["chart"]["spec"]["version"]
            for b in platform
            if b["kind"] == "HelmRelease" and b["spec"]["releaseName"] == "gpu-operator"
        ),
        None,
    ) or next(
        (
            b["spec"]["source"]["targetRevision"]
            for b in platform
            if b["kind"] == "Application" and b["spec"]["source"].get("helm", {}).get("releaseName") == "gpu-operator"
        ),
        None,
    )
    if chart is None:
        return "Hostname"
    exporter = bundle_of(chart).exporter.split("-", 1)[1]
    return "hostname" if tuple(int(p) for p in exporter.split(".")) >= (4, 8, 3) else "Hostname"


def _exporter_env(platform: list[dict[str, Any]]) -> dict[str, str]:
    _, values = release_of(platform, "gpu-operator")
    return {e["name"]: e["value"] for e in values.get("dcgmExporter", {}).get("env", [])}


# -- the healthy world ------------------------------------------------------------------------------


def healthy(c: Cluster) -> Knobs:
    knobs: Knobs = {}
    for gpu in c.gpus:
        knobs |= {("util", gpu.unit): 70, ("memory", gpu.unit): 50, ("temp", gpu.uuid): 62, ("xid", gpu.uuid): 0, ("ecc", gpu.uuid): None}
    knobs |= {("quota", ns): hard // 4 for ns, (_, hard) in c.quotas.items()}
    knobs |= {("quota", ns, resource): hard // 4 for (ns, resource), (_, hard) in c.slice_quotas.items()}
    knobs |= {("pending", q): (5, 2) for q in c.queues}
    # A quarter of each pool, as of each quota: under the 60% "plan now" rules of pools and of the queues that share them out.
    knobs |= {("pool", pool): most // 4 for pool, (_, most) in c.pools.items()}
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
        exposed = {"gpu": str(gpu.index), "UUID": gpu.uuid, "device": f"nvidia{gpu.index}", "modelName": gpu.model, c.host_label: gpu.node}
        if gpu.instance is not None:
            exposed |= {"GPU_I_PROFILE": gpu.instance[0], "GPU_I_ID": str(gpu.instance[1])}
        exposed["DCGM_FI_DRIVER_VERSION"] = gpu.driver
        if gpu.holder:
            exposed |= dict(zip(("namespace", "pod", "container"), gpu.holder, strict=True))
            if gpu.shared and c.virtual_gpus:
                exposed["vgpu"] = "0"  # the pod's replica of the shared GPU
        target = c.dcgm[gpu.node]
        used = round(gpu.fb_mib * knobs[("memory", gpu.unit)] / 100)
        util = knobs[("util", gpu.unit)]
        ecc = knobs[("ecc", gpu.uuid)]  # None: no error; (minute, errors): that many double-bit errors from that minute
        values = {
            "DCGM_FI_DEV_GPU_UTIL": _gauge(util if gpu.instance is None else 0, minutes),
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": _gauge(util / 100, minutes),
            "DCGM_FI_DEV_FB_USED": _gauge(used, minutes),
            "DCGM_FI_DEV_FB_FREE": _gauge(gpu.fb_mib - used, minutes),
            "DCGM_FI_DEV_GPU_TEMP": _gauge(knobs[("temp", gpu.uuid)], minutes),
            "DCGM_FI_DEV_XID_ERRORS": _gauge(knobs[("xid", gpu.uuid)], minutes),
            # Not in the GPU Operator's default collector list: fleetgen's own list adds it (render/dcgm_metrics.py).
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": _gauge(0, minutes) if ecc is None else f"0x{ecc[0]} {ecc[1]}x{minutes - ecc[0] - 1}",
        }
        out += [(target.series(metric, exposed), v) for metric, v in values.items()]
    for ns, (name, hard) in c.quotas.items():
        for resource, used, limit in ((GPU_QUOTA, knobs[("quota", ns)], hard), ("requests.cpu", 64, 64)):  # a full CPU quota: not a GPU one
            for kind, value in (("used", used), ("hard", limit)):
                exposed = {"namespace": ns, "resourcequota": name, "resource": resource, "type": kind}
                out.append((KSM.series("kube_resourcequota", exposed), _gauge(value, minutes)))
    for (ns, resource), (name, hard) in c.slice_quotas.items():
        for kind, value in (("used", knobs[("quota", ns, resource)]), ("hard", hard)):
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
        placed: set[str] = set()  # queues whose ("queue", q) knob is on the series already: on their first flavor, 0 on the others
        for pool, (queues, _) in c.pools.items():  # the pool's GPUs in use, shared out over its queues
            in_use = knobs[("pool", pool)]
            roles = ["leader", "follower"] if knobs.get(("follower", pool)) else ["leader"]
            for n, q in enumerate(queues):
                share = in_use // len(queues) + (in_use % len(queues) if n == 0 else 0)
                if ("queue", q) in knobs:
                    share = 0 if q in placed else knobs[("queue", q)]
                    placed.add(q)
                for role in ["leader", "follower"] if knobs.get(("follower", q)) else roles:
                    exposed = {"cluster_queue": q, "flavor": pool, "resource": GPU, "replica_role": role}
                    out.append((c.kueue.series("kueue_cluster_queue_resource_usage", exposed), _gauge(share, minutes)))
        for (q, flavor), (cohort, nominal) in c.nominal.items():  # Kueue reports a queue's nominal quota of every flavor
            roles = ["leader", "follower"] if knobs.get(("follower", q)) else ["leader"]
            for role in roles:
                exposed = {"cohort": cohort, "cluster_queue": q, "flavor": flavor, "resource": GPU, "replica_role": role}
                out.append((c.kueue.series("kueue_cluster_queue_nominal_quota", exposed), _gauge(nominal, minutes)))
    for e in c.endpoints:
        out += _serving(e, knobs[("errors", e.team, e.name)], knobs[("latency", e.team, e.name)], _latency_limit(c, e), minutes)
    return out


def golden_path_target(fleet: Any, cluster: str, team: str, endpoint: Any) -> Target:
    """The endpoint's server as `fleetgen job new --kind inference --endpoint NAME` deploys it, scraped by its ServiceMonitor.

    The Deployment is named `<endpoint>-server`, unlike the endpoint's `service` label, so only the ServiceMonitor's own
    labelling can give its series the labels the SLO rules select."""
    ask = Ask(team, cluster, f"{endpoint.name}-server", "contosoai.azurecr.io/server:v1", gpus=1)
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

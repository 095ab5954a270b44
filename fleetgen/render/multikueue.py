"""MultiKueue's objects: on the manager, a queue per GPU model that dispatches to workers; on each worker, the
manager's access. Team namespaces and LocalQueues reach the workers as placements (fleetgen.model.multikueue).

Manager, per queue: a ResourceFlavor of its GPU model (no node labels: nothing runs on the manager), a
ClusterQueue whose quota is what the workers' pools of that model hold, an AdmissionCheck of Kueue's
MultiKueue controller and the MultiKueueConfig listing the workers in dispatch order; one
MultiKueueCluster per worker, reading the worker's kubeconfig from a Secret in Kueue's namespace.
Worker: a ServiceAccount for the manager, a ClusterRole of what Kueue's own example grants it, cut to the
kinds fleetgen's golden paths dispatch (batch Jobs), its binding, and a token Secret the operator turns
into the kubeconfig (the commands are in docs/how-to/multikueue.md).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from fleetgen.compat.partitioning import pool_yield
from fleetgen.errors import FieldPath
from fleetgen.model import GPU_RESOURCE, Cluster, Fleet
from fleetgen.model.multikueue import ManagerQueue, MultiKueue, queue_workers
from fleetgen.model.secret_store import ExternalSecrets
from fleetgen.model.sharing import RESOURCES
from fleetgen.render import provenance as prov
from fleetgen.render.kueue import KUEUE_API, amount_text
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.provenance import NOWHERE, Recorder
from fleetgen.render.secret_store import EXTERNAL_SECRETS_API, external_secret, store_of

CONTROLLER = "kueue.x-k8s.io/multikueue"  # AdmissionCheck.spec.controllerName of Kueue's MultiKueue controller
KUBECONFIG_KEY = "kubeconfig"  # the Secret key Kueue reads
MANAGER_ACCOUNT = "multikueue-manager"  # the worker's ServiceAccount, ClusterRole and binding for the manager
HERE: FieldPath = ("multiKueue",)
_ALL = ["create", "delete", "get", "list", "watch"]
# Kueue v0.19.2 site/static/examples/multikueue/create-multikueue-kubeconfig.sh: the rules every worker needs, then
# those of the kinds fleetgen's golden paths dispatch (job new --fleet writes batch/v1 Jobs only).
MANAGER_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": _ALL + ["patch", "update"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": _ALL},
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
)


def flavor_name(gpu_model: str) -> str:
    """The manager's ResourceFlavor of a GPU model: multikueue-h100."""
    return f"multikueue-{gpu_model.lower()}"


def worker_capacity(fleet: Fleet, queue: ManagerQueue) -> dict[str, Fraction]:
    """What the queue's workers hold of its GPU model, pools at their maximum size: CPU, memory and whole GPUs."""
    assert fleet.multi_kueue is not None
    clusters = {c.name: c for c in fleet.clusters}
    total = dict.fromkeys(RESOURCES, Fraction(0))
    for name in queue_workers(fleet.multi_kueue, fleet.clusters)[queue.name]:
        for pool in clusters[name].node_pools if name in clusters else ():
            if pool.gpu_model == queue.gpu_model:
                total["cpu"] += pool.cpu_per_node.value * pool.max_nodes
                total["memory"] += pool.memory_per_node.value * pool.max_nodes
                total[GPU_RESOURCE] += pool_yield(pool).get(GPU_RESOURCE, 0)
    return total


def manager_objects(fleet: Fleet, cluster: Cluster, why: Recorder = NOWHERE) -> list[Manifest]:
    """The manager's MultiKueue objects; none on any other cluster."""
    mk = fleet.multi_kueue
    if mk is None or cluster.name != mk.manager:
        return []
    labels = fleet_labels(fleet)
    out: list[Manifest] = []
    for model in sorted({q.gpu_model for q in mk.queues}):
        q = next(k for k, queue in enumerate(mk.queues) if queue.gpu_model == model)
        body = k8s_object(KUEUE_API, "ResourceFlavor", flavor_name(model), {**labels, "fleetgen/gpu-model": model}, spec={})
        out.append(Manifest(body, HERE + ("queues", q, "gpuModel")))
    workers = queue_workers(mk, fleet.clusters)
    for q, queue in enumerate(mk.queues):
        at = HERE + ("queues", q)
        out += _queue_objects(fleet, queue, workers[queue.name], at, why)
    listed = sorted({w for names in workers.values() for w in names})
    for name in listed:
        out += _cluster_objects(mk, name, fleet.platform_of(cluster).kueue.namespace, labels, why, store_of(fleet))
    return out


def _queue_objects(fleet: Fleet, queue: ManagerQueue, workers: tuple[str, ...], at: FieldPath, why: Recorder) -> list[Manifest]:
    labels = fleet_labels(fleet)
    assert fleet.multi_kueue is not None
    manager = next(c for c in fleet.clusters if c.name == fleet.multi_kueue.manager)
    teams = sorted(t.name for t in fleet.queue_teams(manager, queue.name))
    selector: dict[str, Any] = (
        {"matchExpressions": [{"key": "team", "operator": "In", "values": teams}]}
        if teams
        else {"matchExpressions": [{"key": "team", "operator": "Exists"}, {"key": "team", "operator": "DoesNotExist"}]}
    )
    capacity = worker_capacity(fleet, queue)
    flavor = {
        "name": flavor_name(queue.gpu_model),
        "resources": [{"name": r, "nominalQuota": amount_text(r, capacity[r])} for r in RESOURCES],
    }
    queue_body = k8s_object(
        KUEUE_API,
        "ClusterQueue",
        queue.name,
        labels,
        spec={
            "namespaceSelector": selector,
            "resourceGroups": [{"coveredResources": list(RESOURCES), "flavors": [flavor]}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": queue.name}]},
        },
    )
    check = k8s_object(
        KUEUE_API,
        "AdmissionCheck",
        queue.name,
        labels,
        spec={"controllerName": CONTROLLER, "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": queue.name}},
    )
    config_spec: dict[str, Any] = {"clusters": list(workers)}
    if queue.quota_management == "Automated":
        config_spec["quotaManagement"] = "Automated"
    config = k8s_object(KUEUE_API, "MultiKueueConfig", queue.name, labels, spec=config_spec)
    if why.on:
        for body in (queue_body, check, config):
            why.meta(body, at + ("name",), prov.fleet_labels())
        note = "the workers' pools of the queue's GPU model at their maximum size"
        why.set(queue_body, ("spec", "resourceGroups"), prov.derived(note, at + ("gpuModel",), at + ("workers",), at + ("select",)))
        why.set(queue_body, ("spec", "namespaceSelector"), prov.derived("the teams on the manager whose queue this is", ("teams",)))
        why.set(config, ("spec", "clusters"), at + ("workers",) if queue.workers is not None else at + ("select",))
        why.set(config, ("spec", "quotaManagement"), at + ("quotaManagement",))
    return [Manifest(queue_body, at), Manifest(check, at), Manifest(config, at)]


def _cluster_objects(
    mk: MultiKueue, worker: str, namespace: str, labels: dict[str, str], why: Recorder, store: ExternalSecrets | None = None
) -> list[Manifest]:
    kubeconfig = mk.worker(worker).kubeconfig
    at = HERE + ("workers", worker, "kubeconfig")
    if kubeconfig.path is not None:
        source = {"locationType": "Path", "location": kubeconfig.path}
    else:
        source = {"locationType": "Secret", "location": kubeconfig.secret_name(worker)}
    body = k8s_object(KUEUE_API, "MultiKueueCluster", worker, labels, spec={"clusterSource": {"kubeConfig": source}})
    out = [Manifest(body, at)]
    if why.on:
        why.meta(body, prov.derived("the worker's cluster name", HERE + ("queues",)), prov.fleet_labels())
        why.set(body, ("spec", "clusterSource", "kubeConfig", "location"), at + ("path",) if kubeconfig.path else at + ("secret",))
    external = kubeconfig.external_secret
    if external is not None:
        remote: dict[str, Any] = {"key": external.key}
        if external.property is not None:
            remote["property"] = external.property
        spec = {
            "refreshInterval": "1h",
            "secretStoreRef": {"name": external.store, "kind": external.store_kind},
            "target": {"name": kubeconfig.secret_name(worker), "creationPolicy": "Owner"},
            "data": [{"secretKey": KUBECONFIG_KEY, "remoteRef": remote}],
        }
        secret = k8s_object(EXTERNAL_SECRETS_API, "ExternalSecret", kubeconfig.secret_name(worker), labels, namespace=namespace, spec=spec)
        out.append(Manifest(secret, at + ("externalSecret",)))
    elif store is not None and kubeconfig.path is None:  # the fleet's store holds it: its entry's `kubeconfig` property
        secret = external_secret(store, kubeconfig.secret_name(worker), namespace, labels)
        out.append(Manifest(secret, ("secrets", "externalSecrets")))
        if why.on:
            why.meta(secret, at + ("secret",), prov.fleet_labels())
            why.set(secret, ("spec",), prov.derived("the store's entry <keyPrefix><Secret name>", ("secrets", "externalSecrets")))
    return out


def worker_objects(fleet: Fleet, cluster: Cluster, why: Recorder = NOWHERE) -> list[Manifest]:
    """On a worker: the manager's ServiceAccount, ClusterRole, ClusterRoleBinding and the account's token Secret."""
    mk = fleet.multi_kueue
    if mk is None or cluster.name == mk.manager:
        return []
    if not any(cluster.name in names for names in queue_workers(mk, fleet.clusters).values()):
        return []
    labels = fleet_labels(fleet)
    namespace = fleet.platform_of(cluster).kueue.namespace
    account = k8s_object("v1", "ServiceAccount", MANAGER_ACCOUNT, labels, namespace=namespace)
    role = k8s_object("rbac.authorization.k8s.io/v1", "ClusterRole", MANAGER_ACCOUNT, labels, rules=[dict(r) for r in MANAGER_RULES])
    binding = k8s_object(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        MANAGER_ACCOUNT,
        labels,
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": MANAGER_ACCOUNT},
        subjects=[{"kind": "ServiceAccount", "name": MANAGER_ACCOUNT, "namespace": namespace}],
    )
    # A token the API server fills in and never expires while the Secret exists (kubernetes-sigs/kueue#9280:
    # projected tokens in a kubeconfig expire); deleting the Secret revokes it.
    token = k8s_object(
        "v1",
        "Secret",
        MANAGER_ACCOUNT,
        labels,
        namespace=namespace,
        annotations={"kubernetes.io/service-account.name": MANAGER_ACCOUNT},
        type="kubernetes.io/service-account-token",
    )
    at = HERE + ("manager",)
    out = [Manifest(body, at) for body in (account, role, binding, token)]
    if why.on:
        for body in (account, role, binding, token):
            why.meta(body, prov.default("the manager's account on a MultiKueue worker"), prov.fleet_labels())
    return out

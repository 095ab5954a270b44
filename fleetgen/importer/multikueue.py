"""Import MultiKueue: the manager is the cluster with MultiKueueConfigs; each ClusterQueue a MultiKueue
AdmissionCheck gates becomes a manager queue (its workers from the MultiKueueConfig, its GPU model from its
flavor's fleetgen/gpu-model label), not a queue of the manager's own, and its flavor no node pool; each
MultiKueueCluster's kubeconfig Secret (or path) becomes the worker's `kubeconfig`; the dispatcher comes from the
manager's Kueue configuration. A worker's account for the manager is fleetgen's (render/multikueue.py)."""

from __future__ import annotations

from typing import Any

from fleetgen.errors import FindingsError
from fleetgen.importer.addons import installs
from fleetgen.importer.imported import Imported, or_placeholder
from fleetgen.importer.recognise import ClusterView
from fleetgen.live.dumps import LIVE_LIMITS
from fleetgen.model.multikueue import DISPATCHERS
from fleetgen.source.reader import parse_documents

CONTROLLER = "kueue.x-k8s.io/multikueue"


def _of(view: ClusterView, kind: str) -> dict[str, dict[str, Any]]:
    return {b.body["metadata"]["name"]: b.body for b in view.multikueue if b.body.get("kind") == kind}


# The repository's objects are unvalidated: a field of the wrong shape reads as absent, never as a crash.
def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mappings(value: Any) -> list[dict[str, Any]]:
    return [v for v in _list(value) if isinstance(v, dict)]


def _spec(body: dict[str, Any]) -> dict[str, Any]:
    return _mapping(body.get("spec"))


def _checks_named(queue: dict[str, Any]) -> list[str]:
    """The AdmissionChecks a ClusterQueue's admissionChecksStrategy names."""
    return [str(c.get("name")) for c in _mappings(_mapping(_spec(queue).get("admissionChecksStrategy")).get("admissionChecks"))]


def _flavors_of(queue: dict[str, Any]) -> list[str]:
    return [str(f.get("name")) for g in _mappings(_spec(queue).get("resourceGroups")) for f in _mappings(g.get("flavors"))]


def dispatching(view: ClusterView) -> tuple[list[dict[str, Any]], set[str]]:
    """The view's ClusterQueues a MultiKueue AdmissionCheck gates, and the flavors only they use."""
    checks = {name for name, body in _of(view, "AdmissionCheck").items() if _spec(body).get("controllerName") == CONTROLLER}
    queues: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for built in view.cluster_wide["ClusterQueue"]:
        (queues if checks.intersection(_checks_named(built.body)) else others).append(built.body)
    return queues, {f for q in queues for f in _flavors_of(q)} - {f for q in others for f in _flavors_of(q)}


def multikueue_section(out: Imported, views: list[ClusterView]) -> dict[str, Any] | None:
    managers = [v for v in views if _of(v, "MultiKueueConfig")]
    if not managers:
        return None
    view = managers[0]
    checks, configs = _of(view, "AdmissionCheck"), _of(view, "MultiKueueConfig")
    flavors = {b.body["metadata"]["name"]: b.body for b in view.cluster_wide["ResourceFlavor"]}
    queues = []
    for q, body in enumerate(dispatching(view)[0]):
        at = ("multiKueue", "queues", q)
        check = next(c for c in _checks_named(body) if c in checks)
        config = configs.get(str(_mapping(_spec(checks[check]).get("parameters")).get("name", "")), {})
        flavor = next(iter(_flavors_of(body)), "")
        model = _mapping(_mapping(flavors.get(flavor, {}).get("metadata")).get("labels")).get("fleetgen/gpu-model")
        queue: dict[str, Any] = {
            "name": body["metadata"]["name"],
            "gpuModel": or_placeholder(out, at + ("gpuModel",), model, "A100", f"GPU model of {flavor} unknown: the workers' pools"),
            "workers": [str(c) for c in _list(_spec(config).get("clusters"))],
        }
        if _spec(config).get("quotaManagement") == "Automated":
            queue["quotaManagement"] = "Automated"
        queues.append(queue)
    section: dict[str, Any] = {"manager": view.name}
    dispatcher = _dispatcher(view)
    if dispatcher in DISPATCHERS.values():
        name = next(k for k, v in DISPATCHERS.items() if v == dispatcher)
        if name != "AllAtOnce":
            section["dispatcher"] = name
    elif dispatcher:
        section |= {"dispatcher": "External", "externalDispatcher": dispatcher}
    section["queues"] = queues
    workers = {}
    for name, body in sorted(_of(view, "MultiKueueCluster").items()):
        kubeconfig = _mapping(_mapping(_spec(body).get("clusterSource")).get("kubeConfig"))
        location = str(kubeconfig.get("location", ""))
        if kubeconfig.get("locationType") == "Path":
            workers[name] = {"kubeconfig": {"path": location}}
        elif location and location != f"multikueue-{name}":
            workers[name] = {"kubeconfig": {"secret": location}}
    if workers:
        section["workers"] = workers
    found = "its Kueue configuration" if dispatcher else "AllAtOnce: the repository does not install the manager's Kueue"
    out.notes[("multiKueue",)] = f"from {view.multikueue[0].file}; the dispatcher: {found}"
    return section


def _dispatcher(view: ClusterView) -> str:
    kueue = installs(view.modelled).get("kueue")
    text = ((kueue.values.get("managerConfig") or {}) if kueue else {}).get("controllerManagerConfigYaml")
    if not isinstance(text, str):
        return ""
    try:  # fleetgen's bounded reader: a configuration nested too deep, too large or not UTF-8 is one that names no dispatcher
        read = parse_documents(
            text.encode("utf-8", "surrogatepass"), "controllerManagerConfigYaml", LIVE_LIMITS, positions=False, single=True
        )
    except FindingsError:
        return ""
    config = read[0].data if read else None
    multikueue = config.get("multiKueue") if isinstance(config, dict) else None
    return str(multikueue.get("dispatcherName") or "") if isinstance(multikueue, dict) else ""

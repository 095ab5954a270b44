"""Reading a cluster's objects kind by kind through kubectl, so that one kind cannot fail the whole read.

A cluster may not serve every kind fleetgen renders (a CRD not installed yet), may forbid listing one
(RBAC), or may be slow on one: each kind is its own `kubectl get`, under fleetgen's own label selector
(only what fleetgen labels, never a cluster-wide list of everything), and its outcome is kept. A kind
the server does not serve is a fact about the cluster (its objects are missing, "kind not served"); a
kind that could not be read (forbidden, timed out) leaves its objects unjudged, saying why. Only when
the API server cannot be reached at all does the read fail as a whole (exit 2).
"""

from __future__ import annotations

import dataclasses
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from fleetgen.compare.object_diff import ObjectChange
from fleetgen.errors import InputError
from fleetgen.live.dumps import live_objects
from fleetgen.live.kubectl import kubectl, last_line
from fleetgen.live.state import Drift, key_of
from fleetgen.render.manifest import MANAGED_BY, ObjectKey

NOT_SERVED = ("the server doesn't have a resource type", "the server could not find the requested resource")
FORBIDDEN = ("(Forbidden)", "is forbidden")
NOT_SERVED_STATE = "missing (kind not served)"
SELECTOR = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())  # what fleetgen labels, and nothing else
TIMED_OUT = ("Client.Timeout exceeded", "context deadline exceeded", "i/o timeout", "timed out", "Timeout:")


@dataclass(frozen=True)
class ClusterRead:
    """What a read of the cluster found, kind by kind (`resource` is kubectl's `kind.group`)."""

    objects: list[dict[str, Any]]
    not_served: tuple[str, ...] = ()
    unread: dict[str, str] = field(default_factory=dict)  # resource -> why it could not be read


def read_cluster(context: str, resources: list[str], timeout: int = 30) -> ClusterRead:
    """The objects of these kinds that fleetgen labels, and the Nodes (which nobody labels for fleetgen) when asked for."""
    labelled = read_kinds(context, [r for r in resources if r != "node"], SELECTOR, timeout)
    if "node" not in resources:
        return labelled
    return merged(labelled, read_kinds(context, ["node"], None, timeout))


def merged(one: ClusterRead, other: ClusterRead) -> ClusterRead:
    return ClusterRead(one.objects + other.objects, one.not_served + other.not_served, {**one.unread, **other.unread})


PARALLEL = 4  # kinds listed at once: kubectl processes waiting on the API server, not on this machine


def read_kinds(context: str, resources: list[str], selector: str | None, timeout: int = 30) -> ClusterRead:
    """The objects of each resource (under `selector`, when given), kind by kind, a few kinds at a time."""
    tool = kubectl("--context")
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        outcomes = list(pool.map(lambda resource: _read_kind(tool, context, resource, selector, timeout), resources))
    objects = [obj for found, _, _ in outcomes for obj in found]
    not_served = tuple(resource for resource, (_, served, _) in zip(resources, outcomes, strict=True) if not served)
    unread = {resource: why for resource, (_, _, why) in zip(resources, outcomes, strict=True) if why}
    return ClusterRead(objects, not_served, unread)


def _read_kind(tool: str, context: str, resource: str, selector: str | None, timeout: int) -> tuple[list[dict[str, Any]], bool, str]:
    """(its objects, whether the cluster serves the kind, why it could not be read: "" when it was)."""
    command = [tool, "--context", context, "--request-timeout", f"{timeout}s", "get", resource, "--all-namespaces", "-o", "yaml"]
    if selector:
        command += ["--selector", selector]
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout + 15, check=False)
    except subprocess.TimeoutExpired:
        return [], True, f"timed out after {timeout}s"
    except OSError as exc:
        raise InputError(f"kubectl --context {context}: {exc}") from None
    if done.returncode == 0:
        return live_objects(done.stdout, f"kubectl --context {context} get {resource}"), True, ""
    last = last_line(done.stderr)
    if any(mark in last for mark in NOT_SERVED):
        return [], False, ""
    if any(mark in last for mark in FORBIDDEN):
        return [], True, last.split("): ", 1)[-1]  # the server's own words: "roles is forbidden: User ..."
    if any(mark in last for mark in TIMED_OUT):
        return [], True, f"timed out after {timeout}s"
    # the server cannot be reached or does not speak Kubernetes: nothing can be read
    raise InputError(f"kubectl --context {context} failed: {last}")


def resource_of(body: dict[str, Any]) -> str:
    """kubectl's name for the kind of `body`: `clusterqueue.kueue.x-k8s.io`, `namespace`."""
    group = str(body.get("apiVersion", "")).rpartition("/")[0]
    return f"{str(body.get('kind', '')).lower()}.{group}" if group else str(body.get("kind", "")).lower()


BY_NAME_AT_MOST = 100  # objects asked for by name after the labelled lists: a bound on the calls one drift makes


def by_name(context: str, expected: dict[ObjectKey, dict[str, Any]], read: ClusterRead, timeout: int = 30) -> ClusterRead:
    """The expected objects the labelled lists did not return, asked for by name: one whose fleetgen label was
    removed by hand is still there (and changed), not missing. Kinds not served or not read are not asked again."""
    seen = {key_of(o) for o in read.objects}
    skip = set(read.not_served) | set(read.unread)
    wanted = [(key, resource_of(body)) for key, body in sorted(expected.items()) if key not in seen and resource_of(body) not in skip]
    tool = kubectl("--context")
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        found = list(pool.map(lambda pair: _read_one(tool, context, pair[1], pair[0], timeout), wanted[:BY_NAME_AT_MOST]))
    return ClusterRead([obj for objects in found for obj in objects])


def _read_one(tool: str, context: str, resource: str, key: ObjectKey, timeout: int) -> list[dict[str, Any]]:
    command = [
        tool,
        "--context",
        context,
        "--request-timeout",
        f"{timeout}s",
        "get",
        resource,
        key.name,
        "--ignore-not-found",
        "-o",
        "yaml",
    ]
    if key.namespace:
        command += ["--namespace", key.namespace]
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout + 15, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []  # stays missing: the labelled list already said what could be read
    if done.returncode != 0 or not done.stdout.strip():
        return []
    return live_objects(done.stdout, f"kubectl --context {context} get {resource} {key.name}")


def judged(drift: Drift, read: ClusterRead, expected: dict[ObjectKey, dict[str, Any]]) -> Drift:
    """The drift with what the read could not see said as such: an object of a kind the cluster does not
    serve is "missing (kind not served)"; one of a kind that could not be read is not judged at all."""
    resource = {key: resource_of(body) for key, body in expected.items()}
    unread = {key for key, name in resource.items() if name in read.unread}
    missing = tuple(
        dataclasses.replace(o, state=NOT_SERVED_STATE) if resource.get(_key(o)) in read.not_served else o
        for o in drift.missing
        if _key(o) not in unread
    )
    changed = tuple(o for o in drift.changed if _key(o) not in unread)
    return dataclasses.replace(drift, missing=missing, changed=changed, unread=tuple(sorted(read.unread.items())))


def _key(change: ObjectChange) -> ObjectKey:
    return ObjectKey(change.kind, change.namespace, change.name)

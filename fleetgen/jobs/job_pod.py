"""The pod every golden path runs: its container's size, where it may land, and what a restricted namespace admits.

Team namespaces enforce Pod Security `restricted`, so every pod runs as a non-root user with the
runtime's default seccomp profile, no privilege escalation and no capabilities; it mounts no
service account token (a training or serving process does not call the API server). Its image is
pulled at every start (`imagePullPolicy: Always`; layers already on the node are not downloaded
again): teams share GPU nodes, so the registry, not the node's cache, decides whether the pod may
run a private image another team's pod pulled there (the kubelet pulls with the pod's credentials),
and every worker of a multi-node job runs the build its tag names now, not one a node cached.
Each pod gets a memory-backed `/dev/shm`: the container runtime's default is 64 MiB, too little for
PyTorch DataLoader workers and NCCL, which exchange tensors through shared memory. That volume counts
against the pod's memory limit, so it is sized as a share of the pod's memory, never beside it.

On a pool that declares a network topology (a Kueue Topology), a Kueue Job asks Kueue's
topology-aware scheduling to place its pods close together through its pod template's annotation.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from fleetgen.checks.admission import PodSize
from fleetgen.jobs.job_target import Target
from fleetgen.model import Cluster, Fleet, Team
from fleetgen.model.storage import Volume
from fleetgen.render import kueue as kueue_objects
from fleetgen.render.layout import cluster_labels
from fleetgen.render.manifest import MANAGED_BY, team_labels

GPU = "nvidia.com/gpu"
SHM_VOLUME = "dshm"
SHM_SHARE = Fraction(1, 4)  # of the pod's memory, when --shm is not given
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"  # Kueue admits the pods only within one such domain
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"  # as close as that level allows, else spread further
HOSTNAME = "kubernetes.io/hostname"
PULL_POLICY = "Always"  # the registry checks the pod may read the image; cached layers are reused

RESTRICTED_POD: dict[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def cost_labels(fleet: Fleet, team: Team, cluster: Cluster) -> dict[str, str]:
    """The team's cost labels and the cluster's environment, without fleetgen's managed-by (drift would call the job extra)."""
    labels = {k: v for k, v in team_labels(fleet, team).items() if k not in MANAGED_BY}
    return dict(sorted({**labels, **cluster_labels(cluster)}.items()))


def cpu_text(value: Fraction) -> int | str:
    millis = math.floor(value * 1000)
    return millis // 1000 if millis % 1000 == 0 else f"{millis}m"


def memory_text(value: Fraction) -> str:
    mebibytes = math.floor(value / 1024**2)
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"


def shm_size(pod: PodSize, asked: Fraction | None) -> Fraction:
    """/dev/shm's size: as asked, else a quarter of the pod's memory (whole MiB); never more than the pod's memory."""
    return asked if asked is not None else Fraction(math.floor(pod.memory * SHM_SHARE / 1024**2) * 1024**2)


def resources(pod: PodSize) -> dict[str, Any]:
    """The pod's requests, and limits equal to them (a GPU cannot be shared, CPU and memory are not overcommitted)."""
    amount: dict[str, Any] = {"cpu": cpu_text(pod.cpu), "memory": memory_text(pod.memory)}
    if pod.gpus:
        amount[pod.resource] = pod.gpus
    return {"requests": dict(amount), "limits": dict(amount)}


def placement(target: Target) -> dict[str, Any]:
    """nodeSelector: the labels every chosen pool shares (else an affinity naming each pool); tolerations of their taints."""
    common = dict(target.pools[0].labels)
    for pool in target.pools[1:]:
        common = {k: v for k, v in common.items() if pool.labels.get(k) == v}
    out: dict[str, Any] = {}
    if common:
        out["nodeSelector"] = dict(sorted(common.items()))
    else:
        terms = [
            {"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(pool.labels.items())]}
            for pool in target.pools
        ]
        out["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    tolerations: list[dict[str, str]] = []
    for pool in target.pools:
        for taint in pool.taints:
            toleration = kueue_objects._toleration(taint.key, taint.value, taint.effect)
            if toleration not in tolerations:
                tolerations.append(toleration)
    if tolerations:
        out["tolerations"] = tolerations
    return out


def pod_spec(
    target: Target, container: dict[str, Any], shm: Fraction, *, restart_policy: str | None = None, claims: tuple[Volume, ...] = ()
) -> dict[str, Any]:
    """The pod of `container` (name, image, command, env, ports, probes) at the target's size, on its pools, restricted,
    with the team's volumes `claims` mounted (each at its mountPath; read-only when the volume is ReadOnlyMany)."""
    mounts: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    mounts += [{"name": v.name, "mountPath": v.mount_at, **({"readOnly": True} if v.access_mode == "ReadOnlyMany" else {})} for v in claims]
    pull = {"name": container["name"], "image": container["image"], "imagePullPolicy": PULL_POLICY}  # next to the image it pulls
    sized = {**pull, **container, "resources": resources(target.pod), "securityContext": RESTRICTED_CONTAINER, "volumeMounts": mounts}
    spec: dict[str, Any] = {}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    if target.priority:
        spec["priorityClassName"] = target.priority.name
    spec["automountServiceAccountToken"] = False
    spec["securityContext"] = RESTRICTED_POD
    spec |= placement(target)
    spec["containers"] = [sized]
    spec["volumes"] = [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": memory_text(shm)}}]
    spec["volumes"] += [{"name": v.name, "persistentVolumeClaim": {"claimName": v.name}} for v in claims]
    return spec


def topology_request(target: Target, pods: int) -> dict[str, str]:
    """Kueue's topology annotation for the pod template: one pod on one node; several as close as the narrowest level
    above the node allows (preferred, so a job that does not fit one domain still runs). None unless every pool the job
    may land on declares the same Topology: Kueue would not admit a topology request on a flavor without one."""
    topologies = {pool.topology for pool in target.pools}
    if len(topologies) != 1:
        return {}
    [levels] = topologies
    if not levels:
        return {}
    if pods == 1 and HOSTNAME in levels:
        return {REQUIRED_TOPOLOGY: HOSTNAME}
    above_node = [level for level in levels if level != HOSTNAME]
    return {PREFERRED_TOPOLOGY: (above_node or list(levels))[-1]}

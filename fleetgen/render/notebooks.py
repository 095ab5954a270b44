"""GPU notebooks through JupyterHub (the zero-to-jupyterhub chart): a profile for each GPU shape a team may get.

On a cluster whose `platform.jupyterhub` is enabled, every team there gets profiles in
`singleuser.profileList`: whole GPUs of each model its queue hands out (1, 2, 4 ... up to its GPU
quota and one node), and one MIG slice or shared GPU of each kind its quota names and its pools yield.
Each profile starts the notebook in the team's namespace, labelled for the team's LocalQueue (Kueue's
pod integration admits it against the team's quota) at the `notebooks` priority class, sized as the
shape's share of a node after the system reserve (checks/admission.py), on the pools that yield it,
under Pod Security `restricted`; its image is one of `platform.jupyterhub.images` (validate refuses an
image whose CUDA the cluster's driver cannot run).

KubeSpawner offers every profile to everyone; the hub's extra configuration below (fleetgen's, never
built from fleet.yaml text) keeps, for each user, the profiles of the teams whose identity groups the
authenticator reports for them (`custom.fleetgenTeams`: group and profile slugs by team, as data).
In each team namespace the hub's service account gets a Role to start notebooks, and a NetworkPolicy
lets the hub and its proxy reach them (the team's own policy refuses other namespaces).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from fleetgen.checks.admission import room
from fleetgen.compat.partitioning import per_gpu
from fleetgen.errors import FieldPath
from fleetgen.model import Cluster, Fleet, NodePool, Team
from fleetgen.model.partitioning import slice_resource
from fleetgen.model.platform import JupyterHub
from fleetgen.model.sharing import NOTEBOOKS
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, k8s_object, team_labels
from fleetgen.render.provenance import NOWHERE, Recorder

GPU = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
HUB_ACCOUNT = "hub"  # the chart's hub ServiceAccount
SINGLEUSER = {"component": "singleuser-server"}  # the label KubeSpawner gives notebook pods
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
# Runs in the hub after the chart's own configuration, which has set profile_list from singleuser.profileList.
PROFILE_FILTER = """\
# fleetgen: each user sees the notebook profiles of the teams whose identity groups they are in
from z2jh import get_config

_fleetgen_teams = get_config("custom.fleetgenTeams", {})
_fleetgen_profiles = list(c.KubeSpawner.profile_list)


def _fleetgen_profile_list(spawner):
    groups = {group.name for group in spawner.user.groups}
    slugs = {slug for team in _fleetgen_teams.values() if team["group"] in groups for slug in team["profiles"]}
    return [profile for profile in _fleetgen_profiles if profile["slug"] in slugs]


c.KubeSpawner.profile_list = _fleetgen_profile_list
"""


def hub_of(fleet: Fleet, cluster: Cluster) -> JupyterHub | None:
    hub = fleet.platform_of(cluster).jupyterhub
    return hub if hub.enabled else None


def _pools(fleet: Fleet, team: Team, cluster: Cluster) -> list[NodePool]:
    """The pools the team's ClusterQueue here hands out; none where it feeds a MultiKueue manager queue, which
    dispatches Jobs to workers and never a notebook's pod."""
    queue = next((q for q in cluster.queues if q.name == team.queue_on(cluster)), None)
    if queue is None:
        return []
    return [p for p in cluster.node_pools if queue.flavors is None or p.name in queue.flavors]


def _notebook_class(fleet: Fleet, team: Team) -> str | None:
    """`scheduling.defaultPriorityClasses.notebooks` when the team may use it, else the team's lowest class."""
    allowed = sorted((pc for pc in fleet.priority_classes if pc.name in fleet.access(team).priority_classes), key=lambda pc: pc.value)
    wanted = fleet.scheduling.default_priority_classes.get(NOTEBOOKS)
    if any(pc.name == wanted for pc in allowed):
        return wanted
    return allowed[0].name if allowed else None


def shapes(fleet: Fleet, team: Team, cluster: Cluster) -> list[tuple[str, int, list[NodePool]]]:
    """(resource, count, pools) of each GPU shape the team may get here: whole GPUs by model, then one of each slice."""
    quota = team.quota_on(cluster.name)
    pools = _pools(fleet, team, cluster)
    out: list[tuple[str, int, list[NodePool]]] = []
    for model in dict.fromkeys(p.gpu_model for p in pools if p.gpu_model and per_gpu(p).get(GPU) == 1):
        same = [p for p in pools if p.gpu_model == model and per_gpu(p).get(GPU) == 1]
        most = min(max(p.gpus_per_node for p in same), quota.requests.gpu if quota.requests.gpu is not None else 1 << 30)
        counts = sorted({2**k for k in range(most.bit_length()) if 2**k <= most} | ({most} if most else set()))
        out += [(GPU, n, [p for p in same if p.gpus_per_node >= n]) for n in counts]
    for name in sorted(quota.requests.slices):
        resource = slice_resource(name)
        yielding = [p for p in pools if resource in per_gpu(p) and resource != GPU]
        if yielding and quota.requests.slices[name] >= 1:
            out.append((resource, 1, yielding))
    return out


def _size(team: Team, cluster: Cluster, resource: str, count: int, pools: list[NodePool]) -> dict[str, Any]:
    """CPU and memory: the shape's share of the smallest node's room after the reserve, at most the team's quota."""
    quota = team.quota_on(cluster.name)
    out: dict[str, Any] = {}
    for kind in ("cpu", "memory"):
        shares = [room(p, kind) * count / (p.gpus_per_node * per_gpu(p)[resource]) for p in pools]
        shares += [q.value for q in (getattr(quota.requests, kind), getattr(quota.limits, kind)) if q is not None]
        value: Fraction = min(shares)
        if kind == "cpu":
            out["cpu_guarantee"] = out["cpu_limit"] = math.floor(value * 1000) / 1000
        else:
            mebibytes = math.floor(value / 1024**2)
            out["mem_guarantee"] = out["mem_limit"] = f"{mebibytes}M" if mebibytes % 1024 else f"{mebibytes // 1024}G"
    return out


def _placement(pools: list[NodePool]) -> dict[str, Any]:
    """A node affinity term per pool (all of its labels: labels the pools share may also select pools too small for the
    shape), and the tolerations of their taints."""
    terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(pool.labels.items())]} for pool in pools]
    tolerations: list[dict[str, str]] = []
    for pool in pools:
        for taint in pool.taints:
            toleration = {"key": taint.key, "operator": "Equal" if taint.value else "Exists", "effect": taint.effect}
            toleration |= {"value": taint.value} if taint.value else {}
            if toleration not in tolerations:
                tolerations.append(toleration)
    return {"node_affinity_required": terms, **({"tolerations": tolerations} if tolerations else {})}


def profiles(fleet: Fleet, team: Team, cluster: Cluster, hub: JupyterHub) -> list[dict[str, Any]]:
    """The team's profiles on `cluster`, in shape order; each offers the hub's images."""
    labels = team_labels(fleet, team) | {QUEUE_LABEL: fleet.object_names(team).local_queue}
    priority = _notebook_class(fleet, team)
    images = {
        f"image-{n}": {"display_name": f"{image.name}, CUDA {image.cuda}", "kubespawner_override": {"image": image.image}}
        for n, image in enumerate(hub.images)
    }
    out = []
    for resource, count, pools in shapes(fleet, team, cluster):
        kind = f"{count}x {pools[0].gpu_model}" if resource == GPU else f"1 {resource.removeprefix('nvidia.com/')} ({pools[0].gpu_model})"
        slug = f"{team.name}-{resource.removeprefix('nvidia.com/').replace('.', '-')}-{count}-{pools[0].gpu_model}".lower()
        override: dict[str, Any] = {
            "namespace": team.namespace,
            "extra_labels": dict(sorted(labels.items())),
            **({"priority_class_name": priority} if priority else {}),
            "extra_resource_guarantees": {resource: str(count)},
            "extra_resource_limits": {resource: str(count)},
            **_size(team, cluster, resource, count, pools),
            **_placement(pools),
            "container_security_context": RESTRICTED_CONTAINER,
            "pod_security_context": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        }
        profile: dict[str, Any] = {
            "display_name": f"{team.name}: {kind}",
            "slug": slug,
            "description": f"{kind} in {team.namespace} on {cluster.name}, queued in its LocalQueue",
            "kubespawner_override": override,
        }
        if images:
            profile["profile_options"] = {"image": {"display_name": "Image", "choices": images}}
        out.append(profile)
    return out


def hub_values(fleet: Fleet, index: int) -> dict[str, Any]:
    """The chart values: every team's profiles, the hub's filter by group, and notebook pods a restricted namespace admits."""
    cluster = fleet.clusters[index]
    hub = hub_of(fleet, cluster)
    if hub is None:
        return {}
    listed: list[dict[str, Any]] = []
    teams: dict[str, Any] = {}
    for _, team in fleet.placements[cluster.name]:
        mine = profiles(fleet, team, cluster, hub)
        listed += mine
        teams[team.name] = {"group": team.group, "profiles": [p["slug"] for p in mine]}
    return {
        "hub": {"extraConfig": {"fleetgen-team-profiles": PROFILE_FILTER}},
        # The chart's iptables init container needs NET_ADMIN, which a restricted team namespace refuses.
        "singleuser": {"cloudMetadata": {"blockWithIptables": False}, "profileList": listed},
        "custom": {"fleetgenTeams": teams},
    }


def team_objects(
    fleet: Fleet, team: Team, at: FieldPath, cluster: Cluster, cluster_at: FieldPath, why: Recorder = NOWHERE
) -> list[Manifest]:
    """In the team's namespace on a JupyterHub cluster: the hub's Role and RoleBinding, and the NetworkPolicy letting it in."""
    hub = hub_of(fleet, cluster)
    if hub is None:
        return []
    labels, ns = team_labels(fleet, team), team.namespace
    rules = [
        {
            "apiGroups": [""],
            "resources": ["pods", "persistentvolumeclaims", "services"],
            "verbs": ["get", "watch", "list", "create", "delete"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "watch", "list"]},
    ]
    role = k8s_object("rbac.authorization.k8s.io/v1", "Role", "jupyterhub-spawner", labels, namespace=ns, rules=rules)
    binding = k8s_object(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "jupyterhub-spawner",
        labels,
        namespace=ns,
        subjects=[{"kind": "ServiceAccount", "name": HUB_ACCOUNT, "namespace": hub.namespace}],
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "jupyterhub-spawner"},
    )
    peers = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": hub.namespace}}}]
    spec = {"podSelector": {"matchLabels": SINGLEUSER}, "policyTypes": ["Ingress"], "ingress": [{"from": peers}]}
    policy = k8s_object("networking.k8s.io/v1", "NetworkPolicy", "allow-jupyterhub", labels, namespace=ns, spec=spec)
    own = cluster.platform is not None and "jupyterhub" in cluster.platform.model_fields_set
    hub_at = cluster_at + ("platform", "jupyterhub") if own else ("platform", "jupyterhub")
    if why.on:
        for body in (role, binding, policy):
            why.meta(
                body,
                prov.default("fleetgen's name for the hub's access"),
                prov.team_labels(at),
                prov.derived("team-<name>", at + ("name",)),
            )
        why.set(role, ("rules",), prov.default("what KubeSpawner needs to start a notebook (the chart's hub Role)"))
        why.set(binding, ("subjects",), prov.derived("the chart's hub ServiceAccount in the hub's namespace", hub_at))
        why.set(binding, ("roleRef",), prov.default("the hub's Role"))
        why.set(policy, ("spec",), prov.derived("the hub and proxy reach notebook pods", hub_at))
    return [Manifest(body, hub_at) for body in (role, binding, policy)]

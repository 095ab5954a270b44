"""The fleet.yaml model: frozen pydantic models, one module per section of the file.

The modules that define models do not import `annotations` from `__future__`: with it, every field's annotation is a
string that pydantic compiles and evaluates on each start; without it, pydantic reads the objects themselves. A forward
reference is quoted where it is needed.
"""

from fleetgen.model.approvals import ApprovalCondition, ApprovalRule
from fleetgen.model.cluster import Cluster, VersionSet
from fleetgen.model.fleet import API_VERSION, Fleet, GitOps, Metadata, PriorityClass
from fleetgen.model.node_pool import GPU_RESOURCE, NodePool
from fleetgen.model.rollout import COMPONENTS, UPGRADE_COMPONENTS, Rollout, Upgrade, UpgradeWave
from fleetgen.model.sharing import Queue
from fleetgen.model.team import Placement, Quota, Resources, Team
from fleetgen.model.types import Quantity, Version

__all__ = [
    "API_VERSION",
    "COMPONENTS",
    "GPU_RESOURCE",
    "ApprovalCondition",
    "ApprovalRule",
    "Cluster",
    "Fleet",
    "GitOps",
    "Metadata",
    "NodePool",
    "Placement",
    "PriorityClass",
    "Quantity",
    "Queue",
    "Quota",
    "Resources",
    "Rollout",
    "Team",
    "UPGRADE_COMPONENTS",
    "Upgrade",
    "UpgradeWave",
    "Version",
    "VersionSet",
]

"""The fleet.yaml model."""

from fleetgen.model.fleet import (
    API_VERSION,
    GPU_RESOURCE,
    ApprovalCondition,
    ApprovalRule,
    Cluster,
    Fleet,
    GitOps,
    Metadata,
    NodePool,
    Placement,
    PriorityClass,
    Queue,
    Quota,
    Resources,
    Team,
    VersionSet,
)
from fleetgen.model.types import Quantity, Version

__all__ = [
    "API_VERSION",
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
    "Team",
    "Version",
    "VersionSet",
]

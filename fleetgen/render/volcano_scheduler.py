"""Volcano's scheduler configuration on a cluster that runs Volcano: the chart's, with what the team queues need.

The Volcano chart takes the scheduler's whole configuration as one value
(`custom.scheduler_config_override`) and otherwise uses its own file, config/volcano-scheduler.conf.
Its default runs the actions enqueue, allocate and backfill: no queue ever gets back what another
took, so a team queue's guarantee (its quota) and `reclaimable` would do nothing once the pools are
full. Where the queues are reclaimable, fleetgen writes the chart's default with the `reclaim`
action after them (the order Volcano's own guides give), which takes resources back from queues
above their deserved share (the proportion plugin, by weight and guarantee).
"""

from __future__ import annotations

from typing import Any

from fleetgen.model import Cluster
from fleetgen.render.kueue_config import config_text

DEFAULT_ACTIONS = ("enqueue", "allocate", "backfill")
# The pinned chart's config/volcano-scheduler.conf, its actions apart (a test compares the two).
CHART_TIERS: tuple[dict[str, Any], ...] = (
    {"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}, {"name": "conformance"}]},
    {
        "plugins": [
            {"name": "overcommit"},
            {"name": "drf", "enablePreemptable": False},
            {"name": "predicates"},
            {"name": "proportion"},
            {"name": "nodeorder"},
            {"name": "binpack"},
        ]
    },
)


def scheduler_configuration(cluster: Cluster) -> dict[str, Any]:
    """The configuration Volcano's scheduler reads on `cluster` (which runs Volcano)."""
    reclaim = cluster.volcano is not None and cluster.volcano.reclaimable
    actions = (*DEFAULT_ACTIONS, "reclaim") if reclaim else DEFAULT_ACTIONS
    return {"actions": ", ".join(actions), "tiers": [dict(tier) for tier in CHART_TIERS]}


def scheduler_values(cluster: Cluster) -> dict[str, Any]:
    """The chart value that carries it, as YAML text."""
    return {"custom": {"scheduler_config_override": config_text(scheduler_configuration(cluster))}}

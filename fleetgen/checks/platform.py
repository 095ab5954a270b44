"""Checks of what the platform add-ons do with the rest of fleet.yaml: Kueue's fair sharing against the queues' settings.

Kueue's Configuration (render/kueue_config.py) decides whether fair sharing is on; the queues
and cohorts hold settings that count only with it on (fairSharingWeight) or only with it off
(borrowWithinCohort). A setting the controller will ignore is a warning at its line.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import Fleet
from fleetgen.model.platform import Kueue, cluster_platform


def check_fair_sharing_settings(fleet: Fleet) -> Iterator[Finding]:
    for index, cluster in enumerate(fleet.clusters):
        kueue = cluster_platform(fleet.platform, cluster.platform).kueue
        if not kueue.enabled:
            continue  # the cluster runs Kueue some other way: its configuration is not fleetgen's
        here: FieldPath = ("clusters", index)
        on = fair_sharing_on(fleet, index, kueue)
        for q, queue in enumerate(cluster.queues):
            if not on and queue.fair_sharing_weight is not None:
                # fix: Set platform.kueue.fairSharing: true for the cluster, or drop the weights
                yield Finding(
                    here + ("queues", q, "fairSharingWeight"),
                    f"Kueue ignores fairSharingWeight: fair sharing is off on {cluster.name} (platform.kueue.fairSharing: false)",
                    Severity.WARNING,
                )
            borrow = queue.preemption.borrow_within_cohort
            if on and borrow is not None and borrow.policy != "Never":
                yield Finding(
                    here + ("queues", q, "preemption", "borrowWithinCohort"),
                    f"Kueue ignores borrowWithinCohort under fair sharing, which is on on {cluster.name}; "
                    "drop it or set platform.kueue.fairSharing: false",
                    Severity.WARNING,
                )
        for c, cohort in enumerate(cluster.cohorts):
            if not on and cohort.fair_sharing_weight is not None:
                # fix: Set platform.kueue.fairSharing: true for the cluster, or drop the weights
                yield Finding(
                    here + ("cohorts", c, "fairSharingWeight"),
                    f"Kueue ignores fairSharingWeight: fair sharing is off on {cluster.name} (platform.kueue.fairSharing: false)",
                    Severity.WARNING,
                )


PLATFORM_CHECKS = (check_fair_sharing_settings,)


def fair_sharing_on(fleet: Fleet, index: int, kueue: Kueue) -> bool:
    """Fair sharing as fleet.yaml sets it, else on exactly where a weight is set."""
    if kueue.fair_sharing is not None:
        return kueue.fair_sharing
    cluster = fleet.clusters[index]
    return any(q.fair_sharing_weight is not None for q in cluster.queues) or any(c.fair_sharing_weight is not None for c in cluster.cohorts)

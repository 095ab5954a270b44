"""fleetgen's own deprecations: a rule that would refuse a fleet.yaml the previous release accepted ships first
as a warning, naming the field, the release that will refuse it, and the fix (`fleetgen migrate` makes it).

Each deprecation finds where a fleet uses what is going away (`places`: the field, and what is wrong there);
authoring/migrate.py holds one rewrite per deprecation and applies it to fleet.yaml in place, comments kept.
Until the release that refuses it, the fleet renders as the previous release rendered it. CHANGELOG.md lists
every entry here under "Deprecated", and under "Breaking" in the release that refuses it.
"""

from collections.abc import Callable, Iterator
from typing import NamedTuple

from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import Fleet

Place = tuple[FieldPath, str]  # the field, and what is deprecated there


class Deprecation(NamedTuple):
    name: str
    deprecated_in: str  # the fleetgen release that first warns
    refused_in: str  # the release that will refuse it
    fix: str  # what to do (and what migrate does), in words
    places: Callable[[Fleet], Iterator[Place]]

    def finding(self, place: Place) -> Finding:
        at, what = place
        # fix: Make the change the message names, or run fleetgen migrate
        return Finding(
            at,
            f"deprecated since fleetgen {self.deprecated_in}: {what}; fleetgen {self.refused_in} will refuse it. "
            f"Fix: {self.fix} (fleetgen migrate does)",
            Severity.WARNING,
        )


def _cpu_pools_with_a_gpu_model(fleet: Fleet) -> Iterator[Place]:
    """Before 0.1.0 every pool needed a gpuModel, so a CPU-only pool carried one such as `none`."""
    for c, cluster in enumerate(fleet.clusters):
        for p, pool in enumerate(cluster.node_pools):
            if not pool.gpus_per_node and pool.gpu_model is not None:
                yield ("clusters", c, "nodePools", p, "gpuModel"), f"a CPU-only pool (gpusPerNode 0) names GPU model {pool.gpu_model!r}"


def _unnamed_queue_choices(fleet: Fleet) -> Iterator[Place]:
    """Before 0.1.0 a team on a cluster with several queues silently joined the first."""
    clusters = {c.name: c for c in fleet.clusters}
    for t, team in enumerate(fleet.teams):
        for name, placement in team.clusters.items():
            cluster = clusters.get(name)
            if cluster is None or len(cluster.queues) < 2 or (placement and placement.queue):
                continue
            queues = ", ".join(q.name for q in cluster.queues)
            first = cluster.queues[0].name
            what = f"{name} has {len(cluster.queues)} queues ({queues}) and team {team.name}'s LocalQueue joins the first, {first}"
            yield ("teams", t, "clusters", name), what


DEPRECATIONS: tuple[Deprecation, ...] = (
    Deprecation("cpu-pool-gpu-model", "0.1.0", "0.2.0", "drop gpuModel from the CPU-only pool", _cpu_pools_with_a_gpu_model),
    Deprecation(
        "unnamed-queue-choice",
        "0.1.0",
        "0.2.0",
        "name the queue the team's LocalQueue feeds there (queue: the first keeps today's choice)",
        _unnamed_queue_choices,
    ),
)


def check_deprecations(fleet: Fleet) -> Iterator[Finding]:
    """A warning at every place a fleet uses something a later release will refuse."""
    for deprecation in DEPRECATIONS:
        for place in deprecation.places(fleet):
            yield deprecation.finding(place)

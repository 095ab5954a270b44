"""One model of what a team can run where: its namespace quota, its Kueue queue (owned and borrowable GPUs) and its
Volcano guarantee on each cluster, checked against each other; the capacity and cost report reads the same numbers.

The namespace ResourceQuota caps everything the team runs on a cluster, whichever scheduler admits
it. A queue's GPUs are what it owns (its nominal quota over its GPU flavors) plus what it may
borrow from its cohort; its teams can run at most the sum of their quotas there. A team **holds**
what is kept for it: its share of its queue's own GPUs (in proportion to the quotas of the teams
that feed the queue) plus its Volcano guarantee, never more than its quota. What it **may borrow**
is the rest of its quota that its queue may borrow: borrowable GPUs are neither held nor charged.
"""

from collections.abc import Iterator
from fractions import Fraction
from typing import NamedTuple

from fleetgen.checks.admission import queue_room
from fleetgen.errors import Finding, Severity
from fleetgen.model import Cluster, Fleet, Team
from fleetgen.model.sharing import GPU


class QueueGpus(NamedTuple):
    """A ClusterQueue's GPUs over its GPU flavors, and the teams that feed it with their GPU quotas there."""

    name: str
    cohort: str | None
    owned: int
    borrowable: int
    quotas: tuple[tuple[str, int], ...]  # (team, GPU quota), in fleet order
    runnable: int  # the most its teams can ever run at once: the sum of their quotas


class Entitlement(NamedTuple):
    """What team `team` can run on `cluster`, in GPUs."""

    team: str
    cluster: str
    quota: int
    queue: QueueGpus | None  # None on a cluster without queues
    guarantee: int  # its Volcano queue's guarantee

    @property
    def held(self) -> int:
        """What is kept for the team: its share of its queue's own GPUs plus its Volcano guarantee, at most its quota."""
        own = 0
        if self.queue is not None and self.queue.runnable:
            own = self.queue.owned * self.quota // self.queue.runnable  # whole GPUs, rounded down
        return min(self.quota, own + self.guarantee)

    @property
    def may_borrow(self) -> int:
        """What it may borrow through its queue beyond what it holds, as far as its quota lets it run."""
        borrowable = self.queue.borrowable if self.queue else 0
        return max(0, min(borrowable, self.quota - self.held))


def queue_gpus(fleet: Fleet, cluster: Cluster, index: int) -> QueueGpus:
    queue = cluster.queues[index]
    flavors = queue.flavors if queue.flavors is not None else tuple(p.name for p in cluster.node_pools)
    owned = borrowable = Fraction(0)
    for pool in cluster.node_pools:
        if pool.name in flavors and pool.gpus_per_node:
            own, borrow = queue_room(cluster, index, pool, GPU)
            owned, borrowable = owned + own, borrowable + borrow
    quotas = tuple((team.name, team.quota_on(cluster.name).requests.gpu or 0) for team in fleet.queue_teams(cluster, queue.name))
    return QueueGpus(queue.name, queue.cohort, int(owned), int(borrowable), quotas, sum(q for _, q in quotas))


def entitlements_on(fleet: Fleet, cluster: Cluster) -> dict[str, Entitlement]:
    """Team name -> its entitlement on `cluster`, for every team there. Each queue is summed once, not once a team
    (that was quadratic in a cluster's teams: most of `check`'s time on a fleet of 400 teams)."""
    queues = {queue.name: queue_gpus(fleet, cluster, q) for q, queue in enumerate(cluster.queues)}
    return {team.name: _entitlement(team, cluster, queues) for _, team in fleet.placements[cluster.name]}


def _entitlement(team: Team, cluster: Cluster, queues: dict[str, QueueGpus]) -> Entitlement:
    reserved = cluster.volcano.guarantees.get(team.name) if cluster.volcano else None
    guarantee = reserved.gpu if reserved is not None and reserved.gpu is not None else 0
    quota = team.quota_on(cluster.name).requests.gpu or 0
    return Entitlement(team.name, cluster.name, quota, queues.get(team.queue_on(cluster)), guarantee)


def check_borrowing_beyond_quotas(fleet: Fleet) -> Iterator[Finding]:
    """A queue that may admit more GPUs than the namespace quotas of its teams let them run: the borrowing never runs."""
    for cluster in fleet.clusters:
        for index in range(len(cluster.queues)):
            queue = queue_gpus(fleet, cluster, index)
            admits = queue.owned + queue.borrowable
            if not queue.borrowable or queue.runnable >= admits:
                continue
            quotas = ", ".join(f"{team} {gpus}" for team, gpus in queue.quotas) or "no team"
            idle = min(queue.borrowable, admits - queue.runnable)
            for t, team in fleet.placements[cluster.name]:
                if team.queue_on(cluster) != queue.name:
                    continue
                yield Finding(
                    ("teams", t, "clusters", cluster.name),
                    f"queue {queue.name} on {cluster.name} may admit {admits} GPUs (owns {queue.owned}, may borrow "
                    f"{queue.borrowable} from cohort {queue.cohort}), but the namespace quotas of its teams let them run only "
                    f"{queue.runnable} ({quotas}): {idle} GPU(s) it may borrow never run; raise requests.gpu "
                    "here (borrowed GPUs are not held or charged) or lower the queue's borrowingLimit",
                    Severity.WARNING,
                )


ENTITLEMENT_CHECKS = (check_borrowing_beyond_quotas,)

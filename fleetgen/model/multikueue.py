"""MultiKueue: one job queue across the fleet. A manager cluster's ClusterQueues dispatch workloads to workers.

Each manager queue holds one GPU model (an accelerator class): Kueue does not carry the manager's
flavor to the worker (kubernetes-sigs/kueue#16010), so a queue over several models would charge one
model's quota on the manager while the job runs on another. Workers are listed in dispatch order or
chosen by a selector over the clusters that have pools of the queue's model. Facts and their
sources: fleetgen/compat/multikueue.yaml.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from fleetgen.model.spec import Spec
from fleetgen.model.strict import unique_by
from fleetgen.model.team import Placement, Team
from fleetgen.model.types import DnsLabel, DnsSubdomain, Token

if TYPE_CHECKING:
    from fleetgen.model.cluster import Cluster

MAX_WORKERS = 20  # MultiKueueConfig.spec.clusters: maxItems 20
KUBECONFIG_DIR = "/etc/multikueue/kubeconfigs/"  # where Kueue 0.19 accepts Path kubeconfigs (MultiKueueKubeConfigPathValidation)
DISPATCHERS = {
    "AllAtOnce": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    "Incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
}
_GPU_MODEL = r"^[A-Za-z0-9][A-Za-z0-9-]*$"


class ExternalSecretRef(Spec):
    """An External Secrets Operator ExternalSecret that writes the kubeconfig Secret from a secret store."""

    store: DnsSubdomain
    """Name of the SecretStore or ClusterSecretStore."""
    store_kind: Literal["SecretStore", "ClusterSecretStore"] = "ClusterSecretStore"
    """Kind of the store."""
    key: Token = Field(min_length=1)
    """The store's key of the worker's kubeconfig."""
    property: Token | None = None
    """The property of that key that holds the kubeconfig, when the key holds several."""


class Kubeconfig(Spec):
    """How the manager reaches one worker: a Secret in Kueue's namespace (key `kubeconfig`), never a credential in Git."""

    secret: DnsSubdomain | None = None
    """Name of the Secret the operator creates in Kueue's namespace; multikueue-<worker> when nothing is set."""
    external_secret: ExternalSecretRef | None = None
    """Let an ExternalSecret write that Secret from a secret store (the External Secrets Operator must run on the manager)."""
    path: Token | None = None
    """A kubeconfig file on the manager's Kueue pod (Kueue's locationType Path): development only, under /etc/multikueue/kubeconfigs/."""

    @model_validator(mode="after")
    def _secret_or_path(self) -> "Kubeconfig":
        if self.path is not None and (self.secret is not None or self.external_secret is not None):
            raise ValueError("path is a file on the manager, not a Secret: set either path or secret/externalSecret")
        return self

    def secret_name(self, worker: str) -> str:
        return self.secret or f"multikueue-{worker}"


class WorkerSelector(Spec):
    """The clusters with node pools of the queue's GPU model, narrowed by region and environment, in fleet order."""

    regions: Annotated[tuple[DnsLabel, ...], unique_by()] = ()
    """Only clusters in these regions; any region when left out."""
    environments: Annotated[tuple[Literal["dev", "staging", "production"], ...], unique_by()] = ()
    """Only clusters of these environments; any when left out."""


class ManagerQueue(Spec):
    """A ClusterQueue on the manager for one GPU model, dispatching to workers that have it."""

    name: DnsSubdomain
    """Name of the manager's ClusterQueue (and of its AdmissionCheck and MultiKueueConfig); teams on the manager name it as their queue."""
    gpu_model: Annotated[Token, Field(pattern=_GPU_MODEL)]
    """The accelerator class the queue hands out (H100, A100 ...): every worker must have pools of it."""
    workers: Annotated[tuple[DnsLabel, ...], unique_by()] | None = None
    """Worker clusters in dispatch order (the Incremental dispatcher tries the first ones first); at most 20."""
    select: WorkerSelector | None = None
    """Instead of `workers`: every cluster with pools of the GPU model that matches, in fleet order."""
    quota_management: Literal["Manual", "Automated"] = "Manual"
    """Automated: Kueue sets the manager queue's quota to the sum of the workers' (Kueue 0.18 or later, its
    MultiKueueManagerQuotaAutomation gate, which fleetgen turns on); Manual: fleetgen writes that sum itself."""

    @model_validator(mode="after")
    def _workers_or_select(self) -> "ManagerQueue":
        if (self.workers is None) == (self.select is None):
            # fix: Keep either workers or select on the queue
            raise ValueError("name the workers or a select, exactly one of them")
        return self

    def worker_names(self, clusters: "Iterable[Cluster]", manager: str) -> tuple[str, ...]:
        """The queue's workers: as listed, or the selector's matches (never the manager) in fleet order."""
        if self.workers is not None:
            return self.workers
        chosen = self.select or WorkerSelector()
        return tuple(
            c.name
            for c in clusters
            if c.name != manager
            and any(p.gpu_model == self.gpu_model for p in c.node_pools)
            and (not chosen.regions or c.region in chosen.regions)
            and (not chosen.environments or c.environment in chosen.environments)
        )


class Worker(Spec):
    """What differs for one worker cluster."""

    kubeconfig: Kubeconfig = Kubeconfig()
    """How the manager reaches it."""


class MultiKueue(Spec):
    """MultiKueue: the manager cluster, its queues and their workers; fleetgen keeps each worker's namespaces,
    LocalQueues and the manager's access in step with the manager."""

    manager: DnsLabel
    """The manager cluster: it holds the queues teams submit to and runs no dispatched job itself."""
    dispatcher: Literal["AllAtOnce", "Incremental", "External"] = "AllAtOnce"
    """How the manager picks workers: all at once, a few at a time in the workers' order, or by a controller of your own."""
    external_dispatcher: Token | None = Field(default=None, pattern=r"^[a-z0-9.-]+/[a-z0-9-]+$")
    """The controller name of your dispatcher (dispatcher External only), e.g. example.com/cheapest-first."""
    queues: Annotated[tuple[ManagerQueue, ...], unique_by("name")] = Field(min_length=1)
    """The manager's queues, one per GPU model."""
    workers: dict[DnsLabel, Worker] = {}
    """Per worker cluster, what differs from the defaults (its kubeconfig Secret)."""

    @model_validator(mode="after")
    def _external_needs_a_name(self) -> "MultiKueue":
        if (self.dispatcher == "External") != (self.external_dispatcher is not None):
            # fix: Set externalDispatcher only with dispatcher: External
            raise ValueError("externalDispatcher names the controller of dispatcher External, and is set only then")
        return self

    def dispatcher_name(self) -> str:
        return self.external_dispatcher or DISPATCHERS[self.dispatcher]

    def worker(self, name: str) -> Worker:
        return self.workers.get(name, Worker())


def queue_workers(multi_kueue: MultiKueue, clusters: "Iterable[Cluster]") -> dict[str, tuple[str, ...]]:
    """Manager queue name -> its workers, in dispatch order."""
    listed = tuple(clusters)
    return {q.name: q.worker_names(listed, multi_kueue.manager) for q in multi_kueue.queues}


def worker_queue_for(cluster: "Cluster", gpu_model: str) -> str | None:
    """The first ClusterQueue of a worker that hands out pools of `gpu_model`, if any."""
    models = {p.name: p.gpu_model for p in cluster.node_pools}
    for queue in cluster.queues:
        names = queue.flavors if queue.flavors is not None else tuple(models)
        if any(models.get(n) == gpu_model for n in names):
            return queue.name
    return None


def implied_workers(multi_kueue: MultiKueue, clusters: "tuple[Cluster, ...]", team: Team) -> tuple[str, ...]:
    """The workers a team on the manager is on because its queue there dispatches to them (the ones it does not list)."""
    manager = next((c for c in clusters if c.name == multi_kueue.manager), None)
    if manager is None or manager.name not in team.clusters:
        return ()
    workers = queue_workers(multi_kueue, clusters).get(team.queue_on(manager), ())
    return tuple(w for w in workers if w not in team.clusters and w != manager.name)


def on_workers(multi_kueue: MultiKueue, clusters: "tuple[Cluster, ...]", teams: tuple[Team, ...]) -> tuple[Team, ...]:
    """The teams, each on the workers of its manager queue too: at its default quota, its LocalQueue feeding the
    worker's first queue with pools of the queue's GPU model (a team that lists a worker keeps its own values there)."""
    by_name = {c.name: c for c in clusters}
    models = {q.name: q.gpu_model for q in multi_kueue.queues}
    out = []
    for team in teams:
        added = implied_workers(multi_kueue, clusters, team)
        if not added:
            out.append(team)
            continue
        model = models[team.queue_on(by_name[multi_kueue.manager])]
        placements = dict(team.clusters)
        for worker in added:
            cluster = by_name.get(worker)
            if cluster is None:  # an unknown worker: reported at the queue, not as the team's
                continue
            queue = worker_queue_for(cluster, model) or next((q.name for q in cluster.queues), None)
            if queue is None:  # a worker without queues: reported at the queue's workers, nothing to place the team in
                continue
            placements[worker] = Placement(queue=queue)  # named: fleetgen's choice, not the team's
        out.append(team.model_copy(update={"clusters": placements}))
    return tuple(out)


def dispatching_queues(multi_kueue: MultiKueue | None, cluster: str) -> set[str]:
    """The MultiKueue queues on `cluster`: the manager's queue names, none elsewhere."""
    if multi_kueue is None or cluster != multi_kueue.manager:
        return set()
    return {q.name for q in multi_kueue.queues}

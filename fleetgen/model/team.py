"""A team: who it is, who pays, its quotas on each cluster it runs on, and what it may use there."""

from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from fleetgen.model.alerts import AlertOverride, TeamAlertName
from fleetgen.model.naming import TeamNames
from fleetgen.model.partitioning import SliceCounts
from fleetgen.model.registries import Registry
from fleetgen.model.slo import Endpoint
from fleetgen.model.spec import Spec
from fleetgen.model.storage import Volumes
from fleetgen.model.strict import Identifier, Int, unique_by
from fleetgen.model.tenancy import TeamTenancy
from fleetgen.model.types import Date, DnsLabel, DnsSubdomain, LabelValue, Line, Quantity

if TYPE_CHECKING:
    from fleetgen.model.cluster import Cluster
    from fleetgen.model.storage import Volume


class Resources(Spec):
    cpu: Quantity | None = None
    """CPU, e.g. 64 or 500m."""
    memory: Quantity | None = None
    """Memory, e.g. 256Gi."""
    gpu: Int | None = Field(default=None, ge=0)
    """GPUs (nvidia.com/gpu)."""


class Requests(Resources):
    slices: SliceCounts = {}
    """Partitioned GPUs by resource name: MIG slices (mig-1g.10gb: 7) or renamed time-sliced GPUs (gpu.shared: 4). A
    placement's value of a slice replaces the team's for that slice; `slices: {}` in a placement clears them all there."""


class Quota(Spec):
    requests: Requests = Requests()
    """Sum of the requests of the namespace's pods."""
    limits: Resources = Resources()
    """Sum of the limits of the namespace's pods (a GPU limit is not enforced)."""
    pods: Int | None = Field(default=None, ge=0)
    """Number of pods."""
    storage: dict[DnsSubdomain, Quantity] = {}
    """Storage the team's claims may request, by storage class (<class>.storageclass.storage.k8s.io/requests.storage)."""
    persistent_volume_claims: Int | None = Field(default=None, ge=0)
    """Number of PersistentVolumeClaims."""

    def over(self, override: "Quota") -> "Quota":
        """This quota with every value that `override` sets replaced."""

        def merge(base: Resources, top: Resources) -> Resources:
            return base.model_copy(update={k: v for k, v in top if v is not None and k != "slices"})

        requests = merge(self.requests, override.requests)
        # a placement's slice replaces that slice only; an empty map it writes clears them all
        cleared = "slices" in override.requests.model_fields_set and not override.requests.slices
        slices = {} if cleared else {**self.requests.slices, **override.requests.slices}
        claims = override.persistent_volume_claims
        return Quota(
            requests=requests.model_copy(update={"slices": slices}),
            limits=merge(self.limits, override.limits),
            pods=override.pods if override.pods is not None else self.pods,
            storage={**self.storage, **override.storage},  # a placement's class replaces that class only
            persistent_volume_claims=claims if claims is not None else self.persistent_volume_claims,
        )


class Placement(Quota):
    """A team on one cluster: quota values that differ from the team's defaults, and its queue."""

    queue: DnsSubdomain | None = None
    """ClusterQueue the team's LocalQueue feeds; the cluster's first queue when left out."""
    volumes: Volumes = ()
    """PersistentVolumeClaims the team gets in its namespace here; kept when the team or the volume leaves fleet.yaml."""
    until: Date | None = None
    """The last day of a time-bound grant: the values here are the team's until then (UTC); validate warns 14 days
    before and fails after it, until a pull request takes the grant back."""
    reason: Line = ""
    """Why the team holds these values here (the business justification of a grant; required with `until`)."""
    workload: Literal["training", "inference", "notebooks"] | None = None
    """What the grant is for."""


class Team(Spec):
    name: DnsLabel = Field(max_length=58)
    """Team name; its namespace is team-<name>."""
    group: Identifier
    """Identity-provider group (e.g. a Microsoft Entra ID group object id) bound to the team's Role."""
    cost_center: LabelValue
    """Cost centre label on every object of the team."""
    project: LabelValue
    """Project label on every object of the team."""
    quota: Quota
    """Default quota on every cluster the team is on."""
    clusters: dict[DnsLabel, Placement | None]
    """Clusters the team is on, each with the quota values that differ there (or nothing)."""
    priority_classes: Annotated[tuple[DnsSubdomain, ...], unique_by()] | None = None
    """Priority classes the team's pods may use; the fleet's `tenancy.priorityClasses` when left out."""
    allowed_ingress_namespaces: Annotated[tuple[DnsLabel, ...], unique_by()] = ()
    """Namespaces, besides the team's own, whose pods may reach the team's pods."""
    alerts: dict[TeamAlertName, AlertOverride] = {}
    """Changes to the team-scoped alerts for this team (on every cluster it is on)."""
    names: TeamNames = TeamNames()
    """The team's own names of its objects, where they differ from the fleet's `naming`."""
    endpoints: Annotated[tuple[Endpoint, ...], unique_by("name")] = ()
    """Inference endpoints the team serves, each with an SLO tier: burn-rate alerts and an error-budget panel."""
    registries: Annotated[tuple[Registry, ...], unique_by()] = ()
    """Registries the team's images may come from besides the fleet's `registries`, e.g. ghcr.io/contoso-nlp."""
    tenancy: TeamTenancy = TeamTenancy()
    """What differs for this team from the fleet's `tenancy` (Pod Security level, Service types, Role, LimitRange)."""

    @property
    def namespace(self) -> str:
        return f"team-{self.name}"

    @cached_property
    def quotas(self) -> dict[str, Quota]:
        """The quota on each cluster the team is on, placement values over the defaults; merged once, not per use."""
        return {name: self.quota.over(placement) if placement else self.quota for name, placement in self.clusters.items()}

    def volumes_on(self, cluster: str) -> "tuple[Volume, ...]":
        placement = self.clusters.get(cluster)
        return placement.volumes if placement else ()

    def quota_on(self, cluster: str) -> Quota:
        return self.quotas.get(cluster, self.quota)

    def queue_on(self, cluster: "Cluster") -> str:
        """The ClusterQueue the team's LocalQueue feeds on `cluster`: its placement's, else the cluster's first."""
        placement = self.clusters.get(cluster.name)
        return placement.queue if placement and placement.queue else cluster.queues[0].name

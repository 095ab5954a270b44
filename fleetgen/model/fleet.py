"""The typed fleet.yaml: frozen pydantic models, camelCase in YAML, unknown fields rejected.

The sections live in modules of their own (cluster, node_pool, team, alerts, approvals, rollout,
sharing, slo, platform, naming); this module holds the whole fleet and what it works out once.
Cross-references, capacity and other checks that span models live in fleetgen.checks.fleet, so that
every problem is collected and reported at once with its position.
"""

from functools import cached_property
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from fleetgen.errors import FieldPath, InputError
from fleetgen.model.alerts import Alerts
from fleetgen.model.approvals import ApprovalRule
from fleetgen.model.argocd import ArgoCd
from fleetgen.model.cloud_quota import CloudAccount
from fleetgen.model.cluster import Cluster, VersionSet
from fleetgen.model.compat import Compatibility
from fleetgen.model.git_credentials import SECRET_KEYS, GitCredentials, url_problem
from fleetgen.model.multikueue import MultiKueue, implied_workers, on_workers
from fleetgen.model.naming import Naming, ObjectNames, name_source, names_of
from fleetgen.model.platform import AddOn, ExternalSecretsChart, Platform, VolcanoChart, cluster_platform
from fleetgen.model.registries import Registry
from fleetgen.model.rollout import Rollout, Upgrade
from fleetgen.model.secret_store import Secrets
from fleetgen.model.sharing import Scheduling
from fleetgen.model.slo import Slo
from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool, Float, Identifier, Int, unique_by
from fleetgen.model.team import Team
from fleetgen.model.tenancy import Access, Tenancy, access_of
from fleetgen.model.types import DnsLabel, DnsSubdomain, LabelValue, Line, Text, Token

API_VERSION = "fleetgen/v1alpha1"


class Metadata(Spec):
    name: DnsLabel
    """Name of the fleet; labels every object fleetgen renders."""
    description: Line = ""
    """One line saying what the fleet is for."""
    owner: DnsLabel = "platform"
    """Team label put on fleet-wide objects (priority classes, cluster queues, flavors)."""
    cost_center: LabelValue
    """Cost centre label put on fleet-wide objects."""
    platform_owners: Annotated[tuple[Identifier, ...], unique_by()] = ()
    """Groups that approve what fleetgen always gates (the gate itself, tenant access, removals); else the owner team."""


class GitOps(Spec):
    engine: Literal["flux", "argocd"]
    """Which GitOps engine syncs the rendered tree: Flux objects or Argo CD Applications are rendered for it."""
    repository: Token = Field(pattern=r"^(https://|ssh://|git@)\S+$")
    """URL of the Git repository that holds the rendered tree."""
    branch: Identifier = "main"
    """Branch the clusters follow."""
    path: Token = Field(default=".", pattern=r"^\.?[^.\s][^\s]*$|^\.$")
    """Folder in the repository that holds base/ and clusters/ ("." for the top)."""
    interval: Token = Field(default="5m", pattern=r"^(\d+(ms|s|m|h))+$")
    """How often the engine reconciles (a Go duration such as 1m or 10m)."""
    argocd: ArgoCd = ArgoCd()
    """Argo CD only: a hub Argo CD or one in each cluster, and how its sync waves wait."""
    credentials: GitCredentials | None = None
    """How the engine authenticates to a private repository: the kind of credential and the Secret that holds it (never
    its values); left out: the repository is public."""

    @field_validator("repository")
    @classmethod
    def _no_credential_in_url(cls, url: str) -> str:
        problem = url_problem(url, "flux", None)
        if problem is not None:  # the URL itself is not repeated: it holds the secret
            # fix: Write the repository URL as the message says
            raise ValueError(f"the URL {problem}")
        return url

    @field_validator("credentials")
    @classmethod
    def _credentials_fit(cls, credentials: GitCredentials | None, info: ValidationInfo) -> GitCredentials | None:
        engine, url = info.data.get("engine"), info.data.get("repository")
        if credentials is None or engine is None or url is None:  # a missing engine or URL is reported at its own field
            return credentials
        if (engine, credentials.kind) not in SECRET_KEYS:
            # fix: Use basic-auth with the token as the password
            raise ValueError(f"kind {credentials.kind} is Flux's: Argo CD reads an HTTPS token as basic-auth's password")
        if engine != "argocd" and "argocd_secret_type" in credentials.model_fields_set:
            # fix: Drop argocdSecretType, or set gitops.engine: argocd
            raise ValueError(f"argocdSecretType is set only with engine argocd (the engine is {engine})")
        problem = url_problem(url, engine, credentials)
        if problem is not None:
            # fix: Write a URL that fits the credential kind (ssh:// for ssh, https:// for the others)
            raise ValueError(f"kind {credentials.kind}: the repository {url} {problem}")
        return credentials

    @field_validator("argocd")
    @classmethod
    def _argocd_needs_argocd(cls, value: ArgoCd, info: ValidationInfo) -> ArgoCd:
        engine = info.data.get("engine")
        if engine is not None and engine != "argocd":  # only a value written in fleet.yaml reaches here
            # fix: Drop the field, or set gitops.engine: argocd
            raise ValueError(f"set only with engine argocd (the engine is {engine})")
        return value


class PriorityClass(Spec):
    name: DnsSubdomain = Field(json_schema_extra={"not": {"type": "string", "pattern": "^system-"}})
    """Name pods use in priorityClassName; `system-` names are Kubernetes' own."""
    value: Int = Field(ge=-2_147_483_648, le=1_000_000_000)
    """Scheduling priority; values above one billion are reserved for Kubernetes' own classes."""
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    """Never: pods of this class wait rather than preempt others."""
    global_default: Bool = False
    """The class of pods that name none; at most one class may be the default."""
    description: Text = ""
    """What the class is for; shown by kubectl describe."""

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        # The API server refuses the prefix (pkg/apis/scheduling/validation ValidatePriorityClass); say so here,
        # at the name, rather than at the rendered PriorityClass.
        if name.startswith("system-"):
            # fix: Rename the priority class
            raise ValueError("priority class names with 'system-' prefix are reserved for system use only")
        return name


class Pricing(Spec):
    currency: Identifier = "USD"
    gpu_hour: dict[Identifier, Annotated[Float, Field(ge=0)]] = {}
    """Price of one GPU for one hour, by VM SKU (a node pool's vmSize); a CPU-only VM's entry is the price of its node."""
    node_hour: dict[Identifier, Annotated[Float, Field(ge=0)]] = {}
    """Price of one node for one hour, by VM SKU: CPU-only pools, or GPU VMs priced per node (their GPU-hour is this over their GPUs)."""


class Capacity(Spec):
    gpu_overcommit: Float | None = Field(default=None, ge=1.0, le=100.0)
    """Allow team GPU quotas on a cluster, and the nominal quotas of its ClusterQueues and Cohorts on each node pool, to add up
    to this many times what the pools yield; without it they must fit."""
    lead_time_weeks: Int = Field(default=12, ge=1, le=104)
    """How far ahead GPU capacity is planned: `fleetgen forecast` flags every cluster, pool and team quota that may run out
    sooner (the operations chapter plans 8-12 weeks ahead: quota increases, reservations, new node pools)."""


class Fleet(Spec):
    api_version: Literal["fleetgen/v1alpha1"]
    """Version of the fleet.yaml format."""
    kind: Literal["Fleet"]
    metadata: Metadata
    """Who the fleet is and who pays for its shared objects."""
    gitops: GitOps
    """How clusters sync the rendered tree."""
    capacity: Capacity = Capacity()
    """Capacity policy."""
    scheduling: Scheduling = Scheduling()
    """Fleet-wide scheduling options."""
    version_sets: dict[DnsLabel, VersionSet] = Field(min_length=1)
    """Named rows of the compatibility matrix; clusters refer to them by name."""
    naming: Naming = Naming()
    """Names of every team's objects (Role, RoleBinding, ResourceQuotas, NetworkPolicy, LocalQueue); fleetgen's own when left out."""
    priority_classes: Annotated[tuple[PriorityClass, ...], unique_by("name")] = ()
    """PriorityClasses rendered on every cluster."""
    clusters: Annotated[tuple[Cluster, ...], unique_by("name")] = Field(min_length=1)
    """The clusters of the fleet."""
    teams: Annotated[tuple[Team, ...], unique_by("name")] = ()
    """The teams and where they run."""
    registries: Annotated[tuple[Registry, ...], unique_by()] = ()
    """Registries every team's images may come from (a team adds its own); none: images from anywhere."""
    secrets: Secrets | None = None
    """Where the Secrets the rendered objects read come from (Git credentials, image pull Secrets, MultiKueue worker
    kubeconfigs): the External Secrets Operator from a store, or SOPS-encrypted files Flux decrypts; left out: created by hand."""
    tenancy: Tenancy = Tenancy()
    """What teams may do in their namespaces unless a team says otherwise: Pod Security, Service types, priority classes, Role."""
    approvals: Annotated[tuple[ApprovalRule, ...], unique_by("name")] = ()
    """Changes that need approval beyond self-service; a pull request is gated by its base branch's rules."""
    alerts: Alerts = Alerts()
    """GPU alerts and dashboards rendered for every cluster."""
    slo: Slo = Slo()
    """SLO tiers of inference endpoints (teams[].endpoints); the seed's three unless changed here."""
    platform: Platform = Platform()
    """The add-ons the clusters get (Kueue, the NVIDIA GPU Operator, Prometheus Operator CRDs, Volcano), each a pinned Helm chart."""
    pricing: Pricing = Pricing()
    """GPU prices for the cost report."""
    cloud_accounts: Annotated[tuple[CloudAccount, ...], unique_by("name")] = ()
    """The cloud accounts (subscriptions) the clusters run in, with each region's vCPU quota per VM family: validate checks
    that the node pools at their largest size fit."""
    rollout: Rollout = Field(default_factory=Rollout)
    """How version upgrades roll out: soak time, wave size, maintenance windows, freezes."""
    upgrade: Upgrade | None = None
    """The upgrade in progress, as `fleetgen upgrade apply` records it."""
    compatibility: Compatibility = Field(default_factory=Compatibility, description="Compatibility facts of the fleet's own.")
    multi_kueue: MultiKueue | None = None
    """MultiKueue: a manager cluster whose queues dispatch jobs to worker clusters (the MultiKueue how-to guide)."""

    # team -> the workers fleetgen placed it on that its own `clusters` does not list (validate names them)
    _placed_on_workers: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)

    @field_validator("secrets")
    @classmethod
    def _sops_needs_flux(cls, secrets: Secrets | None, info: ValidationInfo) -> Secrets | None:
        gitops = info.data.get("gitops")
        if secrets is not None and secrets.sops is not None and gitops is not None and gitops.engine != "flux":
            raise ValueError(
                f"sops is decrypted by Flux (Kustomization spec.decryption); the engine is {gitops.engine}: use externalSecrets"
            )
        return secrets

    @model_validator(mode="after")
    def _manager_teams_are_on_workers(self) -> "Fleet":
        # A team submitting to a manager queue needs its namespace and LocalQueue on every worker of that queue:
        # fleetgen places it there itself, so the two sides cannot fall out of step.
        if self.multi_kueue is not None:
            known = {c.name for c in self.clusters}
            placed = {t.name: tuple(w for w in implied_workers(self.multi_kueue, self.clusters, t) if w in known) for t in self.teams}
            self._placed_on_workers = {team: workers for team, workers in placed.items() if workers}
            object.__setattr__(self, "teams", on_workers(self.multi_kueue, self.clusters, self.teams))
        return self

    def placed_on_workers(self, team: str) -> tuple[str, ...]:
        """The workers of its manager queue a team is on without listing them (on_workers placed it there)."""
        return self._placed_on_workers.get(team, ())

    @property
    def platform_owners(self) -> tuple[str, ...]:
        """Who approves the built-in rules: `metadata.platformOwners`, else the owner team."""
        return self.metadata.platform_owners or (self.metadata.owner,)

    @cached_property
    def team_object_names(self) -> dict[str, ObjectNames]:
        """Team name -> the names of its objects, filled once per team."""
        return {team.name: names_of(self.naming, team.names, team.name) for team in self.teams}

    @cached_property
    def team_access(self) -> dict[str, Access]:
        """Team name -> what the team may do, worked out once per team."""
        return {team.name: self._access_of(team) for team in self.teams}

    def _access_of(self, team: Team) -> Access:
        return access_of(self.tenancy, self.priority_classes, team.priority_classes, team.tenancy)

    def access(self, team: Team) -> Access:
        """What `team` may do: the fleet's `tenancy` with the team's own values over it."""
        known = self.team_access.get(team.name)
        return known if known is not None else self._access_of(team)

    def registries_of(self, team: Team) -> tuple[str, ...]:
        """The registries `team`'s images may come from: the fleet's, then its own; empty: any."""
        return tuple(dict.fromkeys(self.registries + team.registries))

    def object_names(self, team: Team) -> ObjectNames:
        """The one place render takes a team's object names from: the team's own, else the fleet's.

        Filled once per team of the fleet, not once per object and cluster."""
        known = self.team_object_names.get(team.name)
        return known if known is not None else names_of(self.naming, team.names, team.name)

    def name_source(self, team_index: int, field: str) -> FieldPath:
        """The fleet.yaml field a team's object name comes from."""
        return name_source(self.teams[team_index].names, team_index, field)

    def platform_of(self, cluster: Cluster) -> Platform:
        """One cluster's add-ons: the fleet's, the fields the cluster writes over them, and the GPU Operator release of
        its version set unless the cluster names its own."""
        platform = cluster_platform(self.platform, cluster.platform)
        versions = self.version_sets.get(cluster.version_set)
        mine = cluster.platform
        own = mine is not None and "gpu_operator" in mine.model_fields_set and "version" in mine.gpu_operator.model_fields_set
        if versions is None or versions.gpu_operator is None or own:
            return platform
        operator = platform.gpu_operator.model_copy(update={"version": f"v{versions.gpu_operator}"})
        return platform.model_copy(update={"gpu_operator": operator})

    def queue_teams(self, cluster: Cluster, queue: str) -> list[Team]:
        """The teams on `cluster` whose LocalQueue feeds ClusterQueue `queue`, in fleet order."""
        return [team for _, team in self.placements[cluster.name] if team.queue_on(cluster) == queue]

    @cached_property
    def cluster_named(self) -> dict[str, Cluster]:
        """Cluster name -> cluster: a review looks clusters up by name once a team and cluster, thousands of times."""
        return {c.name: c for c in self.clusters}

    @cached_property
    def placements(self) -> dict[str, list[tuple[int, Team]]]:
        """Cluster name -> (index, team) of the teams on it, in fleet order; built once, not per cluster."""
        on: dict[str, list[tuple[int, Team]]] = {c.name: [] for c in self.clusters}
        for index, team in enumerate(self.teams):
            for cluster in team.clusters:
                on.setdefault(cluster, []).append((index, team))
        return on


def add_on_needed(fleet: Fleet, index: int, addon: AddOn) -> bool:
    """Whether cluster `index` has objects that need the add-on: Volcano only where the cluster runs it, the External Secrets
    Operator only where the fleet's Secrets come from its store, every other add-on everywhere."""
    if isinstance(addon, VolcanoChart):
        return fleet.clusters[index].volcano is not None
    if isinstance(addon, ExternalSecretsChart):
        return fleet.secrets is not None and fleet.secrets.external_secrets is not None
    return True


def cluster_index(fleet: Fleet, name: str, where: str) -> int:
    """The position of cluster `name`; an InputError naming `where` it was asked for when there is none."""
    for index, cluster in enumerate(fleet.clusters):
        if cluster.name == name:
            return index
    raise InputError(f"{where}: no such cluster (known: {', '.join(c.name for c in fleet.clusters)})")

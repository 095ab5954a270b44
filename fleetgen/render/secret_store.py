"""The Secrets fleetgen's objects read, written by the External Secrets Operator from the fleet's store (`secrets`).

With `secrets.externalSecrets`, an ExternalSecret (external-secrets.io/v1) writes each Secret the tree names but never
holds, from the ClusterSecretStore the fleet names; the store's entry `<keyPrefix><Secret name>` holds the Secret's
keys as its properties (`dataFrom.extract`), so one entry per Secret whatever the kind of credential:

- the Git credentials (gitops.credentials): in flux-system on each cluster (Flux), in Argo CD's namespace on each
  cluster (in-cluster) or on the hub (the hub's bootstrap folder). Argo CD's carries its secret-type label and
  `type`/`url` from the template. The engine needs it before its first sync, so the operator creates it once by
  hand (doctor's command); from then on the ExternalSecret keeps its data current (creationPolicy Merge).
- each cluster's image pull Secret (clusters[].imagePullSecret) in every team namespace there, of type
  kubernetes.io/dockerconfigjson;
- each MultiKueue worker's kubeconfig on the manager (render/multikueue.py, unless the worker names its own).

The target Secrets carry no fleetgen label: they are the store's, and drift leaves their data alone.
With `secrets.sops`, Flux decrypts SOPS-encrypted files on apply (render/gitops.py); nothing is rendered here.
"""

from __future__ import annotations

from typing import Any

from fleetgen.errors import FieldPath
from fleetgen.model import Cluster, Fleet, Team
from fleetgen.model.git_credentials import ARGOCD_SECRET_TYPE_LABEL, argocd_secret_url
from fleetgen.model.secret_store import ExternalSecrets, store_key
from fleetgen.render import provenance as prov
from fleetgen.render.argocd_apps import ARGOCD_NS, hub
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object, team_labels
from fleetgen.render.platform import FLUX_NS
from fleetgen.render.provenance import NOWHERE, Recorder

EXTERNAL_SECRETS_API = "external-secrets.io/v1"
STORE_AT: FieldPath = ("secrets", "externalSecrets")
DOCKER_CONFIG = "kubernetes.io/dockerconfigjson"


def store_of(fleet: Fleet) -> ExternalSecrets | None:
    return fleet.secrets.external_secrets if fleet.secrets is not None else None


def external_secret(
    store: ExternalSecrets,
    name: str,
    namespace: str,
    labels: dict[str, str],
    template: dict[str, Any] | None = None,
    *,
    creation: str = "Owner",
) -> dict[str, Any]:
    """An ExternalSecret writing Secret `name` in `namespace` from the store's entry of that name.

    `creation` Merge: the Secret exists before the operator runs (the engine's bootstrap needs it) and the operator
    keeps its data current; Owner: the operator creates it. Either way a deleted ExternalSecret leaves the Secret."""
    target: dict[str, Any] = {"name": name, "creationPolicy": creation, "deletionPolicy": "Retain"}
    if template is not None:
        target["template"] = {"mergePolicy": "Merge", **template}  # the store's keys, and the template's beside them
    spec = {
        "refreshInterval": store.refresh_interval,
        "secretStoreRef": {"kind": "ClusterSecretStore", "name": store.cluster_secret_store},
        "target": target,
        "dataFrom": [{"extract": {"key": store_key(store, name)}}],
    }
    return k8s_object(EXTERNAL_SECRETS_API, "ExternalSecret", name, labels, namespace=namespace, spec=spec)


def _record(why: Recorder, body: dict[str, Any], name_at: FieldPath) -> None:
    why.set(body, ("spec",), prov.default("the store's entry <keyPrefix><Secret name>, every property a key of the Secret"))
    why.set(body, ("spec", "refreshInterval"), STORE_AT + ("refreshInterval",))
    why.set(body, ("spec", "secretStoreRef", "name"), STORE_AT + ("clusterSecretStore",))
    why.set(body, ("spec", "target", "name"), name_at)
    why.set(body, ("spec", "dataFrom", 0, "extract", "key"), prov.derived("<keyPrefix><Secret name>", STORE_AT + ("keyPrefix",), name_at))


def git_credentials(fleet: Fleet, namespace: str, why: Recorder = NOWHERE) -> list[Manifest]:
    """The ExternalSecret of the Git credentials Secret in `namespace`; none for a public repository or without a store."""
    store, credentials = store_of(fleet), fleet.gitops.credentials
    if store is None or credentials is None:
        return []
    template = None
    if fleet.gitops.engine == "argocd":  # Argo CD finds the Secret by this label and reads type and url beside the credential
        url = argocd_secret_url(fleet.gitops.repository, credentials)
        labels = {ARGOCD_SECRET_TYPE_LABEL: credentials.argocd_secret_type}
        template = {"metadata": {"labels": labels}, "data": {"type": "git", "url": url}}
    name_at: FieldPath = ("gitops", "credentials", "secretName")
    body = external_secret(store, credentials.secret_name, namespace, fleet_labels(fleet), template, creation="Merge")
    if why.on:
        why.meta(body, name_at, prov.fleet_labels(), prov.default("where the engine reads its credentials"))
        _record(why, body, name_at)
        if template is not None:
            why.set(body, ("spec", "target", "template"), prov.derived("Argo CD's label, type and URL", ("gitops", "credentials")))
    return [Manifest(body, name_at)]


def cluster_git_credentials(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """On cluster `index`: the Git credentials' ExternalSecret where its own engine reads them (none for an Argo CD hub's clusters)."""
    if fleet.gitops.engine == "flux":
        return git_credentials(fleet, FLUX_NS, why)
    return [] if hub(fleet) else git_credentials(fleet, ARGOCD_NS, why)


def hub_git_credentials(fleet: Fleet) -> list[Manifest]:
    """On the Argo CD hub: the Git credentials' ExternalSecret (the hub runs the External Secrets Operator itself)."""
    return git_credentials(fleet, ARGOCD_NS) if fleet.gitops.engine == "argocd" and hub(fleet) else []


def pull_secret(
    fleet: Fleet, team: Team, at: FieldPath, cluster: Cluster, cluster_at: FieldPath, why: Recorder = NOWHERE
) -> list[Manifest]:
    """The ExternalSecret of the cluster's image pull Secret in the team's namespace."""
    store = store_of(fleet)
    if store is None or cluster.image_pull_secret is None:
        return []
    name_at: FieldPath = cluster_at + ("imagePullSecret",)
    body = external_secret(store, cluster.image_pull_secret, team.namespace, team_labels(fleet, team), {"type": DOCKER_CONFIG})
    if why.on:
        why.meta(body, name_at, prov.team_labels(at), prov.derived("team-<name>", at + ("name",)))
        _record(why, body, name_at)
        why.set(body, ("spec", "target", "template"), prov.default("a docker config Secret, as pods' imagePullSecrets need"))
    return [Manifest(body, name_at)]

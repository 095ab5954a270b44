"""Where the Secrets fleetgen's objects read come from (`secrets`): a secret store, never Git.

The objects fleetgen renders name Secrets it does not write: the Git credentials of a private fleet repository
(gitops.credentials), each cluster's image pull Secret in the team namespaces (clusters[].imagePullSecret) and the
kubeconfig of each MultiKueue worker on the manager. One fleet-wide choice says how they arrive:

- externalSecrets: the External Secrets Operator, installed by the platform layer like the other add-ons, writes
  each one from a ClusterSecretStore the fleet names. The store's entry `<keyPrefix><Secret name>` holds the
  Secret's keys as its properties (`identity` and `known_hosts`, `.dockerconfigjson`, `kubeconfig`...).
- sops: the operator commits SOPS-encrypted Secrets (clusters[].extraResources) and Flux decrypts them on apply
  with the key in the Secret `secretName` of flux-system (Kustomization `spec.decryption`). Flux only.
"""

from pydantic import Field, model_validator

from fleetgen.model.spec import Spec
from fleetgen.model.types import DnsSubdomain, Token

ESO_KEY_PREFIX = r"^[A-Za-z0-9_./-]*$"


class ExternalSecrets(Spec):
    """Secrets written by the External Secrets Operator from one ClusterSecretStore every cluster reaches."""

    cluster_secret_store: DnsSubdomain
    """The ClusterSecretStore the ExternalSecrets read; created on each cluster with the store's own credentials."""
    key_prefix: str = Field(default="", pattern=ESO_KEY_PREFIX, max_length=200)
    """Prefix of the store's keys: the entry of Secret NAME is <keyPrefix>NAME (e.g. fleet/ gives fleet/fleet-git)."""
    refresh_interval: Token = Field(default="1h", pattern=r"^(\d+(s|m|h))+$")
    """How often the operator reads the store again, so a rotated credential reaches the clusters."""


class Sops(Spec):
    """SOPS-encrypted Secrets in the repository, decrypted by Flux when it applies them."""

    secret_name: DnsSubdomain = "sops-age"
    """The Secret in flux-system on each cluster that holds the private key (age or PGP) Flux decrypts with."""


class Secrets(Spec):
    external_secrets: ExternalSecrets | None = None
    """The External Secrets Operator writes every Secret fleetgen's objects read, from this store."""
    sops: Sops | None = None
    """Flux decrypts SOPS-encrypted Secrets the repository holds (Flux only)."""

    @model_validator(mode="after")
    def _one_source(self) -> "Secrets":
        if (self.external_secrets is None) == (self.sops is None):
            # fix: Keep one of externalSecrets or sops
            raise ValueError("set one of externalSecrets or sops: the Secrets of the whole fleet come from one place")
        return self


def store_key(store: ExternalSecrets, secret_name: str) -> str:
    """The store's entry that holds Secret `secret_name`'s keys."""
    return f"{store.key_prefix}{secret_name}"

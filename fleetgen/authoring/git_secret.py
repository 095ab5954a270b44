"""The one command that creates the Git credentials Secret where the engine reads it, for `init` and `doctor`.

fleet.yaml names the Secret (`gitops.credentials`); its values are the operator's. Flux reads it in flux-system on
every cluster; Argo CD in its own namespace, on the hub or on every cluster (in-cluster), found by its
`argocd.argoproj.io/secret-type` label and URL, so its command labels the Secret before applying it. The values
come from files and placeholders in capitals, never from fleet.yaml: a token typed on the command line would stay in
the shell's history.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from fleetgen.model import Fleet
from fleetgen.model.git_credentials import ARGOCD_SECRET_TYPE_LABEL, SECRET_KEYS, GitCredentials, argocd_secret_url
from fleetgen.model.secret_store import store_key
from fleetgen.render.argocd_apps import ARGOCD_NS, hub
from fleetgen.render.platform import FLUX_NS

# Secret key -> the kubectl flag that fills it: a literal for what is not secret, a file for what is.
_SOURCES = {
    "username": "--from-literal=username=USERNAME",
    "password": "--from-file=password=./token",
    "bearerToken": "--from-file=bearerToken=./token",
    "identity": "--from-file=identity=./identity",
    "known_hosts": "--from-file=known_hosts=./known_hosts",
    "sshPrivateKey": "--from-file=sshPrivateKey=./identity",
    "githubAppID": "--from-literal=githubAppID=APP_ID",
    "githubAppInstallationID": "--from-literal=githubAppInstallationID=INSTALLATION_ID",
    "githubAppPrivateKey": "--from-file=githubAppPrivateKey=./github-app.pem",
}


@dataclass(frozen=True)
class SecretCommand:
    """Where the Secret goes and the command that creates it there."""

    where: str  # "cluster <name>" or "the Argo CD hub"
    namespace: str
    name: str
    command: str


def _kubectl(context: str | None) -> str:
    return "kubectl" if context is None else f"kubectl --context {shlex.quote(context)}"


def _flux(credentials: GitCredentials, cluster: str) -> str:
    keys = " ".join(_SOURCES[key] for key in SECRET_KEYS["flux", credentials.kind])
    return f"{_kubectl(cluster)} -n {FLUX_NS} create secret generic {credentials.secret_name} {keys}"


def _argocd(credentials: GitCredentials, url: str, context: str | None) -> str:
    keys = " ".join(_SOURCES[key] for key in SECRET_KEYS["argocd", credentials.kind])
    matched = shlex.quote(argocd_secret_url(url, credentials))
    label = f"{ARGOCD_SECRET_TYPE_LABEL}={credentials.argocd_secret_type}"
    return (
        f"{_kubectl(context)} -n {ARGOCD_NS} create secret generic {credentials.secret_name} --from-literal=type=git "
        f"--from-literal=url={matched} {keys} --dry-run=client -o yaml"
        f" | kubectl label --local -f - {label} -o yaml | {_kubectl(context)} apply -f -"
    )


def git_secret_commands(fleet: Fleet) -> list[SecretCommand]:
    """One command per place the engine reads the Secret (each cluster, or the Argo CD hub); none for a public repository.

    A cluster's kubectl context is taken to be its fleet.yaml name; the hub's is the current one."""
    credentials, ops = fleet.gitops.credentials, fleet.gitops
    if credentials is None:
        return []
    if ops.engine == "flux":
        return [SecretCommand(f"cluster {c.name}", FLUX_NS, credentials.secret_name, _flux(credentials, c.name)) for c in fleet.clusters]
    if hub(fleet):
        return [SecretCommand("the Argo CD hub", ARGOCD_NS, credentials.secret_name, _argocd(credentials, ops.repository, None))]
    return [
        SecretCommand(f"cluster {c.name}", ARGOCD_NS, credentials.secret_name, _argocd(credentials, ops.repository, c.name))
        for c in fleet.clusters
    ]


def git_secret_lines(fleet: Fleet) -> list[str]:
    """The commands as doctor and init print them; nothing for a public repository."""
    commands = git_secret_commands(fleet)
    if not commands:
        return []
    kind = fleet.gitops.credentials.kind if fleet.gitops.credentials is not None else ""
    lines = [f"Git credentials ({kind}): create the Secret before the first sync, where the engine reads it:"]
    for found in commands:
        lines += [f"  - {found.where}: Secret {found.namespace}/{found.name}", f"    {found.command}"]
    store = fleet.secrets.external_secrets if fleet.secrets is not None else None
    if store is not None and fleet.gitops.credentials is not None:
        entry = store_key(store, fleet.gitops.credentials.secret_name)
        lines.append(f"  then its ExternalSecret keeps the data in step with the store's entry {entry} ({store.cluster_secret_store})")
    return lines

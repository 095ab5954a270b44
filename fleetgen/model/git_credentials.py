"""How the GitOps engine authenticates to the fleet repository (`gitops.credentials`).

fleet.yaml says which kind of credential the engine uses and which Secret holds it; the values live only in that
Secret, which the operator creates on each cluster (Flux, an in-cluster Argo CD) or on the Argo CD hub, or which a
secret store writes. Each engine reads fixed keys of that Secret:

- Flux (`GitRepository.spec.secretRef`): `username`/`password` (HTTPS basic auth), `bearerToken` (HTTPS token),
  `identity`/`known_hosts` (SSH), or the GitHub App's `githubAppID`/`githubAppInstallationID`/`githubAppPrivateKey`
  with `spec.provider: github` (source-controller v1.5, Flux 2.5, and later).
- Argo CD: a Secret in its namespace labelled `argocd.argoproj.io/secret-type: repository` (this repository's URL)
  or `repo-creds` (a credential template for every repository under a URL prefix), with `type: git`, `url` and the
  credential's keys: `username`/`password`, `sshPrivateKey` (known hosts are argocd-ssh-known-hosts-cm's), or the
  same three GitHub App keys. Argo CD finds it by its label and URL: nothing rendered names it.
"""

import re
from typing import Literal

from fleetgen.model.spec import Spec
from fleetgen.model.types import DnsSubdomain

CredentialKind = Literal["basic-auth", "bearer-token", "ssh", "github-app"]
Engine = Literal["flux", "argocd"]

GITHUB_APP_KEYS = ("githubAppID", "githubAppInstallationID", "githubAppPrivateKey")
# (engine, kind) -> the keys of the Secret that engine reads; an engine without an entry does not support the kind.
SECRET_KEYS: dict[tuple[Engine, CredentialKind], tuple[str, ...]] = {
    ("flux", "basic-auth"): ("username", "password"),
    ("flux", "bearer-token"): ("bearerToken",),
    ("flux", "ssh"): ("identity", "known_hosts"),
    ("flux", "github-app"): GITHUB_APP_KEYS,
    ("argocd", "basic-auth"): ("username", "password"),
    ("argocd", "ssh"): ("sshPrivateKey",),
    ("argocd", "github-app"): GITHUB_APP_KEYS,
}
ARGOCD_SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"

_SSH_URL = re.compile(r"^(ssh://|[^/@:\s]+@[^/:\s]+:)")  # ssh://git@host/path, or scp-like git@host:path
_USERINFO = re.compile(r"^[a-z][a-z0-9+.-]*://(?P<userinfo>[^/@\s]*)@")


class GitCredentials(Spec):
    """The kind of credential the GitOps engine uses for the fleet repository, and the Secret that holds it: never its values."""

    kind: CredentialKind
    """basic-auth: HTTPS user name and password or access token; bearer-token: an HTTPS bearer token (Flux only);
    ssh: an SSH deploy key (an ssh:// URL); github-app: a GitHub App installation (Flux 2.5 and later, Argo CD)."""
    secret_name: DnsSubdomain = "fleet-git"
    """Name of the Secret that holds the credential: in flux-system on each cluster (Flux), in Argo CD's namespace on the hub or
    on each cluster (Argo CD). fleetgen validate and doctor say how to create it."""
    argocd_secret_type: Literal["repository", "repo-creds"] = "repository"
    """Argo CD only: repository, a Secret for this repository's URL; repo-creds, a credential template for every repository
    under the URL's organisation (its URL without the last path segment)."""


def url_problem(url: str, engine: Engine, credentials: GitCredentials | None) -> str | None:
    """Why `url` does not fit the engine and the credential kind, or None when it does.

    A user name with a password or token in the URL is a credential written into fleet.yaml, whatever the kind."""
    userinfo = _USERINFO.match(url)
    if userinfo is not None and (url.startswith("https://") or ":" in userinfo["userinfo"]):
        return "carries a credential in the URL: keep the URL without it and name the Secret in gitops.credentials"
    if credentials is None:
        return None
    ssh = _SSH_URL.match(url) is not None
    if credentials.kind == "ssh" and not ssh:
        return "is not an SSH URL (ssh://git@host/path), so an SSH key cannot authenticate to it"
    if credentials.kind == "ssh" and engine == "flux" and not url.startswith("ssh://"):
        return "is scp-like (git@host:path), which Flux does not read: write it as ssh://git@host/path"
    if credentials.kind != "ssh" and not url.startswith("https://"):
        return f"is not an https:// URL, so a {credentials.kind} credential cannot authenticate to it"
    return None


def argocd_secret_url(url: str, credentials: GitCredentials) -> str:
    """The URL the Argo CD Secret matches: the repository's own, or its prefix up to the last path segment (repo-creds)."""
    if credentials.argocd_secret_type == "repository":
        return url
    head, _, _ = url.rstrip("/").rpartition("/")
    return head if head and not head.endswith("/") else url

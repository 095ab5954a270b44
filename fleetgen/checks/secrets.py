"""Secrets do not belong in fleet.yaml: it is committed to Git and rendered into every cluster.

A value is refused when it looks like a credential (private keys, known token formats, a
`password=`/`token:` assignment), when it stands under a key a Secret keeps a credential in
(`password`, `identity`, `kubeconfig`...), or, in a field meant for a name, like a random string.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from fleetgen.errors import FieldPath, Finding

_CREDENTIALS = (
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("an AWS access key", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.")),
    ("a password or token assignment", re.compile(r"(?i)\b(password|passwd|pwd|secret|token|api[_-]?key)\s*[:=]\s*\S+")),
)
# Keys under which a Git, registry or cluster credential is written: the Secrets' own keys (Flux, Argo CD, Kueue, Docker).
# fleet.yaml has no such field; one holding a string is a credential pasted in where only the Secret's name belongs.
CREDENTIAL_KEYS = frozenset(
    {
        "password",
        "passwd",
        "token",
        "bearertoken",
        "apikey",
        "clientsecret",
        "identity",
        "privatekey",
        "sshprivatekey",
        "githubappprivatekey",
        "known_hosts",
        "knownhosts",
        "kubeconfig",
        ".dockerconfigjson",
        "dockerconfigjson",
        "auth",
        "auths",
    }
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Fields whose values name things: a long, random-looking value there is more likely a key than a name.
NAME_FIELDS = {"name", "project", "costCenter", "owner", "group", "vmSize", "region", "purpose"}


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _random_looking(text: str) -> bool:
    """32+ characters of hex (not a UUID), or of mixed character classes with high entropy.

    Shorter strings are left alone: VM SKUs such as Standard_ND96isr_H100_v5 look random too."""
    if len(text) < 32 or _UUID.fullmatch(text) or " " in text:
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", text):
        return True
    classes = sum(bool(re.search(p, text)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9]"))
    return classes >= 3 and entropy(text) > 4.2


def secret_findings(data: Any, path: FieldPath = ()) -> Iterator[Finding]:
    """Every string in the parsed fleet.yaml that looks like a secret."""
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str) and key.lower() in CREDENTIAL_KEYS and isinstance(value, (str, int)) and value != "":
                yield Finding(
                    path + (key,),
                    "a credential is never written in fleet.yaml, which is committed to Git; name the Secret that "
                    "holds it (gitops.credentials.secretName, clusters[].imagePullSecret, a MultiKueue worker's kubeconfig.secret)",
                )
                continue
            yield from secret_findings(value, path + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from secret_findings(value, path + (index,))
    elif isinstance(data, str):
        for what, pattern in _CREDENTIALS:
            if pattern.search(data):
                yield Finding(path, f"looks like {what}; fleet.yaml is committed to Git and rendered to every cluster: keep secrets out")
                return
        field = next((p for p in reversed(path) if isinstance(p, str)), "")
        if field in NAME_FIELDS and _random_looking(data):
            yield Finding(path, "looks like a random secret, not a name (high entropy); keep secrets out of fleet.yaml")

"""Where a new fleet repository's hooks and CI install fleetgen from: a pin fleetgen can vouch for.

`init` used to pin the project's release tag for this version, whether or not it existed; a fleet
repository's first pull request then failed at `pip install`. A pin is now one of:

- where this fleetgen was installed from: the git URL and the commit pip checked out, as pip
  recorded them in the distribution's direct_url.json (PEP 610, `vcs_info.commit_id`);
- for an install from a local clone (`pip install -e .`, the README's first step): the clone's
  `origin` remote at its HEAD commit, once git finds that commit there;
- `--fleetgen-source URL@REF`, once `git ls-remote` finds REF in URL (a tag is pinned as it is, a
  branch as the commit it points at now), or a full commit id that `git fetch` can get from URL.

CI clones over the network, so a pin must name a network URL (https, http, ssh, git, or scp-like
`user@host:path`): a file:// URL or a local path is refused unless `--allow-local-source` says it is
meant (tests, a mirror an air-gapped runner mounts). Anything else (an install from a package index; a
source git cannot reach; a ref it does not hold) is refused in one line, before anything is written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import unquote, urlparse

from fleetgen.errors import InputError
from fleetgen.source.git import GitAnswer, run_git

COMMIT = re.compile(r"[0-9a-f]{40}")
GIT_TIMEOUT = 60  # seconds for one ls-remote or fetch
ASK = "pass --fleetgen-source URL@REF (a git repository CI can reach, and a tag, branch or commit of it)"
NETWORK_SCHEMES = ("https", "http", "ssh", "git")
_SCP_LIKE = re.compile(r"(?P<user>[^/@:\s]+@)?(?P<host>[^/@:\s]+):(?P<path>(?!//)\S+)")  # git@github.com:org/repo.git
LOCAL = "a local path, which CI cannot reach; give the URL CI clones from, or pass --allow-local-source (tests, air-gapped mirrors)"


def network_url(url: str) -> str | None:
    """`url` as pip and pre-commit take it when it names a network repository (scp-like becomes ssh://), else None."""
    scheme, sep, _ = url.partition("://")
    if sep:
        return url if scheme.lower() in NETWORK_SCHEMES else None
    scp = _SCP_LIKE.fullmatch(url)
    if scp is None or (scp["user"] is None and len(scp["host"]) == 1):  # C:\path is a Windows drive, not a host
        return None
    return f"ssh://{scp['user'] or ''}{scp['host']}/{scp['path'].lstrip('/')}"


def local_url(location: str, base: str = ".") -> str:
    """A local repository as the file:// URL pip and git take (pip reads `git+/path` as a path and refuses it);
    a relative path is taken from `base`, as git takes a clone's relative remote from the clone."""
    if location.lower().startswith("file:"):
        return location
    return Path(base, location).resolve().as_uri()


_PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*) @ git\+(?P<scheme>[a-z]+)://(?P<rest>\S+)@(?P<ref>[^@/\s]+)")


def pin_problem(pin: str) -> str | None:
    """Why pip would not install `pin` the way init writes it (fleetgen @ git+URL@REF, URL with a scheme pip takes), or None."""
    found = _PIN.fullmatch(pin)
    if found is not None and found["scheme"] in (*NETWORK_SCHEMES, "file") and found["name"].lower() == "fleetgen":
        return None
    return f"{pin!r} is no pin pip installs: write fleetgen @ git+URL@REF, the URL https://, ssh://, git:// or file:///"


def refuse_credentials(url: str, what: str) -> None:
    """A URL with a password or token in it would be written into the new repository's workflow and hooks: refused,
    without repeating the secret."""
    parsed = urlparse(url)
    if "://" in url and parsed.password:
        shown = parsed._replace(netloc=f"{parsed.username}:***@{parsed.hostname}{f':{parsed.port}' if parsed.port else ''}").geturl()
        raise InputError(f"{what} {shown} carries a password or token, which init would write into the new repository; {ASK}")


@dataclass(frozen=True)
class FleetgenSource:
    """A git repository and ref to install fleetgen from, and how fleetgen knows it is real."""

    url: str
    ref: str
    vouched: str = ""  # why the pin can be trusted, for the line `init` prints

    @classmethod
    def parse(cls, text: str, allow_local: bool = False) -> FleetgenSource:
        url, sep, ref = text.rpartition("@")
        if not sep or not url or not ref or any(ch.isspace() or ord(ch) < 32 for ch in text):
            raise InputError(f"--fleetgen-source {text!r}: expected URL@REF, e.g. https://git.example.com/mirrors/fleetgen@v0.1.0")
        refuse_credentials(url, "--fleetgen-source")
        reachable = network_url(url)
        if reachable is None and not allow_local:
            raise InputError(f"--fleetgen-source {text}: {url} is {LOCAL}")
        return cls(reachable or local_url(url), ref)

    @property
    def pip(self) -> str:
        """The pip requirement that installs this source."""
        return f"fleetgen @ git+{self.url}@{self.ref}"


def installed_source(allow_local: bool = False) -> FleetgenSource:
    """The git URL and commit this fleetgen was installed from, as pip recorded them (direct_url.json), or
    for an install from a local clone, its origin remote at HEAD."""
    try:
        recorded = distribution("fleetgen").read_text("direct_url.json")
    except PackageNotFoundError:
        raise InputError(f"fleetgen is not installed as a package, so nothing says where it came from; {ASK}") from None
    if recorded is None:
        raise InputError(f"fleetgen was installed from a package index, which records no git repository to pin; {ASK}")
    try:
        data = json.loads(recorded)
        url, vcs = str(data["url"]), data.get("vcs_info") or {}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise InputError(f"fleetgen's direct_url.json cannot be read; {ASK}") from None
    commit = str(vcs.get("commit_id", ""))
    if vcs.get("vcs") == "git" and COMMIT.fullmatch(commit) and not any(ch.isspace() for ch in url):
        refuse_credentials(url, "fleetgen was installed from")
        reachable = network_url(url)
        if reachable is None and not allow_local:
            raise InputError(f"fleetgen was installed from {url}, {LOCAL}")
        return FleetgenSource(reachable or local_url(url), commit, "the commit pip installed this fleetgen from")
    if "dir_info" in data:
        return clone_source(unquote(urlparse(url).path), allow_local)
    raise InputError(f"fleetgen was installed from {url}, not from a git repository; {ASK}")


def clone_source(folder: str, allow_local: bool = False) -> FleetgenSource:
    """The origin remote of the git clone fleetgen was installed from, at that clone's HEAD, once git finds HEAD there."""
    local = f"fleetgen runs from the folder {folder} (a local install)"
    if not os.path.isdir(folder):
        raise InputError(f"{local}, which is gone; {ASK}")
    top = _git("rev-parse", "--show-toplevel", cwd=folder)
    if not top.ok:
        raise InputError(f"{local}, which is no git clone, so CI cannot install from it; {ASK}")
    if os.path.realpath(top.text) != os.path.realpath(folder):
        raise InputError(f"{local}, a subfolder of the clone {top.text}, which a pin cannot name; {ASK}")
    head, origin = _git("rev-parse", "HEAD", cwd=folder), _git("remote", "get-url", "origin", cwd=folder)
    if not head.ok or not COMMIT.fullmatch(head.text):
        raise InputError(f"{local}, a clone with no commit yet; {ASK}")
    if not origin.ok:
        raise InputError(f"{local}, a clone with no origin remote to install from; {ASK}")
    commit, url = head.text, origin.text
    refuse_credentials(url, f"{local}: its origin remote")
    reachable = network_url(url)
    if reachable is None and not allow_local:
        raise InputError(f"{local}, whose origin remote {url} is {LOCAL}")
    url = reachable or local_url(url, base=folder)
    listed = _git("ls-remote", "--", url)
    if not listed.ok:
        raise InputError(f"{local}: git cannot read its origin remote {url} ({listed.first_complaint}); {ASK}")
    if commit not in {line.partition("\t")[0] for line in listed.text.splitlines()} and not _has_commit(url, commit):
        raise InputError(f"{local}: its HEAD {commit[:12]} is not on its origin remote {url} (push it first); {ASK}")
    return FleetgenSource(url, commit, f"HEAD of the clone {folder}, found on its origin remote")


def _git(*args: str, cwd: str | None = None) -> GitAnswer:
    return run_git(cwd, *args, timeout=GIT_TIMEOUT, hint=f"init needs git to check where fleetgen comes from; {ASK}")


def checked_source(text: str, allow_local: bool = False) -> FleetgenSource:
    """`--fleetgen-source URL@REF`, once git finds REF in URL; a branch is pinned at its commit."""
    source = FleetgenSource.parse(text, allow_local)
    listed = _git("ls-remote", "--", source.url)
    if not listed.ok:
        raise InputError(f"--fleetgen-source {text}: git cannot read {source.url} ({listed.first_complaint})")
    refs: dict[str, str] = {}  # ref name -> commit
    for line in listed.text.splitlines():
        commit, _, name = line.partition("\t")
        refs[name] = commit
    if f"refs/tags/{source.ref}" in refs:
        return FleetgenSource(source.url, source.ref, f"tag {source.ref}, found by git")
    branch = refs.get(f"refs/heads/{source.ref}")
    if branch is not None:
        return FleetgenSource(source.url, branch, f"branch {source.ref} as it is now, pinned at its commit")
    if COMMIT.fullmatch(source.ref) and (source.ref in refs.values() or _has_commit(source.url, source.ref)):
        return FleetgenSource(source.url, source.ref, "a commit git fetched from there")
    raise InputError(f"--fleetgen-source {text}: {source.url} has no tag, branch or commit {source.ref!r}")


def _has_commit(url: str, commit: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="fleetgen-source-") as scratch:
        if not _git("init", "--quiet", "--bare", scratch).ok:
            return False
        return _git("fetch", "--quiet", "--depth=1", "--", url, commit, cwd=scratch).ok

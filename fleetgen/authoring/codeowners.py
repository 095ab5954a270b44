"""CODEOWNERS for a fleet repository: the platform owners own the files that decide what the gate is.

The approval gate is a workflow reading fleet.yaml's `approvals` (and fleetgen's built-in rules) from
the base branch; a pull request that edits the workflow, fleet.yaml or the fleet's facts file with only
an ordinary review could weaken the gate for every later one. With branch protection's "Require review
from Code Owners", the owners written here must approve such a pull request.

CODEOWNERS works per path, never per field: owning fleet.yaml means every change to it (a team's own
quota too) needs a platform owner's review. What stays per field (the `approvals` rules, the platform
owners, tenant access) is the built-in gate's part (review/approvals.py).

Reading follows GitHub's rules closely enough to judge the lines init writes and hand edits of them:
gitignore-like patterns, the last matching line wins, a line with no owner leaves the path unowned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CODEOWNERS_PATH = ".github/CODEOWNERS"
# Where GitHub looks, in its order; the first file found is the one it uses.
CODEOWNERS_PLACES = (CODEOWNERS_PATH, "CODEOWNERS", "docs/CODEOWNERS")
PLACEHOLDER_ORG = "my-org"  # init's stand-in when it cannot tell the GitHub organisation
ORG = re.compile(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)*")
_GITHUB = re.compile(r"^(?:https://github\.com/|ssh://git@github\.com/|git@github\.com:)(?P<org>[A-Za-z0-9]+(-[A-Za-z0-9]+)*)/")


def github_org(repository: str | None) -> str | None:
    """The organisation of a github.com repository URL, else None."""
    found = _GITHUB.match(repository or "")
    return found["org"] if found else None


def team_handle(org: str, group: str) -> str:
    return f"@{org}/{group}"


def guarded_paths(fleet_file: str, facts_file: str | None) -> list[str]:
    """The files whose change changes the gate: the workflows and CODEOWNERS (.github/), fleet.yaml, the facts file."""
    return [".github/", fleet_file, *([facts_file] if facts_file else [])]


def codeowners_text(org: str, owners: tuple[str, ...], fleet_file: str, facts_file: str | None) -> bytes:
    handles = " ".join(team_handle(org, group) for group in owners)
    lines = [
        "# Written by fleetgen init: the platform owners (fleet.yaml metadata.platformOwners) review the files",
        '# that decide the approval gate. Binding only with branch protection\'s "Require review from Code Owners"',
        "# (see README.md, Branch protection); `fleetgen doctor` checks these lines against fleet.yaml.",
        "# Per path only: owning fleet.yaml means every change to it needs their review. When fleet.yaml sets",
        "# compatibility.factsFile, add that file here too.",
    ]
    width = max(len(_pattern(p)) for p in guarded_paths(fleet_file, facts_file))
    lines += [f"{_pattern(path).ljust(width)} {handles}" for path in guarded_paths(fleet_file, facts_file)]
    return ("\n".join(lines) + "\n").encode()


def _pattern(path: str) -> str:
    return "/" + path  # anchored at the top: a fleet.yaml in a subfolder is another file


@dataclass(frozen=True)
class Rule:
    line: int
    pattern: str
    owners: tuple[str, ...]


def parse(text: str) -> list[Rule]:
    rules = []
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split("#", 1)[0].split() if not raw.lstrip().startswith("#") else []
        if fields:
            rules.append(Rule(number, fields[0], tuple(fields[1:])))
    return rules


def _regex(pattern: str) -> re.Pattern[str]:
    directory = pattern.endswith("/")
    body = pattern.rstrip("/")
    anchored = body.startswith("/") or "/" in body
    body = body.lstrip("/")
    out, i = "", 0
    while i < len(body):
        if body.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif body.startswith("**", i):
            out, i = out + ".*", i + 2
        elif body[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif body[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(body[i]), i + 1
    return re.compile(("" if anchored else "(?:.*/)?") + out + ("/.*" if directory else "(?:/.*)?"))


def owners_of(rules: list[Rule], path: str) -> Rule | None:
    """The rule that decides `path`'s owners (the last that matches), or None."""
    return next((rule for rule in reversed(rules) if _regex(rule.pattern).fullmatch(path)), None)

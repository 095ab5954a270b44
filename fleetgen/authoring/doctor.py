"""`fleetgen doctor`: which GitHub settings a fleet repository's files assume, and where the files fall short.

The gate is a workflow, CODEOWNERS and environments; GitHub's settings (branch protection, the
environments' reviewers) are what make them binding, and no file in the repository can show them. So
doctor reads the files and says, for this repository, which settings they rely on: the required checks
(the workflow's job names), one environment per approver group (the groups of the fleet's rules and its
platform owners), code-owner review on the gate's own files. It then checks what the files can show:
the workflow is there with those jobs, runs on every pull request (a required check a path filter skips
stays pending and blocks the merge), gives each group its own environment; CODEOWNERS gives the gate's
files to the platform owners.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from fleetgen.authoring.codeowners import CODEOWNERS_PLACES, PLACEHOLDER_ORG, guarded_paths, owners_of, parse
from fleetgen.authoring.fleetgen_source import pin_problem
from fleetgen.authoring.git_secret import git_secret_lines
from fleetgen.authoring.scaffold import ENVIRONMENT_PREFIX, REQUIRED_CHECKS, WORKFLOW_PATH
from fleetgen.model import Fleet


@dataclass(frozen=True)
class Protections:
    """What the files assume of GitHub's settings, and the files' own problems (`path: message`)."""

    branch: str
    required_checks: tuple[str, ...]
    environments: tuple[tuple[str, str], ...]  # (environment, approver group)
    code_owned: tuple[tuple[str, str], ...]  # (path, its owners as CODEOWNERS gives them)
    problems: tuple[str, ...]
    git_secret: tuple[str, ...] = ()  # how to create the Secret the engine reads the private repository with


def approver_groups(fleet: Fleet) -> list[str]:
    """Every group the gate can ask: the approvers of the fleet's rules and the platform owners (built-in rules)."""
    return sorted({*fleet.platform_owners, *(g for rule in fleet.approvals for g in rule.approvers)})


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        return f"# unreadable: {exc}"


def _workflow_problems(text: str | None) -> list[str]:
    where = WORKFLOW_PATH
    if text is None:
        return [f"{where}: missing: no check runs on a pull request, so none can be required (fleetgen init writes it)"]
    try:
        workflow: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return [f"{where}: not YAML ({str(exc).splitlines()[0]})"]
    if not isinstance(workflow, dict):
        return [f"{where}: not a workflow"]
    # PyYAML reads the bare key `on` as True (YAML 1.1); GitHub reads it as "on".
    trigger = workflow.get("on", workflow.get(True))
    pull_request = trigger.get("pull_request") if isinstance(trigger, dict) else None
    problems = []
    if not (isinstance(trigger, (dict, list)) and "pull_request" in trigger) and trigger != "pull_request":
        problems.append(f"{where}: does not run on pull_request, so the required checks never report")
    elif isinstance(pull_request, dict) and ("paths" in pull_request or "paths-ignore" in pull_request):
        problems.append(
            f"{where}: on.pull_request filters paths: a pull request outside them never reports the required checks, "
            "which then stay pending and block its merge; run on every pull request"
        )
    listed = workflow.get("jobs")
    jobs: dict[str, Any] = listed if isinstance(listed, dict) else {}
    problems += [f"{where}: no job {name!r}, which branch protection requires" for name in REQUIRED_CHECKS if name not in jobs]
    problems += _pin_problems(jobs)
    steps = _steps(jobs)
    if not any(_fails_on_refusal(step) for step in steps):
        problems.append(
            f"{where}: no step fails the fleet job when diff refuses the pull request (if: {_REFUSED}, then exit 1): "
            "a change diff refuses passes the check (fleetgen init writes the step)"
        )
    if any(_restores_on_pull_request(step) for step in steps):
        problems.append(
            f"{where}: the fleet job restores a cache on a pull request: an earlier run of the same pull request, with a "
            "workflow it edited, can leave entries the check then trusts; restore only on push (fleetgen init writes the steps)"
        )
    approval = jobs.get("approval")
    environment = approval.get("environment") if isinstance(approval, dict) else None
    if not (isinstance(environment, str) and environment.startswith(ENVIRONMENT_PREFIX) and "matrix.group" in environment):
        problems.append(
            f"{where}: the approval job does not give each approver group its own environment ({ENVIRONMENT_PREFIX}<group>): "
            "a reviewer of a shared one approves every rule"
        )
    return problems


_REFUSED = "steps.gate.outputs.refused == 'true'"


def _fails_on_refusal(step: dict[str, Any]) -> bool:
    """A step that runs exactly when diff refused the change and then fails the job (init's last step)."""
    lines = [line.strip() for line in str(step.get("run", "")).splitlines()]
    return _condition(step) == _REFUSED and "exit 1" in lines and not step.get("continue-on-error")


def _restores_on_pull_request(step: dict[str, Any]) -> bool:
    """A cache step (actions/cache or its restore half) whose condition does not keep it to push events: one of the
    conditions it joins with `&&` (and no `||`) is the event being a push."""
    uses = str(step.get("uses", ""))
    if not (uses.startswith("actions/cache@") or uses.startswith("actions/cache/restore@")):
        return False
    condition = _condition(step)
    return "||" in condition or "github.event_name == 'push'" not in [part.strip() for part in condition.split("&&")]


def _condition(step: dict[str, Any]) -> str:
    """A step's `if`, without the `${{ }}` GitHub allows around it and with single spaces."""
    return " ".join(str(step.get("if", "")).replace("${{", "").replace("}}", "").split())


def _steps(jobs: dict[str, Any]) -> list[dict[str, Any]]:
    """The fleet job's steps that are mappings."""
    fleet = jobs.get("fleet")
    steps = fleet.get("steps") if isinstance(fleet, dict) else None
    return [step for step in steps if isinstance(step, dict)] if isinstance(steps, list) else []


def _pin_problems(jobs: dict[str, Any]) -> list[str]:
    """The pin the install step hands pip, in the form init writes it (pip refuses `git+/path`, a path, not a URL)."""
    pins = [step["env"]["FLEETGEN"] for step in _steps(jobs) if isinstance(step.get("env"), dict) and "FLEETGEN" in step["env"]]
    return [f"{WORKFLOW_PATH}: FLEETGEN {problem}" for pin in pins if pin != "." and (problem := pin_problem(str(pin)))]


def _codeowners(folder: Path, fleet: Fleet, fleet_file: str) -> tuple[list[tuple[str, str]], list[str]]:
    found = next(((place, text) for place in CODEOWNERS_PLACES if (text := _read(folder / place)) is not None), None)
    if found is None:
        return [], [f"{CODEOWNERS_PLACES[0]}: missing: a pull request may edit the gate's own files with any review"]
    place, text = found
    rules = parse(text)
    owned, problems = [], []
    teams = set(fleet.platform_owners)
    files = [WORKFLOW_PATH, place, *guarded_paths(fleet_file, _facts_path(fleet, fleet_file))[1:]]
    for path in files:
        rule = owners_of(rules, path)
        if rule is None or not rule.owners:
            problems.append(f"{place}: {path} has no code owner, so any reviewer approves a change to it")
            continue
        owned.append((path, " ".join(rule.owners)))
        slugs = {owner.rpartition("/")[2] for owner in rule.owners if owner.startswith("@") and "/" in owner}
        if not slugs & teams:
            problems.append(
                f"{place}:{rule.line}: {path} is owned by {' '.join(rule.owners)}, no team of the platform owners "
                f"({', '.join(sorted(teams))})"
            )
        placeholders = [owner for owner in rule.owners if owner.startswith(f"@{PLACEHOLDER_ORG}/")]
        if placeholders and not any(PLACEHOLDER_ORG in problem for problem in problems):
            problems.append(
                f"{place}:{rule.line}: {placeholders[0]} is init's placeholder organisation: name your GitHub "
                "organisation's teams (fleetgen init --github-org ORG writes them)"
            )
    return owned, problems


def _facts_path(fleet: Fleet, fleet_file: str) -> str | None:
    """The facts file as a path from the repository's top (fleet.yaml names it from its own folder)."""
    named = fleet.compatibility.facts_file
    return None if named is None else str(PurePosixPath(fleet_file).parent / named).removeprefix("./")


def examine(folder: Path, fleet: Fleet, fleet_file: str = "fleet.yaml") -> Protections:
    """What the repository at `folder` assumes of GitHub, for its fleet (read from `fleet_file`, a path from `folder`)."""
    owned, owner_problems = _codeowners(folder, fleet, fleet_file)
    return Protections(
        branch=fleet.gitops.branch,
        required_checks=REQUIRED_CHECKS,
        environments=tuple((f"{ENVIRONMENT_PREFIX}{group}", group) for group in approver_groups(fleet)),
        code_owned=tuple(owned),
        problems=tuple(_workflow_problems(_read(folder / WORKFLOW_PATH)) + owner_problems),
        git_secret=tuple(git_secret_lines(fleet)),
    )


def report_lines(found: Protections) -> list[str]:
    lines = [
        f"Branch protection (or a ruleset) on {found.branch}:",
        "  - require a pull request before merging, with review from Code Owners",
        f"  - require the status checks {', '.join(found.required_checks)}",
        "  - do not allow bypassing the above settings (administrators included); block force pushes",
        "Environments, one per approver group (required reviewers: the group's GitHub team; prevent self-review;",
        "no administrator bypass; no deployment branch restriction, since pull requests deploy to them):",
        *(f"  - {environment}: {group}" for environment, group in found.environments),
        "Code owners of the gate's own files:",
        *(f"  - {path}: {owners}" for path, owners in found.code_owned),
        *found.git_secret,
    ]
    if found.problems:
        lines += ["Problems in the files:", *(f"  {problem}" for problem in found.problems)]
    return lines

"""`fleetgen init`: a new fleet repository, and the pull-request workflow it (and this project) runs.

The workflow is built as data from one function, so this repository's own workflow and the one
`init` writes cannot drift apart (a test compares them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fleetgen.authoring.codeowners import CODEOWNERS_PATH, ORG, PLACEHOLDER_ORG, codeowners_text, github_org
from fleetgen.authoring.fleetgen_source import FleetgenSource
from fleetgen.compat.newest import newest_supported
from fleetgen.errors import InputError
from fleetgen.model.platform import Platform
from fleetgen.output.emit import dump_documents
from fleetgen.review.output import MARKER
from fleetgen.source.edit import RoundTrip

WORKFLOW_PATH = ".github/workflows/fleetgen.yml"
ENVIRONMENT_PREFIX = "fleet-approval-"  # + an approver group: the GitHub environment that group reviews
REQUIRED_CHECKS = ("fleet", "approvals")  # the workflow's jobs branch protection requires
PRE_COMMIT_PATH = ".pre-commit-config.yaml"

# Upserts one PR comment, found by the hidden marker the markdown diff starts with.
_COMMENT_SCRIPT = """const fs = require('fs');
const body = fs.readFileSync('fleetgen-diff.md', 'utf8');
const marker = 'MARKER';
const {owner, repo} = context.repo;
const issue_number = context.issue.number;
const comments = await github.paginate(github.rest.issues.listComments, {owner, repo, issue_number});
const mine = comments.find(c => c.body && c.body.startsWith(marker));
if (mine) {
  await github.rest.issues.updateComment({owner, repo, comment_id: mine.id, body});
} else {
  await github.rest.issues.createComment({owner, repo, issue_number, body});
}
""".replace("MARKER", MARKER)

_MERGE_BASE = 'base=$(git merge-base "origin/${{ github.base_ref }}" HEAD)'
_PULL_REQUEST = "github.event_name == 'pull_request'"
_COMMENT_FILE = "--markdown-file fleetgen-diff.md"  # the comment step posts it
BASE_BRANCH = "main"  # the branch the clusters follow; `fleetgen init` makes it the first commit's

# fleetgen's cache (fleetgen/cache.py) kept between the runs on pushes to the base branch, with actions/cache. Only
# those runs restore or save it: a pull request's run could restore what an earlier run of the same pull request saved
# (GitHub restores a pull request's own scope first), and that run may have run a workflow the pull request edited, so
# its entries (verdicts, the values a text parses to, emitted files) could make the check pass what it would refuse.
# A pull request's job starts with an empty cache; within the job, check and diff reuse what validate kept.
_PUSH = "github.event_name == 'push'"
CACHE_STEPS = (
    {"name": "fleetgen's cache folder and key", "id": "cache", "if": _PUSH, "run": 'python -m fleetgen.cache >> "$GITHUB_OUTPUT"'},
    {
        "name": "Restore fleetgen's cache",
        "id": "restore",
        "if": _PUSH,
        "uses": "actions/cache/restore@v5",
        "with": {
            "path": "${{ steps.cache.outputs.folder }}",
            "key": "${{ steps.cache.outputs.key }}-${{ github.sha }}",
            "restore-keys": "${{ steps.cache.outputs.key }}-",
        },
    },
)
SAVE_CACHE = {
    "name": "Keep fleetgen's cache for later runs",
    "if": f"{_PUSH} && steps.restore.outputs.cache-hit != 'true'",
    "uses": "actions/cache/save@v5",
    "with": {"path": "${{ steps.cache.outputs.folder }}", "key": "${{ steps.cache.outputs.key }}-${{ github.sha }}"},
}


def workflow(install: str) -> dict[str, Any]:
    """The pull-request workflow; `install` is what pip installs (a git source, or `.` for this repository)."""
    return {
        "name": "fleetgen",
        # Every pull request, no path filter: a required check a filter skips stays pending and blocks the merge, and the
        # fleet's facts file (compatibility.factsFile), any file of the repository, changes what validate accepts. A push
        # to the base branch validates and checks what merged, with the cache the base branch's previous run left.
        "on": {"pull_request": {}, "push": {"branches": [BASE_BRANCH]}},
        "permissions": {"contents": "read", "pull-requests": "write"},
        "concurrency": {"group": "fleetgen-${{ github.event.pull_request.number || github.ref }}", "cancel-in-progress": True},
        "jobs": {
            "fleet": {
                "runs-on": "ubuntu-latest",
                "outputs": {
                    "approvals-required": "${{ steps.gate.outputs.approvals-required }}",
                    "approvers": "${{ steps.gate.outputs.approvers }}",
                    "approver-groups": "${{ steps.gate.outputs.approver-groups }}",
                    "rules": "${{ steps.gate.outputs.rules }}",
                },
                "steps": [
                    {"uses": "actions/checkout@v5", "with": {"fetch-depth": 0}},
                    {"uses": "actions/setup-python@v6", "with": {"python-version": "3.12"}},
                    {"name": "Install fleetgen", "run": 'pip install "$FLEETGEN"', "env": {"FLEETGEN": install}},
                    *CACHE_STEPS,
                    {"name": "Validate fleet.yaml and everything it renders", "run": "fleetgen validate --format github"},
                    {"name": "The committed tree is a fresh render", "run": "fleetgen check"},
                    {
                        # one diff gives the annotations and step outputs of the gate and the comment's markdown
                        "name": "Diff against the merge base and the approval gate",
                        "id": "gate",
                        "if": _PULL_REQUEST,
                        "run": f'{_MERGE_BASE}\nfleetgen diff --base "$base" --format github {_COMMENT_FILE} || test $? -eq 1\n',
                    },
                    {
                        "name": "Comment on the pull request",
                        "if": _PULL_REQUEST,
                        "uses": "actions/github-script@v8",
                        "with": {"script": _COMMENT_SCRIPT},
                    },
                    SAVE_CACHE,
                    {
                        "name": "No change the diff refuses",
                        "if": "steps.gate.outputs.refused == 'true'",
                        "run": 'echo "fleetgen diff refuses this pull request as it is: see its error annotations" >&2\nexit 1\n',
                    },
                ],
            },
            # One environment per approver group, its required reviewers that group: approving one group's
            # deployment approves only that group's part, and every group the rules name must approve.
            "approval": {
                "needs": "fleet",
                "if": "needs.fleet.outputs.approvals-required == 'true'",
                "strategy": {"fail-fast": False, "matrix": {"group": "${{ fromJSON(needs.fleet.outputs.approver-groups) }}"}},
                "runs-on": "ubuntu-latest",
                "environment": f"{ENVIRONMENT_PREFIX}${{{{ matrix.group }}}}",
                "steps": [
                    {
                        "name": "Approved",
                        "run": 'echo "$GROUP approved its part of rules $RULES"',
                        "env": {"GROUP": "${{ matrix.group }}", "RULES": "${{ needs.fleet.outputs.rules }}"},
                    }
                ],
            },
            # The one check branch protection requires for the gate: green when no approval was needed or
            # every group approved; a skipped matrix is not a pass for GitHub's required checks otherwise.
            "approvals": {
                "needs": ["fleet", "approval"],
                "if": "always()",
                "runs-on": "ubuntu-latest",
                "steps": [
                    {
                        "name": "Every approver group approved",
                        "run": 'test "$FLEET" = success && { test "$APPROVAL" = success || test "$APPROVAL" = skipped; }',
                        "env": {"FLEET": "${{ needs.fleet.result }}", "APPROVAL": "${{ needs.approval.result }}"},
                    }
                ],
            },
        },
    }


def workflow_text(install: str) -> bytes:
    header = (
        "# Written by fleetgen; every pull request runs it (branch protection requires its jobs), and every push to\n"
        f"# {BASE_BRANCH}, the branch the clusters follow (name yours if it is another).\n"
    )
    return dump_documents([workflow(install)], header=header)


def pre_commit_config(source: FleetgenSource) -> bytes:
    """Hooks from fleetgen's own repository (its .pre-commit-hooks.yaml), pinned to a tag or commit."""
    hooks = [{"id": "fleetgen-validate"}, {"id": "fleetgen-check"}]
    config = {"repos": [{"repo": source.url, "rev": source.ref, "hooks": hooks}]}
    return dump_documents([config], header="# Written by fleetgen init; `pre-commit install` runs these before each commit.\n")


STARTER = """\
# yaml-language-server: $schema=schemas/fleet.schema.json
# fleet.yaml: the whole GPU fleet in one file. Edit it in a pull request; CI runs
#   fleetgen validate && fleetgen check && fleetgen diff --base <merge-base>
# Add a team with `fleetgen team add NAME --group ID --cost-center CC --cluster dev --gpu 2`.
apiVersion: fleetgen/v1alpha1
kind: Fleet

metadata:
  name: my-fleet
  costCenter: platform          # cost centre of fleet-wide objects
  platformOwners: [platform-owners]   # approve what fleetgen always gates; own .github/CODEOWNERS's files

gitops:
  engine: flux                  # flux or argocd
  repository: https://example.com/my-org/fleet.git

# One row of the compatibility matrix a cluster names (init writes the newest the facts fully support).
versionSets:
  current:
    kubernetes: 1.35.2
    driver: 580.95.05
    cuda: "13.0"
    cudnn: 9.17.0
    containerd: 2.2.1

clusters:
  - name: dev
    region: eastus
    environment: dev
    purpose: Dev/test, notebooks
    versionSet: current
    nodePools:
      - name: t4-spot
        vmSize: Standard_NC4as_T4_v3
        gpuModel: T4
        gpusPerNode: 1
        cpuPerNode: 3
        memoryPerNode: 24Gi
        maxNodes: 4
        scaling: spot
        labels: {accelerator: nvidia-t4}

# Each team gets a namespace, RBAC for its group, a quota, a network policy and a Kueue queue.
teams:
  - name: ml
    group: 00000000-0000-0000-0000-000000000000   # your identity provider's group id
    costCenter: ml
    project: first-models
    quota:
      requests: {cpu: 8, memory: 32Gi, gpu: 2}
    clusters:
      dev: {}

# Who must approve what (the base branch's rules judge a pull request). Each approver group gets a
# GitHub environment of its own, fleet-approval-<group>, whose required reviewers are that group.
approvals:
  - name: large-gpu-allocation
    description: 8 or more GPUs for a team on a cluster
    when: {gpuQuotaAtLeast: 8}
    approvers: [platform-owners]
"""

README = """\
# Fleet configuration

`fleet.yaml` describes the GPU fleet; `base/` and `clusters/` are rendered from it by
fleetgen and synced by the GitOps engine. Do not edit them.

    pip install "PIN"   # what the hooks and CI install
    pre-commit install     # validate and check before every commit
    fleetgen validate      # every problem, with its line and column
    fleetgen render        # rewrite base/ and clusters/
    fleetgen check         # is the committed tree fresh? (CI runs this)
    fleetgen doctor        # the GitHub settings these files assume

Pull requests that change the fleet get a comment with the per-cluster diff and the approvals
it needs (`.github/workflows/fleetgen.yml`).

## Branch protection

The gate binds only with these settings on the branch the clusters follow (a branch protection
rule or a ruleset); `fleetgen doctor` lists them for this repository and checks the files they rely on:

- Require a pull request before merging, with review from Code Owners (`.github/CODEOWNERS`: the
  platform owners own `.github/` and `fleet.yaml`, and the facts file once fleet.yaml names one, so
  the gate cannot be edited past them).
- Require the status checks `fleet` and `approvals` (the workflow's jobs) to pass.
- Do not allow bypassing the above settings (administrators included); block force pushes.
- One environment per approver group, `fleet-approval-<group>`, whose required reviewers are that
  group's GitHub team, with "Prevent self-review" on, no administrator bypass, and no deployment
  branch restriction (pull requests deploy to it). Approving one environment approves only that
  group's part of the rules.

CODEOWNERS works per path: it cannot tell a team's quota change from an edit of `approvals` in
the same `fleet.yaml`. The field-level part is fleetgen's: changes to `approvals`, the platform
owners, tenant access and removals always need the platform owners' environment.
"""


def init_files(
    name: str | None,
    engine: str | None,
    repository: str | None,
    installed_from: FleetgenSource,
    org: str | None = None,
    credentials: str | None = None,
) -> dict[str, bytes]:
    """The files of a new fleet repository, fleetgen pinned to `installed_from` (the caller adds the tree and schema).

    `org`: the GitHub organisation whose teams CODEOWNERS names (default: the repository's, else a placeholder);
    `credentials`: the kind of Git credential of a private repository (gitops.credentials.kind)."""
    starter = RoundTrip(STARTER)
    if name:
        starter.data["metadata"]["name"] = name
    if engine:
        starter.data["gitops"]["engine"] = engine
    if repository:
        starter.data["gitops"]["repository"] = repository
    if credentials:
        starter.data["gitops"]["credentials"] = {"kind": credentials, "secretName": "fleet-git"}
    pools = [pool for cluster in starter.data["clusters"] for pool in cluster["nodePools"]]
    newest = newest_supported(frozenset(p["gpuModel"] for p in pools), Platform().gpu_operator.version)
    for field in ("kubernetes", "driver", "cuda", "cudnn", "containerd"):
        starter.data["versionSets"]["current"][field] = str(getattr(newest, field))
    owners = tuple(starter.data["metadata"]["platformOwners"])
    if org is not None and not ORG.fullmatch(org):
        raise InputError(f"--github-org {org!r}: a GitHub organisation name, letters, digits and single hyphens")
    owning_org = org or github_org(repository) or PLACEHOLDER_ORG
    return {
        "fleet.yaml": starter.text().encode(),
        WORKFLOW_PATH: workflow_text(installed_from.pip),
        PRE_COMMIT_PATH: pre_commit_config(installed_from),
        CODEOWNERS_PATH: codeowners_text(owning_org, owners, "fleet.yaml", None),
        "README.md": README.replace("PIN", installed_from.pip).encode(),
    }


def refuse_overwrites(root: Path, paths: list[str]) -> None:
    existing = sorted(p for p in paths if (root / p).exists() or (root / p).is_symlink())
    if existing:
        shown = ", ".join(existing[:3]) + (f" and {len(existing) - 3} more" if len(existing) > 3 else "")
        raise InputError(f"{root}: refusing to overwrite {shown}; fleetgen init writes only into a fresh folder")

"""Commands that compare: `diff` (base branch vs pull request) and `drift` (render vs live cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from fleetgen.cli.common import cluster_dumps_option, console, fleet_argument, reports_errors
from fleetgen.errors import DifferencesFound
from fleetgen.output.findings import FORMATS, escape_github

if TYPE_CHECKING:
    from fleetgen.workflows.pull_request import Review

AGAINST = ("committed", "fleet.yaml")  # drift's --against: the tree Git holds, or a fresh render of fleet.yaml


@click.command(epilog="Example: fleetgen diff --base origin/main --format markdown > comment.md")
@fleet_argument
@click.option("--base", "base_ref", required=True, help="Git revision to compare against, e.g. origin/main or the merge base.")
@click.option("--head", "head_ref", default=None, help="Git revision of the new state (default: FLEET as it is on disk).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "github"]), default="text", show_default=True)
@cluster_dumps_option("to show quotas lowered below current use")
@click.option(
    "--markdown-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the markdown diff (the pull-request comment) to this file: one run gives a workflow both formats.",
)
@reports_errors
def diff(fleet: Path, base_ref: str, head_ref: str | None, fmt: str, live: tuple[str, ...], markdown_file: Path | None) -> None:
    """What a change to FLEET does to each cluster, and the approvals it needs (exit 1 when it changes anything)."""
    from fleetgen.review import change_path
    from fleetgen.review.output import diff_json, diff_text, github_annotations
    from fleetgen.workflows import pull_request

    shell = console()
    result = pull_request.review(fleet, base_ref, head_ref, live)
    if markdown_file is not None:
        from fleetgen.output.tree import replace_file

        replace_file(markdown_file, _markdown(result, fleet).encode("utf-8"))
    if fmt == "json":
        shell.out(diff_json(result.diff, result.impacts))
    elif fmt == "markdown":
        shell.out(_markdown(result, fleet), nl=False)
    elif fmt == "github":
        source = result.head.loaded.source
        annotations = github_annotations(result.diff, lambda change: source.locate(change_path(change, result.head.fleet)))
        if annotations:
            shell.out(annotations)
        outputs = pull_request.github_outputs(result.diff)
        target = pull_request.github_output_target()
        if target:
            pull_request.write_github_output(outputs, target)
        else:
            shell.out("\n".join(f"{k}={v}" for k, v in outputs.items()))
    else:
        shell.out(diff_text(result.diff, result.impacts))
    if not result.diff.empty:
        raise DifferencesFound()


def _markdown(result: Review, fleet: Path) -> str:
    """The pull-request comment: the diff in markdown, each change linked to its fleet.yaml line."""
    from fleetgen.report.explain import diff_sources
    from fleetgen.review.output import diff_markdown

    head = result.head
    return diff_markdown(result.diff, result.impacts, source=diff_sources(head.rendered, head.loaded.source, fleet.name))


@click.command(
    epilog="Example: fleetgen drift --cluster dev-eastus --live live.yaml   (live.yaml: kubectl get resourcequotas,localqueues -A -o yaml)"
)
@fleet_argument
@click.option("--cluster", required=True, help="Cluster whose live state is compared.")
@click.option(
    "--live",
    "live",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="`kubectl get ... -o yaml` output: a file or folder.",
)
@click.option("--context", default=None, help="Read the live objects through kubectl with this kubeconfig context instead.")
@click.option(
    "--against",
    type=click.Choice(AGAINST),
    default="committed",
    show_default=True,
    help="Compare with the tree committed at the revision the cluster is synced to, or with a fresh render of FLEET.",
)
@click.option(
    "--ref",
    default=None,
    metavar="REV",
    help="The revision the cluster is synced to, when its engine objects do not say (default: HEAD).",
)
@click.option(
    "--request-timeout",
    "timeout",
    type=click.IntRange(1, 600),
    default=30,
    show_default=True,
    metavar="SECONDS",
    help="With --context: how long each kind's list may take; a kind that takes longer is reported as not read.",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="How drift is printed.")
@reports_errors
def drift(
    fleet: Path, cluster: str, live: tuple[Path, ...], context: str | None, against: str, ref: str | None, timeout: int, fmt: str
) -> None:
    """Compare CLUSTER's live objects with what Git holds for it (or the render of FLEET); exit 1 on drift.

    The revision is the one the cluster's engine records (Flux's Kustomization status.lastAppliedRevision,
    Argo CD's Application status.sync.revision), else --ref, else HEAD."""
    from fleetgen.live.drift_output import drift_json, drift_text
    from fleetgen.workflows import live_state

    result = live_state.drift(fleet, cluster, live, context, against, ref, timeout)
    if fmt == "json":
        console().out(drift_json(cluster, result))
    elif fmt == "github":
        if result.found:
            console().out(f"::error title={escape_github('drift on ' + cluster, prop=True)}::{escape_github(drift_text(cluster, result))}")
    else:
        console().out(drift_text(cluster, result))
    if result.found:
        raise DifferencesFound()


COMMANDS = [diff, drift]

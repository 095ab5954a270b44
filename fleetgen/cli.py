"""The command line: thin click commands over the library; the one place errors become exit codes."""

from __future__ import annotations

import datetime
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from fleetgen import __version__
from fleetgen.check import check_tree
from fleetgen.crdschema import read_crds
from fleetgen.diff import FleetDiff, diff_fleets, rendered_objects
from fleetgen.diff_report import check_json, check_text, diff_json, diff_markdown, diff_text, drift_json, drift_text
from fleetgen.docs import REFERENCE_PATH, reference_markdown
from fleetgen.errors import EXIT_FINDINGS, EXIT_TROUBLE, Finding, FindingsError, FleetgenError, InputError, Severity
from fleetgen.fleet_report import build_report, report_html, report_json, report_markdown
from fleetgen.gitrev import read_at
from fleetgen.live import QuotaImpact, compare, live_from_context, quota_impacts, read_live
from fleetgen.load import LoadedFleet, load_fleet, load_fleet_text
from fleetgen.model import COMPONENTS, Fleet, Version
from fleetgen.onboarding import NewTeam, add_team, remove_team
from fleetgen.render import cluster_objects, files_of, render_files
from fleetgen.render import plan as render_plan
from fleetgen.report import FORMATS, format_findings, summary
from fleetgen.scaffold import init_files, refuse_overwrites
from fleetgen.schema import SCHEMA_PATH, fleet_json_schema
from fleetgen.source import read_fleet_bytes
from fleetgen.tree import LEDGER, Tree, replace_file
from fleetgen.upgrade.apply import apply_wave
from fleetgen.upgrade.plan import plan_upgrade, versions_of
from fleetgen.upgrade.report import plan_json, plan_markdown, plan_text, status_text
from fleetgen.upgrade.status import upgrade_status
from fleetgen.validate import Schemas, check_loaded

F = TypeVar("F", bound=Callable[..., Any])

fleet_argument = click.argument("fleet", default="fleet.yaml", type=click.Path(dir_okay=False, path_type=Path))
fleet_option = click.option(
    "--fleet", default="fleet.yaml", show_default=True, type=click.Path(dir_okay=False, path_type=Path), help="The fleet file to edit."
)
format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="How findings are printed."
)


class Progress:
    """Stage messages for long runs, on a terminal only: CI logs and pipes stay clean."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty() and not os.environ.get("CI")
        self.started = time.monotonic()

    def stage(self, text: str) -> None:
        if self.enabled:
            click.echo(f"\r\x1b[K{text} ({time.monotonic() - self.started:.1f}s)", err=True, nl=False)

    def done(self) -> None:
        if self.enabled:
            click.echo("\r\x1b[K", err=True, nl=False)


def checking_options(command: F) -> F:
    """--crd, --strict and --fail-on: how rendered objects are checked before anything is trusted."""
    options = [
        click.option(
            "--crd",
            "crds",
            multiple=True,
            type=click.Path(exists=True, path_type=Path),
            help="CRD manifest file or folder (e.g. `kubectl get crd NAME -o yaml`); its schemas win over the shipped ones.",
        ),
        click.option("--strict", is_flag=True, help="A kind with no schema is an error, not a warning."),
        click.option(
            "--fail-on",
            type=click.Choice(["error", "warning"]),
            default="error",
            show_default=True,
            help="Exit 1 on warnings too.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def checked(
    fleet: Path, crds: tuple[Path, ...], strict: bool, fail_on: str, progress: Progress | None = None
) -> tuple[LoadedFleet, list[Finding]]:
    """Load FLEET and validate it and everything it renders; raises FindingsError when it fails."""
    progress = progress or Progress()
    progress.stage(f"reading {fleet}")
    loaded = load_fleet(fleet)
    try:
        user_crds = read_crds(crds)
    except (OSError, ValueError) as exc:
        raise InputError(f"--crd: cannot read CRDs: {exc}") from None
    progress.stage(f"checking what {len(loaded.fleet.clusters)} cluster(s) get")
    findings = check_loaded(loaded, Schemas(user_crds), strict=strict, fail_on=Severity(fail_on))
    progress.done()
    return loaded, findings


def reports_errors(command: F) -> F:
    """Print fleetgen's own errors without a traceback (unless --debug) and exit with their code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        fmt = kwargs.get("fmt", "text")
        try:
            return command(*args, **kwargs)
        except FindingsError as exc:
            if ctx.obj["debug"]:
                raise
            click.echo(format_findings(exc.findings, fmt), err=fmt == "text")
            if fmt == "text":
                click.echo(summary(exc.findings), err=True)
            ctx.exit(exc.exit_code)
        except FleetgenError as exc:
            if ctx.obj["debug"]:
                raise
            click.echo(f"fleetgen: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except Exception as exc:  # a bug: still one line, and the way to see more
            if ctx.obj["debug"]:
                raise
            click.echo(f"fleetgen: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)", err=True)
            ctx.exit(EXIT_TROUBLE)

    return wrapper  # type: ignore[return-value]


@click.group(
    epilog="Example: fleetgen validate fleet.yaml && fleetgen render fleet.yaml\n\n"
    "Exit codes: 0 fine, 1 findings (invalid fleet, stale tree, diff or drift), 2 usage or I/O trouble."
)
@click.version_option(__version__, prog_name="fleetgen")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """fleetgen: one typed fleet.yaml in, validated kustomize trees for a GPU fleet out."""
    ctx.obj = {"debug": debug}


@cli.command(epilog="Example: fleetgen validate fleet.yaml --format github --crd crds/")
@fleet_argument
@format_option
@checking_options
@reports_errors
def validate(fleet: Path, fmt: str, crds: tuple[Path, ...], strict: bool, fail_on: str) -> None:
    """Check FLEET (default: fleet.yaml) and every object it renders; report each problem with its line."""
    loaded, findings = checked(fleet, crds, strict, fail_on)
    _report(findings, fmt)
    if fmt == "text":
        model = loaded.fleet
        click.echo(f"{fleet}: valid ({len(model.clusters)} clusters, {len(model.teams)} teams; {summary(findings)})")


@cli.command(epilog="Example: fleetgen render fleet.yaml --out .")
@fleet_argument
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder that receives base/ and clusters/ (default: the folder of FLEET).",
)
@format_option
@checking_options
@reports_errors
def render(fleet: Path, out: Path | None, fmt: str, crds: tuple[Path, ...], strict: bool, fail_on: str) -> None:
    """Write the kustomize tree of FLEET: base/ and clusters/<name>/, only the files that change.

    Nothing is written unless FLEET and every object it renders are valid."""
    progress = Progress()
    loaded, findings = checked(fleet, crds, strict, fail_on, progress)
    _report(findings, fmt)
    root = out if out is not None else fleet.parent
    progress.stage("rendering")
    files = render_files(loaded.fleet, fleet.name)
    progress.stage(f"writing {len(files)} files")
    changes = Tree(root).write(files)
    progress.done()
    unchanged = len(files) - len(changes.written)
    click.echo(f"{root}: {len(changes.written)} written, {len(changes.removed)} removed, {unchanged} unchanged", err=True)


@cli.command(epilog="Example: fleetgen schema --out schemas/fleet.schema.json")
@click.option("--out", default=SCHEMA_PATH, show_default=True, help="Where to write the schema ('-' for standard output).")
@reports_errors
def schema(out: str) -> None:
    """Write the JSON Schema of fleet.yaml, for editors (yaml-language-server) and CI."""
    _write_generated(fleet_json_schema(), out)


@cli.command(epilog="Example: fleetgen check fleet.yaml || fleetgen check --fix")
@fleet_argument
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Folder of the tree (default: the folder of FLEET)."
)
@click.option("--fix", is_flag=True, help="Render, so the tree matches fleet.yaml.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@reports_errors
def check(fleet: Path, out: Path | None, fix: bool, fmt: str) -> None:
    """Is the committed tree a fresh render of FLEET? Lists stale, edited, missing and orphan files (exit 1)."""
    loaded, _ = checked(fleet, (), False, "error")
    tree = Tree(out if out is not None else fleet.parent)
    tree.recover()  # a render interrupted after its commit point is finished first
    plan = render_plan(loaded.fleet)
    files = files_of(plan, fleet.name)
    found = check_tree(tree, files, plan, loaded.source)
    if fix and found:
        changes = tree.write(files)
        click.echo(f"{tree.root}: fixed: {len(changes.written)} written, {len(changes.removed)} removed", err=True)
        return
    if fmt == "json":
        click.echo(check_json(found))
    elif found:
        click.echo(check_text(found))
    if found:
        if fmt == "text":
            click.echo(f"{len(found)} file(s) differ from a fresh render; run `fleetgen render` (or `fleetgen check --fix`)", err=True)
        raise SystemExit(EXIT_FINDINGS)
    if fmt == "text":
        click.echo(f"{tree.root}: up to date ({len(files)} files)", err=True)


def _load_revision(raw: bytes, name: str) -> Fleet:
    """A side of a diff; a fleet that does not load there is trouble (exit 2), never a diff."""
    try:
        return load_fleet_text(raw, name).fleet
    except FindingsError as exc:
        first = exc.findings[0]
        raise InputError(
            f"{name}: does not render ({len(exc.findings)} problem(s)), first: {first.location}: {first.dotted_path}: {first.message}"
        ) from None


def _live_option(values: tuple[str, ...]) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for value in values:
        cluster, sep, path = value.partition("=")
        if not sep or not cluster or not path:
            raise InputError(f"--live {value!r}: expected CLUSTER=FILE_OR_FOLDER")
        out.setdefault(cluster, []).append(Path(path))
    return out


@cli.command(epilog="Example: fleetgen diff --base origin/main --format markdown > comment.md")
@fleet_argument
@click.option("--base", "base_ref", required=True, help="Git revision to compare against, e.g. origin/main or the merge base.")
@click.option("--head", "head_ref", default=None, help="Git revision of the new state (default: FLEET as it is on disk).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "github"]), default="text", show_default=True)
@click.option(
    "--live", "live", multiple=True, metavar="CLUSTER=PATH", help="Live dump of a cluster, to show quotas lowered below current use."
)
@reports_errors
def diff(fleet: Path, base_ref: str, head_ref: str | None, fmt: str, live: tuple[str, ...]) -> None:
    """What a change to FLEET does to each cluster, and the approvals it needs (exit 1 when it changes anything)."""
    base = _load_revision(read_at(fleet, base_ref), f"{fleet.name}@{base_ref}")
    head_name = f"{fleet.name}@{head_ref}" if head_ref else fleet.name
    head = _load_revision(read_at(fleet, head_ref) if head_ref else read_fleet_bytes(fleet), head_name)
    result = diff_fleets(base, head, base_ref, head_ref or "working tree")
    impacts: dict[str, list[QuotaImpact]] = {}
    for cluster, paths in _live_option(live).items():
        index = next((i for i, c in enumerate(head.clusters) if c.name == cluster), None)
        if index is None:
            raise InputError(f"--live {cluster}: no such cluster in {head_name}")
        impacts[cluster] = quota_impacts(rendered_objects(head, index), read_live(paths))
    if fmt == "json":
        click.echo(diff_json(result, impacts))
    elif fmt == "markdown":
        click.echo(diff_markdown(result, impacts), nl=False)
    elif fmt == "github":
        _github_approvals(result)
    else:
        click.echo(diff_text(result, impacts))
    if not result.empty:
        raise SystemExit(EXIT_FINDINGS)


def _github_approvals(result: FleetDiff) -> None:
    """Annotations for the run page, and step outputs a required-review step can act on."""
    for approval in result.approvals:
        changes = "; ".join(c.text for c in approval.changes)
        click.echo(
            f"::warning title=approval required ({approval.rule.name})::{', '.join(approval.rule.approvers)} must approve: {changes}"
        )
    groups = sorted({g for a in result.approvals for g in a.rule.approvers})
    outputs = {
        "changed": str(not result.empty).lower(),
        "approvals-required": str(bool(result.approvals)).lower(),
        "approvers": ",".join(groups),
        "rules": ",".join(a.rule.name for a in result.approvals),
    }
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        try:
            with open(target, "a", encoding="utf-8") as handle:
                handle.writelines(f"{k}={v}\n" for k, v in outputs.items())
        except OSError as exc:
            raise InputError(f"GITHUB_OUTPUT {target}: {exc.strerror}") from None
    else:
        click.echo("\n".join(f"{k}={v}" for k, v in outputs.items()))


@cli.command(
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
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@reports_errors
def drift(fleet: Path, cluster: str, live: tuple[Path, ...], context: str | None, fmt: str) -> None:
    """Compare CLUSTER's live objects with the render of FLEET; exit 1 on drift."""
    loaded = load_fleet(fleet)
    index = next((i for i, c in enumerate(loaded.fleet.clusters) if c.name == cluster), None)
    if index is None:
        raise InputError(f"--cluster {cluster}: no such cluster in {fleet}")
    if bool(live) == bool(context):
        raise InputError("give either --live FILE|DIR or --context KUBECONTEXT")
    objects = read_live(live) if live else live_from_context(str(context))
    result = compare({m.key: m.body for m in cluster_objects(loaded.fleet, index)}, objects)
    click.echo(drift_json(cluster, result) if fmt == "json" else drift_text(cluster, result))
    if result.found:
        raise SystemExit(EXIT_FINDINGS)


@cli.command("report", epilog="Example: fleetgen report --format html > fleet-report.html")
@fleet_argument
@click.option("--format", "fmt", type=click.Choice(["markdown", "json", "html"]), default="markdown", show_default=True)
@reports_errors
def report_command(fleet: Path, fmt: str) -> None:
    """GPU capacity against committed quotas, GPUs and monthly cost per team, and the compatibility matrix."""
    result = build_report(load_fleet(fleet).fleet)
    click.echo({"json": report_json, "html": report_html}.get(fmt, report_markdown)(result), nl=fmt == "json")


@cli.command("init", epilog="Example: fleetgen init my-fleet --name contoso-ai --repository https://github.com/contoso/fleet")
@click.argument("folder", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--name", default=None, help="Fleet name (default: my-fleet).")
@click.option("--engine", type=click.Choice(["flux", "argocd"]), default=None, help="GitOps engine (default: flux).")
@click.option("--repository", default=None, help="URL of the Git repository the clusters sync from.")
@reports_errors
def init(folder: Path, name: str | None, engine: str | None, repository: str | None) -> None:
    """Start a fleet repository in FOLDER: a commented fleet.yaml, CI workflow, pre-commit, README, rendered tree."""
    files = init_files(name, engine, repository)
    files[SCHEMA_PATH] = fleet_json_schema().encode()
    loaded = load_fleet_text(files["fleet.yaml"], "fleet.yaml")
    check_loaded(loaded, Schemas())
    tree = render_files(loaded.fleet)
    refuse_overwrites(folder, [*files, *tree, LEDGER])  # all or nothing: never overwrite
    for path, data in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_file(target, data)
    Tree(folder).write(tree)
    click.echo(f"{folder}: new fleet repository ({len(files) + len(tree)} files); next: fleetgen team add ...", err=True)


@cli.group()
def team() -> None:
    """Onboard and offboard teams: edit fleet.yaml in place, validate, render."""


def _write_validated(fleet: Path, text: str, *, render: bool = True) -> None:
    """Validate the edited fleet.yaml and all it renders; only then write it (and render the tree)."""
    loaded = load_fleet_text(text.encode(), fleet.name)
    check_loaded(loaded, Schemas())
    replace_file(fleet, text.encode())
    if not render:
        click.echo(f"{fleet}: updated", err=True)
        return
    changes = Tree(fleet.parent).write(render_files(loaded.fleet, fleet.name))
    click.echo(f"{fleet}: updated; {fleet.parent}: {len(changes.written)} written, {len(changes.removed)} removed", err=True)


@team.command(
    "add",
    epilog="Example: fleetgen team add vision --group 7c1d... --cost-center cc-6100 --cluster dev-eastus --gpu 2 --cpu 16 --memory 64Gi",
)
@click.argument("name")
@fleet_option
@click.option("--group", required=True, help="Identity-provider group bound to the team's Role.")
@click.option("--cost-center", required=True, help="Cost centre label of the team's objects.")
@click.option("--project", default=None, help="Project label (default: the team name).")
@click.option("--cluster", "clusters", multiple=True, required=True, help="A cluster the team runs on (repeat for more).")
@click.option("--gpu", type=click.IntRange(min=0), required=True, help="GPU quota (requests.nvidia.com/gpu) on each cluster.")
@click.option("--cpu", default=None, help="CPU request quota, e.g. 32.")
@click.option("--memory", default=None, help="Memory request quota, e.g. 128Gi.")
@click.option("--pods", type=click.IntRange(min=0), default=None, help="Pod count quota.")
@format_option
@reports_errors
def team_add(
    name: str,
    fleet: Path,
    group: str,
    cost_center: str,
    project: str | None,
    clusters: tuple[str, ...],
    gpu: int,
    cpu: str | None,
    memory: str | None,
    pods: int | None,
    fmt: str,
) -> None:
    """Add team NAME to fleet.yaml; refused, with the usual errors, when the fleet would be invalid."""
    loaded = load_fleet(fleet)
    new = NewTeam(name, group, cost_center, clusters, gpu, project=project, cpu=cpu, memory=memory, pods=pods)
    _write_validated(fleet, add_team(loaded.source.text, loaded.fleet, new))


@team.command("remove", epilog="Example: fleetgen team remove vision")
@click.argument("name")
@fleet_option
@format_option
@reports_errors
def team_remove(name: str, fleet: Path, fmt: str) -> None:
    """Remove team NAME from fleet.yaml and its files from the tree."""
    loaded = load_fleet(fleet)
    _write_validated(fleet, remove_team(loaded.source.text, loaded.fleet, name))


@cli.command("docs", epilog="Example: fleetgen docs")
@click.option("--out", default=REFERENCE_PATH, show_default=True, help="Where to write the reference ('-' for standard output).")
@reports_errors
def docs_command(out: str) -> None:
    """Write the fleet.yaml reference (Markdown) from the model's field descriptions."""
    _write_generated(reference_markdown(), out)


def _write_generated(text: str, out: str) -> None:
    """A file generated from the model, or standard output for '-'."""
    if out == "-":
        click.echo(text, nl=False)
        return
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out}: cannot create its folder: {exc.strerror}") from None
    replace_file(Path(out), text.encode())
    click.echo(f"{out}: written", err=True)


def _utc(text: str | None, option: str) -> datetime.datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{option} {text!r}: expected a date and time such as 2026-11-24T09:00Z") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def _requested(fleet: Fleet, sets: tuple[str, ...], to: str | None) -> dict[str, Version]:
    if sets and to:
        raise InputError("give --set or --to, not both")
    if to is not None:
        if to not in fleet.version_sets:
            raise InputError(f"--to {to}: no such version set (known: {', '.join(fleet.version_sets)})")
        return versions_of(fleet.version_sets[to])
    out: dict[str, Version] = {}
    for item in sets:
        component, sep, version = item.partition("=")
        if not sep or component not in COMPONENTS:
            raise InputError(f"--set {item!r}: expected COMPONENT=VERSION with COMPONENT one of {', '.join(COMPONENTS)}")
        try:
            out[component] = Version.parse(version)
        except ValueError as exc:
            raise InputError(f"--set {item!r}: {exc}") from None
    return out


set_option = click.option(
    "--set", "sets", multiple=True, metavar="COMPONENT=VERSION", help="A target version, e.g. driver=560.35.03 (repeat for more)."
)
to_option = click.option("--to", default=None, metavar="VERSION_SET", help="Move every cluster to the versions of this version set.")


@cli.group()
def upgrade() -> None:
    """Canary upgrades of drivers, CUDA, cuDNN, containerd and Kubernetes across the fleet."""


@upgrade.command("plan", epilog="Example: fleetgen upgrade plan --set driver=560.35.03 --start 2026-11-24T09:00Z")
@fleet_argument
@set_option
@to_option
@click.option("--start", default=None, help="When the first wave may start (UTC); gives every wave a date and the plan an ETA.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@reports_errors
def upgrade_plan(fleet: Path, sets: tuple[str, ...], to: str | None, start: str | None, fmt: str) -> None:
    """Plan the waves that move the fleet to the target versions; refuse targets the rules reject."""
    model = load_fleet(fleet).fleet
    requested = _requested(model, sets, to)
    if not requested:
        raise InputError("say what to upgrade to: --set COMPONENT=VERSION or --to VERSION_SET")
    result = plan_upgrade(model, requested, _utc(start, "--start"))
    click.echo({"json": plan_json, "markdown": plan_markdown}.get(fmt, plan_text)(result), nl=fmt != "markdown")


@upgrade.command("apply", epilog="Example: fleetgen upgrade apply --wave 1 --set driver=560.35.03")
@fleet_argument
@click.option("--wave", "number", type=int, required=True, help="The wave to write into fleet.yaml.")
@set_option
@to_option
@click.option("--at", default=None, help="When the wave is applied (UTC; default now); status counts its soak from here.")
@click.option("--no-render", is_flag=True, help="Only rewrite fleet.yaml; do not render the tree.")
@reports_errors
def upgrade_apply(fleet: Path, number: int, sets: tuple[str, ...], to: str | None, at: str | None, no_render: bool) -> None:
    """Rewrite FLEET for one wave, keeping its comments and layout, then render the tree."""
    loaded = load_fleet(fleet)
    requested = _requested(loaded.fleet, sets, to) or None
    moment = _utc(at, "--at") or datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    _write_validated(fleet, apply_wave(loaded, number, requested, moment), render=not no_render)


@upgrade.command("status", epilog="Example: fleetgen upgrade status")
@fleet_argument
@click.option("--now", default=None, help="The time to judge soaks by (UTC; default now).")
@reports_errors
def upgrade_status_command(fleet: Path, now: str | None) -> None:
    """Which wave the fleet is in, which clusters are behind, and when the current soak ends."""
    moment = _utc(now, "--now") or datetime.datetime.now(datetime.UTC)
    click.echo(status_text(upgrade_status(load_fleet(fleet).fleet, moment), moment))


def _report(findings: list[Finding], fmt: str) -> None:
    if findings:
        click.echo(format_findings(findings, fmt), err=fmt == "text")


def main() -> None:
    try:
        cli(prog_name="fleetgen")
    except KeyboardInterrupt:
        click.echo("fleetgen: interrupted", err=True)
        sys.exit(EXIT_TROUBLE)

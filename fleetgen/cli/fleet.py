"""Commands on the fleet as a whole: validate, render, check, migrate, schema, docs, report, init."""

from __future__ import annotations

from pathlib import Path

import click

from fleetgen.cli.common import check_options, checking_options, console, findings_format_option, fleet_argument, reports_errors
from fleetgen.errors import DifferencesFound, InputError, Severity
from fleetgen.output.findings import summary
from fleetgen.output.generated_paths import REFERENCE_PATH, SCHEMA_PATH

SOURCE_HELP = (
    "Where the new repository's hooks and CI install fleetgen from: a git repository and a tag, branch or commit git "
    "finds in it (default: the git URL and commit pip installed this fleetgen from)."
)


@click.command(epilog="Example: fleetgen validate fleet.yaml --format github --crd crds/")
@fleet_argument
@findings_format_option
@checking_options
@reports_errors
def validate(fleet: Path, fmt: str, all_findings: bool, crds: tuple[Path, ...], strict: bool, fail_on: str) -> None:
    """Check FLEET (default: fleet.yaml) and every object it renders; report each problem with its line."""
    from fleetgen.validation.known_reports import known_report

    shell = console()
    # What a render or validate of this very text reported today, when the cache kept it, is printed without building
    # the model (the pre-commit hook's case, validation/known_reports.py); anything else is validated the full way.
    known = known_report(fleet, strict, Severity(fail_on)) if not crds else None
    if known is not None:
        findings, clusters, teams = list(known.findings), known.clusters, known.teams
    else:
        from fleetgen import workflows

        # Per-cluster verdicts are kept where `render` looks for them, so validate, then render, checks each cluster once.
        result = workflows.validate(fleet, check_options(crds, strict, fail_on), shell.stage)
        findings, clusters, teams = result.findings, len(result.fleet.clusters), len(result.fleet.teams)
    shell.findings(findings, fmt, every=all_findings)
    if fmt == "text":
        shell.out(f"{fleet}: valid ({clusters} clusters, {teams} teams; {summary(findings)})")


@click.command(epilog="Example: fleetgen render fleet.yaml --out .")
@fleet_argument
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder that receives base/ and clusters/ (default: the folder of FLEET).",
)
@findings_format_option
@checking_options
@reports_errors
def render(fleet: Path, out: Path | None, fmt: str, all_findings: bool, crds: tuple[Path, ...], strict: bool, fail_on: str) -> None:
    """Write the kustomize tree of FLEET: base/ and clusters/<name>/, only the files that change.

    Nothing is written unless FLEET and every object it renders are valid."""
    from fleetgen.validation.known_reports import known_render

    shell = console()
    # A text that validate (or a render) judged valid today, whose files the cache kept, is written from those files
    # without building the model (validation/known_reports.py); anything else is rendered the full way.
    known = known_render(fleet, out, strict, Severity(fail_on), shell.stage) if not crds else None
    if known is not None:
        findings, root, files, changes = list(known.report.findings), known.root, known.files, known.changes
    else:
        from fleetgen import workflows

        result = workflows.render_tree(fleet, out, check_options(crds, strict, fail_on), shell.stage)
        findings, root, files, changes = result.findings, result.root, result.files, result.changes
    shell.findings(findings, fmt, every=all_findings)
    unchanged = files - len(changes.written)
    shell.err(f"{root}: {len(changes.written)} written, {len(changes.removed)} removed, {unchanged} unchanged")


@click.command(epilog="Example: fleetgen check fleet.yaml || fleetgen check --fix")
@fleet_argument
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Folder of the tree (default: the folder of FLEET)."
)
@click.option("--fix", is_flag=True, help="Render, so the tree matches fleet.yaml.")
@findings_format_option
@reports_errors
def check(fleet: Path, out: Path | None, fix: bool, fmt: str, all_findings: bool) -> None:
    """Is the committed tree a fresh render of FLEET? Lists stale, edited, missing and orphan files (exit 1)."""
    from fleetgen.output.known_trees import known_fresh

    shell = console()
    # A tree the cache knows as the render of this very text is checked by its files' digests, without the model
    # (the pre-commit hook's case, output/known_trees.py); anything else, --fix and JSON take the full way.
    known = known_fresh(fleet, out) if not fix and fmt != "json" else None
    if known is not None:
        if fmt == "text":
            shell.err(f"{known[0]}: up to date ({known[1]} files)")
        return
    from fleetgen import workflows
    from fleetgen.review.freshness import freshness_github, freshness_json, freshness_text

    result = workflows.freshness(fleet, out, fix=fix, stage=shell.stage)
    if result.fixed is not None:
        shell.err(f"{result.root}: fixed: {len(result.fixed.written)} written, {len(result.fixed.removed)} removed")
        return
    if fmt == "json":
        shell.out(freshness_json(result.found))
    elif fmt == "github" and result.found:
        shell.out(freshness_github(result.found))
    elif result.found:
        shell.out(freshness_text(result.found))
    if result.found:
        closing = f"{len(result.found)} file(s) differ from a fresh render; run `fleetgen render` (or `fleetgen check --fix`)"
        raise DifferencesFound(closing if fmt == "text" else "")
    if fmt == "text":
        shell.err(f"{result.root}: up to date ({result.files} files)")


@click.command(epilog="Example: fleetgen schema --out schemas/fleet.schema.json")
@click.option("--out", default=SCHEMA_PATH, show_default=True, help="Where to write the schema ('-' for standard output).")
@reports_errors
def schema(out: str) -> None:
    """Write the JSON Schema of fleet.yaml, for editors (yaml-language-server) and CI."""
    from fleetgen.model.json_schema import fleet_json_schema

    _write_generated(fleet_json_schema(), out)


@click.command("docs", epilog="Example: fleetgen docs")
@click.option(
    "--out", default=None, help=f"Write only the fleet.yaml reference ({REFERENCE_PATH}), to this file ('-' for standard output)."
)
@reports_errors
def docs_command(out: str | None) -> None:
    """Write the generated reference pages of the documentation: fleet.yaml from the model, the command line
    from the commands, the compatibility facts from their data files."""
    from fleetgen.model.reference_doc import reference_markdown

    if out is not None:
        _write_generated(reference_markdown(), out)
        return
    from fleetgen.cli.reference_doc import generated_pages

    for path, text in generated_pages().items():
        _write_generated(text, path)


def _write_generated(text: str, out: str) -> None:
    """A file generated from the model, or standard output for '-'."""
    from fleetgen.output.tree import replace_file

    if out == "-":
        console().out(text, nl=False)
        return
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out}: cannot create its folder: {exc.strerror}") from None
    replace_file(Path(out), text.encode())
    console().err(f"{out}: written")


@click.command("report", epilog="Example: fleetgen report --format html > fleet-report.html")
@fleet_argument
@click.option("--format", "fmt", type=click.Choice(["markdown", "json", "html"]), default="markdown", show_default=True)
@reports_errors
def report_command(fleet: Path, fmt: str) -> None:
    """GPU capacity against committed quotas, GPUs and monthly cost per team, and the compatibility matrix."""
    from fleetgen.checks.load import load_fleet
    from fleetgen.report.capacity import build_report
    from fleetgen.report.capacity_output import report_html, report_json, report_markdown

    result = build_report(load_fleet(fleet).fleet)
    console().out({"json": report_json, "html": report_html}.get(fmt, report_markdown)(result), nl=fmt == "json")


@click.command("init", epilog="Example: fleetgen init my-fleet --name contoso-ai --repository https://github.com/contoso/fleet")
@click.argument("folder", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--name", default=None, help="Fleet name (default: my-fleet).")
@click.option("--engine", type=click.Choice(["flux", "argocd"]), default=None, help="GitOps engine (default: flux).")
@click.option("--repository", default=None, help="URL of the Git repository the clusters sync from.")
@click.option("--fleetgen-source", "source", default=None, metavar="URL@REF", help=SOURCE_HELP)
@click.option("--allow-local-source", is_flag=True, help="Accept a file:// or local-path pin (tests, a mirror an air-gapped CI mounts).")
@click.option(
    "--credentials",
    type=click.Choice(["basic-auth", "bearer-token", "ssh", "github-app"]),
    default=None,
    help="A private repository: the kind of credential the engine uses (gitops.credentials); init prints how to create its Secret.",
)
@click.option("--no-git", is_flag=True, help="Write the files only: no git init and no first commit.")
@click.option(
    "--github-org", default=None, metavar="ORG", help="GitHub organisation of the teams CODEOWNERS names (default: --repository's)."
)
@reports_errors
def init(
    folder: Path,
    name: str | None,
    engine: str | None,
    repository: str | None,
    source: str | None,
    allow_local_source: bool,
    credentials: str | None,
    no_git: bool,
    github_org: str | None,
) -> None:
    """Start a fleet repository in FOLDER: a commented fleet.yaml, CI workflow, CODEOWNERS, pre-commit, README, rendered
    tree, as the first commit of a new git repository."""
    from fleetgen import workflows
    from fleetgen.authoring.codeowners import PLACEHOLDER_ORG
    from fleetgen.authoring.codeowners import github_org as org_of

    count, pinned, git_secret = workflows.init_repository(
        folder, name, engine, repository, source, allow_local=allow_local_source, git=not no_git, org=github_org, credentials=credentials
    )
    committed = "" if no_git else ", committed"
    console().err(f"{folder}: new fleet repository ({count} files{committed}); hooks and CI install {pinned.pip} ({pinned.vouched})")
    if github_org is None and org_of(repository) is None:
        console().err(f"note: .github/CODEOWNERS names @{PLACEHOLDER_ORG}/... teams: give your organisation (--github-org ORG) or edit it")
    for line in git_secret:
        console().err(line)
    console().err("next: fleetgen team add ...; fleetgen doctor lists the GitHub settings the repository assumes")


@click.command("migrate", epilog="Example: fleetgen migrate fleet.yaml && fleetgen render fleet.yaml")
@fleet_argument
@click.option("--check", "check_only", is_flag=True, help="Write nothing; exit 1 when FLEET uses something deprecated.")
@reports_errors
def migrate_command(fleet: Path, check_only: bool) -> None:
    """Rewrite FLEET in place, comments kept, for every deprecation it uses (CHANGELOG.md), so the next release accepts it."""
    from fleetgen import workflows

    result = workflows.migrate_fleet(fleet, check_only=check_only)
    shell = console()
    for line in result.changes:
        shell.out(line)
    if not result.changes:
        shell.out(f"{fleet}: nothing deprecated")
    elif check_only:
        raise DifferencesFound(f"{fleet}: {len(result.changes)} deprecated use(s); run fleetgen migrate")
    else:
        shell.out(f"{fleet}: migrated ({len(result.changes)} change(s)); run fleetgen render")


COMMANDS = [validate, render, check, migrate_command, schema, docs_command, report_command, init]

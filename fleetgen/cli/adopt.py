"""`fleetgen import`: adopt a hand-written kustomize fleet repository."""

from __future__ import annotations

from pathlib import Path

import click

from fleetgen.cli.common import console, reports_errors
from fleetgen.errors import DifferencesFound, InputError


def _facts(values: tuple[str, ...]) -> dict[str, dict[str, str]]:
    facts: dict[str, dict[str, str]] = {}
    for value in values:
        cluster, colon, rest = value.partition(":")
        key, equals, fact = rest.partition("=")
        if not (colon and equals and cluster and key):
            raise InputError(f"--fact {value!r}: expected CLUSTER:KEY=VALUE, e.g. dev-west:region=westus2")
        facts.setdefault(cluster, {})[key] = fact
    return facts


@click.command(
    "import",
    epilog="Example: fleetgen import ../fleet-config --out fleet.yaml --repository https://github.com/acme/fleet-config\n\n"
    "Exit 1 when something is not in fleet.yaml: an object it cannot hold (and, with --keep-unmodelled, cannot keep), "
    "one it would render differently, a value validate rejects, a TODO(import).",
)
@click.argument("repo", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write fleet.yaml here (default: print it).")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option(
    "--keep-unmodelled",
    is_flag=True,
    help="Copy the objects fleet.yaml cannot hold into clusters/<name>/hand-written/ beside --out and list them in extraResources.",
)
@click.option("--name", default=None, help="Fleet name (default: fleet-info's `fleet`).")
@click.option("--cost-center", default=None, help="Cost centre of fleet-wide objects.")
@click.option("--engine", type=click.Choice(["flux", "argocd"]), default=None, help="GitOps engine that syncs the tree.")
@click.option("--repository", default=None, help="URL of the Git repository the clusters sync.")
@click.option("--fact", "facts", multiple=True, metavar="CLUSTER:KEY=VALUE", help="A fleet-info fact, e.g. dev-west:region=westus2.")
@reports_errors
def import_(
    repo: Path,
    out: Path | None,
    force: bool,
    keep_unmodelled: bool,
    name: str | None,
    cost_center: str | None,
    engine: str | None,
    repository: str | None,
    facts: tuple[str, ...],
) -> None:
    """Build each cluster of REPO with `kubectl kustomize` and write the fleet.yaml that renders the same objects.

    Per-cluster facts come from each cluster's kube-public/fleet-info ConfigMap (or --fact); anything
    fleet.yaml cannot hold is listed with its file."""
    from fleetgen.importer.imported import Given
    from fleetgen.importer.run import import_repository
    from fleetgen.output.tree import replace_file, write_new_files

    shell = console()
    if not repo.is_dir():
        raise InputError(f"{repo}: no such folder")
    if out is not None and out.exists() and not force:
        raise InputError(f"{out}: exists; pass --force to replace it")
    if keep_unmodelled and out is None:
        raise InputError("--keep-unmodelled: needs --out (the files go into clusters/<name>/hand-written/ beside it)")
    if out is not None and not out.parent.is_dir():
        raise InputError(f"{out}: folder {out.parent} does not exist")
    shell.stage(f"building the clusters of {repo}")
    given = Given(name, cost_center, engine, repository, _facts(facts))
    result = import_repository(repo, given, keep_unmodelled=keep_unmodelled, file=str(out) if out is not None else "fleet.yaml")
    if out is None:
        shell.out(result.text, nl=False)
    else:
        write_new_files(out.parent, {f"clusters/{k.cluster}/{k.path}": k.data for k in result.kept})
        replace_file(out, result.text.encode())
        shell.err(f"{out}: written")
    for kept in result.kept:
        shell.err(f"clusters/{kept.cluster}/{kept.path}: kept {', '.join(o.title for o in kept.objects)} (from {kept.objects[0].file})")
    for found in result.unmodelled:
        shell.err(f"{found.line()}: not modelled, not imported")
    for found in result.unreproduced:
        shell.err(f"{found.line()}")
    for line in result.invalid:
        shell.err(f"{line}: import could not infer a value that validates")
    if result.placeholders:
        shell.err(f"{result.placeholders} value(s) left as TODO(import): fill them in, then `fleetgen validate`")
    if result.unmodelled or result.unreproduced or result.placeholders or result.invalid:
        hint = " (--keep-unmodelled keeps them as hand-written files)" if result.unmodelled and not keep_unmodelled else ""
        invalid = f", {len(result.invalid)} not valid" if result.invalid else ""
        raise DifferencesFound(f"import: {len(result.unmodelled)} unmodelled{hint}, {len(result.unreproduced)} not reproduced{invalid}")


COMMANDS = (import_,)

"""A private fleet repository: fleet.yaml names how each engine authenticates (gitops.credentials), never the secret.

The golden cases tests/cases/private-repo-flux and private-repo-argocd render a private repository for each engine
(their trees are compared in tests/test_partitioning.py); here their objects meet the upstream CRDs, validate refuses
credentials written into fleet.yaml and URLs that do not fit the credential, and the command init and doctor print
builds, with the real kubectl, the Secret the engine reads.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import REPO, _tool, examples, findings_of, line_of, replace_once
from generated_fleets import fleet_text, fleets, git_credentials
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.authoring.git_secret import git_secret_commands
from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.errors import Severity
from fleetgen.model.git_credentials import ARGOCD_SECRET_TYPE_LABEL, SECRET_KEYS
from fleetgen.render.gitops import entry_point
from fleetgen.render.layout import plan
from fleetgen.render.rendered import Rendered
from fleetgen.validation.rendered_objects import Schemas, validate_hub, validate_rendered

CASES = REPO / "tests" / "cases"
FLUX, ARGOCD = CASES / "private-repo-flux", CASES / "private-repo-argocd"
CRDs = dict[tuple[str, str], dict[str, Any]]


def _text(case: Path) -> str:
    return (case / "fleet.yaml").read_text(encoding="utf-8")


def test_each_clusters_git_repository_reads_the_named_secret_and_passes_the_crd(crd_schemas: CRDs) -> None:
    fleet = load_fleet(FLUX / "fleet.yaml").fleet
    for index in range(len(fleet.clusters)):
        [repository] = [m.body for m in entry_point(fleet, index) if m.body["kind"] == "GitRepository"]
        assert repository["spec"]["secretRef"] == {"name": "fleet-git"} and "provider" not in repository["spec"]
        assert repository["spec"]["url"] == "ssh://git@github.com/contoso/private-flux"
        jsonschema.Draft7Validator(crd_schemas[("source.toolkit.fluxcd.io/v1", "GitRepository")]).validate(repository)
    problems = validate_rendered(Rendered(fleet), Schemas(crds=crd_schemas), strict=True)
    assert [f.message for f in problems if f.severity is not Severity.NOTE] == []


def test_a_github_app_is_flux_github_provider(crd_schemas: CRDs) -> None:
    text = replace_once(_text(FLUX), "ssh://git@github.com/contoso/private-flux", "https://github.com/contoso/private-flux")
    fleet = load_fleet_text(replace_once(text, "kind: ssh", "kind: github-app").encode()).fleet
    [repository] = [m.body for m in entry_point(fleet, 0) if m.body["kind"] == "GitRepository"]
    assert (repository["spec"]["provider"], repository["spec"]["secretRef"]) == ("github", {"name": "fleet-git"})
    jsonschema.Draft7Validator(crd_schemas[("source.toolkit.fluxcd.io/v1", "GitRepository")]).validate(repository)


def test_a_public_repository_renders_as_before() -> None:
    """No credentials: no secretRef, no provider; without a store, the clusters' own objects are the private ones'."""
    lines = _text(FLUX).splitlines(keepends=True)
    storeless = "".join(line for line in lines if "externalSecrets:" not in line and not line.startswith("secrets:"))
    private = load_fleet_text(storeless.encode()).fleet
    public = load_fleet_text(replace_once(storeless, "  credentials: {kind: ssh, secretName: fleet-git}\n", "").encode()).fleet
    [repository] = [m.body for m in entry_point(public, 0) if m.body["kind"] == "GitRepository"]
    assert "secretRef" not in repository["spec"] and "provider" not in repository["spec"]
    for index in range(len(public.clusters)):  # the clusters' own objects know nothing of the Secret
        assert Rendered(public).objects(index) == Rendered(private).objects(index)


def test_argocd_renders_no_secret_of_the_credential(crd_schemas: CRDs) -> None:
    """Argo CD finds the Secret by its label and URL: the tree never holds it; only the store's ExternalSecret names it."""
    fleet = load_fleet(ARGOCD / "fleet.yaml").fleet
    rendered = Rendered(fleet)
    every = [m.body for f in plan(fleet) for m in f.manifests] + [
        m.body for i in range(len(fleet.clusters)) for m in rendered.entry_point(i)
    ]
    assert not [b for b in every if b["kind"] == "Secret" and b["metadata"]["name"] == "fleet-git"]
    naming = [b for b in every if "fleet-git" in yaml.safe_dump(b)]
    assert [(b["kind"], b["metadata"]["namespace"]) for b in naming] == [("ExternalSecret", "argocd")]
    schemas = Schemas(crds=crd_schemas)
    problems = validate_rendered(rendered, schemas, strict=True) + validate_hub(rendered, schemas, strict=True)
    assert [f.message for f in problems if f.severity is not Severity.NOTE] == []


@pytest.mark.parametrize(
    ("edit", "needle", "message"),
    [
        (
            "credentials: {kind: ssh, secretName: fleet-git, password: hunter2}",
            "password",
            "credentials.password: a credential is never written",
        ),
        (
            "credentials: {kind: ssh, secretName: fleet-git, identity: abc}",
            "identity",
            "credentials.identity: a credential is never written",
        ),
        ("credentials: {kind: basic-auth, secretName: fleet-git}", "credentials", "kind basic-auth: the repository ssh://"),
        ("credentials: {kind: ssh, secretName: fleet-git, argocdSecretType: repo-creds}", "credentials", "argocdSecretType is set only"),
    ],
)
def test_validate_refuses_a_credential_in_fleet_yaml_and_a_url_that_does_not_fit(edit: str, needle: str, message: str) -> None:
    text = replace_once(_text(FLUX), "credentials: {kind: ssh, secretName: fleet-git}", edit)
    found = findings_of(text)
    assert any(message in f and f.startswith(f"{line_of(text, needle)}:") for f in found), found


@pytest.mark.parametrize(
    ("engine", "url", "kind", "message"),
    [
        ("flux", "https://github.com/contoso/fleet", "ssh", "is not an SSH URL"),
        ("flux", "git@github.com:contoso/fleet", "ssh", "which Flux does not read"),
        ("argocd", "ssh://git@github.com/contoso/fleet", "github-app", "is not an https:// URL"),
        ("argocd", "https://github.com/contoso/fleet", "bearer-token", "is Flux's"),
    ],
)
def test_the_url_scheme_must_fit_the_credential_kind(engine: str, url: str, kind: str, message: str) -> None:
    text = replace_once(_text(FLUX), "engine: flux", f"engine: {engine}")
    text = replace_once(text, "ssh://git@github.com/contoso/private-flux", url)
    found = findings_of(replace_once(text, "kind: ssh", f"kind: {kind}"))
    assert any(message in f for f in found), found


def test_a_token_in_the_url_is_refused_without_being_repeated() -> None:
    text = replace_once(_text(FLUX), "ssh://git@github.com/contoso/private-flux", "https://x-access:s3cr3tvalue@github.com/contoso/f")
    text = replace_once(text, "  credentials: {kind: ssh, secretName: fleet-git}\n", "")
    found = findings_of(text)
    assert any("carries a credential in the URL" in f for f in found) and not any("s3cr3tvalue" in f for f in found), found


def _kubeconfig(folder: Path, contexts: list[str]) -> dict[str, str]:
    """Contexts named after the clusters, on a server nobody listens on: the commands must not need one."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "none", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "none", "user": {"token": "unused"}}],
        "contexts": [{"name": c, "context": {"cluster": "none", "user": "none"}} for c in contexts],
    }
    path = folder / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return {"KUBECONFIG": str(path)}


def _secret_built(command: str, folder: Path, env: dict[str, str]) -> dict[str, Any]:
    """The Secret the printed command would apply, built offline: each stage but the final apply, with kubectl's client dry run."""
    stages = command.split(" | ")
    if stages[-1].endswith(" apply -f -"):
        stages = stages[:-1]
    else:
        stages[-1] += " --dry-run=client -o yaml"
    for name in ("token", "identity", "known_hosts", "github-app.pem"):
        (folder / name).write_text(f"{name} from the operator\n", encoding="utf-8")
    argv = [shlex.split(stage) for stage in stages]
    assert all(words[0] == "kubectl" for words in argv)
    data = ""
    for words in argv:
        done = subprocess.run([_tool("kubectl"), *words[1:]], input=data, capture_output=True, text=True, cwd=folder, env=env, check=False)
        assert done.returncode == 0, done.stderr
        data = done.stdout
    secret: dict[str, Any] = yaml.safe_load(data)
    return secret


@pytest.mark.parametrize("case", [FLUX, ARGOCD], ids=lambda p: p.name)
def test_the_printed_command_creates_the_secret_the_engine_reads(case: Path, tmp_path: Path) -> None:
    fleet = load_fleet(case / "fleet.yaml").fleet
    credentials = fleet.gitops.credentials
    assert credentials is not None
    commands = git_secret_commands(fleet)
    assert len(commands) == (len(fleet.clusters) if fleet.gitops.engine == "flux" else 1)  # each cluster, or the hub
    env = {"PATH": "/usr/bin:/bin", **_kubeconfig(tmp_path, [c.name for c in fleet.clusters])}
    for command in commands:
        secret = _secret_built(command.command, tmp_path, env)
        assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == (command.name, command.namespace)
        keys = set(SECRET_KEYS[fleet.gitops.engine, credentials.kind])
        if fleet.gitops.engine == "argocd":
            assert secret["metadata"]["labels"] == {ARGOCD_SECRET_TYPE_LABEL: "repo-creds"}
            keys |= {"type", "url"}
        assert set(secret["data"]) == keys


def test_init_and_doctor_print_the_command(cli_run: Any, fleetgen_repository: tuple[Path, str]) -> None:
    source, _ = fleetgen_repository
    pin = ("--fleetgen-source", f"file://{source}@v0.1.0", "--allow-local-source")
    done = cli_run("init", "fleet", "--repository", "ssh://git@github.com/contoso/fleet", "--credentials", "ssh", "--no-git", *pin)
    assert done.returncode == 0, done.stderr
    assert "cluster dev: Secret flux-system/fleet-git" in done.stderr
    assert "kubectl --context dev -n flux-system create secret generic fleet-git" in done.stderr
    doctor = cli_run("doctor", "fleet")
    assert "kubectl --context dev -n flux-system create secret generic fleet-git" in doctor.stdout


@examples(50)
@given(fleets(), st.data())
def test_every_generated_credential_validates_and_renders_its_secret_ref(fleet: dict[str, Any], data: st.DataObject) -> None:
    fleet["gitops"] = data.draw(git_credentials())
    if fleet["gitops"]["engine"] != "flux" and "sops" in fleet.get("secrets", {}):
        del fleet["secrets"]  # SOPS is Flux's (validate refuses it with Argo CD: tests/test_secret_store.py)
    loaded = load_fleet_text(fleet_text(fleet).encode()).fleet
    credentials = loaded.gitops.credentials
    commands = git_secret_commands(loaded)
    assert bool(commands) == (credentials is not None)
    if loaded.gitops.engine == "flux":
        [repository] = [m.body for m in entry_point(loaded, 0) if m.body["kind"] == "GitRepository"]
        named = repository["spec"].get("secretRef", {}).get("name")
        assert named == (credentials.secret_name if credentials is not None else None)

"""Secrets from a store (`secrets`): the External Secrets Operator writes every Secret the tree names, or Flux decrypts SOPS.

The ExternalSecrets are checked against the upstream CRDs (tests/crds/external-secrets, ESO v2.9.0); every Secret the
rendered objects read (Git credentials, image pull Secrets, MultiKueue kubeconfigs) has its ExternalSecret where the
reader looks; a rendered Secret that holds a credential is an error; drift leaves the store's Secrets alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO, examples, findings_of, replace_once
from generated_fleets import fleet_text, fleets
from hypothesis import given

from fleetgen.checks.load import load_fleet, load_fleet_text
from fleetgen.errors import Severity
from fleetgen.live.state import compare
from fleetgen.model import Fleet
from fleetgen.render.layout import plan
from fleetgen.render.manifest import Manifest, ObjectKey
from fleetgen.render.rendered import Rendered
from fleetgen.validation.policy_lints import lint_no_credential_in_secrets
from fleetgen.validation.rendered_objects import Schemas, validate_hub, validate_rendered

CASES = REPO / "tests" / "cases"
FLUX, ARGOCD, MULTIKUEUE = CASES / "private-repo-flux", CASES / "private-repo-argocd", CASES / "multikueue-two-models"
CRDs = dict[tuple[str, str], dict[str, Any]]
ESO = ("external-secrets.io/v1", "ExternalSecret")


def _every(fleet: Fleet) -> list[dict[str, Any]]:
    rendered = Rendered(fleet)
    return [m.body for f in plan(fleet) for m in f.manifests if "metadata" in m.body] + [
        m.body for i in range(len(fleet.clusters)) for m in rendered.entry_point(i)
    ]


def _external_secrets(bodies: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(b["metadata"]["namespace"], b["spec"]["target"]["name"]): b for b in bodies if b["kind"] == "ExternalSecret"}


def _with_store(case: Path, store: str = "{externalSecrets: {clusterSecretStore: fleet-vault}}") -> Fleet:
    text = (case / "fleet.yaml").read_text(encoding="utf-8")
    return load_fleet_text(replace_once(text, "versionSets:", f"secrets: {store}\nversionSets:").encode()).fleet


@pytest.mark.parametrize("case", [FLUX, ARGOCD], ids=lambda p: p.name)
def test_every_external_secret_passes_the_upstream_crd_and_the_tree_is_valid(case: Path, crd_schemas: CRDs) -> None:
    fleet = load_fleet(case / "fleet.yaml").fleet
    found = _external_secrets(_every(fleet))
    assert found
    for body in found.values():
        jsonschema.Draft7Validator(crd_schemas[ESO]).validate(body)
        assert body["spec"]["secretStoreRef"] == {"kind": "ClusterSecretStore", "name": "fleet-vault"}
    rendered, schemas = Rendered(fleet), Schemas(crds=crd_schemas)
    problems = validate_rendered(rendered, schemas, strict=True) + validate_hub(rendered, schemas, strict=True)
    assert [f.message for f in problems if f.severity is not Severity.NOTE] == []
    broken = {**body, "spec": {**body["spec"], "secretStoreRef": {"kind": "Vault", "name": "x"}}}
    with pytest.raises(jsonschema.ValidationError):  # the check above can fail
        jsonschema.Draft7Validator(crd_schemas[ESO]).validate(broken)


def test_each_secret_flux_and_the_teams_read_comes_from_the_store() -> None:
    fleet = load_fleet(FLUX / "fleet.yaml").fleet
    for index, cluster in enumerate(fleet.clusters):
        found = _external_secrets([m.body for m in Rendered(fleet).objects(index)])
        git = found[("flux-system", "fleet-git")]
        assert git["spec"]["dataFrom"] == [{"extract": {"key": "fleet/fleet-git"}}]
        assert git["spec"]["target"]["creationPolicy"] == "Merge"  # bootstrapped by hand, then kept current
        pulls = {ns for ns, name in found if name == "registry-pull"}
        teams = {team.namespace for _, team in fleet.placements[cluster.name]}
        assert pulls == (teams if cluster.image_pull_secret else set()), cluster.name
        for ns in pulls:
            template = found[(ns, "registry-pull")]["spec"]["target"]["template"]
            assert template == {"mergePolicy": "Merge", "type": "kubernetes.io/dockerconfigjson"}


def test_argocd_hub_gets_its_credentials_with_the_label_argo_cd_finds() -> None:
    fleet = load_fleet(ARGOCD / "fleet.yaml").fleet
    hub = _external_secrets([m.body for f in Rendered(fleet).hub_files for m in f.manifests])
    template = hub[("argocd", "fleet-git")]["spec"]["target"]["template"]
    assert template["metadata"]["labels"] == {"argocd.argoproj.io/secret-type": "repo-creds"}
    assert template["data"] == {"type": "git", "url": "https://github.com/contoso"}
    on_cluster = _external_secrets([m.body for m in Rendered(fleet).objects(0)])
    assert ("argocd", "fleet-git") not in on_cluster  # the hub reads it, not the cluster


def test_the_store_writes_each_multikueue_workers_kubeconfig() -> None:
    fleet = _with_store(MULTIKUEUE)
    manager = next(i for i, c in enumerate(fleet.clusters) if fleet.multi_kueue and c.name == fleet.multi_kueue.manager)
    objects = [m.body for m in Rendered(fleet).objects(manager)]
    found = _external_secrets(objects)
    for cluster in (b for b in objects if b["kind"] == "MultiKueueCluster"):
        secret = cluster["spec"]["clusterSource"]["kubeConfig"]["location"]
        assert found[("kueue-system", secret)]["spec"]["dataFrom"] == [{"extract": {"key": secret}}]


@pytest.mark.parametrize("engine", ["flux", "argocd"])
def test_the_platform_layer_installs_the_operator_only_where_the_store_is_used(engine: str) -> None:
    text = (FLUX / "fleet.yaml").read_text(encoding="utf-8").replace("engine: flux", f"engine: {engine}")
    text = text.replace("ssh://git@github.com/contoso/private-flux", "https://github.com/contoso/private-flux").replace(
        "kind: ssh", "kind: basic-auth"
    )
    with_store = load_fleet_text(text.encode()).fleet
    lines = text.splitlines(keepends=True)
    without = load_fleet_text(
        "".join(line for line in lines if "externalSecrets:" not in line and not line.startswith("secrets:")).encode()
    ).fleet
    for fleet, expected in ((with_store, True), (without, False)):
        entry = [m.body for m in Rendered(fleet).entry_point(0)]
        if engine == "flux":
            installs = [b for b in entry if b["kind"] == "HelmRelease" and b["metadata"]["name"] == "external-secrets"]
            assert all(b["spec"]["chart"]["spec"]["version"] == "2.9.0" for b in installs)
        else:
            installs = [b for b in entry if b["kind"] == "Application" and b["metadata"]["name"].startswith("external-secrets-")]
            assert all(b["spec"]["source"]["targetRevision"] == "2.9.0" for b in installs)
        assert bool(installs) is expected


def test_sops_decrypts_the_clusters_folder_with_flux() -> None:
    text = (FLUX / "fleet.yaml").read_text(encoding="utf-8")
    text = "".join(line for line in text.splitlines(keepends=True) if "externalSecrets:" not in line and not line.startswith("secrets:"))
    fleet = load_fleet_text(replace_once(text, "versionSets:", "secrets: {sops: {secretName: sops-age}}\nversionSets:").encode()).fleet
    entry = [m.body for m in Rendered(fleet).entry_point(0)]
    [sync] = [b for b in entry if b["kind"] == "Kustomization" and b["metadata"]["name"] == fleet.metadata.name]
    assert sync["spec"]["decryption"] == {"provider": "sops", "secretRef": {"name": "sops-age"}}
    assert not _external_secrets(_every(fleet))


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ("{sops: {}}", "sops is decrypted by Flux"),
        ("{sops: {}, externalSecrets: {clusterSecretStore: vault}}", "set one of externalSecrets or sops"),
        ("{}", "set one of externalSecrets or sops"),
    ],
)
def test_validate_refuses_a_store_the_engine_cannot_use(store: str, message: str) -> None:
    text = (ARGOCD / "fleet.yaml").read_text(encoding="utf-8")
    text = "".join(line for line in text.splitlines(keepends=True) if "externalSecrets:" not in line and not line.startswith("secrets:"))
    found = findings_of(replace_once(text, "versionSets:", f"secrets: {store}\nversionSets:"))
    assert any(message in f for f in found), found


def _secret(**fields: Any) -> Manifest:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "team-a"}, **fields}
    return Manifest(body, ("clusters", 0))


@pytest.mark.parametrize(
    "fields",
    [
        {"stringData": {"password": "x"}},
        {"stringData": {"bearerToken": "x"}},
        {"data": {"identity": "eA=="}},
        {"data": {"sshPrivateKey": "eA=="}},
        {"stringData": {"kubeconfig": "apiVersion: v1"}},
        {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "e30="}},
        {"type": "kubernetes.io/tls", "data": {"tls.crt": "eA==", "tls.key": "eA=="}},
    ],
)
def test_a_rendered_secret_holding_a_credential_is_an_error(fields: dict[str, Any]) -> None:
    [(_, message, severity)] = list(lint_no_credential_in_secrets([_secret(**fields)]))
    assert severity is Severity.ERROR and "holds a credential" in message


def test_a_secret_naming_a_repository_or_a_service_account_is_no_credential() -> None:
    oci = _secret(type="Opaque", stringData={"enableOCI": "true", "name": "kueue", "type": "helm", "url": "registry.k8s.io/kueue"})
    token = _secret(type="kubernetes.io/service-account-token")  # the API server fills it in on the cluster
    assert list(lint_no_credential_in_secrets([oci, token])) == []


def _live_secret(name: str, namespace: str, **metadata: Any) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "fleetgen"}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace, "labels": labels, **metadata}}


def test_drift_leaves_the_stores_secrets_alone() -> None:
    fleet = load_fleet(FLUX / "fleet.yaml").fleet
    rendered = Rendered(fleet).keyed(0)
    live = [dict(body) for body in rendered.values()]
    written = _live_secret("registry-pull", "team-vision", annotations={"rotated": "today"})
    git = _live_secret("fleet-git", "flux-system")  # fleetgen-labelled by whoever made it: still the store's
    stray = _live_secret("stray", "team-vision")
    drift = compare(rendered, [*live, written, git, stray])
    assert [c.name for c in drift.extra] == ["stray"]  # only the Secret no ExternalSecret writes
    assert not drift.changed and not drift.missing
    assert ObjectKey("ExternalSecret", "team-vision", "registry-pull") in rendered


@examples(25)
@given(fleets())
def test_every_generated_store_validates_and_names_every_secret_it_writes(fleet: dict[str, Any]) -> None:
    loaded = load_fleet_text(fleet_text(fleet).encode()).fleet
    store = loaded.secrets.external_secrets if loaded.secrets is not None else None
    mk = loaded.multi_kueue
    # a worker whose kubeconfig comes from a store it names itself (multiKueue.workers.<name>.kubeconfig.externalSecret)
    own = {w.kubeconfig.secret_name(name) for name, w in (mk.workers.items() if mk else ()) if w.kubeconfig.external_secret}
    for index, cluster in enumerate(loaded.clusters):
        objects = [m.body for m in Rendered(loaded).objects(index)]
        found = {key: body for key, body in _external_secrets(objects).items() if key[1] not in own}
        if store is None:
            assert not found
            continue
        pulls = {ns for ns, name in found if name == cluster.image_pull_secret}
        assert pulls == ({t.namespace for _, t in loaded.placements[cluster.name]} if cluster.image_pull_secret else set())
        assert all(b["spec"]["secretStoreRef"]["name"] == store.cluster_secret_store for b in found.values())
        assert not list(lint_no_credential_in_secrets([Manifest(b, ()) for b in objects]))

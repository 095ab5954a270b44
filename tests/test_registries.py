"""Registries per team: the admission policy the API server runs refuses exactly the pods `job new` refuses first.

The policy's CEL (variables, then its one validation and message) is evaluated by the CEL engine fleetgen
runs for CRD rules, with `object` bound to a pod as the API server binds it; a property test holds it
to `image_allowed` on generated registries and images, near misses included (a longer name, a host
that only starts with the registry's, a short Docker Hub name), in containers, init containers and
ephemeral containers alike.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import RefusedAsk, Severity
from fleetgen.jobs.golden_paths import job_objects
from fleetgen.jobs.job_target import Ask
from fleetgen.model.registries import REGISTRY_PATTERN, image_allowed
from fleetgen.render.layout import cluster_objects
from fleetgen.render.registries import policy_spec
from fleetgen.validation.cel_engine import engine as cel
from fleetgen.validation.rendered_objects import Schemas
from tests.conftest import EXAMPLE, findings_of, line_of, replace_once

Run = Callable[..., subprocess.CompletedProcess[str]]
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def admit(spec: dict[str, Any], pod: dict[str, Any]) -> str | None:
    """None when the policy admits `pod`, else the message the API server gives (variables in order, then the validation)."""
    context = cel.Context(variables={"object": pod})
    variables: dict[str, Any] = {}
    for variable in spec["variables"]:
        variables[variable["name"]] = cel.compile(variable["expression"]).execute(context)
        context.add_variable("variables", variables)
    [validation] = spec["validations"]
    if cel.compile(validation["expression"]).execute(context) is True:
        return None
    message = cel.compile(validation["messageExpression"]).execute(context)
    assert isinstance(message, str)
    return message


def pod_of(images: dict[str, list[str]]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for field in CONTAINER_LISTS:
        if field in images:
            spec[field] = [{"name": f"c{n}", "image": image} for n, image in enumerate(images[field])]
    spec.setdefault("containers", [{"name": "main", "image": "contosoai.azurecr.io/main:1"}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-nlp"}, "spec": spec}


LABELS = st.sampled_from(["ghcr", "io", "contoso", "azurecr", "nvcr", "a-1", "x9", "docker"])


@st.composite
def registries(draw: st.DrawFn) -> str:
    """A registry as the model takes it: a host with a dot or a port (or localhost), then path components."""
    host = draw(st.sampled_from(["localhost", ""])) or ".".join(draw(st.lists(LABELS, min_size=2, max_size=3)))
    port = draw(st.sampled_from(["", ":5000"]))
    path = "".join("/" + part for part in draw(st.lists(st.sampled_from(["contoso", "nlp", "team_a", "x--y", "v2"]), max_size=2)))
    registry = host + port + path
    assert re.fullmatch(REGISTRY_PATTERN, registry), registry
    return registry


@st.composite
def images_near(draw: st.DrawFn, allowed: tuple[str, ...]) -> str:
    """An image from one of `allowed`, or one that only nearly is."""
    registry = draw(st.sampled_from(allowed))
    repository = draw(st.from_regex(r"[a-z0-9]+(/[a-z0-9]+)?", fullmatch=True))
    tag = draw(st.sampled_from([":1", ":latest", "@sha256:" + "a" * 64, ""]))
    shape = draw(st.sampled_from(["from", "longer", "host-suffix", "short", "bare"]))
    return {
        "from": f"{registry}/{repository}{tag}",
        "longer": f"{registry}-evil/{repository}{tag}",  # ghcr.io/contoso does not allow ghcr.io/contoso-evil
        "host-suffix": f"{registry}.evil.example/{repository}{tag}",
        "short": f"{repository}{tag}",  # Docker Hub by a short name: no registry named
        "bare": registry,
    }[shape]


@st.composite
def cases(draw: st.DrawFn) -> tuple[tuple[str, ...], dict[str, list[str]]]:
    allowed = tuple(draw(st.lists(registries(), min_size=1, max_size=3, unique=True)))
    lists = draw(st.lists(st.sampled_from(CONTAINER_LISTS), min_size=1, max_size=3, unique=True))
    images = {field: draw(st.lists(images_near(allowed), min_size=1, max_size=3)) for field in lists}
    return allowed, images


@pytest.mark.slow
@settings(deadline=None)
@given(cases())
def test_the_policy_refuses_exactly_the_pods_with_an_image_from_elsewhere(case: tuple[tuple[str, ...], dict[str, list[str]]]) -> None:
    allowed, images = case
    pod = pod_of(images)
    every = [c["image"] for field in CONTAINER_LISTS for c in pod["spec"].get(field, [])]
    outside = [image for image in every if not image_allowed(image, allowed)]
    refusal = admit(policy_spec("nlp", allowed), pod)
    if not outside:
        assert refusal is None, (every, allowed)
    else:
        assert refusal == f"image {outside[0]} is not from the registries of team nlp: {', '.join(allowed)}"


def test_a_registry_is_a_host_and_a_path_that_a_longer_name_does_not_match() -> None:
    assert image_allowed("ghcr.io/contoso/trainer:v1", ("ghcr.io/contoso",))
    assert not image_allowed("ghcr.io/contoso-evil/trainer:v1", ("ghcr.io/contoso",))
    assert not image_allowed("contoso.azurecr.io.evil.example/x:1", ("contoso.azurecr.io",))
    assert not image_allowed("python:3.12", ("docker.io",))
    assert image_allowed("docker.io/library/python:3.12", ("docker.io",))


EXAMPLE_FLEET = load_fleet_text(EXAMPLE.read_bytes()).fleet
DEV = next(i for i, c in enumerate(EXAMPLE_FLEET.clusters) if c.name == "dev-eastus")


def _dev_objects() -> dict[tuple[str, str, str], dict[str, Any]]:
    return {m.key: m.body for m in cluster_objects(EXAMPLE_FLEET, DEV)}


def test_each_team_on_a_1_30_cluster_gets_its_policy_and_binding_which_pass_the_api_schema() -> None:
    objects = _dev_objects()
    for team in ("data-science", "nlp", "robotics"):
        policy = objects[("ValidatingAdmissionPolicy", "", f"team-{team}-registries")]
        binding = objects[("ValidatingAdmissionPolicyBinding", "", f"team-{team}-registries")]
        assert binding["spec"]["policyName"] == policy["metadata"]["name"] and binding["spec"]["validationActions"] == ["Deny"]
        assert binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": f"team-{team}"}
        for body in (policy, binding):
            kubernetes_validate.validate(body, "1.30.1", strict=True)
    nlp = objects[("ValidatingAdmissionPolicy", "", "team-nlp-registries")]["spec"]
    robotics = objects[("ValidatingAdmissionPolicy", "", "team-robotics-registries")]["spec"]
    own = pod_of({"containers": ["ghcr.io/contoso-nlp/chat:2"]})
    assert admit(nlp, own) is None
    assert admit(robotics, own) == (
        "image ghcr.io/contoso-nlp/chat:2 is not from the registries of team robotics: contosoai.azurecr.io, nvcr.io/nvidia"
    )
    debug = pod_of({"containers": ["nvcr.io/nvidia/pytorch:24.05-py3"], "ephemeralContainers": ["busybox:1.36"]})
    assert admit(robotics, debug) == "image busybox:1.36 is not from the registries of team robotics: contosoai.azurecr.io, nvcr.io/nvidia"
    init = pod_of({"initContainers": ["docker.io/library/alpine:3"]})
    assert admit(robotics, init) is not None


def test_clusters_before_1_30_get_no_policy_and_validate_says_so_at_their_version_set() -> None:
    text = EXAMPLE.read_text()
    training = next(i for i, c in enumerate(EXAMPLE_FLEET.clusters) if c.name == "training-eastus")
    kinds = {m.key[0] for m in cluster_objects(EXAMPLE_FLEET, training)}
    assert "ValidatingAdmissionPolicy" not in kinds and "ValidatingAdmissionPolicyBinding" not in kinds
    warnings = findings_of(text, Severity.WARNING)
    line = line_of(text, "versionSet: prod-2024q4", 3)  # training-eastus's (the third cluster)
    assert (
        f"{line}:17: clusters[2].versionSet: the registries of data-science, nlp, robotics are not enforced on "
        "training-eastus: ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) needs Kubernetes 1.30 or later, it runs 1.29.4; "
        "`job new` still refuses other images"
    ) in warnings


def test_a_fleet_without_registries_holds_no_image_and_renders_no_policy() -> None:
    text = replace_once(EXAMPLE.read_text(), "registries: [contosoai.azurecr.io, nvcr.io/nvidia]\n", "")
    text = replace_once(text, "    registries: [ghcr.io/contoso-nlp]", "")
    fleet = load_fleet_text(text.encode()).fleet
    assert not [m for m in cluster_objects(fleet, DEV) if m.key[0].startswith("ValidatingAdmission")]


def test_a_bad_registry_is_refused_at_its_line() -> None:
    text = replace_once(
        EXAMPLE.read_text(), "    registries: [ghcr.io/contoso-nlp]", '    registries: ["ghcr.io/contoso-nlp", "GHCR.io/x"]'
    )
    [error] = findings_of(text)
    assert error.startswith(f"{line_of(text, 'GHCR.io/x')}:") and "teams[1].registries[1]" in error


def test_pods_pull_with_the_clusters_secret_or_with_the_nodes_identity() -> None:
    objects = _dev_objects()
    for team in ("data-science", "nlp", "robotics"):
        account = objects[("ServiceAccount", f"team-{team}", "default")]
        assert account["imagePullSecrets"] == [{"name": "registry-pull"}]
    for index, cluster in enumerate(EXAMPLE_FLEET.clusters):
        if cluster.image_pull_secret is None:  # AKS: the kubelet's identity pulls; nothing in the namespace
            assert not [m for m in cluster_objects(EXAMPLE_FLEET, index) if m.key[0] == "ServiceAccount"], cluster.name


def _job(cli_run: Run, image: str, team: str = "robotics") -> subprocess.CompletedProcess[str]:
    args = ["job", "new", "--fleet", str(EXAMPLE), "--team", team, "--cluster", "dev-eastus", "--name", "sim", "--gpus", "1"]
    return cli_run(*args, "--image", image)


@pytest.mark.parametrize("image", ["ghcr.io/contoso-nlp/chat:2", "python:3.12", "contosoai.azurecr.io.evil.example/sim:1"])
def test_job_new_refuses_an_image_the_policy_would(cli_run: Run, image: str) -> None:
    done = _job(cli_run, image)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        f"fleetgen: --image {image}: not from the registries of team robotics (contosoai.azurecr.io, nvcr.io/nvidia); "
        "name the registry in full, e.g. contosoai.azurecr.io/trainer:v1"
    )
    objects = _dev_objects()
    assert admit(objects[("ValidatingAdmissionPolicy", "", "team-robotics-registries")]["spec"], pod_of({"containers": [image]}))


def test_job_new_takes_an_image_from_the_teams_registries(cli_run: Run, tmp_path: Path) -> None:
    done = _job(cli_run, "ghcr.io/contoso-nlp/chat:2", team="nlp")
    assert done.returncode == 0, done.stderr
    assert "image: ghcr.io/contoso-nlp/chat:2" in done.stdout


SCHEMAS = Schemas()
ROBOTICS_POLICY = policy_spec("robotics", EXAMPLE_FLEET.registries_of(next(t for t in EXAMPLE_FLEET.teams if t.name == "robotics")))


@pytest.mark.slow  # job new checks each object against the cluster's schemas
@settings(deadline=None)
@given(images_near(("contosoai.azurecr.io", "nvcr.io/nvidia", "ghcr.io/contoso-nlp")))
def test_job_new_refuses_exactly_the_images_the_api_server_would(image: str) -> None:
    ask = Ask("robotics", "dev-eastus", "sim", image, gpus=1)
    refused_here = None
    try:
        built = job_objects(EXAMPLE_FLEET, ask, SCHEMAS)
    except RefusedAsk as refusal:
        refused_here = str(refusal)
    refused_there = admit(ROBOTICS_POLICY, pod_of({"containers": [image]}))
    assert (refused_here is None) == (refused_there is None), (image, refused_here, refused_there)
    if refused_here is None:
        pod = built.objects[0]["spec"]["template"]["spec"]
        assert admit(ROBOTICS_POLICY, {"spec": pod}) is None  # the very pod job new prints passes the policy

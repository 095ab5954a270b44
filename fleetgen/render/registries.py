"""Where a team's images may come from, enforced by the API server: a ValidatingAdmissionPolicy and its binding per team.

The policy refuses a pod in the team's namespace (created, updated, or given an ephemeral container) whose
containers, init containers or ephemeral containers name an image outside the team's registries
(fleet.yaml `registries` and the team's own). An image matches a registry when it starts with the
registry and a '/' (model/registries.py `image_allowed`, which `job new` asks first). The registry list
is written into the expression as CEL string literals (`_cel_string`); the model's registry pattern
admits no quote or backslash, and the literal escapes them anyway.

ValidatingAdmissionPolicy is served at admissionregistration.k8s.io/v1 from Kubernetes 1.30; an older
cluster gets no policy (checks/onboarding.py warns that its teams' registries are not enforced there).

Pulling: a cluster with `imagePullSecret` gets the team's `default` ServiceAccount naming that Secret, so
each pod that names no service account of its own pulls with it; without one, nodes pull with the cloud's
node identity and nothing is rendered.
"""

from __future__ import annotations

import json
from typing import Any

from fleetgen.errors import FieldPath
from fleetgen.model import Cluster, Fleet, Team
from fleetgen.model.registries import policy_served
from fleetgen.render import provenance as prov
from fleetgen.render.manifest import Manifest, k8s_object, team_labels
from fleetgen.render.provenance import NOWHERE, Recorder

API = "admissionregistration.k8s.io/v1"
POD_RULE = {
    "apiGroups": [""],
    "apiVersions": ["v1"],
    "operations": ["CREATE", "UPDATE"],
    "resources": ["pods", "pods/ephemeralcontainers"],  # `kubectl debug` adds an ephemeral container through the subresource
}
IMAGES = (
    "object.spec.containers.map(c, c.image)"
    " + (has(object.spec.initContainers) ? object.spec.initContainers.map(c, c.image) : [])"
    " + (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers.map(c, c.image) : [])"
)
REFUSED = "variables.images.filter(i, !variables.allowed.exists(r, i.startsWith(r)))"


def policy_name(team: Team) -> str:
    return f"{team.namespace}-registries"


def enforced_on(fleet: Fleet, cluster: Cluster) -> bool:
    """Whether the cluster's API server serves ValidatingAdmissionPolicy v1."""
    versions = fleet.version_sets.get(cluster.version_set)
    return versions is not None and policy_served(versions.kubernetes)


def _cel_string(text: str) -> str:
    """A CEL string literal of `text` (JSON's escapes are CEL's too)."""
    return json.dumps(text)


def allowed_expression(registries: tuple[str, ...]) -> str:
    """The CEL list of prefixes an image must start with: each registry and a '/'."""
    return "[" + ", ".join(_cel_string(registry + "/") for registry in registries) + "]"


def policy_spec(team: str, registries: tuple[str, ...]) -> dict[str, Any]:
    """The policy's spec: which requests it sees, the variables it works out and the one validation."""
    listed = ", ".join(registries)
    message = f"{_cel_string('image ')} + variables.refused[0] + {_cel_string(f' is not from the registries of team {team}: {listed}')}"
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [POD_RULE]},
        "variables": [
            {"name": "allowed", "expression": allowed_expression(registries)},
            {"name": "images", "expression": IMAGES},
            {"name": "refused", "expression": REFUSED},
        ],
        "validations": [{"expression": "size(variables.refused) == 0", "messageExpression": message, "reason": "Forbidden"}],
    }


def admission_policies(fleet: Fleet, cluster: Cluster, at: FieldPath, why: Recorder = NOWHERE) -> list[Manifest]:
    """A policy and its binding for each team on `cluster` whose images are held to registries."""
    if not enforced_on(fleet, cluster):
        return []
    out: list[Manifest] = []
    for t, team in fleet.placements[cluster.name]:
        registries = fleet.registries_of(team)
        if not registries:
            continue
        team_at: FieldPath = ("teams", t)
        labels, name = team_labels(fleet, team), policy_name(team)
        policy = k8s_object(API, "ValidatingAdmissionPolicy", name, labels, spec=policy_spec(team.name, registries))
        binding_spec = {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.namespace}}},
        }
        binding = k8s_object(API, "ValidatingAdmissionPolicyBinding", name, labels, spec=binding_spec)
        if why.on:
            source = team_at + ("registries",) if team.registries else ("registries",)
            named = prov.derived("team-<name>-registries", team_at + ("name",))
            for body in (policy, binding):
                why.meta(body, named, prov.team_labels(team_at))
            why.set(policy, ("spec",), prov.default("refuse pods whose images are not from the team's registries"))
            lists = prov.derived("the fleet's registries, then the team's", ("registries",), source)
            why.set(policy, ("spec", "variables", 0, "expression"), lists)
            why.set(policy, ("spec", "validations", 0, "messageExpression"), lists)
            why.set(binding, ("spec",), prov.default("the policy, denying, in the team's namespace"))
            why.set(binding, ("spec", "policyName"), named)
            why.set(binding, ("spec", "matchResources"), prov.derived("team-<name>", team_at + ("name",)))
        out += [Manifest(policy, source_of(team_at, team)), Manifest(binding, source_of(team_at, team))]
    return out


def source_of(team_at: FieldPath, team: Team) -> FieldPath:
    return team_at + ("registries",) if team.registries else team_at + ("name",)


def service_account(
    fleet: Fleet, team: Team, at: FieldPath, cluster: Cluster, cluster_at: FieldPath, why: Recorder = NOWHERE
) -> list[Manifest]:
    """The team's default ServiceAccount with the cluster's pull Secret; nothing where nodes pull with their identity."""
    if cluster.image_pull_secret is None:
        return []
    body = k8s_object("v1", "ServiceAccount", "default", team_labels(fleet, team), namespace=team.namespace)
    body["automountServiceAccountToken"] = False  # a pod that needs the API asks for its token itself
    body["imagePullSecrets"] = [{"name": cluster.image_pull_secret}]
    if why.on:
        why.meta(
            body,
            prov.default("the service account of every pod that names none"),
            prov.team_labels(at),
            prov.derived("team-<name>", at + ("name",)),
        )
        why.set(body, ("imagePullSecrets",), cluster_at + ("imagePullSecret",))
        why.set(body, ("automountServiceAccountToken",), prov.default("no API token for pods that do not ask for one"))
    return [Manifest(body, cluster_at + ("imagePullSecret",))]

"""Order and grouping that carry no meaning in Kubernetes (fleetgen/compare/semantics.py), as every comparison sees them.

RBAC rules are a union of grants; NetworkPolicy rules, their peers and their ports are ORed; binding
subjects are a set. The object diff (check, diff, drift, import) compares their canonical forms, so
a reordered or regrouped object is equal, and a real difference is reported at the grant or pair.
"""

from __future__ import annotations

import copy
import random
import shutil
from collections.abc import Callable
from itertools import groupby
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, examples
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.checks.load import load_fleet_text
from fleetgen.compare.object_diff import ABSENT, FieldChange, ObjectKey, diff_objects, object_diff
from fleetgen.compare.semantics import canonical
from fleetgen.live.state import compare
from fleetgen.render import cluster_objects

Run = Callable[..., CompletedProcess[str]]
ROLE, POLICY = ObjectKey("Role", "team-a", "r"), ObjectKey("NetworkPolicy", "team-a", "p")


def _fields(kind: str, old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(f.path, f.old, f.new) for f in object_diff(old, new, kind)]


def _role(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}, "rules": list(rules)}


def _policy(*ingress: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"kind": "NetworkPolicy", "metadata": {"name": "p"}, "spec": {"podSelector": {}, "ingress": list(ingress), **spec}}


def _namespace(name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}


SEED_RULES = [
    {"apiGroups": [""], "resources": ["pods", "services"], "verbs": ["get", "list"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "create"]},
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "update"]},
]


def test_the_seeds_rules_in_another_order_and_grouping_grant_the_same() -> None:
    reordered = _role(
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["update"]},
        {"apiGroups": [""], "resources": ["services", "pods"], "verbs": ["list", "get"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
    )
    assert _fields("Role", _role(*SEED_RULES), reordered) == []
    # the same objects compared as written: index by index, a difference at every step
    assert object_diff(_role(*SEED_RULES), reordered)[0].path == "rules[0].apiGroups[0]"


def test_a_missing_or_added_grant_is_named_by_api_group_resource_and_verb() -> None:
    fewer = copy.deepcopy(SEED_RULES)
    fewer[2]["verbs"] = ["get", "patch"]
    fewer[0]["resources"] = ["pods"]
    assert _fields("Role", _role(*SEED_RULES), _role(*fewer)) == [
        ('rules[""/services/get]', "granted", ABSENT),
        ('rules[""/services/list]', "granted", ABSENT),
        ("rules[apps/deployments/patch]", ABSENT, "granted"),
        ("rules[apps/deployments/update]", "granted", ABSENT),
    ]


def test_wildcards_names_and_urls_grant_what_rbac_matches() -> None:
    every_verb = _role({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]})
    both = _role(every_verb["rules"][0], {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]})
    assert _fields("Role", every_verb, both) == []  # get is among every verb
    named = {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["b", "a"], "verbs": ["get"]}
    anyname = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
    assert _fields("Role", _role(anyname), _role(named, anyname)) == []  # every name is granted already
    assert _fields("Role", _role(named), _role(anyname)) == [
        ('rules[""/configmaps/get]', ABSENT, "granted"),
        ('rules[""/configmaps/get resourceName=a]', "granted", ABSENT),
        ('rules[""/configmaps/get resourceName=b]', "granted", ABSENT),
    ]
    scale = {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["patch"]}
    covered = {"apiGroups": ["apps"], "resources": ["deployments/scale", "statefulsets/scale"], "verbs": ["patch"]}
    assert _fields("ClusterRole", {"rules": [scale]}, {"rules": [covered, scale]}) == []
    urls = {"nonResourceURLs": ["/healthz", "/metrics"], "verbs": ["get"]}
    assert _fields("ClusterRole", {"rules": [urls]}, {"rules": [{"nonResourceURLs": ["/healthz/*", "/metrics"], "verbs": ["get"]}]}) == [
        ("rules[get /healthz]", "granted", ABSENT),
        ("rules[get /healthz/*]", ABSENT, "granted"),
    ]
    prefix = {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]}
    assert _fields("ClusterRole", {"rules": [prefix]}, {"rules": [prefix, {"nonResourceURLs": ["/apis/apps"], "verbs": ["get"]}]}) == []


def test_network_policy_peers_in_one_rule_or_several_allow_the_same() -> None:
    one = _policy({"from": [{"podSelector": {}}, _namespace("monitoring"), _namespace("model-registry")]}, policyTypes=["Ingress"])
    split = _policy({"from": [_namespace("model-registry")]}, {"from": [_namespace("monitoring"), {"podSelector": {}}]})
    assert _fields("NetworkPolicy", one, split) == []  # policyTypes left out: the server's default, Ingress
    as_expression = _policy(
        {"from": [{"podSelector": {}}, _namespace("model-registry")]},
        {
            "from": [
                {
                    "namespaceSelector": {
                        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["monitoring"]}]
                    }
                }
            ]
        },
    )
    assert _fields("NetworkPolicy", one, as_expression) == []
    fewer = _policy(
        {"from": [{"podSelector": {}}, _namespace("monitoring")]}, {"from": [_namespace("inference")], "ports": [{"port": 8080}]}
    )
    assert _fields("NetworkPolicy", one, fewer) == [
        ("spec.ingress[namespaceSelector kubernetes.io/metadata.name=inference, port TCP/8080]", ABSENT, "allowed"),
        ("spec.ingress[namespaceSelector kubernetes.io/metadata.name=model-registry, any port]", "allowed", ABSENT),
    ]


def test_any_peer_any_port_and_port_ranges_cover_narrower_pairs() -> None:
    anything = _policy({})
    assert _fields("NetworkPolicy", anything, _policy({}, {"from": [_namespace("x")], "ports": [{"port": 80}]})) == []
    ranged = {"from": [_namespace("x")], "ports": [{"protocol": "TCP", "port": 8000, "endPort": 8100}]}
    inside = {"from": [_namespace("x")], "ports": [{"port": 8080}, {"port": "8090", "protocol": "TCP"}]}
    assert _fields("NetworkPolicy", _policy(ranged), _policy(inside, ranged)) == []
    udp = {"from": [_namespace("x")], "ports": [{"protocol": "UDP"}]}
    assert (
        _fields("NetworkPolicy", _policy(udp), _policy(udp, {"from": [_namespace("x")], "ports": [{"protocol": "UDP", "port": 53}]})) == []
    )
    assert _fields("NetworkPolicy", _policy(udp), _policy({"from": [_namespace("x")], "ports": [{"port": 53}]})) == [
        ("spec.ingress[namespaceSelector kubernetes.io/metadata.name=x, any UDP port]", "allowed", ABSENT),
        ("spec.ingress[namespaceSelector kubernetes.io/metadata.name=x, port TCP/53]", ABSENT, "allowed"),
    ]
    egress = {
        "kind": "NetworkPolicy",
        "spec": {"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}]},
    }
    assert canonical("NetworkPolicy", egress)["spec"] == {
        "podSelector": {},
        "egress": {"ipBlock 10.0.0.0/8 except 10.1.0.0/16, any port": "allowed"},
        "policyTypes": ["Egress", "Ingress"],
    }


def test_binding_subjects_are_a_set_with_the_servers_api_group() -> None:
    group = {"kind": "Group", "name": "ml-eng", "apiGroup": "rbac.authorization.k8s.io"}
    account = {"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"}
    same = [{"kind": "ServiceAccount", "name": "ci", "namespace": "team-a", "apiGroup": ""}, {"kind": "Group", "name": "ml-eng"}]
    assert _fields("RoleBinding", {"subjects": [group, account]}, {"subjects": same}) == []
    assert _fields("RoleBinding", {"subjects": [group, account]}, {"subjects": [group]}) == [
        ("subjects[ServiceAccount team-a/ci]", {"apiGroup": ""}, ABSENT)
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"rules": "all"},
        {"rules": [["get"]]},
        {"rules": [{"verbs": "get"}]},
        {"spec": {"ingress": [{"from": "everyone"}]}},
        {"spec": {"ingress": [{"from": [{"podSelector": []}]}], "policyTypes": "Ingress"}},
        {"subjects": [{"kind": "Group"}]},
    ],
)
def test_an_unexpected_shape_is_compared_as_written(body: dict[str, Any]) -> None:
    for kind in ("Role", "NetworkPolicy", "RoleBinding"):
        assert object_diff(body, body, kind) == []
        changed = copy.deepcopy(body)
        changed["extra"] = 1
        assert [f.path for f in object_diff(body, changed, kind)] == ["extra"]


def test_quantities_compare_by_value_beyond_quotas() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod"}  # its schema says which fields are quantities
    old = {**pod, "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "1Gi"}, "limits": {"cpu": "1"}}}]}}
    new = {**pod, "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "1024Mi"}, "limits": {"cpu": "1000m"}}}]}}
    assert object_diff(old, new, "Pod") == []
    new["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "2"
    assert [f.path for f in object_diff(old, new, "Pod")] == ["spec.containers.c.resources.limits.cpu"]


# --- every command compares the same way -------------------------------------------------------


def _regrouped(body: dict[str, Any]) -> dict[str, Any]:
    """A rendered Role or NetworkPolicy as a person might write it: one rule per verb, peers in rules of their own, reversed."""
    body = copy.deepcopy(body)
    if body["kind"] == "Role":
        body["rules"] = [{**r, "verbs": [v]} for r in reversed(body["rules"]) for v in r["verbs"]]
    else:
        body["spec"]["ingress"] = [{"from": [peer]} for rule in body["spec"]["ingress"] for peer in reversed(rule["from"])]
        del body["spec"]["policyTypes"]
    return body


def test_drift_sees_a_live_object_regrouped_as_the_same_and_a_dropped_grant_at_its_name() -> None:
    rendered = {ObjectKey.of(m.body): m.body for m in cluster_objects(load_fleet_text(EXAMPLE.read_bytes()).fleet, 3)}
    live = [_regrouped(b) if b["kind"] in ("Role", "NetworkPolicy") else b for b in rendered.values()]
    assert sum(b["kind"] in ("Role", "NetworkPolicy") for b in live) >= 4
    assert not compare(rendered, live).found
    role = next(b for b in live if b["kind"] == "Role")
    role["rules"] = [r for r in role["rules"] if r != {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["update"]}]
    [changed] = compare(rendered, live).changed
    assert changed.fields == (FieldChange("rules[apps/deployments/update]", "granted", ABSENT),)


def test_check_explains_a_regrouped_file_as_order_only(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    assert cli_run("render").returncode == 0
    rbac = tmp_path / "base" / "rbac" / "nlp" / "rbac.yaml"
    role, binding = yaml.safe_load_all(rbac.read_text())
    rbac.write_text(yaml.safe_dump_all([_regrouped(role), binding]))
    done = cli_run("check")
    assert done.returncode == 1
    assert (
        "base/rbac/nlp/rbac.yaml: edited: changed by hand since the last render (formatting or order only: the same objects)" in done.stdout
    )


# --- property: regrouping never changes anything, removing a grant always does ----------------

GRANTS = st.sets(
    st.tuples(
        st.sampled_from(["", "apps", "batch"]), st.sampled_from(["pods", "jobs", "pods/log"]), st.sampled_from(["get", "list", "watch"])
    ),
    min_size=1,
)


def _as_rules(grants: set[tuple[str, str, str]], how: int, rng: random.Random) -> list[dict[str, Any]]:
    """Rules that grant exactly `grants`: one per grant, or grouped by (group, resource) or (group, verb), shuffled."""
    ordered = sorted(grants)
    if how == 0:
        rules = [{"apiGroups": [g], "resources": [r], "verbs": [v]} for g, r, v in ordered]
    else:
        key: Callable[[tuple[str, str, str]], tuple[str, str]] = (lambda t: (t[0], t[1])) if how == 1 else (lambda t: (t[0], t[2]))
        rules = []
        for (group, other), items in groupby(sorted(ordered, key=key), key=key):
            rest = [t[2] if how == 1 else t[1] for t in items]
            rng.shuffle(rest)
            rules.append({"apiGroups": [group], "resources": [other] if how == 1 else rest, "verbs": rest if how == 1 else [other]})
    rules += rng.sample(rules, k=min(len(rules), rng.randint(0, 2)))  # a rule written twice grants nothing more
    rng.shuffle(rules)
    return rules


@pytest.mark.slow
@examples(150)
@given(GRANTS, st.integers(0, 2), st.integers(0, 2), st.randoms(use_true_random=False), st.data())
def test_regrouped_rules_are_equal_and_a_removed_grant_is_one_change(
    grants: set[tuple[str, str, str]], how: int, other_how: int, rng: random.Random, data: st.DataObject
) -> None:
    old = {ROLE: _role(*_as_rules(grants, how, rng))}
    assert diff_objects(old, {ROLE: _role(*_as_rules(grants, other_how, rng))}) == []
    gone = data.draw(st.sampled_from(sorted(grants)))
    [change] = diff_objects(old, {ROLE: _role(*_as_rules(grants - {gone}, other_how, rng))})
    group, resource, verb = gone
    core = '""'
    assert change.fields == (FieldChange(f"rules[{group or core}/{resource}/{verb}]", "granted", ABSENT),)


PAIRS = st.sets(st.tuples(st.sampled_from(["monitoring", "ingress", "team-b"]), st.sampled_from([80, 443, 8080])), min_size=1)


def _as_ingress(pairs: set[tuple[str, int]], how: int, rng: random.Random) -> list[dict[str, Any]]:
    """Ingress rules that allow exactly `pairs`: one per pair, or grouped by peer or by port, shuffled."""
    ordered = sorted(pairs)
    if how == 0:
        rules = [{"from": [_namespace(n)], "ports": [{"port": p}]} for n, p in ordered]
    else:
        rules = []
        index = 0 if how == 1 else 1
        for shared, items in groupby(sorted(ordered, key=lambda t: t[index]), key=lambda t: t[index]):
            rest = [t[1 - index] for t in items]
            rng.shuffle(rest)
            if how == 1:
                rules.append({"from": [_namespace(str(shared))], "ports": [{"port": p} for p in rest]})
            else:
                rules.append({"from": [_namespace(str(n)) for n in rest], "ports": [{"protocol": "TCP", "port": shared}]})
    rng.shuffle(rules)
    return rules


@pytest.mark.slow
@examples(150)
@given(PAIRS, st.integers(0, 2), st.integers(0, 2), st.randoms(use_true_random=False), st.data())
def test_regrouped_peers_are_equal_and_a_removed_pair_is_one_change(
    pairs: set[tuple[str, int]], how: int, other_how: int, rng: random.Random, data: st.DataObject
) -> None:
    old = {POLICY: _policy(*_as_ingress(pairs, how, rng))}
    assert diff_objects(old, {POLICY: _policy(*_as_ingress(pairs, other_how, rng))}) == []
    gone = data.draw(st.sampled_from(sorted(pairs)))
    [change] = diff_objects(old, {POLICY: _policy(*_as_ingress(pairs - {gone}, other_how, rng))})
    assert change.fields == (
        FieldChange(f"spec.ingress[namespaceSelector kubernetes.io/metadata.name={gone[0]}, port TCP/{gone[1]}]", "allowed", ABSENT),
    )

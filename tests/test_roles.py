"""Roles people can work with, and a LimitRange so that pods without limits are admitted.

The fleet's Role template (tenancy.role, fleetgen's when left out) gives every team what daily work
needs; a team adds rules or pods/exec with a reason. A Role that would let a team rewrite what
fleetgen sets for it is refused; any gain needs the platform owners. Each team namespace gets a
LimitRange whose container defaults are the team's quota shared by its pods.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import kubernetes_validate
import yaml
from conftest import EXAMPLE, findings_of, line_of, replace_once

from fleetgen.checks.load import load_fleet_text
from fleetgen.model import Fleet
from fleetgen.render.layout import cluster_objects
from fleetgen.render.rendered import Rendered
from fleetgen.review import diff_fleets

Run = Callable[..., CompletedProcess[str]]
TEXT = EXAMPLE.read_text()
FLEET = load_fleet_text(TEXT.encode()).fleet


def objects_on(fleet: Fleet, cluster: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    index = [c.name for c in fleet.clusters].index(cluster)
    return {(m.key.kind, m.key.namespace, m.key.name): m.body for m in cluster_objects(fleet, index)}


def may(role: dict[str, Any], group: str, resource: str, verb: str) -> bool:
    """Whether RBAC lets the Role do `verb` on `resource` (rules are unions; no wildcards to expand)."""
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in role["rules"])


def test_the_default_role_covers_daily_work_and_no_more() -> None:
    role = objects_on(FLEET, "dev-eastus")[("Role", "team-robotics", "gpu-workload-role")]
    for group, resource, verb in (
        ("", "pods/log", "get"),  # kubectl logs
        ("apps", "deployments", "patch"),  # kubectl scale, set image
        ("apps", "deployments", "watch"),  # kubectl rollout status
        ("batch", "jobs", "watch"),
        ("", "events", "list"),  # why is my pod pending
        ("kueue.x-k8s.io", "workloads", "get"),  # why is my job not admitted
    ):
        assert may(role, group, resource, verb), (group, resource, verb)
    for group, resource, verb in (
        ("", "pods/exec", "create"),  # opt-in only
        ("", "secrets", "get"),
        ("", "resourcequotas", "patch"),
        ("rbac.authorization.k8s.io", "rolebindings", "create"),
        ("networking.k8s.io", "networkpolicies", "delete"),
    ):
        assert not may(role, group, resource, verb), (group, resource, verb)
    kubernetes_validate.validate(role, "1.30.1", strict=True)


def test_a_team_adds_rules_and_pod_exec_to_the_fleet_s_role() -> None:
    objects = objects_on(FLEET, "training-eastus")
    nlp, science = objects[("Role", "team-nlp", "gpu-workload-role")], objects[("Role", "team-data-science", "gpu-workload-role")]
    robotics = objects[("Role", "team-robotics", "gpu-workload-role")]
    assert may(nlp, "", "pods/exec", "create") and not may(science, "", "pods/exec", "create")
    assert may(science, "apps", "statefulsets", "create") and not may(nlp, "apps", "statefulsets", "create")
    template = FLEET.tenancy.role
    assert robotics["rules"][: len(template)] == nlp["rules"][: len(template)] == [r.body() for r in template]
    assert may(robotics, "batch.volcano.sh", "jobs", "create")  # what training-eastus' Volcano needs comes after


def test_a_role_that_would_let_a_team_rewrite_its_own_limits_is_refused_at_its_line() -> None:
    hostile = replace_once(
        TEXT,
        "podExec: true   # on-call",
        "podExec: true\n      role: [{apiGroups: [''], resources: [pods, resourcequotas], verbs: [get, patch]}]   # on-call",
    )
    line = line_of(hostile, "resourcequotas], verbs: [get, patch]")
    column = hostile.splitlines()[line - 1].index("resourcequotas") + 1
    assert findings_of(hostile) == [
        f"{line}:{column}: teams[1].tenancy.role[0].resources[1]: a team's Role may not patch resourcequotas (core group): "
        "the team could rewrite its ResourceQuotas, which fleetgen sets for it"
    ]
    wildcard = hostile.replace("resources: [pods, resourcequotas], verbs: [get, patch]", "resources: ['*'], verbs: ['*']")
    assert [f.split(": ", 2)[1] for f in findings_of(wildcard)] == [
        "teams[1].tenancy.role[0].resources[0]",
        "teams[1].tenancy.role[0].verbs[0]",
    ]
    escalate = hostile.replace("resources: [pods, resourcequotas], verbs: [get, patch]", "resources: [roles], verbs: [escalate, bind]")
    assert len(findings_of(escalate)) == 2  # neither verb is one a team Role may grant


def test_a_role_gain_needs_the_platform_owners() -> None:
    text = replace_once(TEXT, "podExec: true   # on-call", "podExec: false   # on-call")
    fleets = [Rendered(load_fleet_text(t.encode()).fleet) for t in (text, TEXT)]
    result = diff_fleets(fleets[0], fleets[1], "a", "b")
    assert {a.rule.name: [c.text for c in a.changes] for a in result.approvals} == {
        "fleetgen-tenant-access": ["team nlp: Role gains pods/exec (create, get)"]
    }
    back = diff_fleets(fleets[1], fleets[0], "b", "a")
    assert back.approvals == [] and [c.text for c in back.changes] == ["team nlp: Role loses pods/exec (create, get)"]


def admitted(pod_spec: dict[str, Any], limits: list[dict[str, Any]], hard: dict[str, str]) -> bool:
    """Quota admission's first question after the LimitRanger: does every container state each resource the quota
    tracks? (A quota on limits.cpu refuses a pod whose container sets no CPU limit.)"""
    item = next(i for i in limits if i["type"] == "Container")
    for container in pod_spec["containers"]:
        resources = container.setdefault("resources", {})
        for field, default in (("limits", item.get("default", {})), ("requests", item.get("defaultRequest", {}))):
            for name, value in default.items():
                resources.setdefault(field, {}).setdefault(name, value)
    tracked = [key.split(".", 1) for key in hard if key.split(".", 1)[0] in ("requests", "limits") and "nvidia" not in key]
    return all(name in c["resources"].get(field, {}) for c in pod_spec["containers"] for field, name in tracked)


def test_a_pod_without_limits_gets_the_team_s_share_and_is_admitted_by_its_quota() -> None:
    objects = objects_on(FLEET, "dev-eastus")
    limit_range = objects[("LimitRange", "team-data-science", "container-defaults")]
    kubernetes_validate.validate(limit_range, "1.30.1", strict=True)
    # data-science: requests 64 CPUs and 256Gi, limits 128 and 512Gi, 50 pods
    assert limit_range["spec"]["limits"] == [
        {"type": "Container", "default": {"cpu": "2560m", "memory": "10485Mi"}, "defaultRequest": {"cpu": "1280m", "memory": "5242Mi"}}
    ]
    hard = objects[("ResourceQuota", "team-data-science", "gpu-quota")]["spec"]["hard"]
    bare = {"containers": [{"name": "notebook", "image": "jupyter/base:1"}]}
    assert not admitted({"containers": [{"name": "n", "image": "i", "resources": {}}]}, [{"type": "Container"}], hard)
    assert admitted(bare, limit_range["spec"]["limits"], hard)
    # nlp's quota sets no memory limit: only requests are filled in for memory
    nlp = objects[("LimitRange", "team-nlp", "container-defaults")]["spec"]["limits"][0]
    assert nlp["default"] == {"cpu": "2560m", "memory": "10485Mi"} and nlp["defaultRequest"] == {"cpu": "1280m", "memory": "5242Mi"}


def test_a_per_cluster_quota_gives_a_per_cluster_limit_range_and_a_team_can_do_without(tmp_path: Path, cli_run: Run) -> None:
    text = replace_once(TEXT, "      dev-eastus: {requests: {gpu: 2}}\n", "      dev-eastus: {requests: {gpu: 2, cpu: 8}, pods: 4}\n")
    text = replace_once(
        text, "      podSecurity: baseline   # the simulator", "      limitRange: false\n      podSecurity: baseline   # the simulator"
    )
    (tmp_path / "fleet.yaml").write_text(text)
    assert cli_run("render").returncode == 0
    patch = yaml.safe_load(
        (tmp_path / "clusters" / "dev-eastus" / "teams" / "nlp" / "patches" / "team-nlp-limitrange-container-defaults.yaml").read_text()
    )
    assert patch["spec"]["limits"][0]["defaultRequest"] == {"cpu": "2", "memory": "64Gi"}  # 8 CPUs, 256Gi over 4 pods
    assert "LimitRange" not in (tmp_path / "base" / "resource-quotas" / "robotics" / "resource-quotas.yaml").read_text()


def test_import_keeps_the_repository_s_role_and_its_own_limit_range(tmp_path: Path, cli_run: Run) -> None:
    repo = EXAMPLE.parent / "tests" / "import_repo"
    done = cli_run("import", str(repo), "--cost-center", "cc-1", "--engine", "flux", "--repository", "https://github.com/a/b")
    fleet = yaml.safe_load(done.stdout)
    assert [r["verbs"] for r in fleet["tenancy"]["role"]][0] == ["get", "list", "create", "delete", "watch"]  # the seed's Role
    vision = next(t for t in fleet["teams"] if t["name"] == "vision")
    assert vision["tenancy"] == {"limitRange": False}

"""Kueue's controller configuration from fleet.yaml: waitForPodsReady, manageJobsWithoutQueueName, fair sharing.

What each setting makes of the Configuration in the Kueue chart's values is checked here; that the
chart puts it into the manager's ConfigMap is tests/test_helm_charts.py's, with the real helm.
"""

from __future__ import annotations

from typing import Any

import yaml
from conftest import EXAMPLE, REPO, findings_of, line_of, replace_once

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.model import Fleet
from fleetgen.render.kueue_config import CHART_DEFAULT, JOB_FRAMEWORKS, POD_FRAMEWORKS, configuration
from fleetgen.render.layout import cluster_objects
from fleetgen.render.platform import add_ons, helm_values

TEXT = EXAMPLE.read_text(encoding="utf-8")
CHARTS = REPO / "tests" / "charts"
PLATFORM = "  gpuOperator: {version: v24.3.0}   # installs each version set's driver; this release supports 550.54.15 and 550.90.07\n"


def fleet_of(text: str) -> Fleet:
    return load_fleet_text(text.encode()).fleet


def with_kueue(settings: str) -> str:
    """The example with `settings` (a flow mapping's inside) under platform.kueue."""
    return replace_once(TEXT, PLATFORM, PLATFORM + f"  kueue: {{{settings}}}\n")


def config_of(fleet: Fleet, cluster: str) -> dict[str, Any]:
    """The Configuration as the Kueue chart value carries it: YAML text, parsed back."""
    index = [c.name for c in fleet.clusters].index(cluster)
    [kueue] = [addon for name, addon, _ in add_ons(fleet, index) if name == "kueue"]
    text = helm_values(fleet, index, "kueue", kueue)["managerConfig"]["controllerManagerConfigYaml"]
    parsed: dict[str, Any] = yaml.safe_load(text)
    assert parsed == configuration(fleet, index, kueue)
    return parsed


def matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels, In, NotIn, Exists, DoesNotExist) against a label set."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for rule in selector.get("matchExpressions", []):
        key, op, values = rule["key"], rule["operator"], rule.get("values", [])
        held = {"In": labels.get(key) in values, "NotIn": labels.get(key) not in values, "Exists": key in labels}
        if not held.get(op, key not in labels):
            return False
    return True


def test_defaults_hold_back_unqueued_jobs_in_team_namespaces_only_and_wait_for_pods_ready() -> None:
    fleet = fleet_of(TEXT)
    for index, cluster in enumerate(fleet.clusters):
        config = config_of(fleet, cluster.name)
        assert config["manageJobsWithoutQueueName"] is True
        assert config["waitForPodsReady"] == {"timeout": "30m", "blockAdmission": False}
        selector = config["managedJobsNamespaceSelector"]
        namespaces = [m.body for m in cluster_objects(fleet, index) if m.body["kind"] == "Namespace"]
        assert namespaces and all(matches(selector, ns["metadata"]["labels"]) for ns in namespaces)
        # Namespaces render does not make, as the API server labels them: never Kueue's to hold back.
        for name in ("kube-system", "kueue-system", "gpu-operator", "monitoring", "flux-system", "volcano-system", "default"):
            assert not matches(selector, {"kubernetes.io/metadata.name": name}), name
        # A namespace of another fleet's team, or one a person labelled by hand, is not this fleet's.
        assert not matches(selector, {**namespaces[0]["metadata"]["labels"], "app.kubernetes.io/part-of": "other-fleet"})


def test_fair_sharing_is_on_where_weights_are_set_unless_fleet_yaml_says_otherwise() -> None:
    fleet = fleet_of(TEXT)
    strategies = {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    assert config_of(fleet, "training-eastus")["fairSharing"] == strategies  # its queues set fairSharingWeight
    assert "fairSharing" not in config_of(fleet, "dev-eastus")  # no weights there
    forced = fleet_of(with_kueue("fairSharing: true"))
    assert config_of(forced, "dev-eastus")["fairSharing"] == strategies
    off = with_kueue("fairSharing: false")
    assert "fairSharing" not in config_of(fleet_of(off), "training-eastus")
    weight = line_of(off, "fairSharingWeight: 2")
    assert f"{weight}:28: clusters[2].queues[0].fairSharingWeight: Kueue ignores fairSharingWeight: fair sharing is off on " in "\n".join(
        findings_of(off, Severity.WARNING)
    )


def test_borrow_within_cohort_under_fair_sharing_is_a_warning_at_its_line() -> None:
    text = replace_once(
        TEXT,
        "preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}",
        "preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any, borrowWithinCohort: {policy: LowerPriority}}",
    )
    line = line_of(text, "borrowWithinCohort")
    warnings = findings_of(text, Severity.WARNING)
    assert any(w.startswith(f"{line}:") and "Kueue ignores borrowWithinCohort under fair sharing" in w for w in warnings), warnings
    assert not any(
        "borrowWithinCohort" in w
        for w in findings_of(
            with_kueue("fairSharing: false").replace(
                "reclaimWithinCohort: Any}", "reclaimWithinCohort: Any, borrowWithinCohort: {policy: LowerPriority}}"
            ),
            Severity.WARNING,
        )
    )


def test_wait_for_pods_ready_settings_and_turning_it_off() -> None:
    fleet = fleet_of(with_kueue("waitForPodsReady: {timeout: 10m, blockAdmission: true}"))
    assert config_of(fleet, "dev-eastus")["waitForPodsReady"] == {"timeout": "10m", "blockAdmission": True}
    off = config_of(fleet_of(with_kueue("waitForPodsReady: {enabled: false}")), "dev-eastus")
    # Kueue 0.19 turns it on when the Configuration leaves it out: only its gate turns it off.
    assert "waitForPodsReady" not in off and off["featureGates"] == {"DisableWaitForPodsReady": True}
    older = config_of(fleet_of(with_kueue("version: 0.18.1, waitForPodsReady: {enabled: false}")), "dev-eastus")
    assert "waitForPodsReady" not in older and "featureGates" not in older  # before 0.19 leaving it out is off, and the gate unknown


def test_a_bad_timeout_or_flag_is_an_error_at_its_line() -> None:
    for settings, message in (
        ("waitForPodsReady: {timeout: 0s}", "waitForPodsReady.timeout: String should match pattern"),
        ("waitForPodsReady: {timeout: 10 minutes}", "waitForPodsReady.timeout: String should match pattern"),
        ("manageJobsWithoutQueueName: yes", "manageJobsWithoutQueueName: Input should be a valid boolean"),
        ("fairSharing: 1", "fairSharing: Input should be a valid boolean"),
    ):
        text = with_kueue(settings)
        found = findings_of(text)
        assert any(f.startswith(f"{line_of(text, '  kueue: {')}:") and f"platform.kueue.{message}" in f for f in found), (settings, found)


def test_a_cluster_changes_only_what_it_writes() -> None:
    text = replace_once(
        TEXT,
        "    platform: {jupyterhub: {enabled: true}}   # scientists' notebooks run here\n",
        "    platform: {jupyterhub: {enabled: true}, kueue: {manageJobsWithoutQueueName: false}}\n",
    )
    fleet = fleet_of(text)
    assert config_of(fleet, "dev-eastus")["manageJobsWithoutQueueName"] is False
    assert config_of(fleet, "dev-eastus")["waitForPodsReady"]["timeout"] == "30m"
    assert config_of(fleet, "prod-inference-eastus")["manageJobsWithoutQueueName"] is True


def test_pod_based_integrations_stay_off_beside_volcano_while_unqueued_pods_are_held() -> None:
    fleet = fleet_of(TEXT)
    # Volcano's gang pods name no Kueue queue: with the pod integration Kueue would hold every one of them.
    assert config_of(fleet, "training-eastus")["integrations"]["frameworks"] == list(JOB_FRAMEWORKS)
    assert config_of(fleet, "dev-eastus")["integrations"]["frameworks"] == list(JOB_FRAMEWORKS + POD_FRAMEWORKS)
    relaxed = fleet_of(with_kueue("manageJobsWithoutQueueName: false"))
    assert config_of(relaxed, "training-eastus")["integrations"]["frameworks"] == list(JOB_FRAMEWORKS + POD_FRAMEWORKS)


def test_the_base_is_the_pinned_charts_own_default() -> None:
    """A value replaces the chart's controllerManagerConfigYaml whole: fleetgen keeps every setting of it it does not decide."""
    values = yaml.safe_load((CHARTS / "kueue" / "values.yaml").read_text(encoding="utf-8"))
    chart = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    frameworks = chart.pop("integrations")["frameworks"]
    assert chart == CHART_DEFAULT
    assert frameworks == list(JOB_FRAMEWORKS + POD_FRAMEWORKS)  # the chart's list, in its order


def test_the_example_passes_the_kueue_settings_with_no_new_findings() -> None:
    loaded = load_fleet_text(TEXT.encode())
    assert not [w for w in loaded.warnings if "Kueue ignores" in w.message]

"""Kueue's controller configuration on one cluster: the Configuration in the chart's manager ConfigMap.

The Kueue chart takes the whole `controller_manager_config.yaml` as one string value,
`managerConfig.controllerManagerConfigYaml`, and a value replaces its default whole. So fleetgen
writes the chart's own default (CHART_DEFAULT, as the pinned chart's values.yaml has it; a test
compares the two) with what fleet.yaml decides on top:

- `waitForPodsReady`: a workload whose pods are not all ready in time is evicted and requeued, so a
  half-started gang does not sit on GPUs. Kueue 0.19 turns it on by default; off takes its
  DisableWaitForPodsReady feature gate there.
- `manageJobsWithoutQueueName`: Jobs and pods that name no LocalQueue wait in Kueue, with a
  `managedJobsNamespaceSelector` that picks the fleet's team namespaces only (by the labels render
  puts on them), so kube-system, the add-ons' namespaces and monitoring are never touched.
- `fairSharing`: on where a queue or cohort of the cluster sets a fairSharingWeight (the weights do
  nothing without it), unless fleet.yaml says otherwise.
- `integrations.frameworks`: the chart's list. On a cluster that also runs Volcano and manages
  jobs without a queue name, the pod-based integrations are left out: Volcano's gang pods carry no
  Kueue queue, and Kueue's pod webhook would hold every one of them back.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import yaml

from fleetgen.checks.platform import fair_sharing_on
from fleetgen.model import Fleet, Version
from fleetgen.model.platform import Kueue, cluster_platform
from fleetgen.render.manifest import MANAGED_BY

CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
# Kinds Kueue queues as a whole job, then the ones it queues pod by pod (the chart's order).
JOB_FRAMEWORKS = (
    "batch/job",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/rayservice",
    "ray.io/raycluster",
    "jobset.x-k8s.io/jobset",
    "workload.codeflare.dev/appwrapper",
    "trainer.kubeflow.org/trainjob",
)
POD_FRAMEWORKS = ("pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset")
# Kueue's own order of fair-sharing preemption strategies (the one its documentation gives as the default).
FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
DISABLE_WAIT_GATE = "DisableWaitForPodsReady"  # Kueue 0.19 and 0.20: waitForPodsReady is on unless this gate is set
WAIT_ON_BY_DEFAULT = Version("0.19")
PATH_VALIDATION_GATE, PATH_VALIDATION = "MultiKueueKubeConfigPathValidation", Version("0.19")  # alpha, off by default
QUOTA_AUTOMATION_GATE, QUOTA_AUTOMATION = "MultiKueueManagerQuotaAutomation", Version("0.18")  # alpha, off by default

# The pinned chart's default controllerManagerConfigYaml, without its integrations (fleetgen's own).
CHART_DEFAULT: dict[str, Any] = {
    "apiVersion": CONFIG_API,
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
}


def team_namespaces(fleet: Fleet) -> dict[str, Any]:
    """A selector of the namespaces render makes for teams: they carry a team label, the fleet's name and fleetgen's mark."""
    return {
        "matchLabels": {"app.kubernetes.io/part-of": fleet.metadata.name, **MANAGED_BY},
        "matchExpressions": [{"key": "team", "operator": "Exists"}],
    }


def frameworks(fleet: Fleet, index: int, kueue: Kueue) -> list[str]:
    """The job integrations Kueue manages on the cluster (see the module's note on Volcano). On a MultiKueue manager
    only batch Jobs: the manager dispatches only to workers that serve every kind it manages (kubernetes-sigs/kueue#12400),
    and `job new --fleet` writes Jobs."""
    mk = fleet.multi_kueue
    if mk is not None and fleet.clusters[index].name == mk.manager:
        return [JOB_FRAMEWORKS[0]]
    volcano_pods_held = fleet.clusters[index].volcano is not None and kueue.manage_jobs_without_queue_name
    return list(JOB_FRAMEWORKS) + ([] if volcano_pods_held else list(POD_FRAMEWORKS))


def kueue_admits_deployments(fleet: Fleet, index: int) -> bool:
    """Whether Kueue on cluster `index` manages Deployments (so an inference Deployment names its LocalQueue)."""
    kueue = cluster_platform(fleet.platform, fleet.clusters[index].platform).kueue
    return "deployment" in frameworks(fleet, index, kueue)


def configuration(fleet: Fleet, index: int, kueue: Kueue) -> dict[str, Any]:
    """The Configuration Kueue's controller reads on cluster `index`."""
    config: dict[str, Any] = dict(CHART_DEFAULT)
    config["manageJobsWithoutQueueName"] = kueue.manage_jobs_without_queue_name
    config["managedJobsNamespaceSelector"] = team_namespaces(fleet)
    # the ClusterQueue resource metrics report each flavor's (node pool's) usage: the node-pool utilisation alert reads them
    config["metrics"] = {**CHART_DEFAULT["metrics"], "enableClusterQueueResources": True}
    wait = kueue.wait_for_pods_ready
    if wait.enabled:
        config["waitForPodsReady"] = {"timeout": wait.timeout, "blockAdmission": wait.block_admission}
    elif _release(kueue.version) >= WAIT_ON_BY_DEFAULT.minor:
        config["featureGates"] = {DISABLE_WAIT_GATE: True}
    config |= multikueue_settings(fleet, index, kueue, config.get("featureGates", {}))
    if fair_sharing_on(fleet, index, kueue):
        config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_STRATEGIES)}
    config["integrations"] = {"frameworks": frameworks(fleet, index, kueue)}
    return config


def multikueue_settings(fleet: Fleet, index: int, kueue: Kueue, gates: dict[str, bool]) -> dict[str, Any]:
    """On the MultiKueue manager: the dispatcher, and the feature gates of what its queues use (Path kubeconfigs
    only under /etc/multikueue/kubeconfigs/ from Kueue 0.19, quota automation from 0.18; checks refuse older pins)."""
    mk = fleet.multi_kueue
    if mk is None or fleet.clusters[index].name != mk.manager:
        return {}
    gates = dict(gates)
    if _release(kueue.version) >= PATH_VALIDATION.minor:
        gates[PATH_VALIDATION_GATE] = True
    if any(q.quota_management == "Automated" for q in mk.queues):
        gates[QUOTA_AUTOMATION_GATE] = True
    return {"featureGates": dict(sorted(gates.items())), "multiKueue": {"dispatcherName": mk.dispatcher_name()}}


def _release(version: str) -> tuple[int, int]:
    """(major, minor) of a pinned chart version such as 0.19.2, v0.20.0 or 0.20.0-rc.1."""
    return Version.parse(version.split("-")[0].split("+")[0]).minor


_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@lru_cache(maxsize=256)
def _yaml_of(data_json: str) -> str:
    """A configuration as YAML text, in its own key order and never folded; clusters with the same one share the text
    (a large fleet writes a handful of distinct configurations, not one per cluster)."""
    return yaml.dump(json.loads(data_json), Dumper=_DUMPER, sort_keys=False, default_flow_style=False, width=10_000)


def config_text(data: dict[str, Any]) -> str:
    return _yaml_of(json.dumps(data))


def manager_config_values(fleet: Fleet, index: int, kueue: Kueue) -> dict[str, Any]:
    """The chart value that carries the Configuration, as YAML text (the order above, no line folding)."""
    return {"managerConfig": {"controllerManagerConfigYaml": config_text(configuration(fleet, index, kueue))}}

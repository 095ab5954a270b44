"""The platform add-ons of a cluster as the GitOps engine installs them: Helm charts at pinned versions.

Flux: a HelmRepository (https://) or an OCIRepository (oci://) per add-on and a HelmRelease that
`dependsOn` the releases whose CRDs it uses. Argo CD: an Application with a Helm source per add-on,
its sync wave before the fleet's own Application (waves order the children of the cluster's root
Application). The GPU Operator's `driver.version` is the cluster's version set's driver, so moving a
cluster to another version set is what changes the driver on its nodes.
"""

from __future__ import annotations

from typing import Any

from fleetgen.compat.pool_drivers import driver_crd_on
from fleetgen.errors import FieldPath
from fleetgen.model import Fleet
from fleetgen.model.fleet import add_on_needed
from fleetgen.model.platform import ADD_ONS, AddOn, GpuOperator, JupyterHub, Kueue, Platform, VolcanoChart
from fleetgen.render import provenance as prov
from fleetgen.render.argocd_apps import ARGOCD_NS, app_label_origins, app_labels, destination
from fleetgen.render.dcgm_metrics import exporter_values
from fleetgen.render.gpu_sharing import partitioning_values
from fleetgen.render.gpu_sharing import record as record_partitioning
from fleetgen.render.kueue_config import manager_config_values
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object
from fleetgen.render.notebooks import hub_values
from fleetgen.render.provenance import NOWHERE, Recorder
from fleetgen.render.volcano_scheduler import scheduler_values

FLUX_NS = "flux-system"
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
HELM_RELEASE_API = "helm.toolkit.fluxcd.io/v2"
# Argo CD waves of the add-ons; the fleet's own Application is wave 0.
WAVES = {"prometheusOperatorCrds": -2, "externalSecrets": -1, "kueue": -1, "gpuOperator": -1, "volcano": -1, "jupyterhub": -1}
RELEASES = {
    "prometheusOperatorCrds": "prometheus-operator-crds",
    "externalSecrets": "external-secrets",
    "kueue": "kueue",
    "gpuOperator": "gpu-operator",
    "volcano": "volcano",
    "jupyterhub": "jupyterhub",
}


def platform_of(fleet: Fleet, index: int) -> Platform:
    return fleet.platform_of(fleet.clusters[index])


def add_ons(fleet: Fleet, index: int) -> list[tuple[str, AddOn, FieldPath]]:
    """(fleet.yaml name, settings, where they are written) of the cluster's enabled add-ons, in install order.

    Volcano only where the cluster runs it: its Queues are the only objects that need its CRDs; the External Secrets
    Operator only where the fleet's Secrets come from its store."""
    platform, own = platform_of(fleet, index), fleet.clusters[index].platform
    found: list[tuple[str, AddOn, FieldPath]] = []
    for name, attr in ADD_ONS:
        addon: AddOn = getattr(platform, attr)
        needed = add_on_needed(fleet, index, addon)
        if addon.enabled and needed:
            at: FieldPath = (
                ("clusters", index, "platform", name) if own is not None and attr in own.model_fields_set else ("platform", name)
            )
            found.append((name, addon, at))
    return found


def helm_values(fleet: Fleet, index: int, name: str, addon: AddOn) -> dict[str, Any]:
    """The chart values fleetgen sets; every key exists in the chart's own values.yaml (a test checks)."""
    monitor_labels = dict(sorted(fleet.alerts.rule_labels.items()))
    if isinstance(addon, GpuOperator) and addon.driver_source == "node-image":
        return {  # the node image brings the driver: the operator installs everything else
            "driver": {"enabled": False},
            "dcgmExporter": {"enabled": True, "serviceMonitor": {"enabled": True, "additionalLabels": monitor_labels}},
        }
    if isinstance(addon, GpuOperator) and driver_crd_on(fleet, fleet.clusters[index]):
        # one NVIDIADriver per GPU node pool (render/nvidia_drivers.py), each with its pool's driver and upgrade policy;
        # the chart's own default one would select every GPU node beside them
        return {"driver": {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False}}, **_operands(fleet, index, monitor_labels)}
    if isinstance(addon, GpuOperator):
        policy, drain = addon.driver_upgrade, addon.driver_upgrade.drain
        return {
            "driver": {
                "version": str(fleet.version_sets[fleet.clusters[index].version_set].driver),
                "upgradePolicy": {
                    "autoUpgrade": True,
                    "maxParallelUpgrades": policy.max_parallel_upgrades,
                    "maxUnavailable": _int_or_percent(policy.max_unavailable),
                    "drain": {
                        "enable": drain.enabled,
                        "force": drain.force,
                        "timeoutSeconds": drain.timeout_seconds,
                        "deleteEmptyDir": drain.delete_empty_dir,
                    },
                },
            },
            **_operands(fleet, index, monitor_labels),
        }
    if isinstance(addon, Kueue):
        # Kueue's metrics are scraped through fleetgen's own ServiceMonitor (render/kueue_monitor.py). The chart's is off:
        # a Prometheus that selects every monitor would scrape the Service twice, and the alerts' sums would count each
        # series twice. The controller's Configuration is fleet.yaml's.
        return {"enablePrometheus": False, **manager_config_values(fleet, index, addon)}
    if isinstance(addon, VolcanoChart):
        return scheduler_values(fleet.clusters[index])
    if isinstance(addon, JupyterHub):
        return hub_values(fleet, index)
    return {}


def _operands(fleet: Fleet, index: int, monitor_labels: dict[str, str]) -> dict[str, Any]:
    """The GPU Operator's values beside the driver's: the DCGM exporter, time-slicing and MIG."""
    return {
        # The GPU alerts read DCGM's metrics: the exporter and its ServiceMonitor are always on. honorLabels: the workload's
        # namespace/pod stay `namespace`/`pod` (not exported_*), the labels team rules select and kube-state-metrics carries.
        # Its metrics list is fleetgen's (render/dcgm_metrics.py): the operator's default leaves out the ECC counters.
        "dcgmExporter": {
            "enabled": True,
            **exporter_values(fleet.clusters[index]),
            "serviceMonitor": {"enabled": True, "honorLabels": True, "additionalLabels": monitor_labels},
        },
        **partitioning_values(fleet.clusters[index]),  # time-slicing and MIG, selected per node pool by its labels
    }


def _int_or_percent(value: int | str) -> int | str:
    """A count of nodes as a number (IntOrString): "2" would be read as a malformed percentage."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def setting_at(fleet: Fleet, index: int, name: str, *fields: str) -> FieldPath:
    """Where add-on `name`'s field is written for cluster `index`: the cluster's own platform when it writes it, else the fleet's."""
    cluster = fleet.clusters[index]
    own = cluster.platform
    if own is not None and prov.written(own, name, *fields):
        return ("clusters", index, "platform", name, *fields)
    versions = fleet.version_sets.get(cluster.version_set)
    if (name, fields) == ("gpuOperator", ("version",)) and versions is not None and versions.gpu_operator is not None:
        return ("versionSets", cluster.version_set, "gpuOperator")
    return ("platform", name, *fields)


def _record_values(why: Recorder, body: dict[str, Any], at: tuple[str, ...], fleet: Fleet, index: int, name: str) -> None:
    """Origins of the chart values helm_values sets, below pointer `at`."""
    why.set(body, at, prov.default("fleetgen sets no values for this chart"))
    if name == "kueue":
        own_monitor = prov.default("fleetgen's own ServiceMonitor scrapes Kueue: a second one would double every series")
        why.set(body, (*at, "enablePrometheus"), own_monitor)
        kueue_at = [setting_at(fleet, index, name, field) for field in ("waitForPodsReady", "manageJobsWithoutQueueName", "fairSharing")]
        config = prov.derived(
            "the chart's Configuration with waitForPodsReady, manageJobsWithoutQueueName (team namespaces), fair sharing "
            "(on where a queue or cohort sets a weight) and the job integrations (no pod-based ones beside Volcano)",
            *kueue_at,
            ("metadata", "name"),
            ("clusters", index, "volcano"),
        )
        why.set(body, (*at, "managerConfig"), config)
    if name == "jupyterhub":
        teams = prov.derived("a profile per GPU shape of each team here: its quota, its queue's pools", ("teams",), ("scheduling",))
        why.set(body, (*at, "singleuser", "profileList"), teams)
        why.set(body, (*at, "custom"), prov.derived("each team's group and profiles", ("teams",)))
        why.set(body, (*at, "hub"), prov.default("fleetgen's filter: a user sees the profiles of their teams"))
        why.set(body, (*at, "singleuser", "cloudMetadata"), prov.default("its iptables init container needs NET_ADMIN"))
        images = prov.derived("the hub's images, each with its CUDA", setting_at(fleet, index, name, "images"))
        for n, _ in enumerate(hub_values(fleet, index)["singleuser"]["profileList"]):
            why.set(body, (*at, "singleuser", "profileList", n, "profile_options"), images)
    if name == "volcano":
        note = "the chart's scheduler configuration, with the reclaim action where the team queues are reclaimable"
        why.set(body, (*at, "custom"), prov.derived(note, ("clusters", index, "volcano", "reclaimable")))
    if name != "gpuOperator":
        return
    if platform_of(fleet, index).gpu_operator.driver_source == "node-image":
        why.set(body, (*at, "driver"), setting_at(fleet, index, name, "driverSource"))
        why.set(body, (*at, "dcgmExporter"), prov.default("the GPU alerts read DCGM's metrics"))
        why.set(body, (*at, "dcgmExporter", "serviceMonitor", "additionalLabels"), ("alerts", "ruleLabels"), mirror=True)
        return
    if driver_crd_on(fleet, fleet.clusters[index]):
        per_pool = prov.derived(
            "one NVIDIADriver per GPU node pool instead of the ClusterPolicy's driver", setting_at(fleet, index, name, "version")
        )
        why.set(body, (*at, "driver"), per_pool)
        _record_operands(why, body, at, fleet, index)
        return
    why.set(body, (*at, "driver", "version"), ("versionSets", fleet.clusters[index].version_set, "driver"))
    why.set(body, (*at, "driver", "upgradePolicy", "autoUpgrade"), prov.default("the operator rolls the version set's driver"))
    policy = (*at, "driver", "upgradePolicy")
    for key in ("maxParallelUpgrades", "maxUnavailable"):
        why.set(body, (*policy, key), setting_at(fleet, index, name, "driverUpgrade", key))
    for key, field in (
        ("enable", "enabled"),
        ("force", "force"),
        ("timeoutSeconds", "timeoutSeconds"),
        ("deleteEmptyDir", "deleteEmptyDir"),
    ):
        why.set(body, (*policy, "drain", key), setting_at(fleet, index, name, "driverUpgrade", "drain", field))
    _record_operands(why, body, at, fleet, index)


def _record_operands(why: Recorder, body: dict[str, Any], at: tuple[str, ...], fleet: Fleet, index: int) -> None:
    why.set(body, (*at, "dcgmExporter"), prov.default("the GPU alerts read DCGM's metrics"))
    why.set(body, (*at, "dcgmExporter", "serviceMonitor", "additionalLabels"), ("alerts", "ruleLabels"), mirror=True)
    why.set(body, (*at, "dcgmExporter", "config"), prov.default("the exporter reads fleetgen's metrics list, ECC counters included"))
    why.set(
        body,
        (*at, "dcgmExporter", "env"),
        prov.default(
            "the exporter's listen address, namespace/pod mapping and fleetgen's list; on time-sliced pools, every sharing pod's labels"
        ),
    )
    record_partitioning(why, body, at, fleet, index)


def _depends_on(names: list[str], name: str) -> list[str]:
    """Add-ons that must be ready first: whatever brings the ServiceMonitor CRD the others use."""
    return ["prometheusOperatorCrds"] if name != "prometheusOperatorCrds" and "prometheusOperatorCrds" in names else []


def flux_add_ons(fleet: Fleet, index: int, why: Recorder = NOWHERE) -> list[Manifest]:
    """Sources and HelmReleases in flux-system, each release installing into its add-on's namespace."""
    labels, interval, found = fleet_labels(fleet), fleet.gitops.interval, add_ons(fleet, index)
    names = [name for name, _, _ in found]
    out: list[Manifest] = []
    for name, addon, at in found:
        release = RELEASES[name]
        if addon.repository.startswith("oci://"):
            spec = {
                "interval": interval,
                "url": f"{addon.repository.rstrip('/')}/{addon.chart}",
                "ref": {"tag": addon.version},
                "layerSelector": {"mediaType": HELM_CHART_LAYER, "operation": "copy"},
            }
            source = k8s_object("source.toolkit.fluxcd.io/v1", "OCIRepository", release, labels, namespace=FLUX_NS, spec=spec)
            chart: dict[str, Any] = {"chartRef": {"kind": "OCIRepository", "name": release}}
        else:
            spec = {"interval": interval, "url": addon.repository}
            source = k8s_object("source.toolkit.fluxcd.io/v1", "HelmRepository", release, labels, namespace=FLUX_NS, spec=spec)
            chart_spec = {"chart": addon.chart, "version": addon.version, "sourceRef": {"kind": "HelmRepository", "name": release}}
            chart = {"chart": {"spec": chart_spec}}
        depends = [{"name": RELEASES[d]} for d in _depends_on(names, name)]
        body = {
            "interval": interval,
            "releaseName": release,
            "targetNamespace": addon.namespace,
            "storageNamespace": addon.namespace,
            **chart,
            **({"dependsOn": depends} if depends else {}),
            "install": {"createNamespace": True, "crds": "CreateReplace", "remediation": {"retries": 3}},
            "upgrade": {"crds": "CreateReplace", "remediation": {"retries": 3}},
            "values": helm_values(fleet, index, name, addon),
        }
        helm_release = k8s_object(HELM_RELEASE_API, "HelmRelease", release, labels, namespace=FLUX_NS, spec=body)
        out += [Manifest(source, at), Manifest(helm_release, at)]
        if why.on:
            named, flux_ns = prov.default(f"fleetgen's release name of {name}"), prov.default("Flux's namespace")
            for body in (source, helm_release):
                why.meta(body, named, prov.fleet_labels(), flux_ns)
                why.set(body, ("spec",), prov.default("fleetgen's Helm release settings"))
                why.set(body, ("spec", "interval"), ("gitops", "interval"))
            oci = prov.derived("repository/chart", setting_at(fleet, index, name, "repository"), setting_at(fleet, index, name, "chart"))
            why.set(source, ("spec", "url"), oci if addon.repository.startswith("oci://") else setting_at(fleet, index, name, "repository"))
            why.set(source, ("spec", "ref", "tag"), setting_at(fleet, index, name, "version"))
            for key in ("targetNamespace", "storageNamespace"):
                why.set(helm_release, ("spec", key), setting_at(fleet, index, name, "namespace"))
            why.set(helm_release, ("spec", "chart", "spec", "chart"), setting_at(fleet, index, name, "chart"))
            why.set(helm_release, ("spec", "chart", "spec", "version"), setting_at(fleet, index, name, "version"))
            needs = prov.derived(
                "the Prometheus Operator CRDs come first when enabled", setting_at(fleet, index, "prometheusOperatorCrds", "enabled")
            )
            why.set(helm_release, ("spec", "dependsOn"), needs)
            _record_values(why, helm_release, ("spec", "values"), fleet, index, name)
    return out


def argocd_repo_url(repository: str) -> str:
    """Argo CD names an OCI Helm registry without its scheme (and needs it declared with enableOCI)."""
    return repository.removeprefix("oci://").rstrip("/")


def argocd_add_ons(fleet: Fleet, index: int, project: str, why: Recorder = NOWHERE) -> list[Manifest]:
    """One Application per add-on (Helm source, pinned targetRevision) and a repository Secret per OCI registry."""
    cluster, labels = fleet.clusters[index], fleet_labels(fleet)
    out: list[Manifest] = []
    for name, addon, at in add_ons(fleet, index):
        release = RELEASES[name]
        if addon.repository.startswith("oci://"):
            url = argocd_repo_url(addon.repository)
            secret_labels = {**labels, "argocd.argoproj.io/secret-type": "repository"}
            secret = k8s_object(
                "v1",
                "Secret",
                f"helm-{release}-{cluster.name}",
                secret_labels,
                namespace=ARGOCD_NS,
                annotations={"argocd.argoproj.io/sync-wave": str(WAVES[name] - 1)},
                type="Opaque",
                stringData={"enableOCI": "true", "name": release, "type": "helm", "url": url},
            )
            out.append(Manifest(secret, at))
            if why.on:
                named = prov.derived(f"helm-{release}-<cluster>", ("clusters", index, "name"))
                wave = {"argocd.argoproj.io/secret-type": prov.default("an Argo CD repository"), **prov.fleet_labels()}
                why.meta(secret, named, wave, prov.default("Argo CD's namespace"))
                why.set(secret, ("metadata", "annotations"), prov.default("just before the add-on's sync wave"))
                why.set(secret, ("type",), prov.default("an Argo CD repository Secret"))
                why.set(secret, ("stringData",), prov.default("an OCI Helm repository"))
                why.set(
                    secret, ("stringData", "url"), prov.derived("the registry without oci://", setting_at(fleet, index, name, "repository"))
                )
        source = {
            "repoURL": argocd_repo_url(addon.repository),
            "chart": addon.chart,
            "targetRevision": addon.version,
            "helm": {"releaseName": release, "valuesObject": helm_values(fleet, index, name, addon)},
        }
        app = k8s_object(
            "argoproj.io/v1alpha1",
            "Application",
            f"{release}-{cluster.name}",
            app_labels(fleet, index),
            namespace=ARGOCD_NS,
            annotations={"argocd.argoproj.io/sync-wave": str(WAVES[name])},
            spec={
                "project": project,
                "source": source,
                "destination": destination(fleet, cluster.name, addon.namespace),
                "syncPolicy": sync_policy(["CreateNamespace=true", "ServerSideApply=true"]),
            },
        )
        out.append(Manifest(app, at))
        if why.on:
            named = prov.derived(f"{release}-<cluster>", ("clusters", index, "name"))
            why.meta(app, named, app_label_origins(index), prov.default("Argo CD's namespace"))
            why.set(app, ("metadata", "annotations"), prov.default("the add-on's sync wave"))
            why.set(app, ("spec",), prov.default("fleetgen's Application settings"))
            why.set(app, ("spec", "project"), prov.derived("<fleet>-platform: the add-ons' project", ("metadata", "name")))
            why.set(app, ("spec", "source", "repoURL"), prov.derived("without oci://", setting_at(fleet, index, name, "repository")))
            why.set(app, ("spec", "source", "chart"), setting_at(fleet, index, name, "chart"))
            why.set(app, ("spec", "source", "targetRevision"), setting_at(fleet, index, name, "version"))
            _record_values(why, app, ("spec", "source", "helm", "valuesObject"), fleet, index, name)
            why.set(
                app, ("spec", "destination"), prov.derived("the cluster (hub) or Argo CD's own (in-cluster)", ("clusters", index, "name"))
            )
            why.set(app, ("spec", "destination", "namespace"), setting_at(fleet, index, name, "namespace"))
    return out


def sync_policy(options: list[str]) -> dict[str, Any]:
    """Automated sync that keeps retrying: a child may start before what it needs is healthy."""
    retry = {"limit": 10, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"}}
    return {"automated": {"prune": True, "selfHeal": True}, **({"syncOptions": options} if options else {}), "retry": retry}


def chart_repositories(fleet: Fleet) -> list[str]:
    """Every chart repository some cluster's add-ons come from, as Argo CD names them."""
    return sorted({argocd_repo_url(addon.repository) for index in range(len(fleet.clusters)) for _, addon, _ in add_ons(fleet, index)})

"""The platform add-ons of a cluster as the GitOps engine installs them: Helm charts at pinned versions.

Flux: a HelmRepository (https://) or an OCIRepository (oci://) per add-on and a HelmRelease that
`dependsOn` the releases whose CRDs it uses. Argo CD: an Application with a Helm source per add-on,
its sync wave before the fleet's own Application (waves order the children of the cluster's root
Application). The GPU Operator's `driver.version` is the cluster's version set's driver, so moving a
cluster to another version set is what changes the driver on its nodes.
"""

from __future__ import annotations

from typing import Any

from fleetgen.errors import FieldPath
from fleetgen.model import Fleet
from fleetgen.model.platform import ADD_ONS, AddOn, GpuOperator, Kueue, Platform, cluster_platform
from fleetgen.render.manifest import Manifest, fleet_labels, k8s_object

FLUX_NS, ARGOCD_NS = "flux-system", "argocd"
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
# Argo CD waves of the add-ons; the fleet's own Application is wave 0.
WAVES = {"prometheusOperatorCrds": -2, "kueue": -1, "gpuOperator": -1}
RELEASES = {"prometheusOperatorCrds": "prometheus-operator-crds", "kueue": "kueue", "gpuOperator": "gpu-operator"}


def platform_of(fleet: Fleet, index: int) -> Platform:
    return cluster_platform(fleet.platform, fleet.clusters[index].platform)


def add_ons(fleet: Fleet, index: int) -> list[tuple[str, AddOn, FieldPath]]:
    """(fleet.yaml name, settings, where they are written) of the cluster's enabled add-ons, in install order."""
    platform, own = platform_of(fleet, index), fleet.clusters[index].platform
    found: list[tuple[str, AddOn, FieldPath]] = []
    for name, attr in ADD_ONS:
        addon: AddOn = getattr(platform, attr)
        if addon.enabled:
            at: FieldPath = (
                ("clusters", index, "platform", name) if own is not None and attr in own.model_fields_set else ("platform", name)
            )
            found.append((name, addon, at))
    return found


def helm_values(fleet: Fleet, index: int, name: str, addon: AddOn) -> dict[str, Any]:
    """The chart values fleetgen sets; every key exists in the chart's own values.yaml (a test checks)."""
    monitor_labels = dict(sorted(fleet.alerts.rule_labels.items()))
    if isinstance(addon, GpuOperator):
        policy, drain = addon.driver_upgrade, addon.driver_upgrade.drain
        return {
            "driver": {
                "version": str(fleet.version_sets[fleet.clusters[index].version_set].driver),
                "upgradePolicy": {
                    "autoUpgrade": True,
                    "maxParallelUpgrades": policy.max_parallel_upgrades,
                    "maxUnavailable": policy.max_unavailable,
                    "drain": {
                        "enable": drain.enabled,
                        "force": drain.force,
                        "timeoutSeconds": drain.timeout_seconds,
                        "deleteEmptyDir": drain.delete_empty_dir,
                    },
                },
            },
            # The GPU alerts read DCGM's metrics: the exporter and its ServiceMonitor are always on.
            "dcgmExporter": {"enabled": True, "serviceMonitor": {"enabled": True, "additionalLabels": monitor_labels}},
        }
    if isinstance(addon, Kueue):
        return {"enablePrometheus": True}  # kueue_pending_workloads feeds the pending-workloads alert
    return {}


def _depends_on(names: list[str], name: str) -> list[str]:
    """Add-ons that must be ready first: whatever brings the ServiceMonitor CRD the others use."""
    return ["prometheusOperatorCrds"] if name != "prometheusOperatorCrds" and "prometheusOperatorCrds" in names else []


def flux_add_ons(fleet: Fleet, index: int) -> list[Manifest]:
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
        helm_release = k8s_object("helm.toolkit.fluxcd.io/v2", "HelmRelease", release, labels, namespace=FLUX_NS, spec=body)
        out += [Manifest(source, at), Manifest(helm_release, at)]
    return out


def argocd_repo_url(repository: str) -> str:
    """Argo CD names an OCI Helm registry without its scheme (and needs it declared with enableOCI)."""
    return repository.removeprefix("oci://").rstrip("/")


def argocd_add_ons(fleet: Fleet, index: int, project: str) -> list[Manifest]:
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
            labels,
            namespace=ARGOCD_NS,
            annotations={"argocd.argoproj.io/sync-wave": str(WAVES[name])},
            spec={
                "project": project,
                "source": source,
                "destination": {"name": cluster.name, "namespace": addon.namespace},
                "syncPolicy": sync_policy(["CreateNamespace=true", "ServerSideApply=true"]),
            },
        )
        out.append(Manifest(app, at))
    return out


def sync_policy(options: list[str]) -> dict[str, Any]:
    """Automated sync that keeps retrying: a child may start before what it needs is healthy."""
    retry = {"limit": 10, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"}}
    return {"automated": {"prune": True, "selfHeal": True}, **({"syncOptions": options} if options else {}), "retry": retry}


def chart_repositories(fleet: Fleet) -> list[str]:
    """Every chart repository some cluster's add-ons come from, as Argo CD names them."""
    return sorted({argocd_repo_url(addon.repository) for index in range(len(fleet.clusters)) for _, addon, _ in add_ons(fleet, index)})

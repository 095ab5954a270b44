"""Checks of what a team is given on its clusters besides quota: registries it pulls from, its volumes and storage quotas.

- Each image a cluster's JupyterHub offers needs CUDA its driver fully supports (minor-version compatibility
  is refused: notebooks JIT-compile PTX); an error at the image's `cuda`.
- A cluster whose Kubernetes serves no ValidatingAdmissionPolicy v1 (before 1.30) gets no registry policy:
  a warning there says so (`job new` still refuses other images; docs/how-to/onboard-team.md).
- A volume's storage class is one the cluster declares (or the cluster declares a default), and supports
  the volume's access mode; a storage quota names a declared class; the volumes of a class fit the
  team's storage quota of that class, and their number its claim quota (else the engine's apply of a
  claim is refused by the team's own ResourceQuota).
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from fleetgen.compat.rules import cuda_on_driver
from fleetgen.errors import FieldPath, Finding, Severity
from fleetgen.model import Cluster, Fleet, Team
from fleetgen.model.registries import POLICY_SERVED_FROM, image_allowed, policy_served
from fleetgen.model.storage import storage_class_of


def check_registries_served(fleet: Fleet) -> Iterator[Finding]:
    for i, cluster in enumerate(fleet.clusters):
        held = [team.name for _, team in fleet.placements[cluster.name] if fleet.registries_of(team)]
        versions = fleet.version_sets.get(cluster.version_set)
        if held and versions is not None and not policy_served(versions.kubernetes):
            runs = versions.kubernetes
            # fix: Upgrade the cluster to that Kubernetes release (until then only job new refuses other images)
            yield Finding(
                ("clusters", i, "versionSet"),
                f"the registries of {', '.join(held)} are not enforced on {cluster.name}: ValidatingAdmissionPolicy "
                f"(admissionregistration.k8s.io/v1) needs Kubernetes {POLICY_SERVED_FROM} or later, it runs {runs}; "
                "`job new` still refuses other images",
                Severity.WARNING,
            )


def check_storage_classes(fleet: Fleet) -> Iterator[Finding]:
    for i, cluster in enumerate(fleet.clusters):
        defaults = [c for c, sc in enumerate(cluster.storage_classes) if sc.default]
        for c in defaults[1:]:
            # fix: Keep default: true on one storage class of the cluster only
            yield Finding(("clusters", i, "storageClasses", c, "default"), f"{cluster.name} already has a default storage class")
    clusters = {c.name: c for c in fleet.clusters}
    for t, team in enumerate(fleet.teams):
        for name in team.clusters:
            if name in clusters:
                yield from _team_storage(team, ("teams", t), clusters[name])


def _declared(cluster: Cluster) -> str:
    names = [sc.name for sc in cluster.storage_classes]
    return f"(it declares {', '.join(names)})" if names else "(it declares none: list them under its storageClasses)"


def _team_storage(team: Team, at: FieldPath, cluster: Cluster) -> Iterator[Finding]:
    classes = {sc.name: sc for sc in cluster.storage_classes}
    placement = team.clusters.get(cluster.name)
    quota = team.quota_on(cluster.name)
    for name in quota.storage:
        if name not in classes:
            own = placement is not None and name in placement.storage
            where = (*at, "clusters", cluster.name, "storage", name) if own else (*at, "quota", "storage", name)
            # fix: Name a class the cluster declares (clusters[].storageClasses), or declare it there
            yield Finding(where, f"storage class {name!r} is not one {cluster.name} declares {_declared(cluster)}")
    volumes = team.volumes_on(cluster.name)
    by_class: dict[str, Fraction] = {}
    for v, volume in enumerate(volumes):
        here = (*at, "clusters", cluster.name, "volumes", v)
        chosen = storage_class_of(cluster.storage_classes, volume)
        if chosen is None:
            # fix: Name the volume's storageClass, or mark one of the cluster's classes default
            yield Finding(here, f"volume {volume.name} names no storageClass and {cluster.name} has no default one {_declared(cluster)}")
            continue
        if chosen not in classes:
            # fix: Name a class the cluster declares (clusters[].storageClasses), or declare it there
            yield Finding(here + ("storageClass",), f"storage class {chosen!r} is not one {cluster.name} declares {_declared(cluster)}")
            continue
        if volume.access_mode not in classes[chosen].access_modes:
            modes = ", ".join(classes[chosen].access_modes)
            # fix: Use an access mode the class offers, or a class that offers it
            yield Finding(here + ("accessMode",), f"storage class {chosen} on {cluster.name} offers {modes}, not {volume.access_mode}")
        by_class[chosen] = by_class.get(chosen, Fraction(0)) + volume.size.value
    for name, total in by_class.items():
        cap = quota.storage.get(name)
        if cap is not None and total > cap.value:
            sizes = ", ".join(f"{v.name} {v.size}" for v in volumes if storage_class_of(cluster.storage_classes, v) == name)
            # fix: Raise the team's storage quota of the class, or make the volumes smaller
            yield Finding(
                (*at, "clusters", cluster.name, "volumes"),
                f"volumes of class {name} on {cluster.name} add up to more than the team's {cap} storage quota of it ({sizes})",
            )
    claims = quota.persistent_volume_claims
    if claims is not None and len(volumes) > claims:
        # fix: Raise the team's quota.persistentVolumeClaims, or drop volumes
        yield Finding(
            (*at, "clusters", cluster.name, "volumes"),
            f"{len(volumes)} volumes on {cluster.name}, above the team's quota of {claims} persistentVolumeClaims",
        )


def check_notebook_images(fleet: Fleet) -> Iterator[Finding]:
    """Each image a cluster's JupyterHub offers runs on the cluster's driver (the compatibility matrix); refused at its CUDA line."""
    for i, cluster in enumerate(fleet.clusters):
        hub = fleet.platform_of(cluster).jupyterhub
        versions = fleet.version_sets.get(cluster.version_set)
        if not hub.enabled or versions is None:
            continue
        own = cluster.platform is not None and "images" in cluster.platform.jupyterhub.model_fields_set
        listed: FieldPath = ("clusters", i, "platform", "jupyterhub", "images") if own else ("platform", "jupyterhub", "images")
        for n, image in enumerate(hub.images):
            refused = [team.name for _, team in fleet.placements[cluster.name] if not _may_pull(fleet, team, image.image)]
            if refused:
                teams = ", ".join(refused)
                message = f"notebook image {image.image} is not from the registries of {teams}, whose notebooks on {cluster.name} offer it"
                # fix: Add the image's registry to those teams' registries (or the fleet's), or offer another image
                yield Finding(listed + (n, "image"), message)
            problem = cuda_on_driver(image.cuda, versions.driver)
            if problem is None:
                continue
            # Minor-version compatibility is not enough for a notebook: PyTorch's and Triton's JIT compile PTX, which fails there.
            severity = Severity.WARNING if problem.field == "cuda" else Severity.ERROR
            needs = "; a notebook needs full support" if "minor-version" in problem.message else ""
            # fix: Offer an image whose CUDA the cluster's driver fully supports, or upgrade the driver first
            yield Finding(
                listed + (n, "cuda"), f"notebook image {image.name} ({image.image}) on {cluster.name}: {problem.message}{needs}", severity
            )


def _may_pull(fleet: Fleet, team: Team, image: str) -> bool:
    registries = fleet.registries_of(team)
    return not registries or image_allowed(image, registries)


ONBOARDING_CHECKS = (check_registries_served, check_storage_classes, check_notebook_images)

"""Compatibility rules over a version set, and the fleet policy across clusters.

Pure functions of the model and the facts: the validator and the upgrade planner both ask them,
the planner for every intermediate state of every cluster.
"""

from collections import Counter
from collections.abc import Iterator
from typing import NamedTuple

from fleetgen.compat.cuda_images import cuda_image, cuda_images
from fleetgen.compat.facts import Facts, facts
from fleetgen.errors import Finding, Severity
from fleetgen.model import Fleet, Version, VersionSet


class Problem(NamedTuple):
    """A rule a version set breaks: which of its fields, why, and how bad."""

    field: str
    message: str
    severity: Severity = Severity.ERROR


def _minor(version: Version) -> Version:
    return Version(".".join(str(p) for p in version.minor))


def version_set_problems(vs: VersionSet, gpu_models: frozenset[str] = frozenset(), data: Facts | None = None) -> list[Problem]:
    data = data or facts()
    return [
        *_cuda_driver(vs, data),
        *_cudnn(vs, data),
        *_gpus(vs, gpu_models, data),
        *_containerd(vs, data),
        *_containerd_end_of_life(vs, data),
        *_kubernetes(vs, data),
    ]


def _cuda_driver(vs: VersionSet, data: Facts) -> Iterator[Problem]:
    problem = cuda_on_driver(vs.cuda, vs.driver, data)
    if problem is not None:
        yield problem


def cuda_on_driver(cuda: Version, driver: Version, data: Facts | None = None) -> Problem | None:
    """Whether `driver` runs code built for `cuda` (a version set's, or a notebook image's): None when fully supported;
    a warning through minor-version compatibility or without data; an error when the driver is too old."""
    data = data or facts()
    row = next((r for r in data.cuda_driver if r.cuda == _minor(cuda)), None)
    if row is None:
        return Problem("cuda", f"no compatibility data for CUDA {cuda}; its driver requirement is not checked", Severity.WARNING)
    if driver >= row.min_driver:
        return None
    floor = next((r for r in data.cuda_minor_compat if r.cuda_major == cuda.parts[0]), None)
    if floor is not None and driver >= floor.min_driver:
        return Problem(
            "driver",
            f"driver {driver} runs CUDA {cuda} only through minor-version compatibility "
            f"(full support needs {row.min_driver} or later; PTX JIT and newer features fail) [{row.source}]",
            Severity.WARNING,
        )
    return Problem("driver", f"driver {driver} is too old for CUDA {cuda}: it needs {row.min_driver} or later [{row.source}]")


def _cudnn(vs: VersionSet, data: Facts) -> Iterator[Problem]:
    cudnn, cuda = _minor(vs.cudnn), _minor(vs.cuda)
    rows = [r for r in data.cudnn_cuda if r.cudnn == cudnn]
    if not rows:
        yield Problem("cudnn", f"no compatibility data for cuDNN {vs.cudnn}; its CUDA range is not checked", Severity.WARNING)
    elif not any(r.cuda_min <= cuda <= r.cuda_max for r in rows):
        ranges = ", ".join(f"{r.cuda_min}-{r.cuda_max}" for r in rows)
        yield Problem("cudnn", f"cuDNN {vs.cudnn} does not support CUDA {vs.cuda} (it supports {ranges}) [{rows[0].source}]")


def _gpus(vs: VersionSet, gpu_models: frozenset[str], data: Facts) -> Iterator[Problem]:
    known = {r.gpu.lower(): r for r in data.gpu_models}
    for gpu in sorted(gpu_models):
        row = known.get(gpu.lower())
        if row is None:
            yield Problem("driver", f"no compatibility data for GPU {gpu}; its driver and CUDA needs are not checked", Severity.WARNING)
            continue
        if vs.driver < row.min_driver:
            yield Problem("driver", f"{gpu} needs driver {row.min_driver} or later, not {vs.driver} [{row.source}]")
        if vs.cuda < row.min_cuda:
            yield Problem("cuda", f"{gpu} (compute capability {row.compute_capability}) needs CUDA {row.min_cuda} or later [{row.source}]")


def _containerd(vs: VersionSet, data: Facts) -> Iterator[Problem]:
    minor = _minor(vs.kubernetes)
    rows = [r for r in data.containerd_kubernetes if r.kubernetes == minor]
    if not rows:
        yield Problem("containerd", f"no containerd data for Kubernetes {minor}; not checked", Severity.WARNING)
        return
    line = _minor(vs.containerd)
    row = next((r for r in rows if _minor(r.containerd) == line), None)
    supported = ", ".join(f"{r.containerd}+" for r in rows)
    if row is None:
        yield Problem(
            "containerd", f"containerd {vs.containerd} is not supported on Kubernetes {minor} (supported: {supported}) [{rows[0].source}]"
        )
    elif len(vs.containerd.parts) > 2 and vs.containerd < row.containerd:  # "1.7" names the release line
        yield Problem(
            "containerd",
            f"containerd {vs.containerd} is below {row.containerd}, the first {line} patch for Kubernetes {minor} [{row.source}]",
        )


def _containerd_end_of_life(vs: VersionSet, data: Facts) -> Iterator[Problem]:
    line = _minor(vs.containerd)
    row = next((r for r in data.containerd_releases if _minor(r.containerd) == line), None)
    if row is not None and row.end_of_life < data.as_of:
        yield Problem(
            "containerd",
            f"containerd {line} reached end of life on {row.end_of_life} (data as of {data.as_of}); "
            f"move to a supported release line [{row.source}]",
            Severity.WARNING,
        )


def _kubernetes(vs: VersionSet, data: Facts) -> Iterator[Problem]:
    minor = _minor(vs.kubernetes)
    oldest = min(r.kubernetes for r in data.kubernetes_releases)
    row = next((r for r in data.kubernetes_releases if r.kubernetes == minor), None)
    if minor < oldest:
        yield Problem("kubernetes", f"Kubernetes {minor} is older than {oldest}, the oldest minor fleetgen's data and schemas cover")
    elif row is not None and row.end_of_life < data.as_of:
        yield Problem(
            "kubernetes",
            f"Kubernetes {minor} reached upstream end of life on {row.end_of_life} (data as of {data.as_of}); "
            f"plan the upgrade unless your provider extends support [{row.source}]",
            Severity.WARNING,
        )


def removed_api(api_version: str, kind: str, kubernetes: Version, data: Facts | None = None) -> str | None:
    """Why `api_version` `kind` cannot be applied to this Kubernetes version, or None."""
    for row in (data or facts()).removed_apis:
        if row.api_version == api_version and row.kind in ("*", kind) and kubernetes.minor >= row.removed_in.minor:
            return f"{api_version} {kind} is no longer served since Kubernetes {row.removed_in}; use {row.replacement} [{row.source}]"
    return None


def check_compatibility(fleet: Fleet, data: Facts | None = None) -> Iterator[Finding]:
    """Every version set a cluster uses, against the facts (the shipped ones unless given) and the GPUs of the clusters using it."""
    for name, vs in fleet.version_sets.items():
        users = [c for c in fleet.clusters if c.version_set == name]
        if not users:
            continue
        gpus = frozenset(p.gpu_model for c in users for p in c.node_pools if p.gpu_model)
        for problem in version_set_problems(vs, gpus, data):
            # fix: Change the version set so that the rule holds (the message names it and its source)
            yield Finding(("versionSets", name, problem.field), problem.message, problem.severity)
        if cuda_image(vs.cuda) is None:  # the fleet is fine; the dev container of its teams is what has no image
            known = ", ".join(str(row.cuda) for row in cuda_images().images)
            message = f"no CUDA image is known for CUDA {vs.cuda}: `fleetgen team devcontainer` refuses its clusters (known: {known})"
            # fix: Use a CUDA version fleetgen knows an image for, or add one in a facts file
            yield Finding(("versionSets", name, "cuda"), message, Severity.NOTE)


def check_fleet_policy(fleet: Fleet) -> Iterator[Finding]:
    """Production clusters on identical versions; dev and staging at most one Kubernetes minor ahead.

    While an upgrade is rolling out (fleet.yaml records it) clusters differ on purpose: warnings."""
    rolling = fleet.upgrade is not None and not fleet.upgrade.complete
    for finding in _fleet_policy(fleet):
        if rolling:
            pending = next(w.wave for w in fleet.upgrade.waves if w.applied_at is None)  # type: ignore[union-attr]
            # fix: Finish the upgrade: apply the next wave
            yield Finding(finding.path, f"{finding.message} (upgrade in progress, wave {pending} next)", Severity.WARNING)
        else:
            yield finding


def _fleet_policy(fleet: Fleet) -> Iterator[Finding]:
    sets = fleet.version_sets
    production = [(i, c) for i, c in enumerate(fleet.clusters) if c.environment == "production" and c.version_set in sets]

    def values(name: str) -> tuple[Version, ...]:
        vs = sets[name]
        return (vs.kubernetes, vs.driver, vs.cuda, vs.cudnn, vs.containerd)

    if production:
        common = Counter(values(c.version_set) for _, c in production).most_common(1)[0][0]
        reference = next(c for _, c in production if values(c.version_set) == common)
        for i, cluster in production:
            if values(cluster.version_set) != common:
                # fix: Move the production clusters to one version set (fleetgen upgrade plan)
                yield Finding(
                    ("clusters", i, "versionSet"),
                    f"production clusters must run identical versions: {cluster.version_set!r} differs from "
                    f"{reference.version_set!r} of {reference.name}",
                )
        floor = min(sets[c.version_set].kubernetes.minor for _, c in production)
        for i, cluster in enumerate(fleet.clusters):
            if cluster.environment != "production" and cluster.version_set in sets:
                minor = sets[cluster.version_set].kubernetes.minor
                if minor[0] == floor[0] and minor[1] > floor[1] + 1:
                    # fix: Upgrade production first, or keep the cluster within one minor of it
                    yield Finding(
                        ("clusters", i, "versionSet"),
                        f"{cluster.environment} may run at most one Kubernetes minor ahead of production "
                        f"({floor[0]}.{floor[1]}), not {minor[0]}.{minor[1]}",
                    )

"""The newest version set the facts fully support: what `fleetgen init` starts a fleet on.

A hard-coded starter version set goes stale: the one `init` wrote warned on a new repository's first
`validate` once its containerd line reached end of life. This one is read from the facts instead:
the newest Kubernetes minor still supported at the facts' date, the newest containerd line supported on
it and still supported, the newest driver the GPU Operator release supports, the newest CUDA toolkit that
driver fully supports and the newest cuDNN for that CUDA. Only confirmed version rows count (a `provisional` row
is not full support), and the result breaks no rule of rules.py: no error, no warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fleetgen.compat.facts import Facts, facts
from fleetgen.compat.gpu_operator import OperatorFacts, operator_release
from fleetgen.compat.rules import version_set_problems
from fleetgen.model import Version, VersionSet

# The version tables; a provisional row there is not full support (the GPUs are the fleet's own choice).
_TABLES = ("cuda_driver", "cudnn_cuda", "containerd_kubernetes", "containerd_releases", "kubernetes_releases")


def _first_release(minor: Version) -> Version:
    """1.36 -> 1.36.0: the facts know release lines; the first release of one is a real version of it."""
    return Version(".".join(str(p) for p in (*minor.minor, 0)))


def _candidates(confirmed: Facts, drivers: tuple[Version, ...]) -> Iterator[VersionSet]:
    """Version sets newest first (Kubernetes, then containerd, driver, CUDA, cuDNN), each release line one whose
    end of life the facts know and which has not passed."""
    supported_lines = {r.containerd.minor for r in confirmed.containerd_releases if r.end_of_life >= confirmed.as_of}
    kubernetes = sorted((r.kubernetes for r in confirmed.kubernetes_releases if r.end_of_life >= confirmed.as_of), reverse=True)
    for minor in kubernetes:
        on_it = [r.containerd for r in confirmed.containerd_kubernetes if r.kubernetes.minor == minor.minor]
        for containerd in sorted((c for c in on_it if c.minor in supported_lines), reverse=True):
            for driver in sorted(drivers, reverse=True):
                for cuda in sorted((r.cuda for r in confirmed.cuda_driver if r.min_driver <= driver), reverse=True):
                    cudnns = sorted({r.cudnn for r in confirmed.cudnn_cuda if r.cuda_min <= cuda <= r.cuda_max}, reverse=True)
                    for cudnn in cudnns:
                        yield VersionSet(
                            kubernetes=_first_release(minor),
                            driver=driver,
                            cuda=cuda,
                            cudnn=_first_release(cudnn),
                            containerd=containerd,
                        )


def newest_supported(
    gpu_models: frozenset[str], gpu_operator: str, data: Facts | None = None, operators: OperatorFacts | None = None
) -> VersionSet:
    """The newest version set the facts fully support for these GPUs, its driver one that GPU Operator `gpu_operator` supports."""
    data = data or facts()
    release = operator_release(gpu_operator, operators)
    if release is None:
        raise ValueError(f"no driver facts for GPU Operator {gpu_operator}")
    tables: dict[str, Any] = {table: tuple(r for r in getattr(data, table) if not r.provisional) for table in _TABLES}
    confirmed = data._replace(**tables)
    for candidate in _candidates(confirmed, release.drivers):
        if not version_set_problems(candidate, gpu_models, confirmed):
            return candidate
    raise ValueError(f"the facts fully support no version set for {sorted(gpu_models)} on GPU Operator {gpu_operator}")

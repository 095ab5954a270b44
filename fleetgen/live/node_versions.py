"""The kubelet and container runtime versions a Node reports, as each Kubernetes distribution writes them.

`status.nodeInfo.kubeletVersion` is upstream's `v1.30.1` on AKS and kubeadm clusters; the distributions append
their own build to it: EKS `v1.31.4-eks-2d5f260`, GKE `v1.30.5-gke.1156000`, k3s `v1.29.1+k3s2`, RKE2
`v1.30.1+rke2r1`, OpenShift `v1.27.8+4fab27b` (the commit of its Kubernetes fork). `containerRuntimeVersion` is
`<runtime>://<version>`: AKS `containerd://1.7.15-1` (the package revision), EKS `containerd://1.7.22`, k3s and
RKE2 `containerd://1.7.11-k3s2`, OpenShift `cri-o://1.27.1-6.rhaos4.14.git38e9d75.el9`.

Each reader returns the upstream release inside, or None when the text is none of these forms. A suffix is
accepted only in a form a distribution writes, so a pre-release (`v1.31.0-rc.1`) is never read as the release.
A None is not a pass: the node checks report the node as one they cannot verify.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleetgen.model import Version

_RELEASE = r"v?(?P<release>\d+\.\d+\.\d+)"
# What each distribution appends to the upstream kubelet release.
_KUBELET_BUILDS = (
    r"",  # upstream, AKS, kubeadm
    r"-eks-[0-9a-f]{7,40}",  # EKS
    r"-gke\.\d+",  # GKE
    r"\+k3s\d+",  # k3s
    r"\+rke2r\d+",  # RKE2
    r"\+[0-9a-f]{7,40}",  # OpenShift
)
_KUBELET = re.compile(_RELEASE + "(?:" + "|".join(_KUBELET_BUILDS) + ")")
# A runtime's own packaging after the release: a package revision (-1, -0ubuntu1~22.04.1), a k3s build (-k3s2), a
# GKE or Bottlerocket build (-gke.0, +bottlerocket), OpenShift's (-6.rhaos4.14.git38e9d75.el9). Never rc/alpha/beta.
_RUNTIME = re.compile(r"(?P<runtime>[a-z][a-z0-9-]*)://" + _RELEASE + r"(?P<build>[-+~][0-9A-Za-z.+~_-]*)?")
_PRE_RELEASE = re.compile(r"[-+~.](rc|alpha|beta|pre)", re.IGNORECASE)


@dataclass(frozen=True)
class Runtime:
    name: str  # containerd, cri-o, docker
    version: Version


def kubelet_version(text: object) -> Version | None:
    """The upstream Kubernetes release in a kubeletVersion, or None when it is in no form a distribution writes."""
    match = _KUBELET.fullmatch(text) if isinstance(text, str) and len(text) <= 100 else None
    return Version(match["release"]) if match else None


def runtime_version(text: object) -> Runtime | None:
    """The runtime and its upstream release in a containerRuntimeVersion, or None when it cannot be read."""
    match = _RUNTIME.fullmatch(text) if isinstance(text, str) and len(text) <= 100 else None
    if match is None or _PRE_RELEASE.match(match["build"] or ""):
        return None
    return Runtime(match["runtime"], Version(match["release"]))

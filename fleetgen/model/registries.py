"""Container registries: where a team's images may come from.

A registry is a host (with a port, or `localhost`) and optionally a path below it: `contoso.azurecr.io`
allows every repository there, `ghcr.io/contoso` only those under `ghcr.io/contoso/`. The host must
name itself as a host (a dot, a port or `localhost`): a bare word is a Docker Hub user, which an image
can only be refused or allowed by the full `docker.io/<user>` form.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from fleetgen.model.types import Version

_HOST_PART = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
_HOST = rf"(localhost|{_HOST_PART}(\.{_HOST_PART})+|{_HOST_PART}:[0-9]{{1,5}})(:[0-9]{{1,5}})?"
_PATH = r"(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*"  # the distribution spec's path components
REGISTRY_PATTERN = f"^{_HOST}{_PATH}$"

POLICY_SERVED_FROM = Version("1.30")  # admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy went GA in Kubernetes 1.30


def policy_served(kubernetes: Version) -> bool:
    """Whether a cluster of this Kubernetes version serves the admission policy that holds images to registries."""
    return kubernetes.minor >= POLICY_SERVED_FROM.minor


Registry = Annotated[str, StringConstraints(pattern=REGISTRY_PATTERN, max_length=255)]


def image_allowed(image: str, registries: tuple[str, ...]) -> bool:
    """Whether `image` comes from one of `registries`: it names the registry, then a '/' (so `ghcr.io/contoso` does not
    allow `ghcr.io/contoso-evil/x`, nor `contoso.azurecr.io` allow `contoso.azurecr.io.evil.example/x`).

    Short names (`python:3.12`) name no registry; the container runtime resolves them to Docker Hub, so they are
    allowed only as `docker.io/library/python:3.12`. The admission policy (render/registries.py) says the same in CEL."""
    return any(image.startswith(registry + "/") for registry in registries)

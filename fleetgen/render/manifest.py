"""The rendered objects: plain dicts built in canonical key order, each tied to its fleet.yaml field."""

from typing import Any, NamedTuple

from fleetgen.errors import FieldPath
from fleetgen.model import Fleet, Quantity, Team

MANAGED_BY = {"app.kubernetes.io/managed-by": "fleetgen"}


class ObjectKey(NamedTuple):
    """How fleetgen names an object everywhere (render, check, diff, drift): kind, namespace, name."""

    kind: str
    namespace: str  # "" for cluster-scoped objects
    name: str

    @classmethod
    def of(cls, body: dict[str, Any]) -> "ObjectKey":
        """The key of a rendered object (trusted: built by fleetgen, so its fields have their types)."""
        meta = body["metadata"]
        return cls(body["kind"], meta.get("namespace", ""), meta["name"])

    @property
    def title(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


class Manifest(NamedTuple):
    """One Kubernetes object and the fleet.yaml path of the value that produced it."""

    body: dict[str, Any]
    source: FieldPath

    @property
    def key(self) -> ObjectKey:
        return ObjectKey.of(self.body)


def k8s_object(
    api_version: str,
    kind: str,
    name: str,
    labels: dict[str, str],
    *,
    namespace: str | None = None,
    annotations: dict[str, str] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """apiVersion, kind and metadata first, then the fields in the order given."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(sorted(labels.items()))
    if annotations:
        metadata["annotations"] = dict(sorted(annotations.items()))
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def team_labels(fleet: Fleet, team: Team) -> dict[str, str]:
    """The cost-attribution labels of the seed, on every object of a team."""
    return {
        "team": team.name,
        "project": team.project,
        "cost-center": team.cost_center,
        "app.kubernetes.io/part-of": fleet.metadata.name,
        **MANAGED_BY,
    }


def fleet_labels(fleet: Fleet) -> dict[str, str]:
    """Cost attribution for fleet-wide objects: they belong to the platform owner."""
    meta = fleet.metadata
    return {
        "team": meta.owner,
        "project": meta.name,
        "cost-center": meta.cost_center,
        "app.kubernetes.io/part-of": meta.name,
        **MANAGED_BY,
    }


def quantity_value(quantity: Quantity) -> int | str:
    """Whole numbers as integers (nominalQuota: 128), everything else as written (512Gi)."""
    return int(quantity.text) if quantity.text.isdigit() else quantity.text

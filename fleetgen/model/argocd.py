"""How an Argo CD fleet is laid out (`gitops.argocd`): one hub Argo CD or one inside each cluster."""

from typing import Literal

from pydantic import model_validator

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Bool


class ArgoCd(Spec):
    mode: Literal["hub", "in-cluster"] = "hub"
    """hub: one Argo CD on a cluster of its own syncs every cluster of the fleet, each registered in it
    under its fleet.yaml name, and one ApplicationSet generates each cluster's root Application.
    in-cluster: every cluster runs its own Argo CD, bootstrapped from clusters/<name>/argocd/."""
    application_health: Literal["render", "yours"] = "render"
    """render: fleetgen renders argocd-cm's health check of argoproj.io/Application (one key, applied
    server-side), so a sync wave of Applications waits until the one before is healthy; yours: your Argo
    CD configuration carries that key (validate notes that the waves depend on it)."""
    progressive_sync: Bool = False
    """hub only: the ApplicationSet syncs the clusters' root Applications in rollout waves (RollingSync,
    canary first); the ApplicationSet controller must run with progressive syncs enabled, or the roots
    are never synced."""

    @model_validator(mode="after")
    def _progressive_needs_hub(self) -> "ArgoCd":
        if self.progressive_sync and self.mode != "hub":
            # fix: Set gitops.argocd.mode: hub, or drop progressiveSync
            raise ValueError("progressiveSync needs mode hub: only the hub's ApplicationSet can roll the clusters out in waves")
        return self

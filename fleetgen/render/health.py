"""When the GPU objects are healthy, in each engine's own terms: Flux's CEL health checks, Argo CD's Lua ones.

"Synced" says the objects were applied; these say the queues admit and the drivers are up:

- Kueue's ClusterQueue, LocalQueue, AdmissionCheck and MultiKueueCluster: healthy when their condition `Active` is
  True (Kueue's reason Ready, or Active for a MultiKueueCluster that reached its worker), failed when it is False
  (a flavor or admission check missing, a worker out of reach), in progress before Kueue writes it.
- The GPU Operator's ClusterPolicy (nvidia.com/v1) and NVIDIADriver (nvidia.com/v1alpha1): healthy when
  `status.state` is ready, failed when the operator ignores the object (a second ClusterPolicy) or an NVIDIADriver is
  disabled (the ClusterPolicy does not use the NVIDIADriver API), in progress while notReady.

Flux (`Kustomization.spec.healthCheckExprs`, kustomize-controller v1.5 and later): the object's top-level fields are
the CEL variables; the controller evaluates inProgress, then failed, then current, the first that is true decides,
and none true is in progress. An expression that fails to evaluate (a field that is not there) makes the object's
health unknown until the timeout. So every expression guards each field below `status` with has(), and inProgress
is true while no controller has written the status yet (no `status` subresource entry in managedFields): then the
other two, which read `status`, are not evaluated. Argo CD (`argocd-cm` `resource.customizations.health.<group>_<kind>`)
runs the Lua with the object as `obj` and reads {status, message}: Healthy, Degraded, or Progressing.
"""

from typing import NamedTuple

KUEUE_VERSION = "kueue.x-k8s.io/v1beta2"

# No status written yet: no managedFields entry for the status subresource (every kind here has one). When the
# object carries no managedFields at all this is false, and the expressions below see the status as it is.
NO_STATUS_YET = "has(metadata.managedFields) && !metadata.managedFields.exists(m, has(m.subresource) && m.subresource == 'status')"


def _condition(status: str) -> str:
    return f"has(status.conditions) && status.conditions.exists(c, c.type == 'Active' && c.status == '{status}')"


def _state_in(states: tuple[str, ...]) -> str:
    listed = ", ".join(f"'{state}'" for state in states)
    return f"has(status.state) && status.state in [{listed}]"


ACTIVE_LUA = """\
-- fleetgen: Kueue's condition Active says whether the object admits (or, for a MultiKueueCluster, reaches its worker)
local hs = {status = "Progressing", message = "waiting for Kueue to report the condition Active"}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
for _, condition in ipairs(obj.status.conditions) do
  if condition.type == "Active" then
    if condition.status == "True" then
      hs.status = "Healthy"
    elseif condition.status == "False" then
      hs.status = "Degraded"
    end
    hs.message = (condition.reason or "") .. ": " .. (condition.message or "")
    return hs
  end
end
return hs
"""

STATE_LUA = """\
-- fleetgen: the GPU Operator's status.state says whether the driver and its operands are up
local hs = {status = "Progressing", message = "waiting for the GPU Operator to report its state"}
if obj.status == nil or obj.status.state == nil then
  return hs
end
local state = obj.status.state
if state == "ready" then
  hs.status = "Healthy"
elseif FAILED[state] then
  hs.status = "Degraded"
end
hs.message = "state " .. state
return hs
"""


class Health(NamedTuple):
    """How both engines judge one kind: its CEL expressions (Flux) and its Lua script (Argo CD)."""

    api_version: str
    kind: str
    current: str
    failed: str
    lua: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def argocd_key(self) -> str:
        return f"resource.customizations.health.{self.group}_{self.kind}"

    def flux(self) -> dict[str, str]:
        """One entry of Kustomization.spec.healthCheckExprs."""
        expressions = {"inProgress": NO_STATUS_YET, "failed": self.failed, "current": self.current}
        return {"apiVersion": self.api_version, "kind": self.kind, **expressions}


def _state(api_version: str, kind: str, failed: tuple[str, ...]) -> Health:
    table = "local FAILED = {" + ", ".join(f'["{state}"] = true' for state in failed) + "}\n"
    return Health(api_version, kind, _state_in(("ready",)), _state_in(failed), table + STATE_LUA)


KUEUE: tuple[Health, ...] = tuple(
    Health(KUEUE_VERSION, kind, _condition("True"), _condition("False"), ACTIVE_LUA)
    for kind in ("ClusterQueue", "LocalQueue", "AdmissionCheck", "MultiKueueCluster")
)
GPU_OPERATOR: tuple[Health, ...] = (
    _state("nvidia.com/v1", "ClusterPolicy", ("ignored",)),
    _state("nvidia.com/v1alpha1", "NVIDIADriver", ("ignored", "disabled")),
)
HEALTH: tuple[Health, ...] = KUEUE + GPU_OPERATOR
# What the fleet's own folder may apply (the ClusterPolicy is the GPU Operator chart's, checked with the platform).
FLEET_FOLDER: tuple[Health, ...] = tuple(h for h in HEALTH if h.kind != "ClusterPolicy")
CLUSTER_POLICY_NAME = "cluster-policy"  # the ClusterPolicy the GPU Operator chart creates


def flux_checks(kinds: tuple[Health, ...]) -> list[dict[str, str]]:
    return [health.flux() for health in kinds]


def argocd_checks() -> dict[str, str]:
    """argocd-cm's keys: one Lua health check per kind, keyed by group and kind."""
    return {health.argocd_key: health.lua for health in HEALTH}

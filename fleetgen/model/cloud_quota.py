"""fleet.yaml's cloud accounts: the subscriptions the clusters run in, and each region's quota per VM family.

The first layer of the quota stack ("Azure subscription: regional vCPU quotas"): a node pool can only
grow to `maxNodes` if its VM family's vCPU quota in the cluster's region holds every pool of that family.
"""

from typing import Annotated

from pydantic import Field

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Identifier, Int, unique_by
from fleetgen.model.types import DnsLabel


class FamilyQuota(Spec):
    vcpus: Int = Field(ge=0)
    """The family's vCPU quota in the region, as `az vm list-usage` shows its limit."""
    gpus: Int | None = Field(default=None, ge=0)
    """The family's GPU quota, where a cloud states one (Azure states vCPUs only)."""


class RegionQuota(Spec):
    families: dict[Identifier, FamilyQuota] = {}
    """Quota per VM family, named as the cloud names it (standardNDSH100v5Family or "Standard NDASv4_A100 Family")."""
    spot_vcpus: Int | None = Field(default=None, ge=0)
    """The region's spot (low-priority) vCPU quota, which every spot pool counts against instead of its family's."""


class CloudAccount(Spec):
    name: Identifier
    """The cloud account or subscription, as you name it (a subscription's name or id)."""
    clusters: Annotated[tuple[DnsLabel, ...], unique_by()] = Field(min_length=1)
    """The clusters whose node pools run in this account."""
    regions: dict[DnsLabel, RegionQuota] = Field(min_length=1)
    """Quotas by region (a cluster's `region`)."""

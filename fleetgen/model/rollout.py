"""How version upgrades roll out (soak, wave size, windows, freezes), and the upgrade in progress."""

import datetime
import re
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, WithJsonSchema

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Identifier, Int, unique_by
from fleetgen.model.types import Date, DnsLabel, Line, Timestamp, Version, as_text
from fleetgen.model.value_checks import Before

# What an upgrade moves, in the order a cluster upgrades them: the matrix row (COMPONENTS, in every version
# set), and the GPU Operator release that installs the driver, which moves with it.
Component = Literal["containerd", "kubernetes", "driver", "gpuOperator", "cuda", "cudnn"]
UPGRADE_COMPONENTS: tuple[Component, ...] = get_args(Component)
COMPONENTS: tuple[Component, ...] = ("containerd", "kubernetes", "driver", "cuda", "cudnn")
_POOL_REF = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
PoolRef = Annotated[str, Field(pattern=_POOL_REF, max_length=127)]  # cluster/pool
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def _duration(value: str) -> datetime.timedelta:
    units = {"m": 60, "h": 3600, "d": 86400}
    match = re.fullmatch(r"(\d{1,6})([mhd])", value)  # six digits: no overflow, and more than anyone soaks
    if not match:
        # fix: Write a duration such as 90m, 48h or 2d
        raise ValueError(f"{value!r} is not a duration such as 90m, 48h or 2d")
    return datetime.timedelta(seconds=int(match.group(1)) * units[match.group(2)])


def _as_duration(value: Any) -> Any:
    if isinstance(value, datetime.timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, (str, int)):  # a flag or a fraction is no duration (and crashed the regex)
        # fix: Write a duration such as 90m, 48h or 2d
        raise ValueError("must be a duration such as 90m, 48h or 2d")
    return _duration(as_text(value))


# What _duration reads, up to a year (Rollout.soak's bound) in each unit, at most six digits: for the JSON Schema.
_UP_TO_A_YEAR = (
    "^(0{0,3}([0-9]{1,2}|[12][0-9]{2}|3[0-5][0-9]|36[0-5])d"
    "|0{0,2}([0-9]{1,3}|[0-7][0-9]{3}|8[0-6][0-9]{2}|87[0-5][0-9]|8760)h"
    "|([0-9]{1,5}|[0-4][0-9]{5}|5[01][0-9]{4}|52[0-4][0-9]{3}|525[0-5][0-9]{2}|525600)m)$"
)
Duration = Annotated[
    datetime.timedelta,
    Before(_as_duration),
    WithJsonSchema({"type": "string", "pattern": _UP_TO_A_YEAR}),
]
ClockTime = Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")]


class Window(Spec):
    """A maintenance window in UTC: a wave may start only inside one."""

    days: Annotated[tuple[Weekday, ...], unique_by()] = Field(min_length=1)
    """Weekdays the window opens on."""
    start: ClockTime
    """Opening time, HH:MM UTC."""
    end: ClockTime
    """Closing time, HH:MM UTC (after start)."""


class Freeze(Spec):
    """A period in which no wave may start (UTC dates, both inclusive)."""

    start: Date
    end: Date
    reason: Line = ""


class Rollout(Spec):
    soak: Duration = Field(default="48h", validate_default=True, le=datetime.timedelta(days=365))
    """How long a wave runs before the next may start (the seed's 48 hours; at most 365d)."""
    max_wave_size: Int = Field(default=2, ge=1)
    """Most production clusters upgraded in one wave."""
    windows: tuple[Window, ...] = ()
    """Maintenance windows; a wave starts only inside one. Any time when left out."""
    freezes: tuple[Freeze, ...] = ()
    """Change freezes; no wave starts inside one."""
    production_canary: DnsLabel | None = None
    """The production cluster every upgrade moves first, alone, and soaks before the rest. When left out: the first
    production cluster outside any DR pair, else the DR partner listed second (never a pair's primary while another
    production cluster exists). A step that changes GPU nodes (driver, GPU Operator, CUDA, cuDNN) moves only clusters
    with GPU pools, and refuses a named canary without them."""


class UpgradeWave(Spec):
    wave: Int = Field(ge=1)
    step: dict[Component, Version] = Field(min_length=1)
    """The versions this wave sets."""
    clusters: Annotated[tuple[DnsLabel, ...], unique_by()] = Field(min_length=1)
    pools: Annotated[tuple[PoolRef, ...], unique_by()] = ()
    """The canary node pools (`cluster/pool`) this wave moves ahead of their clusters: each runs the step's driver as its own
    (`driver.version`) until its cluster's wave moves the rest of its pools."""
    applied_at: Timestamp | None = None
    """When `fleetgen upgrade apply` wrote this wave (set it to the merge time if that differs)."""
    verified_at: Timestamp | None = None
    """When every GPU node of the wave's clusters was seen on its versions (`fleetgen upgrade verify`): its soak starts here."""
    override_soak: Line | None = None
    """Why this wave started before the previous wave was verified and soaked (`upgrade apply --override-soak REASON`)."""


class Upgrade(Spec):
    """An upgrade in progress, written by `fleetgen upgrade apply`; `fleetgen upgrade status` reads it."""

    target: dict[Component, Version] = Field(min_length=1)
    node_image: Identifier | None = None
    """The node image the waves roll the clusters whose images carry the driver to (driverSource: node-image)."""
    waves: Annotated[tuple[UpgradeWave, ...], unique_by("wave")] = Field(min_length=1)
    closed_at: Timestamp | None = None
    """When the last wave was applied and the interim version sets folded back; a closed upgrade is history."""

    @property
    def complete(self) -> bool:
        return all(w.applied_at is not None for w in self.waves)

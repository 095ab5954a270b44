"""How version upgrades roll out (soak, wave size, windows, freezes), and the upgrade in progress."""

from __future__ import annotations

import datetime
import re
from typing import Annotated, Literal, get_args

from pydantic import BeforeValidator, Field, WithJsonSchema

from fleetgen.model.spec import Spec
from fleetgen.model.strict import Identifier, Int, unique_by
from fleetgen.model.types import DnsLabel, Line, Version, as_text

# What an upgrade moves, in the order a cluster upgrades them: the matrix row (COMPONENTS, in every version
# set), and the GPU Operator release that installs the driver, which moves with it.
Component = Literal["containerd", "kubernetes", "driver", "gpuOperator", "cuda", "cudnn"]
UPGRADE_COMPONENTS: tuple[Component, ...] = get_args(Component)
COMPONENTS: tuple[Component, ...] = ("containerd", "kubernetes", "driver", "cuda", "cudnn")
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def _duration(value: str) -> datetime.timedelta:
    units = {"m": 60, "h": 3600, "d": 86400}
    match = re.fullmatch(r"(\d{1,6})([mhd])", value)  # six digits: no overflow, and more than anyone soaks
    if not match:
        raise ValueError(f"{value!r} is not a duration such as 90m, 48h or 2d")
    return datetime.timedelta(seconds=int(match.group(1)) * units[match.group(2)])


Duration = Annotated[
    datetime.timedelta,
    BeforeValidator(lambda v: _duration(as_text(v)) if isinstance(v, (str, int)) else v),
    WithJsonSchema({"type": "string", "pattern": "^\\d+[mhd]$"}),
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

    start: datetime.date
    end: datetime.date
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
    production cluster exists)."""


class UpgradeWave(Spec):
    wave: Int = Field(ge=1)
    step: dict[Component, Version] = Field(min_length=1)
    """The versions this wave sets."""
    clusters: Annotated[tuple[DnsLabel, ...], unique_by()] = Field(min_length=1)
    applied_at: datetime.datetime | None = None
    """When `fleetgen upgrade apply` wrote this wave (set it to the merge time if that differs)."""
    verified_at: datetime.datetime | None = None
    """When every GPU node of the wave's clusters was seen on its versions (`fleetgen upgrade verify`): its soak starts here."""
    override_soak: Line | None = None
    """Why this wave started before the previous wave was verified and soaked (`upgrade apply --override-soak REASON`)."""


class Upgrade(Spec):
    """An upgrade in progress, written by `fleetgen upgrade apply`; `fleetgen upgrade status` reads it."""

    target: dict[Component, Version] = Field(min_length=1)
    node_image: Identifier | None = None
    """The node image the waves roll the clusters whose images carry the driver to (driverSource: node-image)."""
    waves: Annotated[tuple[UpgradeWave, ...], unique_by("wave")] = Field(min_length=1)
    closed_at: datetime.datetime | None = None
    """When the last wave was applied and the interim version sets folded back; a closed upgrade is history."""

    @property
    def complete(self) -> bool:
        return all(w.applied_at is not None for w in self.waves)

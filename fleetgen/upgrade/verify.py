"""`fleetgen upgrade verify --wave N`: record that a wave is done on its nodes; its soak starts then.

Given the evidence of the wave's clusters (`kubectl get nodes` dumps or contexts), the wave is done when every
GPU node reports the wave's versions and no driver upgrade failed (upgrade/evidence.py). Then `verifiedAt` is
written into the wave's line of the upgrade record (comments and layout kept), and `upgrade apply` of the next
wave counts the soak from there. A wave that is not done is refused with each cluster's progress.
"""

from __future__ import annotations

import datetime

from fleetgen.checks.load import LoadedFleet
from fleetgen.source.edit import RoundTrip
from fleetgen.upgrade.apply import timestamp
from fleetgen.upgrade.arguments import wave_number
from fleetgen.upgrade.gate import Evidence, not_done
from fleetgen.upgrade.moments import as_utc, later, when
from fleetgen.upgrade.plan import PlanRefused


def verify_wave(loaded: LoadedFleet, number: int, evidence: Evidence, at: datetime.datetime) -> tuple[str, str]:
    """The new text of fleet.yaml with wave `number` verified at `at`, and a line saying when its soak ends."""
    record = loaded.fleet.upgrade
    if record is None:
        raise PlanRefused(["no upgrade recorded in fleet.yaml: nothing to verify"])
    if not 1 <= wave_number(number) <= len(record.waves):
        raise PlanRefused([f"the upgrade has waves 1 to {len(record.waves)}, not {number}"])
    wave = record.waves[number - 1]
    if wave.applied_at is None:
        raise PlanRefused([f"wave {number} is not in fleet.yaml yet: apply it, let it roll out, then verify it"])
    if wave.verified_at is not None:
        raise PlanRefused([f"wave {number} was verified on its nodes at {when(as_utc(wave.verified_at))}"])
    if as_utc(at) < as_utc(wave.applied_at):
        raise PlanRefused([f"--at {when(as_utc(at))} is before wave {number} was applied ({when(as_utc(wave.applied_at))})"])
    waiting = not_done(loaded.fleet, wave, evidence, at)
    if waiting:
        raise PlanRefused([f"wave {number} is not done on its nodes: {reason}" for reason in waiting])
    document = RoundTrip(loaded.source.text)
    document.data["upgrade"]["waves"][number - 1]["verifiedAt"] = timestamp(at)
    ends = later(as_utc(at), loaded.fleet.rollout.soak, f"the end of wave {number}'s soak")
    return document.text(), f"wave {number} is done on its nodes; it soaks until {when(ends)}"

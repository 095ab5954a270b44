"""One render of a fleet, shared by every stage that needs it: validate, check, diff and drift.

Each cluster's objects (as `kustomize build clusters/<name>` gives them) and the files of the
tree are computed on first use and kept, so a workflow that validates and then writes, or diffs
and then annotates, renders once. FLEET.md is assembled here, beside the tree, not inside render:
it is a report about the fleet, not a Kubernetes object.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from fleetgen.capacity_report import build_report, report_markdown
from fleetgen.model import Fleet
from fleetgen.render import Manifest, ObjectKey, OutputFile, cluster_objects, files_of, plan
from fleetgen.render.gitops import entry_point

REPORT_PATH = "FLEET.md"


class Rendered:
    """The render of `fleet`, lazily: nothing is built until a stage asks for it, nothing twice."""

    def __init__(self, fleet: Fleet, source_name: str = "fleet.yaml"):
        self.fleet = fleet
        self.source_name = source_name
        self._objects: dict[int, list[Manifest]] = {}
        self._entry_points: dict[int, list[Manifest]] = {}

    def objects(self, index: int) -> list[Manifest]:
        """What cluster `index` runs, without its GitOps entry point."""
        if index not in self._objects:
            self._objects[index] = cluster_objects(self.fleet, index)
        return self._objects[index]

    def entry_point(self, index: int) -> list[Manifest]:
        """The GitOps objects that sync cluster `index`."""
        if index not in self._entry_points:
            self._entry_points[index] = entry_point(self.fleet, index)
        return self._entry_points[index]

    def keyed(self, index: int, *, with_entry_point: bool = True) -> dict[ObjectKey, dict[str, Any]]:
        """Cluster `index`'s objects by key (plus its entry point unless told otherwise)."""
        manifests = self.objects(index) + (self.entry_point(index) if with_entry_point else [])
        return {m.key: m.body for m in manifests}

    @cached_property
    def plan(self) -> list[OutputFile]:
        """Every file of the tree, in a stable order; FLEET.md last."""
        return [*plan(self.fleet), OutputFile(REPORT_PATH, (), report_markdown(build_report(self.fleet)))]

    @cached_property
    def files(self) -> dict[str, bytes]:
        """The bytes of every file of the tree, keyed by relative path."""
        return files_of(self.plan, self.source_name)


def render_files(fleet: Fleet, source_name: str = "fleet.yaml") -> dict[str, bytes]:
    """Every file of the tree as its final bytes (for callers that render without checking)."""
    return Rendered(fleet, source_name).files

"""One render of a fleet, shared by every stage that needs it: validate, check, diff and drift.

Each cluster's objects (as `kustomize build clusters/<name>` gives them) and the files of the
tree are computed on first use and kept, so a workflow that validates and then writes, or diffs
and then annotates, renders once. A render of another revision (`diff`'s base) lends its objects
for each cluster whose input fingerprint (fingerprint.py) is the same, so a one-line change
builds only the clusters it touches; with the cache (output/emitted.py), the files of a cluster
whose fingerprint an earlier render saw are taken as they were written, without planning it. FLEET.md is
assembled here, beside the tree, not inside render: it is a report about the fleet, not a
Kubernetes object.
"""

from __future__ import annotations

from functools import cached_property, partial
from typing import Any

from fleetgen.cache import Cache
from fleetgen.model import Fleet
from fleetgen.output.emitted import cluster_files, shared_files
from fleetgen.render import Manifest, ObjectKey, OutputFile, cluster_objects, files_of
from fleetgen.render.fingerprint import cluster_fingerprints
from fleetgen.render.gitops import entry_point
from fleetgen.render.layout import Bases, base_plan, cluster_plan, hub_plan
from fleetgen.render.provenance import Provenance
from fleetgen.report.capacity import build_report
from fleetgen.report.capacity_output import report_markdown

REPORT_PATH = "FLEET.md"


class Rendered:
    """The render of `fleet`, lazily: nothing is built until a stage asks for it, nothing twice."""

    def __init__(self, fleet: Fleet, source_name: str = "fleet.yaml", cache: Cache | None = None, lender: Rendered | None = None):
        self.fleet = fleet
        self.source_name = source_name
        self.cache = cache  # files emitted by an earlier render, to take instead of emitting again
        self.lender = lender  # a render of another revision, whose unchanged clusters are taken as they are
        self._objects: dict[int, list[Manifest]] = {}
        self._entry_points: dict[int, list[Manifest]] = {}
        self._explained: dict[int, tuple[dict[ObjectKey, dict[str, Any]], Provenance]] = {}
        self._cluster_plans: dict[int, list[OutputFile]] = {}

    @cached_property
    def fingerprints(self) -> list[str]:
        """Each cluster's input fingerprint: equal fingerprints, equal objects."""
        return cluster_fingerprints(self.fleet)

    def same_as(self, other: Rendered, index: int) -> bool:
        """Does cluster `index` get the same objects in `other` (checked by input fingerprint, not by building)?"""
        return index < len(other.fleet.clusters) and other.fingerprints[index] == self.fingerprints[index]

    def objects(self, index: int) -> list[Manifest]:
        """What cluster `index` runs, without its GitOps entry point."""
        if index not in self._objects:
            lender = self.lender
            same = lender is not None and self.same_as(lender, index)
            self._objects[index] = lender.objects(index) if lender is not None and same else cluster_objects(self.fleet, index)
        return self._objects[index]

    def entry_point(self, index: int) -> list[Manifest]:
        """The GitOps objects that sync cluster `index`."""
        if index not in self._entry_points:
            lender = self.lender
            same = lender is not None and self.same_as(lender, index)
            self._entry_points[index] = lender.entry_point(index) if lender is not None and same else entry_point(self.fleet, index)
        return self._entry_points[index]

    def keyed(self, index: int, *, with_entry_point: bool = True) -> dict[ObjectKey, dict[str, Any]]:
        """Cluster `index`'s objects by key (plus its entry point unless told otherwise)."""
        manifests = self.objects(index) + (self.entry_point(index) if with_entry_point else [])
        return {m.key: m.body for m in manifests}

    def explained(self, index: int) -> tuple[dict[ObjectKey, dict[str, Any]], Provenance]:
        """Cluster `index`'s objects (with its entry point) rendered again, recording where each field comes from.

        Only `explain` and the markdown diff ask for it, for the clusters they show: the render every
        other stage shares records nothing."""
        if index not in self._explained:
            why = Provenance()
            manifests = cluster_objects(self.fleet, index, why) + entry_point(self.fleet, index, why)
            self._explained[index] = ({m.key: m.body for m in manifests}, why)
        return self._explained[index]

    @cached_property
    def _base(self) -> tuple[list[OutputFile], Bases]:
        return base_plan(self.fleet)

    @property
    def base_files(self) -> list[OutputFile]:
        """The files of base/, which every cluster's folder includes."""
        return self._base[0]

    @cached_property
    def hub_files(self) -> list[OutputFile]:
        """The files of an Argo CD hub's bootstrap folder (none for Flux or in-cluster Argo CD)."""
        return hub_plan(self.fleet)

    def cluster_plan(self, index: int) -> list[OutputFile]:
        """The files of cluster `index`'s folder, clusters/<name>/."""
        if index not in self._cluster_plans:
            self._cluster_plans[index] = cluster_plan(self.fleet, index, self._base[1])
        return self._cluster_plans[index]

    @cached_property
    def report(self) -> OutputFile:
        return OutputFile(REPORT_PATH, (), report_markdown(build_report(self.fleet)))

    @cached_property
    def plan(self) -> list[OutputFile]:
        """Every file of the tree, in a stable order; FLEET.md last."""
        clusters = [f for index in range(len(self.fleet.clusters)) for f in self.cluster_plan(index)]
        return [*self.base_files, *clusters, *self.hub_files, self.report]

    def output(self, path: str) -> OutputFile:
        """The planned file at `path`, planning only the part of the tree it is in (KeyError when none is)."""
        folder = path.split("/")
        if folder[0] == "clusters" and len(folder) > 2 and folder[1] in self._cluster_indexes:
            return {o.path: o for o in self.cluster_plan(self._cluster_indexes[folder[1]])}[path]
        return self._shared_outputs[path]

    @cached_property
    def _cluster_indexes(self) -> dict[str, int]:
        return {cluster.name: index for index, cluster in enumerate(self.fleet.clusters)}

    @cached_property
    def _shared_outputs(self) -> dict[str, OutputFile]:
        """The files outside clusters/ by path: base/, a hub's bootstrap and FLEET.md."""
        return {o.path: o for o in [*self.base_files, *self.hub_files, self.report]}

    @cached_property
    def files(self) -> dict[str, bytes]:
        """The bytes of every file of the tree, keyed by relative path.

        With a cache, a cluster whose input fingerprint it knows is taken whole, unplanned, and a
        shared folder whose content it knows is not emitted again."""
        if self.cache is None:
            return files_of(self.plan, self.source_name)
        cache, name = self.cache, self.source_name
        out = shared_files(cache, self.base_files, name)
        for index, fingerprint in enumerate(self.fingerprints):
            out.update(cluster_files(cache, fingerprint, name, partial(self.cluster_plan, index)))
        out.update(shared_files(cache, [*self.hub_files, self.report], name))
        return out


def render_files(fleet: Fleet, source_name: str = "fleet.yaml") -> dict[str, bytes]:
    """Every file of the tree as its final bytes (for callers that render without checking)."""
    return Rendered(fleet, source_name).files

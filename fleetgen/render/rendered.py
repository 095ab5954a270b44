"""One render of a fleet, shared by every stage that needs it: validate, check, diff and drift.

Each cluster's objects (as `kustomize build clusters/<name>` gives them) and the plan of its
folder are computed on first use and kept, so a workflow that validates and then writes, or diffs
and then annotates, renders once. A render of another revision (`diff`'s base) lends its objects
for each cluster whose input fingerprint (fingerprint.py) is the same, so a one-line change
builds only the clusters it touches. Turning the plan into bytes, with the cache and FLEET.md,
is the workflows' business (workflows/tree_files.py): render builds objects and nothing else.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from fleetgen.model import Fleet
from fleetgen.render import Manifest, ObjectKey, OutputFile, cluster_objects
from fleetgen.render.fingerprint import cluster_fingerprints
from fleetgen.render.gitops import entry_point, gitops_folders
from fleetgen.render.layout import Bases, ClusterBuild, base_plan, build_cluster, cluster_plan, hub_plan
from fleetgen.render.provenance import Provenance


class Rendered:
    """The render of `fleet`, lazily: nothing is built until a stage asks for it, nothing twice."""

    def __init__(self, fleet: Fleet, *, lender: Rendered | None = None):
        self.fleet = fleet
        self.lender = lender  # a render of another revision, whose unchanged clusters are taken as they are
        self._objects: dict[int, list[Manifest]] = {}
        self._entry_points: dict[int, list[Manifest]] = {}
        self._explained: dict[int, tuple[dict[ObjectKey, dict[str, Any]], Provenance]] = {}
        self._cluster_plans: dict[int, list[OutputFile]] = {}
        # What both a cluster's objects and its folder's plan are made of, built once for either.
        self._built: dict[int, ClusterBuild] = {}
        self._gitops_folders: dict[int, list[tuple[str, str, list[Manifest]]]] = {}

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
            self._objects[index] = (
                lender.objects(index) if lender is not None and same else cluster_objects(self.fleet, index, built=self._build(index))
            )
        return self._objects[index]

    def entry_point(self, index: int) -> list[Manifest]:
        """The GitOps objects that sync cluster `index`."""
        if index not in self._entry_points:
            lender = self.lender
            same = lender is not None and self.same_as(lender, index)
            self._entry_points[index] = (
                lender.entry_point(index) if lender is not None and same else entry_point(self.fleet, index, folders=self._folders(index))
            )
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
            self._cluster_plans[index] = cluster_plan(self.fleet, index, self._base[1], self._build(index), self._folders(index))
        return self._cluster_plans[index]

    def _build(self, index: int) -> ClusterBuild:
        """Cluster `index`'s objects, built once for its objects and its plan. A part that does not depend on the
        cluster is taken from the team's base when base/ is planned already (validate and render plan it first);
        otherwise (a diff or drift that reaches a few clusters) it is built for the cluster: the same objects."""
        if index not in self._built:
            bases = self._base[1] if "_base" in vars(self) else None  # planned already (a cached_property)
            self._built[index] = build_cluster(self.fleet, index, bases)
        return self._built[index]

    def _folders(self, index: int) -> list[tuple[str, str, list[Manifest]]]:
        if index not in self._gitops_folders:
            self._gitops_folders[index] = gitops_folders(self.fleet, index)
        return self._gitops_folders[index]

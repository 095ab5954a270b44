"""The files of one render's tree: planned on demand, emitted once, taken from the cache where it knows them.

Render builds objects and plans folders (render/rendered.py); turning that plan into bytes, with
the cache of earlier runs (output/emitted.py) and FLEET.md, is orchestration, so it lives here.
FLEET.md is assembled beside the tree: it is a report about the fleet, not a Kubernetes object.
"""

from __future__ import annotations

from functools import cached_property, partial

from fleetgen.cache import Cache
from fleetgen.checks.load import LoadedFleet
from fleetgen.checks.verdict_window import verdict_window
from fleetgen.model import Fleet
from fleetgen.output.emit import files_of
from fleetgen.output.emitted import Entry, cluster_files, shared_files
from fleetgen.output.known_trees import KnownTrees
from fleetgen.render import OutputFile
from fleetgen.render.rendered import Rendered
from fleetgen.report.capacity import build_report
from fleetgen.report.capacity_output import report_markdown

REPORT_PATH = "FLEET.md"


class TreeFiles:
    """The tree of `rendered` as files; `cache` holds files emitted by an earlier run, taken instead of emitting again."""

    def __init__(self, rendered: Rendered, source_name: str = "fleet.yaml", cache: Cache | None = None):
        self.rendered = rendered
        self.fleet = rendered.fleet
        self.source_name = source_name
        self.cache = cache

    @cached_property
    def report(self) -> OutputFile:
        return OutputFile(REPORT_PATH, (), report_markdown(build_report(self.fleet)))

    @cached_property
    def plan(self) -> list[OutputFile]:
        """Every file of the tree, in a stable order; FLEET.md last."""
        clusters = [f for index in range(len(self.fleet.clusters)) for f in self.rendered.cluster_plan(index)]
        return [*self.rendered.base_files, *clusters, *self.rendered.hub_files, self.report]

    def output(self, path: str) -> OutputFile:
        """The planned file at `path`, planning only the part of the tree it is in (KeyError when none is)."""
        folder = path.split("/")
        if folder[0] == "clusters" and len(folder) > 2 and folder[1] in self._cluster_indexes:
            return {o.path: o for o in self.rendered.cluster_plan(self._cluster_indexes[folder[1]])}[path]
        return self._shared_outputs[path]

    @cached_property
    def _cluster_indexes(self) -> dict[str, int]:
        return {cluster.name: index for index, cluster in enumerate(self.fleet.clusters)}

    @cached_property
    def _shared_outputs(self) -> dict[str, OutputFile]:
        """The files outside clusters/ by path: base/, a hub's bootstrap and FLEET.md."""
        return {o.path: o for o in [*self.rendered.base_files, *self.rendered.hub_files, self.report]}

    @property
    def files(self) -> dict[str, bytes]:
        """The bytes of every file of the tree, keyed by relative path.

        With a cache, a cluster whose input fingerprint it knows is taken whole, unplanned, and a
        shared folder whose content it knows is not emitted again."""
        return self._emitted[0]

    @property
    def entries(self) -> tuple[Entry, ...]:
        """The cache entries that hold the files, together (none without a cache)."""
        return self._emitted[1]

    @cached_property
    def _emitted(self) -> tuple[dict[str, bytes], tuple[Entry, ...]]:
        if self.cache is None:
            return files_of(self.plan, self.source_name), ()
        cache, name = self.cache, self.source_name
        out, entries = shared_files(cache, self.rendered.base_files, name)
        for index, fingerprint in enumerate(self.rendered.fingerprints):
            files, entry = cluster_files(cache, fingerprint, name, partial(self.rendered.cluster_plan, index))
            out.update(files)
            entries.append(entry)
        files, last = shared_files(cache, [*self.rendered.hub_files, self.report], name)
        out.update(files)
        return out, (*entries, *last)


def render_files(fleet: Fleet, source_name: str = "fleet.yaml") -> dict[str, bytes]:
    """Every file of the tree as its final bytes (for callers that render without checking)."""
    return TreeFiles(Rendered(fleet), source_name).files


def remember_tree(loaded: LoadedFleet, tree: TreeFiles, cache: Cache) -> None:
    """Keep, under the fleet text, the ledger of a tree that passed with the default options and the cache entries of
    its files, for the shortcuts of `check` and `render` (output/known_trees.py); never for a fleet with its own facts
    file, which is read beside it."""
    if loaded.fleet.compatibility.facts_file is not None:
        return
    hand_written = [f"clusters/{cluster.name}/{path}" for cluster in loaded.fleet.clusters for path in cluster.extra_resources]
    window = verdict_window(loaded.fleet)
    KnownTrees(cache).record(loaded.source.text.encode(), loaded.source.file, tree.files, hand_written, window, tree.entries)

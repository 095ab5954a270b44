"""The workflows that read a cluster's live state: drift, and the evidence upgrades and diffs take from it.

`drift` judges a cluster's live objects against the tree committed at the revision its engine
synced (live/committed.py), or against a fresh render of fleet.yaml (`--against fleet.yaml`).
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path
from typing import Any

from fleetgen.checks.load import LoadedFleet, load_fleet
from fleetgen.errors import InputError
from fleetgen.live.cluster_reader import ClusterRead, by_name, judged, merged, read_cluster
from fleetgen.live.committed import Revision, SyncRecords, committed_tree, on_cluster, stale_note, synced_revision
from fleetgen.live.node_checks import judge_nodes
from fleetgen.live.nodes import nodes_in
from fleetgen.live.state import Drift, compare, live_from_context, read_live, resources_of
from fleetgen.model.fleet import cluster_index
from fleetgen.output.emit import files_of
from fleetgen.render.rendered import Rendered
from fleetgen.upgrade.moments import utc_now
from fleetgen.upgrade.status import live_nodes


def cluster_dumps(values: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """`--live CLUSTER=PATH`, repeatable: each cluster's live objects, read from its dumps."""
    paths: dict[str, list[Path]] = {}
    for value in values:
        cluster, sep, path = value.partition("=")
        if not sep or not cluster or not path:
            raise InputError(f"--live {value!r}: expected CLUSTER=FILE_OR_FOLDER")
        paths.setdefault(cluster, []).append(Path(path))
    return {cluster: read_live(files) for cluster, files in paths.items()}


EVIDENCE_RESOURCES = ["node", "configmap"]  # a cluster's Nodes and its fleet-versions ConfigMap


def cluster_evidence(live: tuple[str, ...], contexts: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """Each cluster's live objects from `--live CLUSTER=PATH` dumps and `--context CLUSTER=CONTEXT` (through kubectl)."""
    out = cluster_dumps(live)
    for value in contexts:
        cluster, sep, context = value.partition("=")
        if not sep or not cluster or not context:
            raise InputError(f"--context {value!r}: expected CLUSTER=KUBECONTEXT")
        out[cluster] = out.get(cluster, []) + live_from_context(context, EVIDENCE_RESOURCES)
    return out


def drift(
    fleet: Path,
    cluster: str,
    live: tuple[Path, ...],
    context: str | None,
    against: str = "committed",
    ref: str | None = None,
    timeout: int = 30,
    now: datetime.datetime | None = None,
) -> Drift:
    """CLUSTER's live objects against the tree committed at the revision it is synced to, or the render of FLEET (`drift`).
    `now` (default: the clock) is when nodes left in upgrade-required are measured (tests fix it)."""
    now = now or utc_now()
    if bool(live) == bool(context):
        raise InputError("give either --live FILE|DIR or --context KUBECONTEXT")
    loaded = load_fleet(fleet)
    index = cluster_index(loaded.fleet, cluster, f"--cluster {cluster}")
    rendered = Rendered(loaded.fleet)
    expected = rendered.keyed(index) if against == "fleet.yaml" else {m.key: m.body for m in rendered.entry_point(index)}
    read = ClusterRead(read_live(live)) if live else read_cluster(str(context), resources_of(expected), timeout)
    if against == "fleet.yaml":
        read = merged(read, by_name(str(context), expected, read, timeout)) if context else read
        return _with_nodes(judged(compare(expected, read.objects), read, expected), loaded, index, read.objects, now)
    recorded = synced_revision(read.objects, expected, cluster, loaded.fleet.gitops.path)
    revision = recorded or (Revision(ref, "--ref") if ref else Revision("HEAD", "HEAD"))
    if recorded and ref and not recorded.ref.startswith(ref):  # the engine knows what it applied; a differing --ref is said unused
        revision = dataclasses.replace(recorded, origin=f"{recorded.origin}; --ref {ref} not used: the engine's record wins")
    committed = committed_tree(fleet, revision, cluster, SyncRecords.of(read.objects))
    more = sorted(set(resources_of(committed.objects)) - set(resources_of(expected)))
    if context and more:  # the kinds the committed tree holds, as the cluster serves them
        read = merged(read, read_cluster(str(context), more, timeout))
    planned = files_of([*rendered.base_files, *rendered.cluster_plan(index)], loaded.source.file)
    expected, against_text = on_cluster(loaded.fleet, committed, revision, read.objects)
    if context:  # what the labelled lists missed, by name: a label removed by hand is a change, not a missing object
        read = merged(read, by_name(str(context), expected, read, timeout))
    result = dataclasses.replace(compare(expected, read.objects), against=against_text, stale=stale_note(planned, committed))
    return _with_nodes(judged(result, read, expected), loaded, index, read.objects, now)


def _with_nodes(result: Drift, loaded: LoadedFleet, index: int, objects: list[dict[str, Any]], now: datetime.datetime) -> Drift:
    """The drift, with the verdict on the cluster's Nodes when the live objects hold them, and the nodes an upgrade in
    fleet.yaml's record has left in upgrade-required too long, as `upgrade status` names them."""
    nodes = nodes_in(objects)
    if not nodes:
        return result
    cluster = loaded.fleet.clusters[index]
    evidence = judge_nodes(loaded.fleet, cluster, nodes, loaded.facts)
    late = [n.late for n in live_nodes(loaded.fleet, {cluster.name: objects}, loaded.facts, now) if n.cluster == cluster.name]
    return dataclasses.replace(result, nodes=dataclasses.replace(evidence, late=late[0] if late else ()))

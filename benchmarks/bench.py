"""Times fleetgen on synthetic fleets: load+check, validate, render, write, no-op re-render.

    python benchmarks/bench.py                      # 100 clusters, 400 teams, 10 clusters a team
    python benchmarks/bench.py --clusters 1000 --teams 2000 --clusters-per-team 10

Prints one line per fleet size, the time ratio of the doubled fleet (ratios are what to compare
on shared machines), the per-object schema validation speed against kubernetes_validate.validate()
measured side by side in the same run, and peak memory (the process's maximum resident set).
"""

from __future__ import annotations

import gc
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import kubernetes_validate
from synth import size_arguments, synthetic_fleet

from fleetgen.checks.load import load_fleet_text
from fleetgen.errors import Severity
from fleetgen.model import Fleet, Version
from fleetgen.output.tree import Tree
from fleetgen.render import cluster_objects
from fleetgen.render.rendered import Rendered
from fleetgen.validation.rendered_objects import Schemas, validate_rendered
from fleetgen.workflows.tree_files import TreeFiles, render_files


def measure(clusters: int, teams: int, per_team: int) -> dict[str, float]:
    raw = synthetic_fleet(clusters, teams, per_team).encode()
    started = time.perf_counter()
    fleet = load_fleet_text(raw).fleet
    loaded = time.perf_counter()
    render = Rendered(fleet)  # one render, shared by validation and the tree, as the workflows do
    problems = [f for f in validate_rendered(render, Schemas()) if f.severity is not Severity.NOTE]
    validated = time.perf_counter()
    assert not problems, problems[:3]
    files = TreeFiles(render).files
    rendered = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        Tree(out).write(files)
        written = time.perf_counter()
        Tree(out).write(render_files(load_fleet_text(raw).fleet))
        again = time.perf_counter()
    return {
        "files": len(files),
        "load": loaded - started,
        "validate": validated - loaded,
        "render": rendered - validated,
        "write": written - rendered,
        "load+validate+render": rendered - started,
        "load+validate+render+write": written - started,
        "no-op re-render": again - written,
    }


def per_object_speed(fleet: Fleet, sample: int = 60) -> tuple[float, float, int]:
    """Seconds per object: kubernetes_validate.validate() on a sample, fleetgen's compiled schemas on all."""
    objects = [
        (m.body, str(fleet.version_sets[c.version_set].kubernetes))
        for i, c in enumerate(fleet.clusters)
        for m in cluster_objects(fleet, i)
        if m.body["apiVersion"] in ("v1", "rbac.authorization.k8s.io/v1", "networking.k8s.io/v1", "scheduling.k8s.io/v1")
    ]
    started = time.perf_counter()
    for body, version in objects[:sample]:
        kubernetes_validate.validate(body, version, strict=True)
    theirs = (time.perf_counter() - started) / sample
    schemas = Schemas()
    started = time.perf_counter()
    for body, version in objects:
        lookup = schemas.lookup(body["apiVersion"], body["kind"], Version(version))
        lookup.validator.is_valid(body) or lookup.validator.errors(body)  # as object_problems asks
    ours = (time.perf_counter() - started) / len(objects)
    return theirs, ours, len(objects)


def main() -> None:
    gc.disable()  # as the fleetgen command does (fleetgen/cli/process.py says why)
    args = size_arguments(__doc__.splitlines()[0])
    results = []
    for factor in (1, 2):
        size = (args.clusters * factor, args.teams * factor, args.clusters_per_team)
        result = measure(*size)
        results.append(result)
        timings = "  ".join(f"{k} {v:.2f}s" for k, v in result.items() if k != "files")
        print(f"{size[0]} clusters, {size[1]} teams x {size[2]}: {int(result['files'])} files  {timings}")
    for total in ("load+validate+render", "write"):  # the write is disk-bound: its ratio is noisier
        print(f"doubled fleet / fleet time ratio, {total}: {results[1][total] / results[0][total]:.2f}")
    fleet = load_fleet_text(synthetic_fleet(args.clusters, args.teams, args.clusters_per_team).encode()).fleet
    theirs, ours, count = per_object_speed(fleet)
    print(
        f"schema validation per object: kubernetes_validate.validate() {theirs * 1e3:.2f} ms, "
        f"fleetgen {ours * 1e6:.1f} us over {count} objects: {theirs / ours:.0f}x faster"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()

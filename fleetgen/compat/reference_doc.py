"""The compatibility reference page, written from the data files in this package (`fleetgen docs`).

Every `*.yaml` here becomes a section: its header comment says what it holds, each table of rows
becomes a Markdown table with each row's source linked, and rows marked `provisional` are listed
under their table with what is not confirmed. Scalars (`asOf`, a pinned version) are listed first.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

COMPAT_REFERENCE_PATH = "docs/reference/compatibility.md"
SOURCE_FIELDS = ("source", "url", "provisional")
UNCONFIRMED = "not confirmed in its source's own text"

INTRO = """\
# Compatibility facts

Written by `fleetgen docs` from the data files fleetgen ships (`fleetgen/compat/*.yaml`); a test fails
while it is stale. `fleetgen validate` judges every version set against these rows and `fleetgen upgrade
plan` plans with them; each row names its source. A row marked provisional applies, but was not
confirmed in its source's own text: what is missing is listed under its table.

A fleet can add rows or replace a shipped row without waiting for a fleetgen release:
`compatibility: {factsFile: extra-facts.yaml}` in fleet.yaml names a file in the format of `facts.yaml`
(any of its tables, every row with `source` and `url`). See
[What validate checks](validate-checks.md#your-own-facts).
"""


def compat_reference_markdown() -> str:
    files = sorted((p for p in resources.files("fleetgen.compat").iterdir() if p.name.endswith(".yaml")), key=lambda p: p.name)
    parts = [INTRO]
    for path in files:
        text = path.read_text(encoding="utf-8")
        parts.append(_section(path.name, _header(text), yaml.safe_load(text) or {}))
    return "\n".join(parts)


def _header(text: str) -> str:
    """The file's leading comment, as prose."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return " ".join(line for line in lines if line) + "\n"


def _section(name: str, header: str, data: dict[str, Any]) -> str:
    out = [f"## {name}\n", header]
    scalars = [(k, v) for k, v in data.items() if not isinstance(v, list | dict)]
    if scalars:
        out.append("".join(f"- `{k}`: {v}\n" for k, v in scalars))
    for table, rows in data.items():
        if isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
            out.append(_table(table, rows))
    return "\n".join(out)


def _table(name: str, rows: list[dict[str, Any]]) -> str:
    columns = list(dict.fromkeys(k for row in rows for k in row if k not in SOURCE_FIELDS))
    lines = [f"### `{name}`\n", "| " + " | ".join(columns) + " | source |", "|" + "---|" * (len(columns) + 1)]
    provisional = []
    for row in rows:
        cells = [_cell(row.get(c)) for c in columns]
        source = str(row.get("source", "")).replace("|", "\\|")
        linked = f"[{source}]({row['url']})" if row.get("url") else source
        mark = " (provisional)" if row.get("provisional") else ""
        lines.append("| " + " | ".join(cells) + f" | {linked}{mark} |")
        if row.get("provisional"):
            label, why = ", ".join(cells[:3]), row["provisional"]
            provisional.append(f"- `{name}` {label}: {UNCONFIRMED if why is True else why}")
    if provisional:
        lines += ["", "Provisional rows:", "", *provisional]
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        text = ", ".join(_cell(v) for v in value)
    elif isinstance(value, dict):
        text = ", ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")

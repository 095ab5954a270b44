"""kubernetes-validate's definitions of one Kubernetes version, each parsed when a schema first reaches it.

`_definitions.json` holds all 500 to 700 definitions of a Kubernetes version (1.1 to 1.8 MB); the kinds a
fleet renders reach about a hundred of them. Parsing the whole file took 4 to 13 ms a version in a
`validate` (the most when its 200,000 new objects set off a full garbage collection of the process);
finding every name and parsing only the reached definitions takes about a tenth of that.

The file is written by `json.dumps(..., indent=2)`: each definition's name opens a line indented by exactly
four spaces, and no other line does (a JSON string holds no raw line break, and everything inside a
definition is indented further). A file that does not start that way, or a name not found that way, is
parsed whole, so the answer is always what `json.loads` of the file gives.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_LAYOUT = b'{\n  "$defs": {\n    "'
_DEFS = "#/$defs/"
_NAME = re.compile(rb'\n    "([^"\\\n]+)": ')
_DECODER = json.JSONDecoder()


class CoreDefinitions:
    """The `$defs` of one `_definitions.json`, by name. A definition is parsed once and shared by every
    schema that reaches it: callers only read it."""

    def __init__(self, path: Path):
        with open(path, "rb") as stream:
            self._text = stream.read()
        self._spans: dict[str, tuple[int, int]] = {}
        if self._text.startswith(_LAYOUT):
            found = list(_NAME.finditer(self._text))
            ends = [m.start() for m in found[1:]] + [len(self._text)]
            self._spans = {m.group(1).decode(): (m.end(), end) for m, end in zip(found, ends, strict=True)}
        self._parsed: dict[str, Any] = {}
        self._whole: dict[str, Any] | None = None
        self._references: dict[str, list[str]] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._parsed:
            span = self._spans.get(name)
            if span is None:  # not where the layout puts it: the whole file decides (KeyError if it lacks it)
                self._parsed[name] = self._all()[name]
            else:
                start, end = span
                self._parsed[name] = _DECODER.raw_decode(self._text[start:end].decode("utf-8"))[0]  # ignores the `,` after it
        return self._parsed[name]

    def references(self, name: str) -> list[str]:
        """The definitions that definition `name` references (`references_in`), found once."""
        if name not in self._references:
            self._references[name] = references_in(self[name])
        return self._references[name]

    def _all(self) -> dict[str, Any]:
        if self._whole is None:
            self._whole = json.loads(self._text)["$defs"]
        return self._whole


def references_in(schema: Any) -> list[str]:
    """The names of the definitions that the $refs in `schema` point to, each $ref rewritten where it points
    elsewhere than `#/$defs/<name>`: kubernetes-validate's kind files write `/api/_definitions.json#/$defs/...`,
    its definitions the short form already."""
    found: list[str] = []
    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and _DEFS in ref:
                name = ref.split(_DEFS, 1)[1]
                if ref != _DEFS + name:
                    node["$ref"] = _DEFS + name
                found.append(name)
            pending.extend(v for k, v in node.items() if k != "$ref")
    return found

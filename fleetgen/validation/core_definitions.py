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

    def __getitem__(self, name: str) -> Any:
        if name not in self._parsed:
            span = self._spans.get(name)
            if span is None:  # not where the layout puts it: the whole file decides (KeyError if it lacks it)
                self._parsed[name] = self._all()[name]
            else:
                start, end = span
                self._parsed[name] = _DECODER.raw_decode(self._text[start:end].decode("utf-8"))[0]  # ignores the `,` after it
        return self._parsed[name]

    def _all(self) -> dict[str, Any]:
        if self._whole is None:
            self._whole = json.loads(self._text)["$defs"]
        return self._whole

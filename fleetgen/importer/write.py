"""The imported fleet as a commented fleet.yaml: where each value came from, and what is left to fill in."""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter

from fleetgen.errors import FieldPath
from fleetgen.importer.imported import Imported
from fleetgen.source.yaml_nodes import SourceFloat, SourceInt

HEADER = """\
# yaml-language-server: $schema=schemas/fleet.schema.json
# Imported by `fleetgen import` from {source}. Comments say which file of that repository each
# value came from. Fill in every TODO(import) (validate rejects the placeholder), then run
#   fleetgen validate && fleetgen render
"""


class _Representer(RoundTripRepresenter):
    def represent_source_float(self, data: SourceFloat) -> ScalarNode:
        node: ScalarNode = self.represent_scalar("tag:yaml.org,2002:float", data.text)  # as the repository wrote it
        return node

    def represent_source_int(self, data: SourceInt) -> ScalarNode:
        node: ScalarNode = self.represent_scalar("tag:yaml.org,2002:int", data.text)  # validate refuses `010` where a name stands
        return node


_Representer.add_representer(SourceFloat, _Representer.represent_source_float)
_Representer.add_representer(SourceInt, _Representer.represent_source_int)


def fleet_yaml(imported: Imported, source: str) -> str:
    document = _commented(imported.document, (), imported.notes)
    yaml = YAML()
    yaml.Representer = _Representer
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    stream = io.StringIO()
    yaml.dump(document, stream)
    return HEADER.format(source=source) + stream.getvalue()


def _commented(value: Any, at: FieldPath, notes: dict[FieldPath, str]) -> Any:
    if isinstance(value, dict):
        out = CommentedMap()
        for key, item in value.items():
            out[key] = _commented(item, at + (key,), notes)
            if at + (key,) in notes:
                out.yaml_add_eol_comment(notes[at + (key,)], key)
        return out
    if isinstance(value, list):
        seq = CommentedSeq()
        for index, item in enumerate(value):
            seq.append(_commented(item, at + (index,), notes))
        return seq
    return value

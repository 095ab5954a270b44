"""Editing fleet.yaml in place: ruamel's round-trip mode keeps every comment, key order, quote
style, anchor and blank line, so a command's pull request shows only the lines it meant to change.
"""

from __future__ import annotations

import io
import itertools
import math
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, merge_attrib
from ruamel.yaml.compat import ordereddict
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarfloat import ScalarFloat
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from fleetgen.errors import InputError


def _indents(text: str) -> tuple[int, int]:
    """(mapping indent, offset of a list's dash) as this file writes them: 2 and 2 in Kubernetes style."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    mapping, offset = 2, 2
    for parent, child in itertools.pairwise(lines):
        if parent.rstrip().endswith(":") and not parent.startswith(" "):
            depth = len(child) - len(child.lstrip(" "))
            if child.lstrip().startswith("- "):
                offset = depth
            elif depth:
                mapping = depth
    return mapping, offset


class _Representer(RoundTripRepresenter):
    """ruamel's round-trip representer, but a float always reads back as the number it was."""

    def represent_exact_float(self, data: ScalarFloat) -> ScalarNode:
        # ruamel rebuilds a float's text from its value and the layout it was read in; with sixteen significant
        # digits and an exponent it can round the last one away (4.050229389964249e+16 came back as ...248e+16).
        # Where its text reads back as another number, the shortest exact one is written instead.
        node: ScalarNode = self.represent_scalar_float(data)
        if math.isfinite(data) and float(node.value.replace("_", "")) != float(data):
            mantissa, e, exponent = repr(float(data)).partition("e")
            node.value = f"{mantissa if '.' in mantissa else mantissa + '.0'}{e}{exponent}"  # YAML 1.1 wants the dot
        return node


_Representer.add_representer(ScalarFloat, _Representer.represent_exact_float)


def _yaml(mapping: int, offset: int) -> YAML:
    yaml = YAML(typ="rt")
    yaml.Representer = _Representer
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    return yaml


class RoundTrip:
    """fleet.yaml as an editable document that dumps back in the file's own layout."""

    def __init__(self, text: str):
        self._mapping, self._offset = _indents(text)
        try:
            self.data: Any = _yaml(self._mapping, self._offset).load(text)
        except Exception as exc:  # ruamel raises many types; the file already parsed once, so this is rare
            raise InputError(f"cannot edit fleet.yaml: {exc}") from None

    def text(self) -> str:
        stream = io.StringIO()
        _yaml(self._mapping, self._offset).dump(self.data, stream)
        return stream.getvalue()


def like(old: Any, value: str) -> Any:
    """The new value in the quote style of the old one."""
    if isinstance(old, DoubleQuotedScalarString):
        return DoubleQuotedScalarString(value)
    if isinstance(old, SingleQuotedScalarString):
        return SingleQuotedScalarString(value)
    return value


def flow_map(values: dict[str, Any]) -> CommentedMap:
    out = CommentedMap(values)
    out.fa.set_flow_style()
    return out


def flow_seq(values: list[Any]) -> CommentedSeq:
    out = CommentedSeq(values)
    out.fa.set_flow_style()
    return out


def defined_in(mapping: CommentedMap, key: str) -> CommentedMap:
    """The mapping whose text holds `key`: `mapping` itself, or the anchored mapping it takes the key from by a merge key
    (`<<: *pool`). An alias is the same mapping wherever it is used, so editing this one edits every use."""
    if key in mapping._ok:  # the keys written in the mapping itself, beside those its merge keys bring
        return mapping
    for source in getattr(mapping, merge_attrib, ()):
        if isinstance(source, CommentedMap) and key in source:
            return defined_in(source, key)
    return mapping


def delete_defined(mapping: CommentedMap, key: str) -> None:
    """Delete `key` where it is written (see defined_in), and from the view of every mapping that merges it in.

    ruamel.yaml 0.19 cannot delete a key of a mapping another one merges (its update of the merging mapping indexes a
    merge entry as an old-style (position, mapping) pair): the merging mappings are brought in step here instead."""
    owner = defined_in(mapping, key)
    merging, owner._ref = owner._ref, []
    try:
        del owner[key]
    finally:
        owner._ref = merging
    for other in merging:
        still = any(isinstance(m, CommentedMap) and key in m for m in getattr(other, merge_attrib, ()))
        if key not in other._ok and not still and ordereddict.__contains__(other, key):
            ordereddict.__delitem__(other, key)

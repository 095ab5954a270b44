"""YAML 1.2 text to plain Python values with positions: the composer, the resolver and the value builder.

libyaml composes the node graph (it keeps each node's line and column, and is 26x faster than
ruamel's pure-Python composer on a 100-cluster fleet, see benchmarks/); the tags of plain scalars
follow the YAML 1.2 core schema, as editors and yaml-language-server read the file: `on` and `yes`
are strings. We build the values ourselves so that every duplicate key is reported, alias
expansion has a budget and numbers keep the text they were written as (`cuda: 12.10` must not
become 12.1).

Two places where libyaml reads YAML 1.1 are mended here: U+0085, U+2028 and U+2029 are line
breaks in 1.1 but ordinary characters in 1.2 (a comment may hold them), so they are swapped for
private-use characters the text does not contain before parsing and swapped back in every value;
and an alias has no node of its own, so where an alias stands is found from the parser's events,
only when an error needs it.
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple, cast

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from fleetgen.errors import FieldPath, Finding, Location

_TAG = "tag:yaml.org,2002:"
_STR, _SEQ, _MAP = _TAG + "str", _TAG + "seq", _TAG + "map"
YAML_11_BREAKS = "\x85\u2028\u2029"


class Limits(NamedTuple):
    """What one file may hold: its size, its values after alias expansion, and its depth."""

    bytes: int
    values: int
    depth: int


class _Core12Resolver(yaml.resolver.BaseResolver):
    """Implicit tags of the YAML 1.2 core schema (no 1.1 `yes`/`on` booleans, octal `0777` or 1:20)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:  # called once per node: kept lean
        if kind is ScalarNode:
            if implicit[0]:
                for tag, regexp in self.yaml_implicit_resolvers.get(value[:1], ()):
                    if regexp.match(value):
                        return str(tag)
            return _STR
        return _SEQ if kind is SequenceNode else _MAP

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:  # no path resolvers
        return None

    def ascend_resolver(self) -> None:
        return None


for _tag, _pattern, _first in (
    ("bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    ("float", r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)", "-+.0123456789"),
    ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("merge", r"<<", "<"),
):
    _Core12Resolver.add_implicit_resolver(_TAG + _tag, re.compile(f"^(?:{_pattern})$"), list(_first))

try:
    from yaml import cyaml

    _LIBYAML: Any = vars(cyaml)["CParser"]  # the stubs do not export it
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _LIBYAML = None

if _LIBYAML is not None:

    class Composer(_LIBYAML, _Core12Resolver):  # type: ignore[misc]
        def __init__(self, text: str):
            _LIBYAML.__init__(self, text)
            _Core12Resolver.__init__(self)

else:  # pragma: no cover - a PyYAML built without libyaml: same nodes, slower

    class Composer(  # type: ignore[no-redef]
        yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer, _Core12Resolver
    ):
        def __init__(self, text: str):
            yaml.reader.Reader.__init__(self, text)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            _Core12Resolver.__init__(self)


def protect_breaks(text: str) -> tuple[str, dict[int, str] | None]:
    """`text` with U+0085/U+2028/U+2029 swapped for unused private-use characters, and the table that swaps them back."""
    found = [ch for ch in YAML_11_BREAKS if ch in text]
    if not found:
        return text, None
    spare = (chr(code) for code in range(0xE000, 0xF900) if chr(code) not in text)
    swap = {ch: next(spare) for ch in found}
    return text.translate({ord(k): v for k, v in swap.items()}), {ord(v): k for k, v in swap.items()}


def alias_marks(text: str) -> list[Any]:
    """Where each alias (`*name`) of the stream stands, in order: the composer hands back the anchor's node instead."""
    parser = Composer(text)
    marks: list[Any] = []
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, yaml.AliasEvent):
                marks.append(event.start_mark)
    except yaml.YAMLError:  # pragma: no cover - the text was composed before; events cannot fail where nodes did not
        pass
    finally:
        parser.dispose()
    return marks


class Refused(Exception):
    """The document is over a limit; building stops at once."""


class NeedPositions(Exception):
    """A problem was found while positions were not recorded: build again with them."""


class SourceFloat(float):
    """A float that remembers how it was written, so `12.10` can still be read as a version."""

    text: str

    def __new__(cls, value: float, text: str) -> SourceFloat:
        obj = super().__new__(cls, value)
        obj.text = text
        return obj

    def __reduce__(self) -> tuple[type[SourceFloat], tuple[float, str]]:
        return SourceFloat, (float(self), self.text)  # copies and pickles keep the text (import deep-copies documents)


class SourceInt(int):
    """A whole number written other than as its digits (`010`, `0x1F`, `+5`), with that text: where
    fleet.yaml wants a name, its text is not its value, and neither may stand for the other."""

    text: str

    def __new__(cls, value: int, text: str) -> SourceInt:
        obj = super().__new__(cls, value)
        obj.text = text
        return obj

    def __reduce__(self) -> tuple[type[SourceInt], tuple[int, str]]:
        return SourceInt, (int(self), self.text)


def measure(node: Node, seen: dict[int, tuple[int, int]], limits: Limits) -> tuple[int, int]:
    """Values after alias expansion and nesting depth, computed once per node (aliases share nodes)."""
    known = seen.get(id(node))
    if known is not None:
        return known
    seen[id(node)] = (limits.values + 1, limits.depth + 1)  # a node reached again while measured: a cycle
    if isinstance(node, MappingNode):
        children = [child for pair in node.value for child in pair]
    elif isinstance(node, SequenceNode):
        children = list(node.value)
    else:
        children = []
    size, depth = 1, 0
    for child in children:
        child_size, child_depth = measure(child, seen, limits)
        size, depth = size + child_size, max(depth, child_depth)
        if size > limits.values or depth > limits.depth:
            break
    seen[id(node)] = (size, depth + 1)
    return seen[id(node)]


class Builder:
    """Values of one document; positions of every value and key when `values`/`keys` are given."""

    def __init__(
        self,
        file: str,
        limits: Limits,
        positions: tuple[dict[FieldPath, Location], dict[FieldPath, Location]] | None,
        *,
        aliases: bool,
        restore: dict[int, str] | None,
        alias_base: int = 0,
    ):
        self.file, self.limits, self.restore = file, limits, restore
        self.values, self.keys = positions if positions is not None else ({}, {})
        self.record = positions is not None
        self.findings: list[Finding] = []
        self.alias_findings: list[tuple[int, Finding]] = []  # (alias number in the stream, finding without its place)
        self.seen: set[int] | None = set() if aliases else None  # ids of the nodes met so far, to tell an alias
        self.aliases = alias_base
        self.root: Node | None = None
        self.count = 0

    def where(self, node: Node) -> Location:
        return Location(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def fail(self, path: FieldPath, node: Node, message: str, alias: int | None = None) -> None:
        if not self.record:
            raise NeedPositions
        if alias is None:
            # fix: Correct the YAML at the position named
            self.findings.append(Finding(path, message, location=self.where(node)))
        else:
            # fix: Correct the YAML at the position named
            self.alias_findings.append((alias, Finding(path, message)))

    def visit(self, node: Node, expanding: bool) -> tuple[bool, int | None]:
        """Whether the node's contents repeat what was built before, and its alias number when it is an alias."""
        if self.seen is None or expanding:
            return expanding, None
        if id(node) not in self.seen:
            self.seen.add(id(node))
            return False, None
        self.aliases += 1
        if self.root is not None:  # the first alias: now measure what aliases expand to, before expanding any
            size, depth = measure(self.root, {}, self.limits)
            self.root = None
            if size > self.limits.values:
                raise Refused(f"more than {self.limits.values:,} values after expanding aliases; refusing")
            if depth > self.limits.depth:
                raise Refused(f"nested more than {self.limits.depth} levels deep")
        return True, self.aliases

    def document(self, root: Node) -> Any:
        self.root = root
        return self.build(root, (), 1, False)

    def build(self, node: Node, path: FieldPath, depth: int, expanding: bool) -> Any:
        self.count += 1
        if self.count > self.limits.values:
            raise Refused(f"more than {self.limits.values:,} values; refusing")
        if depth > self.limits.depth:
            raise Refused(f"nested more than {self.limits.depth} levels deep")
        expanding, _ = self.visit(node, expanding)
        if self.record:
            self.values[path] = self.where(node)
        if isinstance(node, MappingNode):
            return self.mapping(node, path, depth, expanding)
        if isinstance(node, SequenceNode):
            return [self.build(item, path + (i,), depth + 1, expanding) for i, item in enumerate(node.value)]
        return self.scalar(cast(ScalarNode, node), path)

    def mapping(self, node: MappingNode, path: FieldPath, depth: int, expanding: bool) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        explicit: dict[str, Any] = {}
        for key_node, value_node in node.value:
            _, alias = self.visit(key_node, expanding)
            if key_node.tag == _TAG + "merge":
                sources, inner = [value_node], expanding
                if isinstance(value_node, SequenceNode):  # a list of mappings (itself perhaps an alias)
                    sources, (inner, _) = value_node.value, self.visit(value_node, expanding)
                for src in sources:
                    value = self.build(src, path, depth, inner)
                    if not isinstance(value, dict):
                        self.fail(path, src, "a merge key (<<) needs a mapping or a list of mappings")
                        continue
                    for k, v in value.items():
                        merged.setdefault(k, v)
                continue
            if not isinstance(key_node, ScalarNode):
                self.fail(path, key_node, "mapping keys must be plain strings" + (" (this key is an alias)" if alias else ""), alias)
                continue
            key = self.text(key_node.value)
            if key in explicit:
                first = self.keys.get(path + (key,))
                self.fail(path + (key,), key_node, f"duplicate key {key!r} (first at line {first.line if first else '?'})", alias)
                continue
            if self.record:
                self.keys[path + (key,)] = self.where(key_node)
            explicit[key] = self.build(value_node, path + (key,), depth + 1, expanding)
        return {**merged, **explicit}

    def text(self, value: str) -> str:
        return value.translate(self.restore) if self.restore else value

    def scalar(self, node: ScalarNode, path: FieldPath) -> Any:
        tag, text = node.tag, node.value
        if tag == _STR or tag == _TAG + "timestamp":
            return self.text(text)
        if tag == _TAG + "null":
            return None
        if tag == _TAG + "bool":
            return text.lower() == "true"
        if tag == _TAG + "int":
            try:
                return integer(text)
            except ValueError:
                self.fail(path, node, f"{text!r} is not an integer")
                return None
        if tag == _TAG + "float":
            return real(text)
        self.fail(path, node, f"unsupported YAML tag {self.text(tag)}")
        return None


def integer(text: str) -> int:
    """The value of a scalar the resolver reads as an integer: its digits' int, else a SourceInt with its text.
    ValueError for a text that is none."""
    digits = text.replace("_", "")
    prefix = digits.lstrip("+-")[:2].lower()
    number = int(digits, {"0x": 16, "0o": 8}.get(prefix, 10))
    return number if text == str(number) else SourceInt(number, text)


def real(text: str) -> SourceFloat:
    """The value of a scalar the resolver reads as a float, with its text. ValueError for a text that is none."""
    lowered = text.lower().lstrip("+")
    if lowered in (".inf", "-.inf", ".nan"):
        return SourceFloat({".inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}[lowered], text)
    return SourceFloat(float(text.replace("_", "")), text)

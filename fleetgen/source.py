"""Reading fleet.yaml: YAML 1.2 into plain Python values, remembering where every value stood.

libyaml composes the node graph (it keeps each node's line and column, and is 26x faster than
ruamel's pure-Python composer on a 100-cluster fleet, see benchmarks/); the tags of plain scalars
follow the YAML 1.2 core schema, as editors and yaml-language-server read the file: `on` and `yes`
are strings. We build the values ourselves so that every duplicate key is reported, alias
expansion has a budget and numbers keep the text they were written as (`cuda: 12.10` must not
become 12.1).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any, cast

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from fleetgen.errors import FieldPath, Finding, FindingsError, InputError, Location

MAX_BYTES = 16 * 1024 * 1024  # a 1,000-cluster fleet is a few MB; more is a mistake or an attack
MAX_VALUES = 1_000_000  # bounds alias expansion ("billion laughs"); a 1,000-cluster fleet has ~100k
MAX_DEPTH = 64  # fleet.yaml nests about 8 deep

_TAG = "tag:yaml.org,2002:"


class _Core12Resolver(yaml.resolver.BaseResolver):
    """Implicit tags of the YAML 1.2 core schema (no 1.1 `yes`/`on` booleans, octal `0777` or 1:20)."""


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

    class _Composer(_LIBYAML, _Core12Resolver):  # type: ignore[misc]
        def __init__(self, text: str):
            _LIBYAML.__init__(self, text)
            _Core12Resolver.__init__(self)

else:  # pragma: no cover - a PyYAML built without libyaml: same nodes, slower

    class _Composer(  # type: ignore[no-redef]
        yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer, _Core12Resolver
    ):
        def __init__(self, text: str):
            yaml.reader.Reader.__init__(self, text)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            _Core12Resolver.__init__(self)


class SourceFloat(float):
    """A float that remembers how it was written, so `12.10` can still be read as a version."""

    text: str

    def __new__(cls, value: float, text: str) -> SourceFloat:
        obj = super().__new__(cls, value)
        obj.text = text
        return obj


@dataclass
class Source:
    """A parsed fleet.yaml: its values and the position of each value and mapping key."""

    file: str
    data: Any
    text: str
    values: dict[FieldPath, Location] = field(default_factory=dict)
    keys: dict[FieldPath, Location] = field(default_factory=dict)

    def locate(self, path: FieldPath, *, key: bool = False) -> Location:
        """Position of `path`, or of its nearest ancestor that exists (a missing field's parent).

        A scalar is pointed at where its value stands; a mapping, list or empty value at its key.
        """
        if path in self.keys and (key or not _is_scalar(self.value_at(path))):
            return self.keys[path]
        for end in range(len(path), -1, -1):
            found = self.values.get(path[:end])
            if found is not None:
                return found
        return Location(self.file, 1, 1)

    def value_at(self, path: FieldPath) -> Any:
        value = self.data
        for part in path:
            try:
                value = value[part]
            except (KeyError, IndexError, TypeError):
                return None
        return value

    def place(self, finding: Finding, *, key: bool = False) -> Finding:
        return Finding(finding.path, finding.message, finding.severity, self.locate(finding.path, key=key))


def _is_scalar(value: Any) -> bool:
    return value is not None and not isinstance(value, (dict, list))


def read_fleet(path: str | FsPath) -> Source:
    """Read and parse a fleet file; raises InputError (exit 2) or FindingsError (exit 1)."""
    return parse_fleet(read_fleet_bytes(path), str(path))


def read_fleet_bytes(path: str | FsPath) -> bytes:
    """The bytes of a fleet file, refusing folders, unreadable and oversized files (InputError)."""
    fs_path = FsPath(path)
    try:
        with fs_path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a fleet file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_BYTES:
        raise InputError(f"{path}: larger than {MAX_BYTES // (1024 * 1024)} MiB; fleetgen refuses to read it")
    return raw


def parse_fleet(raw: bytes, file: str) -> Source:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        raise FindingsError(
            [Finding((), f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", location=Location(file, line, column))]
        ) from None
    composer = _Composer(text)
    try:
        root = composer.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file, 1, 1)
        raise FindingsError([Finding((), f"YAML syntax: {_syntax_message(exc)}", location=where)]) from None
    except yaml.YAMLError as exc:
        raise FindingsError([Finding((), f"YAML: {exc}", location=Location(file, 1, 1))]) from None
    except RecursionError:
        raise FindingsError([Finding((), "YAML nests too deeply", location=Location(file, 1, 1))]) from None
    finally:
        composer.dispose()
    source = Source(file=file, data=None, text=text)
    if root is None:
        raise FindingsError([Finding((), "the file is empty", location=Location(file, 1, 1))])
    size, depth = _measure(root, {})
    if size > MAX_VALUES or depth > MAX_DEPTH:
        problem = (
            f"more than {MAX_VALUES:,} values after expanding aliases; refusing"
            if size > MAX_VALUES
            else f"nested more than {MAX_DEPTH} levels deep"
        )
        raise FindingsError([Finding((), problem, location=Location(file, 1, 1))])
    builder = _Builder(source)
    source.data = builder.build(root, ())
    if builder.findings:
        raise FindingsError(sorted(builder.findings, key=lambda f: f.location or Location(file, 0, 0)))
    return source


def _syntax_message(exc: yaml.MarkedYAMLError) -> str:
    """libyaml's problem, with where the enclosing block began; inside a block it is mostly indentation."""
    problem = exc.problem or exc.context or "cannot be parsed"
    if exc.problem and exc.context and exc.context_mark and exc.context_mark is not exc.problem_mark:
        problem += f" ({exc.context.removeprefix('while parsing ')} from line {exc.context_mark.line + 1})"
        if "block" in exc.context:
            problem += "; check this line's indentation"
    return problem


def _measure(node: Node, seen: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """Values after alias expansion and nesting depth, computed once per node (aliases share nodes)."""
    known = seen.get(id(node))
    if known is not None:
        return known
    seen[id(node)] = (MAX_VALUES + 1, MAX_DEPTH + 1)  # a node reached again while measured: a cycle
    if isinstance(node, MappingNode):
        children = [child for pair in node.value for child in pair]
    elif isinstance(node, SequenceNode):
        children = list(node.value)
    else:
        children = []
    size, depth = 1, 0
    for child in children:
        child_size, child_depth = _measure(child, seen)
        size, depth = size + child_size, max(depth, child_depth)
        if size > MAX_VALUES or depth > MAX_DEPTH:
            break
    seen[id(node)] = (size, depth + 1)
    return seen[id(node)]


class _Builder:
    def __init__(self, source: Source):
        self.source = source
        self.findings: list[Finding] = []

    def where(self, node: Node) -> Location:
        return Location(self.source.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def fail(self, path: FieldPath, node: Node, message: str) -> None:
        self.findings.append(Finding(path, message, location=self.where(node)))

    def build(self, node: Node, path: FieldPath) -> Any:
        self.source.values[path] = self.where(node)
        if isinstance(node, MappingNode):
            return self.mapping(node, path)
        if isinstance(node, SequenceNode):
            return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
        return self.scalar(cast(ScalarNode, node), path)

    def mapping(self, node: MappingNode, path: FieldPath) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        explicit: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for src in sources:
                    value = self.build(src, path)
                    if not isinstance(value, dict):
                        self.fail(path, src, "a merge key (<<) needs a mapping or a list of mappings")
                        continue
                    for k, v in value.items():
                        merged.setdefault(k, v)
                continue
            if not isinstance(key_node, ScalarNode):
                self.fail(path, key_node, "mapping keys must be plain strings")
                continue
            key = str(key_node.value)
            if key in explicit:
                first = self.source.keys[path + (key,)]
                self.fail(path + (key,), key_node, f"duplicate key {key!r} (first at line {first.line})")
                continue
            self.source.keys[path + (key,)] = self.where(key_node)
            explicit[key] = self.build(value_node, path + (key,))
        return {**merged, **explicit}

    def scalar(self, node: ScalarNode, path: FieldPath) -> Any:
        tag, text = node.tag, node.value
        if tag == _TAG + "str" or tag == _TAG + "timestamp":
            return text
        if tag == _TAG + "null":
            return None
        if tag == _TAG + "bool":
            return text.lower() == "true"
        if tag == _TAG + "int":
            digits = text.replace("_", "")
            prefix = digits.lstrip("+-")[:2].lower()
            try:
                return int(digits, {"0x": 16, "0o": 8}.get(prefix, 10))
            except ValueError:
                self.fail(path, node, f"{text!r} is not an integer")
                return None
        if tag == _TAG + "float":
            lowered = text.lower().lstrip("+")
            if lowered in (".inf", "-.inf", ".nan"):
                value = {".inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}[lowered]
            else:
                value = float(text.replace("_", ""))
            return SourceFloat(value, text)
        self.fail(path, node, f"unsupported YAML tag {tag}")
        return None

"""Reading fleet.yaml and other YAML input: values, the position of every value, and limits.

Every file fleetgen reads as YAML (fleet.yaml, live dumps) goes through here, so each gets the same
YAML 1.2 reading (fleetgen.source.yaml_nodes), the same limits on size, depth and alias expansion, and
problems reported in one line at their file:line:column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

import yaml

from fleetgen.errors import FieldPath, Finding, FindingsError, InputError, Location
from fleetgen.source.collector import collector_paused
from fleetgen.source.yaml_nodes import Builder, Composer, Limits, NeedPositions, Refused, alias_marks, protect_breaks
from fleetgen.source.yaml_nodes import SourceFloat as SourceFloat  # the model imports the numbers that keep their text
from fleetgen.source.yaml_nodes import SourceInt as SourceInt  # from here

MAX_BYTES = 16 * 1024 * 1024  # a 1,000-cluster fleet is a few MB; more is a mistake or an attack
MAX_VALUES = 1_000_000  # bounds alias expansion ("billion laughs"); a 1,000-cluster fleet has ~100k
MAX_DEPTH = 64  # fleet.yaml nests about 8 deep
FLEET_LIMITS = Limits(MAX_BYTES, MAX_VALUES, MAX_DEPTH)


Positions = tuple[dict[FieldPath, Location], dict[FieldPath, Location]]  # where each value stands, where each key


@dataclass
class Source:
    """A parsed fleet.yaml: its values and the position of each value and mapping key.

    `positions` None: the values came from elsewhere than this parse (the cache keeps what a text that passed parses
    to, checks/kept_values.py), and the positions are read from the text the first time anything asks for them."""

    file: str
    data: Any
    text: str
    positions: Positions | None = field(default_factory=lambda: ({}, {}), repr=False)

    @property
    def values(self) -> dict[FieldPath, Location]:
        return self._positions()[0]

    @property
    def keys(self) -> dict[FieldPath, Location]:
        return self._positions()[1]

    def _positions(self) -> Positions:
        if self.positions is None:
            again = parse_fleet(self.text.encode("utf-8"), self.file)
            self.positions = (again.values, again.keys)
        return self.positions

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
        # fix: Correct the YAML at the position named
        return Finding(finding.path, finding.message, finding.severity, self.locate(finding.path, key=key))


def _is_scalar(value: Any) -> bool:
    return value is not None and not isinstance(value, (dict, list))


def read_fleet(path: str | FsPath) -> Source:
    """Read and parse a fleet file; raises InputError (exit 2) or FindingsError (exit 1)."""
    return parse_fleet(read_fleet_bytes(path), str(path))


def read_fleet_bytes(path: str | FsPath) -> bytes:
    """The bytes of a fleet file, refusing folders, unreadable and oversized files (InputError)."""
    return read_bytes(path, FLEET_LIMITS, "a fleet file")


def read_bytes(path: str | FsPath, limits: Limits, what: str) -> bytes:
    """The bytes of a file of at most `limits.bytes`, refusing folders and unreadable files (InputError)."""
    fs_path = FsPath(path)
    try:
        with fs_path.open("rb") as handle:
            raw = handle.read(limits.bytes + 1)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not {what}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    if len(raw) > limits.bytes:
        raise InputError(f"{path}: larger than {limits.bytes // (1024 * 1024)} MiB; fleetgen refuses to read it")
    return raw


def parse_fleet(raw: bytes, file: str, *, positions: bool = True) -> Source:
    """The one document of a fleet file, with positions unless told not to; FindingsError (exit 1) for any problem."""
    sources = parse_documents(raw, file, FLEET_LIMITS, positions=positions, single=True)
    if not sources:
        # fix: Write the fleet into the file (fleetgen init writes a start)
        raise FindingsError([Finding((), "the file is empty", location=Location(file, 1, 1))])
    return sources[0]


def parse_documents(raw: bytes, file: str, limits: Limits, *, positions: bool = True, single: bool = False) -> list[Source]:
    """Each non-empty document of a YAML stream. Without `positions` only values are kept (less memory, faster);
    a problem found on the way is still reported at its position (the text is read again to find it)."""
    text = _decode(raw, file)
    if len(raw) > limits.bytes:
        # fix: Split the file, or check it is the file you meant
        raise FindingsError([Finding((), f"larger than {limits.bytes // (1024 * 1024)} MiB; refusing", location=Location(file, 1, 1))])
    prepared, restore = protect_breaks(text)
    with collector_paused():
        try:
            return _documents(prepared, text, file, limits, positions=positions, single=single, restore=restore)
        except NeedPositions:
            return _documents(prepared, text, file, limits, positions=True, single=single, restore=restore)


def _decode(raw: bytes, file: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        # fix: Save the file as UTF-8
        raise FindingsError(
            [Finding((), f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", location=Location(file, line, column))]
        ) from None


def _documents(
    prepared: str, text: str, file: str, limits: Limits, *, positions: bool, single: bool, restore: dict[int, str] | None
) -> list[Source]:
    composer = Composer(prepared)
    aliases = "*" in prepared  # no alias without a `*`: then no node can be reached twice
    out: list[Source] = []
    findings: list[Finding] = []
    alias_findings: list[tuple[int, Finding]] = []
    stream_aliases = 0
    try:
        while True:
            try:
                root = composer.get_single_node() if single else composer.get_node() if composer.check_node() else None
            except yaml.YAMLError as exc:
                raise FindingsError([_yaml_problem(exc, prepared, file)]) from None
            except RecursionError:
                # fix: Nest the YAML less deeply
                raise FindingsError([Finding((), "YAML nests too deeply", location=Location(file, 1, 1))]) from None
            if root is None:
                break
            source = Source(file=file, data=None, text=text)
            builder = Builder(
                file,
                limits,
                source.positions if positions else None,
                aliases=aliases,
                restore=restore,
                alias_base=stream_aliases,
            )
            try:
                source.data = builder.document(root)
            except Refused as exc:
                # fix: Correct the YAML at the position named
                raise FindingsError([Finding((), str(exc), location=builder.where(root))]) from None
            stream_aliases = builder.aliases
            findings += builder.findings
            alias_findings += builder.alias_findings
            out.append(source)
            if single:
                break
    finally:
        composer.dispose()
    if alias_findings:
        marks = alias_marks(prepared)
        for number, finding in alias_findings:
            mark = marks[number - 1] if number <= len(marks) else None
            where = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file, 1, 1)
            # fix: Correct the YAML at the position named
            findings.append(Finding(finding.path, finding.message, location=where))
    if findings:
        raise FindingsError(sorted(findings, key=lambda f: f.location or Location(file, 0, 0)))
    return out


def _yaml_problem(exc: yaml.YAMLError, prepared: str, file: str) -> Finding:
    """One line for what libyaml refused, at its line and column."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file, 1, 1)
        # fix: Correct the YAML syntax at the position named
        return Finding((), f"YAML syntax: {_one_line(_syntax_message(exc))}", location=where)
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow; its position counts UTF-8 bytes
        before = prepared.encode("utf-8")[: exc.position].decode("utf-8", "replace")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        hint = f"; inside double quotes write it as \\u{code:04x}" if code < 0x10000 else ""
        # fix: Remove the character (or write it as an escape in a quoted string)
        return Finding((), f"character U+{code:04X} is not allowed in YAML{hint}", location=Location(file, line, column))
    # fix: Correct the YAML at the position named
    return Finding((), f"YAML: {_one_line(str(exc))}", location=Location(file, 1, 1))


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _syntax_message(exc: yaml.MarkedYAMLError) -> str:
    """libyaml's problem, with where the enclosing block began; inside a block it is mostly indentation."""
    problem = exc.problem or exc.context or "cannot be parsed"
    if exc.problem and exc.context and exc.context_mark and exc.context_mark is not exc.problem_mark:
        problem += f" ({exc.context.removeprefix('while parsing ')} from line {exc.context_mark.line + 1})"
        if "block" in exc.context:
            problem += "; check this line's indentation"
    return problem

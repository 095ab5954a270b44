"""Constrained value types of fleet.yaml: Kubernetes names, labels, quantities and versions."""

import datetime
import re
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import total_ordering
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, WithJsonSchema
from pydantic_core import core_schema

from fleetgen.model.value_checks import After, Before
from fleetgen.source.reader import SourceFloat, SourceInt

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def as_text(value: Any) -> Any:
    """Numbers stand for text where fleet.yaml wants text, as written: `cost-center: 4521`, `cuda: 12.10`."""
    if isinstance(value, (SourceFloat, SourceInt)):
        return value.text
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def as_name_text(value: Any) -> Any:
    """A whole number written as its digits stands for them where fleet.yaml wants a name or label
    (`costCenter: 4780`); any other number does not: whether `12.50` or `010` is the name meant depends on how
    it was written, which no editor's schema can see (YAML reads `010` as 10), so it must be quoted."""
    if isinstance(value, (float, SourceInt)):
        shown = value.text if isinstance(value, (SourceFloat, SourceInt)) else repr(value)
        raise ValueError(f"{shown} is a number, not a name: write it in quotes ('{shown}')")
    return as_text(value)


def _whole_number(digits: int) -> dict[str, Any]:
    """The whole numbers a name type takes (non-negative, at most `digits` digits): in JSON Schema terms."""
    return {"type": "integer", "minimum": 0, "maximum": 10**digits - 1}


def _name_or_number(schema: dict[str, Any], digits: int) -> WithJsonSchema:
    return WithJsonSchema({"anyOf": [schema, _whole_number(digits)]})


# One visible line: what Line checks, as a pattern (free text also takes any number, read as its text).
SINGLE_LINE = "^[^\\n\\r\\t\\u0000]*$"


def _check_dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        raise ValueError(  # fix: Use lowercase letters, digits and '-', starting and ending with a letter or digit
            f"{value!r} is not a DNS-1123 label (lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters)"
        )
    return value


def _check_dns_subdomain(value: str) -> str:  # fix: Use lowercase letters, digits, '-' and '.'
    if len(value) > 253 or not _DNS_SUBDOMAIN.fullmatch(value):
        raise ValueError(f"{value!r} is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', at most 253 characters)")
    return value


def _check_label_key(value: str) -> str:  # fix: Write a label key as [prefix/]name
    prefix, slash, name = value.rpartition("/")
    bad_prefix = bool(slash) and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix))  # "/name" has an empty one
    if bad_prefix or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        raise ValueError(f"{value!r} is not a Kubernetes label key ([prefix/]name, name at most 63 characters)")
    return value


def _check_label_value(value: str) -> str:
    if value and (len(value) > 63 or not _LABEL_NAME.fullmatch(value)):
        raise ValueError(  # fix: Use letters, digits, '-', '_' and '.', starting and ending with a letter or digit
            f"{value!r} is not a Kubernetes label value (at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit)"
        )
    return value


def _check_single_line(value: str) -> str:
    if any(ch in value for ch in "\n\r\t\x00"):
        raise ValueError("must be a single line of text")  # fix: Write the value on one line
    return value


Text = Annotated[str, Before(as_text), WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "number"}]})]
Line = Annotated[
    str,
    Before(as_text),
    After(_check_single_line),
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": SINGLE_LINE}, {"type": "number"}]}),
]
# A machine-read string with a pattern of its own (a URL, a chart version, a duration): text only, never a number.
Token = Annotated[str, After(_check_single_line)]
DnsLabel = Annotated[
    str,
    Before(as_name_text),
    After(_check_dns_label),
    _name_or_number({"type": "string", "pattern": f"^{_DNS_LABEL.pattern}$", "maxLength": 63}, 63),
]
DnsSubdomain = Annotated[
    str,
    Before(as_name_text),
    After(_check_dns_subdomain),
    _name_or_number({"type": "string", "pattern": f"^{_DNS_SUBDOMAIN.pattern}$", "maxLength": 253}, 253),
]
NAME_PLACEHOLDERS = ("team", "namespace")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def fill_name(template: str, team: str) -> str:
    """A name template with its placeholders replaced for one team ({namespace} is team-<team>)."""
    values = {"team": team, "namespace": f"team-{team}"}
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _check_name_template(value: str) -> str:  # fix: Use only the placeholders {team} and {namespace}
    unknown = [p for p in _PLACEHOLDER.findall(value) if p not in NAME_PLACEHOLDERS]
    if unknown:
        raise ValueError(f"unknown placeholder {{{unknown[0]}}} in {value!r}; the placeholders are {{team}} and {{namespace}}")
    sample = fill_name(value, "a")
    if len(value) > 190 or not _DNS_SUBDOMAIN.fullmatch(sample):
        raise ValueError(  # fix: Use lowercase letters, digits, '-' and '.' around the placeholders
            f"{value!r} does not make a DNS-1123 subdomain name (lowercase letters, digits, '-' and '.', "
            "at most 190 characters, with {team} and {namespace} as placeholders)"
        )
    return value


# A DNS-1123 subdomain once {team} and {namespace} are filled in (each stands for letters and digits at its ends).
_T = "([a-z0-9]|\\{team\\}|\\{namespace\\})"
_TEMPLATE_SCHEMA = f"^({_T}([-a-z0-9]|{_T})*{_T}|{_T})(\\.({_T}([-a-z0-9]|{_T})*{_T}|{_T}))*$"
NameTemplate = Annotated[
    str,
    Before(as_name_text),
    After(_check_name_template),
    _name_or_number({"type": "string", "pattern": _TEMPLATE_SCHEMA, "maxLength": 190}, 190),
]
# [prefix/]name: the prefix a DNS subdomain of at most 253 characters, the name at most 63.
_LABEL_KEY_SCHEMA = f"^((?=[^/]{{1,253}}/){_DNS_SUBDOMAIN.pattern}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?$"
LabelKey = Annotated[str, After(_check_label_key), WithJsonSchema({"type": "string", "pattern": _LABEL_KEY_SCHEMA})]
LabelValue = Annotated[
    str,
    Before(as_name_text),
    After(_check_label_value),
    _name_or_number({"type": "string", "pattern": f"^({_LABEL_NAME.pattern})?$", "maxLength": 63}, 63),
]

# What render writes in a cluster's folder (a file, or a folder by its first part): hand-written files live elsewhere.
RENDERED_IN_CLUSTER = ("kustomization.yaml", "cluster.yaml", "observability.yaml", "patches", "platform", "flux-system", "argocd", "teams")
_PATH_PART = re.compile(r"[A-Za-z0-9_][-A-Za-z0-9_.]*")


def _check_hand_written(value: str) -> str:
    parts = value.split("/")
    if len(value) > 1024 or not all(_PATH_PART.fullmatch(p) for p in parts):
        raise ValueError(  # fix: Write a relative path inside the cluster's folder, without '..'
            f"{value!r} is not a path inside the cluster's folder ('/'-separated names of letters, digits, '-', '_' and '.', "
            "relative, no '..')"
        )
    if parts[0] in RENDERED_IN_CLUSTER:
        raise ValueError(f"{value!r}: {parts[0]} is render's; keep hand-written files elsewhere, e.g. hand-written/")
    return value


_RENDERED_NAMES = "|".join(name.replace(".", r"\.") for name in RENDERED_IN_CLUSTER)  # as a JSON Schema (ECMA) pattern
HandWrittenPath = Annotated[
    str,
    After(_check_hand_written),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": "^[A-Za-z0-9_][-A-Za-z0-9_.]*(/[A-Za-z0-9_][-A-Za-z0-9_.]*)*$",
            "maxLength": 1024,
            "not": {"pattern": f"^({_RENDERED_NAMES})(/|$)"},
        }
    ),
]

# Unambiguous, so a long run of digits that fails to match fails in linear time (`\d+\.?\d*` backtracks: O(n^2)); an
# exponent of at most three digits, so that computing 1e999999999 cannot stall (any beyond e18 is out of bounds anyway).
_QUANTITY = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d{1,3})?")
_BYTE_UNIT = re.compile(r"(\d+(?:\.\d+)?)\s*([kKMGTPE])i?[bB]")
_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    **{s: Fraction(1024**i) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), start=1)},
}


# The API server's bound on a quantity (k8s.io/apimachinery resource.Quantity, `maxAllowed`): no magnitude above the
# largest int64. Beyond it Kubernetes caps what was written, and a renderer would meet a number it cannot print (5,000
# digits): so it is refused here, where every quantity is read. A step finer than 1n is rounded up by Kubernetes, not
# refused, and no schema can say it of a number, so it is kept as written.
LARGEST_QUANTITY = 2**63 - 1
# 2^63-1 with nine decimals is 29 characters; a longer quantity can only be out of bounds or padded with zeros.
LONGEST_QUANTITY = 64


def shown(text: str, width: int = 40) -> str:
    """`text` quoted for a one-line message, cut in the middle when it is long."""
    if len(text) <= width:
        return repr(text)
    return f"{text[: width // 2]!r}...{text[-8:]!r} ({len(text):,} characters)"


@total_ordering
class Quantity:
    """A Kubernetes resource quantity: written as the user wrote it, compared by value (1Gi == 1024Mi).

    Only quantities within the API server's bound are taken: at most 2^63-1 in magnitude."""

    __slots__ = ("text", "value")

    def __init__(self, text: str):  # fix: Write a quantity such as 500m, 64 or 256Gi, of at most 2^63-1
        match = _QUANTITY.fullmatch(text)
        if match and len(text) > LONGEST_QUANTITY:
            whole = match.group(1).lstrip("+-").split(".")[0].lstrip("0")
            if len(whole) > len(str(LARGEST_QUANTITY)) and not (match.group(2) or "").startswith(("e-", "E-")):  # 5,000 nines
                raise ValueError(f"{shown(text)} is larger than Kubernetes' largest quantity, 2^63-1 ({LARGEST_QUANTITY})")
            raise ValueError(f"{shown(text)} is too long for a quantity: fleetgen reads at most {LONGEST_QUANTITY} characters")
        if not match:
            byte_unit = _BYTE_UNIT.fullmatch(text) if len(text) <= LONGEST_QUANTITY else None  # 64Gb, 512MB: a habit from other tools
            hint = f"; did you mean {byte_unit.group(1) + byte_unit.group(2).upper() + 'i'!r}?" if byte_unit else ""
            raise ValueError(f"{shown(text)} is not a Kubernetes quantity (e.g. 500m, 64, 256Gi, 1.5T){hint}")
        number, suffix = match.group(1), match.group(2) or ""
        scale = _SUFFIX[suffix] if suffix in _SUFFIX else Fraction(10) ** int(suffix[1:])  # 1e3, 1E3; but 1E and 1Ei are suffixes
        value = Fraction(Decimal(number)) * scale
        if abs(value) > LARGEST_QUANTITY:
            raise ValueError(f"{shown(text)} is larger than Kubernetes' largest quantity, 2^63-1 ({LARGEST_QUANTITY})")
        self.text = text
        self.value = value

    @classmethod
    def parse(cls, raw: Any) -> "Quantity":
        if isinstance(raw, Quantity):
            return raw
        raw = as_text(raw)
        if not isinstance(raw, str):
            raise ValueError("must be a Kubernetes quantity such as 64, 500m or 256Gi")  # fix: Write a quantity such as 64, 500m or 256Gi
        return cls(raw)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: "Quantity") -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __mul__(self, factor: int) -> "Quantity":
        """The quantity times a whole number, written in this quantity's own suffix where it has one."""
        match = _QUANTITY.fullmatch(self.text)
        assert match is not None
        number, suffix = Decimal(match.group(1)) * factor, match.group(2) or ""
        return Quantity(f"{number.normalize():f}{suffix}")

    def __str__(self) -> str:
        return self.text

    def canonical(self, binary: bool = True) -> str:
        """One spelling per value (262144Mi and 256Gi are both 256Gi): whole numbers in the largest binary suffix that divides
        them (sizes; `binary=False` for counts such as CPUs), anything else as an exact plain decimal. For text that must not churn."""
        if binary and self.value.denominator == 1 and self.value:
            for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
                whole, rest = divmod(self.value.numerator, _SUFFIX[suffix].numerator)
                if not rest:
                    return f"{whole}{suffix}"
            return str(self.value.numerator)
        with localcontext(prec=len(str(self.value.numerator)) + len(str(self.value.denominator))):  # exact, not 28 digits
            return f"{(Decimal(self.value.numerator) / Decimal(self.value.denominator)).normalize():f}"

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"

    @classmethod
    def size(cls, raw: Any) -> "Quantity":  # fix: Write a quantity such as 64, 500m or 256Gi
        """A quantity that is a size, count or quota: never negative (what the model holds)."""
        if isinstance(raw, bool):
            raise ValueError("must be a Kubernetes quantity such as 64, 500m or 256Gi, not a boolean")
        quantity = cls.parse(raw)
        if quantity.value < 0:
            raise ValueError(f"{quantity.text!r} is negative; a size or quota is 0 or more")  # fix: Write 0 or more
        return quantity

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.size,
            json_schema_input_schema=core_schema.union_schema(
                [
                    core_schema.str_schema(pattern=f"^{_QUANTITY.pattern.replace('[+-]?', '[+]?', 1)}$", max_length=LONGEST_QUANTITY),
                    core_schema.float_schema(ge=0, le=LARGEST_QUANTITY),
                ]
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )


@total_ordering
class Version:
    """A dotted version (1.29.4, 550.54.15, 12.4) compared part by part, kept as written. Missing parts count as
    zeros: 1.30 is 1.30.0 (a Kubernetes target written either way is the same release, and never a downgrade)."""

    __slots__ = ("text", "parts")

    def __init__(self, text: str):
        pieces = text.split(".")
        if not 1 <= len(pieces) <= 4 or not all(p.isdigit() and p.isascii() for p in pieces):
            raise ValueError(f"{text!r} is not a version such as 1.29.4 or 550.54.15")  # fix: Write a version such as 1.29.4 or 550.54.15
        self.text = text
        self.parts = tuple(int(p) for p in pieces)

    @classmethod
    def parse(cls, raw: Any) -> "Version":
        if isinstance(raw, Version):
            return raw
        raw = as_text(raw)
        if not isinstance(raw, str):
            raise ValueError("must be a version such as 1.29.4")  # fix: Write a version such as 1.29.4
        return cls(raw.removeprefix("v"))

    @property
    def minor(self) -> tuple[int, int]:
        major, minor = (*self.parts, 0)[:2]
        return (major, minor)

    @property
    def key(self) -> tuple[int, ...]:
        """The parts without trailing zeros: what equality, order and hashing compare."""
        parts = self.parts
        while parts and parts[-1] == 0:
            parts = parts[:-1]
        return parts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.key == other.key

    def __lt__(self, other: "Version") -> bool:
        return self.key < other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Version({self.text!r})"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.parse,
            json_schema_input_schema=core_schema.union_schema(
                [core_schema.str_schema(pattern=r"^v?\d+(\.\d+){0,3}$"), core_schema.float_schema(ge=0)]
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )


# Dates and times as fleet.yaml writes them (ISO 8601), one pattern for the model and the JSON Schema alike: a number
# is no date (pydantic would read it as seconds since 1970). Whether the day exists (30 February) is the model's alone.
_DAY = r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
_DATE = f"^{_DAY}$"
_TIMESTAMP = f"^{_DAY}[Tt ]([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d(\\.\\d{{1,6}})?)?([Zz]|[+-]([01]\\d|2[0-3]):?[0-5]\\d)?$"


def _written(pattern: str, what: str) -> Before:
    def check(value: Any) -> Any:
        if isinstance(value, (datetime.date, datetime.datetime)):
            return value
        if not isinstance(value, str) or not re.fullmatch(pattern, value):
            raise ValueError(f"must be {what}")  # fix: Write a value of the kind the message names
        return value

    return Before(check)


Date = Annotated[datetime.date, _written(_DATE, "a date such as 2026-12-20"), WithJsonSchema({"type": "string", "pattern": _DATE})]
Timestamp = Annotated[
    datetime.datetime,
    _written(_TIMESTAMP, "a time such as 2026-11-24T09:00:00Z"),
    WithJsonSchema({"type": "string", "pattern": _TIMESTAMP}),
]

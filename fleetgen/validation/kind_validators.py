"""One jsonschema-rs validator for many kinds' schemas, each kind reached by the key its objects are wrapped under.

jsonschema-rs compiles each schema a validator reaches once per validator. Compiled one kind at a time, the
example's 20 core kinds reach 178 Kubernetes definitions but only 50 distinct ones, and its 34 kinds carry
api_rules.yaml's rules in only 9 distinct sets; in one document each of them is compiled once.

The document holds each kind's schema joined with its API rules (`allOf`: the schema, then a `$ref` to the
rules). Each Kubernetes version's definitions are an embedded resource (a `$defs` entry with its own `$id`)
that also holds that version's core kinds, so their `#/$defs/...` references resolve there, as in
kubernetes-validate's own files; each custom resource is a resource of its own, as when compiled alone. The
rule sets sit in the root's `$defs` under their names (`ApiRules.name`). Root `properties` maps each kind's
key to its schema: `{key: object}` is validated against exactly that kind's schema, and each error is
handed back as the object alone would give it (its instance path without the key). An error from a rule
set reports its schema path from that set's entry: `["$defs", <name>, "allOf", <rule>, ...]`.
"""

from typing import Any, NamedTuple

import jsonschema_rs

from fleetgen.validation.api_rules import ApiRules

_ROOT_ID = "urn:fleetgen:kinds"
_ROOT_KEYS = ("$defs", "$schema", "$id")  # a schema's keys that stay at its resource's root


class KindSchema(NamedTuple):
    """One kind to compile: its key, its schema (a core kind's with the definitions it reaches under `$defs`),
    the Kubernetes version whose definitions those are (None for a custom resource), and its API rules."""

    key: str
    schema: dict[str, Any]
    version: str | None
    rules: ApiRules


class Unwrapped:
    """A validator error as the object alone gives it: its instance path without the kind's key."""

    def __init__(self, error: Any):
        self.schema_path = error.schema_path
        self.instance_path = list(error.instance_path)[1:]
        self.instance = error.instance
        self.message = error.message


class KindValidator(NamedTuple):
    """One kind's entry of a validator compiled by `compile_kinds`."""

    validator: Any
    key: str

    def is_valid(self, body: dict[str, Any]) -> bool:
        return bool(self.validator.is_valid({self.key: body}))

    def errors(self, body: dict[str, Any]) -> list[Unwrapped]:
        return [Unwrapped(e) for e in self.validator.iter_errors({self.key: body})]


def compile_kinds(kinds: list[KindSchema]) -> dict[str, KindValidator]:
    """One validator for all of `kinds`, by key."""
    definitions: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    for kind in kinds:
        own: dict[str, Any] = {k: v for k, v in kind.schema.items() if k not in _ROOT_KEYS}
        if kind.rules.schema is not None:
            definitions[kind.rules.name] = kind.rules.schema
            own = {"allOf": [own, {"$ref": f"{_ROOT_ID}#/$defs/{kind.rules.name}"}]}
        if kind.version is None:  # its own resource: its `#` references mean what they mean compiled alone
            root = {k: kind.schema[k] for k in _ROOT_KEYS if k in kind.schema}
            # fleetgen's own $id last: two --crd schemas that name the same $id would meet in the one document
            properties[kind.key] = {**root, **own, "$id": f"urn:fleetgen:kind:{kind.key.lstrip('@')}"}
            continue
        version_id = f"urn:fleetgen:kubernetes:{kind.version}"
        version = definitions.setdefault(f"@kubernetes-{kind.version}", {"$id": version_id, "$defs": {}})
        version["$defs"].update(kind.schema.get("$defs", {}))
        version["$defs"][kind.key] = own
        properties[kind.key] = {"$ref": f"{version_id}#/$defs/{kind.key}"}
    document = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": _ROOT_ID, "$defs": definitions, "properties": properties}
    validator = jsonschema_rs.validator_for(document)
    return {kind.key: KindValidator(validator, kind.key) for kind in kinds}

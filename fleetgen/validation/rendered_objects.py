"""Schema validation of rendered objects, for each cluster's own Kubernetes version.

Core kinds use kubernetes-validate's strict schemas (unknown fields rejected); custom resources
use the CRD schemas shipped in schemas/crds, or CRDs the user passes (`--crd`), which win. Each
(Kubernetes minor, apiVersion, kind) schema is bundled with just the definitions it reaches, and the
kinds a run validates are compiled together with jsonschema-rs (kind_validators.py): about 2.5 us an
object, against about 12 ms for `kubernetes_validate.validate()`, which re-reads its 1.3 MB of
definitions on every call.

Beyond the schema, the API server's own rules: each CRD's CEL rules (`x-kubernetes-validations`, see
cel.py) and the Go validation rules of api_rules.yaml (api_rules.py), compiled once per kind.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.util
import json
import re
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from fleetgen.checks.load import LoadedFleet
from fleetgen.checks.record_times import future_records
from fleetgen.compat import removed_api
from fleetgen.compat.chart_kinds import unknown_chart_findings
from fleetgen.compat.gpu_operator import driver_findings
from fleetgen.errors import FieldPath, Finding, FindingsError, Severity
from fleetgen.model import Version
from fleetgen.render import Manifest
from fleetgen.render.rendered import Rendered
from fleetgen.validation.api_rules import ApiRuleBook, ServerChecks
from fleetgen.validation.cel_rules import CelRules, Rule
from fleetgen.validation.core_definitions import CoreDefinitions, references_in
from fleetgen.validation.crd_schemas import GroupVersionKind, parse_shipped_name
from fleetgen.validation.kind_validators import KindSchema, KindValidator, compile_kinds
from fleetgen.validation.policy_lints import lint_cluster, lint_no_credential_in_secrets
from fleetgen.validation.reconcile import reconcile_findings
from fleetgen.validation.verdicts import ClusterVerdict, ClusterVerdicts

Minor = tuple[int, int]


def _package_folder(name: str) -> Path:
    """An installed package's folder, found without running its __init__."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ImportError(f"{name} is not installed")
    return Path(spec.origin).parent


# kubernetes-validate's schema files, found without importing the package: its __init__ imports
# jsonschema (30 ms of every command), and fleetgen reads only the files.
_CORE = _package_folder("kubernetes_validate") / "kubernetes-json-schema"
_SHIPPED = resources.files("fleetgen") / "schemas" / "crds"
_STRICT_DIR = re.compile(r"v(\d+)\.(\d+)\.\d+-local-strict")


class Lookup(NamedTuple):
    """The compiled validator for an object, or why there is none."""

    validator: KindValidator | None
    note: str = ""
    severity: Severity = Severity.WARNING
    server: ServerChecks | None = None  # the API server's rules beyond the schema


class Schemas:
    """Every schema fleetgen validates against, compiled on first use and kept."""

    def __init__(self, crds: dict[GroupVersionKind, dict[str, Any]] | None = None):
        # fleetgen's own CRD schemas (0.7 MB of JSON) are read when a kind first needs one; a --crd CRD wins.
        self._shipped = {parse_shipped_name(e.name): e for e in _SHIPPED.iterdir() if e.name.endswith(".json")}
        self._crds: dict[GroupVersionKind, dict[str, Any]] = dict(crds or {})
        # Names the schema set beyond fleetgen's own files (which verdicts.py's salt covers): the --crd CRDs.
        self.digest = hashlib.sha256(repr(sorted((crds or {}).items())).encode()).hexdigest()
        # A CEL rule fleetgen cannot evaluate is warned about once a run, at the first object that
        # reaches it, so what validating one cluster says then depends on the clusters before it.
        # fleetgen's own CRDs have none (a test says so); a --crd CRD may.
        self.warns_once = any(CelRules(schema).unsupported for schema in (crds or {}).values())
        self._minors = sorted((int(m.group(1)), int(m.group(2))) for d in _CORE.iterdir() if (m := _STRICT_DIR.fullmatch(d.name)))
        self._definitions: dict[Minor, CoreDefinitions] = {}
        self._minor_of: dict[Minor, Minor] = {}
        self._compiled: dict[tuple[Any, ...], Lookup] = {}
        self._api_rules = ApiRuleBook()
        self._warned: set[str] = set()  # CEL rules reported as not evaluable, once each

    @property
    def minors(self) -> list[Minor]:
        return list(self._minors)

    def lookup(self, api_version: str, kind: str, kubernetes: Version) -> Lookup:
        key = self._key(api_version, kind, kubernetes)
        if key not in self._compiled:
            self.prepare([(api_version, kind, kubernetes)])
        return self._compiled[key]

    def prepare(self, wanted: Iterable[tuple[str, str, Version]]) -> None:
        """Compile the lookups of these (apiVersion, kind, Kubernetes version) not compiled yet, in one validator
        (kind_validators.py): asked for all the kinds a run renders, it compiles each definition and each set of
        API rules once."""
        fresh: dict[tuple[Any, ...], tuple[str, str, Version]] = {}
        for api_version, kind, kubernetes in wanted:
            key = self._key(api_version, kind, kubernetes)
            if key not in self._compiled:
                fresh.setdefault(key, (api_version, kind, kubernetes))
        compiling: list[tuple[tuple[Any, ...], KindSchema, ServerChecks]] = []
        for key, (api_version, kind, kubernetes) in fresh.items():
            if key[0] == "crd":
                schema = self._crd((api_version, kind))
                cel, version = CelRules(schema), None
            else:
                core = self._core(key[1], api_version, kind, kubernetes)
                if isinstance(core, Lookup):
                    self._compiled[key] = core
                    continue
                schema, cel, version = core, None, f"{key[1][0]}.{key[1][1]}"
            server = ServerChecks(self._api_rules, kind, cel, self._warned)
            compiling.append((key, KindSchema(f"@kind{len(compiling)}", schema, version, server.api), server))
        validators = compile_kinds([entry for _, entry, _ in compiling]) if compiling else {}
        for key, entry, server in compiling:
            self._compiled[key] = Lookup(validators[entry.key], server=server)

    def _key(self, api_version: str, kind: str, kubernetes: Version) -> tuple[Any, ...]:
        if self._is_custom((api_version, kind)):
            return ("crd", api_version, kind)
        return ("core", self.schema_minor(kubernetes), api_version, kind)

    def schema_minor(self, kubernetes: Version) -> Minor:
        """The newest schema version not newer than the cluster's (the oldest when it is older than all)."""
        minor = kubernetes.minor
        if minor not in self._minor_of:
            older = [m for m in self._minors if m <= minor]
            self._minor_of[minor] = older[-1] if older else self._minors[0]
        return self._minor_of[minor]

    def _core(self, minor: Minor, api_version: str, kind: str, kubernetes: Version) -> dict[str, Any] | Lookup:
        """A core kind's schema bundle, or the lookup that says why there is none."""
        removed = removed_api(api_version, kind, kubernetes)
        if removed:
            return Lookup(None, removed, Severity.ERROR)
        schema = self._core_schema(minor, api_version, kind)
        if schema is None:
            version = f"{kubernetes.minor[0]}.{kubernetes.minor[1]}"
            return Lookup(None, f"no schema for {api_version} {kind} in Kubernetes {version} or fleetgen's CRDs (pass --crd)")
        return schema

    def transition_rules_of(self, api_version: str, kind: str) -> list[Rule]:
        """The transition rules of one kind: a custom resource's, from its compiled lookup when there is one."""
        if not self._is_custom((api_version, kind)):
            return []  # core kinds carry no CEL rules
        compiled = self._compiled.get(("crd", api_version, kind))
        if compiled is not None:
            return compiled.server.transition if compiled.server is not None else []
        return CelRules(self._crd((api_version, kind))).transition

    def transition_rules(self) -> list[str]:
        """The CRDs' transition rules (reading `oldSelf`): the server checks them on update only, so offline never."""
        out = []
        for (api_version, kind), schema in sorted(self.custom_resources().items()):
            for rule in CelRules(schema).transition:
                out.append(f"{api_version} {kind} {rule.where}: {rule.label}")
        return out

    def custom_resources(self) -> dict[GroupVersionKind, dict[str, Any]]:
        """Every custom resource's schema (fleetgen's own, then the --crd ones), each read now if not yet."""
        kinds = sorted({*self._shipped, *self._crds})
        return {kind: self._crd(kind) for kind in kinds}

    def _is_custom(self, kind: GroupVersionKind) -> bool:
        return kind in self._crds or kind in self._shipped

    def _crd(self, kind: GroupVersionKind) -> dict[str, Any]:
        """A custom resource's schema: the --crd one, else fleetgen's own, read on first use."""
        if kind not in self._crds:
            self._crds[kind] = json.loads(self._shipped[kind].read_text(encoding="utf-8"))
        return self._crds[kind]

    def _core_schema(self, minor: Minor, api_version: str, kind: str) -> dict[str, Any] | None:
        group, _, version = api_version.rpartition("/")
        name = f"{kind.lower()}-{group.split('.')[0]}-{version}.json" if group else f"{kind.lower()}-{version}.json"
        folder = _CORE / f"v{minor[0]}.{minor[1]}.0-local-strict"
        try:
            schema = json.loads((folder / name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        if minor not in self._definitions:
            self._definitions[minor] = CoreDefinitions(folder / "_definitions.json")
        return _bundle(schema, self._definitions[minor])


def _bundle(schema: dict[str, Any], definitions: CoreDefinitions) -> dict[str, Any]:
    """The schema with the definitions it reaches under $defs and every $ref pointing there.

    The definitions are shared with every other bundle of their Kubernetes version, not copied, and so is what
    each references (CoreDefinitions.references): a definition is walked once, not once for each bundle."""
    needed: dict[str, Any] = {}
    pending = references_in(schema)
    while pending:
        name = pending.pop()
        if name not in needed:
            needed[name] = definitions[name]
            pending.extend(definitions.references(name))
    return {**schema, "$defs": needed}


def object_problems(lookup: Lookup, body: dict[str, Any], strict: bool) -> Iterator[tuple[str, Severity]]:
    """What the cluster would refuse or warn of in one object: its schema (or CRD), CEL rules and the API server's own rules."""
    if lookup.validator is None:
        severity = Severity.ERROR if strict else lookup.severity
        yield lookup.note, severity
        return
    # is_valid() costs two thirds of iter_errors(), and nearly every object is valid.
    errors = [] if lookup.validator.is_valid(body) else lookup.validator.errors(body)
    for error in errors:
        if lookup.server is None or not lookup.server.owns(error):
            where = ".".join(str(p) for p in error.instance_path) or "(object)"
            yield f"{where}: {error.message}", Severity.ERROR
    if lookup.server is not None and (errors or lookup.server.has_cel):
        yield from lookup.server.problems(body, errors)


def validate_rendered(rendered: Rendered, schemas: Schemas, *, strict: bool = False, known: ClusterVerdicts | None = None) -> list[Finding]:
    """Schema problems and policy lints of every object every cluster gets, at the field that made it.

    The same problem on several clusters (a shared base object) is reported once, naming them.
    `known`: verdicts of earlier runs by cluster fingerprint; a cluster found there is neither
    built nor validated again, and each cluster's verdict is kept there."""
    seen: dict[tuple[FieldPath, str, Severity], list[str]] = {}
    fleet = rendered.fleet
    used: set[tuple[str, str]] = set()
    schemas.prepare(_kinds_to_validate(rendered, known))
    for index, cluster in enumerate(fleet.clusters):
        kubernetes = fleet.version_sets[cluster.version_set].kubernetes
        fingerprint = rendered.fingerprints[index] if known is not None else ""
        verdict = known.get(fingerprint) if known is not None else None
        if verdict is None:
            verdict = _validate_cluster(rendered, index, schemas, kubernetes, strict)
        if known is not None:
            known.keep(fingerprint, verdict)
        for source, text, severity in verdict.findings:
            seen.setdefault((source, text, severity), []).append(cluster.name)
        used.update(verdict.kinds)
    findings = []
    for (source, text, severity), clusters in seen.items():
        where = clusters[0] if len(clusters) == 1 else f"{len(clusters)} clusters: {', '.join(clusters)}"
        # fix: Change the fleet.yaml field that renders the object so that it passes its schema
        findings.append(Finding(source, f"{text} (on {where})", severity))
    return findings + _transition_note(schemas, used)


def _kinds_to_validate(rendered: Rendered, known: ClusterVerdicts | None) -> Iterator[tuple[str, str, Version]]:
    """The (apiVersion, kind, Kubernetes version) of each object validate_rendered checks, once per kind and version:
    those of each cluster without a kept verdict, and of only the first of the clusters with one fingerprint (the
    others take its verdict). Their objects are built now rather than in the loop, and kept for it."""
    fleet = rendered.fleet
    fingerprints: set[str] = set()
    seen: set[tuple[str, str, tuple[int, int]]] = set()
    for index, cluster in enumerate(fleet.clusters):
        if known is not None:
            fingerprint = rendered.fingerprints[index]
            if fingerprint in fingerprints or known.get(fingerprint) is not None:
                continue
            fingerprints.add(fingerprint)
        kubernetes = fleet.version_sets[cluster.version_set].kubernetes
        minor = kubernetes.minor
        kinds = {(m.body["apiVersion"], m.body["kind"]): None for m in rendered.objects(index) + rendered.entry_point(index)}
        for api_version, kind in kinds:
            if (api_version, kind, minor) not in seen:
                seen.add((api_version, kind, minor))
                yield api_version, kind, kubernetes


def _validate_cluster(rendered: Rendered, index: int, schemas: Schemas, kubernetes: Version, strict: bool) -> ClusterVerdict:
    """Build cluster `index` and check each of its objects (schema, server rules) and its lints."""
    found: list[tuple[FieldPath, str, Severity]] = []

    def note(manifest: Manifest, message: str, severity: Severity) -> None:
        kind, namespace, name = manifest.key
        found.append((manifest.source, f"rendered {kind} {namespace + '/' if namespace else ''}{name}: {message}", severity))

    objects = rendered.objects(index)
    lookups: dict[tuple[str, str], Lookup] = {}  # by (apiVersion, kind)
    for manifest in objects + rendered.entry_point(index):
        body = manifest.body
        kind = (body["apiVersion"], body["kind"])
        lookup = lookups.get(kind)
        if lookup is None:
            lookup = lookups[kind] = schemas.lookup(*kind, kubernetes)
        for message, severity in object_problems(lookup, body, strict):
            note(manifest, message, severity)
    for manifest, message, severity in lint_cluster(objects):
        note(manifest, message, severity)
    for manifest, message, severity in lint_no_credential_in_secrets(rendered.entry_point(index)):
        note(manifest, message, severity)
    return ClusterVerdict(tuple(found), tuple(lookups))


def validate_hub(rendered: Rendered, schemas: Schemas, strict: bool) -> list[Finding]:
    """An Argo CD hub's bootstrap objects against their schemas (the hub is no cluster of the fleet:
    its core kinds are checked at the first cluster's Kubernetes version)."""
    fleet, found = rendered.fleet, []
    kubernetes = fleet.version_sets[fleet.clusters[0].version_set].kubernetes
    for manifest in (m for f in rendered.hub_files for m in f.manifests if "metadata" in m.body):
        lookup = schemas.lookup(manifest.body["apiVersion"], manifest.body["kind"], kubernetes)
        for message, severity in object_problems(lookup, manifest.body, strict):
            # fix: Change the fleet.yaml field that renders the object so that it passes its schema
            found.append(Finding(manifest.source, f"rendered {manifest.key.title} (Argo CD hub): {message}", severity))
    hub_objects = [m for f in rendered.hub_files for m in f.manifests if "metadata" in m.body]
    for manifest, message, _ in lint_no_credential_in_secrets(hub_objects):
        # fix: Change the fleet.yaml field that renders the object so that it passes its schema
        found.append(Finding(manifest.source, f"rendered {manifest.key.title} (Argo CD hub): {message}", Severity.ERROR))
    return found


def _transition_note(schemas: Schemas, used: set[tuple[str, str]]) -> list[Finding]:
    """One note naming the transition rules of the kinds rendered: the server checks them on update only."""
    transitions = [(kind, schemas.transition_rules_of(api_version, kind)) for api_version, kind in sorted(used)]
    rules = [f"{kind} {rule.where}: {rule.label}" for kind, found in transitions for rule in found]
    if not rules:
        return []
    kinds = sorted({kind for kind, found in transitions if found})
    message = (
        f"{len(rules)} CEL transition rule(s) (oldSelf) of {', '.join(kinds)} cannot be checked offline: "
        f"they compare with the object already in the cluster ({'; '.join(rules)})"
    )
    # fix: Nothing to change: the cluster checks these rules when the engine applies the objects
    return [Finding((), message, Severity.NOTE)]


def check_loaded(
    loaded: LoadedFleet,
    schemas: Schemas,
    rendered: Rendered,
    *,
    strict: bool = False,
    fail_on: Severity = Severity.ERROR,
    known: ClusterVerdicts | None = None,
    now: datetime.datetime | None = None,
) -> list[Finding]:
    """The model's warnings and the rendered objects' problems, placed and sorted; raises on failure. With `now`,
    also an upgrade record time later than now (checks/record_times.py)."""
    # A cluster with a kept verdict passed reconcile in the run that kept it (verdicts are saved only
    # after a pass), and what reconcile reads of it (its folder, its teams' bases) is in its fingerprint.
    fresh = [i for i, f in enumerate(rendered.fingerprints) if known.get(f) is None] if known is not None else None
    indexes = range(len(rendered.fleet.clusters)) if fresh is None else fresh
    planned = [*rendered.base_files, *(f for i in indexes for f in rendered.cluster_plan(i)), *rendered.hub_files]
    gitops = reconcile_findings(rendered.fleet, planned, fresh) + driver_findings(rendered.fleet)  # reconcile.py, compat/gpu_operator.py
    gitops += unknown_chart_findings(rendered.fleet)  # compat/chart_kinds.py: the platform AppProject's kinds
    gitops += validate_hub(rendered, schemas, strict)
    gitops += future_records(loaded.fleet, now) if now is not None else []
    problems = [loaded.source.place(f) for f in validate_rendered(rendered, schemas, strict=strict, known=known) + gitops]
    findings = sorted([*loaded.warnings, *problems], key=lambda f: (f.location, f.dotted_path, f.message))
    failing = {Severity.ERROR} if fail_on is Severity.ERROR else {Severity.ERROR, Severity.WARNING}
    if any(f.severity in failing for f in findings):
        raise FindingsError(findings)
    return findings

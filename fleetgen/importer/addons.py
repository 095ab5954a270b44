"""The platform add-ons a hand-written repository installs itself, and the `platform:` that says so.

An add-on install is a Flux HelmRelease (its chart from a HelmRepository, or an OCIRepository by
`chartRef`) or an Argo CD Application with a Helm source, of a chart fleetgen installs as an add-on
(`gpu-operator`, `kueue`, `prometheus-operator-crds`). Import pins each add-on to what the clusters
install: the version, repository, chart and namespace the repository writes, the most common setting
fleet-wide and a cluster's own `platform` where it differs; an add-on no cluster installs is off
(the clusters run it some other way, e.g. from another repository). Those install objects are then
fleet.yaml's: the rendered fleet installs the add-on, and verify compares the two installs (release
name, chart, version, repository, namespace and the chart values the repository sets).

A version that is not one exact release (a range, none) is not pinned by guess: for the GPU Operator
import takes the newest release gpu_operator.yaml knows that supports the drivers of the clusters
that install it, and says so in a comment; for the others it leaves TODO(import).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from fleetgen.compare.object_diff import ABSENT, ObjectChange, ObjectKey, object_diff
from fleetgen.compat.gpu_operator import operator_facts
from fleetgen.errors import FieldPath
from fleetgen.importer.build import Built
from fleetgen.importer.imported import PLACEHOLDER, Imported, mode, or_placeholder
from fleetgen.importer.recognise import ClusterView
from fleetgen.model.platform import ADD_ONS, Platform

ADDON_OF_CHART = {
    "external-secrets": "externalSecrets",
    "gpu-operator": "gpuOperator",
    "kueue": "kueue",
    "prometheus-operator-crds": "prometheusOperatorCrds",
    "volcano": "volcano",
}
PINNED = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")  # the model's one exact version
SETTINGS = ("enabled", "version", "repository", "chart", "namespace")


@dataclass(frozen=True)
class Install:
    """One add-on as a cluster's objects install it."""

    addon: str  # fleet.yaml name
    release: str  # the Helm release's name
    chart: str
    version: str  # as written: maybe a range, maybe ""
    repository: str  # https://... or oci://...
    namespace: str
    values: dict[str, Any]
    file: str
    objects: tuple[ObjectKey, ...] = field(default=())  # the release first, then its source

    def settings(self) -> dict[str, Any]:
        """What verify compares: the release name, the chart and where it comes from, the values written."""
        chart = {"chart": self.chart, "version": self.version, "repository": self.repository, "namespace": self.namespace}
        return {"releaseName": self.release, **chart, "values": self.values}


def _key(body: dict[str, Any]) -> ObjectKey:
    meta = body.get("metadata") or {}
    return ObjectKey(str(body.get("kind", "")), str(meta.get("namespace", "") or ""), str(meta.get("name", "")))


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def installs(objects: list[Built]) -> dict[str, Install]:
    """Add-on name -> how these objects (one cluster's) install it; the first install of a chart counts."""
    by_key = {_key(b.body): b.body for b in objects}
    found: dict[str, Install] = {}
    for built in objects:
        body = built.body
        api = str(body.get("apiVersion", ""))
        if body.get("kind") == "HelmRelease" and api.startswith("helm.toolkit.fluxcd.io/"):
            install = _flux(body, built.file, by_key)
        elif body.get("kind") == "Application" and api.startswith("argoproj.io/"):
            install = _argo(body, built.file)
        else:
            continue
        if install is not None and install.addon not in found:
            found[install.addon] = install
    return found


def _flux(body: dict[str, Any], file: str, by_key: dict[ObjectKey, dict[str, Any]]) -> Install | None:
    key, spec = _key(body), _mapping(body.get("spec"))
    chart_spec, ref = _mapping(_mapping(spec.get("chart")).get("spec")), _mapping(spec.get("chartRef"))
    if chart_spec:
        source = _mapping(chart_spec.get("sourceRef"))
        source_key = ObjectKey(str(source.get("kind", "")), str(source.get("namespace") or key.namespace), str(source.get("name", "")))
        url = str(_mapping(_mapping(by_key.get(source_key)).get("spec")).get("url", ""))
        chart, version, repository = str(chart_spec.get("chart", "")), str(chart_spec.get("version", "") or ""), url.rstrip("/")
    elif ref.get("kind") == "OCIRepository":
        source_key = ObjectKey("OCIRepository", str(ref.get("namespace") or key.namespace), str(ref.get("name", "")))
        source_spec = _mapping(_mapping(by_key.get(source_key)).get("spec"))
        url = str(source_spec.get("url", "")).rstrip("/")
        repository, _, chart = url.rpartition("/")
        ref_of = _mapping(source_spec.get("ref"))
        version = str(ref_of.get("tag") or ref_of.get("semver") or ref_of.get("digest") or "")
    else:
        return None
    if chart not in ADDON_OF_CHART:
        return None
    target = str(spec.get("targetNamespace") or key.namespace)
    release = str(spec.get("releaseName") or (f"{spec['targetNamespace']}-{key.name}" if spec.get("targetNamespace") else key.name))
    objects = (key, source_key) if source_key in by_key else (key,)
    return Install(ADDON_OF_CHART[chart], release, chart, version, repository, target, _mapping(spec.get("values")), file, objects)


def _argo(body: dict[str, Any], file: str) -> Install | None:
    spec = _mapping(body.get("spec"))
    sources = [_mapping(spec.get("source"))] + [_mapping(s) for s in spec.get("sources") or [] if isinstance(s, dict)]
    source = next((s for s in sources if s.get("chart") in ADDON_OF_CHART), None)
    if source is None:
        return None
    url = str(source.get("repoURL", "")).rstrip("/")
    helm = _mapping(source.get("helm"))
    values = _mapping(helm.get("valuesObject"))
    if not values and isinstance(helm.get("values"), str):
        try:
            values = _mapping(yaml.safe_load(helm["values"]))
        except yaml.YAMLError:
            values = {"(unreadable values)": helm["values"]}
    chart, key = str(source["chart"]), _key(body)
    return Install(
        ADDON_OF_CHART[chart],
        str(helm.get("releaseName") or key.name),
        chart,
        str(source.get("targetRevision", "") or ""),
        url if "://" in url else f"oci://{url}",  # Argo CD names an OCI registry without its scheme
        str(_mapping(spec.get("destination")).get("namespace", "")),
        values,
        file,
        (key,),
    )


def claim_installs(view: ClusterView) -> dict[str, Install]:
    """The add-ons a cluster installs; their objects move from the view's unmodelled objects to its modelled ones."""
    found = installs([Built(u.body, u.file) for u in view.unmodelled])
    claimed = {key for install in found.values() for key in install.objects}
    view.modelled += [Built(u.body, u.file) for u in view.unmodelled if ObjectKey(u.kind, u.namespace, u.name) in claimed]
    view.unmodelled = [u for u in view.unmodelled if ObjectKey(u.kind, u.namespace, u.name) not in claimed]
    return found


# --- the platform section -----------------------------------------------------------------------


def with_platform(out: Imported, per_cluster: list[dict[str, Install]]) -> None:
    """Add `platform` (after `gitops`) and the clusters' own add-on settings to the imported fleet."""
    doc = out.document
    sets = doc.get("versionSets") or {}
    drivers = [str((sets.get(c.get("versionSet")) or {}).get("driver", PLACEHOLDER)) for c in doc["clusters"]]
    platform = infer_platform(out, per_cluster, [c["name"] for c in doc["clusters"]], drivers)
    if platform:
        at = list(doc).index("gitops") + 1
        items = list(doc.items())
        out.document = dict(items[:at] + [("platform", platform)] + items[at:])


def _newest_supporting(drivers: set[str]) -> str | None:
    """The newest GPU Operator release fleetgen has facts for whose drivers include every one of `drivers`."""
    releases = sorted(operator_facts().releases, key=lambda r: tuple(int(p) for p in r.series.split(".")), reverse=True)
    return next((r.documents for r in releases if drivers <= {str(d) for d in r.drivers}), None)


def _wanted(addon: str, install: Install | None, drivers: set[str]) -> tuple[tuple[str, Any], ...]:
    """One cluster's setting of an add-on: off, or on with what it installs (version None: not known).

    `drivers`: those of every cluster that asks for the same GPU Operator version, which one release must support."""
    if install is None:
        return (("enabled", False),)
    version: str | None = install.version if PINNED.match(install.version) else None
    if version is None and addon == "gpuOperator":
        version = _newest_supporting(drivers)
    values = (True, version, install.repository, install.chart, install.namespace)
    return tuple(zip(SETTINGS, values, strict=True))


def infer_platform(out: Imported, per_cluster: list[dict[str, Install]], names: list[str], drivers: list[str]) -> dict[str, Any]:
    """The fleet's `platform` (returned) and each cluster's own (set in out.document), from what each cluster installs."""
    defaults, platform = Platform(), dict[str, Any]()
    for name, attr in ADD_ONS:
        if name == "externalSecrets" and not any(name in found for found in per_cluster):
            continue  # installed only for a store (secrets.externalSecrets), which import does not infer: nothing to turn off
        default = getattr(defaults, attr)
        base = {"enabled": default.enabled, "version": default.version, "repository": default.repository}
        base |= {"chart": default.chart, "namespace": default.namespace}
        asked: dict[str, set[str]] = {}  # version asked for -> the drivers of the clusters that ask for it
        for found, driver in zip(per_cluster, drivers, strict=True):
            if name in found:
                asked.setdefault(found[name].version, set()).add(driver)
        wanted = [
            _wanted(name, found.get(name), asked.get(found[name].version, set()) if name in found else set()) for found in per_cluster
        ]
        common = dict(mode(wanted))
        fleet_wide = {k: v for k, v in common.items() if v != base[k] or (k == "version" and common["enabled"])}
        at: FieldPath = ("platform", name)
        installers = [(c, found[name]) for c, found in enumerate(per_cluster) if name in found and dict(wanted[c]) == common]
        if fleet_wide:
            platform[name] = _written(out, at, fleet_wide, installers, drivers, default.version)
            out.notes[at] = _note(name, installers, common, "the repository")
        merged = base | fleet_wide
        for c, want in enumerate(wanted):
            own = {k: v for k, v in dict(want).items() if v != merged[k]}
            if own and want != (("enabled", False),):
                own = {k: v for k, v in dict(want).items() if v != merged[k] or k == "version"}  # pinned, like the fleet's
            if own:
                here: FieldPath = ("clusters", c, "platform", name)
                mine = [(c, per_cluster[c][name])] if name in per_cluster[c] else []
                cluster = out.document["clusters"][c]
                cluster.setdefault("platform", {})[name] = _written(out, here, own, mine, drivers, default.version)
                out.notes[here] = _note(name, mine, dict(want), f"clusters/{names[c]}")
    return platform


def _written(
    out: Imported, at: FieldPath, fields: dict[str, Any], installers: list[tuple[int, Install]], drivers: list[str], stand_in: str
) -> dict[str, Any]:
    """The fields of one add-on as fleet.yaml writes them; an unknown version is TODO(import), a chosen one says so."""
    written = dict(fields)
    if "version" in fields:
        asked = sorted({i.version for _, i in installers})
        shown = ", ".join(repr(a) for a in asked) or "no version"
        supported = ", ".join(sorted({drivers[c] for c, _ in installers}))
        if fields["version"] is None:
            why = f"{at[-1]} version unknown: the repository asks for {shown}"
            if at[-1] == "gpuOperator":
                why += f", and no GPU Operator release in gpu_operator.yaml supports {supported}"
            written["version"] = or_placeholder(out, at + ("version",), None, stand_in, why + "; pin one exact release")
        elif any(i.version != fields["version"] for _, i in installers):
            out.notes[at + ("version",)] = (
                f"the repository asks for {shown}: import pinned the newest GPU Operator release fleetgen knows that supports {supported}"
            )
    return written


def _note(name: str, installers: list[tuple[int, Install]], setting: dict[str, Any], where: str) -> str:
    if not setting["enabled"]:
        chart = next(chart for chart, addon in ADDON_OF_CHART.items() if addon == name)
        return f"off: {where} installs no {chart} chart (it comes some other way)"
    files = sorted({i.file for _, i in installers})
    return f"from {', '.join(files)}" if files else "what the clusters install"


# --- verification -------------------------------------------------------------------------------


def install_changes(original: list[Built], rendered: list[dict[str, Any]]) -> list[ObjectChange]:
    """How the imported fleet installs the add-ons differently from the repository: an install missing or added,
    or a setting or a chart value the repository writes that the rendered install does not have."""
    before, after = installs(original), installs([Built(b, "") for b in rendered])
    out = []
    for name, _ in ADD_ONS:
        old, new = before.get(name), after.get(name)
        if old is None and new is None:
            continue
        first = old if old is not None else new
        assert first is not None
        kind, namespace, object_name = first.objects[0]
        if old is None or new is None:
            out.append(ObjectChange(kind, namespace, object_name, state="added" if old is None else "removed"))
            continue
        old_settings, new_settings = old.settings(), new.settings()
        fields = [f for f in object_diff(old_settings, new_settings) if f.old != ABSENT]  # the keys the repository writes
        if fields:
            out.append(ObjectChange(kind, namespace, object_name, state="changed", fields=tuple(fields)))
    return out

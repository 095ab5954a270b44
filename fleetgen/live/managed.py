"""What fleetgen manages of a live object: the fields it renders, and those the sync engine still owns.

A live object carries much that fleetgen never wrote, and none of it is drift: the engine's tracking
metadata (Argo CD's `argocd.argoproj.io/tracking-id` annotation, its default since 3.0, or its
`app.kubernetes.io/instance` label; Flux's `kustomize.toolkit.fluxcd.io/name` and `namespace`
labels), controllers' finalizers (Kueue's `kueue.x-k8s.io/resource-in-use`), status, managedFields,
and the defaults the API server or a CRD fills in. So a live object is seen through its render:
`managed_view` keeps the fields the render sets (a quantity the server rewrote, `1024Mi` for `1Gi`,
taken at its value: which fields are quantities, the kind's schema says, validation/quantity_fields.py)
and drops the rest.

One thing the render cannot show is a field fleetgen stopped rendering. The sync engine can: its
field manager in `managedFields` (Flux's kustomize-controller, Argo CD's argocd-controller) lists
every field it applied. A field the engine applied that the render no longer has stays in the view,
so the diff shows it (rendered absent, live value) until the engine syncs the new render.
"""

from __future__ import annotations

from typing import Any

from fleetgen.validation.quantity_fields import QuantityFields, quantity_fields, same_quantity

# Field managers of the sync engines (managedFields[].manager). Argo CD applies as argocd-controller, and
# some kinds (Roles, through Kubernetes' RBAC reconciliation) show up under argocd-application-controller.
ENGINE_MANAGERS = frozenset({"kustomize-controller", "argocd-controller", "argocd-application-controller"})
# What an engine adds to every object it applies: its own bookkeeping, not fleetgen's fields.
ENGINE_METADATA = {
    "labels": frozenset({"kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace", "app.kubernetes.io/instance"}),
    "annotations": frozenset(
        {
            "argocd.argoproj.io/tracking-id",
            "argocd.argoproj.io/installation-id",
            "kubectl.kubernetes.io/last-applied-configuration",  # client-side apply's record (Argo CD's default sync)
        }
    ),
}

_ABSENT = object()
Owned = dict[str, Any] | None  # a fieldsV1 subtree the engine owns, or None


def engine_fields(live: dict[str, Any]) -> Owned:
    """Every field of `live` a sync engine applied, merged from its managedFields entries (fieldsV1 form)."""
    owned: dict[str, Any] = {}
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(entry, dict) or entry.get("manager") not in ENGINE_MANAGERS or entry.get("subresource"):
            continue  # a status write by the same manager is not what it applied
        fields = entry.get("fieldsV1")
        if isinstance(fields, dict):
            _merge(owned, fields)
    return owned or None


def _merge(into: dict[str, Any], more: dict[str, Any]) -> None:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif key not in into or not into[key]:
            into[key] = value


def managed_view(live: dict[str, Any], rendered: dict[str, Any] | None) -> dict[str, Any]:
    """`live` as far as fleetgen manages it: compare this with `rendered`, field by field.

    `rendered` None (the object is not rendered) keeps only what the engine owns."""
    fields = quantity_fields(str(live.get("apiVersion", "")), str(live.get("kind", "")))
    view = _view(live, rendered if rendered is not None else _ABSENT, engine_fields(live), (), fields)
    return view if isinstance(view, dict) else {}


def _whole(owned: Owned) -> bool:
    """A fieldsV1 leaf (`{}`, or only `.`): the engine owns the value as a whole."""
    return owned is not None and set(owned) <= {"."}


def _view(live: Any, rendered: Any, owned: Owned, path: tuple[str, ...], fields: QuantityFields) -> Any:
    if rendered is _ABSENT and _whole(owned):
        return live
    if isinstance(live, dict):
        return _map_view(live, rendered, owned, path, fields)
    if isinstance(live, list):
        return _list_view(live, rendered, (*path, "[]"), fields) if isinstance(rendered, list) else live
    if rendered is not _ABSENT and fields.holds(path) and same_quantity(live, rendered):
        return rendered
    return live


def _map_view(live: dict[str, Any], rendered: Any, owned: Owned, path: tuple[str, ...], fields: QuantityFields) -> dict[str, Any]:
    mine = rendered if isinstance(rendered, dict) else {}
    skip = ENGINE_METADATA.get(path[-1], frozenset()) if path[:1] == ("metadata",) and len(path) == 2 else frozenset()
    out: dict[str, Any] = {}
    for key, value in live.items():
        theirs = owned.get(f"f:{key}") if isinstance(owned, dict) and key not in skip else None
        if key in mine:
            out[key] = _view(value, mine[key], theirs, (*path, key), fields)
        elif theirs is not None:  # applied by the engine, no longer rendered
            seen = _view(value, _ABSENT, theirs, (*path, key), fields)
            if seen != {} or value == {}:  # a map that holds only the engine's own keys is not fleetgen's
                out[key] = seen
    for key, value in mine.items():  # what the server leaves out when empty (omitempty) is not missing
        if key not in live and (value is False or value in ({}, [], "")):
            out[key] = value
    return out


def _names(items: list[Any]) -> list[str] | None:
    names = [item.get("name") for item in items if isinstance(item, dict)]
    if len(names) == len(items) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
        return names  # type: ignore[return-value]
    return None


def _list_view(live: list[Any], rendered: list[Any], path: tuple[str, ...], fields: QuantityFields) -> list[Any]:
    """Items of a list fleetgen renders: every live item stays (an added item is drift), each seen through
    the rendered item it stands for: the same name, else an equal one, else the one at its position."""
    rendered_names, live_names = _names(rendered), _names(live)
    if rendered and rendered_names is not None and live_names is not None:
        by_name = dict(zip(rendered_names, rendered, strict=True))
        return [
            _view(item, by_name[name], None, path, fields) if name in by_name else item for name, item in zip(live_names, live, strict=True)
        ]
    maps = [r for r in rendered if isinstance(r, dict)]
    keys = {k for r in maps for k in r}
    out = []
    for index, item in enumerate(live):
        if not isinstance(item, dict) or not maps:
            out.append(item)
            continue
        here = rendered[index] if index < len(rendered) and isinstance(rendered[index], dict) else None
        # a candidate must share a key with the item: else the fields the server omits when empty would
        # make `{namespaceSelector: ...}` look like a rendered `{podSelector: {}}`
        candidates = ([here] if here is not None else []) + maps
        fit = next((r for r in candidates if (item.keys() & r.keys() or not r) and _view(item, r, None, path, fields) == r), None)
        if fit is not None:
            out.append(fit)
        else:  # a changed item: what fleetgen renders of it, and any key another rendered item has
            shape = here or {}
            out.append(
                {k: _view(v, shape[k], None, (*path, k), fields) if k in shape else v for k, v in item.items() if k in shape or k in keys}
            )
    return out

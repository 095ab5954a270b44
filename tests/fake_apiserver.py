"""A small Kubernetes API server for the real kubectl: discovery and the list API, on 127.0.0.1, over plain HTTP.

It serves the kinds it is given (their objects filtered by `labelSelector` equality terms), answers 403 for
the kinds it forbids, and holds a response to a slow kind past the client's timeout. It runs in a thread,
answers at most for `lifetime` seconds and then shuts itself down, so a test that forgets it cannot hang.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml


@dataclass
class Kind:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool


@dataclass
class Behaviour:
    served: dict[str, Kind] = field(default_factory=dict)  # plural -> kind
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # plural -> objects
    forbidden: set[str] = field(default_factory=set)  # plurals
    slow: dict[str, float] = field(default_factory=dict)  # plural -> seconds before answering
    lists: list[str] = field(default_factory=list)  # every list request, path and query, in order
    gets: list[str] = field(default_factory=list)  # every request for one object: plural/namespace/name


def kind_of(body: dict[str, Any], namespaced: bool) -> Kind:
    group, _, version = str(body["apiVersion"]).rpartition("/")
    kind = str(body["kind"])
    lower = kind.lower()
    plural = lower + "es" if lower.endswith(("s", "x")) else lower[:-1] + "ies" if lower.endswith("y") else lower + "s"
    return Kind(group, version, kind, plural, namespaced)


def _matches(obj: dict[str, Any], selector: str) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    terms = [t.split("=", 1) for t in selector.split(",") if t]
    return all(labels.get(key) == value for key, value in terms)


class _Handler(BaseHTTPRequestHandler):
    behaviour: Behaviour

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads what was asked from `behaviour.lists`."""

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        parts = [p for p in url.path.split("/") if p]
        served = self.behaviour.served
        if parts == ["api"]:
            return self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        if parts == ["apis"]:
            groups = sorted({(k.group, k.version) for k in served.values() if k.group})
            listed = [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
                    "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v},
                }
                for g, v in groups
            ]
            return self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": listed})
        group_version = parts[1] if parts == ["api", "v1"] else "/".join(parts[1:3]) if parts[:1] == ["apis"] and len(parts) == 3 else None
        if group_version is not None:
            resources = [
                {"name": k.plural, "singularName": k.kind.lower(), "namespaced": k.namespaced, "kind": k.kind, "verbs": ["get", "list"]}
                for k in served.values()
                if (f"{k.group}/{k.version}" if k.group else k.version) == group_version
            ]
            return self._send(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
        if len(rest) in (2, 4):  # one object: PLURAL/NAME, or namespaces/NS/PLURAL/NAME
            return self._one(rest[-2], rest[-1], rest[1] if len(rest) == 4 else "")
        plural = parts[-1] if parts else ""
        self.behaviour.lists.append(self.path)
        if plural in self.behaviour.forbidden:
            message = f'{plural} is forbidden: User "u" cannot list resource "{plural}" at the cluster scope'
            return self._send(
                403, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403, "message": message}
            )
        if plural in self.behaviour.slow:
            time.sleep(self.behaviour.slow[plural])
        if plural not in served:
            return self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
        kind = served[plural]
        selector = (parse_qs(url.query).get("labelSelector") or [""])[0]
        items = [o for o in self.behaviour.objects.get(plural, []) if _matches(o, selector)]
        api_version = f"{kind.group}/{kind.version}" if kind.group else kind.version
        return self._send(
            200, {"kind": f"{kind.kind}List", "apiVersion": api_version, "metadata": {"resourceVersion": "1"}, "items": items}
        )

    def _one(self, plural: str, name: str, namespace: str) -> None:
        self.behaviour.gets.append(f"{plural}/{namespace}/{name}")
        for obj in self.behaviour.objects.get(plural, []) if plural in self.behaviour.served else []:
            meta = obj.get("metadata") or {}
            if meta.get("name") == name and (meta.get("namespace") or "") == namespace:
                return self._send(200, obj)
        return self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})


class FakeApiServer:
    """Start with `with FakeApiServer(behaviour) as server:`; `server.kubeconfig(folder)` points a context `fake` at it."""

    def __init__(self, behaviour: Behaviour, lifetime: float = 120):
        handler = type("Handler", (_Handler,), {"behaviour": behaviour})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.lifetime = lifetime
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._timer = threading.Timer(lifetime, self.httpd.shutdown)  # stops by itself
        self._timer.daemon = True

    def __enter__(self) -> FakeApiServer:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()

    def kubeconfig(self, folder: Path) -> dict[str, str]:
        """The environment of a kubeconfig whose context `fake` is this server (no TLS, a token), and a private cache."""
        host, port = self.httpd.server_address[:2]
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": f"http://{host!s}:{port}"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
            "current-context": "fake",
        }
        (folder / "fake-kubeconfig").write_text(yaml.safe_dump(config), encoding="utf-8")
        return {"KUBECONFIG": str(folder / "fake-kubeconfig"), "KUBECACHEDIR": str(folder / "kube-cache"), "HOME": str(folder)}

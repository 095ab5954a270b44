"""Where Kubernetes gives order or grouping no meaning: the canonical forms the object diff compares.

- RBAC rules (Role, ClusterRole) are a union: a Role grants every (apiGroup, resource, verb) of
  every rule (each resource name of a rule that lists some, each non-resource URL), whatever rule
  it is written in and in whatever order. The canonical form of `rules` is one entry per grant,
  keyed `apps/deployments/update` (`""` is the core group; ` resourceName=web` narrows one to a
  name; `get /healthz` is a non-resource URL), without the grants a wildcard or an unnamed grant
  already gives.
- NetworkPolicy rules are ORed, and so are the peers and the ports of one rule: a policy allows
  the union of (peer, port) pairs of its ingress (egress) rules. The canonical form of `ingress`
  (`egress`) is one entry per pair, keyed `namespaceSelector kubernetes.io/metadata.name=monitoring,
  any port`, without the pairs that "any peer" or "any port" already allows. `policyTypes` is a set,
  with the API server's default when it is left out.
- Binding subjects are a set: keyed `Group gpu-users` (a ServiceAccount with its namespace), with
  the apiGroup the API server fills in.

So two objects that grant or allow the same are equal, and a real difference is one entry: a grant
or pair missing or added, at a field path that names it (`rules[apps/deployments/update]`).
Anything of an unexpected shape is left as it is, to be compared as written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ALLOWED", "ANY_PEER", "ANY_PORT", "GRANTED", "canonical", "rule_grants", "traffic_pairs"]

GRANTED, ALLOWED = "granted", "allowed"
ANY_PEER, ANY_PORT = "any peer", "any port"
CORE_GROUP = '""'
RBAC_GROUP = "rbac.authorization.k8s.io"

# A grant: ("resource", apiGroup, resource, verb, resourceName or "") or ("url", nonResourceURL, verb).
Grant = tuple[str, ...]
# A port: (protocol, port or "", endPort or ""); a pair: (peer text, port or None for any port).
Port = tuple[str, str, str]
Pair = tuple[str, Port | None]
T = TypeVar("T")


def canonical(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` with its order-free fields in canonical form (a copy of what changes; `body` is not touched)."""
    if not isinstance(body, dict):
        return body
    if kind in ("Role", "ClusterRole"):
        grants = rule_grants(body.get("rules"))
        return body if grants is None else {**body, "rules": {_grant_key(g): GRANTED for g in sorted(grants)}}
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        subjects = _subjects(body.get("subjects"))
        return body if subjects is None else {**body, "subjects": subjects}
    if kind == "NetworkPolicy" and isinstance(body.get("spec"), dict):
        return {**body, "spec": _policy_spec(body["spec"])}
    return body


# --- RBAC ---------------------------------------------------------------------------------------


def _strings(value: Any) -> list[str] | None:
    """A list of strings (None or absent: empty); None when it is anything else."""
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def rule_grants(rules: Any) -> set[Grant] | None:
    """Every grant of a list of PolicyRules, less those another grant covers; None for an unexpected shape."""
    if rules is None:
        rules = []
    if not isinstance(rules, list):
        return None
    grants: set[Grant] = set()
    for rule in rules:
        if not isinstance(rule, dict):
            return None
        fields = [_strings(rule.get(k)) for k in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs")]
        groups, resources, verbs, names, urls = fields
        if groups is None or resources is None or verbs is None or names is None or urls is None:
            return None
        grants |= {("resource", g, r, v, n) for g in groups for r in resources for v in verbs for n in names or [""]}
        grants |= {("url", u, v) for u in urls for v in verbs}
    named_anyway = {g for g in grants if g[0] == "resource" and g[4] and (*g[:4], "") in grants}  # every name is granted too
    return _least(grants - named_anyway, _grant_covers, _is_wide_grant)


def _grant_key(grant: Grant) -> str:
    if grant[0] == "url":
        return f"{grant[2]} {grant[1]}"
    _, group, resource, verb, name = grant
    return f"{group or CORE_GROUP}/{resource}/{verb}" + (f" resourceName={name}" if name else "")


def _is_wide_grant(grant: Grant) -> bool:
    """Whether a grant can cover another one (but for naming no resource name, handled apart): a wildcard."""
    if grant[0] == "url":
        return grant[1].endswith("*") or grant[2] == "*"
    _, group, resource, verb, _name = grant
    return "*" in (group, verb) or resource == "*" or resource.startswith("*/")


def _grant_covers(wide: Grant, grant: Grant) -> bool:
    """Whether `wide` grants everything `grant` does (RBAC's own matching: `*`, `*/subresource`, URL prefixes)."""
    if wide[0] != grant[0]:
        return False
    if wide[0] == "url":
        url, want = wide[1], grant[1]
        url_ok = url == want or url == "*" or (url.endswith("*") and want.startswith(url[:-1]))
        return url_ok and wide[2] in ("*", grant[2])
    _, group, resource, verb, name = wide
    resource_ok = resource in ("*", grant[2]) or (resource.startswith("*/") and grant[2].endswith(resource[1:]) and "/" in grant[2])
    return group in ("*", grant[1]) and resource_ok and verb in ("*", grant[3]) and name in ("", grant[4])


def _subjects(subjects: Any) -> dict[str, Any] | None:
    if subjects is None:
        subjects = []
    if not isinstance(subjects, list) or not all(isinstance(s, dict) and isinstance(s.get("name"), str) for s in subjects):
        return None
    out: dict[str, Any] = {}
    for subject in subjects:
        kind, name, namespace = str(subject.get("kind", "")), subject["name"], subject.get("namespace")
        key = f"{kind} {namespace}/{name}" if kind == "ServiceAccount" and namespace else f"{kind} {name}"
        rest = {k: v for k, v in subject.items() if k not in ("kind", "name", "namespace")}
        rest.setdefault("apiGroup", "" if kind == "ServiceAccount" else RBAC_GROUP)
        out[key] = rest
    return dict(sorted(out.items()))


# --- NetworkPolicy ------------------------------------------------------------------------------


def _policy_spec(spec: dict[str, Any]) -> dict[str, Any]:
    out = dict(spec)
    for field, peers in (("ingress", "from"), ("egress", "to")):
        if field in spec:
            pairs = traffic_pairs(spec[field], peers)
            if pairs is not None:
                out[field] = {f"{peer}, {_port_text(port)}": ALLOWED for peer, port in sorted(pairs, key=_pair_order)}
    types = _strings(spec.get("policyTypes"))
    if "policyTypes" not in spec:
        out["policyTypes"] = [*(["Egress"] if "egress" in spec else []), "Ingress"]  # sorted, as a written list is
    elif types is not None:
        out["policyTypes"] = sorted(set(types))
    return out


def traffic_pairs(rules: Any, peers_field: str) -> set[Pair] | None:
    """Every (peer, port) pair that NetworkPolicy rules allow, less those a wider pair allows; None for an unexpected shape."""
    if rules is None:
        rules = []
    if not isinstance(rules, list):
        return None
    pairs: set[Pair] = set()
    for rule in rules:
        if not isinstance(rule, dict):
            return None
        peer_list, port_list = rule.get(peers_field) or [], rule.get("ports") or []
        if not isinstance(peer_list, list) or not isinstance(port_list, list):
            return None
        peers = [_peer_text(p) for p in peer_list]
        ports = [_port(p) for p in port_list]
        if None in peers or None in ports:
            return None
        pairs |= {(str(peer), port) for peer in peers or [ANY_PEER] for port in ports or [None]}
    return _least(pairs, _pair_covers, lambda pair: pair[0] == ANY_PEER or _is_wide_port(pair[1]))


def _pair_order(pair: Pair) -> tuple[str, str]:
    return pair[0], _port_text(pair[1])


def _selector_text(selector: Any) -> str | None:
    """A label selector as kubectl writes one (`a=b,c in (d,e),!f`), terms sorted; `{}` selects everything."""
    if not isinstance(selector, dict):
        return None
    terms = set()
    labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(labels, dict) or not isinstance(expressions, list):
        return None
    terms |= {f"{k}={v}" for k, v in labels.items()}
    for expression in expressions:
        if not isinstance(expression, dict):
            return None
        key, operator, values = expression.get("key"), expression.get("operator"), _strings(expression.get("values"))
        if values is None:
            return None
        chosen = sorted(set(values))
        if operator == "In" and len(chosen) == 1:
            terms.add(f"{key}={chosen[0]}")
        elif operator in ("In", "NotIn"):
            terms.add(f"{key} {operator.lower()} ({','.join(chosen)})")
        elif operator == "Exists":
            terms.add(str(key))
        elif operator == "DoesNotExist":
            terms.add(f"!{key}")
        else:
            terms.add(f"{key} {operator} ({','.join(chosen)})")
    return ",".join(sorted(terms)) or "{}"


def _peer_text(peer: Any) -> str | None:
    """A peer as text: its selectors (namespace, then pod) or its IP block."""
    if not isinstance(peer, dict):
        return None
    parts = []
    for field in ("namespaceSelector", "podSelector"):
        if field in peer:
            text = _selector_text(peer[field])
            if text is None:
                return None
            parts.append(f"{field} {text}")
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        excepted = _strings(block.get("except"))
        if excepted is None:
            return None
        parts.append(f"ipBlock {block.get('cidr')}" + (f" except {','.join(sorted(set(excepted)))}" if excepted else ""))
    elif block is not None or not parts:
        return None
    return " ".join(parts)


def _port(port: Any) -> Port | None:
    if not isinstance(port, dict):
        return None
    number, end = port.get("port"), port.get("endPort")
    return (str(port.get("protocol") or "TCP"), "" if number is None else str(number), "" if end is None else str(end))


def _port_text(port: Port | None) -> str:
    if port is None:
        return ANY_PORT
    protocol, number, end = port
    if not number:
        return f"any {protocol} port"
    return f"port {protocol}/{number}" + (f"-{end}" if end else "")


def _is_wide_port(port: Port | None) -> bool:
    return port is None or not port[1] or bool(port[2])


def _port_covers(wide: Port | None, port: Port | None) -> bool:
    if wide is None or wide == port:
        return True
    if port is None or wide[0] != port[0]:
        return False
    if not wide[1]:
        return True
    if not (wide[1].isdigit() and port[1].isdigit()) or not port[1]:
        return False
    low, high = int(wide[1]), int(wide[2] or wide[1])
    return low <= int(port[1]) and int(port[2] or port[1]) <= high


def _pair_covers(wide: Pair, pair: Pair) -> bool:
    return wide[0] in (ANY_PEER, pair[0]) and _port_covers(wide[1], pair[1])


def _least(items: set[T], covers: Callable[[T, T], bool], is_wide: Callable[[T], bool]) -> set[T]:
    """`items` less each item another item covers; only the wide ones (`is_wide`) can cover another."""
    wide = [w for w in items if is_wide(w)]
    return {item for item in items if not any(w != item and covers(w, item) for w in wide)}

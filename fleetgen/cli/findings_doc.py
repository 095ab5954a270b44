"""The findings reference page, read from the code that raises the findings (`fleetgen docs`).

Every `Finding(...)` fleetgen constructs, and every `raise ValueError(...)` of a model validator (which
becomes a finding at its field), is one entry: its severity, its message with each computed part shown
as `{name}`, and the rule it enforces (the docstring of the function that raises it, else its module's).
A message built elsewhere and passed on is named by what builds it. Reading the source rather than a
hand-kept list means a new check is documented the moment it exists.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

FINDINGS_REFERENCE_PATH = "docs/reference/findings.md"
PACKAGE = Path(__file__).resolve().parents[1]
SEVERITIES = {"ERROR": "error", "WARNING": "warning", "NOTE": "note"}
# A message's last clause is its fix when it starts with one of these verbs ("...; set capacity.gpuOvercommit").
FIX_VERBS = frozenset(
    "add allow choose drop give keep list lower move name plan put raise remove rename replace request run set state "
    "upgrade use write".split()
)

INTRO = """\
# Findings

Written by `fleetgen docs` from the code that raises each finding; a test fails while it is stale.
A finding prints as `fleet.yaml:LINE:COLUMN: [severity: ]PATH: MESSAGE`: the position and the field
path say where, the message says what is wrong and, where there is one, what to change (the fix column
repeats a message's closing instruction; the rule column says what the check enforces). `{name}` in a
message below stands for a value fleetgen fills in. Errors fail `validate` (exit 1); warnings fail it
only with `--fail-on warning`; notes never fail. [What validate checks](validate-checks.md) explains
the checks by layer.
"""


@dataclass(frozen=True)
class Entry:
    severity: str
    message: str
    rule: str


def findings_reference_markdown() -> str:
    parts = [INTRO]
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        entries = _entries(tree, is_model=module.startswith("model/"))
        if not entries:
            continue
        parts.append(f"## {module.removesuffix('.py')}\n")
        summary = _first_paragraph(ast.get_docstring(tree) or "")
        if summary:
            parts.append(summary + "\n")
        parts += ["| severity | message | fix | rule |", "|---|---|---|---|"]
        for entry in dict.fromkeys(entries):
            parts.append(f"| {entry.severity} | {_code(entry.message)} | {_cell(_fix(entry.message))} | {_cell(entry.rule)} |")
        parts.append("")
    return "\n".join(parts)


def _entries(tree: ast.Module, is_model: bool) -> list[Entry]:
    found: list[Entry] = []
    module_rule = _first_paragraph(ast.get_docstring(tree) or "")
    for scope in [tree, *[n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]]:
        rule = _first_paragraph(ast.get_docstring(scope) or "") if not isinstance(scope, ast.Module) else ""
        for node in _own_nodes(scope):
            if isinstance(node, ast.Call) and _called(node) == "Finding":
                message = node.args[1] if len(node.args) > 1 else _keyword(node, "message")
                severity = node.args[2] if len(node.args) > 2 else _keyword(node, "severity")
                for text in _messages(message, scope):
                    found.append(Entry(_severity(severity), text, rule or module_rule))
            elif is_model and isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and _called(node.exc) == "ValueError":
                for text in _messages(node.exc.args[0] if node.exc.args else None, scope):
                    found.append(Entry("error", text, rule or module_rule))
    return found


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a function (or module) outside the functions nested in it, which are scopes of their own."""
    nodes: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        nodes.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _severity(node: ast.expr | None) -> str:
    if node is None:
        return "error"
    if isinstance(node, ast.Attribute) and node.attr in SEVERITIES:
        return SEVERITIES[node.attr]
    if isinstance(node, ast.IfExp):
        return " or ".join(dict.fromkeys(_severity(branch) for branch in (node.body, node.orelse)))
    return "error or warning"


def _messages(node: ast.expr | None, scope: ast.AST) -> list[str]:
    """The message templates an expression may give; a variable is followed to what the function assigns it."""
    if node is None:
        return []
    if isinstance(node, ast.Name):
        assigned = [
            a
            for a in _own_nodes(scope)
            if isinstance(a, ast.Assign | ast.AnnAssign) and a.value is not None and node.id in _targets(a) and a.lineno <= node.lineno
        ]
        latest = assigned[-1].value if assigned else None  # the assignment the use reads (branches join before it)
        return _messages(latest, scope) if latest is not None else [f"{{{node.id}}}"]
    if isinstance(node, ast.IfExp):
        return _messages(node.body, scope) + _messages(node.orelse, scope)
    return [_template(node)]


def _targets(assign: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _template(node: ast.expr) -> str:
    """A message expression as text: literal parts kept, computed parts as `{name}`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [v if isinstance(v, ast.Constant) else v.value for v in node.values if isinstance(v, ast.Constant | ast.FormattedValue)]
        return "".join(_template(part) for part in parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _template(node.left) + _template(node.right)
    return "{" + _name(node) + "}"


def _name(node: ast.expr) -> str:
    """A short name for a computed part: the last name or attribute it reads, or the function it calls."""
    if isinstance(node, ast.Call):
        return _called(node) or "value"
    names = [n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(node) if isinstance(n, ast.Attribute | ast.Name)]
    return names[0] if names else "value"


def _fix(message: str) -> str:
    """The message's own fix: its last clause after `; ` or `: `, when that clause starts with a verb of FIX_VERBS."""
    for separator in ("; ", ": "):
        tail = message.rsplit(separator, 1)[-1] if separator in message else ""
        if tail.split(" ", 1)[0].lower() in FIX_VERBS:
            return tail[0].upper() + tail[1:]
    return ""


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n", 1)[0].split())


def _code(text: str) -> str:
    text = " ".join(text.split())  # a pipe inside a code span does not split a table's cell
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")

"""The findings reference page, read from the code that raises the findings (`fleetgen docs`).

Every `Finding(...)` fleetgen constructs, and every `raise ValueError(...)` of a model validator (which
becomes a finding at its field), is one entry: its severity, its message with each computed part shown
as `{name}`, how to fix it, and the rule it enforces (the docstring of the function that raises it, else
its module's). The fix is the `# fix: ...` comment right above the statement that raises the finding,
or at the end of its first line, or at the end of the `def` line of the function that raises it (one fix
for all its findings), else the message's own closing instruction.
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
    "add allow choose drop give keep list lower mark move name plan put raise remove rename replace request run set split "
    "state upgrade use write".split()
)

INTRO = """\
# Findings

Written by `fleetgen docs` from the code that raises each finding; a test fails while it is stale.
A finding prints as `fleet.yaml:LINE:COLUMN: [severity: ]PATH: MESSAGE`: the position and the field
path say where, the message says what is wrong, the fix column what to change, and the rule column
what the check enforces and why. `{name}` in a message below stands for a value fleetgen fills in.
Errors fail `validate` (exit 1); warnings fail it only with `--fail-on warning`; notes never fail.
[What validate checks](validate-checks.md) explains the checks by layer.
"""


FIX_COMMENT = "# fix:"


@dataclass(frozen=True)
class Entry:
    severity: str
    message: str
    rule: str
    fix: str  # what to change, from the `# fix:` comment above the raising statement or the message's closing clause


def findings_reference_markdown() -> str:
    parts = [INTRO]
    for module, summary, entries in finding_entries():
        if not entries:
            continue
        parts.append(f"## {module}\n")
        if summary:
            parts.append(summary + "\n")
        parts += ["| severity | message | fix | rule |", "|---|---|---|---|"]
        for entry in dict.fromkeys(entries):
            parts.append(f"| {entry.severity} | {_code(entry.message)} | {_cell(entry.fix)} | {_cell(entry.rule)} |")
        parts.append("")
    return "\n".join(parts)


def finding_entries() -> list[tuple[str, str, list[Entry]]]:
    """(module without .py, its docstring's first paragraph, its entries in source order) for every module of the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == "errors.py":  # the type itself, which reads kept findings back but makes none of its own
            continue
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        entries = _entries(tree, source.splitlines(), is_model=module.startswith("model/"))
        out.append((module.removesuffix(".py"), _first_paragraph(ast.get_docstring(tree) or ""), entries))
    return out


def _entries(tree: ast.Module, lines: list[str], is_model: bool) -> list[Entry]:
    found: list[Entry] = []
    module_rule = _first_paragraph(ast.get_docstring(tree) or "")
    starts = _statement_starts(tree)
    for scope in [tree, *[n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]]:
        rule = _first_paragraph(ast.get_docstring(scope) or "") if not isinstance(scope, ast.Module) else ""
        for node in _own_nodes(scope):
            if isinstance(node, ast.Call) and _called(node) == "Finding":
                message = node.args[1] if len(node.args) > 1 else _keyword(node, "message")
                severity = _severity(node.args[2] if len(node.args) > 2 else _keyword(node, "severity"))
            elif is_model and isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and _called(node.exc) == "ValueError":
                message, severity = node.exc.args[0] if node.exc.args else None, "error"
            else:
                continue
            start = starts.get(id(node), getattr(node, "lineno", 1))
            comment = _fix_comment(lines, start) or _trailing_fix(lines[start - 1]) or _trailing_fix(lines[getattr(scope, "lineno", 1) - 1])
            for text in _messages(message, scope):
                found.append(Entry(severity, text, rule or module_rule, comment or _fix(text)))
    return found


def _statement_starts(tree: ast.Module) -> dict[int, int]:
    """id(node) -> the first line of the innermost statement holding it (where its `# fix:` comment sits above)."""
    starts: dict[int, int] = {}
    for statement in ast.walk(tree):
        if isinstance(statement, ast.stmt) and not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for node in ast.walk(statement):
                starts[id(node)] = statement.lineno  # inner statements come later in the walk and win
    return starts


def _trailing_fix(line: str) -> str:
    """The `# fix:` comment at the end of a source line (a string holding the marker is not one: it is code)."""
    code, marker, text = line.rpartition("  " + FIX_COMMENT)
    if not marker or code.count('"') % 2 or code.count("'") % 2:
        return ""
    text = text.strip()
    return text[:1].upper() + text[1:]


def _fix_comment(lines: list[str], line: int) -> str:
    """The `# fix:` comment block right above source line `line` (1-based), its continuation lines joined."""
    block: list[str] = []
    n = line - 2
    while n >= 0 and lines[n].strip().startswith("#"):
        block.insert(0, lines[n].strip().lstrip("#").strip())
        if lines[n].strip().startswith(FIX_COMMENT):
            text = " ".join(block).removeprefix(FIX_COMMENT[1:].strip()).strip()
            return text[:1].upper() + text[1:]
        n -= 1
    return ""


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

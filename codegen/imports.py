"""Drop the imports a generated module does not use.

datamodel-code-generator's dataclass output always imports ``dataclass`` (its own
template decorates with it; ours uses ``attrs``), and the ``--additional-imports``
we pass are needed by some schemas only. This step of the generation pipeline reads
the module's syntax tree and keeps an imported name only where some code names it.
"""

from __future__ import annotations

import ast


def used_names(tree: ast.Module) -> set[str]:
    """Every bare name the module's code reads (``attrs`` in ``attrs.field``)."""
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def drop_unused_imports(text: str) -> str:
    """``text`` without the top-level imported names nothing uses.

    ``from __future__`` imports are compiler directives and always stay.
    """
    tree = ast.parse(text)
    used = used_names(tree)
    lines = text.splitlines(keepends=True)
    for node in reversed(tree.body):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        kept = [a for a in node.names if (a.asname or a.name).split(".")[0] in used]
        if len(kept) == len(node.names):
            continue
        replacement: list[str] = []
        if kept:
            node.names = kept
            replacement = [ast.unparse(node) + "\n"]
        lines[node.lineno - 1 : node.end_lineno] = replacement
    return "".join(lines)

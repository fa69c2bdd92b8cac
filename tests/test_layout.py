"""The layout stays readable: hand-written modules and functions keep to their size limits.

One concept per module (DESIGN.md): a hand-written module over 600 lines or a
function over 60 lines (docstring included) is a sign that two concepts share a
place. Generated modules are exempt: they are sealed and never read by hand.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
HAND_WRITTEN = sorted(
    path
    for folder in ("sdk/agentproto", "codegen")
    for path in (ROOT / folder).rglob("*.py")
    if not path.name.startswith("_generated")
)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_tree_is_found() -> None:
    """The walk sees the package (a moved tree must not make the checks vacuous)."""
    names = {_rel(p) for p in HAND_WRITTEN}
    assert "sdk/agentproto/__init__.py" in names
    assert len(names) > 30


@pytest.mark.parametrize("path", HAND_WRITTEN, ids=_rel)
def test_module_size(path: Path) -> None:
    """A hand-written module stays within MAX_MODULE_LINES lines."""
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_MODULE_LINES, f"{_rel(path)} has {lines} lines; split it by concept"


@pytest.mark.parametrize("path", HAND_WRITTEN, ids=_rel)
def test_function_size(path: Path) -> None:
    """Every function of a hand-written module stays within MAX_FUNCTION_LINES lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [
        f"{node.name} (line {node.lineno}: {node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{_rel(path)}: functions over {MAX_FUNCTION_LINES} lines: {long}"

"""Running the README's code blocks as written (the first block under a heading)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_block(heading: str) -> str:
    """The code of the first ``python`` block after ``heading``."""
    section = README.read_text(encoding="utf-8").split(heading + "\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def run_readme_block(heading: str) -> dict[str, Any]:
    """Execute the first ``python`` block after ``heading``; returns its namespace."""
    namespace: dict[str, Any] = {}
    exec(compile(readme_block(heading), "README.md", "exec"), namespace)
    return namespace

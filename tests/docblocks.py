"""The code blocks of the documentation, read and run as written.

The pages are ``README.md``, ``ARCHITECTURE.md`` and every ``docs/**/*.md``
(:func:`pages`). A block is found by its page and the heading it sits under
(:func:`doc_block`, :func:`run_doc_block`, :func:`section`), so a test names the text a
reader sees. ``tests/test_docs.py`` runs every ``python`` block of every page
(:func:`check_page`): the blocks of one page in order, in one namespace, except a block
preceded by a claim line::

    <!-- tested by tests/agui/test_http_client.py -->
    ```python

which a block that needs a peer or a server carries: the named test file must exist and
mention the page and the block's heading (it runs the block itself, with what it needs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PYTHON = frozenset({"python", "py", "python3"})
"""Fence languages whose blocks are Python: each one runs, or is claimed."""

NOT_PYTHON = frozenset({"", "text", "bash", "console", "shell", "toml", "json"})
"""Fence languages that are not Python (MyST directives, ``{toctree}``, are not either).
Any other language fails :func:`check_page`, so that no Python block hides under a
name this module does not know."""

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<ticks>`{3,})(?P<language>[^`\s]*)(?:\s+[^`]*)?$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_CLAIM = re.compile(r"^<!--\s*tested by\s+(?P<path>\S+)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: Path
    heading: str
    """The text of the nearest heading above the block, without its ``#``."""
    line: int
    """The 1-based line of the block's first line of code."""
    language: str
    code: str
    claimed_by: str | None
    """The test file of the claim line right before the fence (relative to the root)."""

    @property
    def where(self) -> str:
        return f"{name(self.page)}:{self.line} (under {self.heading!r})"


def name(page: Path, root: Path = ROOT) -> str:
    """The page's path relative to ``root`` (as tests and claims write it)."""
    try:
        return page.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(page)


def pages() -> list[Path]:
    """Every page whose code blocks must run: README, ARCHITECTURE and the docs."""
    docs = sorted(path for path in (ROOT / "docs").rglob("*.md") if "_build" not in path.parts)
    return [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *docs]


def blocks(page: Path | str) -> list[Block]:
    """Every fenced block of ``page``, in order."""
    path = ROOT / page if isinstance(page, str) else page
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    heading = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence is None:
            title = _HEADING.match(line)
            if title:
                heading = title.group(2)
            index += 1
            continue
        ticks, indent = fence.group("ticks"), len(fence.group("indent"))
        end = index + 1
        while end < len(lines) and not re.match(rf"^\s*{ticks}`*\s*$", lines[end]):
            end += 1
        if end == len(lines):
            raise ValueError(f"{name(path)}:{index + 1}: a fence that is never closed")
        code = "\n".join(text[indent:] for text in lines[index + 1 : end]) + "\n"
        claim = _CLAIM.match(lines[index - 1]) if index else None
        found.append(
            Block(
                page=path,
                heading=heading,
                line=index + 2,
                language=fence.group("language"),
                code=code,
                claimed_by=claim.group("path") if claim else None,
            )
        )
        index = end + 1
    return found


def doc_block(page: str, heading: str) -> str:
    """The code of the first ``python`` block under ``heading`` (its text, no ``#``)."""
    return _first(page, heading).code


def _first(page: str, heading: str) -> Block:
    for block in blocks(page):
        if block.heading == heading and block.language in PYTHON:
            return block
    raise LookupError(f"{page} has no python block under the heading {heading!r}")


def run_block(block: Block, namespace: dict[str, Any]) -> None:
    """Execute ``block`` in ``namespace``; a traceback shows the page's own lines."""
    source = "\n" * (block.line - 1) + block.code
    exec(compile(source, str(block.page), "exec"), namespace)


def run_doc_block(page: str, heading: str) -> dict[str, Any]:
    """Execute the first ``python`` block under ``heading`` alone; returns its namespace."""
    namespace: dict[str, Any] = {"__name__": "__doc_block__"}
    run_block(_first(page, heading), namespace)
    return namespace


def section(page: str, heading: str) -> str:
    """The text under ``heading``, up to the next heading of the same or a higher level."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    fenced = False
    start: int | None = None
    level = 0
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        title = None if fenced else _HEADING.match(line)
        if title is None:
            continue
        if start is None and title.group(2) == heading:
            start, level = number + 1, len(title.group(1))
        elif start is not None and len(title.group(1)) <= level:
            return "\n".join(lines[start:number])
    if start is None:
        raise LookupError(f"{page} has no heading {heading!r}")
    return "\n".join(lines[start:])


def said(page: str, heading: str) -> str:
    """The "It prints ..." paragraph under ``heading``, on one line."""
    text = section(page, heading).split("It prints", 1)[1].split("\n\n", 1)[0]
    return " ".join(text.split())


class ClaimError(AssertionError):
    """A claim line names a test that does not exist or does not name the block."""


def check_claim(block: Block, root: Path = ROOT) -> None:
    """The claimed test file exists and mentions the block's page and heading."""
    assert block.claimed_by is not None
    test = root / block.claimed_by
    if not test.is_file():
        raise ClaimError(f"{block.where}: claimed by {block.claimed_by}, which does not exist")
    text = test.read_text(encoding="utf-8")
    for needed in (name(block.page, root), block.heading):
        if needed not in text:
            raise ClaimError(
                f"{block.where}: claimed by {block.claimed_by}, which never mentions {needed!r}"
            )


def check_page(page: Path, root: Path = ROOT) -> tuple[int, int]:
    """Run every unclaimed ``python`` block of ``page`` in order, in one namespace, and
    check every claim; returns (blocks run, blocks claimed). Run it in a scratch folder:
    blocks may write files. Raises what a block raises, a :class:`ClaimError`, or a
    ``ValueError`` for a fence whose language is neither Python nor a known other."""
    namespace: dict[str, Any] = {"__name__": "__doc_page__"}
    ran = claimed = 0
    for block in blocks(page):
        if block.language in PYTHON:
            if block.claimed_by is not None:
                check_claim(block, root)
                claimed += 1
            else:
                run_block(block, namespace)
                ran += 1
        elif block.claimed_by is not None:
            raise ClaimError(f"{block.where}: a claim line before a {block.language} block")
        elif block.language not in NOT_PYTHON and not block.language.startswith("{"):
            raise ValueError(
                f"{block.where}: unknown fence language {block.language!r}: write python "
                "(it runs) or one of " + ", ".join(sorted(NOT_PYTHON - {""}))
            )
    return ran, claimed

"""Git ``--patch`` text for one file: written from two texts, read back into two texts.

Theory of operation
-------------------
ACP v1 shows an edit as a path with the old and the new text of the file; ACP
v2 shows it as structured changes plus optional renderable patch text in Git's
``--patch`` format (``git_patch``), with absolute paths and no ``a/`` / ``b/``
prefixes. :func:`make_patch` writes the section of one file with its whole
text as context (one hunk from the first line), so that the patch shows the
file whole and can be read back. :func:`read_sections` reads the sections of
any patch text (a malformed one reads as nothing, never an error) and
:func:`whole_texts` gives a section's old and new text when the section shows
the file whole: a creation, or a single hunk that starts at the first line of
both sides. The patch format cannot say that no line follows the last hunk, so
a patch with less context starting at the first line is taken as the whole
file; :func:`make_patch` never writes one.

Paths are quoted as Git quotes them (C-style, in double quotes) when they hold
a double quote, a backslash, a control character or a non-ASCII character.
"""

from __future__ import annotations

import difflib
import re

import attrs

__all__ = ["Section", "make_patch", "read_sections", "whole_texts"]

_DEV_NULL = "/dev/null"
_NO_NEWLINE = "\\ No newline at end of file\n"
_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f", "\r": "r"}
_ESCAPES |= {'"': '"', "\\": "\\"}
_UNESCAPES = {value: key for key, value in _ESCAPES.items()}


def _lines(text: str) -> list[str]:
    """``text`` split after each ``\\n`` (Git's only line end; ``\\r`` and the like are data)."""
    return _LINE.findall(text)


def _quote(path: str) -> str:
    """``path`` as Git writes it in a patch header."""
    if all(" " <= ch < "\x7f" and ch not in '"\\' for ch in path):
        return path
    out = []
    for ch in path:
        if ch in _ESCAPES:
            out.append("\\" + _ESCAPES[ch])
        elif " " <= ch < "\x7f":
            out.append(ch)
        else:
            out.extend(f"\\{byte:03o}" for byte in ch.encode("utf-8", "surrogateescape"))
    return '"' + "".join(out) + '"'


def _unquote(text: str) -> str | None:
    """A header path as written by :func:`_quote`; ``None`` when malformed."""
    if not text.startswith('"'):
        return text
    if len(text) < 2 or not text.endswith('"'):
        return None
    raw = bytearray()
    body, i = text[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            raw.extend(ch.encode("utf-8", "surrogateescape"))
            i += 1
        elif body[i + 1 : i + 4].isdigit() and len(body[i + 1 : i + 4]) == 3:
            raw.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        elif body[i + 1 : i + 2] in _UNESCAPES:
            raw.extend(_UNESCAPES[body[i + 1]].encode())
            i += 2
        else:
            return None
    return raw.decode("utf-8", "surrogateescape")


def _body(lines: list[str], prefix: str) -> list[str]:
    """Hunk body lines, with Git's marker after a last line that lacks its newline."""
    out = []
    for line in lines:
        out.append(prefix + line if line.endswith("\n") else prefix + line + "\n" + _NO_NEWLINE)
    return out


def make_patch(path: str, old: str | None, new: str) -> str | None:
    """The ``git_patch`` section of one file, its whole text as context.

    Args:
        path: the absolute path of the file.
        old: its text before the change, ``None`` when the change creates it.
        new: its text after the change.

    Returns:
        The patch text, ``None`` when the texts are the same (nothing to show).
    """
    name = _quote(path)
    head = [f"diff --git {name} {name}\n"]
    new_lines = _lines(new)
    if old is None:
        head.append("new file mode 100644\n")
        if not new_lines:
            return "".join(head)
        head += [f"--- {_DEV_NULL}\n", f"+++ {name}\n", f"@@ -0,0 +1,{len(new_lines)} @@\n"]
        return "".join(head + _body(new_lines, "+"))
    if old == new:
        return None
    old_lines = _lines(old)
    head += [f"--- {name}\n", f"+++ {name}\n"]
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    body: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            body += _body(old_lines[i1:i2], " ")
            continue
        body += _body(old_lines[i1:i2], "-") + _body(new_lines[j1:j2], "+")
    ranges = (
        f"-{min(1, len(old_lines))},{len(old_lines)} +{min(1, len(new_lines))},{len(new_lines)}"
    )
    return "".join([*head, f"@@ {ranges} @@\n", *body])


@attrs.define
class Hunk:
    """One hunk: where it starts on each side and the lines of each side."""

    old_start: int
    new_start: int
    old: list[str] = attrs.Factory(list)
    new: list[str] = attrs.Factory(list)


@attrs.define
class Section:
    """The part of a patch about one file.

    Attributes:
        old_path: the path before (``None`` for a created file).
        new_path: the path after (``None`` for a deleted file).
        created: the section creates the file.
        deleted: the section deletes the file.
        hunks: its hunks, in order.
    """

    old_path: str | None = None
    new_path: str | None = None
    created: bool = False
    deleted: bool = False
    hunks: list[Hunk] = attrs.Factory(list)


def _header_path(line: str, prefix: str) -> str | None:
    text = line[len(prefix) :].rstrip("\n")
    if not text.startswith('"') and "\t" in text:
        text = text.split("\t", 1)[0]
    return None if text == _DEV_NULL else _unquote(text)


def _git_line_path(line: str) -> str | None:
    """The path of a ``diff --git P P`` line naming one path twice."""
    rest = line[len("diff --git ") :].rstrip("\n")
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[:half] == rest[half + 1 :]:
        return _unquote(rest[:half])
    return None


def _read_hunk(lines: list[str], i: int, match: re.Match[str]) -> tuple[Hunk, int] | None:
    """The hunk whose header matched at ``lines[i]``, and the index after it."""
    old_n = 1 if match[2] is None else int(match[2])
    new_n = 1 if match[4] is None else int(match[4])
    hunk = Hunk(int(match[1]), int(match[3]))
    i += 1
    while old_n > 0 or new_n > 0:
        if i >= len(lines) or not lines[i][:1] or lines[i][0] not in " -+":
            return None
        line, kind = lines[i][1:], lines[i][0]
        i += 1
        if i < len(lines) and lines[i] == _NO_NEWLINE:
            line = line[:-1] if line.endswith("\n") else line
            i += 1
        if kind in " -":
            hunk.old.append(line)
            old_n -= 1
        if kind in " +":
            hunk.new.append(line)
            new_n -= 1
    return (hunk, i) if old_n == 0 and new_n == 0 else None


def read_sections(text: str) -> list[Section] | None:
    """The file sections of a ``git_patch`` text; ``None`` when it is malformed."""
    lines = _lines(text)
    sections: list[Section] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            path = _git_line_path(line)
            sections.append(Section(old_path=path, new_path=path))
        elif not sections:
            return None
        elif line.startswith("new file mode"):
            sections[-1].created, sections[-1].old_path = True, None
        elif line.startswith("deleted file mode"):
            sections[-1].deleted, sections[-1].new_path = True, None
        elif line.startswith("--- "):
            sections[-1].old_path = _header_path(line, "--- ")
        elif line.startswith("+++ "):
            sections[-1].new_path = _header_path(line, "+++ ")
        elif (match := _HUNK.match(line)) is not None:
            read = _read_hunk(lines, i, match)
            if read is None:
                return None
            sections[-1].hunks.append(read[0])
            i = read[1]
            continue
        i += 1
    return sections


def whole_texts(section: Section) -> tuple[str | None, str] | None:
    """The old text (``None`` for a created file) and new text a section shows whole.

    ``None`` when the section does not show the file whole (see the module
    documentation) or deletes it.
    """
    if section.deleted:
        return None
    if section.created:
        if not section.hunks:
            return None, ""
        if len(section.hunks) != 1 or section.hunks[0].old:
            return None
        return None, "".join(section.hunks[0].new)
    if len(section.hunks) != 1:
        return None
    hunk = section.hunks[0]
    if hunk.old_start > 1 or hunk.new_start > 1:
        return None
    return "".join(hunk.old), "".join(hunk.new)

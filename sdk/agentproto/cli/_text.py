"""Output helpers of the command line: bounded previews and UTF-8 writing.

A preview is at most ``width`` characters of a JSON value, built lazily: a value
of many megabytes or nested hundreds of levels deep costs only what is shown
(no ``repr(value)[:40]``). Containers are walked with an explicit stack of
iterators, never by recursion.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

__all__ = ["clip", "preview", "write_utf8"]


class _Raw(str):
    """Text to emit as it is (punctuation, an encoded scalar)."""

    __slots__ = ()


def _string(text: str, limit: int) -> str:
    """``text`` as a JSON string, cut past ``limit`` characters (the closing quote too)."""
    if len(text) > limit:
        return json.dumps(text[:limit], ensure_ascii=False)[:-1]
    return json.dumps(text, ensure_ascii=False)


def _scalar(value: Any, limit: int) -> str:
    if isinstance(value, str):
        return _string(value, limit)
    if value is True or value is False or value is None:
        return "true" if value is True else "false" if value is False else "null"
    if isinstance(value, int):
        try:
            return str(value)
        except ValueError:  # past the interpreter's digit limit
            return f"<integer of {value.bit_length()} bits>"
    if isinstance(value, float):
        return repr(value)
    return f"<{type(value).__name__}>"


def _members(value: dict[Any, Any] | list[Any] | tuple[Any, ...], limit: int) -> Iterator[Any]:
    """A container's punctuation (as :class:`_Raw`) and its items, in order."""
    if isinstance(value, dict):
        yield _Raw("{")
        for number, (key, item) in enumerate(value.items()):
            yield _Raw(("," if number else "") + _string(str(key), limit) + ":")
            yield item
        yield _Raw("}")
        return
    yield _Raw("[")
    for number, item in enumerate(value):
        if number:
            yield _Raw(",")
        yield item
    yield _Raw("]")


def _pieces(value: Any, limit: int) -> Iterator[str]:
    """Compact JSON text of ``value`` piece by piece, each piece at most ~``limit`` long."""
    stack: list[Iterator[Any]] = [iter((value,))]
    while stack:
        item = next(stack[-1], stack)  # the stack itself marks the end
        if item is stack:
            stack.pop()
        elif isinstance(item, _Raw):
            yield item
        elif isinstance(item, dict | list | tuple):
            stack.append(_members(item, limit))
        else:
            yield _scalar(item, limit)


def clip(pieces: Iterable[str], width: int, ellipsis: str = "…") -> str:
    """The first ``width`` characters of the pieces joined, ``ellipsis`` last when cut.

    Pieces are taken only until the text is known to go past ``width``.

    Args:
        pieces: the text, in pieces (a lazy iterator costs only what is shown).
        width: the most characters returned (more than ``len(ellipsis)``).
        ellipsis: what ends a cut text.

    Returns:
        The joined text, at most ``width`` characters.
    """
    shown: list[str] = []
    size = 0
    for piece in pieces:
        shown.append(piece)
        size += len(piece)
        if size > width:
            return "".join(shown)[: width - len(ellipsis)] + ellipsis
    return "".join(shown)


def preview(value: Any, width: int = 72) -> str:
    """At most ``width`` characters showing ``value`` on one line.

    A string is shown as it is (newlines as ``\\n``), anything else as compact
    JSON; past ``width`` the text is cut and ends with ``…``. Only what is shown
    is built, whatever the size or depth of ``value``.

    Args:
        value: a JSON value (anything else shows as its type's name).
        width: the most characters returned (at least 2).

    Returns:
        One line of text.
    """
    if isinstance(value, str):
        return clip([value[: width + 1].replace("\n", "\\n")], width)
    return clip(_pieces(value, width + 1), width)


def write_utf8(out: TextIO, data: bytes) -> None:
    """Write UTF-8 bytes, to the underlying binary stream when there is one.

    The output is UTF-8 whatever the locale's encoding, so ids and text that are
    not ASCII never fail to print.
    """
    binary = getattr(out, "buffer", None)
    if binary is None:
        out.write(data.decode("utf-8"))
        return
    out.flush()
    binary.write(data)
    binary.flush()

"""Untrusted values and locations shown in messages, in bounded time and size.

An error message or diagnostic that quotes the input must not cost more than
the input is worth, nor fail on its own: ``repr`` of an integer over 4,300
digits raises ``ValueError``, ``repr`` of a list nested ~1,000 deep raises
``RecursionError``, and either can be megabytes long. :func:`describe` shows a
scalar (cut short) or names a container's JSON type and size, never walking it;
:func:`cut_pointer` keeps the two ends of a long JSON Pointer.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["MAX_POINTER_CHARS", "cut_pointer", "describe"]

_MAX_STRING_CHARS: Final = 40
_MAX_INT_BITS: Final = 128  # about 38 digits
MAX_POINTER_CHARS: Final = 200
"""Longest error location shown whole; longer ones keep both ends."""


def describe(value: Any) -> str:
    """A short, safe description of ``value`` for an error message.

    Strings are quoted (cut after 40 characters), small numbers, booleans and
    ``null`` shown as they are, large integers by their size, containers by their
    JSON type and length. Runs in constant time for any input.
    """
    if isinstance(value, str):
        text = str.__getitem__(value, slice(_MAX_STRING_CHARS))
        shown = repr(text)
        return shown if len(value) <= _MAX_STRING_CHARS else f"{shown[:-1]}...{shown[-1]}"
    if value is None or value is True or value is False:
        return repr(value)
    if isinstance(value, int):
        bits = int.bit_length(value)
        if bits <= _MAX_INT_BITS:
            return int.__repr__(value)
        return f"an integer of about {int(bits * 0.30103) + 1} digits"
    if isinstance(value, float):
        return float.__repr__(value)
    if isinstance(value, dict):
        return f"an object of {len(value)} member(s)"
    if isinstance(value, list | tuple):
        return f"an array of {len(value)} item(s)"
    return f"a {type(value).__name__}"


def cut_pointer(pointer: str, limit: int = MAX_POINTER_CHARS) -> str:
    """``pointer`` itself when short, else its two ends joined by ``...``."""
    if len(pointer) <= limit:
        return pointer
    keep = (limit - 3) // 2
    return f"{pointer[:keep]}...{pointer[-keep:]}"

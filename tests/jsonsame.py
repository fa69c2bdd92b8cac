"""Exact JSON equality: like ``==`` but ``1`` ≠ ``1.0`` ≠ ``True`` (key order ignored)."""

from __future__ import annotations

from typing import Any


def same_json(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are the same JSON value, types included."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)

"""RFC 6902 JSON Patch applied in place, made atomic by an undo log.

For a document nothing else holds references into (a reducer's own state): each
operation costs O(1) plus its pointer walk, whatever the size of the document,
and every change is logged so that a failing operation undoes the ones before
it. :func:`~agentproto._core.patch.apply.apply_patch` leaves its input untouched instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from agentproto._core.errors import PatchError
from agentproto._core.patch.ops import (
    DEFAULT_PATCH_LIMITS,
    MISSING,
    NodeCount,
    PatchLimits,
    array_index,
    copy_json,
    drive,
    get_container,
    json_equal,
    move_source,
    pointer_tokens,
    value_at,
)

__all__ = ["apply_patch_in_place"]

# Undo-log markers: an array element was inserted / removed.
_INSERTED: Final[Any] = object()
_REMOVED: Final[Any] = object()

_Undo = list[tuple[Any, ...]]


def apply_patch_in_place(
    document: Any,
    operations: Sequence[Any],
    *,
    limits: PatchLimits = DEFAULT_PATCH_LIMITS,
    count: NodeCount | None = None,
) -> Any:
    """Apply an RFC 6902 JSON Patch to a document the caller owns, in place.

    Each operation costs O(1) plus the pointer walk (an array insert or removal
    moves that array's tail, as ``list.insert`` does), whatever the size of the
    document or of the containers on the path: nothing is copied but the values
    the patch brings in. An undo log makes it atomic: when an operation fails,
    the operations before it are undone and the document is exactly as it was.

    Use it when nothing else holds references into ``document`` (a reducer's own
    state); :func:`apply_patch` leaves its input untouched instead.

    Args:
        document: a JSON value owned by the caller; it is changed in place.
        operations: the patch, as for :func:`apply_patch`. Values it adds are
            deep-copied, so the document never shares containers with the patch.
        limits: how much the patch may do (:class:`PatchLimits`).
        count: the document's size and its limit (:class:`NodeCount`), kept by a
            caller that patches one document many times; updated on success.

    Returns:
        The patched document: ``document`` itself, unless the patch replaced the
        whole document (path ``""``).

    Raises:
        PatchError: as :func:`apply_patch`; the document is then unchanged.
    """
    undo: _Undo = []
    try:
        return drive(document, operations, limits, count, _step, undo)
    except BaseException:
        # whatever stopped the patch (a PatchError, or memory running out while a
        # value is copied), the document goes back to exactly what it was
        _rollback(undo)
        raise


def _step(
    doc: Any,
    op: str,
    tokens: tuple[str, ...],
    value: Any,
    from_: Any,
    undo: _Undo,
    index: int,
    path: str,
) -> Any:
    """Apply one checked operation, logging what it changes; returns the root."""
    if op == "test":
        if not json_equal(value_at(doc, tokens, index, path), value):
            raise PatchError("test failed: the value differs", index=index, path=path)
    elif op == "add":
        doc = _add_in_place(doc, tokens, copy_json(value), undo, index, path)
    elif op == "replace":
        if not tokens:
            return copy_json(value)
        parent = get_container(doc, tokens[:-1], index, path)
        _replace_in_place(parent, tokens[-1], copy_json(value), undo, index, path)
    elif op == "remove":
        _remove_in_place(doc, tokens, undo, index, path)
    elif op == "copy":
        found = value_at(doc, pointer_tokens(from_, index, from_), index, from_)
        doc = _add_in_place(doc, tokens, copy_json(found), undo, index, path)
    else:  # move
        source = move_source(doc, tokens, from_, index, path)
        if source is not None:
            found = _remove_in_place(doc, source, undo, index, from_)
            doc = _add_in_place(doc, tokens, found, undo, index, path)
    return doc


def _add_in_place(
    doc: Any,
    tokens: tuple[str, ...],
    value: Any,
    undo: _Undo,
    index: int,
    path: str,
) -> Any:
    if not tokens:
        return value
    parent = get_container(doc, tokens[:-1], index, path)
    token = tokens[-1]
    if isinstance(parent, dict):
        undo.append((parent, token, parent.get(token, MISSING)))
        parent[token] = value
    elif token == "-":
        undo.append((parent, len(parent), _INSERTED))
        parent.append(value)
    else:
        i = array_index(token)
        if i < 0 or i > len(parent):
            raise PatchError(f"array index {token!r} out of range", index=index, path=path)
        undo.append((parent, i, _INSERTED))
        parent.insert(i, value)
    return doc


def _remove_in_place(doc: Any, tokens: tuple[str, ...], undo: _Undo, index: int, path: str) -> Any:
    if not tokens:
        raise PatchError("cannot remove the whole document", index=index, path=path)
    parent = get_container(doc, tokens[:-1], index, path)
    token = tokens[-1]
    if isinstance(parent, dict):
        found = parent.pop(token, MISSING)
        if found is MISSING:
            raise PatchError(f"no member {token!r}", index=index, path=path)
        undo.append((parent, token, found))
        return found
    i = array_index(token)
    if i < 0 or i >= len(parent):
        raise PatchError(f"array index {token!r} out of range", index=index, path=path)
    found = parent.pop(i)
    undo.append((parent, i, _REMOVED, found))
    return found


def _replace_in_place(
    parent: Any, token: str, value: Any, undo: _Undo, index: int, path: str
) -> None:
    if isinstance(parent, dict):
        old = parent.get(token, MISSING)
        if old is MISSING:
            raise PatchError(f"no member {token!r}", index=index, path=path)
        undo.append((parent, token, old))
        parent[token] = value
        return
    i = array_index(token)
    if i < 0 or i >= len(parent):
        raise PatchError(f"array index {token!r} out of range", index=index, path=path)
    undo.append((parent, i, parent[i]))
    parent[i] = value


def _rollback(undo: _Undo) -> None:
    """Undo logged changes, newest first."""
    for entry in reversed(undo):
        container, key, old = entry[0], entry[1], entry[2]
        if old is _INSERTED:
            del container[key]
        elif old is _REMOVED:
            container.insert(key, entry[3])
        elif old is MISSING:
            del container[key]
        else:
            container[key] = old

"""Atomic, copy-on-write RFC 6902 JSON Patch.

Theory of operation
-------------------
Documents are treated as immutable values made of plain ``dict``, ``list``,
``str``, ``int``, ``float``, ``bool`` and ``None``. :func:`apply_patch` never
mutates its input; it builds the new document by *path copying*:

* Every operation resolves its pointer(s) once, into a tuple of unescaped
  reference tokens (RFC 6901).
* To write at a location, the containers on the way from the root to the
  target's parent are shallow-copied and re-linked into their (already copied)
  parent. Everything off that path is shared, by identity, with the input. A
  one-operation ``replace`` on a large state therefore costs the size of the
  containers along one path, not the size of the document.
* The copies made during one call are *owned* by that call: they are recorded
  by ``id`` (the record also keeps them alive, so an ``id`` can never be
  reused while the call runs) and later operations of the same patch mutate
  them in place instead of copying them again. Owned containers are referenced
  exactly once in the document being built; everything else (input subtrees,
  operation values) is shared and is copied before any write.
* ``copy`` shares the source value at the destination. Since that value is then
  referenced twice, the owned containers inside it are released (they form a
  connected region under the value, because an unowned container never holds an
  owned one), so that a later write through either location copies first.
* Atomicity comes for free: the input is never touched, so when an operation
  fails, :class:`~agentproto._core.errors.PatchError` is raised and the partly
  built copies are simply dropped.

Operation values are stored by reference, not deep-copied: the result may share
containers with the operations as well as with the input document, and neither
may be mutated afterwards.

Limits. A few hundred bytes of patch can ask for gigabytes (``copy`` an array
into itself, 26 times), so both appliers check :class:`PatchLimits` before each
operation writes: the number of operations, the nodes the patch adds (counted
with an early stop, so refusing costs no more than the limit), and the depth of
what it adds. A patch over a limit fails like any other, atomically, with a
:class:`PatchError` whose ``limit`` names the field to raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsonpatch

from agentproto._core.errors import PatchError
from agentproto._core.json.codec import dumps
from agentproto._core.patch.inplace import apply_patch_in_place
from agentproto._core.patch.ops import (
    DEFAULT_PATCH_LIMITS,
    MISSING,
    NodeCount,
    PatchLimits,
    array_index,
    drive,
    json_equal,
    move_source,
    pointer_tokens,
    value_at,
)

__all__ = [
    "DEFAULT_PATCH_LIMITS",
    "PatchLimits",
    "apply_patch",
    "apply_patch_in_place",
    "make_patch",
]

_Owned = dict[int, Any]


def apply_patch(
    document: Any,
    operations: Sequence[Any],
    *,
    limits: PatchLimits = DEFAULT_PATCH_LIMITS,
    count: NodeCount | None = None,
) -> Any:
    """Apply an RFC 6902 JSON Patch and return the new document.

    The input document is never mutated: containers on the paths the patch
    touches are copied, every other subtree is shared with the input. The patch
    is atomic: either every operation applies, or :class:`PatchError` is raised
    and nothing changed.

    Args:
        document: a JSON value (``dict``/``list``/``str``/``int``/``float``/
            ``bool``/``None``), treated as immutable.
        operations: the patch. Each operation is either a mapping with the wire
            members ``op``, ``path``, ``value`` and ``from``, or an object with
            the attributes ``op``, ``path`` and, where relevant, ``value`` and
            ``from_``. Members an operation does not use are ignored.
        limits: how much the patch may do (:class:`PatchLimits`).
        count: the document's size and its limit (:class:`NodeCount`), kept by a
            caller that patches one document many times; updated on success.

    Returns:
        The patched document. It may share subtrees with ``document`` and with
        the operations' values; treat all of them as immutable.

    Raises:
        PatchError: an operation is malformed (unknown ``op``, missing or
            non-string ``path``/``from``, missing ``value``, invalid pointer) or
            cannot be applied (missing target, index out of range, failed
            ``test``, ``move`` into its own child) or exceeds a limit (``limit``
            names it). ``index`` is the position of the failing operation,
            ``path`` its ``path`` (or its ``from`` when that is what failed).
    """
    owned: _Owned = {}
    return drive(document, operations, limits, count, _step, owned)


def _step(
    doc: Any,
    op: str,
    tokens: tuple[str, ...],
    value: Any,
    from_: Any,
    owned: _Owned,
    index: int,
    path: str,
) -> Any:
    """Apply one checked operation; returns the (possibly new) root."""
    if op == "add":
        return _add(doc, tokens, value, owned, index, path)
    if op == "replace":
        if not tokens:
            return value
        doc, parent = _writable_parent(doc, tokens, owned, index, path)
        _replace_in(parent, tokens[-1], value, index, path)
    elif op == "remove":
        doc, _ = _remove(doc, tokens, owned, index, path)
    elif op == "test":
        if not json_equal(value_at(doc, tokens, index, path), value):
            raise PatchError("test failed: the value differs", index=index, path=path)
    elif op == "copy":
        found = value_at(doc, pointer_tokens(from_, index, from_), index, from_)
        _release(found, owned)
        doc = _add(doc, tokens, found, owned, index, path)
    else:  # move
        source = move_source(doc, tokens, from_, index, path)
        if source is not None:
            doc, found = _remove(doc, source, owned, index, from_)
            doc = _add(doc, tokens, found, owned, index, path)
    return doc


def make_patch(old: Any, new: Any) -> list[dict[str, Any]]:
    """Compute an RFC 6902 patch that turns ``old`` into ``new``.

    Args:
        old: the source JSON document.
        new: the target JSON document.

    Returns:
        A list of operations in wire form (``{"op": ..., "path": ..., ...}``);
        ``apply_patch(old, make_patch(old, new))`` equals ``new``. Documents
        nested too deep for jsonpatch's recursive diff (about 490 levels and
        more) get one ``replace`` of the whole document instead, unless their
        encodings are equal (then nothing).
    """
    try:
        ops: list[dict[str, Any]] = jsonpatch.make_patch(old, new).patch
    except RecursionError:
        if dumps(old) == dumps(new):
            return []
        return [{"op": "replace", "path": "", "value": new}]
    return ops


def _add(
    doc: Any, tokens: tuple[str, ...], value: Any, owned: _Owned, index: int, path: str
) -> Any:
    """``add``: set an object member, insert into (or append to) an array."""
    if not tokens:
        return value
    doc, parent = _writable_parent(doc, tokens, owned, index, path)
    token = tokens[-1]
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        if token == "-":
            parent.append(value)
        else:
            i = array_index(token)
            if i < 0 or i > len(parent):
                raise PatchError(f"array index {token!r} out of range", index=index, path=path)
            parent.insert(i, value)
    else:
        raise PatchError("the parent is not an object or array", index=index, path=path)
    return doc


def _remove(
    doc: Any, tokens: tuple[str, ...], owned: _Owned, index: int, path: str
) -> tuple[Any, Any]:
    """``remove``: delete a location that must exist; return new doc and old value."""
    if not tokens:
        raise PatchError("cannot remove the whole document", index=index, path=path)
    doc, parent = _writable_parent(doc, tokens, owned, index, path)
    token = tokens[-1]
    if isinstance(parent, dict):
        found = parent.pop(token, MISSING)
        if found is MISSING:
            raise PatchError(f"no member {token!r}", index=index, path=path)
        return doc, found
    if isinstance(parent, list):
        i = array_index(token)
        if i < 0 or i >= len(parent):
            raise PatchError(f"array index {token!r} out of range", index=index, path=path)
        return doc, parent.pop(i)
    raise PatchError("the parent is not an object or array", index=index, path=path)


def _replace_in(parent: Any, token: str, value: Any, index: int, path: str) -> None:
    """``replace`` below the root: the location must exist."""
    if isinstance(parent, dict):
        if token not in parent:
            raise PatchError(f"no member {token!r}", index=index, path=path)
        parent[token] = value
    elif isinstance(parent, list):
        i = array_index(token)
        if i < 0 or i >= len(parent):
            raise PatchError(f"array index {token!r} out of range", index=index, path=path)
        parent[i] = value
    else:
        raise PatchError("the parent is not an object or array", index=index, path=path)


def _own(container: Any, owned: _Owned) -> Any:
    """``container`` itself if this call owns it, else an owned shallow copy."""
    if id(container) in owned:
        return container
    copied = container.copy()
    owned[id(copied)] = copied
    return copied


def _writable_parent(
    doc: Any, tokens: tuple[str, ...], owned: _Owned, index: int, path: str
) -> tuple[Any, Any]:
    """Copy-on-write the containers down to the parent of ``tokens``' target.

    Returns the (possibly new) root and the owned parent container. ``tokens``
    is not empty.
    """
    if not isinstance(doc, (dict, list)):
        raise PatchError("the document is not an object or array", index=index, path=path)
    root = node = _own(doc, owned)
    for token in tokens[:-1]:
        if isinstance(node, dict):
            child = node.get(token, MISSING)
            if child is MISSING:
                raise PatchError(f"no member {token!r} on the way", index=index, path=path)
            key: Any = token
        else:
            i = array_index(token)
            if i < 0 or i >= len(node):
                raise PatchError(
                    f"array index {token!r} on the way out of range", index=index, path=path
                )
            child = node[i]
            key = i
        if not isinstance(child, (dict, list)):
            raise PatchError(
                f"{token!r} on the way is not an object or array", index=index, path=path
            )
        if id(child) not in owned:
            child = child.copy()
            owned[id(child)] = child
            node[key] = child
        node = child
    return root, node


def _release(value: Any, owned: _Owned) -> None:
    """Forget ownership of the owned containers reachable in ``value``.

    Only owned containers are walked: an unowned container never holds an owned
    one, so the walk costs no more than the copies made so far.
    """
    if not owned or id(value) not in owned:
        return
    stack = [value]
    while stack:
        node = stack.pop()
        del owned[id(node)]
        children = node.values() if isinstance(node, dict) else node
        stack.extend(c for c in children if id(c) in owned)

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

import enum
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import jsonpatch

from agentproto._core.errors import PatchError
from agentproto._core.jsonutil import DEFAULT_MAX_DEPTH
from agentproto._core.unset import UNSET

__all__ = [
    "DEFAULT_PATCH_LIMITS",
    "PatchLimits",
    "apply_patch",
    "apply_patch_in_place",
    "make_patch",
]


@attrs.frozen(kw_only=True)
class PatchLimits:
    """How much one JSON Patch may do; a patch over a limit fails atomically.

    Attributes:
        max_operations: the most operations one patch may hold.
        max_added_nodes: the most JSON values (containers and scalars, counted
            recursively) that the ``add``, ``replace`` and ``copy`` operations
            of one patch may bring into the document.
        max_depth: the deepest nesting an operation may create: the depth of
            its target location plus the depth of the value it puts there
            (``[]`` is depth 1), as the JSON parser's own limit counts it.
    """

    max_operations: int = 10_000
    max_added_nodes: int = 1_000_000
    max_depth: int = DEFAULT_MAX_DEPTH


DEFAULT_PATCH_LIMITS = PatchLimits()
"""The limits the appliers use unless told otherwise."""

# An array index too long to be any list's index (and to convert cheaply).
_HUGE_INDEX = sys.maxsize
_MAX_INDEX_DIGITS = len(str(sys.maxsize)) - 1

# Marks a member absent from an operation or a location absent from a document.
_MISSING: Any = object()
# Undo-log markers of apply_patch_in_place: an array element was inserted / removed.
_INSERTED: Any = object()
_REMOVED: Any = object()

_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})
_NEEDS_VALUE = frozenset({"add", "replace", "test"})
_NEEDS_FROM = frozenset({"move", "copy"})

# Parsed pointers, by pointer string; a stream uses few distinct pointers.
_POINTER_CACHE: dict[str, tuple[str, ...] | None] = {}
_POINTER_CACHE_MAX = 4096

_Owned = dict[int, Any]


def apply_patch(
    document: Any, operations: Sequence[Any], *, limits: PatchLimits = DEFAULT_PATCH_LIMITS
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
    doc = document
    budget = _Budget(limits, len(operations))
    for index, operation in enumerate(operations):
        op, path, value, from_ = _normalise(operation, index)
        tokens = _tokens(path, index, path)
        budget.check(doc, op, tokens, value, from_, index, path)
        if op == "add":
            doc = _add(doc, tokens, value, owned, index, path)
        elif op == "replace":
            if not tokens:
                doc = value
                continue
            doc, parent = _writable_parent(doc, tokens, owned, index, path)
            _replace_in(parent, tokens[-1], value, index, path)
        elif op == "remove":
            doc, _ = _remove(doc, tokens, owned, index, path)
        elif op == "test":
            found = _get(doc, tokens, index, path)
            if not _json_equal(found, value):
                raise PatchError("test failed: the value differs", index=index, path=path)
        elif op == "copy":
            found = _get(doc, _tokens(from_, index, from_), index, from_)
            _release(found, owned)
            doc = _add(doc, tokens, found, owned, index, path)
        else:  # move
            source = _move_source(doc, tokens, from_, index, path)
            if source is None:
                continue
            doc, found = _remove(doc, source, owned, index, from_)
            doc = _add(doc, tokens, found, owned, index, path)
    return doc


def apply_patch_in_place(
    document: Any, operations: Sequence[Any], *, limits: PatchLimits = DEFAULT_PATCH_LIMITS
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

    Returns:
        The patched document: ``document`` itself, unless the patch replaced the
        whole document (path ``""``).

    Raises:
        PatchError: as :func:`apply_patch`; the document is then unchanged.
    """
    undo: list[tuple[Any, ...]] = []
    doc = document
    budget = _Budget(limits, len(operations))
    try:
        for index, operation in enumerate(operations):
            op, path, value, from_ = _normalise(operation, index)
            tokens = _tokens(path, index, path)
            budget.check(doc, op, tokens, value, from_, index, path)
            if op == "test":
                if not _json_equal(_get(doc, tokens, index, path), value):
                    raise PatchError("test failed: the value differs", index=index, path=path)
            elif op == "add":
                doc = _add_in_place(doc, tokens, _copy_json(value), undo, index, path)
            elif op == "replace":
                if not tokens:
                    doc = _copy_json(value)
                    continue
                parent = _get_container(doc, tokens[:-1], index, path)
                _replace_in_place(parent, tokens[-1], _copy_json(value), undo, index, path)
            elif op == "remove":
                _remove_in_place(doc, tokens, undo, index, path)
            elif op == "copy":
                found = _get(doc, _tokens(from_, index, from_), index, from_)
                doc = _add_in_place(doc, tokens, _copy_json(found), undo, index, path)
            else:  # move
                source = _move_source(doc, tokens, from_, index, path)
                if source is None:
                    continue
                found = _remove_in_place(doc, source, undo, index, from_)
                doc = _add_in_place(doc, tokens, found, undo, index, path)
    except PatchError:
        _rollback(undo)
        raise
    return doc


def _move_source(
    doc: Any, tokens: tuple[str, ...], from_: str, index: int, path: str
) -> tuple[str, ...] | None:
    """The tokens of a ``move``'s ``from``; None for a move onto itself (a no-op whose
    ``from`` must still exist). Moving a location into its own child is an error."""
    from_tokens = _tokens(from_, index, from_)
    if from_tokens == tokens:
        _get(doc, from_tokens, index, from_)
        return None
    n = len(from_tokens)
    if len(tokens) > n and tokens[:n] == from_tokens:
        raise PatchError(f"cannot move {from_!r} into its own child", index=index, path=path)
    return from_tokens


def _copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (scalars are shared: they are immutable).

    Iterative, so that no depth the limits allow can exhaust the call stack.
    """
    if not isinstance(value, (dict, list)):
        return value
    root = _shallow_container(value)
    stack = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, (dict, list)):
                copied = _shallow_container(item)
                target[key] = copied
                stack.append((item, copied))
            else:
                target[key] = item
    return root


def _shallow_container(value: Any) -> Any:
    """An empty dict, or a list of ``value``'s length, to fill with copies."""
    return {} if isinstance(value, dict) else [None] * len(value)


class _Budget:
    """What is left of one patch's :class:`PatchLimits` while it applies."""

    __slots__ = ("limits", "nodes")

    def __init__(self, limits: PatchLimits, count: int) -> None:
        if count > limits.max_operations:
            raise PatchError(
                f"the patch has {count} operations, more than max_operations="
                f"{limits.max_operations} (raise PatchLimits.max_operations to allow it)",
                index=limits.max_operations,
                path="",
                limit="max_operations",
            )
        self.limits = limits
        self.nodes = limits.max_added_nodes

    def check(
        self,
        doc: Any,
        op: str,
        tokens: tuple[str, ...],
        value: Any,
        from_: Any,
        index: int,
        path: str,
    ) -> None:
        """Refuse an operation that would exceed a limit (before it writes)."""
        if op == "add" or op == "replace":
            if not isinstance(value, (dict, list)):  # the usual case: one scalar
                self.nodes -= 1
                if self.nodes < 0:
                    raise _over_nodes(index, path)
                return
        elif op == "copy":
            value = _get(doc, _tokens(from_, index, from_), index, from_)
        elif op == "move":
            from_tokens = _tokens(from_, index, from_)
            if len(tokens) > len(from_tokens):  # deeper: only the depth can grow
                found = _get(doc, from_tokens, index, from_)
                _measure(found, None, len(tokens), self.limits.max_depth, index, path)
            return
        else:
            return
        self.nodes -= _measure(value, self.nodes, len(tokens), self.limits.max_depth, index, path)


def _measure(
    value: Any, nodes: int | None, level: int, max_depth: int, index: int, path: str
) -> int:
    """The number of JSON values in ``value``, put ``level`` containers deep.

    Refuses more than ``nodes`` values (``None``: no count limit) or a nesting
    deeper than ``max_depth``; the walk stops as soon as either is exceeded.
    """
    if not isinstance(value, (dict, list)):
        if nodes is not None and nodes < 1:
            raise _over_nodes(index, path)
        return 1
    count = 0
    stack = [(value, level + 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if depth > max_depth:
            raise PatchError(
                f"the operation would nest the document deeper than max_depth={max_depth} "
                "(raise PatchLimits.max_depth to allow it)",
                index=index,
                path=path,
                limit="max_depth",
            )
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
            else:
                count += 1
        if nodes is not None and count > nodes:
            raise _over_nodes(index, path)
    return count


def _over_nodes(index: int, path: str) -> PatchError:
    return PatchError(
        "the patch adds more values than max_added_nodes allows "
        "(raise PatchLimits.max_added_nodes to allow it)",
        index=index,
        path=path,
        limit="max_added_nodes",
    )


def _get_container(doc: Any, tokens: tuple[str, ...], index: int, path: str) -> Any:
    node = _get(doc, tokens, index, path)
    if not isinstance(node, (dict, list)):
        raise PatchError("the parent is not an object or array", index=index, path=path)
    return node


def _add_in_place(
    doc: Any,
    tokens: tuple[str, ...],
    value: Any,
    undo: list[tuple[Any, ...]],
    index: int,
    path: str,
) -> Any:
    if not tokens:
        return value
    parent = _get_container(doc, tokens[:-1], index, path)
    token = tokens[-1]
    if isinstance(parent, dict):
        undo.append((parent, token, parent.get(token, _MISSING)))
        parent[token] = value
    elif token == "-":
        undo.append((parent, len(parent), _INSERTED))
        parent.append(value)
    else:
        i = _array_index(token)
        if i < 0 or i > len(parent):
            raise PatchError(f"array index {token!r} out of range", index=index, path=path)
        undo.append((parent, i, _INSERTED))
        parent.insert(i, value)
    return doc


def _remove_in_place(
    doc: Any, tokens: tuple[str, ...], undo: list[tuple[Any, ...]], index: int, path: str
) -> Any:
    if not tokens:
        raise PatchError("cannot remove the whole document", index=index, path=path)
    parent = _get_container(doc, tokens[:-1], index, path)
    token = tokens[-1]
    if isinstance(parent, dict):
        found = parent.pop(token, _MISSING)
        if found is _MISSING:
            raise PatchError(f"no member {token!r}", index=index, path=path)
        undo.append((parent, token, found))
        return found
    i = _array_index(token)
    if i < 0 or i >= len(parent):
        raise PatchError(f"array index {token!r} out of range", index=index, path=path)
    found = parent.pop(i)
    undo.append((parent, i, _REMOVED, found))
    return found


def _replace_in_place(
    parent: Any, token: str, value: Any, undo: list[tuple[Any, ...]], index: int, path: str
) -> None:
    if isinstance(parent, dict):
        old = parent.get(token, _MISSING)
        if old is _MISSING:
            raise PatchError(f"no member {token!r}", index=index, path=path)
        undo.append((parent, token, old))
        parent[token] = value
        return
    i = _array_index(token)
    if i < 0 or i >= len(parent):
        raise PatchError(f"array index {token!r} out of range", index=index, path=path)
    undo.append((parent, i, parent[i]))
    parent[i] = value


def _rollback(undo: list[tuple[Any, ...]]) -> None:
    """Undo logged changes, newest first."""
    for entry in reversed(undo):
        container, key, old = entry[0], entry[1], entry[2]
        if old is _INSERTED:
            del container[key]
        elif old is _REMOVED:
            container.insert(key, entry[3])
        elif old is _MISSING:
            del container[key]
        else:
            container[key] = old


def make_patch(old: Any, new: Any) -> list[dict[str, Any]]:
    """Compute an RFC 6902 patch that turns ``old`` into ``new``.

    Args:
        old: the source JSON document.
        new: the target JSON document.

    Returns:
        A list of operations in wire form (``{"op": ..., "path": ..., ...}``);
        ``apply_patch(old, make_patch(old, new))`` equals ``new``.
    """
    ops: list[dict[str, Any]] = jsonpatch.make_patch(old, new).patch
    return ops


# --- operations --------------------------------------------------------------


def _normalise(operation: Any, index: int) -> tuple[str, str, Any, Any]:
    """The ``(op, path, value, from)`` of one operation, wire or typed."""
    if type(operation) is dict or isinstance(operation, Mapping):
        op = operation.get("op", _MISSING)
        path = operation.get("path", _MISSING)
        value = operation.get("value", _MISSING)
        from_ = operation.get("from", _MISSING)
    else:
        op = getattr(operation, "op", _MISSING)
        path = getattr(operation, "path", _MISSING)
        value = getattr(operation, "value", _MISSING)
        from_ = getattr(operation, "from_", _MISSING)
        if isinstance(op, enum.Enum):
            op = op.value
        # A typed operation may carry the UNSET sentinel for an absent member.
        if value is UNSET:
            value = _MISSING
        if from_ is UNSET:
            from_ = _MISSING
    if not isinstance(path, str):
        shown = "" if path is _MISSING else repr(path)
        reason = "missing 'path'" if path is _MISSING else f"'path' is not a string: {shown}"
        raise PatchError(reason, index=index, path=shown)
    if op not in _OPS:
        shown_op = "<missing>" if op is _MISSING else repr(op)
        raise PatchError(f"unknown operation {shown_op}", index=index, path=path)
    if op in _NEEDS_VALUE and value is _MISSING:
        raise PatchError(f"missing 'value' for {op!r}", index=index, path=path)
    if op in _NEEDS_FROM:
        if from_ is _MISSING:
            raise PatchError(f"missing 'from' for {op!r}", index=index, path=path)
        if not isinstance(from_, str):
            raise PatchError(f"'from' is not a string: {from_!r}", index=index, path=path)
    return op, path, value, from_


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
            i = _array_index(token)
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
        found = parent.pop(token, _MISSING)
        if found is _MISSING:
            raise PatchError(f"no member {token!r}", index=index, path=path)
        return doc, found
    if isinstance(parent, list):
        i = _array_index(token)
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
        i = _array_index(token)
        if i < 0 or i >= len(parent):
            raise PatchError(f"array index {token!r} out of range", index=index, path=path)
        parent[i] = value
    else:
        raise PatchError("the parent is not an object or array", index=index, path=path)


# --- documents ---------------------------------------------------------------


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
            child = node.get(token, _MISSING)
            if child is _MISSING:
                raise PatchError(f"no member {token!r} on the way", index=index, path=path)
            key: Any = token
        else:
            i = _array_index(token)
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


def _get(doc: Any, tokens: tuple[str, ...], index: int, path: str) -> Any:
    """The value at ``tokens``, read-only; the location must exist."""
    node = doc
    for token in tokens:
        if isinstance(node, dict):
            node = node.get(token, _MISSING)
            if node is _MISSING:
                raise PatchError(f"no member {token!r}", index=index, path=path)
        elif isinstance(node, list):
            i = _array_index(token)
            if i < 0 or i >= len(node):
                raise PatchError(f"array index {token!r} out of range", index=index, path=path)
            node = node[i]
        else:
            raise PatchError(f"cannot look up {token!r} in a scalar", index=index, path=path)
    return node


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


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0``, but booleans are not numbers.

    Iterative, so that no depth the limits allow can exhaust the call stack.
    """
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if isinstance(x, dict):
            if not isinstance(y, dict) or len(x) != len(y):
                return False
            for key, item in x.items():
                other = y.get(key, _MISSING)
                if other is _MISSING:
                    return False
                stack.append((item, other))
        elif isinstance(x, list):
            if not isinstance(y, list) or len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif not _scalar_equal(x, y):
            return False
    return True


def _scalar_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)):
        return isinstance(b, (int, float)) and a == b
    if isinstance(b, (dict, list, int, float)):
        return False
    return bool(a == b)


# --- pointers ----------------------------------------------------------------


def _tokens(pointer: str, index: int, path: str) -> tuple[str, ...]:
    """The unescaped reference tokens of an RFC 6901 pointer."""
    tokens = _POINTER_CACHE.get(pointer, _MISSING)
    if tokens is _MISSING:
        tokens = _parse_pointer(pointer)
        if len(_POINTER_CACHE) >= _POINTER_CACHE_MAX:
            _POINTER_CACHE.clear()
        _POINTER_CACHE[pointer] = tokens
    if tokens is None:
        raise PatchError(f"invalid JSON Pointer {pointer!r}", index=index, path=path)
    result: tuple[str, ...] = tokens
    return result


def _parse_pointer(pointer: str) -> tuple[str, ...] | None:
    """Parse a pointer; ``None`` when it is invalid."""
    if not pointer:
        return ()
    if pointer[0] != "/":
        return None
    parts = pointer[1:].split("/")
    if "~" not in pointer:
        return tuple(parts)
    tokens = []
    for part in parts:
        if "~" in part:
            # Every "~" must start "~0" or "~1"; "~1" is undone before "~0".
            if any(piece[:1] not in ("0", "1") for piece in part.split("~")[1:]):
                return None
            part = part.replace("~1", "/").replace("~0", "~")
        tokens.append(part)
    return tuple(tokens)


def _array_index(token: str) -> int:
    """The array index a token names, or ``-1`` when it names none.

    RFC 6901: ``0`` or a decimal without leading zeros. ``-`` (past the end)
    is handled by the callers that accept it.
    """
    if token.isdigit() and token.isascii() and (token[0] != "0" or len(token) == 1):
        # past any list's length: out of range, without converting thousands of digits
        return int(token) if len(token) <= _MAX_INDEX_DIGITS else _HUGE_INDEX
    return -1

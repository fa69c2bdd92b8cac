"""What both JSON Patch appliers share: limits, pointers, operations, reads, equality.

:mod:`agentproto._core.patch.apply` (copy-on-write) and
:mod:`agentproto._core.patch.inplace` (in place, with an undo log) differ only in
how they write; parsing an operation, resolving its pointer, reading a location,
comparing for ``test`` and checking :class:`PatchLimits` are the same and live
here.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

from agentproto._core.describe import describe
from agentproto._core.errors import PatchError, chained
from agentproto._core.json.codec import DEFAULT_MAX_DEPTH
from agentproto._core.unset import UNSET

__all__ = ["DEFAULT_PATCH_LIMITS", "NodeCount", "PatchLimits", "check_operation_count"]


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


class NodeCount:
    """The size of one document (JSON values, counted recursively), against a limit.

    Per-patch limits do not bound a document that many patches grow: repeated
    ``copy`` operations double it each time. A reducer keeps one count per
    document it patches and passes it to the appliers, which refuse a patch that
    would take it over ``limit`` (a :class:`PatchError` whose ``limit`` is
    ``name``) and, on success, add what the patch brought in. A ``remove`` or
    ``replace`` (and an ``add`` over an existing object member) credits the
    values it takes out, so a document patched in place for ever keeps the count
    of what it holds; the walk over a removed value is paid for by its addition.

    Attributes:
        nodes: the document's current count.
        limit: the most values the document may hold.
        name: the setting that holds ``limit``, named in errors.
    """

    __slots__ = ("limit", "name", "nodes")

    def __init__(self, limit: int, name: str, nodes: int = 0) -> None:
        self.limit = limit
        self.name = name
        self.nodes = nodes

    @staticmethod
    def measure(value: Any) -> int:
        """The number of JSON values in ``value``, or a close upper bound.

        Counted in C on the compact encoding: every value but the root follows a
        ``,`` or opens a non-empty container, so the count is ``1 + commas +
        non-empty containers`` (commas and brackets inside strings make it an
        overestimate). A value orjson cannot encode is walked instead.
        """
        if not isinstance(value, (dict, list)):
            return 1
        try:
            out = orjson.dumps(value)
        except orjson.JSONEncodeError:
            return _measure(value, None, 0, sys.maxsize, 0, "")
        containers = out.count(b"[") + out.count(b"{") - out.count(b"[]") - out.count(b"{}")
        return 1 + out.count(b",") + containers


# An array index too long to be any list's index (and to convert cheaply).
_HUGE_INDEX: Final = sys.maxsize
_MAX_INDEX_DIGITS: Final = len(str(sys.maxsize)) - 1

# Marks a member absent from an operation or a location absent from a document.
MISSING: Final[Any] = object()

_OPS: Final = frozenset({"add", "remove", "replace", "move", "copy", "test"})
_NEEDS_VALUE: Final = frozenset({"add", "replace", "test"})
_NEEDS_FROM: Final = frozenset({"move", "copy"})

# Parsed pointers, by pointer string; a stream uses few distinct pointers.
_POINTER_CACHE: Final[dict[str, tuple[str, ...] | None]] = {}
_POINTER_CACHE_MAX: Final = 4096


def _normalise(operation: Any, index: int) -> tuple[str, str, Any, Any]:
    """The ``(op, path, value, from)`` of one operation, wire or typed."""
    if type(operation) is dict or isinstance(operation, Mapping):
        op = operation.get("op", MISSING)
        path = operation.get("path", MISSING)
        value = operation.get("value", MISSING)
        from_ = operation.get("from", MISSING)
    else:
        op = getattr(operation, "op", MISSING)
        path = getattr(operation, "path", MISSING)
        value = getattr(operation, "value", MISSING)
        from_ = getattr(operation, "from_", MISSING)
        if isinstance(op, enum.Enum):
            op = op.value
        # A typed operation may carry the UNSET sentinel for an absent member.
        if value is UNSET:
            value = MISSING
        if from_ is UNSET:
            from_ = MISSING
    if not isinstance(path, str):
        shown = "" if path is MISSING else describe(path)
        reason = "missing 'path'" if path is MISSING else f"'path' is not a string: {shown}"
        raise PatchError(reason, index=index, path=shown)
    if op not in _OPS:
        shown_op = "<missing>" if op is MISSING else describe(op)
        raise PatchError(f"unknown operation {shown_op}", index=index, path=path)
    if op in _NEEDS_VALUE and value is MISSING:
        raise PatchError(f"missing 'value' for {op!r}", index=index, path=path)
    if op in _NEEDS_FROM:
        if from_ is MISSING:
            raise PatchError(f"missing 'from' for {op!r}", index=index, path=path)
        if not isinstance(from_, str):
            raise PatchError(f"'from' is not a string: {describe(from_)}", index=index, path=path)
    return op, path, value, from_


def move_source(
    doc: Any, tokens: tuple[str, ...], from_: str, index: int, path: str
) -> tuple[str, ...] | None:
    """The tokens of a ``move``'s ``from``; None for a move onto itself (a no-op whose
    ``from`` must still exist). Moving a location into its own child is an error."""
    from_tokens = pointer_tokens(from_, index, from_)
    if from_tokens == tokens:
        value_at(doc, from_tokens, index, from_)
        return None
    n = len(from_tokens)
    if len(tokens) > n and tokens[:n] == from_tokens:
        raise PatchError(f"cannot move {from_!r} into its own child", index=index, path=path)
    return from_tokens


def value_at(doc: Any, tokens: tuple[str, ...], index: int, path: str) -> Any:
    """The value at ``tokens``, read-only; the location must exist."""
    node = doc
    for token in tokens:
        if isinstance(node, dict):
            node = node.get(token, MISSING)
            if node is MISSING:
                raise PatchError(f"no member {token!r}", index=index, path=path)
        elif isinstance(node, list):
            i = array_index(token)
            if i < 0 or i >= len(node):
                raise PatchError(f"array index {token!r} out of range", index=index, path=path)
            node = node[i]
        else:
            raise PatchError(f"cannot look up {token!r} in a scalar", index=index, path=path)
    return node


def get_container(doc: Any, tokens: tuple[str, ...], index: int, path: str) -> Any:
    node = value_at(doc, tokens, index, path)
    if not isinstance(node, (dict, list)):
        raise PatchError("the parent is not an object or array", index=index, path=path)
    return node


def copy_json(value: Any) -> Any:
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


def check_operation_count(count: int, limits: PatchLimits = DEFAULT_PATCH_LIMITS) -> None:
    """Refuse a patch of ``count`` operations over ``limits.max_operations``, as applying it
    would: for a caller that copies or converts the operations first, to refuse before
    paying for that.

    Raises:
        PatchError: ``count`` is over the limit (``limit="max_operations"``).
    """
    if count > limits.max_operations:
        raise PatchError(
            f"the patch has {count} operations, more than max_operations="
            f"{limits.max_operations} (raise PatchLimits.max_operations to allow it)",
            index=limits.max_operations,
            path="",
            limit="max_operations",
        )


class _Budget:
    """What is left of one patch's :class:`PatchLimits` (and a document's
    :class:`NodeCount`) while it applies."""

    __slots__ = ("credit", "limits", "nodes", "start", "total")

    def __init__(self, limits: PatchLimits, count: int, total: NodeCount | None = None) -> None:
        check_operation_count(count, limits)
        self.limits = limits
        self.nodes = limits.max_added_nodes
        self.total = total
        self.credit = 0  # values the patch takes out (counted only with a total)
        if total is not None:
            self.nodes = min(self.nodes, total.limit - total.nodes)
        self.start = self.nodes

    def commit(self) -> None:
        """The patch applied: the document's count gains what it brought in."""
        if self.total is not None:
            self.total.nodes += self.start - self.nodes - self.credit

    def over_total(self, exc: PatchError) -> PatchError:
        """``exc`` renamed after the document's limit when that is what ran out."""
        total = self.total
        if (
            total is None
            or exc.limit != "max_added_nodes"
            or self.start >= self.limits.max_added_nodes
        ):
            return exc
        return PatchError(
            f"the patch would take the document over {total.name}={total.limit} values "
            f"(it holds {total.nodes}; raise {total.name} to allow it)",
            index=exc.index,
            path=exc.path,
            limit=total.name,
        )

    def take_out(self, doc: Any, op: str, tokens: tuple[str, ...]) -> None:
        """Credit the value a ``remove``/``replace``/``add`` takes out of ``doc``."""
        if op == "add" and tokens and isinstance(_peek(doc, tokens[:-1]), list):
            return  # an insertion takes nothing out
        old = _peek(doc, tokens)
        if old is not MISSING:
            self.credit += NodeCount.measure(old) if isinstance(old, (dict, list)) else 1

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
        total = self.total
        if total is not None:
            if op == "replace" and not isinstance(value, (dict, list)):
                self.credit += 1  # it takes out at least the one value it puts back
            elif op == "remove" or op == "replace" or op == "add":
                self.take_out(doc, op, tokens)
        try:
            if op == "add" or op == "replace":
                if not isinstance(value, (dict, list)):  # the usual case: one scalar
                    self.nodes -= 1
                    if self.nodes < 0:
                        raise _over_nodes(index, path)
                    return
            elif op == "copy":
                value = value_at(doc, pointer_tokens(from_, index, from_), index, from_)
            elif op == "move":
                from_tokens = pointer_tokens(from_, index, from_)
                if len(tokens) > len(from_tokens):  # deeper: only the depth can grow
                    found = value_at(doc, from_tokens, index, from_)
                    _measure(found, None, len(tokens), self.limits.max_depth, index, path)
                return
            else:
                return
            self.nodes -= _measure(
                value, self.nodes, len(tokens), self.limits.max_depth, index, path
            )

        except PatchError as exc:
            if total is None:
                raise
            raise chained(self.over_total(exc), None)


def _peek(doc: Any, tokens: tuple[str, ...]) -> Any:
    """The value at ``tokens``, or ``MISSING`` (never an error)."""
    node = doc
    for token in tokens:
        if isinstance(node, dict):
            node = node.get(token, MISSING)
        elif isinstance(node, list):
            i = array_index(token)
            node = node[i] if 0 <= i < len(node) else MISSING
        else:
            return MISSING
        if node is MISSING:
            return MISSING
    return node


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


def json_equal(a: Any, b: Any) -> bool:
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
                other = y.get(key, MISSING)
                if other is MISSING:
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


def pointer_tokens(pointer: str, index: int, path: str) -> tuple[str, ...]:
    """The unescaped reference tokens of an RFC 6901 pointer."""
    tokens = _POINTER_CACHE.get(pointer, MISSING)
    if tokens is MISSING:
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


def array_index(token: str) -> int:
    """The array index a token names, or ``-1`` when it names none.

    RFC 6901: ``0`` or a decimal without leading zeros. ``-`` (past the end)
    is handled by the callers that accept it.
    """
    if token.isdigit() and token.isascii() and (token[0] != "0" or len(token) == 1):
        # past any list's length: out of range, without converting thousands of digits
        return int(token) if len(token) <= _MAX_INDEX_DIGITS else _HUGE_INDEX
    return -1


Step = Callable[[Any, str, tuple[str, ...], Any, Any, Any, int, str], Any]
"""``(doc, op, tokens, value, from, log, index, path)`` → the new root: one applier's
way of writing an operation, keeping what it needs in ``log``."""


def drive(
    doc: Any,
    operations: Sequence[Any],
    limits: PatchLimits,
    count: NodeCount | None,
    step: Step,
    log: Any,
) -> Any:
    """Parse, check against the limits and apply each operation in order; on success
    the caller's :class:`NodeCount` takes the patch's growth."""
    budget = _Budget(limits, len(operations), count)
    for index, operation in enumerate(operations):
        op, path, value, from_ = _normalise(operation, index)
        tokens = pointer_tokens(path, index, path)
        budget.check(doc, op, tokens, value, from_, index, path)
        doc = step(doc, op, tokens, value, from_, log, index, path)
    budget.commit()
    return doc

"""Zero-copy read-only views of JSON documents, and :func:`thaw` to copy them back.

Theory of operation
-------------------
The reducers keep JSON documents (state, activity content, metadata) as
immutable *values*: they never change a container in place once other code can
see it, and patches build new containers along the touched paths
(:mod:`agentproto._core.patch.apply`). Handing such a value to a caller as it is would
let the caller change it, and the reducer's copy with it. Copying it on every
read would cost the size of the document each time.

:func:`readonly` does neither: it wraps the value. A ``dict`` becomes a
:class:`JsonMapping` (a :class:`~collections.abc.Mapping`), a ``list`` a
:class:`JsonSequence` (a :class:`~collections.abc.Sequence`); scalars (``str``,
``int``, ``float``, ``bool``, ``None``) are immutable already and come back
unchanged. Wrapping is lazy: reading a member wraps that member, when it is a
container, at the moment it is read, so every access costs O(1) and nothing is
copied. The views have no methods that change anything, and their only slot is
set once, so attribute assignment fails with :class:`AttributeError`.

A view compares equal (``==``) to the plain JSON it wraps, and to another view
of equal JSON. Views are not hashable (the data they wrap is not).

:func:`thaw` turns a view (or plain JSON, or plain JSON holding views) into an
independent deep copy made of plain ``dict``/``list``/scalars, for callers that
want to change or keep a document. There is deliberately no way to get the
wrapped object itself out of a view.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

__all__ = ["JsonMapping", "JsonSequence", "readonly", "thaw"]


def readonly(value: Any) -> Any:
    """A read-only view of a JSON value; O(1), no copy.

    Args:
        value: a JSON value (``dict``/``list``/``str``/``int``/``float``/
            ``bool``/``None``), or a view already.

    Returns:
        a :class:`JsonMapping` for a ``dict``, a :class:`JsonSequence` for a
        ``list``, and anything else unchanged.
    """
    cls = value.__class__
    if cls is dict:
        return JsonMapping(value)
    if cls is list:
        return JsonSequence(value)
    if isinstance(value, dict):
        return JsonMapping(value)
    if isinstance(value, list):
        return JsonSequence(value)
    return value


class _View:
    """What both views share: their one slot, set once; no assignment; ``!=``, repr, pickling."""

    __slots__ = ("_data",)

    _data: Any

    def __init__(self, data: Any) -> None:
        object.__setattr__(self, "_data", data)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __repr__(self) -> str:
        return f"readonly({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # pickling or copying a view yields an independent view of a copy
        return (readonly, (thaw(self._data),))


class JsonMapping(_View, Mapping[str, Any]):
    """A read-only view of a JSON object; members are wrapped as they are read."""

    __slots__ = ()

    _data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return readonly(self._data[key])

    def get(self, key: str, default: Any = None) -> Any:
        """The (wrapped) member ``key``, or ``default`` when it is absent."""
        data = self._data
        if key in data:
            return readonly(data[key])
        return default

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonMapping):
            return self._data == other._data
        if isinstance(other, dict):
            return self._data == other
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class JsonSequence(_View, Sequence[Any]):
    """A read-only view of a JSON array; items are wrapped as they are read."""

    __slots__ = ()

    _data: list[Any]

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> JsonSequence: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            # the sliced list is new and nobody else holds it; its items stay shared
            return JsonSequence(self._data[index])
        return readonly(self._data[index])

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        for item in self._data:
            yield readonly(item)

    def __reversed__(self) -> Iterator[Any]:
        for item in reversed(self._data):
            yield readonly(item)

    def __contains__(self, value: object) -> bool:
        return value in self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonSequence):
            return self._data == other._data
        if isinstance(other, list):
            return self._data == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


_DICT = dict
_LIST = list
_SCALARS = frozenset({str, int, float, bool, type(None)})


def thaw(value: Any) -> Any:
    """An independent deep copy of a JSON value, as plain ``dict``/``list``/scalars.

    Views (:class:`JsonMapping`, :class:`JsonSequence`) anywhere in ``value`` are
    unwrapped on the way; scalars are immutable and are shared, not copied.
    Values are copied exactly (``1`` stays an ``int``, ``1.0`` a ``float``).
    Nesting depth is not limited by Python's recursion limit.
    """
    try:
        return _copy(value)
    except RecursionError:
        return _copy_deep(value)


def _copy(value: Any) -> Any:
    cls = value.__class__
    if cls is _DICT:
        out = {}
        for key, item in value.items():
            out[key] = item if item.__class__ in _SCALARS else _copy(item)
        return out
    if cls is _LIST:
        return [item if item.__class__ in _SCALARS else _copy(item) for item in value]
    if cls in _SCALARS:
        return value
    if cls is JsonMapping or cls is JsonSequence:
        return _copy(value._data)
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(item) for item in value]
    return value


def _copy_deep(value: Any) -> Any:
    """:func:`_copy` without recursion, for documents deeper than the stack allows."""

    def unwrap(node: Any) -> Any:
        while isinstance(node, (JsonMapping, JsonSequence)):
            node = node._data
        return node

    def fresh(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {}
        if isinstance(node, (list, tuple)):
            return []
        return None

    root_src = unwrap(value)
    root = fresh(root_src)
    if root is None:
        return root_src
    stack: list[tuple[Any, Any]] = [(root_src, root)]
    while stack:
        src, dst = stack.pop()
        items = src.items() if isinstance(src, Mapping) else enumerate(src)
        for key, item in items:
            item = unwrap(item)
            child = fresh(item)
            if child is None:
                child = item
            else:
                stack.append((item, child))
            if isinstance(dst, dict):
                dst[key] = child
            else:
                dst.append(child)
    return root

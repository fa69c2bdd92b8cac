"""The ACP v2 top-level ``_meta`` metadata patch rule, on plain JSON values.

Theory of operation
-------------------
The top-level ``_meta`` of a v2 upsert update (``tool_call_update``,
``terminal_update``, the message updates, ``session_info_update``,
``compaction_update``, ``subagent_update``, ``session_message``) is a *patch*
of the metadata the client stores for the entity, one level deep:

* omitted (:data:`~agentproto._core.unset.UNSET`): the stored metadata is unchanged;
* ``None`` (``_meta: null``): all stored metadata is cleared;
* an object: patched key by key. An omitted key keeps its value, a key set to
  ``None`` is removed (removing an absent key does nothing), any other value
  replaces that key whole. Nested objects are never merged and a ``None``
  nested inside a value is ordinary data.

Stored metadata never holds a ``None`` value, and stored metadata without keys
*is* "no metadata": this module always represents it as ``None``.

Three pure functions implement the rule and the two derived obligations of the
RFD (``seeds/acp-v2-meta-patches.md``):

* :func:`apply_meta_update`: what a client stores after an update (and
  :func:`patch_meta_in_place`, the same changing the stored object itself, for an
  owner nobody else shares it with: O(patch) rather than O(stored metadata));
* :func:`resync_meta`: what a sender sends to bring a client from the metadata
  it holds to the current metadata, removing stale keys explicitly;
* :func:`combine_meta`: what an intermediary may send instead of two
  consecutive updates without losing removals and clears.

No function but :func:`patch_meta_in_place` mutates its arguments. A result may
share the caller's dict (or the values inside it) when nothing had to change; treat
metadata as immutable.
The typed layer (``_meta`` fields of the generated classes) wraps these
functions; every other ``_meta`` of the protocol keeps whole-object meaning and
must not be fed to them as a patch.
"""

from __future__ import annotations

import math
from typing import Any

from agentproto._core.errors import SchemaError
from agentproto._core.unset import UNSET, Unset

__all__ = [
    "Meta",
    "apply_meta_update",
    "check_meta_patch",
    "combine_meta",
    "patch_meta_in_place",
    "resync_meta",
]

Meta = dict[str, Any]
"""Metadata as plain JSON: top-level keys to any JSON value."""

_PATCH_LOCATION = "/_meta"
_ABSENT: Any = object()
_EXACT_SCALARS = frozenset({str, int, bool})  # classes whose == is JSON sameness


def _json_type(value: object) -> str:
    """The JSON name of ``value``'s type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _pointer_token(key: str) -> str:
    """``key`` escaped as one JSON Pointer reference token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _check_patch(update: object) -> None:
    """Raise unless ``update`` is a valid ``_meta`` patch (UNSET, None or object)."""
    if update is UNSET or update is None or isinstance(update, dict):
        return
    raise SchemaError(
        "type",
        _PATCH_LOCATION,
        f"a _meta patch must be an object, null or omitted, not {_json_type(update)}",
    )


def _check_stored(stored: object, what: str) -> None:
    """Raise unless ``stored`` is valid stored metadata (None or object)."""
    if stored is None or isinstance(stored, dict):
        return
    raise SchemaError(
        "type", "", f"{what} metadata must be an object or None, not {_json_type(stored)}"
    )


def _same_json(a: object, b: object) -> bool:
    """Whether two JSON values are the same value, type for type.

    Stricter than ``==``: ``1``, ``1.0`` and ``True`` differ, and so do ``0.0``
    and ``-0.0`` and objects whose keys come in another order, because each of
    them serialises differently. A false "different" only costs a copy. Pairs of
    containers are compared with a stack of their own, so any depth is fine.
    """
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if x is y:
            continue
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            assert isinstance(y, dict)
            if list(x) != list(y):
                return False
            pending.extend((x[key], y[key]) for key in x)
        elif isinstance(x, list):
            assert isinstance(y, list)
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif isinstance(x, float):
            assert isinstance(y, float)
            if x != y or math.copysign(1.0, x) != math.copysign(1.0, y):
                return False
        elif x != y:
            return False
    return True


_BY_KEY: Any = object()


def _settled(stored: Meta | None, update: Meta | Unset | None) -> Any:
    """The result of a patch that needs no work key by key (a clear, an omitted or empty
    patch, nothing stored yet: then a new dict), after checking both; else :data:`_BY_KEY`."""
    if stored is not None and stored.__class__ is not dict:
        _check_stored(stored, "stored")
    if update.__class__ is not dict:
        _check_patch(update)
        if update is None:
            return None
        if not isinstance(update, dict):  # UNSET
            return stored or None
    assert isinstance(update, dict)
    if not update:
        return stored or None
    if not stored:
        kept = {key: value for key, value in update.items() if value is not None}
        return kept or None
    return _BY_KEY


def apply_meta_update(stored: Meta | None, update: Meta | Unset | None) -> Meta | None:
    """Apply one update's top-level ``_meta`` patch (the module's rule) to stored metadata.

    Args:
        stored: the metadata held for the entity, ``None`` (or ``{}``) for none; it
            holds no ``None`` values, as no result of this function does.
        update: the update's ``_meta``: :data:`UNSET` (omitted), ``None`` or the patch.

    Returns:
        The new metadata (``None`` for no keys): ``stored`` itself when nothing changes.

    Raises:
        SchemaError: keyword ``"type"``: ``update`` is not UNSET, None or a dict
            (location ``"/_meta"``), or ``stored`` is not None or a dict (location ``""``).

    Example:
        >>> apply_meta_update({"a": 1, "b": 2}, {"a": None, "c": 3})
        {'b': 2, 'c': 3}
    """
    settled = _settled(stored, update)
    if settled is not _BY_KEY:
        return settled  # type: ignore[no-any-return]
    assert stored is not None and isinstance(update, dict)
    # Scan until the first key that changes something; nothing changed: ``stored`` itself.
    items = iter(update.items())
    for key, value in items:
        if value is None:
            if key not in stored:
                continue
        else:
            current = stored.get(key, _ABSENT)
            if current is value:
                continue
            cls = current.__class__
            if cls is value.__class__ and (
                current == value if cls in _EXACT_SCALARS else _same_json(current, value)
            ):
                continue
        result = dict(stored)
        if value is None:
            del result[key]
        else:
            result[key] = value
        for key, value in items:  # the rest of the patch, on the copy
            if value is None:
                result.pop(key, None)
            else:
                result[key] = value
        return result or None
    return stored


def check_meta_patch(update: object) -> None:
    """Raise unless ``update`` is a ``_meta`` patch (:data:`UNSET`, ``None`` or a dict).

    Raises:
        SchemaError: keyword ``"type"``, location ``"/_meta"``.
    """
    if update is UNSET or update is None or isinstance(update, dict):
        return
    _check_patch(update)


def patch_meta_in_place(stored: Meta | None, update: Meta | Unset | None) -> Meta | None:
    """:func:`apply_meta_update`, changing ``stored`` itself: O(size of the patch), where
    building a new object costs the size of the stored metadata.

    For an owner whose stored metadata nobody else holds (a
    :class:`~agentproto.acp.SessionState`, whose entities later updates change in place);
    whatever it hands out of it is a copy. ``update`` is checked first
    (:func:`check_meta_patch`): an invalid patch changes nothing.

    Returns:
        The new metadata, ``None`` for no keys: ``stored`` itself, changed, when it held
        keys, else a new dict.

    Raises:
        SchemaError: as :func:`apply_meta_update`.
    """
    settled = _settled(stored, update)
    if settled is not _BY_KEY:
        return settled  # type: ignore[no-any-return]
    assert stored is not None and isinstance(update, dict)
    pop = stored.pop
    for key, value in update.items():
        if value is None:
            pop(key, None)
        else:
            stored[key] = value
    return stored or None


def resync_meta(
    known: Meta | None, current: Meta | None, *, clear_first: bool = False
) -> list[Meta | None]:
    """The ``_meta`` patches that bring a client from ``known`` to ``current``.

    A sender that resends an entity (replay to a reconnecting client, a
    snapshot) must remove the keys the client may still hold. Send one update
    per returned patch, in order.

    * ``current`` empty: ``[None]`` (``_meta: null``, never ``{}``).
    * ``known`` empty, ``current`` not: ``[current]`` (the object alone).
    * otherwise: one object holding every key of ``current`` plus every stale
      key of ``known`` (absent from ``current``) set to ``None``.
    * ``clear_first=True`` and ``current`` not empty: ``[None, current]``, the
      two-update form. It does not consult ``known``, so it also fits when the
      client's metadata is not known exactly, but it is not atomic (not even in
      one JSON-RPC batch): the client briefly holds no metadata.

    Args:
        known: the metadata the client holds (``None`` or empty: none).
        current: the metadata the client should hold.
        clear_first: use the two-update form.

    Returns:
        At least one patch. Applying them in order to ``known`` with
        :func:`apply_meta_update` gives ``current`` (``None`` when empty). The
        objects are new dicts; the JSON values in them are shared.

    Raises:
        SchemaError: an argument is not None or a dict (keyword ``"type"``,
            location ``""``), or ``current`` holds a ``None`` value (keyword
            ``"type"``, location ``"/<key>"``): such metadata is not stored
            metadata (a whole-object ``_meta`` from elsewhere, perhaps), and
            its ``None`` would turn into a removal.
    """
    _check_stored(known, "known")
    _check_stored(current, "current")
    if not current:
        return [None]
    for key, value in current.items():
        if value is None:
            raise SchemaError(
                "type",
                f"/{_pointer_token(key)}",
                "stored metadata cannot hold null: in a patch it would remove the key",
            )
    if clear_first:
        return [None, dict(current)]
    if not known:
        return [dict(current)]
    patch: Meta = {key: None for key in known if key not in current}
    patch.update(current)
    return [patch]


def combine_meta(
    first: Meta | Unset | None, second: Meta | Unset | None
) -> list[Meta | Unset | None]:
    """Coalesce two consecutive ``_meta`` patches, keeping removals and clears.

    The result applied in order has the same effect as ``first`` then
    ``second`` on *any* stored metadata:

    * ``UNSET`` then ``x``, or ``x`` then ``UNSET``: ``[x]``.
    * anything then ``None``: ``[None]``.
    * object ``a`` then object ``b``: ``[a | b]``; ``b``'s keys win, its
      ``None`` keys stay (they are removals).
    * ``None`` then object ``d``: not coalescable, since the clear must still
      remove keys ``d`` does not mention: ``[None, d']`` with ``d'`` = ``d``
      without its ``None`` keys (removals after a clear are no-ops), or
      ``[None]`` when ``d'`` is empty.

    Args:
        first: the earlier update's ``_meta`` (UNSET when omitted).
        second: the later update's ``_meta``.

    Returns:
        One patch when the two coalesce, else two. A returned patch may be one
        of the arguments itself; neither argument is mutated.

    Raises:
        SchemaError: a patch is not UNSET, None or a dict (keyword ``"type"``,
            location ``"/_meta"``).
    """
    _check_patch(first)
    _check_patch(second)
    if isinstance(second, Unset):
        return [first]
    if isinstance(first, Unset) or second is None:
        return [second]
    if first is None:
        kept = {key: value for key, value in second.items() if value is not None}
        if not kept:
            return [None]
        return [None, second if len(kept) == len(second) else kept]
    merged = dict(first)
    merged.update(second)
    return [merged]

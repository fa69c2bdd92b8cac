"""Coalescing and resending ACP v2 updates: what intermediaries and replaying senders send.

Theory of operation
-------------------
Two operations build updates rather than apply them, on the typed layer:

* :func:`combine` is for an intermediary (a proxy) that wants to forward one
  update instead of two. The result must have the same effect as the two
  updates in order *on any state the client may hold*, since the
  intermediary does not know it. So two upserts of the same entity merge
  field by field (the later value wins, a clear is a value like any other),
  their ``_meta`` patches with :func:`~agentproto.acp._state.meta.combine_meta`
  (which keeps removals and clears); a chunk merges into the upsert before it
  only when that upsert set the collection (then the stored collection is
  known: the upsert's plus the chunk), and a chunk disappears into the upsert
  after it only when that upsert replaces the collection. A clear of
  ``_meta`` followed by an object cannot become one update, so the result is
  two: the merged fields with ``_meta: null``, then the object. Everything
  else (different entities, chunk after chunk, notices, unknown kinds, any
  update the client would reject) stays two updates, unchanged.
* :func:`resync_update` is for a sender that resends an entity to a client
  that may hold stale data (replay to a reconnecting client, a snapshot): one
  upsert carrying every field of the entity (a field the entity lacks is sent
  as ``null``, so the client clears it), with ``_meta`` from
  :func:`~agentproto.acp._state.meta.resync_meta`, which removes the stale keys; or
  two updates where the metadata must be cleared first.

A chunk's ``_meta`` describes the chunk only and is never stored, but it is
still data the peer sent: a chunk carrying ``_meta`` (or unknown members) is
never folded away. Unknown members of two merged upserts are merged too, the
later value winning.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from agentproto._core.errors import UsageError
from agentproto._core.unset import UNSET
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._state.entities import (
    BY_CHUNK,
    BY_UPSERT,
    Entity,
    EntityKind,
    PlanState,
    kind_of,
    snapshot,
    union_members,
)
from agentproto.acp._state.meta import Meta, combine_meta, resync_meta
from agentproto.acp._state.rules import LATEST

__all__ = ["ENTITY_OF", "combine", "resync_update"]

SessionUpdate = v2.SessionUpdate

_MEMBERS = union_members(v2.SessionUpdate)
# kinds whose state is simply the latest update
_LATEST = frozenset(_MEMBERS[tag] for tag in LATEST if tag in _MEMBERS)
_PLAN_UPDATE = _MEMBERS.get("plan_update")
_PLAN_REMOVED = _MEMBERS.get("plan_removed")


def _entity_key(kind: EntityKind) -> Callable[[Any], tuple[str, Any]]:
    ident = kind.id_field
    return lambda update: (kind.name, None if ident is None else getattr(update, ident))


def _plan_key(update: Any) -> tuple[str, Any]:
    return "plan", update.plan.plan_id


def _plan_removed_key(update: Any) -> tuple[str, Any]:
    return "plan", update.plan_id


def _latest_key(update: Any) -> tuple[str, Any]:
    return update.__class__.__name__, None


ENTITY_OF: Mapping[type, Callable[[Any], tuple[str, Any]]] = MappingProxyType(
    {  # later entries win: an entity kind's class, then a plan's, then a latest-value kind's
        **dict.fromkeys(_LATEST, _latest_key),
        **({} if _PLAN_REMOVED is None else {_PLAN_REMOVED: _plan_removed_key}),
        **({} if _PLAN_UPDATE is None else {_PLAN_UPDATE: _plan_key}),
        **{cls: _entity_key(kind) for cls, kind in (*BY_CHUNK.items(), *BY_UPSERT.items())},
    }
)
"""The update classes :func:`combine` may coalesce, each with how to find the entity an
update touches (two updates coalesce only when it is the same); an update of a class not
here (a notice, an unknown kind) never coalesces. Read-only."""


def entity_of(update: Any) -> tuple[str, Any] | None:
    """The entity an update touches, ``None`` for updates that never coalesce.

    An entity kind's class is looked up in the entity tables themselves first, so that a
    description derived again at run time (a class a caller made) is followed too."""
    cls = update.__class__
    kind = BY_UPSERT.get(cls) or BY_CHUNK.get(cls)
    if kind is not None:  # no closure built per update: combine runs on every one
        return kind.name, None if kind.id_field is None else getattr(update, kind.id_field)
    key = ENTITY_OF.get(cls)
    return None if key is None else key(update)


def _decodes(data: object) -> bool:
    """Whether ``data`` is base64 a client accepts."""
    if not isinstance(data, str):
        return False
    try:
        binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _valid(update: Any) -> bool:
    """Whether a client applies ``update`` without rejecting it."""
    meta = getattr(update, "meta", None)
    if not (meta is UNSET or meta is None or isinstance(meta, dict)):
        return False
    cls = update.__class__
    kind = BY_CHUNK.get(cls)
    if kind is not None and kind.spec.bytes_collection:
        return _decodes(getattr(update, kind.item_field))  # type: ignore[arg-type]
    kind = BY_UPSERT.get(cls)
    if kind is not None and kind.spec.bytes_collection:
        output = getattr(update, kind.collection)  # type: ignore[arg-type]
        return output is UNSET or output is None or _decodes(output.data)
    return True


def _identity(kind: EntityKind, update: Any) -> dict[str, Any]:
    """The non-patch fields of an upsert: its id, and fixed ones like a compaction's status."""
    return {name: getattr(update, name) for name in kind.identity}


def combine(first: SessionUpdate, second: SessionUpdate) -> list[SessionUpdate]:
    """Coalesce two consecutive updates of a session, when their effect allows it.

    Applying the result in order has the same effect as applying ``first``
    then ``second``, on any state a client may hold (see the module
    documentation for when updates coalesce).

    Args:
        first: the earlier update.
        second: the later update.

    Returns:
        ``[merged]`` when the two coalesce; ``[merged_with_meta_cleared,
        meta_object]`` for two upserts whose ``_meta`` patches are a clear
        then an object; else ``[first, second]``. The arguments are never
        mutated; a result may share values with them.
    """
    key = entity_of(first)
    if key is None or key != entity_of(second) or not (_valid(first) and _valid(second)):
        return [first, second]
    cls1 = first.__class__
    cls2 = second.__class__
    kind = BY_UPSERT.get(cls1)
    if kind is not None:
        if cls2 is cls1:
            return _merge_upserts(kind, first, second)
        if cls2 in BY_CHUNK:
            return _upsert_then_chunk(kind, first, second)
        return [first, second]  # pragma: no cover - one entity kind, one upsert class
    if cls1 in BY_CHUNK:
        kind = BY_UPSERT.get(cls2)
        if kind is not None:
            return _chunk_then_upsert(kind, first, second)
        return [first, second]
    if cls1 is _PLAN_UPDATE:
        # a plan update replaces the plan whole, and removing it forgets it: the second wins
        return [second]
    if cls1 is _PLAN_REMOVED:
        # removing twice is removing once; a plan re-created after removal moves to the end
        return [second] if cls2 is cls1 else [first, second]
    if (
        isinstance(first, v2.UsageUpdateSessionUpdate)
        and isinstance(second, v2.UsageUpdateSessionUpdate)
        and second.cost is UNSET
    ):
        # the latest usage wins, but its omitted cost keeps the one the first set or cleared
        return [attrs.evolve(second, cost=first.cost)]
    if cls1 is cls2 and cls1 in _LATEST:
        return [second]
    return [first, second]


def _merge_extra(
    first: dict[str, Any] | None, second: dict[str, Any] | None
) -> dict[str, Any] | None:
    if not first:
        return second or None
    if not second:
        return first
    return first | second


def _merge_upserts(kind: EntityKind, first: Any, second: Any) -> list[Any]:
    cls = first.__class__
    values = _identity(kind, second)
    for field in kind.patch:
        value = getattr(second, field.name)
        values[field.name] = getattr(first, field.name) if value is UNSET else value
    extra = _merge_extra(first.extra, second.extra)
    metas = combine_meta(first.meta, second.meta)
    if len(metas) == 1:
        return [cls(**values, meta=metas[0], extra=extra)]
    return [cls(**values, meta=None, extra=extra), cls(**_identity(kind, second), meta=metas[1])]


def _upsert_then_chunk(kind: EntityKind, upsert: Any, chunk: Any) -> list[Any]:
    field = kind.collection
    assert field is not None
    current = getattr(upsert, field)
    if current is UNSET or chunk.meta is not None or chunk.extra:
        # the stored collection is unknown, or the chunk carries data of its own
        return [upsert, chunk]
    item = getattr(chunk, kind.item_field)  # type: ignore[arg-type]
    if kind.spec.bytes_collection:
        if current is not None and (current.meta is not None or current.extra):
            return [upsert, chunk]
        before = b"" if current is None else base64.b64decode(current.data)
        data = before + base64.b64decode(item)
        merged = v2.TerminalOutput(data=base64.b64encode(data).decode("ascii"))
        return [attrs.evolve(upsert, **{field: merged})]
    items = [] if current is None else list(current)
    items.append(item)
    return [attrs.evolve(upsert, **{field: items})]


def _chunk_then_upsert(kind: EntityKind, chunk: Any, upsert: Any) -> list[Any]:
    field = kind.collection
    assert field is not None
    if getattr(upsert, field) is UNSET or chunk.meta is not None or chunk.extra:
        return [chunk, upsert]
    # the upsert replaces whatever the chunk appended (and creates the entity just as well)
    return [upsert]


# ---- resync -------------------------------------------------------------------------------


def resync_update(
    known: Meta | None, current: Entity, *, clear_first: bool = False
) -> list[SessionUpdate]:
    """The update(s) that resend an entity to a client holding ``known`` metadata.

    The first update carries every field of ``current``: a field the entity
    lacks is sent as ``null``, so whatever the client holds for the entity,
    it ends up holding ``current``. The metadata follows
    :func:`~agentproto.acp._state.meta.resync_meta`:

    * one update whose ``_meta`` holds the current keys plus each stale key of
      ``known`` set to ``null`` (the object alone when ``known`` is empty);
      ``_meta: null``, never ``{}``, when ``current`` has no metadata;
    * with ``clear_first`` (for a client whose metadata is not known exactly):
      two updates, the first clearing the metadata (its id fields and
      ``_meta: null``; a compaction's also carries its status), the second
      the whole entity with its metadata object. This form is not atomic,
      even in one JSON-RPC batch: the client briefly holds no metadata.

    A plan's ``_meta`` is not a patch: a plan is resent as one
    ``plan_update`` carrying its content and metadata whole, whatever
    ``known`` is.

    Args:
        known: the metadata the client holds for the entity (``None``: none).
        current: the entity as the sender holds it (from a
            :class:`~agentproto.acp.SessionState`).
        clear_first: use the two-update form.

    Returns:
        The updates to send in order.

    Raises:
        SchemaError: ``known`` or the entity's metadata is not a dict or
            ``None``, or the entity's metadata holds a ``null`` value.
        UsageError: ``current`` is not an entity.
    """
    if isinstance(current, PlanState):
        return [v2.PlanUpdateSessionUpdate(plan=current.plan, meta=current.meta or None)]
    try:
        kind = kind_of(current)
    except UsageError:
        raise UsageError(
            "acp.unknown-entity", f"expected an entity state, not {type(current).__name__}"
        ) from None
    values = snapshot(current)
    cls = kind.upsert
    patches = resync_meta(known, current.meta, clear_first=clear_first)
    if len(patches) == 1:
        return [cls(**values, meta=patches[0])]
    ident = {name: values[name] for name in kind.identity}
    return [cls(**ident, meta=None), cls(**values, meta=patches[1])]

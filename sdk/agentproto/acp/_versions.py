"""Adapters between ACP v1 and ACP v2 ``session/update`` notifications.

Theory of operation
-------------------
Most update kinds have the same wire shape in both versions, so an adapter
dumps the update to JSON with one version's converter, adjusts what differs
and loads it with the other's, tolerantly: anything the target cannot hold
(an unknown content type, an enumeration value the target lacks) is dropped
and reported in :attr:`~V1ToV2Adapter.diagnostics`. An update with no
counterpart is dropped with a ``not-convertible`` diagnostic. What differs is
the tool call and the top-level ``_meta``:

**v1 → v2** (:class:`V1ToV2Adapter`). A v1 ``tool_call`` (a complete report)
and a v1 ``tool_call_update`` both become a v2 ``tool_call_update``. Where v1
has no rule for keeping ``_meta`` (``tool_call_update``,
``session_info_update``) the object is forwarded as is: its keys now merge with
earlier ones and a ``null`` key becomes a removal, the closest v2 equivalent.
Where v1 replaces ``_meta`` whole (``tool_call``, ``compaction_update``,
``subagent_update``, ``session_message``), the v2 client would keep keys the
v1 sender dropped, so:

* stateful (default): the adapter tracks the metadata the v2 client holds per
  entity and adds ``null`` for every key that disappeared;
* stateless: it sends ``_meta: null`` in an update of its own before the
  update with the new object (not atomic: the client briefly holds none).

Which v1 updates replace ``_meta`` whole is a property of the v1 *sender*: one
that sends complete objects in ``tool_call_update`` too (as the stateful
:class:`V2ToV1Adapter` does) is declared with ``whole_meta``.

A v1 ``tool_call`` replaces the whole call: the stateful adapter sends ``null``
for the fields it omits once the call is known, the stateless one always does
(on a new call a ``null`` is the default anyway). v1 message chunks may lack a
``messageId``, which v2 requires: the stateful adapter gives each run of
consecutive chunks of one type a new id (``v1-1``, ``v1-2``, ...), the stateless
one uses one id per type (``v1-agent_message``, ...). A v1 ``plan`` becomes a
``plan_update`` of the plan ``DEFAULT_PLAN_ID``; ``current_mode_update`` has
no v2 counterpart.

**v2 → v1** (:class:`V2ToV1Adapter`). A v1 receiver may replace the whole
stored ``_meta`` and may store ``null`` values literally, so:

* stateful (default): the adapter keeps each session's v2 state (a
  :class:`~agentproto.acp.SessionState`) and sends the complete merged
  metadata (``{}`` once cleared) whenever an update touches it. A tool call's
  first update becomes a v1 ``tool_call`` (title ``""`` when none is known
  yet), later ones a v1 ``tool_call_update`` carrying the changed fields
  (a cleared collection as ``[]``, a reset kind or status as ``other`` /
  ``pending``); a ``tool_call_content_chunk`` becomes a ``tool_call_update``
  carrying the whole content. A message upsert whose content extends what
  was sent becomes chunks of the new blocks.
* stateless: **lossy for ``_meta``.** The patch object is forwarded as is: a
  v1 receiver that replaces ``_meta`` whole loses the keys the patch omits,
  and stores its ``null`` removals as ``null`` values. Tool call updates
  stay ``tool_call_update`` (a v1 client that needs a ``tool_call`` first
  must use the stateful mode); content chunks and message upserts cannot be
  converted.

Both modes are lossy where v1 lacks the concept: v1 has no status ``paused``
(sent as ``in_progress``) or ``cancelled`` (sent as ``failed``), no unknown
kinds or statuses (sent as ``other`` / ``in_progress``), no tool call
``capabilities``, no agent-owned terminals, no ``state_update``; and the
generated v1 classes cannot carry an explicit ``null``, so clearing a title,
name, raw input or output, or a v1 patch field, is not forwarded.

Tool call and message ids are scoped to a session: the adapters keep their
state per ``session_id`` (the ``session_id`` argument of
:meth:`~V1ToV2Adapter.convert`, or the notification's).
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any, TypeVar

import attrs

from agentproto._core.converter import Unrecognised, WireConverter
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError, UsageError
from agentproto._core.unset import UNSET
from agentproto.acp import _generated_v1 as v1
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._combine import _entity
from agentproto.acp._entities import BY_UPSERT, KINDS, EntityKind, union_members
from agentproto.acp._meta import Meta, apply_meta_update
from agentproto.acp._session import SessionState
from agentproto.acp._wire import _converter as _v2_converter
from agentproto.acp._wire import make_v1_converter

__all__ = ["DEFAULT_PLAN_ID", "WHOLE_META_V1", "V1ToV2Adapter", "V2ToV1Adapter"]

DEFAULT_PLAN_ID = "plan"
"""The v2 ``planId`` given to the single plan of a v1 session."""

_v1_converter = make_v1_converter()
_N = TypeVar("_N")

# what the two versions have in common, read from the generated classes
_V1_MEMBERS = union_members(v1.SessionUpdate)
_V2_MEMBERS = union_members(v2.SessionUpdate)
_TOOL_CALL = KINDS["tool_call"]


def _optional_wires(cls: type) -> frozenset[str]:
    """The wire names of the optional fields of a v1 class (``_meta`` apart)."""
    return frozenset(
        f.metadata["wire"]
        for f in attrs.fields(cls)
        if "wire" in f.metadata and not f.metadata.get("required") and f.name != "meta"
    )


def _id_optional_in_v1(kind: EntityKind) -> bool:
    """Whether the v1 chunk of ``kind`` may omit the id v2 requires."""
    chunk = _V1_MEMBERS.get(kind.spec.chunk or "")
    if chunk is None or kind.id_field is None:
        return False
    field = attrs.fields_dict(chunk).get(kind.id_field)
    return field is not None and not field.metadata.get("required")


# v2 tool call patch fields a v1 ``tool_call`` can omit (wire names); omitted = reset
_TOOL_CALL_RESET = tuple(
    f.wire for f in _TOOL_CALL.patch if f.wire in _optional_wires(_V1_MEMBERS["tool_call"])
)
# v1 upserts whose _meta may replace the stored object whole -> their v2 entity kind
_V1_UPSERT_KINDS: dict[str, EntityKind] = {
    kind.spec.upsert: kind for kind in KINDS.values() if kind.spec.upsert in _V1_MEMBERS
}
WHOLE_META_V1 = frozenset({"compaction_update", "subagent_update", "session_message"}) & set(
    _V1_UPSERT_KINDS
)
"""The v1 updates (besides ``tool_call``) whose ``_meta`` replaces the stored object whole."""
_V1_STATUSES = frozenset(v1.ENUM_VALUES["ToolCallStatus"])
_V1_KINDS = frozenset(v1.ENUM_VALUES["ToolKind"])
_V1_STATUS_FOR = {"paused": "in_progress", "cancelled": "failed"}
# v1 message chunks that may lack the id v2 requires -> their v2 entity kind
_MESSAGE_CHUNK_KINDS = {
    str(kind.spec.chunk): kind.name for kind in KINDS.values() if _id_optional_in_v1(kind)
}


def _notifications(cls: type[_N], notification: Any, updates: list[Any]) -> list[_N]:
    """The converted updates, each in a notification like the one they came in."""
    session_id, meta = notification.session_id, notification.meta
    return [cls(session_id=session_id, update=update, meta=meta) for update in updates]  # type: ignore[call-arg]


class _Adapter:
    """What both adapters share: diagnostics and tolerant loading."""

    def __init__(self, *, stateful: bool) -> None:
        self.stateful = stateful
        self.diagnostics: list[Diagnostic] = []

    def _report(self, code: str, message: str, subject: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code=code, message=message, subject=subject))

    def _load(self, converter: WireConverter, wire: dict[str, Any], tp: Any) -> Any:
        """Load ``wire`` tolerantly; ``None`` (reported) when it cannot be."""
        repairs: list[Diagnostic] = []
        try:
            value = converter.load(wire, tp, diagnostics=repairs)
        except (SchemaError, Unrecognised) as err:
            kind = wire.get("sessionUpdate")
            self._report("not-convertible", f"{kind!r} dropped: {err}", subject=kind)
            return None
        self.diagnostics.extend(repairs)
        return value


# ---- v1 -> v2 -----------------------------------------------------------------------------


@attrs.define
class _V1Session:
    metas: dict[tuple[str, Any], Meta | None] = attrs.Factory(dict)
    tool_calls: set[str] = attrs.Factory(set)
    run: tuple[str, str] | None = None  # (chunk kind, synthesized id) of the open chunk run
    runs: int = 0


class V1ToV2Adapter(_Adapter):
    """Converts ACP v1 session updates to ACP v2 (see the module documentation).

    Args:
        stateful: track what the v2 client holds (default); ``False`` for the
            stateless mode, which clears ``_meta`` with an update of its own
            where v1 replaces it whole.
        whole_meta: the v1 upserts whose ``_meta`` replaces the stored object
            whole (besides ``tool_call``, always). By default those the RFD
            names (:data:`WHOLE_META_V1`); add ``tool_call_update`` and
            ``session_info_update`` when the v1 sender sends complete objects
            there, as :class:`V2ToV1Adapter` does.

    Attributes:
        diagnostics: what was dropped or repaired, in order.

    Example:
        >>> from agentproto.acp import schema_v1
        >>> adapter = V1ToV2Adapter()
        >>> [u.session_update for u in adapter.convert(
        ...     schema_v1.ToolCallSessionUpdate(tool_call_id="c1", title="Read"))]
        ['tool_call_update']
    """

    def __init__(self, *, stateful: bool = True, whole_meta: Iterable[str] = WHOLE_META_V1) -> None:
        super().__init__(stateful=stateful)
        unknown = set(whole_meta) - set(_V1_UPSERT_KINDS)
        if unknown:
            raise UsageError(
                "acp.bad-option",
                f"whole_meta names no v1 upsert: {sorted(unknown)} (choose from "
                f"{sorted(_V1_UPSERT_KINDS)})",
            )
        self.whole_meta = frozenset(whole_meta)
        self._sessions: dict[str, _V1Session] = {}

    def convert(self, update: v1.SessionUpdate, *, session_id: str = "") -> list[v2.SessionUpdate]:
        """The v2 updates to send for one v1 update (none when it has no counterpart).

        Args:
            update: the v1 update.
            session_id: the session it belongs to (ids are scoped to it).

        Raises:
            UsageError: ``update`` is not a v1 session update.
        """
        if not attrs.has(update.__class__) or not hasattr(update, "session_update"):
            raise UsageError(
                "acp.not-an-update", f"expected a v1 session update, not {type(update).__name__}"
            )
        session = self._sessions.setdefault(session_id, _V1Session())
        wire: dict[str, Any] = _v1_converter.dump(update)
        kind = wire["sessionUpdate"]
        if kind in _MESSAGE_CHUNK_KINDS:
            if "messageId" not in wire:
                wire["messageId"] = self._message_id(session, kind)
        else:
            session.run = None
        before: list[dict[str, Any]] = []
        if kind == "tool_call":
            wire["sessionUpdate"] = "tool_call_update"
            ident = wire["toolCallId"]
            if not self.stateful or ident in session.tool_calls:
                for name in _TOOL_CALL_RESET:
                    wire.setdefault(name, None)
                wire.setdefault("_meta", None)
            before = self._whole_meta(session, wire, ("tool_call", ident))
            session.tool_calls.add(ident)
        elif kind in self.whole_meta:
            entity = _V1_UPSERT_KINDS[kind]
            ident = None if entity.id_wire is None else wire.get(entity.id_wire)
            before = self._whole_meta(session, wire, (entity.name, ident))
        elif kind == "plan":
            entries = wire.pop("entries")
            wire["sessionUpdate"] = "plan_update"
            wire["plan"] = {"type": "items", "planId": DEFAULT_PLAN_ID, "entries": entries}
        elif kind == "current_mode_update":
            self._report(
                "not-convertible", "'current_mode_update' has no v2 counterpart", subject=kind
            )
            return []
        out: list[v2.SessionUpdate] = []
        for item in [*before, wire]:
            converted = self._load(_v2_converter, item, v2.SessionUpdate)
            if converted is None:
                return []
            out.append(converted)
        for converted in out:
            self._track(session, converted)
        return out

    def convert_notification(
        self, notification: v1.SessionNotification
    ) -> list[v2.UpdateSessionNotification]:
        """Convert a whole v1 ``session/update`` params object (its ``_meta`` kept as is)."""
        updates = self.convert(notification.update, session_id=notification.session_id)
        return _notifications(v2.UpdateSessionNotification, notification, updates)

    def _message_id(self, session: _V1Session, kind: str) -> str:
        if not self.stateful:
            return f"v1-{_MESSAGE_CHUNK_KINDS[kind]}"
        if session.run is None or session.run[0] != kind:
            session.runs += 1
            session.run = (kind, f"v1-{session.runs}")
        return session.run[1]

    def _whole_meta(
        self, session: _V1Session, wire: dict[str, Any], key: Any
    ) -> list[dict[str, Any]]:
        """Rewrite a whole-object ``_meta`` as a v2 patch; the updates to send first."""
        if "_meta" not in wire:
            return []
        new = wire["_meta"]
        if new is None:
            return []
        if not self.stateful:
            # an update of its own that clears: the tag, the id, the fixed fields (a status)
            entity = _V1_UPSERT_KINDS[wire["sessionUpdate"]]
            clear = {"sessionUpdate": wire["sessionUpdate"]}
            if entity.id_wire is not None:
                clear[entity.id_wire] = wire[entity.id_wire]
            for _, fixed in entity.fixed:
                clear[fixed] = wire[fixed]
            clear["_meta"] = None
            return [clear]
        held = session.metas.get(key) or {}
        wire["_meta"] = {k: None for k in held if k not in new} | new
        return []

    def _track(self, session: _V1Session, update: Any) -> None:
        if not self.stateful:
            return
        meta = getattr(update, "meta", UNSET)
        key = _entity(update)
        if meta is UNSET or key is None or update.__class__ not in _META_PATCHED:
            return
        session.metas[key] = apply_meta_update(session.metas.get(key), meta)


_META_PATCHED = frozenset(BY_UPSERT)


# ---- v2 -> v1 -----------------------------------------------------------------------------


@attrs.define
class _V2Session:
    state: SessionState
    tool_calls: set[str] = attrs.Factory(set)
    messages: dict[tuple[str, str], list[Any]] = attrs.Factory(dict)


def _v1_kind(kind: str) -> str:
    return kind if kind in _V1_KINDS else "other"


def _v1_status(status: str) -> str:
    if status in _V1_STATUSES:
        return status
    return _V1_STATUS_FOR.get(status, "in_progress")


class V2ToV1Adapter(_Adapter):
    """Converts ACP v2 session updates to ACP v1 (see the module documentation).

    Args:
        stateful: keep each session's v2 state and send complete metadata
            (default). ``False`` for the stateless mode, which is **lossy
            for** ``_meta``: it forwards the patch object, which a v1 receiver
            stores whole, ``null`` values included.

    Attributes:
        diagnostics: what was dropped, repaired or could not be expressed.
    """

    def __init__(self, *, stateful: bool = True) -> None:
        super().__init__(stateful=stateful)
        self._sessions: dict[str, _V2Session] = {}

    def convert(self, update: v2.SessionUpdate, *, session_id: str = "") -> list[Any]:
        """The v1 updates to send for one v2 update (none when it has no counterpart).

        Args:
            update: the v2 update.
            session_id: the session it belongs to (ids are scoped to it).

        Returns:
            v1 session updates (:data:`agentproto.acp.schema_v1.SessionUpdate`).

        Raises:
            UsageError: ``update`` is not a v2 session update.
        """
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = _V2Session(
                SessionState(session_id, diagnostics=self.diagnostics)
            )
        cls = update.__class__
        kind = getattr(update, "session_update", None)
        if self.stateful and cls is not v2.OtherSessionUpdate:
            try:
                session.state.apply(update)
            except SchemaError as err:
                self._report("not-convertible", f"{kind!r} dropped: {err}", subject=kind)
                return []
        elif cls not in _V2_KINDS:
            raise UsageError(
                "acp.not-an-update", f"expected a v2 session update, not {type(update).__name__}"
            )
        if cls is v2.ToolCallUpdateSessionUpdate or cls is v2.ToolCallContentChunkSessionUpdate:
            return self._tool_call(session, update)
        if cls in _MESSAGE_UPSERTS:
            return self._message(session, update)
        if cls in _NO_V1 or cls is v2.OtherSessionUpdate:
            self._report("not-convertible", f"{kind!r} has no v1 counterpart", subject=kind)
            return []
        wire: dict[str, Any] = _v2_converter.dump(update)
        if self.stateful and cls in _META_PATCHED and update.meta is not UNSET:  # type: ignore[union-attr]
            entity = session.state.entity(_state_key(update))
            wire["_meta"] = entity.meta or {}
        if self.stateful and kind in _MESSAGE_CHUNK_KINDS:
            key = (_MESSAGE_CHUNK_KINDS[kind], update.message_id)  # type: ignore[union-attr]
            session.messages.setdefault(key, []).append(update.content)  # type: ignore[union-attr]
        converted = self._load(_v1_converter, wire, v1.SessionUpdate)
        return [] if converted is None else [converted]

    def convert_notification(
        self, notification: v2.UpdateSessionNotification
    ) -> list[v1.SessionNotification]:
        """Convert a whole v2 ``session/update`` params object (its ``_meta`` kept as is)."""
        updates = self.convert(notification.update, session_id=notification.session_id)
        return _notifications(v1.SessionNotification, notification, updates)

    def _tool_call(self, session: _V2Session, update: Any) -> list[Any]:
        if not self.stateful:
            if update.__class__ is v2.ToolCallContentChunkSessionUpdate:
                self._report(
                    "not-convertible",
                    "a stateless adapter cannot convert 'tool_call_content_chunk' (v1 has no "
                    "chunks and the whole content is unknown)",
                    subject="tool_call_content_chunk",
                )
                return []
            wire = _v2_converter.dump(update)
            if isinstance(wire.get("kind"), str):
                wire["kind"] = _v1_kind(wire["kind"])
            if isinstance(wire.get("status"), str):
                wire["status"] = _v1_status(wire["status"])
            wire = {key: value for key, value in wire.items() if value is not None}
            converted = self._load(_v1_converter, wire, v1.SessionUpdate)
            return [] if converted is None else [converted]
        call = session.state.tool_calls[update.tool_call_id]
        full = call.tool_call_id not in session.tool_calls
        session.tool_calls.add(call.tool_call_id)
        out: dict[str, Any] = {"toolCallId": call.tool_call_id}
        if full:
            out["sessionUpdate"] = "tool_call"
            changed: set[str] = set(_TOOL_CALL_ALL)
        else:
            out["sessionUpdate"] = "tool_call_update"
            if update.__class__ is v2.ToolCallContentChunkSessionUpdate:
                changed = {"content"}
            else:
                changed = {
                    name for name in _TOOL_CALL_ALL if getattr(update, name, UNSET) is not UNSET
                }
        out.update(_v1_tool_call_fields(call, changed, full))
        if "meta" in changed and (call.meta or not full):
            out["_meta"] = call.meta or {}
        converted = self._load(_v1_converter, out, v1.SessionUpdate)
        return [] if converted is None else [converted]

    def _message(self, session: _V2Session, update: Any) -> list[Any]:
        kind = update.session_update
        if not self.stateful:
            self._report(
                "not-convertible",
                f"a stateless adapter cannot convert {kind!r} (v1 only streams chunks)",
                subject=kind,
            )
            return []
        message = session.state.entity(f"{kind}:{update.message_id}")
        sent = session.messages.setdefault((kind, update.message_id), [])
        current = message.content
        if current[: len(sent)] != sent:
            self._report(
                "lossy-conversion",
                f"{kind!r} {update.message_id!r} replaces content v1 has already shown",
                subject=kind,
            )
            sent[:] = current
            return []
        out = []
        for block in current[len(sent) :]:
            wire = {
                "sessionUpdate": kind + "_chunk",
                "messageId": update.message_id,
                "content": _v2_converter.dump(block),
            }
            converted = self._load(_v1_converter, wire, v1.SessionUpdate)
            if converted is not None:
                out.append(converted)
        sent[:] = current
        return out


# the v2 tool call fields v1 ``tool_call_update`` has (Python names), ``_meta`` last
_TOOL_CALL_ALL = (
    *(
        f.name
        for f in _TOOL_CALL.patch
        if f.name in attrs.fields_dict(_V1_MEMBERS["tool_call_update"])
    ),
    "meta",
)
# required in a v1 ``tool_call``: sent as "" while unknown (v1 cannot carry null)
_V1_REQUIRED = frozenset(
    f.metadata["wire"]
    for f in attrs.fields(_V1_MEMBERS["tool_call"])
    if f.metadata.get("required") and f.name not in ("session_update", "tool_call_id")
)
# values v1 lacks, mapped
_V1_VALUE = {"kind": _v1_kind, "status": _v1_status}


def _v1_tool_call_fields(call: Any, changed: set[str], full: bool) -> dict[str, Any]:
    """The v1 wire fields of a stored tool call that changed (all of them when ``full``).

    A cleared value is left out (v1 cannot carry ``null``), except a required
    string (sent as ``""``) and a collection of an update (sent as ``[]``).
    """
    out: dict[str, Any] = {}
    for field in _TOOL_CALL.patch:
        if field.name not in changed:
            continue
        value = getattr(call, field.name) if field.typed else call.other_fields.get(field.name)
        if field.wire in _V1_VALUE:
            out[field.wire] = _V1_VALUE[field.wire](value)
        elif field.wire in _V1_REQUIRED:
            out[field.wire] = value or ""
        elif field.is_list:
            if value or not full:
                out[field.wire] = [_v2_converter.dump(item) for item in value or ()]
        elif value is not None:
            out[field.wire] = _v2_converter.dump(value)
    if full:
        for wire in _V1_REQUIRED:
            out.setdefault(wire, "")
    return out


_MESSAGE_UPSERTS = frozenset(
    kind.upsert
    for kind in KINDS.values()
    if kind.spec.upsert not in _V1_MEMBERS and kind.spec.chunk in _MESSAGE_CHUNK_KINDS
)
# v2 kinds v1 lacks (tool call chunks and message upserts are converted all the same)
_NO_V1 = frozenset(cls for tag, cls in _V2_MEMBERS.items() if tag not in _V1_MEMBERS)
_V2_KINDS = frozenset(typing.get_args(v2.SessionUpdate))


def _state_key(update: Any) -> str:
    """The :class:`SessionState` entity key of a metadata-patched upsert."""
    key = _entity(update)
    assert key is not None
    kind, ident = key
    return kind if ident is None else f"{kind}:{ident}"

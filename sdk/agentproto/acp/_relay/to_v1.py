"""The v2 → v1 adapter, :class:`V2ToV1Adapter` (its rules: :mod:`.versions`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from agentproto._core.errors import SchemaError, UsageError
from agentproto._core.json.codec import dumps_sorted
from agentproto._core.unset import UNSET
from agentproto.acp import _generated_v1 as v1
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.wire import CONVERTER as _v2_converter
from agentproto.acp._relay.combine import entity_of
from agentproto.acp._relay.content import V2_SHAPES, items_to_v1
from agentproto.acp._relay.content import v1_converter as _v1_converter
from agentproto.acp._relay.versions import (
    DEFAULT_PLAN_ID,
    MESSAGE_CHUNK_KINDS,
    MESSAGE_UPSERTS,
    META_PATCHED,
    NO_V1,
    TOOL_CALL,
    TOOL_CALL_ALL,
    V1_KINDS,
    V1_MEMBERS,
    V1_PLAN,
    V2_KINDS,
    Adapter,
    convert_lists,
    notifications_like,
)
from agentproto.acp._state.entities import BY_UPSERT, KINDS
from agentproto.acp._state.session import SessionState

__all__ = ["TO_V1", "V2ToV1Adapter"]

_V1_STATUSES = frozenset(v1.ENUM_VALUES["ToolCallStatus"])
_V1_KINDS = frozenset(v1.ENUM_VALUES["ToolKind"])
_V1_STATUS_FOR = {"paused": "in_progress", "cancelled": "failed"}


@attrs.define
class _V2Session:
    state: SessionState
    tool_calls: set[str] = attrs.Factory(set)
    messages: dict[tuple[str, str], list[Any]] = attrs.Factory(dict)
    reported: set[tuple[Any, str, str]] = attrs.Factory(set)  # losses, once each


def _v1_kind(kind: str) -> str:
    return kind if kind in _V1_KINDS else "other"


def _v1_status(status: str) -> str:
    if status in _V1_STATUSES:
        return status
    return _V1_STATUS_FOR.get(status, "in_progress")


class V2ToV1Adapter(Adapter):
    """Converts ACP v2 session updates to ACP v1 (see :mod:`agentproto.acp._relay.versions`).

    Args:
        stateful: keep each session's v2 state and send complete metadata
            (default). ``False`` for the stateless mode, which is **lossy
            for** ``_meta``: it forwards the patch object, which a v1 receiver
            stores whole, ``null`` values included.
        peer_kinds: the ``sessionUpdate`` kinds the v1 peer accepts; a
            converted update of another kind is withheld (not sent, one
            ``withheld`` diagnostic each). By default every kind of the v1
            schema (:data:`V1_KINDS`). Name fewer for a peer built on an older
            v1 schema, or one that has not advertised the client capability a
            kind needs: a v1 peer rejects a kind it does not know.

    Attributes:
        diagnostics: what was dropped, repaired, withheld or could not be expressed.

    Raises:
        UsageError: ``peer_kinds`` names a kind the v1 schema lacks.
    """

    def __init__(self, *, stateful: bool = True, peer_kinds: Iterable[str] | None = None) -> None:
        super().__init__(stateful=stateful)
        self.peer_kinds = V1_KINDS if peer_kinds is None else frozenset(peer_kinds)
        unknown = self.peer_kinds - V1_KINDS
        if unknown:
            raise UsageError(
                "acp.bad-option",
                f"peer_kinds names no v1 update kind: {sorted(unknown)} (choose from "
                f"{sorted(V1_KINDS)})",
            )
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
        out = []
        for converted in self._convert(update, session_id):
            kind = converted.session_update
            if kind in self.peer_kinds:
                out.append(converted)
            else:
                self._report("withheld", f"{kind!r} withheld: the v1 peer lacks it", kind)
        return out

    def _convert(self, update: v2.SessionUpdate, session_id: str) -> list[Any]:
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
        elif cls not in V2_KINDS:
            raise UsageError(
                "acp.not-an-update", f"expected a v2 session update, not {type(update).__name__}"
            )
        route = TO_V1.get(cls)
        if route == "tool call":
            return self._tool_call(session, update)
        if route == "message":
            return self._message(session, update)
        if route == "terminal" and self.stateful:
            return self._terminal(session, update.terminal_id)  # type: ignore[union-attr]
        if route != "same kind":
            self._report("not-convertible", f"{kind!r} has no v1 counterpart", subject=kind)
            return []
        wire = _main_plan(update)
        if wire is None:
            wire = _v2_converter.dump(update)
            convert_lists(update, wire, self._items(session, str(entity_of(update) or kind)))
        if self.stateful and cls in META_PATCHED and update.meta is not UNSET:  # type: ignore[union-attr]
            entity = session.state.entity(_state_key(update))
            wire["_meta"] = dict(entity.meta or {})  # the state's is patched in place
        if self.stateful and kind in MESSAGE_CHUNK_KINDS:
            key = (MESSAGE_CHUNK_KINDS[kind], update.message_id)  # type: ignore[union-attr]
            session.messages.setdefault(key, []).append(update.content)  # type: ignore[union-attr]
        converted = self._load(_v1_converter, wire, v1.SessionUpdate)
        return [] if converted is None else [converted]

    def state(self, session_id: str) -> SessionState | None:
        """The v2 state kept for a session (stateful mode), ``None`` before its first update."""
        session = self._sessions.get(session_id)
        return None if session is None else session.state

    def convert_notification(
        self, notification: v2.UpdateSessionNotification
    ) -> list[v1.SessionNotification]:
        """Convert a whole v2 ``session/update`` params object (its ``_meta`` kept as is)."""
        updates = self.convert(notification.update, session_id=notification.session_id)
        return notifications_like(v1.SessionNotification, notification, updates)

    def _items(
        self, session: _V2Session, entity: str
    ) -> Callable[[list[Any], list[Any]], list[Any]]:
        """The list conversion for this mode (terminals shown as text when stateful).

        A loss is reported once per entity and item: content resent whole (a
        tool call's content again when its terminal's output grows) does not
        report the same lost item again; another item, or another entity, does.
        """
        terminals = session.state.terminals if self.stateful else None

        def convert(items: list[Any], wires: list[Any]) -> list[Any]:
            if all(item.__class__ not in V2_SHAPES for item in items):
                return wires
            out = []
            for item, wire in zip(items, wires, strict=True):
                key = (entity, dumps_sorted(wire))
                out += items_to_v1([item], [wire], terminals, self._once(session.reported, key))
            return out

        return convert

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
            convert_lists(update, wire, self._items(session, f"tool_call:{update.tool_call_id}"))
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
        if full:
            changed: set[str] = set(TOOL_CALL_ALL)
        elif update.__class__ is v2.ToolCallContentChunkSessionUpdate:
            changed = {"content"}
        else:
            changed = {name for name in TOOL_CALL_ALL if getattr(update, name, UNSET) is not UNSET}
        return self._send_call(session, call, changed, full)

    def _send_call(
        self, session: _V2Session, call: Any, changed: set[str], full: bool
    ) -> list[Any]:
        """The v1 ``tool_call`` (``full``) or ``tool_call_update`` of a stored call's changes."""
        out: dict[str, Any] = {
            "sessionUpdate": "tool_call" if full else "tool_call_update",
            "toolCallId": call.tool_call_id,
        }
        items = self._items(session, f"tool_call:{call.tool_call_id}")
        out.update(_v1_tool_call_fields(call, changed, full, items))
        if "meta" in changed and (call.meta or not full):
            out["_meta"] = dict(call.meta or {})  # the state's is patched in place
        converted = self._load(_v1_converter, out, v1.SessionUpdate)
        return [] if converted is None else [converted]

    def _terminal(self, session: _V2Session, terminal_id: str) -> list[Any]:
        """Resend the content of every sent tool call that shows the terminal."""
        out = []
        for call in session.state.tool_calls.values():
            shown = any(
                isinstance(item, v2.TerminalToolCallContent) and item.terminal_id == terminal_id
                for item in call.content or ()
            )
            if shown and call.tool_call_id in session.tool_calls:
                out += self._send_call(session, call, {"content"}, False)
        if not out:
            self._report(
                "not-convertible",
                f"the terminal {terminal_id!r} reaches v1 only as text in the content of a tool "
                "call that shows it, and no tool call sent so far does",
                subject="terminal",
            )
        return out

    def _message(self, session: _V2Session, update: Any) -> list[Any]:
        kind = update.session_update
        if not self.stateful:
            self._report(
                "not-convertible",
                f"a stateless adapter cannot convert {kind!r} (v1 only streams chunks)",
                subject=kind,
            )
            return []
        entity_kind = BY_UPSERT[update.__class__]
        lost = [f.wire for f in entity_kind.patch if f.name != entity_kind.collection]
        # a value v1 cannot hold is lost; a clear (null) of what v1 never held is not
        lost = [w for w in [*lost, "_meta"] if _wire_value(update, w) not in (UNSET, None)]
        if lost:
            self._report(
                "lossy-conversion",
                f"{kind!r} {update.message_id!r}: {lost} not sent (v1 has no message entity "
                "to hold them; a v1 chunk's _meta belongs to that chunk)",
                subject=kind,
            )
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


def _wire_value(update: Any, wire: str) -> Any:
    """The value of the patch field with this wire name in ``update`` (``UNSET`` if omitted)."""
    for field in attrs.fields(update.__class__):
        if field.metadata.get("wire") == wire:
            return getattr(update, field.name)
    return UNSET


def _main_plan(update: Any) -> dict[str, Any] | None:
    """The v1 ``plan`` of an update to the plan :data:`DEFAULT_PLAN_ID`, else ``None``.

    v1 has one plan per session: the ``main`` plan's items are that plan, and
    removing it empties it. Other plans stay v1 ``plan_update`` / ``plan_removed``.
    """
    if update.__class__ is v2.PlanUpdateSessionUpdate:
        plan = update.plan
        if not isinstance(plan, v2.ItemsPlanUpdateContent) or plan.plan_id != DEFAULT_PLAN_ID:
            return None
        entries = [_v2_converter.dump(entry) for entry in plan.entries]
    elif update.__class__ is v2.PlanRemovedSessionUpdate and update.plan_id == DEFAULT_PLAN_ID:
        entries = []
    else:
        return None
    wire: dict[str, Any] = {"sessionUpdate": V1_PLAN, "entries": entries}
    if update.meta is not None:
        wire["_meta"] = update.meta
    return wire


# required in a v1 ``tool_call``: sent as "" while unknown (v1 cannot carry null)
_V1_REQUIRED = frozenset(
    f.metadata["wire"]
    for f in attrs.fields(V1_MEMBERS["tool_call"])
    if f.metadata.get("required") and f.name not in ("session_update", "tool_call_id")
)
# values v1 lacks, mapped
_V1_VALUE = {"kind": _v1_kind, "status": _v1_status}


def _v1_tool_call_fields(
    call: Any, changed: set[str], full: bool, items: Callable[[list[Any], list[Any]], list[Any]]
) -> dict[str, Any]:
    """The v1 wire fields of a stored tool call that changed (all of them when ``full``).

    A cleared value is left out (v1 cannot carry ``null``), except a required
    string (sent as ``""``) and a collection of an update (sent as ``[]``);
    ``items`` converts a collection's items.
    """
    out: dict[str, Any] = {}
    for field in TOOL_CALL.patch:
        if field.name not in changed:
            continue
        value = getattr(call, field.name) if field.typed else call.other_fields.get(field.name)
        if field.wire in _V1_VALUE:
            out[field.wire] = _V1_VALUE[field.wire](value)
        elif field.wire in _V1_REQUIRED:
            out[field.wire] = value or ""
        elif field.is_list:
            if value or not full:
                value = list(value or ())
                out[field.wire] = items(value, [_v2_converter.dump(item) for item in value])
        elif value is not None:
            out[field.wire] = _v2_converter.dump(value)
    if full:
        for wire in _V1_REQUIRED:
            out.setdefault(wire, "")
    return out


_TERMINAL = KINDS.get("terminal")
_TERMINAL_UPDATES = frozenset(() if _TERMINAL is None else (_TERMINAL.upsert, _TERMINAL.chunk))

TO_V1: Mapping[type, str] = MappingProxyType(
    {  # later entries win: a rule of its own over the same kind
        **dict.fromkeys(V2_KINDS - NO_V1 - {v2.OtherSessionUpdate}, "same kind"),
        **{cls: "terminal" for cls in _TERMINAL_UPDATES if cls is not None},
        **dict.fromkeys(MESSAGE_UPSERTS, "message"),
        v2.ToolCallUpdateSessionUpdate: "tool call",
        v2.ToolCallContentChunkSessionUpdate: "tool call",
    }
)
"""How :class:`V2ToV1Adapter` converts each v2 update class: ``same kind`` (to the v1
kind of its tag), or by a rule of its own: ``tool call`` (a v1 ``tool_call`` or
``tool_call_update``), ``message`` (v1 chunks of the new blocks), ``terminal`` (as text
in the tool calls that show it; stateful only). A class not here (``state_update``, the
catch-all) has no v1 counterpart and is dropped (``not-convertible``). Read-only."""


def _state_key(update: Any) -> str:
    """The :class:`SessionState` entity key of a metadata-patched upsert."""
    key = entity_of(update)
    assert key is not None
    kind, ident = key
    return kind if ident is None else f"{kind}:{ident}"

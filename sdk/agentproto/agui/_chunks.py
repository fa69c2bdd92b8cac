"""Chunk expansion: ``*_CHUNK`` shorthand into explicit START / CONTENT / END events.

Theory of operation
-------------------
``TEXT_MESSAGE_CHUNK``, ``TOOL_CALL_CHUNK`` and ``REASONING_MESSAGE_CHUNK`` are a compact
spelling of the streaming triads (spec: basic/patterns/streaming, "The chunked form").
:class:`ChunkExpander` sits after enforcement and before verification: it turns every chunk
into the explicit events it stands for and passes every other event through, preceded by
the ``*_END`` events the chunk form never sends but its rules imply. It checks only what
the shorthand itself can get wrong; everything else (ordering, lifecycle, duplicate opens)
is the verifier's job on the expanded events.

**Lanes.** A lane is one *owner* of work: the parent agent (``None``) or one subagent
invocation (its ``subagentRunId``). Each lane holds at most one open chunk stream, of any
kind, because the shorthand identifies a continuation only as "the same as before". This
is what the spec's closing rules need: a step, state or custom event closes the open
stream of its lane whatever that stream's kind, so the lane cannot be split by kind; and
a subagent's terminal closes its own lane and no other. Keying lanes by owner is what lets
parallel subagents stream at once.

**Which lane.** An explicit event belongs to the lane of its owner: its ``subagentRunId``,
or, for an untagged continuation (``*_CONTENT``/``*_ARGS``/``*_END``, a reopening
``*_START``, a ``TOOL_CALL_START`` whose ``parentMessageId`` names a known message), the
owner its opener established, else the parent. A chunk that names an id already open in
some lane continues it there (a tag that disagrees is an owner mismatch); one naming an
unopened id opens a new stream in the lane its own tag names. A chunk without an id
continues its tag's lane; an untagged one the parent's open stream of its kind, else the
only open stream of its kind anywhere, else it is ambiguous (several) or has no referent
(none: the first chunk of an item needs its id).

**When a stream closes** (an ``*_END`` is synthesized, carrying the lane's owner):

========================================================  ==============================
arriving event                                            closes
========================================================  ==============================
a chunk opening another item in the lane                  that lane
``TEXT_MESSAGE_*``, ``TOOL_CALL_*`` (result included),    the event's lane
``STEP_*``, ``STATE_*``, ``CUSTOM``, ``REASONING_START``/
``END``, ``REASONING_MESSAGE_*``
``RUN_STARTED``/``FINISHED``/``ERROR``,                   every lane, in opening order
``MESSAGES_SNAPSHOT``
``SUBAGENT_FINISHED``/``SUBAGENT_ERROR``                  that subagent's lane
``RAW``, ``ACTIVITY_*``, ``REASONING_ENCRYPTED_VALUE``,   nothing
``SUBAGENT_STARTED``
end of stream                                             nothing (verification fails a
                                                          stream that ends mid-run)
========================================================  ==============================

**What synthesized events carry.** The opener's fields (``role``, ``name``,
``toolCallName``, ``parentMessageId``), the lane owner as ``subagentRunId``, and the
chunk's ``metadata`` on every event made from that chunk (metadata targets what the
synthesized events target). The chunk's ``rawEvent`` rides the CONTENT (ARGS) event, or
the START when there is none. A chunk's ``timestamp`` is not copied: the synthesized
events are not the chunk (spec: basic/processing, "Where middleware sits"). A synthesized
END carries nothing of the chunk or event that caused it. A chunk whose ``delta`` is
absent or empty makes no CONTENT, except that a continuation carrying only ``metadata``
or ``rawEvent`` gets an empty-delta CONTENT so that what it carries still reaches its item.

Errors (all :class:`~agentproto.ProtocolError`, see :mod:`agentproto.agui._verify` for
the full table): ``chunk.missing-id``, ``chunk.missing-name``, ``chunk.conflicting-field``,
``chunk.ambiguous``, ``owner.mismatch``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NoReturn, TypeAlias

from agentproto._core.errors import ProtocolError
from agentproto.agui._generated import (
    ActivityMessage,
    AssistantMessage,
    Event,
    MessagesSnapshotEvent,
    ReasoningMessage,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolMessage,
)

__all__ = ["ChunkExpander"]

Kind: TypeAlias = Literal["text", "tool", "reasoning"]
Owner: TypeAlias = str | None
"""A lane's owner: a ``subagentRunId``, or ``None`` for the parent agent."""

# What each kind is called in messages, and the name of its id field on the wire.
_NOUN: dict[str, str] = {
    "text": "text message",
    "tool": "tool call",
    "reasoning": "reasoning message",
    "span": "reasoning span",
}
_ID_FIELD: dict[Kind, str] = {"text": "messageId", "tool": "toolCallId", "reasoning": "messageId"}
_CHUNK_TYPE: dict[Kind, str] = {
    "text": "TEXT_MESSAGE_CHUNK",
    "tool": "TOOL_CALL_CHUNK",
    "reasoning": "REASONING_MESSAGE_CHUNK",
}


class _Stream:
    """The item one lane is assembling from chunks, with the fields its opener established."""

    __slots__ = ("item_id", "kind", "name", "owner", "parent_message_id", "role", "tool_name")

    def __init__(
        self,
        kind: Kind,
        item_id: str,
        owner: Owner,
        *,
        role: str | None = None,
        name: str | None = None,
        tool_name: str | None = None,
        parent_message_id: str | None = None,
    ) -> None:
        self.kind: Kind = kind
        self.item_id = item_id
        self.owner = owner
        self.role = role
        self.name = name
        self.tool_name = tool_name
        self.parent_message_id = parent_message_id

    def end(self) -> Event:
        """The synthesized END that closes this stream."""
        if self.kind == "text":
            return TextMessageEndEvent(message_id=self.item_id, subagent_run_id=self.owner)
        if self.kind == "tool":
            return ToolCallEndEvent(tool_call_id=self.item_id, subagent_run_id=self.owner)
        return ReasoningMessageEndEvent(message_id=self.item_id, subagent_run_id=self.owner)


def _describe(owner: Owner) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


# How each non-chunk event type interacts with the lanes (the table in the docstring).
_ASIDE = "aside"  # closes nothing
_ALL = "all"  # closes every lane
_TERMINAL = "terminal"  # closes the lane of the subagent it ends
_LANE = "lane"  # closes the lane of its owner
_CHUNK = "chunk"  # expanded

_CATEGORY: dict[str, str] = {
    "TEXT_MESSAGE_CHUNK": _CHUNK,
    "TOOL_CALL_CHUNK": _CHUNK,
    "REASONING_MESSAGE_CHUNK": _CHUNK,
    "RAW": _ASIDE,
    "ACTIVITY_SNAPSHOT": _ASIDE,
    "ACTIVITY_DELTA": _ASIDE,
    "REASONING_ENCRYPTED_VALUE": _ASIDE,
    "SUBAGENT_STARTED": _ASIDE,
    "RUN_STARTED": _ALL,
    "RUN_FINISHED": _ALL,
    "RUN_ERROR": _ALL,
    "MESSAGES_SNAPSHOT": _ALL,
    "SUBAGENT_FINISHED": _TERMINAL,
    "SUBAGENT_ERROR": _TERMINAL,
    "TEXT_MESSAGE_START": _LANE,
    "TEXT_MESSAGE_CONTENT": _LANE,
    "TEXT_MESSAGE_END": _LANE,
    "TOOL_CALL_START": _LANE,
    "TOOL_CALL_ARGS": _LANE,
    "TOOL_CALL_END": _LANE,
    "TOOL_CALL_RESULT": _LANE,
    "STATE_SNAPSHOT": _LANE,
    "STATE_DELTA": _LANE,
    "CUSTOM": _LANE,
    "STEP_STARTED": _LANE,
    "STEP_FINISHED": _LANE,
    "REASONING_START": _LANE,
    "REASONING_END": _LANE,
    "REASONING_MESSAGE_START": _LANE,
    "REASONING_MESSAGE_CONTENT": _LANE,
    "REASONING_MESSAGE_END": _LANE,
}

# Explicit continuations: event type -> (item family, id attribute). Untagged, they belong
# to the lane of the owner their opener established.
_CONTINUATION: dict[str, tuple[str, str]] = {
    "TEXT_MESSAGE_CONTENT": ("text", "message_id"),
    "TEXT_MESSAGE_END": ("text", "message_id"),
    "TOOL_CALL_ARGS": ("tool", "tool_call_id"),
    "TOOL_CALL_END": ("tool", "tool_call_id"),
    "REASONING_MESSAGE_CONTENT": ("reasoning", "message_id"),
    "REASONING_MESSAGE_END": ("reasoning", "message_id"),
    "REASONING_END": ("span", "message_id"),
}
# Explicit openers: event type -> (item family, id attribute).
_OPENER: dict[str, tuple[str, str]] = {
    "TEXT_MESSAGE_START": ("text", "message_id"),
    "TOOL_CALL_START": ("tool", "tool_call_id"),
    "REASONING_MESSAGE_START": ("reasoning", "message_id"),
    "REASONING_START": ("span", "message_id"),
}


class ChunkExpander:
    """Expands chunk events into explicit triads; sans-I/O, one instance per stream.

    Feed it enforced, typed events in arrival order. Each call returns the events to
    verify and apply, in order: non-chunk events come back unchanged (never mutated),
    possibly preceded by synthesized ``*_END`` events; a chunk becomes the START/CONTENT
    (ARGS) events it stands for, possibly preceded by the END of the item it displaces.

    Raises:
        ProtocolError: a first chunk without its id (``chunk.missing-id``) or, for a tool
            call, without ``toolCallName`` (``chunk.missing-name``); a continuation that
            repeats an opener's field with another value (``chunk.conflicting-field``); an
            untagged, id-less continuation with several possible streams
            (``chunk.ambiguous``); a chunk naming an open item under another
            ``subagentRunId`` (``owner.mismatch``).
    """

    __slots__ = ("_dispatch", "_lanes", "_owners")

    def __init__(self) -> None:
        # Open chunk streams by lane owner; insertion order is opening order.
        self._lanes: dict[Owner, _Stream] = {}
        # Owner of every item opened in the current run, by (family, id): resolves the
        # lane of untagged explicit continuations.
        self._owners: dict[tuple[str, str], Owner] = {}
        self._dispatch: dict[str, Callable[[Any], list[Event]]] = {
            "TEXT_MESSAGE_CHUNK": self._text_chunk,
            "TOOL_CALL_CHUNK": self._tool_chunk,
            "REASONING_MESSAGE_CHUNK": self._reasoning_chunk,
        }

    # ---- public API --------------------------------------------------------------------

    def feed(self, event: Event) -> list[Event]:
        """Expand one event; returns what to pass on to verification, in order."""
        kind = event.type
        category = _CATEGORY.get(kind, _ASIDE)
        if category == _LANE:
            if not self._lanes:  # the common case: only openers need bookkeeping
                if kind in _OPENER:
                    self._owner_of(event)
                return [event]
            owner = self._owner_of(event)
            if owner in self._lanes:
                return [self._lanes.pop(owner).end(), event]
            return [event]
        if category == _ALL:
            out = self._close_all()
            if kind == "RUN_STARTED":
                self._owners.clear()  # ownership tracking is run-scoped
            elif isinstance(event, MessagesSnapshotEvent):
                self._learn_owners(event)
            out.append(event)
            return out
        if category == _CHUNK:
            return self._dispatch[kind](event)
        if category == _TERMINAL:
            assert isinstance(event, SubagentFinishedEvent | SubagentErrorEvent)
            stream = self._lanes.pop(event.subagent_run_id, None)
            return [event] if stream is None else [stream.end(), event]
        return [event]

    def close(self) -> list[Event]:
        """End of stream; synthesizes nothing and returns ``[]``.

        A stream that stops mid-run has no outcome, which verification reports; closing
        its items here would only hide that.
        """
        return []

    @property
    def open_streams(self) -> dict[Owner, tuple[str, str]]:
        """The chunk streams still open: lane owner -> (kind, item id)."""
        return {owner: (s.kind, s.item_id) for owner, s in self._lanes.items()}

    # ---- lanes of explicit events ------------------------------------------------------

    def _owner_of(self, event: Any) -> Owner:
        """The lane an explicit event belongs to; records the owner of items it opens."""
        tag: Owner = event.subagent_run_id
        kind: str = event.type
        opener = _OPENER.get(kind)
        if opener is not None:
            family, attr = opener
            key = (family, getattr(event, attr))
            owner = tag
            if owner is None:
                # An untagged reopening keeps the owner the item already has; an untagged
                # tool call inherits the owner of the message that carries it.
                if key in self._owners:
                    owner = self._owners[key]
                elif kind == "TOOL_CALL_START" and event.parent_message_id is not None:
                    owner = self._owners.get(("text", event.parent_message_id))
            self._owners[key] = owner
            return owner
        if tag is not None:
            return tag
        continuation = _CONTINUATION.get(kind)
        if continuation is not None:
            family, attr = continuation
            return self._owners.get((family, getattr(event, attr)))
        return None

    def _learn_owners(self, snapshot: MessagesSnapshotEvent) -> None:
        """A snapshot establishes the owner of every message (and tool call) it carries."""
        owners = self._owners
        for message in snapshot.messages:
            owner = message.subagent_run_id
            if isinstance(message, ReasoningMessage):
                owners[("reasoning", message.id)] = owner
            elif not isinstance(message, ActivityMessage | ToolMessage):
                owners[("text", message.id)] = owner
                if isinstance(message, AssistantMessage) and message.tool_calls:
                    for call in message.tool_calls:
                        owners[("tool", call.id)] = owner

    def _close_all(self) -> list[Event]:
        if not self._lanes:
            return []
        out = [stream.end() for stream in self._lanes.values()]
        self._lanes.clear()
        return out

    # ---- chunks ------------------------------------------------------------------------

    def _resolve_lane(self, kind: Kind, item_id: str | None, tag: Owner) -> Owner:
        """The lane a chunk belongs to (see the module docstring)."""
        lanes = self._lanes
        if item_id is not None:
            for owner, stream in lanes.items():
                if stream.kind == kind and stream.item_id == item_id:
                    if tag is not None and tag != owner:
                        noun = _NOUN[kind]
                        raise ProtocolError(
                            "owner.mismatch",
                            f"Cannot continue {noun} '{item_id}': chunk subagentRunId "
                            f"'{tag}' does not match the open stream's owner, "
                            f"{_describe(owner)}",
                            subject=item_id,
                        )
                    return owner
            if tag is not None:
                return tag
            # An untagged chunk reopening an item keeps the owner that item already has.
            return self._owners.get((kind, item_id))
        if tag is not None:
            return tag
        parent = lanes.get(None)
        if parent is not None and parent.kind == kind:
            return None
        candidates = [owner for owner, stream in lanes.items() if stream.kind == kind]
        if len(candidates) == 1:
            return candidates[0]
        if len(candidates) > 1:
            chunk_type = _CHUNK_TYPE[kind]
            listed = ", ".join(f"'{c}'" for c in candidates)
            raise ProtocolError(
                "chunk.ambiguous",
                f"Ambiguous {chunk_type}: it carries neither a {_ID_FIELD[kind]} nor a "
                f"subagentRunId, and {len(candidates)} lanes have an open {_NOUN[kind]} "
                f"(subagents {listed}); a producer running parallel subagents must "
                f"attribute its continuations",
                subject=chunk_type,
            )
        return None

    def _open(self, kind: Kind, item_id: str | None, lane: Owner, out: list[Event]) -> str:
        """Close whatever ``lane`` holds and check the first chunk carries its id."""
        previous = self._lanes.pop(lane, None)
        if previous is not None:
            out.append(previous.end())
        if item_id is None:
            chunk_type = _CHUNK_TYPE[kind]
            id_field = _ID_FIELD[kind]
            raise ProtocolError(
                "chunk.missing-id",
                f"First {chunk_type} must have a {id_field}: no {_NOUN[kind]} is open "
                f"for it to continue in the lane of {_describe(lane)}",
                subject=chunk_type,
            )
        self._owners[(kind, item_id)] = lane
        return item_id

    @staticmethod
    def _conflict(stream: _Stream, field: str, value: str, established: str | None) -> NoReturn:
        """A continuation repeated an opener's field with another value."""
        noun = _NOUN[stream.kind]
        was = "(absent)" if established is None else f"'{established}'"
        raise ProtocolError(
            "chunk.conflicting-field",
            f"Cannot continue {noun} '{stream.item_id}': chunk {field} '{value}' does "
            f"not match the open stream's {field} {was}",
            subject=stream.item_id,
        )

    def _text_chunk(self, chunk: TextMessageChunkEvent) -> list[Event]:
        lane = self._resolve_lane("text", chunk.message_id, chunk.subagent_run_id)
        stream = self._lanes.get(lane)
        out: list[Event] = []
        delta = chunk.delta
        if (
            stream is not None
            and stream.kind == "text"
            and (chunk.message_id is None or chunk.message_id == stream.item_id)
        ):
            if chunk.role is not None and chunk.role != stream.role:
                self._conflict(stream, "role", chunk.role, stream.role)
            if chunk.name is not None and chunk.name != stream.name:
                self._conflict(stream, "name", chunk.name, stream.name)
            if delta or chunk.metadata is not None or chunk.raw_event is not None:
                out.append(
                    TextMessageContentEvent(
                        message_id=stream.item_id,
                        delta=delta or "",
                        metadata=chunk.metadata,
                        raw_event=chunk.raw_event,
                        subagent_run_id=lane,
                    )
                )
            return out
        item_id = self._open("text", chunk.message_id, lane, out)
        self._lanes[lane] = _Stream(
            "text", item_id, lane, role=chunk.role or "assistant", name=chunk.name
        )
        out.append(
            TextMessageStartEvent(
                message_id=item_id,
                role=chunk.role,
                name=chunk.name,
                metadata=chunk.metadata,
                raw_event=None if delta else chunk.raw_event,
                subagent_run_id=lane,
            )
        )
        if delta:
            out.append(
                TextMessageContentEvent(
                    message_id=item_id,
                    delta=delta,
                    metadata=chunk.metadata,
                    raw_event=chunk.raw_event,
                    subagent_run_id=lane,
                )
            )
        return out

    def _tool_chunk(self, chunk: ToolCallChunkEvent) -> list[Event]:
        lane = self._resolve_lane("tool", chunk.tool_call_id, chunk.subagent_run_id)
        stream = self._lanes.get(lane)
        out: list[Event] = []
        delta = chunk.delta
        if (
            stream is not None
            and stream.kind == "tool"
            and (chunk.tool_call_id is None or chunk.tool_call_id == stream.item_id)
        ):
            name, parent = chunk.tool_call_name, chunk.parent_message_id
            if name is not None and name != stream.tool_name:
                self._conflict(stream, "toolCallName", name, stream.tool_name)
            if parent is not None and parent != stream.parent_message_id:
                self._conflict(stream, "parentMessageId", parent, stream.parent_message_id)
            if delta or chunk.metadata is not None or chunk.raw_event is not None:
                out.append(
                    ToolCallArgsEvent(
                        tool_call_id=stream.item_id,
                        delta=delta or "",
                        metadata=chunk.metadata,
                        raw_event=chunk.raw_event,
                        subagent_run_id=lane,
                    )
                )
            return out
        item_id = self._open("tool", chunk.tool_call_id, lane, out)
        name = chunk.tool_call_name
        if name is None:
            raise ProtocolError(
                "chunk.missing-name",
                f"First TOOL_CALL_CHUNK must have a toolCallName: tool call '{item_id}' "
                f"cannot be opened without one",
                subject=item_id,
            )
        self._lanes[lane] = _Stream(
            "tool", item_id, lane, tool_name=name, parent_message_id=chunk.parent_message_id
        )
        out.append(
            ToolCallStartEvent(
                tool_call_id=item_id,
                tool_call_name=name,
                parent_message_id=chunk.parent_message_id,
                metadata=chunk.metadata,
                raw_event=None if delta else chunk.raw_event,
                subagent_run_id=lane,
            )
        )
        if delta:
            out.append(
                ToolCallArgsEvent(
                    tool_call_id=item_id,
                    delta=delta,
                    metadata=chunk.metadata,
                    raw_event=chunk.raw_event,
                    subagent_run_id=lane,
                )
            )
        return out

    def _reasoning_chunk(self, chunk: ReasoningMessageChunkEvent) -> list[Event]:
        lane = self._resolve_lane("reasoning", chunk.message_id, chunk.subagent_run_id)
        stream = self._lanes.get(lane)
        out: list[Event] = []
        delta = chunk.delta
        if (
            stream is not None
            and stream.kind == "reasoning"
            and (chunk.message_id is None or chunk.message_id == stream.item_id)
        ):
            if delta or chunk.metadata is not None or chunk.raw_event is not None:
                out.append(
                    ReasoningMessageContentEvent(
                        message_id=stream.item_id,
                        delta=delta or "",
                        metadata=chunk.metadata,
                        raw_event=chunk.raw_event,
                        subagent_run_id=lane,
                    )
                )
            return out
        item_id = self._open("reasoning", chunk.message_id, lane, out)
        self._lanes[lane] = _Stream("reasoning", item_id, lane)
        out.append(
            ReasoningMessageStartEvent(
                message_id=item_id,
                metadata=chunk.metadata,
                raw_event=None if delta else chunk.raw_event,
                subagent_run_id=lane,
            )
        )
        if delta:
            out.append(
                ReasoningMessageContentEvent(
                    message_id=item_id,
                    delta=delta,
                    metadata=chunk.metadata,
                    raw_event=chunk.raw_event,
                    subagent_run_id=lane,
                )
            )
        return out

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

**One routine, one table.** The three chunk kinds differ only in data, so one routine
expands them all, driven by a :class:`_ChunkKind` per kind: the family's START /
CONTENT / END classes and id field (from :data:`agentproto.agui._protocol.kinds.FAMILIES`), the
opener fields a continuation may repeat only identically, the ones the first chunk must
carry (the START's required fields, read from the generated class), and their defaults.

Errors (all :class:`~agentproto.ProtocolError`, see :mod:`agentproto.agui._verify.verifier` for
the full table): ``chunk.missing-id``, ``chunk.missing-name``, ``chunk.conflicting-field``,
``chunk.ambiguous``, ``owner.mismatch``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NoReturn, TypeAlias

import attrs

from agentproto._core.errors import ProtocolError
from agentproto.agui._generated import (
    ActivityMessage,
    AssistantMessage,
    Event,
    MessagesSnapshotEvent,
    ReasoningMessage,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    ToolMessage,
)
from agentproto.agui._protocol.kinds import (
    CHUNK_TYPES,
    CLOSES_EVERY_LANE,
    CLOSES_NO_LANE,
    CLOSES_OWN_LANE,
    EVENT_CLASSES,
    FAMILIES,
    SUBAGENT_TERMINALS,
    Family,
    attribute,
)

__all__ = ["ChunkExpander"]

Owner: TypeAlias = str | None
"""A lane's owner: a ``subagentRunId``, or ``None`` for the parent agent."""

# Members every event of a streamed item carries, and so never an opener's own field.
_COMMON: Final = frozenset({"type", "timestamp", "rawEvent", "metadata", "subagentRunId"})


@attrs.frozen
class _ChunkKind:
    """What expanding one chunk kind needs (see the module docstring)."""

    family: Family
    chunk: type
    start: type
    content: type
    end: type
    id_attr: str
    repeated: tuple[tuple[str, str], ...]  # (attribute, wire name) of the opener's fields
    required: tuple[tuple[str, str], ...]  # of those, the ones the START cannot lack
    defaults: Mapping[str, Any]  # attribute -> what an absent opener field means

    def content_event(self, item_id: str, delta: str, chunk: Any, lane: Owner) -> Event:
        event: Event = self.content(
            **{self.id_attr: item_id},
            delta=delta,
            metadata=chunk.metadata,
            raw_event=chunk.raw_event,
            subagent_run_id=lane,
        )
        return event


def _chunk_kind(family: Family) -> _ChunkKind:
    assert family.chunk is not None and family.content is not None
    start = EVENT_CLASSES[family.start]
    repeated = tuple((attribute(start, wire), wire) for wire in family.repeated)
    chunk = EVENT_CLASSES[family.chunk]
    for attr, wire in repeated:  # the chunk carries each under the same name
        if attribute(chunk, wire) != attr:  # pragma: no cover - schema drift
            raise AssertionError(f"{family.chunk}.{wire} is not {family.start}.{attr}")
    required = tuple(
        (f.name, f.metadata["wire"])
        for f in attrs.fields(start)
        if f.metadata.get("required")
        and "const" not in f.metadata
        and f.metadata["wire"] != family.id_wire
        and f.metadata["wire"] not in _COMMON
    )
    missing = {wire for _, wire in required} - set(family.repeated)
    if missing:  # pragma: no cover - a regeneration made an opener field required
        raise AssertionError(f"{family.start} requires {missing}, which no chunk rule fills")
    return _ChunkKind(
        family=family,
        chunk=chunk,
        start=start,
        content=EVENT_CLASSES[family.content],
        end=EVENT_CLASSES[family.end],
        id_attr=family.id_attr,
        repeated=repeated,
        required=required,
        defaults={
            attribute(start, w): v for w, v in family.defaults.items() if w in family.repeated
        },
    )


_KINDS: Final[dict[str, _ChunkKind]] = {
    f.chunk: _chunk_kind(f) for f in FAMILIES.values() if f.chunk is not None
}
"""The expansion table, by chunk event type."""
assert set(_KINDS) == CHUNK_TYPES


class _Stream:
    """The item one lane is assembling from chunks, with the fields its opener established."""

    __slots__ = ("fields", "item_id", "kind", "owner", "spec")

    def __init__(
        self, spec: _ChunkKind, item_id: str, owner: Owner, fields: dict[str, Any]
    ) -> None:
        self.spec = spec
        self.kind = spec.family.name
        self.item_id = item_id
        self.owner = owner
        self.fields = fields  # attribute -> the opener's value (its default when absent)

    def end(self) -> Event:
        """The synthesized END that closes this stream."""
        event: Event = self.spec.end(
            **{self.spec.id_attr: self.item_id}, subagent_run_id=self.owner
        )
        return event


def _describe(owner: Owner) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


# How each non-chunk event type interacts with the lanes (the table in the docstring).
_ASIDE: Final = "aside"  # closes nothing
_ALL: Final = "all"  # closes every lane
_TERMINAL: Final = "terminal"  # closes the lane of the subagent it ends
_LANE: Final = "lane"  # closes the lane of its owner
_CHUNK: Final = "chunk"  # expanded

_CATEGORY: Final[dict[str, str]] = {
    **dict.fromkeys(CLOSES_NO_LANE, _ASIDE),
    **dict.fromkeys(CLOSES_OWN_LANE, _LANE),
    **dict.fromkeys(CLOSES_EVERY_LANE, _ALL),
    **dict.fromkeys(SUBAGENT_TERMINALS, _TERMINAL),
    **dict.fromkeys(CHUNK_TYPES, _CHUNK),
}

# Explicit openers and continuations: event type -> (item family, id attribute).
# Untagged continuations belong to the lane of the owner their opener established.
_OPENER: Final[dict[str, tuple[str, str]]] = {
    f.start: (f.name, f.id_attr) for f in FAMILIES.values()
}
_CONTINUATION: Final[dict[str, tuple[str, str]]] = {
    kind: (f.name, f.id_attr) for f in FAMILIES.values() for kind in f.continuations
}
_TOOL_START: Final = FAMILIES["tool"].start


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

    __slots__ = ("_lanes", "_owners")

    def __init__(self) -> None:
        # Open chunk streams by lane owner; insertion order is opening order.
        self._lanes: dict[Owner, _Stream] = {}
        # Owner of every item opened in the current run, by (family, id): resolves the
        # lane of untagged explicit continuations.
        self._owners: dict[tuple[str, str], Owner] = {}

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
            return self._expand(_KINDS[kind], event)
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
                elif kind == _TOOL_START and event.parent_message_id is not None:
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

    def _resolve_lane(self, kind: str, item_id: str | None, tag: Owner) -> Owner:
        """The lane a chunk belongs to (see the module docstring)."""
        lanes = self._lanes
        if item_id is not None:
            for owner, stream in lanes.items():
                if stream.kind == kind and stream.item_id == item_id:
                    if tag is not None and tag != owner:
                        raise ProtocolError(
                            "owner.mismatch",
                            f"Cannot continue {FAMILIES[kind].noun} '{item_id}': chunk "
                            f"subagentRunId '{tag}' does not match the open stream's owner, "
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
        if len(candidates) > 1:
            family = FAMILIES[kind]
            listed = ", ".join(f"'{c}'" for c in candidates)
            raise ProtocolError(
                "chunk.ambiguous",
                f"Ambiguous {family.chunk}: it carries neither a {family.id_wire} nor a "
                f"subagentRunId, and {len(candidates)} lanes have an open {family.noun} "
                f"(subagents {listed}); a producer running parallel subagents must "
                f"attribute its continuations",
                subject=family.chunk,
            )
        return candidates[0] if candidates else None

    def _open(self, kind: str, item_id: str | None, lane: Owner, out: list[Event]) -> str:
        """Close whatever ``lane`` holds and check the first chunk carries its id."""
        previous = self._lanes.pop(lane, None)
        if previous is not None:
            out.append(previous.end())
        if item_id is None:
            family = FAMILIES[kind]
            raise ProtocolError(
                "chunk.missing-id",
                f"First {family.chunk} must have a {family.id_wire}: no {family.noun} is "
                f"open for it to continue in the lane of {_describe(lane)}",
                subject=family.chunk,
            )
        self._owners[(kind, item_id)] = lane
        return item_id

    @staticmethod
    def _conflict(stream: _Stream, field: str, value: str, established: str | None) -> NoReturn:
        """A continuation repeated an opener's field with another value."""
        was = "(absent)" if established is None else f"'{established}'"
        raise ProtocolError(
            "chunk.conflicting-field",
            f"Cannot continue {stream.spec.family.noun} '{stream.item_id}': chunk {field} "
            f"'{value}' does not match the open stream's {field} {was}",
            subject=stream.item_id,
        )

    def _expand(self, spec: _ChunkKind, chunk: Any) -> list[Event]:
        """One chunk of any kind as the explicit events it stands for."""
        item_id: str | None = getattr(chunk, spec.id_attr)
        lane = self._resolve_lane(spec.family.name, item_id, chunk.subagent_run_id)
        stream = self._lanes.get(lane)
        out: list[Event] = []
        delta = chunk.delta
        if (
            stream is not None
            and stream.spec is spec
            and (item_id is None or item_id == stream.item_id)
        ):
            for attr, wire in spec.repeated:
                value = getattr(chunk, attr)
                if value is not None and value != stream.fields[attr]:
                    self._conflict(stream, wire, value, stream.fields[attr])
            if delta or chunk.metadata is not None or chunk.raw_event is not None:
                out.append(spec.content_event(stream.item_id, delta or "", chunk, lane))
            return out
        item_id = self._open(spec.family.name, item_id, lane, out)
        opener = {attr: getattr(chunk, attr) for attr, _ in spec.repeated}
        for attr, wire in spec.required:
            if opener[attr] is None:
                raise ProtocolError(
                    "chunk.missing-name",
                    f"First {spec.family.chunk} must have a {wire}: {spec.family.noun} "
                    f"'{item_id}' cannot be opened without one",
                    subject=item_id,
                )
        established = {
            attr: spec.defaults.get(attr) if value is None else value
            for attr, value in opener.items()
        }
        self._lanes[lane] = _Stream(spec, item_id, lane, established)
        start: Event = spec.start(
            **{spec.id_attr: item_id},
            **opener,
            metadata=chunk.metadata,
            raw_event=None if delta else chunk.raw_event,
            subagent_run_id=lane,
        )
        out.append(start)
        if delta:
            out.append(spec.content_event(item_id, delta, chunk, lane))
        return out

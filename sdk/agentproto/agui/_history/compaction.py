"""The compaction rules: verified events in, the equivalent shorter events out.

Theory of operation
-------------------
:class:`RunCompactor` sits behind a :class:`~agentproto.agui.Consumer` (which has
decoded, enforced, chunk-expanded and verified each event) and in front of a
:class:`~agentproto.agui.Conversation` of its own, its *shadow*: every event it is
fed is applied to the shadow one at a time, so a rule can read the conversation
exactly as it stands before or after that event. What it writes out replays, through
any consumer, to the same messages, activities, state and run outcomes as what it was
fed (the draft's serialization page: compaction keeps the observable outcome).

Rules, by event:

* **Streamed items** (text messages, reasoning messages, tool calls): their
  ``START`` and ``END`` stay where they were (they fix the message order and what
  is open when); the ``CONTENT``/``ARGS`` deltas between them are joined into one
  event, written just before the ``END``. Its metadata is the deltas' metadata
  merged in order (merging is key by key, last write wins, so one merged write is
  the same as the writes in turn); it carries no ``subagentRunId`` (an untagged
  continuation belongs to its item's owner, and a tag could name an invocation
  that has finished by then) and no ``rawEvent``; its ``timestamp`` is the last
  delta's. A single delta is kept as it is.
* **State**: a run's ``STATE_SNAPSHOT``/``STATE_DELTA`` events become one event at
  the place of the last: nothing, when none of them changed the state (failing
  patches); else the shortest of a ``STATE_SNAPSHOT`` of the final state, one
  ``STATE_DELTA`` joining the operations of the deltas that applied (when no
  snapshot did; operations apply in order either way), and the events as they
  were. The collapsed event keeps the ``subagentRunId`` the events agree on
  (provenance). Nothing here diffs or compares whole states: a run costs one copy
  of the state, at its end, and only when it has state events.
* **Activities**: between two barriers (below), the ``ACTIVITY_SNAPSHOT``/
  ``ACTIVITY_DELTA`` events of one activity become one ``ACTIVITY_SNAPSHOT`` of
  its final type, content, owner and metadata, at the place of its first snapshot
  (where it was created, when it was), or of its first event when there is none.
  Events for an id that is not an activity message afterwards changed nothing and
  are dropped. The events are kept as they were when they are shorter, or when
  their ``subagentRunId`` tags are not all the activity's final owner (where an
  event may carry a tag depends on the subagents' lifecycle).
* **Barriers**: ``MESSAGES_SNAPSHOT`` may replace any message, and the end of a
  run (``RUN_FINISHED``, ``RUN_ERROR``) closes the run's bookkeeping: pending
  deltas and activities are written out before either.
* **Run input**: ``RUN_STARTED.input.messages`` loses the messages the
  conversation already holds with the same JSON (the page's input
  normalization); ``parentRunId`` and everything else stays.
* Every other event (run boundaries and outcomes, errors, interrupts, steps,
  reasoning spans and encrypted values, tool results, subagent lifecycle, ``RAW``,
  ``CUSTOM``) is kept as it is, in place.

**The chunk form.** :func:`chunk_form` then writes an item as one ``*_CHUNK`` event
where chunk expansion gives back the same events: its START, CONTENT and END have
only events that close no lane between them, and the event after its END closes the
item's lane (so the END chunk expansion synthesizes lands where the END was). It is
used only on output that is then replayed and checked (see :mod:`agentproto.agui._history.history`).

The rules are found by event class in a table built from the generated ``Event``
union (:func:`~agentproto.agui._protocol.kinds.dispatch_table`); a class with no rule is kept
as it is. Costs: each event is applied once to the shadow; a run with state events
copies the state once, a collapsed activity is read once per barrier.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from agentproto._core.json.codec import dumps
from agentproto._core.patch.ops import DEFAULT_PATCH_LIMITS, NodeCount
from agentproto._core.readonly import thaw
from agentproto.agui._generated import ActivityMessage, Event
from agentproto.agui._protocol.kinds import (
    CLOSES_EVERY_LANE,
    CLOSES_NO_LANE,
    EVENT_CLASSES,
    FAMILIES,
    SUBAGENT_TERMINALS,
    Family,
    attribute,
    check_members,
    dispatch_table,
    has_member,
    kinds,
)
from agentproto.agui._protocol.wire import CONVERTER
from agentproto.agui._reduce.conversation import Conversation

__all__ = ["RunCompactor", "chunk_form", "same_json", "starts_twice"]

(_STATE_SNAPSHOT,) = kinds("STATE_SNAPSHOT")
(_STATE_DELTA,) = kinds("STATE_DELTA")
(_ACTIVITY_SNAPSHOT,) = kinds("ACTIVITY_SNAPSHOT")
# the wire members the collapsed events are written with, checked against the schema
check_members(EVENT_CLASSES[_STATE_SNAPSHOT], "snapshot", "subagentRunId", "timestamp")
check_members(EVENT_CLASSES[_STATE_DELTA], "delta", "subagentRunId", "timestamp")
check_members(
    EVENT_CLASSES[_ACTIVITY_SNAPSHOT],
    "messageId",
    "activityType",
    "content",
    "subagentRunId",
    "metadata",
    "timestamp",
)
check_members(ActivityMessage, "activityType", "content", "subagentRunId", "metadata")


def same_json(a: Any, b: Any) -> bool:
    """Exact JSON equality: ``true`` is not ``1``, ``1`` is not ``1.0`` (key order aside).

    Iterative, so that no nesting the decoder accepts exhausts the call stack.
    """
    pairs = [(a, b)]
    while pairs:
        x, y = pairs.pop()
        if x.__class__ is not y.__class__:
            return False
        if x.__class__ is dict:
            if x.keys() != y.keys():
                return False
            pairs += ((x[key], y[key]) for key in x)
        elif x.__class__ is list:
            if len(x) != len(y):
                return False
            pairs += zip(x, y, strict=True)
        elif x != y:
            return False
    return True


def _size(event: Event) -> int:
    return len(dumps(CONVERTER.dump(event)))


def _load(wire: dict[str, Any]) -> Event:
    event: Event = CONVERTER.load(wire, Event)
    return event


class _Slot:
    """A place in the output whose events a later flush decides."""

    __slots__ = ("events",)

    def __init__(self, event: Event) -> None:
        self.events: list[Event] = [event]


_DELTA_KINDS: Final = {
    EVENT_CLASSES[family.content]: family for family in FAMILIES.values() if family.content
}
_END_KINDS: Final = {EVENT_CLASSES[family.end]: family for family in FAMILIES.values()}


class RunCompactor:
    """Compact a verified event sequence while applying it to a shadow conversation.

    Args:
        shadow: the conversation the events apply to (at the state the events start
            from); the compactor applies every event it is fed to it.
    """

    __slots__ = ("_activities", "_out", "_pending", "_shadow", "_states")

    def __init__(self, shadow: Conversation) -> None:
        self._shadow = shadow
        self._out: list[Event | _Slot] = []
        self._pending: dict[tuple[str, str], list[Any]] = {}  # open items' deltas
        # the run's state events: their slot, the event, whether it changed the state
        self._states: list[tuple[_Slot, Any, bool]] = []
        self._activities: dict[str, list[tuple[_Slot, Any]]] = {}

    @property
    def shadow(self) -> Conversation:
        """The conversation the events fed so far build."""
        return self._shadow

    def feed(self, event: Event) -> None:
        """Take the next verified (chunk-expanded) event."""
        if not _RULES[event.__class__](self, event):
            self._shadow.apply(event)

    def take(self) -> list[Event]:
        """Flush everything pending and return the events written since the last call."""
        self._flush_items()
        self._flush_activities()
        self._flush_state()
        out: list[Event] = []
        for item in self._out:
            if isinstance(item, _Slot):
                out += item.events
            else:
                out.append(item)
        self._out = []
        return out

    # ---- the rules ----------------------------------------------------------------------

    def _keep(self, event: Any) -> None:
        self._out.append(event)

    def _delta(self, event: Any) -> None:
        family = _DELTA_KINDS[event.__class__]
        key = (family.name, getattr(event, family.id_attr))
        self._pending.setdefault(key, []).append(event)

    def _end(self, event: Any) -> None:
        family = _END_KINDS[event.__class__]
        pending = self._pending.pop((family.name, getattr(event, family.id_attr)), None)
        if pending is not None:
            self._out.append(_merge_deltas(pending))
        self._out.append(event)

    def _barrier(self, event: Any) -> None:
        self._flush_items()
        self._flush_activities()
        self._out.append(event)

    def _run_end(self, event: Any) -> None:
        self._flush_items()
        self._flush_activities()
        self._flush_state()
        self._out.append(event)

    def _state(self, event: Any) -> bool:
        slot = _Slot(event)
        self._states.append((slot, event, bool(self._shadow.apply(event).state)))
        self._out.append(slot)
        return True  # applied here, to learn whether it changed the state

    def _activity(self, event: Any) -> None:
        slot = _Slot(event)
        self._activities.setdefault(event.message_id, []).append((slot, event))
        self._out.append(slot)

    def _run_started(self, event: Any) -> None:
        self._out.append(_normalized_input(event, self._shadow))

    # ---- flushing -----------------------------------------------------------------------

    def _flush_items(self) -> None:
        for pending in self._pending.values():
            self._out.append(_merge_deltas(pending))
        self._pending.clear()

    def _flush_state(self) -> None:
        states, self._states = self._states, []
        if not states:
            return
        for slot, _, _ in states:
            slot.events = []
        changed = [event for _, event, did in states if did]
        if not changed:
            return  # the run's state events changed nothing (failing patches, ...)
        events = [event for _, event, _ in states]
        tag, last = _common_tag(events), events[-1]
        snapshot = self._shadow.state_json()
        candidates = [[_state_event(_STATE_SNAPSHOT, "snapshot", snapshot, tag, last)]]
        if all(event.type == _STATE_DELTA for event in changed):
            candidates.append(_merged_patches(changed, tag, last))
        best = min(candidates, key=_sizes)
        if _sizes(best) < _sizes(events):
            states[-1][0].events = best
        else:
            for slot, event, _ in states:
                slot.events = [event]

    def _flush_activities(self) -> None:
        activities, self._activities = self._activities, {}
        for message_id, entries in activities.items():
            current = self._shadow.message(message_id)
            if not isinstance(current, ActivityMessage):
                for slot, _ in entries:
                    slot.events = []  # none of them applied
                continue
            if len(entries) < 2:
                continue
            events = [event for _, event in entries]
            if {event.subagent_run_id for event in events} != {current.subagent_run_id}:
                continue
            collapsed = _activity_snapshot(message_id, current, events[-1])
            if _size(collapsed) >= sum(map(_size, events)):
                continue
            first = next(
                (slot for slot, event in entries if event.type == _ACTIVITY_SNAPSHOT),
                entries[0][0],
            )
            for slot, _ in entries:
                slot.events = [collapsed] if slot is first else []


# ---- building events ----------------------------------------------------------------------


def _merge_deltas(events: list[Any]) -> Any:
    """One delta event equivalent to ``events`` (deltas of one item, in order)."""
    if len(events) == 1:
        return events[0]
    first, last = events[0], events[-1]
    cls = first.__class__
    changes: dict[str, Any] = {
        attribute(cls, "delta"): "".join(event.delta for event in events),
        attribute(cls, "timestamp"): last.timestamp,
        attribute(cls, "rawEvent"): None,
    }
    metadata: dict[str, Any] | None = None
    for event in events:
        if event.metadata:
            metadata = {**(metadata or {}), **event.metadata}
    changes[attribute(cls, "metadata")] = metadata
    if has_member(cls, "subagentRunId"):
        changes[attribute(cls, "subagentRunId")] = None
    return attrs.evolve(first, **changes)


def _common_tag(events: list[Any]) -> str | None:
    tags = {event.subagent_run_id for event in events}
    return tags.pop() if len(tags) == 1 else None


def _sizes(events: list[Event]) -> int:
    return sum(map(_size, events))


def _merged_patches(deltas: list[Any], tag: str | None, last: Any) -> list[Event]:
    """STATE_DELTA events joining the operations of ``deltas`` (each of which applied).

    Operations apply in order either way, so one patch of them all is the patches
    in turn; a new patch is begun where one would pass a per-patch limit.
    """
    limits = DEFAULT_PATCH_LIMITS
    groups: list[list[Any]] = [[]]
    added = 0
    for delta in deltas:
        ops = CONVERTER.dump(delta)["delta"]
        nodes = sum(NodeCount.measure(op.get("value")) for op in ops)
        over = len(groups[-1]) + len(ops) > limits.max_operations
        if groups[-1] and (over or added + nodes > limits.max_added_nodes):
            groups.append([])
            added = 0
        groups[-1] += ops
        added += nodes
    return [_state_event(_STATE_DELTA, "delta", ops, tag, last) for ops in groups]


def _state_event(kind: str, wire: str, value: Any, tag: str | None, last: Any) -> Event:
    document: dict[str, Any] = {"type": kind, wire: value}
    if tag is not None:
        document["subagentRunId"] = tag
    if last.timestamp is not None:
        document["timestamp"] = last.timestamp
    return _load(document)


def _activity_snapshot(message_id: str, current: ActivityMessage, last: Any) -> Event:
    message = CONVERTER.dump(current)
    document: dict[str, Any] = {"type": _ACTIVITY_SNAPSHOT, "messageId": message_id}
    for wire in ("activityType", "content", "subagentRunId", "metadata"):
        if wire in message:
            document[wire] = thaw(message[wire])
    if last.timestamp is not None:
        document["timestamp"] = last.timestamp
    return _load(document)


def _normalized_input(event: Any, shadow: Conversation) -> Any:
    """``RUN_STARTED`` without the input messages the conversation already holds."""
    run_input = event.input
    if run_input is None or not run_input.messages:
        return event
    kept = [message for message in run_input.messages if not _held(message, shadow)]
    if len(kept) == len(run_input.messages):
        return event
    return attrs.evolve(event, input=attrs.evolve(run_input, messages=kept))


def _held(message: Any, shadow: Conversation) -> bool:
    held = shadow.message(message.id)
    return held is not None and same_json(CONVERTER.dump(held), CONVERTER.dump(message))


# ---- the chunk form -------------------------------------------------------------------------

# events that close the lane their subagentRunId names, as no continuation of an item
_CLOSED_BY_OWNER: Final = kinds(
    "STATE_SNAPSHOT", "STATE_DELTA", "STEP_STARTED", "STEP_FINISHED", "CUSTOM", "TOOL_CALL_RESULT"
)
_FAMILY_OF: Final = {
    kind: family
    for family in FAMILIES.values()
    for kind in (family.start, family.content, family.end)
    if kind is not None
}
_START_KINDS: Final = {EVENT_CLASSES[family.start]: family for family in FAMILIES.values()}
_CHUNK_FAMILIES: Final = {family.chunk: family for family in FAMILIES.values() if family.chunk}


def starts_twice(events: Iterable[Event]) -> frozenset[tuple[str, str]]:
    """The items (family, id) opened more than once in ``events`` (reopened)."""
    seen: set[tuple[str, str]] = set()
    again: set[tuple[str, str]] = set()
    for event in events:
        family = _START_KINDS.get(event.__class__)
        if family is not None:
            key = (family.name, getattr(event, family.id_attr))
            (again if key in seen else seen).add(key)
    return frozenset(again)


def chunk_form(events: Sequence[Event], reopened: frozenset[tuple[str, str]]) -> list[Event]:
    """``events`` with items written as one ``*_CHUNK`` event each, where that says the same.

    An item qualifies when its START, CONTENT (at most one) and END have between
    them only events that close no chunk lane (``RAW``, ``ACTIVITY_*``, ...), and
    the event after its END closes the lane of the item's owner (see
    :mod:`agentproto.agui._consume.chunks`):
    chunk expansion then gives back the START and CONTENT where the chunk is and
    synthesizes the END right before that event, so the conversation is the same.
    An item opened more than once (``reopened``) keeps its explicit form, so that
    the two forms are not mixed for one item.
    """
    lanes = _lanes(events, reopened)
    out: list[Event] = []  # built backwards: out[-1] is the event after the current one
    index = len(events) - 1
    while index >= 0:
        found = _as_chunk(events, index, out[-1] if out else None, reopened, lanes)
        if found is None:
            out.append(events[index])
            index -= 1
            continue
        chunk, start, between = found
        out += reversed(between)
        out.append(chunk)
        index = start - 1
    out.reverse()
    return out


def _as_chunk(
    events: Sequence[Event],
    end: int,
    after: Event | None,
    reopened: frozenset[tuple[str, str]],
    lanes: Mapping[tuple[str, str], Any],
) -> tuple[Event, int, list[Event]] | None:
    """The chunk for the item whose END is ``events[end]``, its START's index and the
    events between them that stay (after the chunk)."""
    family = _END_KINDS.get(events[end].__class__)
    if family is None or family.chunk is None or after is None:
        return None
    item = getattr(events[end], family.id_attr)
    if (family.name, item) in reopened:
        return None
    triad: list[Event] = [events[end]]
    between: list[Event] = []
    start = end - 1
    while start >= 0 and events[start].type != family.start:
        event = events[start]
        if event.type in CLOSES_NO_LANE:
            between.append(event)
        elif event.type == family.content and len(triad) == 1:
            triad.append(event)
        else:
            return None
        start -= 1
    if start < 0 or any(getattr(e, family.id_attr) != item for e in triad):
        return None
    start_event: Any = events[start]
    if getattr(start_event, family.id_attr) != item:
        return None
    if not _closes(after, start_event.subagent_run_id, lanes):
        return None
    triad.append(start_event)
    chunk = _chunk_of(family, triad[::-1])
    return None if chunk is None else (chunk, start, between[::-1])


_NO: Final = object()  # the lane of an item whose owner this pass does not know


def _lanes(events: Sequence[Event], reopened: frozenset[tuple[str, str]]) -> dict[Any, Any]:
    """The chunk lane of each item opened once in ``events``: its opener's tag; for an
    untagged tool call naming a parent message, that message's lane when it is known."""
    lanes: dict[Any, Any] = {}
    text = FAMILIES["text"].name
    for event in events:
        family = _START_KINDS.get(event.__class__)
        if family is None:
            continue
        key = (family.name, getattr(event, family.id_attr))
        lane = getattr(event, "subagent_run_id", None)
        parent = getattr(event, "parent_message_id", None)
        if lane is None and parent:
            lane = lanes.get((text, parent), _NO)
        lanes.setdefault(key, _NO if key in reopened else lane)
    return lanes


def _closes(after: Event, owner: str | None, lanes: Mapping[tuple[str, str], Any]) -> bool:
    """Whether ``after`` closes the chunk lane of ``owner`` (so the END lands before it)."""
    kind = after.type
    tag = getattr(after, "subagent_run_id", None)
    if kind in CLOSES_EVERY_LANE:
        return True
    if kind in _CHUNK_FAMILIES or kind in _CLOSED_BY_OWNER or kind in SUBAGENT_TERMINALS:
        return tag == owner
    family = _FAMILY_OF.get(kind)
    if family is None:
        return False
    # an untagged item event is in the lane of its item's owner
    lane = tag if tag is not None else lanes.get((family.name, getattr(after, family.id_attr)), _NO)
    return bool(lane == owner)


def _chunk_of(family: Family, triad: Sequence[Event]) -> Event | None:
    """The chunk event of ``family`` that expands into ``triad``, if it can say it all."""
    assert family.chunk is not None
    cls = EVENT_CLASSES[family.chunk]
    document: dict[str, Any] = {"type": family.chunk}
    metadata: dict[str, Any] = {}
    for event in triad:
        wire = CONVERTER.dump(event)
        metadata.update(wire.pop("metadata", None) or {})
        for key in ("type", "rawEvent", "timestamp"):
            wire.pop(key, None)
        if event is triad[0]:
            document.update(wire)
        elif "delta" in wire:
            document["delta"] = wire["delta"]
    if metadata:
        document["metadata"] = metadata
    if document.get("delta") == "":
        del document["delta"]
    for key, value in family.defaults.items():  # what the chunk kind implies (a role)
        if document.get(key) == value and not has_member(cls, key):
            del document[key]
    if not all(has_member(cls, key) for key in document):
        return None
    return _load(document)


def _rules() -> dict[str, Callable[[RunCompactor, Any], bool | None]]:
    rules: dict[str, Callable[[RunCompactor, Any], bool | None]] = {}
    for family in FAMILIES.values():
        if family.content is not None:
            rules[family.content] = RunCompactor._delta
        rules[family.end] = RunCompactor._end
    for kind in kinds("STATE_SNAPSHOT", "STATE_DELTA"):
        rules[kind] = RunCompactor._state
    for kind in kinds("ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA"):
        rules[kind] = RunCompactor._activity
    for kind in kinds("RUN_FINISHED", "RUN_ERROR"):
        rules[kind] = RunCompactor._run_end
    rules["MESSAGES_SNAPSHOT"] = RunCompactor._barrier
    rules["RUN_STARTED"] = RunCompactor._run_started
    return rules


_RULES: Final = dispatch_table(_rules(), RunCompactor._keep)
"""The rule of every generated event class (kept as it is when it has none)."""

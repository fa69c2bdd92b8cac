"""The AG-UI conversation reducer: verified events in, messages and state out.

Theory of operation
-------------------
This module owns every rule for *applying* AG-UI events (SPEC-NOTES, AG-UI:
"Snapshot-delta pattern", "State, messages, run input", "Activity", "Metadata",
"Subagents and attribution"; the activity seed). It sits at the end of the
pipeline (bytes → SSE → compatibility → enforcement → chunk expansion →
verification → here) and may assume a verified stream, but it never fails and
never corrupts its state on anything else: an event it cannot apply changes
nothing and yields a :class:`~agentproto._core.diagnostics.Diagnostic`.

**Records, not typed objects.** The generated message classes are mutable, so
the conversation keeps its own records (``_Entry`` for a message, ``_Call`` for
a tool call) made of plain JSON in wire names, and typed messages are
*materialised* from them on demand: built fresh from a deep copy, cached on the
record, and dropped from the cache when that record changes. A caller holding a
materialised message therefore cannot reach the records; mutating it only
changes what later reads of the same cached object show until the message
changes again (don't). ``to_json()`` and run input are always built from the
records, never from the cache.

**Costs.** Text, reasoning and argument deltas are appended to a list of parts
and joined lazily, when the message is read (O(1) amortised per delta). The
state belongs to the reducer alone (a snapshot is copied in when it arrives), so
state deltas go through :func:`~agentproto._core.patch.apply.apply_patch_in_place`:
O(operations) whatever the size of the state or the width of the containers
on the path, atomic through an undo log. Activity content is an immutable value
patched by :func:`~agentproto._core.patch.apply.apply_patch`, which copies only the
containers on the touched paths. Nothing copies a whole document per event;
snapshots and event payloads are copied once, when they arrive (O(event size)),
so that a caller changing an event afterwards cannot reach the state.

**What comes from the schema.** Rules are found by event class, in a table
built from the generated ``Event`` union
(:func:`~agentproto.agui._protocol.kinds.dispatch_table`): an event class with no rule
(one a newer schema added) changes nothing and yields ``event.no-rule``, as an
unknown event type would be dropped, never an exception. The roles a text
message may have are the schema's ``TextMessageRole`` values that name a class
of the ``Message`` union; a role the runtime cannot build a message for is an
unknown enumeration value, stripped with ``unknown-member-stripped`` (the
message then has the default role), never dropped in silence.

**Checking without applying.** Each rule runs in two modes: :meth:`Conversation.check`
finds what :meth:`Conversation.apply` would report and changes nothing (a patch
is tried on a copy-on-write result that is thrown away); a producer refuses an
event on it. The rules live in :mod:`._reduce_items` (streamed items, results,
encrypted values) and :mod:`._reduce_snapshots` (state, messages snapshots,
activities); the records in :mod:`._records`.

**Rules**, event by event:

* ``TEXT_MESSAGE_START`` creates a message with the event's role (absent means
  ``assistant``), ``name`` and ``subagentRunId``; for an id that exists (a
  closed message reopened, or an assistant message a tool call created) it
  reopens it, and content appends. A reopening START keeps the message's
  established values: a different ``role`` or ``name`` changes nothing and says
  so (``message.role-mismatch``, ``message.name-mismatch``); a message with no
  ``name`` yet takes the opener's. ``TEXT_MESSAGE_CONTENT`` appends its delta;
  ``TEXT_MESSAGE_END`` closes. ``REASONING_MESSAGE_*`` do the same for role
  ``reasoning``. An event naming a message that does not exist, or one of a
  role it cannot build, is skipped with a diagnostic.
* ``TOOL_CALL_START`` attaches a tool call (``arguments`` empty) to a parent
  assistant message: the one ``parentMessageId`` names (created, with the
  event's attribution, when it does not exist yet); without
  ``parentMessageId``, the latest assistant message of the call's own owner
  (its ``subagentRunId``, absent for the parent agent) that is still being
  streamed (an open text message or an open tool call) — never one of another
  owner — else a new assistant message whose id is the tool call id, with the
  call's attribution (as the reference client does; so too when
  ``parentMessageId`` names a message that is not an assistant message, with a
  diagnostic). A tool call has no attribution of its own: it inherits its
  parent message's ``subagentRunId``. What is being streamed is run-scoped:
  ``RUN_STARTED``, ``RUN_FINISHED`` and ``RUN_ERROR`` leave nothing open (a
  failed run's open message takes no call of the next run). A START for a known
  tool call id reopens it. ``TOOL_CALL_ARGS`` appends to
  ``function.arguments``. Arguments are complete (acted on only then) at
  ``TOOL_CALL_END``; a run boundary before it leaves them incomplete until a
  later START reopens the call (:meth:`Conversation.arguments_complete`).
* ``TOOL_CALL_RESULT`` mints a tool message (``content`` a string or content
  parts, ``toolCallId``, ``subagentRunId``), placed right after the assistant
  message holding the call and the tool messages already following it (a
  follow-up text streamed before the result stays after it), or last when the
  call is unknown. An id that already exists is skipped with a diagnostic.
* ``REASONING_ENCRYPTED_VALUE`` stores ``encryptedValue`` and
  ``encryptedValueType`` (both replaced as a pair) on the message (subtype
  ``message``) or tool call (subtype ``tool-call``) named by ``entityId``; an
  unknown entity, or an activity message (which has no such field), yields a
  diagnostic and nothing else.
* ``STATE_SNAPSHOT`` replaces the state outright (any JSON, ``null`` and ``0``
  included). ``STATE_DELTA`` patches it atomically; a patch that fails leaves
  the state exactly as it was, with a ``state.patch-failed`` diagnostic ("Failed
  to apply state patch"); the next snapshot resyncs. The baseline is the run
  input's state (absent means ``{}``).
* ``MESSAGES_SNAPSHOT``: messages with known ids are replaced in place, new ids
  appended in snapshot order, messages it omits dropped — except activity and
  reasoning messages, which survive unless the snapshot carries at least one
  message of that role (it is then the complete set for that role).
* ``ACTIVITY_SNAPSHOT`` for an unseen id creates an activity message at the end
  (its position of arrival). For an activity message that exists, it replaces
  ``content`` and ``activityType`` and re-mints attribution (the message's
  ``subagentRunId`` becomes the snapshot's, absent included); with
  ``replace: false`` it leaves content, type and owner as they stand. For a
  message that is not an activity message it is skipped with a diagnostic (the
  delta rule, applied to snapshots too).
* ``ACTIVITY_DELTA`` patches ``content`` atomically and its ``activityType``
  replaces the message's; the owner stays. A delta for a missing or
  non-activity message, a patch that fails, and a result that is not an object
  are skipped with a diagnostic; such a delta changes nothing (metadata
  included).
* Metadata merges key by key, last write wins, no recursion, onto the event's
  target: ``TEXT_MESSAGE_*`` → the message; ``REASONING_MESSAGE_*`` → the
  reasoning message; ``TOOL_CALL_START/ARGS/END`` → the tool call;
  ``TOOL_CALL_RESULT`` → the tool message it mints; ``ACTIVITY_*`` → the
  activity message (a replacing snapshot replaces content, never metadata; a
  ``replace: false`` snapshot still merges its metadata). Every other event
  merges nowhere.
* ``RUN_*`` (besides closing what was open), ``STEP_*``,
  ``REASONING_START/END``, ``SUBAGENT_*``, ``RAW`` and ``CUSTOM`` change
  nothing here. ``*_CHUNK`` events must be expanded first;
  one that arrives anyway changes nothing and yields a diagnostic, as does an
  event class no rule knows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, cast

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import UsageError
from agentproto._core.readonly import readonly, thaw
from agentproto._core.unset import UNSET
from agentproto.agui._generated import ActivityMessage, Event, Message, RunAgentInput, ToolCall
from agentproto.agui._protocol.kinds import (
    ACTIVITY,
    CHUNK_TYPES,
    RUN_LIFECYCLE,
    SUBAGENT_LIFECYCLE,
    dispatch_table,
    kinds,
    unlisted,
)
from agentproto.agui._reduce.items import _ItemRules
from agentproto.agui._reduce.records import (
    _NOTHING,
    DEFAULT_MAX_ACTIVITY_NODES,
    DEFAULT_MAX_STATE_NODES,
    Change,
    _entry_from_message,
    _load_message,
    _problem,
)
from agentproto.agui._reduce.snapshots import _SnapshotRules

__all__ = ["Change", "Conversation"]

_TAKER: Final = "Conversation.apply()"
# The events that change nothing in the conversation (the last rule of the docstring;
# RUN_* only close what is open).
_NO_EFFECT = SUBAGENT_LIFECYCLE | kinds(
    "STEP_STARTED", "STEP_FINISHED", "REASONING_START", "REASONING_END", "RAW", "CUSTOM"
)


# ---- the reducer --------------------------------------------------------------------------


class Conversation(_ItemRules, _SnapshotRules):
    """The messages, activities and state an AG-UI event stream builds.

    Feed it verified events (after chunk expansion) with :meth:`apply`; read
    :attr:`messages`, :meth:`message`, :attr:`activities`, :attr:`state`,
    :meth:`state_json` and :meth:`to_json`. The rules are in this module's
    docstring.

    Reading never copies the whole conversation: :attr:`state` is a read-only
    view, and messages are typed objects built when first read after a change
    and cached. Those objects belong to the conversation's cache: mutating one
    cannot change the conversation (its records, :meth:`to_json`, the next run
    input), but later reads may return that same object until the message
    changes, so treat them as read-only.

    Args:
        messages: the conversation so far (copied; ids must be unique).
        state: the baseline state; omitted means ``{}`` (copied).
        max_state_nodes: the most JSON values (containers and scalars, counted
            recursively) ``STATE_DELTA`` patches may grow the state to. A delta
            that would exceed it fails atomically like any failing patch
            (``state.patch-failed``, its :class:`~agentproto.PatchError` naming
            ``max_state_nodes``; the state is unchanged). Values a ``remove`` or
            ``replace`` takes out are credited. A snapshot is taken as it is
            (its size is bounded by the decoder's ``max_event_bytes``); deltas
            after it are counted from its size.
        max_activity_nodes: the same bound for each activity's ``content``
            under ``ACTIVITY_DELTA`` (``activity.patch-failed``).

    Raises:
        SchemaError: a message does not match the schema.
        UsageError: two messages share an id.
    """

    __slots__ = ("_abandoned_calls", "_state_revision")

    def __init__(
        self,
        *,
        messages: Iterable[Message] = (),
        state: Any = UNSET,
        max_state_nodes: int = DEFAULT_MAX_STATE_NODES,
        max_activity_nodes: int = DEFAULT_MAX_ACTIVITY_NODES,
    ) -> None:
        super().__init__({} if state is UNSET else thaw(state), max_state_nodes, max_activity_nodes)
        self._abandoned_calls: set[str] = set()  # calls a run boundary left before their END
        self._state_revision = 0  # counts the changes to the state (read by StateView)
        for message in messages:
            entry = _entry_from_message(message)
            if entry.id in self._by_id:
                raise UsageError(
                    "conversation.duplicate-id", f"two messages share the id {entry.id!r}"
                )
            self._entries.append(entry)
            self._by_id[entry.id] = entry
        self._index_calls()

    @classmethod
    def from_input(cls, run_input: RunAgentInput, **limits: int) -> Conversation:
        """The conversation a run starts from: the input's messages and state.

        An absent ``state`` means ``{}``. ``limits`` are ``max_state_nodes`` and
        ``max_activity_nodes``, as for the constructor.
        """
        state = UNSET if run_input.state is None else run_input.state
        return cls(messages=run_input.messages, state=state, **limits)

    # ---- reading ----------------------------------------------------------------------

    @property
    def messages(self) -> tuple[Message, ...]:
        """Every message, in conversation order (a snapshot; see the class notes)."""
        snapshot = self._snapshot
        if snapshot is None:
            snapshot = self._snapshot = tuple(entry.materialise() for entry in self._entries)
        return snapshot

    def message(self, message_id: str) -> Message | None:
        """The message with this id, or ``None``."""
        entry = self._by_id.get(message_id)
        return None if entry is None else entry.materialise()

    def tool_call(self, tool_call_id: str) -> ToolCall | None:
        """The tool call with this id (as held by its parent message), or ``None``."""
        call = self._calls.get(tool_call_id)
        if call is None:
            return None
        message = call.parent.materialise()
        for tool_call in getattr(message, "tool_calls", None) or ():
            if tool_call.id == tool_call_id:
                return cast(ToolCall, tool_call)
        return None  # pragma: no cover - the index and the records agree

    def arguments_complete(self, tool_call_id: str) -> bool | None:
        """Whether a tool call's arguments are complete, so that it may be acted on.

        Returns:
            ``True`` once its ``TOOL_CALL_END`` arrived (and no later START reopened
            it), and for a call that arrived whole (in the run input or a
            ``MESSAGES_SNAPSHOT``); ``False`` while its arguments stream, and for a
            call its run abandoned before the END (``RUN_ERROR``, or a new run
            starting); ``None`` for an id no tool call has.
        """
        if tool_call_id not in self._calls:
            return None
        return tool_call_id not in self._open_calls and tool_call_id not in self._abandoned_calls

    @property
    def activities(self) -> tuple[ActivityMessage, ...]:
        """The activity messages, in conversation order."""
        return tuple(
            cast(ActivityMessage, e.materialise()) for e in self._entries if e.role == ACTIVITY
        )

    @property
    def state(self) -> Any:
        """The state as a read-only view (O(1), no copy); :meth:`state_json` copies.

        The view is a live, read-only window on the reducer's state: it shows
        the state as it is when read, deltas included. Take :meth:`state_json`
        for a snapshot that later events do not change.
        """
        return readonly(self._state)

    def state_json(self) -> Any:
        """An independent deep copy of the state."""
        return thaw(self._state)

    def to_json(self) -> dict[str, Any]:
        """``{"messages": [...], "state": ...}`` in wire names, as an independent copy.

        Each message is the JSON ``make_converter().dump(message)`` gives for
        the corresponding item of :attr:`messages`.
        """
        return {
            "messages": [thaw(entry.wire()) for entry in self._entries],
            "state": thaw(self._state),
        }

    def _fresh_messages(self, *, skip_roles: frozenset[str] = frozenset()) -> list[Message]:
        """New typed messages, independent of the cache (for run input)."""
        return [_load_message(thaw(e.wire())) for e in self._entries if e.role not in skip_roles]

    def __repr__(self) -> str:
        return f"<Conversation: {len(self._entries)} messages>"

    # ---- applying ---------------------------------------------------------------------

    def apply(self, event: Event) -> Change:
        """Apply one event and say what changed.

        Args:
            event: a typed AG-UI event, as enforcement and chunk expansion
                deliver it. An event class this reducer has no rule for (one a
                newer schema added) changes nothing and says so in a diagnostic.

        Returns:
            the :class:`Change`; problems the spec tolerates are in its
            ``diagnostics`` and leave the conversation as it was.

        Raises:
            UsageError: ``event`` is not an AG-UI event object.
        """
        rule = _RULES.get(type(event))
        if rule is None:
            rule = unlisted(event, _no_rule, code="conversation.not-an-event", taker=_TAKER)
        change = rule(self, event, True)
        if change.state:
            self._state_revision += 1
        return change

    def check(self, event: Event) -> tuple[Diagnostic, ...]:
        """What :meth:`apply` would report for ``event``, without changing anything.

        An empty result means the event applies cleanly: nothing skipped, no patch
        failing, no content that would stop being an object. A producer refuses an
        event for which this is not empty.

        Raises:
            UsageError: ``event`` is not an AG-UI event object.
        """
        rule = _RULES.get(type(event))
        if rule is None:
            rule = unlisted(event, _no_rule, code="conversation.not-an-event", taker=_TAKER)
        return rule(self, event, False).diagnostics

    # -- events that change nothing here

    def _nothing(self, event: Any, commit: bool) -> Change:
        return _NOTHING

    def _run_boundary(self, event: Any, commit: bool) -> Change:
        """RUN_STARTED, RUN_FINISHED, RUN_ERROR: nothing stays open across them."""
        if commit:
            self._open_text.clear()
            self._abandoned_calls |= self._open_calls  # never ended: not complete
            self._open_calls.clear()
        return _NOTHING

    def _tool_start(self, event: Any, commit: bool) -> Change:
        change = super()._tool_start(event, commit)
        if commit:  # (re)opened: its arguments stream again
            self._abandoned_calls.discard(event.tool_call_id)
        return change

    def _messages_snapshot(self, event: Any, commit: bool) -> Change:
        change = super()._messages_snapshot(event, commit)
        if commit:  # the calls it carries arrive whole
            for message in event.messages:
                for call in getattr(message, "tool_calls", None) or ():
                    self._abandoned_calls.discard(call.id)
            self._abandoned_calls &= self._calls.keys()
        return change


def _ignored(code: str, why: str) -> Callable[[Conversation, Any, bool], Change]:
    """A rule that changes nothing and reports ``code``: ``why`` follows the type."""

    def rule(self: Conversation, event: Any, commit: bool) -> Change:
        return _problem(code, f"{event.type}{why}", subject=event.type)

    return rule


_chunk = _ignored(
    "event.not-expanded",
    " reached the conversation unexpanded; chunk events must go through chunk"
    " expansion first; ignored",
)
_no_rule: Final = _ignored(
    "event.no-rule",
    ": the conversation has no rule for this event type (a newer schema's?); it changes nothing",
)


_Rule = Callable[[Conversation, Any, bool], Change]

_RULES: Final[dict[type, _Rule]] = dispatch_table(
    {
        "TEXT_MESSAGE_START": Conversation._start,
        "TEXT_MESSAGE_CONTENT": Conversation._content,
        "TEXT_MESSAGE_END": Conversation._end,
        "REASONING_MESSAGE_START": Conversation._start,
        "REASONING_MESSAGE_CONTENT": Conversation._content,
        "REASONING_MESSAGE_END": Conversation._end,
        "TOOL_CALL_START": Conversation._tool_start,
        "TOOL_CALL_ARGS": Conversation._tool_args,
        "TOOL_CALL_END": Conversation._tool_end,
        "TOOL_CALL_RESULT": Conversation._tool_result,
        "REASONING_ENCRYPTED_VALUE": Conversation._encrypted_value,
        "STATE_SNAPSHOT": Conversation._state_snapshot,
        "STATE_DELTA": Conversation._state_delta,
        "MESSAGES_SNAPSHOT": Conversation._messages_snapshot,
        "ACTIVITY_SNAPSHOT": Conversation._activity_snapshot,
        "ACTIVITY_DELTA": Conversation._activity_delta,
        **dict.fromkeys(RUN_LIFECYCLE, Conversation._run_boundary),
        # steps, reasoning spans, subagents, RAW and CUSTOM change nothing
        **dict.fromkeys(_NO_EFFECT, Conversation._nothing),
        **dict.fromkeys(CHUNK_TYPES, _chunk),
    },
    _no_rule,
)
"""The rule of every generated event class (``_no_rule`` for a class with none)."""

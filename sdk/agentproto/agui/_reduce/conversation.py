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
the conversation keeps its own records (``Entry`` for a message, ``Call`` for
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
event on it. Every rule is a method of :class:`Conversation` (the table
``_RULES`` at the bottom maps each event class to one); the records it keeps are
in :mod:`.records`.

The rules take events as ``Any``: this module is compiled in the compiled build, where
a parameter typed with an event class would have mypyc check every field read from it
against the schema's type, and a hand-built event holding a wrong one must get a
diagnostic here, not a ``TypeError``.

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
* ``RUN_*``, besides closing what was open, change no message: the last one
  applied is kept (:attr:`Conversation.last_run_event`), so that the conversation
  knows whether its last run ended interrupted, and with which interrupts, for the
  next run input to answer (a late ``RUN_ERROR`` after ``RUN_FINISHED`` makes that
  run failed: nothing stays open). A conversation started from a run input
  (:meth:`Conversation.from_input`) also keeps the names of the tools that input
  declared (:attr:`Conversation.declared_tools`): the client's own tools, whose
  calls the next input answers. ``STEP_*``,
  ``REASONING_START/END``, ``SUBAGENT_*``, ``RAW`` and ``CUSTOM`` change
  nothing here, except the ``CUSTOM`` resync of a resumed stream
  (``agentproto.resync``), after which nothing is streaming: the snapshot that
  follows holds the messages whole. ``*_CHUNK`` events must be expanded first;
  one that arrives anyway changes nothing and yields a diagnostic, as does an
  event class no rule knows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, cast

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import PatchError, SchemaError, UsageError
from agentproto._core.patch.apply import apply_patch, apply_patch_in_place
from agentproto._core.patch.ops import NodeCount
from agentproto._core.readonly import readonly, thaw
from agentproto._core.unset import UNSET
from agentproto.agui._generated import (
    ActivityMessage,
    Event,
    Message,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ToolCall,
)
from agentproto.agui._protocol.kinds import (
    ACTIVITY,
    ASSISTANT,
    CHUNK_TYPES,
    ENCRYPTABLE_ROLES,
    FAMILIES,
    REASONING,
    REASONING_ROLES,
    RESYNC,
    RUN_LIFECYCLE,
    SUBAGENT_LIFECYCLE,
    TEXT_ROLES,
    TOOL,
    TOOL_CALL_SUBTYPE,
    dispatch_table,
    kinds,
    unlisted,
)
from agentproto.agui._protocol.wire import CONVERTER
from agentproto.agui._reduce.records import (
    DEFAULT_MAX_ACTIVITY_NODES,
    DEFAULT_MAX_STATE_NODES,
    NOTHING,
    Call,
    Change,
    Entry,
    entry_from_message,
    load_message,
    merge_metadata,
    own_ops,
    problem,
)

__all__ = ["Change", "Conversation"]

_TAKER: Final = "Conversation.apply()"
# The events that change nothing in the conversation (the last rule of the docstring;
# RUN_* only close what is open).
_NO_EFFECT = SUBAGENT_LIFECYCLE | kinds(
    "STEP_STARTED", "STEP_FINISHED", "REASONING_START", "REASONING_END", "RAW"
)


# The message families: event type -> (the roles its messages may have, the default role).
_ROLES: Final[dict[str, tuple[frozenset[str], str]]] = {
    kind: (roles, family.defaults["role"])
    for family, roles in ((FAMILIES["text"], TEXT_ROLES), (FAMILIES["reasoning"], REASONING_ROLES))
    for kind in (family.start, *family.continuations)
}


def _role_stripped(event: Any, role: str, default: str) -> Diagnostic:
    """An enumeration value the runtime cannot build a message for, stripped."""
    return Diagnostic(
        code="unknown-member-stripped",
        message=f"{event.type} for {event.message_id!r}: role {role!r} names no message"
        f" kind this runtime knows; stripped (the message is {default!r})",
        path="/role",
        subject=event.message_id,
    )


def _bad_delta(event: Any, code: str, item_id: str) -> Change:
    """A hand-built CONTENT or ARGS event whose delta is not a string, skipped."""
    return problem(
        code, f"{event.type} for {item_id!r}: delta is not a string; skipped", subject=item_id
    )


_STATE_CHANGED: Final = Change(state=True)


# ---- the reducer --------------------------------------------------------------------------


class Conversation:
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

    __slots__ = (
        "_abandoned_calls",
        "_by_id",
        "_calls",
        "_declared_tools",
        "_entries",
        "_last_run_event",
        "_max_activity_nodes",
        "_max_state_nodes",
        "_open_calls",
        "_open_text",
        "_snapshot",
        "_state",
        "_state_count",
        "_state_revision",
    )

    def __init__(
        self,
        *,
        messages: Iterable[Message] = (),
        state: Any = UNSET,
        max_state_nodes: int = DEFAULT_MAX_STATE_NODES,
        max_activity_nodes: int = DEFAULT_MAX_ACTIVITY_NODES,
    ) -> None:
        state = {} if state is UNSET else thaw(state)
        self._entries: list[Entry] = []
        self._by_id: dict[str, Entry] = {}
        self._calls: dict[str, Call] = {}
        self._open_text: set[str] = set()
        self._open_calls: set[str] = set()
        self._snapshot: tuple[Message, ...] | None = None
        self._state: Any = state
        # sizes of the documents deltas grow, measured at the first delta after
        # each snapshot (None: not measured since), then kept by the patch appliers
        self._max_state_nodes = max_state_nodes
        self._max_activity_nodes = max_activity_nodes
        self._state_count: NodeCount | None = None
        self._abandoned_calls: set[str] = set()  # calls a run boundary left before their END
        self._state_revision = 0  # counts the changes to the state (read by StateView)
        self._last_run_event: Any = None  # the last RUN_* event applied
        self._declared_tools: tuple[str, ...] = ()  # the tools of the input started from
        for message in messages:
            entry = entry_from_message(message)
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
        ``max_activity_nodes``, as for the constructor. The names of the input's
        ``tools`` are kept (:attr:`declared_tools`).
        """
        state = UNSET if run_input.state is None else run_input.state
        conversation = cls(messages=run_input.messages, state=state, **limits)
        conversation._declared_tools = tuple(dict.fromkeys(t.name for t in run_input.tools or ()))
        return conversation

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

    @property
    def last_run_event(self) -> RunStartedEvent | RunFinishedEvent | RunErrorEvent | None:
        """The last ``RUN_STARTED``, ``RUN_FINISHED`` or ``RUN_ERROR`` applied (``None``
        before any): a ``RUN_FINISHED`` whose outcome is ``interrupt`` means the last run
        left those interrupts open (:meth:`OpenInterrupts.of
        <agentproto.agui.OpenInterrupts.of>` reads them). Treat it as read-only."""
        event: RunStartedEvent | RunFinishedEvent | RunErrorEvent | None = self._last_run_event
        return event

    @property
    def declared_tools(self) -> tuple[str, ...]:
        """The names of the tools the run input this conversation started from declared
        (:meth:`from_input`; ``()`` otherwise): the client's own tools, whose unanswered
        calls a continuing thread answers first."""
        return self._declared_tools

    @property
    def state_revision(self) -> int:
        """How many times the state changed so far (a snapshot or a delta applied): a
        reader that kept the value of an earlier revision knows whether to read again."""
        return self._state_revision

    def copy_messages(self, *, skip_roles: frozenset[str] = frozenset()) -> list[Message]:
        """Typed messages built anew from the records, independent of the cache (what a
        run input carries), leaving out those whose role is in ``skip_roles``."""
        return [load_message(thaw(e.wire())) for e in self._entries if e.role not in skip_roles]

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

    # ---- bookkeeping every rule shares -------------------------------------------------

    def _state_nodes(self) -> NodeCount:
        """The state's :class:`NodeCount` (measured when unknown)."""
        count = self._state_count
        if count is None:
            nodes = NodeCount.measure(self._state)
            count = self._state_count = NodeCount(self._max_state_nodes, "max_state_nodes", nodes)
        return count

    def _activity_nodes(self, entry: Entry) -> NodeCount:
        """An activity's content :class:`NodeCount` (measured when unknown)."""
        count = entry.nodes
        if count is None:
            nodes = NodeCount.measure(entry.fields["content"])
            count = NodeCount(self._max_activity_nodes, "max_activity_nodes", nodes)
            entry.nodes = count
        return count

    def _touch(self, entry: Entry) -> None:
        entry.cached = None
        self._snapshot = None

    def _append(self, entry: Entry) -> None:
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        self._snapshot = None

    def _index_calls(self) -> None:
        self._calls = {
            call.id: call for entry in self._entries if entry.calls for call in entry.calls
        }

    # ---- streamed items: text and reasoning messages, tool calls, results ----------------

    # -- text and reasoning messages

    def _start(self, event: Any, commit: bool) -> Change:
        """TEXT_MESSAGE_START or REASONING_MESSAGE_START."""
        roles, default = _ROLES[event.type]
        role = event.role or default
        message_id = event.message_id
        name = getattr(event, "name", None)
        diagnostics: tuple[Diagnostic, ...] = ()
        if role not in roles:  # an unknown enumeration value: stripped, the default holds
            diagnostics = (_role_stripped(event, role, default),)
            role = default
        entry = self._by_id.get(message_id)
        if entry is not None:
            if entry.role not in roles or not entry.start_text():
                return problem(
                    "message.role-mismatch",
                    f"{event.type} for {message_id!r}, which is a {entry.role} message"
                    " whose content cannot be streamed; skipped",
                    subject=message_id,
                )
            if entry.role != role:
                diagnostics += (
                    Diagnostic(
                        code="message.role-mismatch",
                        message=f"{event.type} for {message_id!r} says role {role!r};"
                        f" the message stays {entry.role!r}",
                        subject=message_id,
                    ),
                )
            established = entry.fields.get("name")
            if name is not None and established is not None and name != established:
                diagnostics += (
                    Diagnostic(
                        code="message.name-mismatch",
                        message=f"{event.type} for {message_id!r} says name {name!r};"
                        f" the message keeps {established!r}",
                        subject=message_id,
                    ),
                )
        if not commit:
            return Change(diagnostics=diagnostics)
        created = entry is None
        if entry is None:
            entry = Entry(message_id, role)
            entry.text = []
            if name is not None:
                entry.fields["name"] = name
            if event.subagent_run_id is not None:
                entry.fields["subagentRunId"] = event.subagent_run_id
            self._append(entry)
        elif name is not None and "name" not in entry.fields:  # established values stand
            entry.fields["name"] = name
        self._open_text.add(message_id)
        if event.metadata:
            entry.metadata = merge_metadata(entry.metadata, event.metadata)
        self._touch(entry)
        if created:
            return Change(messages=(message_id,), created=(message_id,), diagnostics=diagnostics)
        if not diagnostics:
            return entry.change
        return Change(messages=(message_id,), diagnostics=diagnostics)

    def _content(self, event: Any, commit: bool) -> Change:
        """TEXT_MESSAGE_CONTENT or REASONING_MESSAGE_CONTENT."""
        roles = _ROLES[event.type][0]
        entry = self._by_id.get(event.message_id)
        if entry is None or entry.role not in roles or not entry.start_text():
            return self._no_message(event, entry)
        delta = event.delta
        if type(delta) is not str:
            return _bad_delta(event, "message.invalid-delta", event.message_id)
        if not commit:
            return NOTHING
        metadata = event.metadata
        if delta:
            entry.text.append(delta)  # type: ignore[union-attr]
        elif not metadata:
            return NOTHING
        if metadata:
            entry.metadata = merge_metadata(entry.metadata, metadata)
        entry.cached = None
        self._snapshot = None
        return entry.change

    def _end(self, event: Any, commit: bool) -> Change:
        """TEXT_MESSAGE_END or REASONING_MESSAGE_END."""
        roles = _ROLES[event.type][0]
        entry = self._by_id.get(event.message_id)
        if entry is None or entry.role not in roles:
            return self._no_message(event, entry)
        if not commit:
            return NOTHING
        self._open_text.discard(entry.id)
        if not event.metadata:
            return NOTHING
        entry.metadata = merge_metadata(entry.metadata, event.metadata)
        self._touch(entry)
        return entry.change

    @staticmethod
    def _no_message(event: Any, entry: Entry | None) -> Change:
        message_id = event.message_id
        if entry is None:
            return problem(
                "message.unknown",
                f"{event.type} for {message_id!r}: no such message; skipped",
                subject=message_id,
            )
        return problem(
            "message.role-mismatch",
            f"{event.type} for {message_id!r}, which is a {entry.role} message"
            " whose content cannot be streamed; skipped",
            subject=message_id,
        )

    # -- tool calls

    def _streaming_assistant(self, owner: str | None) -> Entry | None:
        """The latest assistant message of ``owner`` still being streamed (an open text
        message, or one with an open tool call), or ``None``. Only open items are
        looked at, never the whole conversation."""
        by_id, calls = self._by_id, self._calls
        found: dict[int, Entry] = {}
        for entry in (
            *(by_id[i] for i in self._open_text if i in by_id),
            *(calls[c].parent for c in self._open_calls if c in calls),
        ):
            if entry.role == ASSISTANT and entry.fields.get("subagentRunId") == owner:
                found[id(entry)] = entry
        if len(found) <= 1:
            return next(iter(found.values()), None)
        return next(e for e in reversed(self._entries) if id(e) in found)

    def _tool_parent(self, event: Any, diagnostics: list[Diagnostic]) -> Any:
        """The parent message of a new tool call: a record (:class:`Entry`), the id of
        an assistant message to create for it, or ``None`` when no message can hold it
        (``Any``: the id is the event's, whatever a hand-built event holds)."""
        parent_id = event.parent_message_id
        if parent_id is not None:
            entry = self._by_id.get(parent_id)
            if entry is None:
                return parent_id
            if entry.role == ASSISTANT:
                return entry
            diagnostics.append(
                Diagnostic(
                    code="tool-call.parent-not-assistant",
                    message=f"TOOL_CALL_START {event.tool_call_id!r}: parentMessageId"
                    f" {parent_id!r} names a {entry.role} message; the call gets an"
                    " assistant message of its own",
                    subject=parent_id,
                )
            )
        else:
            # a call without a parent joins its own owner's streaming assistant message,
            # never another owner's (a tool call inherits its message's attribution)
            streaming = self._streaming_assistant(event.subagent_run_id)
            if streaming is not None:
                return streaming
        own = self._by_id.get(event.tool_call_id)
        if own is None:
            return event.tool_call_id
        return own if own.role == ASSISTANT else None

    def _open_tool_call(self, event: Any, commit: bool) -> Change:
        call_id = event.tool_call_id
        call = self._calls.get(call_id)
        if call is not None:  # a closed call reopened
            if not commit:
                return NOTHING
            self._open_calls.add(call_id)
            if not event.metadata:
                return NOTHING
            call.metadata = merge_metadata(call.metadata, event.metadata)
            self._touch(call.parent)
            return call.parent.change
        diagnostics: list[Diagnostic] = []
        parent = self._tool_parent(event, diagnostics)
        if parent is None:
            diagnostics.append(
                Diagnostic(
                    code="tool-call.no-parent",
                    message=f"TOOL_CALL_START {call_id!r}: no assistant message can hold"
                    " the call (its id is taken by another message); skipped",
                    subject=call_id,
                )
            )
        if parent is None or not commit:
            return Change(diagnostics=tuple(diagnostics))
        created = isinstance(parent, str)
        if isinstance(parent, str):
            parent = Entry(parent, ASSISTANT)
            if event.subagent_run_id is not None:
                parent.fields["subagentRunId"] = event.subagent_run_id
            self._append(parent)
        call = Call(call_id, event.tool_call_name, parent)
        if event.metadata:
            call.metadata = merge_metadata(None, event.metadata)
        if parent.calls is None:
            parent.calls = []
        parent.calls.append(call)
        self._calls[call_id] = call
        self._open_calls.add(call_id)
        self._touch(parent)
        return Change(
            messages=(parent.id,),
            created=(parent.id,) if created else (),
            diagnostics=tuple(diagnostics),
        )

    def _unknown_call(self, event: Any) -> Change:
        return problem(
            "tool-call.unknown",
            f"{event.type} for {event.tool_call_id!r}: no such tool call; skipped",
            subject=event.tool_call_id,
        )

    def _tool_args(self, event: Any, commit: bool) -> Change:
        call = self._calls.get(event.tool_call_id)
        if call is None:
            return self._unknown_call(event)
        delta = event.delta
        if type(delta) is not str:
            return _bad_delta(event, "tool-call.invalid-delta", event.tool_call_id)
        if not commit:
            return NOTHING
        if delta:
            call.args.append(delta)
        elif not event.metadata:
            return NOTHING
        if event.metadata:
            call.metadata = merge_metadata(call.metadata, event.metadata)
        parent = call.parent
        parent.cached = None
        self._snapshot = None
        return parent.change

    def _tool_end(self, event: Any, commit: bool) -> Change:
        call = self._calls.get(event.tool_call_id)
        if call is None:
            return self._unknown_call(event)
        if not commit:
            return NOTHING
        self._open_calls.discard(call.id)
        if not event.metadata:
            return NOTHING
        call.metadata = merge_metadata(call.metadata, event.metadata)
        self._touch(call.parent)
        return call.parent.change

    def _tool_result(self, event: Any, commit: bool) -> Change:
        message_id = event.message_id
        if message_id in self._by_id:
            return problem(
                "tool-result.duplicate-id",
                f"TOOL_CALL_RESULT {message_id!r}: a message with this id exists; skipped",
                subject=message_id,
            )
        content = event.content
        if not isinstance(content, (str, list)):
            return problem(
                "tool-result.invalid-content",
                f"TOOL_CALL_RESULT {message_id!r}: content is neither text nor parts; skipped",
                subject=message_id,
            )
        if not commit:
            return NOTHING
        entry = Entry(message_id, TOOL)
        entry.fields["content"] = (
            content if isinstance(content, str) else thaw(CONVERTER.dump(content))
        )
        entry.fields["toolCallId"] = event.tool_call_id
        if event.subagent_run_id is not None:
            entry.fields["subagentRunId"] = event.subagent_run_id
        if event.metadata:
            entry.metadata = merge_metadata(None, event.metadata)
        self._place_result(entry, self._calls.get(event.tool_call_id))
        return Change(messages=(message_id,), created=(message_id,))

    def _place_result(self, entry: Entry, call: Call | None) -> None:
        """After the call's message and the tool messages following it (else last)."""
        entries = self._entries
        if call is None or entries[-1] is call.parent:
            entries.append(entry)
        else:
            position = entries.index(call.parent) + 1
            while position < len(entries) and entries[position].role == TOOL:
                position += 1
            entries.insert(position, entry)
        self._by_id[entry.id] = entry
        self._snapshot = None

    def _encrypted_value(self, event: Any, commit: bool) -> Change:
        entity_id = event.entity_id
        if event.subtype == TOOL_CALL_SUBTYPE:
            call = self._calls.get(entity_id)
            target = None if call is None else call.fields
            owner = None if call is None else call.parent
            what = "tool call"
        else:
            owner = self._by_id.get(entity_id)
            target = None if owner is None else owner.fields
            what = "message"
            if owner is not None and owner.role not in ENCRYPTABLE_ROLES:
                return problem(
                    "encrypted-value.not-storable",
                    f"REASONING_ENCRYPTED_VALUE for {entity_id!r}: an {owner.role} message"
                    " holds no encrypted value; dropped",
                    subject=entity_id,
                )
        if target is None or owner is None:
            return problem(
                "encrypted-value.unknown-entity",
                f"REASONING_ENCRYPTED_VALUE for {entity_id!r}: no such {what}; dropped",
                subject=entity_id,
            )
        if not commit:
            return NOTHING
        target["encryptedValue"] = event.encrypted_value
        if event.encrypted_value_type is None:
            target.pop("encryptedValueType", None)
        else:
            target["encryptedValueType"] = event.encrypted_value_type
        self._touch(owner)
        return owner.change

    # ---- state, messages snapshots and activities ---------------------------------------

    # -- state

    def _state_snapshot(self, event: Any, commit: bool) -> Change:
        if commit:
            self._state = thaw(event.snapshot)
            self._state_count = None
        return _STATE_CHANGED

    def _state_delta(self, event: Any, commit: bool) -> Change:
        try:
            ops = own_ops(event.delta)  # over max_operations: refused before any copying
            if ops is None:
                return problem(
                    "state.patch-failed",
                    "Failed to apply state patch: delta is not a list",
                    path="/delta",
                )
            count = self._state_nodes()
            if commit:
                # the state is the reducer's own (snapshots are copied in), so it is
                # patched in place: O(operations), however wide the containers are
                self._state = apply_patch_in_place(self._state, ops, count=count)
            else:  # copy-on-write: only the containers on the paths, then dropped
                apply_patch(self._state, ops, count=NodeCount(count.limit, count.name, count.nodes))
        except PatchError as exc:
            return problem(
                "state.patch-failed",
                f"Failed to apply state patch: {exc}; the state is unchanged",
                path=f"/delta/{exc.index}",
            )
        return _STATE_CHANGED if ops else NOTHING

    # -- messages snapshot

    @staticmethod
    def _incoming(event: Any, diagnostics: list[Diagnostic]) -> dict[str, Entry]:
        """The snapshot's messages as records, by id (invalid ones reported and left out)."""
        incoming: dict[str, Entry] = {}
        for index, message in enumerate(event.messages):
            try:
                entry = entry_from_message(message)
            except (SchemaError, TypeError, KeyError, AttributeError) as exc:
                diagnostics.append(
                    Diagnostic(
                        code="messages.invalid",
                        message=f"MESSAGES_SNAPSHOT: message {index} is not a valid message"
                        f" ({exc}); skipped",
                        path=f"/messages/{index}",
                    )
                )
                continue
            if entry.id in incoming:
                diagnostics.append(
                    Diagnostic(
                        code="messages.duplicate-id",
                        message=f"MESSAGES_SNAPSHOT carries {entry.id!r} twice; the last wins",
                        subject=entry.id,
                        path=f"/messages/{index}",
                    )
                )
            incoming[entry.id] = entry
        return incoming

    def _take_messages_snapshot(self, event: Any, commit: bool) -> Change:
        diagnostics: list[Diagnostic] = []
        incoming = self._incoming(event, diagnostics)
        if not commit:
            return Change(diagnostics=tuple(diagnostics))
        roles = {entry.role for entry in incoming.values()}
        keep_activity = ACTIVITY not in roles
        keep_reasoning = REASONING not in roles
        entries: list[Entry] = []
        touched: list[str] = []
        removed: list[str] = []
        for entry in self._entries:
            replacement = incoming.pop(entry.id, None)
            if replacement is not None:
                entries.append(replacement)
                touched.append(entry.id)
            elif (entry.role == ACTIVITY and keep_activity) or (
                entry.role == REASONING and keep_reasoning
            ):
                entries.append(entry)
            else:
                removed.append(entry.id)
        created = list(incoming)
        entries.extend(incoming.values())
        self._entries = entries
        self._by_id = {entry.id: entry for entry in entries}
        self._index_calls()
        self._open_text = {i for i in self._open_text if i in self._by_id}
        self._open_calls = {i for i in self._open_calls if i in self._calls}
        self._snapshot = None
        return Change(
            messages=(*touched, *created),
            created=tuple(created),
            removed=tuple(removed),
            diagnostics=tuple(diagnostics),
        )

    # -- activities

    def _activity_snapshot(self, event: Any, commit: bool) -> Change:
        message_id = event.message_id
        if not isinstance(event.content, dict):
            return problem(
                "activity.not-object",
                f"ACTIVITY_SNAPSHOT for {message_id!r}: content is not an object; skipped",
                subject=message_id,
            )
        entry = self._by_id.get(message_id)
        if entry is not None and entry.role != ACTIVITY:
            return problem(
                "activity.not-activity",
                f"ACTIVITY_SNAPSHOT for {message_id!r}, which is a {entry.role} message,"
                " not an activity message; skipped",
                subject=message_id,
            )
        if not commit:
            return NOTHING
        if entry is None:
            entry = Entry(message_id, ACTIVITY)
            entry.fields["activityType"] = event.activity_type
            entry.fields["content"] = thaw(event.content)
            entry.nodes = None
            if event.subagent_run_id is not None:
                entry.fields["subagentRunId"] = event.subagent_run_id
            if event.metadata:
                entry.metadata = merge_metadata(None, event.metadata)
            self._append(entry)
            return Change(messages=(message_id,), created=(message_id,))
        if event.replace is not False:
            entry.fields["activityType"] = event.activity_type
            entry.fields["content"] = thaw(event.content)
            entry.nodes = None
            if event.subagent_run_id is None:
                entry.fields.pop("subagentRunId", None)
            else:
                entry.fields["subagentRunId"] = event.subagent_run_id
        elif not event.metadata:
            return NOTHING
        if event.metadata:
            entry.metadata = merge_metadata(entry.metadata, event.metadata)
        self._touch(entry)
        return entry.change

    def _patched_content(self, event: Any) -> Any:
        """The activity's content with the delta applied and its size, or the Change
        saying why not."""
        message_id = event.message_id
        entry = self._by_id.get(message_id)
        if entry is None or entry.role != ACTIVITY:
            why = "no such message" if entry is None else f"it is a {entry.role} message"
            return problem(
                "activity.delta-skipped",
                f"ACTIVITY_DELTA for {message_id!r} skipped: {why}, not an activity message",
                subject=message_id,
            )
        try:
            ops = own_ops(event.patch)  # over max_operations: refused before any copying
            if ops is None:
                return problem(
                    "activity.patch-failed",
                    f"Failed to apply activity patch for {message_id!r}: patch is not a list",
                    subject=message_id,
                    path="/patch",
                )
            count = self._activity_nodes(entry)
            # checking tries the patch on a copy of the count; applying keeps it
            trial = NodeCount(count.limit, count.name, count.nodes)
            content = apply_patch(entry.fields["content"], ops, count=trial)
        except PatchError as exc:
            return problem(
                "activity.patch-failed",
                f"Failed to apply activity patch for {message_id!r}: {exc};"
                " the activity is unchanged",
                subject=message_id,
                path=f"/patch/{exc.index}",
            )
        if not isinstance(content, dict):
            return problem(
                "activity.not-object",
                f"ACTIVITY_DELTA for {message_id!r}: the patched content would not be an"
                " object; the activity is unchanged",
                subject=message_id,
            )
        return content, trial.nodes

    def _activity_delta(self, event: Any, commit: bool) -> Change:
        patched = self._patched_content(event)
        if type(patched) is Change:
            return patched
        content, nodes = patched
        if not commit:
            return NOTHING
        entry = self._by_id[event.message_id]
        entry.fields["content"] = content
        self._activity_nodes(entry).nodes = nodes
        entry.fields["activityType"] = event.activity_type
        if event.metadata:
            entry.metadata = merge_metadata(entry.metadata, event.metadata)
        self._touch(entry)
        return entry.change

    # -- events that change nothing here

    def _nothing(self, event: Any, commit: bool) -> Change:
        return NOTHING

    def _custom(self, event: Any, commit: bool) -> Change:
        """A resync (:data:`~agentproto.agui._protocol.kinds.RESYNC`): what streamed
        is over, its messages whole in the snapshot that follows; other CUSTOM events
        change nothing."""
        if commit and event.name == RESYNC:
            self._open_text.clear()
            self._open_calls.clear()
        return NOTHING

    def _run_boundary(self, event: Any, commit: bool) -> Change:
        """RUN_STARTED, RUN_FINISHED, RUN_ERROR: nothing stays open across them."""
        if commit:
            self._open_text.clear()
            self._abandoned_calls |= self._open_calls  # never ended: not complete
            self._open_calls.clear()
            self._last_run_event = event
        return NOTHING

    def _tool_start(self, event: Any, commit: bool) -> Change:
        change = self._open_tool_call(event, commit)
        if commit:  # (re)opened: its arguments stream again
            self._abandoned_calls.discard(event.tool_call_id)
        return change

    def _messages_snapshot(self, event: Any, commit: bool) -> Change:
        change = self._take_messages_snapshot(event, commit)
        if commit:  # the calls it carries arrive whole
            for message in event.messages:
                for call in getattr(message, "tool_calls", None) or ():
                    self._abandoned_calls.discard(call.id)
            self._abandoned_calls &= self._calls.keys()
        return change


def _ignored(code: str, why: str) -> Callable[[Conversation, Any, bool], Change]:
    """A rule that changes nothing and reports ``code``: ``why`` follows the type."""

    def rule(self: Conversation, event: Any, commit: bool) -> Change:
        return problem(code, f"{event.type}{why}", subject=event.type)

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
        "CUSTOM": Conversation._custom,
        # steps, reasoning spans, subagents and RAW change nothing
        **dict.fromkeys(_NO_EFFECT, Conversation._nothing),
        **dict.fromkeys(CHUNK_TYPES, _chunk),
    },
    _no_rule,
)
"""The rule of every generated event class (``_no_rule`` for a class with none)."""

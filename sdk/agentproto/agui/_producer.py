"""Producing AG-UI events: :class:`RunProducer`, typed helpers that keep the producer duties.

Theory of operation
-------------------
An agent author builds a run's events with typed helpers (``run_started()``,
``text_message()``, ``tool_call()``, ``state_update()``, ``activity_update()``,
``subagent()``, ...) or hands ready events to :meth:`RunProducer.emit`. Every event
passes the same gate before it is *emitted* (appended to :attr:`RunProducer.events`,
or handed to the ``sink``), and an event that fails the gate is never emitted:

1. **Schema.** The event is dumped to its wire JSON, encoded and parsed back
   strictly: a malformed field is a :class:`~agentproto.SchemaError` naming the
   JSON Schema keyword and the wire location. A wire dict given to ``emit`` must not
   carry ``metadata`` or ``subagentRunId`` as an explicit ``null``
   (``producer.null-field``); a typed event with ``None`` there simply omits them.
2. **Producer duties** (codes in the table below), checked against what the producer
   knows the client holds: a state delta needs a baseline (the run input's state,
   ``{}`` when absent; or ``state=``; or a STATE_SNAPSHOT) and must apply to it; an
   activity delta needs the activity's snapshot, repeats its ``activityType`` unless
   the caller retypes on purpose, must apply, and must leave the content an object
   (each patch is tried by the producer's own reducer, the consumer's, through
   :meth:`~agentproto.agui.Conversation.check`, which changes nothing); a
   ``replace: false`` snapshot agrees with the activity's established owner; an
   attributed event names a subagent announced in the run. A patch a consumer could
   not apply is refused with the consumer's own warning code (``state.patch-failed``,
   ``activity.patch-failed``, ``activity.not-object``), as are an activity snapshot
   for a message that is not an activity and a tool result reusing a message id.
3. **Sequencing**: the consumer's own state machine,
   :class:`~agentproto.agui._verify.Verifier` (after
   :class:`~agentproto.agui._chunks.ChunkExpander` for chunk events), checks RUN_STARTED
   first, triads, reasoning spans and steps opened before use and closed before
   RUN_FINISHED, subagents announced and closed, attribution of continuations,
   thread and run ids. Its :class:`~agentproto.ProtocolError` becomes a
   :class:`~agentproto.UsageError` with the same code (``run.not-started``,
   ``message.not-open``, ``step.open-at-finish``, ``owner.mismatch``, ...).
4. **Application** to the producer's :class:`~agentproto.agui.Conversation` (its copy
   of messages, activities and state, as the client will hold them). An event the
   verifier or the reducer would warn about (an encrypted value for an entity the
   client does not know, a message reopened with another role, ...) is refused with
   that warning's code.

Errors from stages 1-2 leave the producer exactly as it was: fix the call and go on.
An error from stages 3-4 *fails* the producer, as h11 fails a connection after a local
protocol error: the state machine has recorded the rejected event, so the producer
refuses everything after it (``producer.failed``) except :meth:`RunProducer.run_error`,
the one event that can still tell the client what happened.
:attr:`RunProducer.failure` holds the error. Either way the rejected event is never
emitted.

The helpers fill in what the caller should not have to repeat: ids (generated when
omitted), the thread and run ids of the run input, ``protocolVersion`` on
RUN_STARTED, the current ``activityType`` on activity deltas, the owner on the
continuations of an attributed message or tool call. ``state_update`` and
``activity_update`` compute a minimal RFC 6902 patch from the producer's copy to the
new value (:func:`agentproto._core.patch.make_patch`).

Streaming items and brackets come back as handles (:class:`TextMessageWriter`,
:class:`ToolCallWriter`, :class:`ReasoningMessageWriter`, :class:`ReasoningSpan`,
:class:`StepScope`, :class:`SubagentScope`, :class:`RunScope`): their START event is
emitted when the helper is called, the handle emits the continuations, and used as a
context manager it closes what it opened on exit — also when the block raises (a
subagent then ends with SUBAGENT_ERROR, a run with RUN_ERROR), unless the producer
has failed, and without hiding the block's exception.

Error codes
-----------
Besides the sequencing codes of :mod:`agentproto.agui._verify` and the reducer's
warning codes, :class:`~agentproto.UsageError` carries:

==================================  ===========================================================
code                                raised when
==================================  ===========================================================
``producer.not-an-event``           ``emit`` got neither an AG-UI event object nor a wire dict
``producer.null-field``             a wire dict sets ``metadata`` or ``subagentRunId`` to null
``producer.missing-id``             RUN_STARTED without a thread or run id (no run input)
``producer.state-no-baseline``      STATE_DELTA before any baseline (no run input, no
                                    ``state=``, no STATE_SNAPSHOT)
``producer.activity-no-snapshot``   ACTIVITY_DELTA for an activity no snapshot created
``producer.activity-retype``        ACTIVITY_DELTA changing ``activityType`` without
                                    ``retype=True``
``producer.activity-owner``         a ``replace: false`` ACTIVITY_SNAPSHOT attributed to
                                    another owner than the activity's established one
``producer.subagent-not-announced`` an event attributed to a ``subagentRunId`` that no
                                    SUBAGENT_STARTED announced in the run
``producer.bad-argument``           an argument that makes no sense for the event
``producer.failed``                 anything but RUN_ERROR after the producer failed
``producer.closed``                 anything after :meth:`RunProducer.close`
==================================  ===========================================================
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Literal, TypeAlias, TypeVar, get_args

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import (
    AgentProtoError,
    ProtocolError,
    SchemaError,
    UsageError,
)
from agentproto._core.jsonutil import dumps
from agentproto._core.patch import make_patch
from agentproto._core.readonly import thaw
from agentproto._core.unset import UNSET
from agentproto.agui import _generated as g
from agentproto.agui._chunks import ChunkExpander
from agentproto.agui._conversation import Conversation
from agentproto.agui._generated import Event, Message, RunAgentInput
from agentproto.agui._kinds import ATTRIBUTED, kinds
from agentproto.agui._run_input import PROTOCOL_VERSION
from agentproto.agui._verify import Verifier
from agentproto.agui._wire import _converter, parse_event, parse_run_input

__all__ = [
    "ReasoningMessageWriter",
    "ReasoningSpan",
    "RunProducer",
    "RunScope",
    "StepScope",
    "SubagentScope",
    "TextMessageWriter",
    "ToolCallWriter",
]

Phase: TypeAlias = Literal["idle", "running", "finished", "errored"]
"""Where the producer's stream stands: before any run, in a run, after RUN_FINISHED,
after RUN_ERROR."""
Sink: TypeAlias = Callable[[Event], object]
PatchLike: TypeAlias = Sequence[g.JsonPatchOperation | Mapping[str, Any]]
"""A JSON Patch as typed operations or wire dicts (``{"op": ..., "path": ...}``)."""
RunOutcome: TypeAlias = g.RunFinishedOutcome | Literal["success", "cancelled"]
SubagentOutcome: TypeAlias = g.SubagentFinishedOutcome | Literal["success", "suspended"]

E = TypeVar("E", bound=Event)

_EVENT_CLASSES: Final = frozenset(get_args(Event))
# The events whose duty is about what the client holds (a baseline and a patch that
# applies, content that stays an object, an id that is free): the reducer checks them
# before anything changes. Every other event's reducer warning is found after sequencing.
_PRECHECKED: Final = kinds("STATE_DELTA", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "TOOL_CALL_RESULT")
_NEVER_NULL: Final = ("metadata", "subagentRunId")
_RUN_OUTCOMES: Final[dict[str, Callable[[], g.RunFinishedOutcome]]] = {
    "success": g.RunFinishedSuccessOutcome,
    "cancelled": g.RunFinishedCancelledOutcome,
}
_SUBAGENT_OUTCOMES: Final[dict[str, Callable[[], g.SubagentFinishedOutcome]]] = {
    "success": g.SubagentFinishedSuccessOutcome,
    "suspended": g.SubagentFinishedSuspendedOutcome,
}


_NO_STATE: Any = object()  # no baseline state yet


def _random_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def _describe(owner: str | None) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


def _json_text(value: Any) -> str:
    """Tool arguments or result as text: a string as is, anything else as compact JSON."""
    return value if isinstance(value, str) else dumps(value).decode("utf-8")


def _typed(value: Any, tp: Any) -> Any:
    """``value`` (typed objects, wire JSON or a mix) checked and built as ``tp``."""
    return _converter.load(_converter.dump(value), tp)


class RunProducer:
    """Builds the events of AG-UI runs with types, refusing any that break a producer duty.

    Named for its unit of work: the run, the answer to one ``RunAgentInput``, which is
    what every duty it keeps is scoped by (the state baseline, the subagents announced,
    what must be closed before RUN_FINISHED). One producer serves one response stream:
    usually one run, although runs may follow each other as the protocol allows. Every helper builds
    its event, passes it through the gate described in the module docstring and
    emits it, returning what it emitted; nothing is emitted when it raises.

    Args:
        run_input: the request the run answers (typed, or wire JSON parsed strictly).
            Its ``threadId``/``runId`` are the defaults of :meth:`run_started` and
            :meth:`run_finished`, its messages the starting conversation, and its
            ``state`` the baseline of state deltas (absent means ``{}``).
        state: the baseline state the client holds, when there is no run input or it
            should be overridden. Without a run input or ``state``, the first state
            event must be a STATE_SNAPSHOT.
        sink: called with each emitted event, in order (for example to put it on a
            queue a response streams from). Without a sink, emitted events are kept
            in :attr:`events` (take them with :meth:`drain`).
        new_id: makes the ids the helpers generate, from a prefix (``"msg"``,
            ``"call"``, ``"tool-result"``, ``"reasoning"``, ``"subagent"``,
            ``"activity"``); default ``f"{prefix}-{uuid4().hex}"``.

    Attributes:
        run_input: the typed run input, if any.
        conversation: the producer's copy of what the client will hold (messages,
            activities, state), updated by every emitted event.
        events: the emitted events not yet drained (only without a ``sink``).
        failure: the error that failed the producer, if one did.

    Raises:
        SchemaError: ``run_input`` (wire JSON) or ``state`` is malformed.

    Example::

        producer = RunProducer(run_input)
        producer.run_started()
        with producer.text_message() as message:
            message.content("Hello")
        producer.state_update({"count": 1})
        producer.run_finished()
        events = producer.drain()
    """

    def __init__(
        self,
        run_input: RunAgentInput | Mapping[str, Any] | None = None,
        *,
        state: Any = UNSET,
        sink: Sink | None = None,
        new_id: Callable[[str], str] | None = None,
    ) -> None:
        if isinstance(run_input, Mapping):
            run_input = parse_run_input(dict(run_input))
        self.run_input: RunAgentInput | None = run_input
        messages: Sequence[Message] = run_input.messages if run_input is not None else ()
        if state is UNSET and run_input is not None and run_input.state is not None:
            state = run_input.state
        if state is not UNSET:
            dumps(state)  # the baseline must be JSON (SchemaError names where it is not)
        # what the client holds (messages, activities, state): every duty about it is
        # checked through this reducer, the consumer's own, and nothing else keeps a copy
        self.conversation = Conversation(messages=messages, state=state)
        self._baseline = state is not UNSET or run_input is not None  # a state to patch
        self._verifier = Verifier(
            thread_id=run_input.thread_id if run_input is not None else None, messages=messages
        )
        self._expander = ChunkExpander()
        self._sink = sink
        self._new_id = new_id if new_id is not None else _random_id
        self.events: list[Event] = []
        self.failure: AgentProtoError | None = None
        self._phase: Phase = "idle"
        self._closed = False
        self._run_ids: tuple[str, str] | None = None  # (threadId, runId) of the last run
        self._announced: set[str] = set()  # subagentRunIds announced in the current run

    # ---- reading -------------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        """``idle`` before any run, ``running`` in one, then ``finished`` or ``errored``."""
        return self._phase

    @property
    def state(self) -> Any:
        """The state the client holds after the emitted events (a read-only view)."""
        return self.conversation.state

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def drain(self) -> list[Event]:
        """The emitted events kept since the last call, in order (the buffer is emptied)."""
        events, self.events = self.events, []
        return events

    def close(self) -> None:
        """End of the stream: nothing more will be emitted.

        Raises:
            UsageError: ``stream.truncated`` when a run is still open (it would reach
                the client with no outcome); the producer is then failed, and
                :meth:`run_error` may still end the run before closing again.
        """
        if self._closed:
            return
        if self.failure is not None:
            if self._phase in ("idle", "running"):
                raise UsageError(
                    "stream.truncated",
                    "the producer failed with no terminal event sent: send run_error() "
                    "before closing, or the client sees a run with no outcome",
                )
            self._closed = True
            return
        try:
            self._verifier.close()
        except ProtocolError as exc:
            raise self._fail(UsageError(exc.code, str(exc))) from exc
        self._closed = True

    # ---- the gate ------------------------------------------------------------------------

    def emit(self, event: Event | Mapping[str, Any], *, retype: bool = False) -> Event:
        """Emit one event, typed or as wire JSON, after checking every producer duty.

        Args:
            event: a typed AG-UI event, or its wire JSON (a dict with camelCase keys;
                ``metadata`` and ``subagentRunId`` must not be ``null``).
            retype: allow an ACTIVITY_DELTA to change the activity's ``activityType``.

        Returns:
            The event emitted (the given typed event, or the one parsed from the dict).

        Raises:
            SchemaError: the event does not match the schema (nothing changed).
            UsageError: the event breaks a producer duty; see the module docstring for
                which errors leave the producer usable and which fail it.
        """
        if isinstance(event, Mapping):
            typed = self._from_wire(event)
        elif type(event) in _EVENT_CLASSES:
            typed = event
            self._check_schema(typed)
        else:
            raise UsageError(
                "producer.not-an-event",
                f"emit() takes an AG-UI event object or its wire JSON, not {type(event).__name__}",
            )
        return self._emit(typed, retype=retype)

    def _send(self, event: E, *, retype: bool = False) -> E:
        """Emit an event a helper built (checked like any other)."""
        self._check_schema(event)
        self._emit(event, retype=retype)
        return event

    def _from_wire(self, wire: Mapping[str, Any]) -> Event:
        for key in _NEVER_NULL:
            if key in wire and wire[key] is None:
                raise UsageError(
                    "producer.null-field",
                    f"'{key}' is never sent as null: leave it out instead "
                    f"(event type {wire.get('type')!r})",
                )
        wire = dict(wire)
        dumps(wire)  # non-JSON values: a SchemaError at their location
        return parse_event(wire)

    @staticmethod
    def _check_schema(event: Event) -> None:
        try:
            wire = _converter.dump(event)
        except (TypeError, AttributeError, ValueError) as exc:  # pragma: no cover - defensive
            raise SchemaError("type", "", f"{event.type} cannot be dumped: {exc}") from None
        dumps(wire)  # values that are not JSON (NaN, objects, ...)
        parse_event(wire)  # strict: every field as the schema says

    def _emit(self, event: Event, *, retype: bool) -> Event:
        if self._closed:
            raise UsageError("producer.closed", f"the producer is closed; cannot emit {event.type}")
        if self.failure is not None:
            if event.type == "RUN_ERROR" and self._phase != "errored":
                # the one event that can still tell the client the run failed
                self._phase = "errored"
                self._deliver(event)
                return event
            raise UsageError(
                "producer.failed",
                f"the producer failed earlier ({self.failure}); it emits nothing more "
                f"but a RUN_ERROR, not {event.type}",
            )
        self._check_duties(event, retype)  # nothing has changed if this raises
        try:
            expanded = self._expander.feed(event)
        except ProtocolError as exc:
            raise self._fail(UsageError(exc.code, str(exc))) from exc
        for explicit in expanded:
            try:
                found = self._verifier.feed(explicit)
            except ProtocolError as exc:
                raise self._fail(UsageError(exc.code, str(exc))) from exc
            found += self.conversation.apply(explicit).diagnostics
            if found:
                raise self._fail(self._refused(found[0]))
        self._learn(event)
        self._deliver(event)
        return event

    @staticmethod
    def _refused(diagnostic: Diagnostic) -> UsageError:
        return UsageError(
            diagnostic.code,
            f"{diagnostic.message} (a consumer would warn and skip it, so it is not sent)",
        )

    def _fail(self, error: UsageError) -> UsageError:
        self.failure = error
        return error

    def _deliver(self, event: Event) -> None:
        if self._sink is None:
            self.events.append(event)
        else:
            self._sink(event)

    # ---- producer duties -----------------------------------------------------------------

    @property
    def _state(self) -> Any:
        """The state the client holds (the reducer's own value: read, never change it),
        or ``_NO_STATE`` while there is no baseline."""
        return self.conversation._state if self._baseline else _NO_STATE

    def _check_duties(self, event: Event, retype: bool) -> None:
        """Refuse what breaks a duty before anything changes (the producer stays usable).

        Duties about what the client holds are checked by the reducer itself
        (:meth:`Conversation.check`), for the events in ``_PRECHECKED``.
        """
        kind = event.type
        tag: str | None = getattr(event, "subagent_run_id", None)
        if tag is not None and kind in ATTRIBUTED and tag not in self._announced:
            raise UsageError(
                "producer.subagent-not-announced",
                f"{kind} is attributed to subagent '{tag}', which no SUBAGENT_STARTED "
                f"announced in this run: announce an invocation before its events",
            )
        if retype and kind != "ACTIVITY_DELTA":
            raise UsageError(
                "producer.bad-argument", f"retype applies to ACTIVITY_DELTA, not {kind}"
            )
        if isinstance(event, g.StateDeltaEvent) and not self._baseline:
            raise UsageError(
                "producer.state-no-baseline",
                "STATE_DELTA without a baseline: the producer has no run input and no "
                "state, so send a STATE_SNAPSHOT first",
            )
        if isinstance(event, g.ActivityDeltaEvent):
            self._check_activity_delta(event, retype)
        elif isinstance(event, g.ActivitySnapshotEvent):
            self._check_activity_snapshot(event)
        if kind in _PRECHECKED:
            found = self.conversation.check(event)
            if found:
                raise self._refused(found[0])

    def _check_activity_delta(self, event: g.ActivityDeltaEvent, retype: bool) -> None:
        known = self._known_activity(event.message_id)
        if event.activity_type != known.activity_type and not retype:
            raise UsageError(
                "producer.activity-retype",
                f"ACTIVITY_DELTA for '{event.message_id}' says activityType "
                f"'{event.activity_type}', but the activity is '{known.activity_type}': "
                f"repeat the current type, or pass retype=True to change it on purpose",
            )

    def _check_activity_snapshot(self, event: g.ActivitySnapshotEvent) -> None:
        known = self.conversation.message(event.message_id)
        if (
            isinstance(known, g.ActivityMessage)
            and event.replace is False
            and event.subagent_run_id != known.subagent_run_id
        ):
            raise UsageError(
                "producer.activity-owner",
                f"ACTIVITY_SNAPSHOT with replace: false for '{event.message_id}' is "
                f"attributed to {_describe(event.subagent_run_id)}, but the activity "
                f"belongs to {_describe(known.subagent_run_id)}: a snapshot that does not "
                f"replace keeps the established owner and must agree with it",
            )

    def _known_activity(self, message_id: str) -> g.ActivityMessage:
        """The activity message as the client holds it (its owner is the one the last
        replacing snapshot set)."""
        known = self.conversation.message(message_id)
        if not isinstance(known, g.ActivityMessage):
            raise UsageError(
                "producer.activity-no-snapshot",
                f"ACTIVITY_DELTA for '{message_id}' before any ACTIVITY_SNAPSHOT created "
                f"that activity: the snapshot is the delta's baseline",
            )
        return known

    def _learn(self, event: Event) -> None:
        """Track what the duties need beyond the conversation, once ``event`` is accepted."""
        if isinstance(event, g.RunStartedEvent):
            self._phase = "running"
            self._run_ids = (event.thread_id, event.run_id)
            self._announced = set()
        elif isinstance(event, g.RunFinishedEvent):
            self._phase = "finished"
        elif isinstance(event, g.RunErrorEvent):
            self._phase = "errored"
        elif isinstance(event, g.SubagentStartedEvent):
            self._announced.add(event.subagent_run_id)
        elif isinstance(event, g.StateSnapshotEvent):
            self._baseline = True

    # ---- run lifecycle -------------------------------------------------------------------

    def run_started(
        self,
        *,
        thread_id: str | None = None,
        run_id: str | None = None,
        parent_run_id: str | None = None,
        input: RunAgentInput | None = None,
        protocol_version: str | None = PROTOCOL_VERSION,
        metadata: dict[str, Any] | None = None,
    ) -> g.RunStartedEvent:
        """RUN_STARTED; the ids default to the run input's.

        Args:
            thread_id: the conversation; default the run input's ``threadId``.
            run_id: the run; default the run input's ``runId``.
            parent_run_id: the run that spawned this one, if any.
            input: the run input to echo back, if wanted.
            protocol_version: the version this producer speaks (``None`` leaves it out).
            metadata: event metadata.
        """
        source = self.run_input
        if thread_id is None and source is not None:
            thread_id = source.thread_id
        if run_id is None and source is not None:
            run_id = source.run_id
        if not thread_id or not run_id:
            raise UsageError(
                "producer.missing-id",
                "RUN_STARTED needs a threadId and a runId: pass them, or give the "
                "producer the run input",
            )
        return self._send(
            g.RunStartedEvent(
                thread_id=thread_id,
                run_id=run_id,
                parent_run_id=parent_run_id,
                input=input,
                protocol_version=protocol_version,
                metadata=metadata,
            )
        )

    def run_finished(
        self,
        *,
        outcome: RunOutcome | None = None,
        result: Any = None,
        usage: list[g.TokenUsage] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.RunFinishedEvent:
        """RUN_FINISHED for the current run (its thread and run ids are filled in).

        Args:
            outcome: absent (success), ``"success"``, ``"cancelled"``, or a typed
                outcome (an interrupt outcome lists its interrupts).
            result: the run's return value (any JSON), if it has one.
            usage: token usage, one entry per provider and model.
            metadata: event metadata.
        """
        if self._run_ids is None:
            raise UsageError("run.not-started", "Cannot send 'RUN_FINISHED': no run was started")
        thread_id, run_id = self._run_ids
        return self._send(
            g.RunFinishedEvent(
                thread_id=thread_id,
                run_id=run_id,
                outcome=_RUN_OUTCOMES[outcome]() if isinstance(outcome, str) else outcome,
                result=result,
                usage=usage,
                metadata=metadata,
            )
        )

    def run_error(
        self,
        message: str,
        *,
        code: str | None = None,
        usage: list[g.TokenUsage] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.RunErrorEvent:
        """RUN_ERROR: the run failed (still accepted after the producer failed)."""
        return self._send(
            g.RunErrorEvent(message=message, code=code, usage=usage, metadata=metadata)
        )

    def run(self, **started: Any) -> RunScope:
        """RUN_STARTED now (``started``: :meth:`run_started`'s arguments); a context manager
        that sends RUN_FINISHED on exit, or RUN_ERROR when the block raises."""
        self.run_started(**started)
        return RunScope(self)

    # ---- text messages -------------------------------------------------------------------

    def text_message_start(
        self,
        message_id: str | None = None,
        *,
        role: g.TextMessageRole | None = "assistant",
        name: str | None = None,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.TextMessageStartEvent:
        """TEXT_MESSAGE_START (``role=None`` leaves it out, which means assistant)."""
        return self._send(
            g.TextMessageStartEvent(
                message_id=message_id if message_id is not None else self._new_id("msg"),
                role=role,
                name=name,
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    def text_message_content(
        self,
        message_id: str,
        delta: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.TextMessageContentEvent:
        """TEXT_MESSAGE_CONTENT."""
        return self._send(
            g.TextMessageContentEvent(
                message_id=message_id,
                delta=delta,
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    def text_message_end(
        self,
        message_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.TextMessageEndEvent:
        """TEXT_MESSAGE_END."""
        return self._send(
            g.TextMessageEndEvent(
                message_id=message_id, metadata=metadata, subagent_run_id=subagent_run_id
            )
        )

    def text_message(
        self,
        message_id: str | None = None,
        *,
        role: g.TextMessageRole | None = "assistant",
        name: str | None = None,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> TextMessageWriter:
        """TEXT_MESSAGE_START now; the returned writer streams the content and ends it.

        Example::

            with producer.text_message() as message:
                message.content("Hello, ")
                message.content("world")
        """
        start = self.text_message_start(
            message_id, role=role, name=name, metadata=metadata, subagent_run_id=subagent_run_id
        )
        return TextMessageWriter(self, start)

    def text(
        self,
        content: str | Iterable[str],
        *,
        message_id: str | None = None,
        role: g.TextMessageRole | None = "assistant",
        name: str | None = None,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> list[Event]:
        """A whole text message: START, one CONTENT per non-empty piece, END."""
        pieces = [content] if isinstance(content, str) else list(content)
        writer = self.text_message(
            message_id, role=role, name=name, metadata=metadata, subagent_run_id=subagent_run_id
        )
        out: list[Event] = [writer.start_event]
        out += [writer.content(piece) for piece in pieces if piece]
        out.append(writer.end())
        return out

    # ---- tool calls ----------------------------------------------------------------------

    def tool_call_start(
        self,
        tool_call_name: str,
        *,
        tool_call_id: str | None = None,
        parent_message_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ToolCallStartEvent:
        """TOOL_CALL_START."""
        return self._send(
            g.ToolCallStartEvent(
                tool_call_id=tool_call_id if tool_call_id is not None else self._new_id("call"),
                tool_call_name=tool_call_name,
                parent_message_id=parent_message_id,
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    def tool_call_args(
        self,
        tool_call_id: str,
        delta: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ToolCallArgsEvent:
        """TOOL_CALL_ARGS (a piece of the arguments' text)."""
        return self._send(
            g.ToolCallArgsEvent(
                tool_call_id=tool_call_id,
                delta=delta,
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    def tool_call_end(
        self,
        tool_call_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ToolCallEndEvent:
        """TOOL_CALL_END."""
        return self._send(
            g.ToolCallEndEvent(
                tool_call_id=tool_call_id, metadata=metadata, subagent_run_id=subagent_run_id
            )
        )

    def tool_call(
        self,
        tool_call_name: str,
        *,
        args: Any = None,
        tool_call_id: str | None = None,
        parent_message_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> ToolCallWriter:
        """TOOL_CALL_START now (and TOOL_CALL_ARGS when ``args`` is given: a string as is,
        any other JSON value encoded); the writer streams more arguments, ends the call
        and reports its result.

        Example::

            with producer.tool_call("search", args={"query": "AG-UI"}) as call:
                pass
            call.result("3 results")
        """
        start = self.tool_call_start(
            tool_call_name,
            tool_call_id=tool_call_id,
            parent_message_id=parent_message_id,
            metadata=metadata,
            subagent_run_id=subagent_run_id,
        )
        writer = ToolCallWriter(self, start.tool_call_id, subagent_run_id)
        if args is not None:
            writer.args(_json_text(args))
        return writer

    def tool_result(
        self,
        tool_call_id: str,
        content: Any,
        *,
        message_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ToolCallResultEvent:
        """TOOL_CALL_RESULT: the tool message for a call.

        Args:
            tool_call_id: the call answered.
            content: a string, a list of content parts (typed or wire JSON), or any
                other JSON value (sent as its JSON text).
            message_id: the tool message's id (generated when omitted).
            metadata: event metadata (merged onto the tool message).
            subagent_run_id: attribution.
        """
        if isinstance(content, list):
            content = _typed(content, list[g.ContentPart])
        elif not isinstance(content, str):
            content = _json_text(content)
        return self._send(
            g.ToolCallResultEvent(
                message_id=message_id if message_id is not None else self._new_id("tool-result"),
                tool_call_id=tool_call_id,
                content=content,
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    # ---- reasoning -----------------------------------------------------------------------

    def reasoning_start(
        self,
        message_id: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ReasoningStartEvent:
        """REASONING_START (opens a reasoning span)."""
        return self._send(
            g.ReasoningStartEvent(
                message_id=message_id if message_id is not None else self._new_id("reasoning"),
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    def reasoning_end(
        self,
        message_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ReasoningEndEvent:
        """REASONING_END (closes a reasoning span)."""
        return self._send(
            g.ReasoningEndEvent(
                message_id=message_id, metadata=metadata, subagent_run_id=subagent_run_id
            )
        )

    def reasoning(
        self,
        message_id: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> ReasoningSpan:
        """REASONING_START now; the span opens its reasoning message and ends with
        REASONING_END (on exit when used as a context manager)."""
        start = self.reasoning_start(message_id, metadata=metadata, subagent_run_id=subagent_run_id)
        return ReasoningSpan(self, start.message_id, subagent_run_id)

    def reasoning_message_start(
        self,
        message_id: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ReasoningMessageStartEvent:
        """REASONING_MESSAGE_START."""
        return self._send(
            g.ReasoningMessageStartEvent(
                message_id=message_id if message_id is not None else self._new_id("reasoning"),
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    def reasoning_message_content(
        self,
        message_id: str,
        delta: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ReasoningMessageContentEvent:
        """REASONING_MESSAGE_CONTENT."""
        return self._send(
            g.ReasoningMessageContentEvent(
                message_id=message_id,
                delta=delta,
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    def reasoning_message_end(
        self,
        message_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ReasoningMessageEndEvent:
        """REASONING_MESSAGE_END."""
        return self._send(
            g.ReasoningMessageEndEvent(
                message_id=message_id, metadata=metadata, subagent_run_id=subagent_run_id
            )
        )

    def reasoning_message(
        self,
        message_id: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> ReasoningMessageWriter:
        """REASONING_MESSAGE_START now; the writer streams the content and ends it."""
        start = self.reasoning_message_start(
            message_id, metadata=metadata, subagent_run_id=subagent_run_id
        )
        return ReasoningMessageWriter(self, start.message_id, subagent_run_id)

    def reasoning_encrypted_value(
        self,
        subtype: g.ReasoningEncryptedValueSubtype,
        entity_id: str,
        encrypted_value: str,
        *,
        encrypted_value_type: str | None = None,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ReasoningEncryptedValueEvent:
        """REASONING_ENCRYPTED_VALUE for a message or tool call the client knows."""
        return self._send(
            g.ReasoningEncryptedValueEvent(
                subtype=subtype,
                entity_id=entity_id,
                encrypted_value=encrypted_value,
                encrypted_value_type=encrypted_value_type,
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    # ---- steps ---------------------------------------------------------------------------

    def step_started(
        self,
        step_name: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.StepStartedEvent:
        """STEP_STARTED."""
        return self._send(
            g.StepStartedEvent(
                step_name=step_name, metadata=metadata, subagent_run_id=subagent_run_id
            )
        )

    def step_finished(
        self,
        step_name: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.StepFinishedEvent:
        """STEP_FINISHED (with the same attribution as its start)."""
        return self._send(
            g.StepFinishedEvent(
                step_name=step_name, metadata=metadata, subagent_run_id=subagent_run_id
            )
        )

    def step(
        self,
        step_name: str,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> StepScope:
        """STEP_STARTED now; STEP_FINISHED from the scope (on exit as a context manager)."""
        self.step_started(step_name, metadata=metadata, subagent_run_id=subagent_run_id)
        return StepScope(self, step_name, subagent_run_id)

    # ---- subagents -----------------------------------------------------------------------

    def subagent_started(
        self,
        name: str,
        *,
        subagent_run_id: str | None = None,
        description: str | None = None,
        parent_subagent_run_id: str | None = None,
        parent_tool_call_id: str | None = None,
        parent_message_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.SubagentStartedEvent:
        """SUBAGENT_STARTED: announces an invocation before anything attributed to it."""
        return self._send(
            g.SubagentStartedEvent(
                subagent_run_id=(
                    subagent_run_id if subagent_run_id is not None else self._new_id("subagent")
                ),
                name=name,
                description=description,
                parent_subagent_run_id=parent_subagent_run_id,
                parent_tool_call_id=parent_tool_call_id,
                parent_message_id=parent_message_id,
                metadata=metadata,
            )
        )

    def subagent_finished(
        self,
        subagent_run_id: str,
        *,
        outcome: SubagentOutcome | None = None,
        result: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.SubagentFinishedEvent:
        """SUBAGENT_FINISHED (``outcome``: absent, ``"success"``, ``"suspended"`` or typed)."""
        return self._send(
            g.SubagentFinishedEvent(
                subagent_run_id=subagent_run_id,
                outcome=_SUBAGENT_OUTCOMES[outcome]() if isinstance(outcome, str) else outcome,
                result=result,
                metadata=metadata,
            )
        )

    def subagent_error(
        self,
        subagent_run_id: str,
        message: str,
        *,
        code: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.SubagentErrorEvent:
        """SUBAGENT_ERROR."""
        return self._send(
            g.SubagentErrorEvent(
                subagent_run_id=subagent_run_id, message=message, code=code, metadata=metadata
            )
        )

    def subagent(
        self,
        name: str,
        *,
        subagent_run_id: str | None = None,
        description: str | None = None,
        parent_subagent_run_id: str | None = None,
        parent_tool_call_id: str | None = None,
        parent_message_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SubagentScope:
        """SUBAGENT_STARTED now; the scope finishes the invocation (on exit as a context
        manager: SUBAGENT_FINISHED, or SUBAGENT_ERROR when the block raises).

        Example::

            with producer.subagent("researcher") as sub:
                producer.text("Found it.", subagent_run_id=sub.subagent_run_id)
        """
        start = self.subagent_started(
            name,
            subagent_run_id=subagent_run_id,
            description=description,
            parent_subagent_run_id=parent_subagent_run_id,
            parent_tool_call_id=parent_tool_call_id,
            parent_message_id=parent_message_id,
            metadata=metadata,
        )
        return SubagentScope(self, start.subagent_run_id, name)

    # ---- state ---------------------------------------------------------------------------

    def state_snapshot(
        self,
        snapshot: Any,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.StateSnapshotEvent:
        """STATE_SNAPSHOT: replaces the client's state (any JSON value)."""
        return self._send(
            g.StateSnapshotEvent(
                snapshot=snapshot, metadata=metadata, subagent_run_id=subagent_run_id
            )
        )

    def state_delta(
        self,
        delta: PatchLike,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.StateDeltaEvent:
        """STATE_DELTA: an RFC 6902 patch against the client's state (it must apply)."""
        return self._send(
            g.StateDeltaEvent(
                delta=_typed(list(delta), g.JsonPatch),
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    def state_update(
        self,
        new_state: Any,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.StateDeltaEvent | None:
        """STATE_DELTA with the minimal patch from the current state to ``new_state``.

        Returns:
            The delta, or ``None`` (nothing emitted) when the state is already equal.
        """
        if self._state is _NO_STATE:  # checked before diffing against a state nobody holds
            raise UsageError(
                "producer.state-no-baseline",
                "state_update() without a baseline: the producer has no run input and no "
                "state, so send a STATE_SNAPSHOT first",
            )
        dumps(new_state)
        ops = make_patch(self._state, thaw(new_state))
        if not ops:
            return None
        return self.state_delta(ops, metadata=metadata, subagent_run_id=subagent_run_id)

    # ---- activities ----------------------------------------------------------------------

    def activity_snapshot(
        self,
        message_id: str | None,
        activity_type: str,
        content: dict[str, Any],
        *,
        replace: bool | None = None,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ActivitySnapshotEvent:
        """ACTIVITY_SNAPSHOT: creates the activity message, or replaces its content and
        type (``replace=False``: leaves an existing one as it stands)."""
        return self._send(
            g.ActivitySnapshotEvent(
                message_id=message_id if message_id is not None else self._new_id("activity"),
                activity_type=activity_type,
                content=content,
                replace=replace,
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            )
        )

    def activity_delta(
        self,
        message_id: str,
        patch: PatchLike,
        *,
        activity_type: str | None = None,
        retype: bool = False,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ActivityDeltaEvent:
        """ACTIVITY_DELTA: an RFC 6902 patch against the activity's content.

        Args:
            message_id: the activity, created by an earlier snapshot.
            patch: the operations; applied to the result, the content stays an object.
            activity_type: default the activity's current type; another type needs
                ``retype=True``.
            retype: change the activity's type on purpose.
            metadata: event metadata.
            subagent_run_id: attribution (must agree with the activity's owner).
        """
        return self._send(
            g.ActivityDeltaEvent(
                message_id=message_id,
                activity_type=self._activity_type(message_id, activity_type),
                patch=_typed(list(patch), g.JsonPatch),
                metadata=metadata,
                subagent_run_id=subagent_run_id,
            ),
            retype=retype,
        )

    def activity_update(
        self,
        message_id: str,
        new_content: dict[str, Any],
        *,
        activity_type: str | None = None,
        retype: bool = False,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.ActivityDeltaEvent | None:
        """ACTIVITY_DELTA with the minimal patch from the activity's content to ``new_content``.

        Returns:
            The delta, or ``None`` (nothing emitted) when neither content nor type change.
        """
        known = self._known_activity(message_id)
        dumps(new_content)
        ops = make_patch(known.content, thaw(new_content))
        if not ops and activity_type in (None, known.activity_type):
            return None
        return self.activity_delta(
            message_id,
            ops,
            activity_type=activity_type,
            retype=retype,
            metadata=metadata,
            subagent_run_id=subagent_run_id,
        )

    def _activity_type(self, message_id: str, activity_type: str | None) -> str:
        known = self._known_activity(message_id)
        return known.activity_type if activity_type is None else activity_type

    # ---- everything else -----------------------------------------------------------------

    def messages_snapshot(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        metadata: dict[str, Any] | None = None,
    ) -> g.MessagesSnapshotEvent:
        """MESSAGES_SNAPSHOT (typed messages or their wire JSON)."""
        return self._send(
            g.MessagesSnapshotEvent(
                messages=_typed(list(messages), list[Message]), metadata=metadata
            )
        )

    def custom(
        self,
        name: str,
        value: Any,
        *,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.CustomEvent:
        """CUSTOM: an application event (any JSON ``value``)."""
        return self._send(
            g.CustomEvent(
                name=name, value=value, metadata=metadata, subagent_run_id=subagent_run_id
            )
        )

    def raw(
        self,
        event: Any,
        *,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        subagent_run_id: str | None = None,
    ) -> g.RawEvent:
        """RAW: an event from an external system, passed through (any JSON)."""
        return self._send(
            g.RawEvent(
                event=event, source=source, metadata=metadata, subagent_run_id=subagent_run_id
            )
        )


# ---- handles ----------------------------------------------------------------------------


class _Scope:
    """Something opened by a helper that must be closed; a context manager.

    On exit the scope closes what is still open — also when the block raised, unless
    the producer failed — and an error while closing after the block raised never
    hides the block's exception.
    """

    __slots__ = ("_open", "producer")

    def __init__(self, producer: RunProducer) -> None:
        self.producer = producer
        self._open = True

    @property
    def open(self) -> bool:
        """Whether the scope still has to be closed."""
        return self._open

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        producer = self.producer
        if not self._open or producer.failure is not None or producer.closed:
            return
        if exc is None:
            self._close()
            return
        with contextlib.suppress(AgentProtoError):  # the block's own exception is the one to see
            self._close_on_error(exc)

    def _close(self) -> None:
        raise NotImplementedError

    def _close_on_error(self, exc: BaseException) -> None:
        self._close()


class TextMessageWriter(_Scope):
    """An open text message (from :meth:`RunProducer.text_message`).

    Attributes:
        message_id: the message's id.
        subagent_run_id: its owner (repeated on every continuation).
        start_event: the TEXT_MESSAGE_START that opened it.
    """

    __slots__ = ("message_id", "start_event", "subagent_run_id")

    def __init__(self, producer: RunProducer, start_event: g.TextMessageStartEvent) -> None:
        super().__init__(producer)
        self.start_event = start_event
        self.message_id = start_event.message_id
        self.subagent_run_id = start_event.subagent_run_id

    def __enter__(self) -> TextMessageWriter:
        return self

    def content(
        self, delta: str, *, metadata: dict[str, Any] | None = None
    ) -> g.TextMessageContentEvent:
        """TEXT_MESSAGE_CONTENT: the next piece of text."""
        return self.producer.text_message_content(
            self.message_id, delta, metadata=metadata, subagent_run_id=self.subagent_run_id
        )

    def end(self, *, metadata: dict[str, Any] | None = None) -> g.TextMessageEndEvent:
        """TEXT_MESSAGE_END."""
        event = self.producer.text_message_end(
            self.message_id, metadata=metadata, subagent_run_id=self.subagent_run_id
        )
        self._open = False
        return event

    def _close(self) -> None:
        self.end()


class ReasoningMessageWriter(_Scope):
    """An open reasoning message (from :meth:`RunProducer.reasoning_message`)."""

    __slots__ = ("message_id", "subagent_run_id")

    def __init__(self, producer: RunProducer, message_id: str, subagent_run_id: str | None) -> None:
        super().__init__(producer)
        self.message_id = message_id
        self.subagent_run_id = subagent_run_id

    def __enter__(self) -> ReasoningMessageWriter:
        return self

    def content(
        self, delta: str, *, metadata: dict[str, Any] | None = None
    ) -> g.ReasoningMessageContentEvent:
        """REASONING_MESSAGE_CONTENT."""
        return self.producer.reasoning_message_content(
            self.message_id, delta, metadata=metadata, subagent_run_id=self.subagent_run_id
        )

    def end(self, *, metadata: dict[str, Any] | None = None) -> g.ReasoningMessageEndEvent:
        """REASONING_MESSAGE_END."""
        event = self.producer.reasoning_message_end(
            self.message_id, metadata=metadata, subagent_run_id=self.subagent_run_id
        )
        self._open = False
        return event

    def _close(self) -> None:
        self.end()


class ReasoningSpan(_Scope):
    """An open reasoning span (from :meth:`RunProducer.reasoning`)."""

    __slots__ = ("message_id", "subagent_run_id")

    def __init__(self, producer: RunProducer, message_id: str, subagent_run_id: str | None) -> None:
        super().__init__(producer)
        self.message_id = message_id
        self.subagent_run_id = subagent_run_id

    def __enter__(self) -> ReasoningSpan:
        return self

    def message(self, *, metadata: dict[str, Any] | None = None) -> ReasoningMessageWriter:
        """REASONING_MESSAGE_START for the span's ``messageId``; returns its writer."""
        return self.producer.reasoning_message(
            self.message_id, metadata=metadata, subagent_run_id=self.subagent_run_id
        )

    def end(self, *, metadata: dict[str, Any] | None = None) -> g.ReasoningEndEvent:
        """REASONING_END."""
        event = self.producer.reasoning_end(
            self.message_id, metadata=metadata, subagent_run_id=self.subagent_run_id
        )
        self._open = False
        return event

    def _close(self) -> None:
        self.end()


class ToolCallWriter(_Scope):
    """An open tool call (from :meth:`RunProducer.tool_call`)."""

    __slots__ = ("subagent_run_id", "tool_call_id")

    def __init__(
        self, producer: RunProducer, tool_call_id: str, subagent_run_id: str | None
    ) -> None:
        super().__init__(producer)
        self.tool_call_id = tool_call_id
        self.subagent_run_id = subagent_run_id

    def __enter__(self) -> ToolCallWriter:
        return self

    def args(self, delta: str, *, metadata: dict[str, Any] | None = None) -> g.ToolCallArgsEvent:
        """TOOL_CALL_ARGS: the next piece of the arguments' text."""
        return self.producer.tool_call_args(
            self.tool_call_id, delta, metadata=metadata, subagent_run_id=self.subagent_run_id
        )

    def end(self, *, metadata: dict[str, Any] | None = None) -> g.ToolCallEndEvent:
        """TOOL_CALL_END."""
        event = self.producer.tool_call_end(
            self.tool_call_id, metadata=metadata, subagent_run_id=self.subagent_run_id
        )
        self._open = False
        return event

    def result(
        self,
        content: Any,
        *,
        message_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.ToolCallResultEvent:
        """TOOL_CALL_RESULT for this call (ending the call first if it is still open)."""
        if self._open:
            self.end()
        return self.producer.tool_result(
            self.tool_call_id,
            content,
            message_id=message_id,
            metadata=metadata,
            subagent_run_id=self.subagent_run_id,
        )

    def _close(self) -> None:
        self.end()


class StepScope(_Scope):
    """An open step (from :meth:`RunProducer.step`)."""

    __slots__ = ("step_name", "subagent_run_id")

    def __init__(self, producer: RunProducer, step_name: str, subagent_run_id: str | None) -> None:
        super().__init__(producer)
        self.step_name = step_name
        self.subagent_run_id = subagent_run_id

    def __enter__(self) -> StepScope:
        return self

    def finish(self, *, metadata: dict[str, Any] | None = None) -> g.StepFinishedEvent:
        """STEP_FINISHED."""
        event = self.producer.step_finished(
            self.step_name, metadata=metadata, subagent_run_id=self.subagent_run_id
        )
        self._open = False
        return event

    def _close(self) -> None:
        self.finish()


class SubagentScope(_Scope):
    """An active subagent invocation (from :meth:`RunProducer.subagent`).

    Attributes:
        subagent_run_id: the invocation's id; pass it as ``subagent_run_id`` to
            attribute events to it.
        name: the subagent's name.
    """

    __slots__ = ("name", "subagent_run_id")

    def __init__(self, producer: RunProducer, subagent_run_id: str, name: str) -> None:
        super().__init__(producer)
        self.subagent_run_id = subagent_run_id
        self.name = name

    def __enter__(self) -> SubagentScope:
        return self

    def finish(
        self,
        *,
        outcome: SubagentOutcome | None = None,
        result: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.SubagentFinishedEvent:
        """SUBAGENT_FINISHED."""
        event = self.producer.subagent_finished(
            self.subagent_run_id, outcome=outcome, result=result, metadata=metadata
        )
        self._open = False
        return event

    def error(
        self, message: str, *, code: str | None = None, metadata: dict[str, Any] | None = None
    ) -> g.SubagentErrorEvent:
        """SUBAGENT_ERROR."""
        event = self.producer.subagent_error(
            self.subagent_run_id, message, code=code, metadata=metadata
        )
        self._open = False
        return event

    def _close(self) -> None:
        self.finish()

    def _close_on_error(self, exc: BaseException) -> None:
        self.error(
            f"subagent '{self.name}' failed ({type(exc).__name__})", code="subagent.exception"
        )


class RunScope(_Scope):
    """The current run (from :meth:`RunProducer.run`): RUN_FINISHED on a clean exit,
    RUN_ERROR when the block raises."""

    __slots__ = ()

    def __enter__(self) -> RunScope:
        return self

    def finish(
        self,
        *,
        outcome: RunOutcome | None = None,
        result: Any = None,
        usage: list[g.TokenUsage] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.RunFinishedEvent:
        """RUN_FINISHED."""
        event = self.producer.run_finished(
            outcome=outcome, result=result, usage=usage, metadata=metadata
        )
        self._open = False
        return event

    def error(
        self, message: str, *, code: str | None = None, metadata: dict[str, Any] | None = None
    ) -> g.RunErrorEvent:
        """RUN_ERROR."""
        event = self.producer.run_error(message, code=code, metadata=metadata)
        self._open = False
        return event

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        producer = self.producer
        if not self._open or producer.closed or producer.phase != "running":
            self._open = False
            return
        if exc is None:
            if producer.failure is None:
                self.finish()
            return
        # a RUN_ERROR is accepted even after the producer failed; an error sending it
        # must not hide the block's own exception
        with contextlib.suppress(AgentProtoError):
            self.error(f"the run failed ({type(exc).__name__})", code="run.exception")

    def _close(self) -> None:
        self.finish()

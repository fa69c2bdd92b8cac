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
   :class:`~agentproto.agui._verify.verifier.Verifier` (after
   :class:`~agentproto.agui._consume.chunks.ChunkExpander` for chunk events), checks RUN_STARTED
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

Where the schema has a typed value (an outcome, interrupts, token usage, the echoed
run input, a patch, messages, content parts), a helper takes the generated class or
its wire JSON: a dict (or a list holding dicts) is checked and built through the
converter, so the emitted event holds the typed value, never a raw dict; a malformed
one is a :class:`~agentproto.SchemaError` located in the event (``/outcome/...``).
``emit`` holds a typed event to the same rule: one carrying wire JSON where the schema
has a typed value is emitted as its typed, checked copy.

The helpers fill in what the caller should not have to repeat: ids (generated when
omitted), the thread and run ids of the run input, ``protocolVersion`` on
RUN_STARTED, the current ``activityType`` on activity deltas, the owner on the
continuations of an attributed message or tool call. ``state_update`` and
``activity_update`` compute a minimal RFC 6902 patch from the producer's copy to the
new value (:func:`agentproto._core.patch.apply.make_patch`).

Streaming items and brackets come back as handles (:class:`TextMessageWriter`,
:class:`ToolCallWriter`, :class:`ReasoningMessageWriter`, :class:`ReasoningSpan`,
:class:`StepScope`, :class:`SubagentScope`, :class:`RunScope`): their START event is
emitted when the helper is called, the handle emits the continuations, and used as a
context manager it closes what it opened on exit — also when the block raises (a
subagent then ends with SUBAGENT_ERROR, a run with RUN_ERROR), unless the producer
has failed, and without hiding the block's exception.

Error codes
-----------
Besides the sequencing codes of :mod:`agentproto.agui._verify.verifier` and the reducer's
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
``producer.client-tool-answered``   a TOOL_CALL_RESULT (or a tool message in a
                                    MESSAGES_SNAPSHOT) answering a call to one of the run
                                    input's ``tools``: the client executes and answers them
``producer.reserved-metadata-key``  a ``metadata`` object of the event carries the key
                                    ``ag-ui``, which the protocol reserves for its own use
                                    (an echoed ``RUN_STARTED.input`` is the client's and
                                    is not looked at)
``version.not-declarable``          RUN_STARTED declaring a ``protocolVersion`` that is not
                                    ``MAJOR.MINOR`` (``"draft"`` is never declared)
``producer.failed``                 anything but RUN_ERROR after the producer failed
``producer.closed``                 anything after :meth:`RunProducer.close`
==================================  ===========================================================
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import (
    Any,
    Final,
    Literal,
    TypeAlias,
    TypedDict,
    TypeVar,
    Unpack,
    get_args,
)

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import (
    AgentProtoError,
    ProtocolError,
    SchemaError,
    UsageError,
)
from agentproto._core.json.codec import check_value, dumps
from agentproto._core.patch.apply import make_patch
from agentproto._core.readonly import thaw
from agentproto._core.unset import UNSET
from agentproto.agui import _generated as g
from agentproto.agui._consume.chunks import ChunkExpander
from agentproto.agui._generated import Event, Interrupt, Message, ResumeEntry, RunAgentInput
from agentproto.agui._produce.handles import (
    ReasoningMessageWriter,
    ReasoningSpan,
    RunScope,
    StepScope,
    SubagentScope,
    TextMessageWriter,
    ToolCallWriter,
)
from agentproto.agui._protocol.compat import check_declarable, check_peer_version, parse_version
from agentproto.agui._protocol.kinds import ATTRIBUTED, attribute, kinds
from agentproto.agui._protocol.wire import (
    CONVERTER,
    json_text,
    load_as,
    parse_event,
    parse_run_input,
)
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._thread.frontend_tools import pending_outcome, refuse_client_tool_answers
from agentproto.agui._thread.interrupts import OpenInterrupts, accept_resume
from agentproto.agui._thread.run_input import PROTOCOL_VERSION
from agentproto.agui._verify.verifier import Verifier

__all__ = [
    "NO_STATE",
    "RESERVED_METADATA_KEY",
    "Attribution",
    "PatchLike",
    "Phase",
    "RunFinish",
    "RunOutcome",
    "RunPhase",
    "RunProducer",
    "Sink",
    "SubagentOutcome",
    "SubagentStart",
]

RunPhase: TypeAlias = Literal["idle", "running", "finished", "errored"]
"""Where the producer's stream stands: before any run, in a run, after RUN_FINISHED,
after RUN_ERROR."""
Phase: TypeAlias = RunPhase
"""Deprecated alias of :data:`RunPhase`, kept for one release (``agentproto.acp`` has a
``Phase`` too, :data:`~agentproto.acp.TurnPhase`, which means something else)."""
Sink: TypeAlias = Callable[[Event], object]

E = TypeVar("E", bound=Event)

_EVENT_CLASSES: Final = frozenset(get_args(Event))
# The events whose duty is about what the client holds (a baseline and a patch that
# applies, content that stays an object, an id that is free): the reducer checks them
# before anything changes. Every other event's reducer warning is found after sequencing.
_PRECHECKED: Final = kinds("STATE_DELTA", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "TOOL_CALL_RESULT")
_NEVER_NULL: Final = ("metadata", "subagentRunId")
_OWN_VERSION: Final = parse_version(PROTOCOL_VERSION) or (1, 0)

RESERVED_METADATA_KEY: Final = "ag-ui"
"""The metadata key the protocol reserves for its own use (the draft's metadata page)."""
# A field holding what the client sent, echoed back: not the producer's to check.
_ECHOED: Final[dict[type, str]] = {g.RunStartedEvent: attribute(g.RunStartedEvent, "input")}


def _reserved_key(obj: Any, path: str, skip: str | None = None) -> str | None:
    """The wire path of the first ``metadata`` object under ``obj`` (a typed value)
    that carries the reserved key, or ``None``. Only typed members are walked: open
    material (state, content, ``CUSTOM.value``, ...) is plain JSON and is data."""
    for field in attrs.fields(type(obj)):
        if field.name == skip:
            continue
        value = getattr(obj, field.name)
        wire = f"{path}/{field.metadata.get('wire', field.name)}"
        if field.metadata.get("wire") == "metadata":
            if isinstance(value, Mapping) and RESERVED_METADATA_KEY in value:
                return wire
            continue
        items = enumerate(value) if isinstance(value, list) else ((None, value),)
        for index, item in items:
            if attrs.has(type(item)):
                found = _reserved_key(item, wire if index is None else f"{wire}/{index}")
                if found is not None:
                    return found
    return None


def _random_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def _describe(owner: str | None) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


class Attribution(TypedDict, total=False):
    """The keyword arguments every message event takes besides its own fields.

    Attributes:
        metadata: event metadata (merged onto the item it streams).
        subagent_run_id: the subagent invocation the event belongs to (its owner).
    """

    metadata: dict[str, Any] | None
    subagent_run_id: str | None


PatchLike: TypeAlias = Sequence[g.JsonPatchOperation | Mapping[str, Any]]
"""A JSON Patch as typed operations or wire dicts (``{"op": ..., "path": ...}``)."""
RunOutcome: TypeAlias = g.RunFinishedOutcome | Literal["success", "cancelled"] | Mapping[str, Any]
"""A RUN_FINISHED outcome: typed, its wire JSON (checked and built as the typed
outcome), or the tag of an outcome that carries nothing else."""
SubagentOutcome: TypeAlias = (
    g.SubagentFinishedOutcome | Literal["success", "suspended"] | Mapping[str, Any]
)
"""A SUBAGENT_FINISHED outcome: typed, its wire JSON (checked and built as the typed
outcome), or the tag of an outcome that carries nothing else."""


class RunFinish(TypedDict, total=False):
    """The keyword arguments of RUN_FINISHED besides its outcome (``run_finished()``).

    Attributes:
        result: the run's return value (any JSON), if it has one.
        usage: token usage, one entry per provider and model (typed or wire JSON).
        metadata: event metadata.
    """

    result: Any
    usage: Sequence[g.TokenUsage | Mapping[str, Any]] | None
    metadata: dict[str, Any] | None


class SubagentStart(TypedDict, total=False):
    """The keyword arguments of SUBAGENT_STARTED besides its name and id (``subagent()``).

    Attributes:
        description: the subagent's description.
        parent_subagent_run_id: the invocation that started this one, if any.
        parent_tool_call_id: the tool call that started it, if any.
        parent_message_id: the message that started it, if any.
        metadata: event metadata.
    """

    description: str | None
    parent_subagent_run_id: str | None
    parent_tool_call_id: str | None
    parent_message_id: str | None
    metadata: dict[str, Any] | None


NO_STATE: Final[Any] = object()
"""The producer's state before any baseline (no run input, no ``state=``, no snapshot)."""


def _bare_members(union: Any) -> dict[str, Callable[[], Any]]:
    """The members of a tagged union that need no argument, by their ``type`` tag."""
    table: dict[str, Callable[[], Any]] = {}
    for member in get_args(union):
        if all(field.default is not attrs.NOTHING for field in attrs.fields(member)):
            table[member().type] = member
    return table


_RUN_OUTCOMES: Final = _bare_members(g.RunFinishedOutcome)
_SUBAGENT_OUTCOMES: Final = _bare_members(g.SubagentFinishedOutcome)


def _typed(value: Any, tp: Any, location: str) -> Any:
    """``value`` (typed, wire JSON, or a mix) checked and built as ``tp`` through the
    converter: what a helper puts in an event where the schema has a typed value.

    Raises:
        SchemaError: ``value`` does not fit ``tp``; its location (and every problem's)
            is under ``location``, the field's place in the event.
    """
    try:
        return load_as(value, tp)
    except SchemaError as exc:
        raise exc.at(location) from None


def _usage(finish: Mapping[str, Any]) -> dict[str, Any]:
    """``finish`` with its ``usage`` typed (see :func:`_typed`)."""
    usage = finish.get("usage")
    if usage is None:
        return dict(finish)
    return {**finish, "usage": _typed(list(usage), list[g.TokenUsage], "/usage")}


def _check_interrupt_ids(interrupts: Sequence[g.Interrupt]) -> None:
    """Refuse an interrupt outcome whose interrupts share an id (a consumer fails it)."""
    seen: set[str] = set()
    twice: dict[str, None] = {}
    for interrupt in interrupts:
        if interrupt.id in seen:
            twice[interrupt.id] = None
        seen.add(interrupt.id)
    if twice:
        raise UsageError(
            "interrupt.duplicate-id",
            f"RUN_FINISHED has several interrupts with the id {', '.join(map(repr, twice))}: "
            f"interrupt ids are unique within a run",
        )


def _outcome(
    table: Mapping[str, Callable[[], Any]], outcome: Any, tp: Any, event: str, hint: str = ""
) -> Any:
    """A typed outcome (``tp``) from a shorthand tag, wire JSON or a typed outcome."""
    if outcome is None:
        return None
    if not isinstance(outcome, str):
        return _typed(outcome, tp, "/outcome")
    member = table.get(outcome)
    if member is None:
        raise UsageError(
            "producer.bad-argument",
            f"{event} outcome {outcome!r} is not one of {sorted(table)} "
            f"(or a typed outcome, or its wire JSON){hint}",
        )
    return member()


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
        interrupts: the interrupts the agent's previous run on this thread ended
            with (``()`` when it did not end interrupted), from the agent's own
            record: the run input's ``resume`` must then answer each once and
            resolve none judged expired (an :class:`OpenInterrupts` brings its
            clock). ``None``: no record, only duplicate entries are refused.

    Attributes:
        run_input: the typed run input, if any.
        conversation: the producer's copy of what the client will hold (messages,
            activities, state), updated by every emitted event.
        events: the emitted events not yet drained (only without a ``sink``).
        failure: the error that failed the producer, if one did.
        diagnostics: what the producer tolerated: a run input declaring a newer
            ``protocolVersion`` than this SDK speaks (``version.newer``; a newer
            minor of its line is served, as the versioning rules require) or one
            it cannot interpret (``version.uninterpretable``); a resume entry
            naming no interrupt of ``interrupts`` (``resume.unknown-interrupt``,
            also logged as a warning), which the run proceeds without.
        resume: the resume entries the run acts on: the input's, less those
            naming no interrupt of ``interrupts``.

    Raises:
        SchemaError: ``run_input`` (wire JSON) or ``state`` is malformed.
        ProtocolError: the input's ``resume`` breaks an interrupt rule, before the
            run starts: ``resume.uncovered``, ``resume.expired``, ``resume.duplicate``.

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
        interrupts: OpenInterrupts | Iterable[Interrupt | Mapping[str, Any]] | None = None,
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
        self.diagnostics: list[Diagnostic] = []
        declared = run_input.protocol_version if run_input is not None else None
        if declared is not None:
            found = check_peer_version(declared, _OWN_VERSION, "consumer")
            if found is not None:
                self.diagnostics.append(found)
        self.resume: tuple[ResumeEntry, ...] = accept_resume(
            run_input, interrupts, self.diagnostics
        )
        self._phase: RunPhase = "idle"
        self._closed = False
        self._run_ids: tuple[str, str] | None = None  # (threadId, runId) of the last run
        self._announced: set[str] = set()  # subagentRunIds announced in the current run

    # ---- reading -------------------------------------------------------------------------

    @property
    def phase(self) -> RunPhase:
        """``idle`` before any run, ``running`` in one, then ``finished`` or ``errored``."""
        return self._phase

    @property
    def quiet(self) -> bool:
        """Whether a run is in progress with nothing open in it (no message, tool call,
        reasoning, step or subagent invocation; every tool call answered): a point where
        :attr:`conversation` says all there is of the run so far."""
        return self.failure is None and self._verifier.quiet

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
            The event emitted: the given typed event, or the one parsed from the dict.
            A typed event that holds wire JSON where the schema has a typed value
            (``RunFinishedEvent(outcome={...})``) is emitted as its checked, typed
            copy, which is returned.

        Raises:
            SchemaError: the event does not match the schema (nothing changed).
            UsageError: the event breaks a producer duty; see the module docstring for
                which errors leave the producer usable and which fail it.
        """
        if isinstance(event, Mapping):
            typed = self._from_wire(event)
        elif type(event) in _EVENT_CLASSES:
            checked = self._check_schema(event)
            # a typed event holding wire JSON where the schema has a typed value (an
            # outcome given as a dict, ...) goes out as its typed copy, never raw
            typed = event if checked == event else checked
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
    def _check_schema(event: Event) -> Event:
        """The event held to the schema; returns it as parsed back from its wire JSON."""
        try:
            wire = CONVERTER.dump(event)
        except (TypeError, AttributeError, ValueError) as exc:  # pragma: no cover - defensive
            raise SchemaError("type", "", f"{event.type} cannot be dumped: {exc}") from None
        dumps(wire)  # values that are not JSON (NaN, objects, ...)
        return parse_event(wire)  # strict: every field as the schema says

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
        or ``NO_STATE`` while there is no baseline."""
        return self.conversation._state if self._baseline else NO_STATE

    def _check_duties(self, event: Event, retype: bool) -> None:
        """Refuse what breaks a duty before anything changes (the producer stays usable).

        Duties about what the client holds are checked by the reducer itself
        (:meth:`Conversation.check`), for the events in ``_PRECHECKED``.
        """
        kind = event.type
        if isinstance(event, g.RunStartedEvent):
            check_declarable(event.protocol_version, "RUN_STARTED")
        reserved = _reserved_key(event, "", skip=_ECHOED.get(type(event)))
        if reserved is not None:
            raise UsageError(
                "producer.reserved-metadata-key",
                f"{kind} carries the metadata key {RESERVED_METADATA_KEY!r} at {reserved!r}: "
                f"the protocol reserves it for its own use; prefix your keys with a vendor "
                f"or application name instead",
            )
        tag: str | None = getattr(event, "subagent_run_id", None)
        if tag is not None and kind in ATTRIBUTED and tag not in self._announced:
            raise UsageError(
                "producer.subagent-not-announced",
                f"{kind} is attributed to subagent '{tag}', which no SUBAGENT_STARTED "
                f"announced in this run: announce an invocation before its events",
            )
        if isinstance(event, g.RunFinishedEvent) and isinstance(
            event.outcome, g.RunFinishedInterruptOutcome
        ):
            _check_interrupt_ids(event.outcome.interrupts)
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
        refuse_client_tool_answers(event, self.conversation, self.run_input)
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

    def _unanswered_calls(self) -> list[str]:
        return self._verifier.unanswered_calls()

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

    # ---- helpers: text messages, tool calls and reasoning ---------------------------------

    # -- text messages -------------------------------------------------------------------

    def text_message_start(
        self,
        message_id: str | None = None,
        *,
        role: g.TextMessageRole | None = "assistant",
        name: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> g.TextMessageStartEvent:
        """TEXT_MESSAGE_START (``role=None`` leaves it out, which means assistant)."""
        return self._send(
            g.TextMessageStartEvent(
                message_id=message_id if message_id is not None else self._new_id("msg"),
                role=role,
                name=name,
                **attribution,
            )
        )

    def text_message_content(
        self, message_id: str, delta: str, **attribution: Unpack[Attribution]
    ) -> g.TextMessageContentEvent:
        """TEXT_MESSAGE_CONTENT."""
        return self._send(
            g.TextMessageContentEvent(message_id=message_id, delta=delta, **attribution)
        )

    def text_message_end(
        self, message_id: str, **attribution: Unpack[Attribution]
    ) -> g.TextMessageEndEvent:
        """TEXT_MESSAGE_END."""
        return self._send(g.TextMessageEndEvent(message_id=message_id, **attribution))

    def text_message(
        self,
        message_id: str | None = None,
        *,
        role: g.TextMessageRole | None = "assistant",
        name: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> TextMessageWriter:
        """TEXT_MESSAGE_START now; the returned writer streams the content and ends it.

        Example::

            with producer.text_message() as message:
                message.content("Hello, ")
                message.content("world")
        """
        start = self.text_message_start(message_id, role=role, name=name, **attribution)
        return TextMessageWriter(self, start)

    def text(
        self,
        content: str | Iterable[str],
        *,
        message_id: str | None = None,
        role: g.TextMessageRole | None = "assistant",
        name: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> list[Event]:
        """A whole text message: START, one CONTENT per non-empty piece, END."""
        pieces = [content] if isinstance(content, str) else list(content)
        writer = self.text_message(message_id, role=role, name=name, **attribution)
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
        **attribution: Unpack[Attribution],
    ) -> g.ToolCallStartEvent:
        """TOOL_CALL_START."""
        return self._send(
            g.ToolCallStartEvent(
                tool_call_id=tool_call_id if tool_call_id is not None else self._new_id("call"),
                tool_call_name=tool_call_name,
                parent_message_id=parent_message_id,
                **attribution,
            )
        )

    def tool_call_args(
        self, tool_call_id: str, delta: str, **attribution: Unpack[Attribution]
    ) -> g.ToolCallArgsEvent:
        """TOOL_CALL_ARGS (a piece of the arguments' text)."""
        return self._send(
            g.ToolCallArgsEvent(tool_call_id=tool_call_id, delta=delta, **attribution)
        )

    def tool_call_end(
        self, tool_call_id: str, **attribution: Unpack[Attribution]
    ) -> g.ToolCallEndEvent:
        """TOOL_CALL_END."""
        return self._send(g.ToolCallEndEvent(tool_call_id=tool_call_id, **attribution))

    def tool_call(
        self,
        tool_call_name: str,
        *,
        args: Any = None,
        tool_call_id: str | None = None,
        parent_message_id: str | None = None,
        **attribution: Unpack[Attribution],
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
            **attribution,
        )
        writer = ToolCallWriter(self, start.tool_call_id, start.subagent_run_id)
        if args is not None:
            writer.args(json_text(args))
        return writer

    def tool_result(
        self,
        tool_call_id: str,
        content: Any,
        *,
        message_id: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> g.ToolCallResultEvent:
        """TOOL_CALL_RESULT: the tool message for a call.

        Args:
            tool_call_id: the call answered.
            content: a string, a list of content parts (typed or wire JSON), or any
                other JSON value (sent as its JSON text).
            message_id: the tool message's id (generated when omitted).
            **attribution: ``metadata`` (merged onto the tool message) and
                ``subagent_run_id`` (see :class:`Attribution`).
        """
        if isinstance(content, list):
            content = _typed(content, list[g.ContentPart], "/content")
        elif not isinstance(content, str):
            content = json_text(content)
        return self._send(
            g.ToolCallResultEvent(
                message_id=message_id if message_id is not None else self._new_id("tool-result"),
                tool_call_id=tool_call_id,
                content=content,
                **attribution,
            )
        )

    # ---- reasoning -----------------------------------------------------------------------

    def reasoning_start(
        self, message_id: str | None = None, **attribution: Unpack[Attribution]
    ) -> g.ReasoningStartEvent:
        """REASONING_START (opens a reasoning span)."""
        return self._send(
            g.ReasoningStartEvent(
                message_id=message_id if message_id is not None else self._new_id("reasoning"),
                **attribution,
            )
        )

    def reasoning_end(
        self, message_id: str, **attribution: Unpack[Attribution]
    ) -> g.ReasoningEndEvent:
        """REASONING_END (closes a reasoning span)."""
        return self._send(g.ReasoningEndEvent(message_id=message_id, **attribution))

    def reasoning(
        self, message_id: str | None = None, **attribution: Unpack[Attribution]
    ) -> ReasoningSpan:
        """REASONING_START now; the span opens its reasoning message and ends with
        REASONING_END (on exit when used as a context manager)."""
        start = self.reasoning_start(message_id, **attribution)
        return ReasoningSpan(self, start.message_id, start.subagent_run_id)

    def reasoning_message_start(
        self, message_id: str | None = None, **attribution: Unpack[Attribution]
    ) -> g.ReasoningMessageStartEvent:
        """REASONING_MESSAGE_START."""
        return self._send(
            g.ReasoningMessageStartEvent(
                message_id=message_id if message_id is not None else self._new_id("reasoning"),
                **attribution,
            )
        )

    def reasoning_message_content(
        self, message_id: str, delta: str, **attribution: Unpack[Attribution]
    ) -> g.ReasoningMessageContentEvent:
        """REASONING_MESSAGE_CONTENT."""
        return self._send(
            g.ReasoningMessageContentEvent(message_id=message_id, delta=delta, **attribution)
        )

    def reasoning_message_end(
        self, message_id: str, **attribution: Unpack[Attribution]
    ) -> g.ReasoningMessageEndEvent:
        """REASONING_MESSAGE_END."""
        return self._send(g.ReasoningMessageEndEvent(message_id=message_id, **attribution))

    def reasoning_message(
        self, message_id: str | None = None, **attribution: Unpack[Attribution]
    ) -> ReasoningMessageWriter:
        """REASONING_MESSAGE_START now; the writer streams the content and ends it."""
        start = self.reasoning_message_start(message_id, **attribution)
        return ReasoningMessageWriter(self, start.message_id, start.subagent_run_id)

    def reasoning_encrypted_value(
        self,
        subtype: g.ReasoningEncryptedValueSubtype,
        entity_id: str,
        encrypted_value: str,
        *,
        encrypted_value_type: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> g.ReasoningEncryptedValueEvent:
        """REASONING_ENCRYPTED_VALUE for a message or tool call the client knows."""
        return self._send(
            g.ReasoningEncryptedValueEvent(
                subtype=subtype,
                entity_id=entity_id,
                encrypted_value=encrypted_value,
                encrypted_value_type=encrypted_value_type,
                **attribution,
            )
        )

    # ---- helpers: lifecycle, steps, subagents, state, activities, the rest ------------------

    # ---- run lifecycle -------------------------------------------------------------------

    def run_started(
        self,
        *,
        thread_id: str | None = None,
        run_id: str | None = None,
        parent_run_id: str | None = None,
        input: RunAgentInput | Mapping[str, Any] | None = None,
        protocol_version: str | None = PROTOCOL_VERSION,
        metadata: dict[str, Any] | None = None,
    ) -> g.RunStartedEvent:
        """RUN_STARTED; the ids default to the run input's.

        Args:
            thread_id: the conversation; default the run input's ``threadId``.
            run_id: the run; default the run input's ``runId``.
            parent_run_id: the run that spawned this one, if any.
            input: the run input to echo back, if wanted (typed, or its wire JSON,
                checked and built as ``RunAgentInput``).
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
                input=None if input is None else _typed(input, RunAgentInput, "/input"),
                protocol_version=protocol_version,
                metadata=metadata,
            )
        )

    def run_finished(
        self,
        *,
        outcome: RunOutcome | None = None,
        list_pending: bool = False,
        **finish: Unpack[RunFinish],
    ) -> g.RunFinishedEvent:
        """RUN_FINISHED for the current run (its thread and run ids are filled in).

        Args:
            outcome: absent (success), ``"success"``, ``"cancelled"``, a typed
                outcome, or its wire JSON (checked and built as the typed outcome).
                To end the run interrupted, :meth:`run_interrupted` takes the
                interrupts.
            list_pending: name the run's unanswered tool calls (every call it started
                and no TOOL_CALL_RESULT answered, such as the calls to the client's
                tools) in the success outcome's ``pendingToolCallIds``; with none, the
                outcome is left as given.
            **finish: ``result``, ``usage`` and ``metadata`` (see :class:`RunFinish`).

        Raises:
            SchemaError: an outcome or usage given as wire JSON does not fit the
                schema (located in the event: ``/outcome/...``).
        """
        if self._run_ids is None:
            raise UsageError("run.not-started", "Cannot send 'RUN_FINISHED': no run was started")
        thread_id, run_id = self._run_ids
        hint = "; to end the run interrupted, use run_interrupted(interrupts)"
        typed = _outcome(_RUN_OUTCOMES, outcome, g.RunFinishedOutcome, "RUN_FINISHED", hint)
        if list_pending:
            typed = pending_outcome(typed, self._unanswered_calls())
        return self._send(
            g.RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=typed, **_usage(finish))
        )

    def run_interrupted(
        self, interrupts: Iterable[g.Interrupt | Mapping[str, Any]], **finish: Unpack[RunFinish]
    ) -> g.RunFinishedEvent:
        """RUN_FINISHED with the interrupt outcome: the run waits for what ``interrupts`` ask.

        The typed way to write ``run_finished(outcome=RunFinishedInterruptOutcome(...))``.
        The next run's input answers each interrupt in its ``resume`` list; give the
        producer of that run what this one asked (``RunProducer(interrupts=...)``, or
        ``agent_app(interrupts=lookup)``) for it to hold the answers to the rules.

        Args:
            interrupts: at least one; typed :class:`~agentproto.agui.schema.Interrupt`
                or its wire JSON (``{"id": "send-email", "reason": "tool_call",
                "toolCallId": "tc-1"}``), checked and built as ``Interrupt``; ids unique.
            **finish: ``result``, ``usage`` and ``metadata`` (see :class:`RunFinish`).

        Raises:
            SchemaError: no interrupt (``minItems``), or one that does not fit the
                schema (located in the event: ``/outcome/interrupts/0/reason``, ...).
            UsageError: ``interrupt.duplicate-id``: two interrupts share an id (the
                producer stays usable); the sequencing codes of :meth:`run_finished`
                (an item still open, ...).

        Example::

            producer.run_interrupted(
                [{"id": "approve", "reason": "tool_call", "toolCallId": call.tool_call_id}]
            )
        """
        typed = _typed(list(interrupts), list[g.Interrupt], "/outcome/interrupts")
        return self.run_finished(outcome=g.RunFinishedInterruptOutcome(interrupts=typed), **finish)

    def run_error(
        self,
        message: str,
        *,
        code: str | None = None,
        usage: Sequence[g.TokenUsage | Mapping[str, Any]] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.RunErrorEvent:
        """RUN_ERROR: the run failed (still accepted after the producer failed); ``usage``
        typed or wire JSON, as for :meth:`run_finished`."""
        return self._send(
            g.RunErrorEvent(
                message=message, code=code, metadata=metadata, **_usage({"usage": usage})
            )
        )

    def run(self, **started: Any) -> RunScope:
        """RUN_STARTED now (``started``: :meth:`run_started`'s arguments); a context manager
        that sends RUN_FINISHED on exit, or RUN_ERROR when the block raises."""
        self.run_started(**started)
        return RunScope(self)

    # ---- steps ---------------------------------------------------------------------------

    def step_started(
        self, step_name: str, **attribution: Unpack[Attribution]
    ) -> g.StepStartedEvent:
        """STEP_STARTED."""
        return self._send(g.StepStartedEvent(step_name=step_name, **attribution))

    def step_finished(
        self, step_name: str, **attribution: Unpack[Attribution]
    ) -> g.StepFinishedEvent:
        """STEP_FINISHED (with the same attribution as its start)."""
        return self._send(g.StepFinishedEvent(step_name=step_name, **attribution))

    def step(self, step_name: str, **attribution: Unpack[Attribution]) -> StepScope:
        """STEP_STARTED now; STEP_FINISHED from the scope (on exit as a context manager)."""
        self.step_started(step_name, **attribution)
        return StepScope(self, step_name, attribution.get("subagent_run_id"))

    # ---- subagents -----------------------------------------------------------------------

    def subagent_started(
        self, name: str, *, subagent_run_id: str | None = None, **start: Unpack[SubagentStart]
    ) -> g.SubagentStartedEvent:
        """SUBAGENT_STARTED: announces an invocation before anything attributed to it
        (``subagent_run_id`` is generated when omitted; ``start``: see :class:`SubagentStart`)."""
        run_id = subagent_run_id
        return self._send(
            g.SubagentStartedEvent(
                subagent_run_id=run_id if run_id is not None else self._new_id("subagent"),
                name=name,
                **start,
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
        """SUBAGENT_FINISHED (``outcome``: absent, ``"success"``, ``"suspended"``, typed,
        or its wire JSON, checked and built as the typed outcome)."""
        typed = _outcome(
            _SUBAGENT_OUTCOMES, outcome, g.SubagentFinishedOutcome, "SUBAGENT_FINISHED"
        )
        return self._send(
            g.SubagentFinishedEvent(
                subagent_run_id=subagent_run_id,
                outcome=typed,
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
        self, name: str, *, subagent_run_id: str | None = None, **start: Unpack[SubagentStart]
    ) -> SubagentScope:
        """SUBAGENT_STARTED now; the scope finishes the invocation (on exit as a context
        manager: SUBAGENT_FINISHED, or SUBAGENT_ERROR when the block raises).

        Example::

            with producer.subagent("researcher") as sub:
                producer.text("Found it.", subagent_run_id=sub.subagent_run_id)
        """
        started = self.subagent_started(name, subagent_run_id=subagent_run_id, **start)
        return SubagentScope(self, started.subagent_run_id, name)

    # ---- state ---------------------------------------------------------------------------

    def state_snapshot(
        self, snapshot: Any, **attribution: Unpack[Attribution]
    ) -> g.StateSnapshotEvent:
        """STATE_SNAPSHOT: replaces the client's state (any JSON value)."""
        return self._send(g.StateSnapshotEvent(snapshot=snapshot, **attribution))

    def state_delta(
        self, delta: PatchLike, **attribution: Unpack[Attribution]
    ) -> g.StateDeltaEvent:
        """STATE_DELTA: an RFC 6902 patch against the client's state (it must apply)."""
        patch = _typed(list(delta), g.JsonPatch, "/delta")
        return self._send(g.StateDeltaEvent(delta=patch, **attribution))

    def state_update(
        self, new_state: Any, **attribution: Unpack[Attribution]
    ) -> g.StateDeltaEvent | None:
        """STATE_DELTA with the minimal patch from the current state to ``new_state``.

        Returns:
            The delta, or ``None`` (nothing emitted) when the state is already equal.
        """
        if self._state is NO_STATE:  # checked before diffing against a state nobody holds
            raise UsageError(
                "producer.state-no-baseline",
                "state_update() without a baseline: the producer has no run input and no "
                "state, so send a STATE_SNAPSHOT first",
            )
        check_value(new_state)  # JSON, and no deeper than a consumer accepts
        ops = make_patch(self._state, thaw(new_state))
        if not ops:
            return None
        return self.state_delta(ops, **attribution)

    # ---- activities ----------------------------------------------------------------------

    def activity_snapshot(
        self,
        message_id: str | None,
        activity_type: str,
        content: dict[str, Any],
        *,
        replace: bool | None = None,
        **attribution: Unpack[Attribution],
    ) -> g.ActivitySnapshotEvent:
        """ACTIVITY_SNAPSHOT: creates the activity message, or replaces its content and
        type (``replace=False``: leaves an existing one as it stands)."""
        return self._send(
            g.ActivitySnapshotEvent(
                message_id=message_id if message_id is not None else self._new_id("activity"),
                activity_type=activity_type,
                content=content,
                replace=replace,
                **attribution,
            )
        )

    def activity_delta(
        self,
        message_id: str,
        patch: PatchLike,
        *,
        activity_type: str | None = None,
        retype: bool = False,
        **attribution: Unpack[Attribution],
    ) -> g.ActivityDeltaEvent:
        """ACTIVITY_DELTA: an RFC 6902 patch against the activity's content.

        Args:
            message_id: the activity, created by an earlier snapshot.
            patch: the operations; applied to the result, the content stays an object.
            activity_type: default the activity's current type; another type needs
                ``retype=True``.
            retype: change the activity's type on purpose.
            **attribution: ``metadata`` and ``subagent_run_id`` (which must agree with
                the activity's owner).
        """
        return self._send(
            g.ActivityDeltaEvent(
                message_id=message_id,
                activity_type=self._activity_type(message_id, activity_type),
                patch=_typed(list(patch), g.JsonPatch, "/patch"),
                **attribution,
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
        **attribution: Unpack[Attribution],
    ) -> g.ActivityDeltaEvent | None:
        """ACTIVITY_DELTA with the minimal patch from the activity's content to ``new_content``.

        Returns:
            The delta, or ``None`` (nothing emitted) when neither content nor type change.
        """
        known = self._known_activity(message_id)
        check_value(new_content)
        ops = make_patch(known.content, thaw(new_content))
        if not ops and activity_type in (None, known.activity_type):
            return None
        return self.activity_delta(
            message_id, ops, activity_type=activity_type, retype=retype, **attribution
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
                messages=_typed(list(messages), list[Message], "/messages"),
                metadata=metadata,
            )
        )

    def custom(self, name: str, value: Any, **attribution: Unpack[Attribution]) -> g.CustomEvent:
        """CUSTOM: an application event (any JSON ``value``)."""
        return self._send(g.CustomEvent(name=name, value=value, **attribution))

    def raw(
        self, event: Any, *, source: str | None = None, **attribution: Unpack[Attribution]
    ) -> g.RawEvent:
        """RAW: an event from an external system, passed through (any JSON)."""
        return self._send(g.RawEvent(event=event, source=source, **attribution))

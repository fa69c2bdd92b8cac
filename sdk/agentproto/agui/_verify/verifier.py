"""Verification: the AG-UI stream rules, as one state machine over expanded events.

Theory of operation
-------------------
:class:`Verifier` is the fifth stage of the consumer pipeline (boundary → middleware →
enforcement → chunk expansion → **verification** → application). It sees typed events
with every ``*_CHUNK`` already expanded, keeps only the bookkeeping the rules need, and
either accepts an event (returning the tolerated problems it found, as diagnostics) or
raises :class:`~agentproto.ProtocolError` with a stable code. It never changes an event.

The stream is a sequence of runs. The lifecycle is a small table (``_TRANSITIONS``):

=========  ==============================  ======================================
phase      event                           next phase
=========  ==============================  ======================================
idle       ``RUN_STARTED``                 running
idle       ``RUN_ERROR``                   errored (a failed run with no id)
running    ``RUN_FINISHED``                finished (succeeded, interrupted or
                                           cancelled, by ``outcome``)
running    ``RUN_ERROR``                   errored (the run failed)
running    anything else but               running (per-entity rules below)
           ``RUN_STARTED``
finished   ``RUN_STARTED``                 running (a new run)
finished   ``RUN_ERROR``                   errored (a late failure: the finished
                                           run is failed after all)
errored    ``RUN_STARTED``                 running (a new run)
=========  ==============================  ======================================

Anything else is a violation. A stream's runs are on one thread: every ``RUN_STARTED``
carries the run input's ``threadId`` (or, when it is not known, the first run's), and
``RUN_FINISHED`` carries its run's ``threadId`` and ``runId``. Each run gets a
:class:`RunRecord` in :attr:`Verifier.runs`; a ``RUN_ERROR`` is the run's failure, a
``cancelled`` outcome neither success nor failure, and a stream that ends inside a run
(:meth:`Verifier.close`) fails that run, which never reads as a success.

Inside a run, entity tracking is run-scoped (it starts empty at every ``RUN_STARTED``):

* **Streamed items** — text messages, tool calls and reasoning messages, plus reasoning
  spans (``REASONING_START``/``END``) in an id set of their own: a START for an open id,
  or a CONTENT/ARGS/END for an id that is not open, is a violation, and RUN_FINISHED
  requires all of them closed. A closed message or call may be reopened by a new START.
* **Owners** — every item has the owner (``subagentRunId``, ``None`` for the parent
  agent) its opener established. A continuation (CONTENT/ARGS/END, a reopening START)
  tagged with another owner is rejected; an untagged one is accepted. A tool call's
  owner is its START's tag, else that of the message ``parentMessageId`` names, when the
  run knows it; a tagged START disagreeing with that message is rejected. An
  ``ACTIVITY_DELTA`` is checked against the owner set by the activity's last replacing
  ``ACTIVITY_SNAPSHOT`` (``replace`` absent or true, or the snapshot that created it);
  activity ownership lives as long as the activity, across runs.
* **Steps** are keyed by (owner, ``stepName``): no reopening an open one, no finishing
  one that is not open, ``STEP_FINISHED`` carries its start's attribution, all closed by
  RUN_FINISHED; steps may overlap.
* **Subagents**: ``SUBAGENT_STARTED`` announces an invocation before anything attributed
  to it, never an active id, never an id already used in the run, and its
  ``parentSubagentRunId`` names an invocation announced in the run. ``SUBAGENT_FINISHED``
  and ``SUBAGENT_ERROR`` close an active one; all must be closed by RUN_FINISHED.
  Attribution without any lifecycle event is accepted. Each invocation's status
  (running, succeeded, suspended, failed, abandoned, unannounced) is kept in
  :attr:`Verifier.subagents` (:mod:`agentproto.agui._verify.subagents`), across runs.
* ``RUN_ERROR`` abandons whatever is open (items, steps, invocations).
* A ``CUSTOM`` event named ``agentproto.resync`` (a server resuming the run from
  snapshots: :data:`~agentproto.agui._protocol.kinds.RESYNC`) forgets what the run had
  open: the snapshots after it hold the run at a point where nothing was.
* **Tolerated**: a ``REASONING_ENCRYPTED_VALUE`` naming a message or tool call this
  consumer does not know yields an ``encrypted-value.unknown-entity`` diagnostic.
  Interrupt outcomes need at least one interrupt, with ids unique in the run. A
  success outcome's ``pendingToolCallIds``, when sent and not empty, is the list of
  the run's unanswered tool calls (the schema: "it agrees with the stream"); a list
  that disagrees is a known field carrying a wrong value, hence fatal. Tool
  arguments are not validated. An event class the verifier has no rule for (one a
  newer schema added) is passed unchecked with an ``event.no-rule`` diagnostic, in a
  run or between runs, as an unknown event type would be.

Error codes
-----------
Every :class:`~agentproto.ProtocolError` carries one of these codes (``subject`` is the id,
step name or event type the rule is about; the message names the ids, event types and
step names involved verbatim). The ``chunk.*`` codes come from
:class:`agentproto.agui._consume.chunks.ChunkExpander`, ``owner.mismatch`` from both stages.

=================================  =================================================================
code                               raised when
=================================  =================================================================
``run.not-started``                the first event is neither RUN_STARTED nor RUN_ERROR
``run.nested``                     RUN_STARTED while a run is active
``run.after-finished``             after RUN_FINISHED, an event other than RUN_STARTED or a late
                                   RUN_ERROR
``run.after-error``                after RUN_ERROR, an event other than RUN_STARTED
``run.thread-mismatch``            RUN_STARTED/RUN_FINISHED without the input's threadId (or the
                                   first run's, or its own run's)
``run.run-id-mismatch``            RUN_FINISHED naming another runId than its RUN_STARTED
``stream.truncated``               the stream ended without a terminal event (mid-run, or before any
                                   run)
``message.duplicate-open``         TEXT_MESSAGE_START for an open messageId
``message.not-open``               TEXT_MESSAGE_CONTENT/END for a messageId not open
``message.open-at-finish``         RUN_FINISHED with text messages open
``toolcall.duplicate-open``        TOOL_CALL_START for an open toolCallId
``toolcall.not-open``              TOOL_CALL_ARGS/END for a toolCallId not open
``toolcall.open-at-finish``        RUN_FINISHED with tool calls open
``reasoning.duplicate-open``       REASONING_MESSAGE_START for an open messageId
``reasoning.not-open``             REASONING_MESSAGE_CONTENT/END for a messageId not open
``reasoning.open-at-finish``       RUN_FINISHED with reasoning messages open
``reasoning.span-duplicate-open``  REASONING_START for an open span
``reasoning.span-not-open``        REASONING_END for a span not open
``reasoning.span-open-at-finish``  RUN_FINISHED with reasoning spans open
``step.duplicate-open``            STEP_STARTED for an open (owner, stepName)
``step.not-started``               STEP_FINISHED for a stepName open under no owner
``step.open-at-finish``            RUN_FINISHED with steps open
``subagent.already-active``        SUBAGENT_STARTED for an active subagentRunId
``subagent.reused``                SUBAGENT_STARTED for an id already finished in the run
``subagent.unknown-parent``        parentSubagentRunId not announced in the run
``subagent.announced-late``        SUBAGENT_STARTED after events attributed to that id
``subagent.not-active``            SUBAGENT_FINISHED/ERROR for an id that is not active
``subagent.active-at-finish``      RUN_FINISHED with invocations active
``owner.mismatch``                 a tagged continuation disagreeing with its opener's owner (items,
                                   chunks, activity deltas); a tool call tagged against its parent
                                   message; a STEP_FINISHED whose step is open only under another
                                   owner
``interrupt.empty``                an interrupt outcome carrying no interrupt
``toolcall.pending-mismatch``      a success outcome whose ``pendingToolCallIds`` (sent and not
                                   empty) is not the run's unanswered tool calls: those a
                                   TOOL_CALL_START made in the run and no TOOL_CALL_RESULT
                                   answered, in the order made
``interrupt.duplicate-id``         two interrupts of a run sharing an id
``chunk.missing-id``               the first chunk of an item has no messageId/toolCallId
``chunk.missing-name``             the first TOOL_CALL_CHUNK has no toolCallName
``chunk.conflicting-field``        a continuation chunk repeating role, name, toolCallName or
                                   parentMessageId with another value
``chunk.ambiguous``                an untagged, id-less continuation with several candidate streams,
                                   none the parent's
=================================  =================================================================

Caller errors are :class:`~agentproto.UsageError`: ``verify.failed`` (feeding after a
violation), ``verify.closed`` (feeding after :meth:`Verifier.close`),
``verify.unexpanded-chunk`` (a ``*_CHUNK`` event reached the verifier) and
``verify.not-an-event`` (something that is not an AG-UI event object).

The rules are dispatched by event class, in a table built from the generated ``Event``
union (:func:`agentproto.agui._protocol.kinds.dispatch_table`); every rule is a method of
:class:`Verifier`, the run-scoped bookkeeping is in :mod:`.runs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import AgentProtoError, ProtocolError, UsageError
from agentproto.agui._generated import (
    ActivityDeltaEvent,
    ActivityMessage,
    ActivitySnapshotEvent,
    AssistantMessage,
    CustomEvent,
    Event,
    Message,
    MessagesSnapshotEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessage,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
)
from agentproto.agui._protocol.kinds import (
    ATTRIBUTED,
    CHUNK_TYPES,
    RESYNC,
    SUBAGENT_LIFECYCLE,
    TOOL_CALL_SUBTYPE,
    dispatch_table,
    kinds,
    unlisted,
)
from agentproto.agui._verify.runs import (
    Owner,
    RunRecord,
    RunScope,
    RunStatus,
    describe_owner,
    finish_status,
    quoted,
)
from agentproto.agui._verify.subagents import Invocations, SubagentInvocation

__all__ = ["RunRecord", "RunStatus", "Verifier"]

_TAKER: Final = "Verifier.feed()"
_Phase: TypeAlias = Literal["idle", "running", "finished", "errored", "failed", "closed"]

# The run lifecycle outside a run: (phase, event type) -> the phase it leads to. Any other
# pair is a violation (``run.not-started``, ``run.after-finished`` or ``run.after-error``).
# Inside a run, RUN_FINISHED leads to "finished", RUN_ERROR to "errored" and RUN_STARTED is
# ``run.nested``; everything else stays "running" under the per-entity rules.
_TRANSITIONS: Final[dict[tuple[_Phase, str], _Phase]] = {
    ("idle", "RUN_STARTED"): "running",
    ("idle", "RUN_ERROR"): "errored",
    ("finished", "RUN_STARTED"): "running",
    ("finished", "RUN_ERROR"): "errored",
    ("errored", "RUN_STARTED"): "running",
}
kinds(*(kind for _, kind in _TRANSITIONS))  # generated types, or this fails at import

# A violation after a run ended: phase -> (its code, how the run ended, what may follow).
_AFTER_RUN: Final[dict[_Phase, tuple[str, str, str]]] = {
    "finished": (
        "run.after-finished",
        "finished with 'RUN_FINISHED'",
        "'RUN_STARTED' or a late 'RUN_ERROR'",
    ),
    "errored": ("run.after-error", "ended with 'RUN_ERROR'", "'RUN_STARTED'"),
}

# what, besides attributed events, changes an invocation's status (see ._subagents)
_INVOCATION_EVENTS: Final = SUBAGENT_LIFECYCLE | kinds("RUN_ERROR")


class Verifier:
    """Checks an expanded AG-UI event stream against the protocol's sequencing rules.

    Sans-I/O; one instance per stream. Feed it every event chunk expansion delivers, in
    order, then call :meth:`close` at the end of the stream.

    Args:
        thread_id: the run input's ``threadId``, when known; every ``RUN_STARTED`` and
            ``RUN_FINISHED`` must carry it. When ``None`` the first run's is used.
        messages: the run input's messages, so that encrypted reasoning values naming
            them (or their tool calls) are not reported as unknown.

    Attributes:
        runs: one :class:`RunRecord` per run, in stream order.
        subagents: one :class:`SubagentInvocation` per ``subagentRunId``.
    """

    def __init__(self, *, thread_id: str | None = None, messages: Iterable[Message] = ()) -> None:
        self.runs: list[RunRecord] = []
        self._thread_id = thread_id
        self._phase: _Phase = "idle"
        self._scope = RunScope()
        self._known_messages: set[str] = set()
        self._known_tool_calls: set[str] = set()
        self._activity_owner: dict[str, Owner] = {}
        self._invocations = Invocations()
        self._learn_messages(messages)

    # ---- public API --------------------------------------------------------------------

    @property
    def current_run(self) -> RunRecord | None:
        """The run in progress, or ``None`` between runs."""
        return self.runs[-1] if self._phase == "running" else None

    @property
    def subagents(self) -> Mapping[str, SubagentInvocation]:
        """Every subagent invocation the stream showed, by ``subagentRunId``, in order
        of first appearance (a read-only live view; see :class:`SubagentInvocation`)."""
        return MappingProxyType(self._invocations.records)

    def feed(self, event: Event) -> list[Diagnostic]:
        """Check one event; returns the tolerated problems it shows.

        Raises:
            ProtocolError: the event breaks a rule (see the code table above); the
                current run is marked failed and the verifier accepts nothing more.
            UsageError: the verifier already failed or was closed, or ``event`` is a
                chunk that was not expanded.
        """
        rule = _IN_RUN.get(type(event))
        if rule is None:
            rule = unlisted(event, Verifier._no_rule, code="verify.not-an-event", taker=_TAKER)
        try:
            if self._phase == "running":
                tag: Owner = None
                kind = event.type
                if kind in ATTRIBUTED:
                    tag = event.subagent_run_id  # type: ignore[union-attr]
                    if tag is not None:
                        self._scope.attributed.add(tag)
                found = rule(self, event)
                if tag is not None or kind in _INVOCATION_EVENTS:
                    self._invocations.observe(event, self.runs[-1].run_id)
                return found
            if rule is Verifier._no_rule and self._phase not in ("failed", "closed"):
                return self._no_rule(event)
            return self._between_runs(event)
        except ProtocolError as exc:
            self.abort(exc)
            raise

    @property
    def quiet(self) -> bool:
        """Whether a run is in progress with nothing open in it: no message, tool call,
        reasoning, step or subagent invocation, and every tool call answered (where
        snapshots of its messages and state say all there is to say of it)."""
        scope = self._scope
        return (
            self._phase == "running"
            and not (scope.steps or scope.subagents)
            and not any(items.open for items in (scope.text, scope.tools, scope.reasoning))
            and not scope.spans.open
            and not scope.unanswered()
        )

    def unanswered_calls(self) -> list[str]:
        """The current run's tool calls that have no TOOL_CALL_RESULT yet, in the order
        they started (empty between runs)."""
        return self._scope.unanswered()

    def close(self) -> None:
        """End of stream: a run still open (or no run at all) means the stream was cut.

        Raises:
            ProtocolError: ``stream.truncated``; the open run is marked failed, never
                succeeded.
        """
        phase = self._phase
        if phase in ("closed", "failed"):
            return
        if phase == "running":
            run = self.runs[-1]
            exc = ProtocolError(
                "stream.truncated",
                f"the stream ended without a terminal event: run '{run.run_id}' is still "
                f"open (no 'RUN_FINISHED' or 'RUN_ERROR'); it has no outcome",
                subject=run.run_id,
            )
        elif phase == "idle":
            exc = ProtocolError(
                "stream.truncated",
                "the stream ended without a terminal event: no 'RUN_STARTED' or "
                "'RUN_ERROR' arrived",
            )
        else:
            self._phase = "closed"
            return
        self.abort(exc)
        raise exc

    def abort(self, error: AgentProtoError) -> None:
        """Record a fatal error: the open run (if any) fails with it as its violation.

        The consumer calls this for fatal errors found by other stages too, so that the
        run's record says why it failed. The verifier accepts nothing afterwards.
        """
        if self._phase == "running":
            self.runs[-1] = attrs.evolve(self.runs[-1], status="failed", violation=error)
            self._invocations.abandon()
        self._phase = "failed"

    # ---- lifecycle ---------------------------------------------------------------------

    def _no_rule(self, event: Event) -> list[Diagnostic]:
        return [
            Diagnostic(
                code="event.no-rule",
                message=f"'{event.type}': the verifier has no rule for this event type (a "
                f"newer schema's?); it is passed unchecked",
                subject=event.type,
            )
        ]

    def _free(self, event: Event) -> list[Diagnostic]:
        return []

    def _custom(self, event: CustomEvent) -> list[Diagnostic]:
        if event.name == RESYNC:  # the snapshots that follow hold the run: nothing is open
            self._scope = RunScope()
        return []

    def _unexpanded(self, event: Event) -> list[Diagnostic]:
        raise UsageError(
            "verify.unexpanded-chunk",
            f"'{event.type}' reached verification unexpanded; feed it to a ChunkExpander first",
        )

    def _between_runs(self, event: Event) -> list[Diagnostic]:
        kind = event.type
        phase = self._phase
        if phase == "failed" or phase == "closed":
            raise UsageError(
                f"verify.{phase}", f"the verifier is {phase}; it cannot check '{kind}'"
            )
        if kind in CHUNK_TYPES:
            self._unexpanded(event)
        if (phase, kind) not in _TRANSITIONS:
            raise self._lifecycle_violation(phase, kind)
        if isinstance(event, RunStartedEvent):
            return self._run_started(event)
        assert isinstance(event, RunErrorEvent)
        if phase == "idle":  # a run that failed before it began
            self.runs.append(RunRecord(run_id=None, thread_id=None, status="failed", error=event))
        else:  # a late failure: the finished run failed after all
            self.runs[-1] = attrs.evolve(self.runs[-1], status="failed", error=event)
        self._phase = "errored"
        return []

    def _lifecycle_violation(self, phase: _Phase, kind: str) -> ProtocolError:
        if phase == "idle":
            return ProtocolError(
                "run.not-started",
                f"First event must be 'RUN_STARTED' (or 'RUN_ERROR'), not '{kind}'",
                subject=kind,
            )
        code, ended, allowed = _AFTER_RUN[phase]
        return ProtocolError(
            code,
            f"The run has already {ended} (run '{self.runs[-1].run_id}'): only {allowed} may "
            f"follow, not '{kind}'",
            subject=kind,
        )

    def _run_started(self, event: RunStartedEvent) -> list[Diagnostic]:
        expected = self._thread_id
        if expected is not None and event.thread_id != expected:
            source = "the run input's" if not self.runs else "this stream's"
            raise ProtocolError(
                "run.thread-mismatch",
                f"RUN_STARTED for run '{event.run_id}' carries threadId '{event.thread_id}', "
                f"not {source} threadId '{expected}': every run carries the input's threadId",
                subject=event.thread_id,
            )
        self._thread_id = event.thread_id
        self.runs.append(
            RunRecord(
                run_id=event.run_id, thread_id=event.thread_id, status="running", started=event
            )
        )
        self._scope = RunScope()
        self._phase = "running"
        return []

    def _nested(self, event: RunStartedEvent) -> list[Diagnostic]:
        raise ProtocolError(
            "run.nested",
            f"Cannot send 'RUN_STARTED' while a run is still active: run "
            f"'{self.runs[-1].run_id}' has not finished, and '{event.run_id}' cannot start",
            subject=event.run_id,
        )

    def _run_finished(self, event: RunFinishedEvent) -> list[Diagnostic]:
        run = self.runs[-1]
        if event.thread_id != run.thread_id:
            raise ProtocolError(
                "run.thread-mismatch",
                f"RUN_FINISHED carries threadId '{event.thread_id}', but run '{run.run_id}' "
                f"started on '{run.thread_id}': RUN_STARTED and RUN_FINISHED carry the "
                f"input's threadId",
                subject=event.thread_id,
            )
        if event.run_id != run.run_id:
            raise ProtocolError(
                "run.run-id-mismatch",
                f"RUN_FINISHED carries runId '{event.run_id}', but the active run is "
                f"'{run.run_id}': RUN_STARTED and RUN_FINISHED must agree on their runId",
                subject=event.run_id,
            )
        scope = self._scope
        scope.text.check_closed()
        scope.tools.check_closed()
        scope.reasoning.check_closed()
        scope.spans.check_closed()
        if scope.steps:
            raise ProtocolError(
                "step.open-at-finish",
                "Cannot send 'RUN_FINISHED' while steps are still active: "
                + ", ".join(f"'{name}' ({describe_owner(owner)})" for owner, name in scope.steps),
                subject=next(iter(scope.steps))[1],
            )
        if scope.subagents:
            raise ProtocolError(
                "subagent.active-at-finish",
                f"Cannot send 'RUN_FINISHED' while subagent invocations are still active: "
                f"{quoted(scope.subagents)} never sent 'SUBAGENT_FINISHED' or "
                f"'SUBAGENT_ERROR'",
                subject=next(iter(scope.subagents)),
            )
        outcome = event.outcome
        if isinstance(outcome, RunFinishedInterruptOutcome):
            self._check_interrupts(outcome)
        elif isinstance(outcome, RunFinishedSuccessOutcome) and outcome.pending_tool_call_ids:
            _check_pending(outcome.pending_tool_call_ids, scope)
        self.runs[-1] = attrs.evolve(run, status=finish_status(outcome), finished=event)
        self._phase = "finished"
        return []

    @staticmethod
    def _check_interrupts(outcome: RunFinishedInterruptOutcome) -> None:
        if not outcome.interrupts:
            raise ProtocolError(
                "interrupt.empty",
                "RUN_FINISHED has an interrupt outcome with no interrupts: it needs at least one",
                subject="RUN_FINISHED",
            )
        seen: set[str] = set()
        for interrupt in outcome.interrupts:
            if interrupt.id in seen:
                raise ProtocolError(
                    "interrupt.duplicate-id",
                    f"RUN_FINISHED has two interrupts carrying the id '{interrupt.id}': "
                    f"interrupt ids are unique within a run",
                    subject=interrupt.id,
                )
            seen.add(interrupt.id)

    def _run_error(self, event: RunErrorEvent) -> list[Diagnostic]:
        # The run's own failure report: whatever is still open is abandoned with it.
        self.runs[-1] = attrs.evolve(self.runs[-1], status="failed", error=event)
        self._phase = "errored"
        return []

    # ---- the rules for what happens inside a run ------------------------------------------

    # ---- streamed items ----------------------------------------------------------------

    def _text_start(self, event: TextMessageStartEvent) -> list[Diagnostic]:
        self._scope.text.start(event.message_id, event.subagent_run_id)
        self._known_messages.add(event.message_id)
        return []

    def _text_continue(self, event: TextMessageContentEvent) -> list[Diagnostic]:
        self._scope.text.touch("TEXT_MESSAGE_CONTENT", event.message_id, event.subagent_run_id)
        return []

    def _text_end(self, event: TextMessageEndEvent) -> list[Diagnostic]:
        self._scope.text.end("TEXT_MESSAGE_END", event.message_id, event.subagent_run_id)
        return []

    def _tool_start(self, event: ToolCallStartEvent) -> list[Diagnostic]:
        scope = self._scope
        tag = event.subagent_run_id
        inherited: Owner = None
        parent = event.parent_message_id
        if parent is not None and parent in scope.text.owner:
            inherited = scope.text.owner[parent]
            if tag is not None and tag != inherited and event.tool_call_id not in scope.tools.owner:
                raise ProtocolError(
                    "owner.mismatch",
                    f"TOOL_CALL_START for tool call '{event.tool_call_id}' carries "
                    f"subagentRunId '{tag}', which does not match the owner of its parent "
                    f"message '{parent}' ({describe_owner(inherited)}): a tool call inherits "
                    f"its message's attribution",
                    subject=event.tool_call_id,
                )
        scope.tools.start(event.tool_call_id, tag, inherited)
        scope.calls[event.tool_call_id] = None
        self._known_tool_calls.add(event.tool_call_id)
        return []

    def _tool_continue(self, event: ToolCallArgsEvent) -> list[Diagnostic]:
        self._scope.tools.touch("TOOL_CALL_ARGS", event.tool_call_id, event.subagent_run_id)
        return []

    def _tool_end(self, event: ToolCallEndEvent) -> list[Diagnostic]:
        self._scope.tools.end("TOOL_CALL_END", event.tool_call_id, event.subagent_run_id)
        return []

    def _tool_result(self, event: ToolCallResultEvent) -> list[Diagnostic]:
        self._known_messages.add(event.message_id)
        self._scope.answered.add(event.tool_call_id)
        return []

    def _reasoning_start(self, event: ReasoningMessageStartEvent) -> list[Diagnostic]:
        self._scope.reasoning.start(event.message_id, event.subagent_run_id)
        self._known_messages.add(event.message_id)
        return []

    def _reasoning_continue(self, event: ReasoningMessageContentEvent) -> list[Diagnostic]:
        self._scope.reasoning.touch(
            "REASONING_MESSAGE_CONTENT", event.message_id, event.subagent_run_id
        )
        return []

    def _reasoning_end(self, event: ReasoningMessageEndEvent) -> list[Diagnostic]:
        self._scope.reasoning.end("REASONING_MESSAGE_END", event.message_id, event.subagent_run_id)
        return []

    def _span_start(self, event: ReasoningStartEvent) -> list[Diagnostic]:
        # Spans have no owner rule (only items do): their attribution is not compared.
        self._scope.spans.start(event.message_id, None)
        return []

    def _span_end(self, event: ReasoningEndEvent) -> list[Diagnostic]:
        self._scope.spans.end("REASONING_END", event.message_id, None)
        return []

    def _encrypted_value(self, event: ReasoningEncryptedValueEvent) -> list[Diagnostic]:
        if event.subtype == TOOL_CALL_SUBTYPE:
            known, noun = self._known_tool_calls, "tool call"
        else:
            known, noun = self._known_messages, "message"
        if event.entity_id in known:
            return []
        return [
            Diagnostic(
                code="encrypted-value.unknown-entity",
                message=(
                    f"REASONING_ENCRYPTED_VALUE names {noun} '{event.entity_id}', which this "
                    f"consumer does not know; the value has nowhere to be stored"
                ),
                path="/entityId",
                subject=event.entity_id,
            )
        ]

    # ---- steps -------------------------------------------------------------------------

    def _step_started(self, event: StepStartedEvent) -> list[Diagnostic]:
        key = (event.subagent_run_id, event.step_name)
        steps = self._scope.steps
        if key in steps:
            raise ProtocolError(
                "step.duplicate-open",
                f"Cannot send 'STEP_STARTED' for step '{event.step_name}' of "
                f"{describe_owner(key[0])}: that step is already active",
                subject=event.step_name,
            )
        steps[key] = None
        return []

    def _step_finished(self, event: StepFinishedEvent) -> list[Diagnostic]:
        name, tag = event.step_name, event.subagent_run_id
        steps = self._scope.steps
        if (tag, name) in steps:
            del steps[(tag, name)]
            return []
        others = [owner for owner, open_name in steps if open_name == name]
        if others:
            raise ProtocolError(
                "owner.mismatch",
                f"STEP_FINISHED for step '{name}' is attributed to {describe_owner(tag)}, which "
                f"does not match the attribution of its STEP_STARTED "
                f"({', '.join(describe_owner(o) for o in others)})",
                subject=name,
            )
        raise ProtocolError(
            "step.not-started",
            f"Cannot send 'STEP_FINISHED' for step '{name}' of {describe_owner(tag)} that was "
            f"not started",
            subject=name,
        )

    # ---- subagents ---------------------------------------------------------------------

    def _subagent_started(self, event: SubagentStartedEvent) -> list[Diagnostic]:
        scope = self._scope
        sid = event.subagent_run_id
        if sid in scope.announced:  # still active, or already finished in this run
            if sid in scope.subagents:
                raise ProtocolError(
                    "subagent.already-active",
                    f"Cannot send 'SUBAGENT_STARTED' for '{sid}': "
                    "that invocation is already active",
                    subject=sid,
                )
            raise ProtocolError(
                "subagent.reused",
                f"Cannot send 'SUBAGENT_STARTED' for '{sid}': that subagentRunId already "
                f"finished in this run, and ids are not reused within a run",
                subject=sid,
            )
        parent = event.parent_subagent_run_id
        if parent is not None and parent not in scope.announced:
            raise ProtocolError(
                "subagent.unknown-parent",
                f"SUBAGENT_STARTED for '{sid}' names parentSubagentRunId '{parent}', which "
                f"was not announced in this run",
                subject=parent,
            )
        if sid in scope.attributed:
            raise ProtocolError(
                "subagent.announced-late",
                f"SUBAGENT_STARTED for '{sid}' arrives after events already attributed to "
                f"it: an invocation is announced before anything it produces",
                subject=sid,
            )
        scope.subagents[sid] = None
        scope.announced.add(sid)
        return []

    def _subagent_ended(
        self, event: SubagentFinishedEvent | SubagentErrorEvent
    ) -> list[Diagnostic]:
        scope = self._scope
        sid = event.subagent_run_id
        if sid not in scope.subagents:
            why = "it already ended" if sid in scope.announced else "it was never started"
            raise ProtocolError(
                "subagent.not-active",
                f"Cannot send '{event.type}' for '{sid}': no active subagent invocation "
                f"has that subagentRunId ({why} in this run)",
                subject=sid,
            )
        del scope.subagents[sid]
        return []

    # ---- activities and snapshots ------------------------------------------------------

    def _activity_snapshot(self, event: ActivitySnapshotEvent) -> list[Diagnostic]:
        # A replacing snapshot (replace absent or true) re-mints the owner, as does the
        # one that creates the activity; ``replace: false`` on an existing one does not.
        if event.replace is not False or event.message_id not in self._activity_owner:
            self._activity_owner[event.message_id] = event.subagent_run_id
        return []

    def _activity_delta(self, event: ActivityDeltaEvent) -> list[Diagnostic]:
        tag = event.subagent_run_id
        owners = self._activity_owner
        if tag is not None and event.message_id in owners and owners[event.message_id] != tag:
            raise ProtocolError(
                "owner.mismatch",
                f"ACTIVITY_DELTA for activity message '{event.message_id}' carries "
                f"subagentRunId '{tag}', which does not match the owner set by its last "
                f"replacing ACTIVITY_SNAPSHOT ({describe_owner(owners[event.message_id])})",
                subject=event.message_id,
            )
        return []

    def _messages_snapshot(self, event: MessagesSnapshotEvent) -> list[Diagnostic]:
        self._learn_messages(event.messages, self._scope)
        return []

    def _learn_messages(self, messages: Iterable[Message], scope: RunScope | None = None) -> None:
        """Note ids and owners that a snapshot (or the run input) establishes."""
        for message in messages:
            owner = message.subagent_run_id
            if isinstance(message, ActivityMessage):
                self._activity_owner[message.id] = owner
                continue
            self._known_messages.add(message.id)
            if isinstance(message, AssistantMessage) and message.tool_calls:
                for call in message.tool_calls:
                    self._known_tool_calls.add(call.id)
                    if scope is not None:
                        scope.tools.owner[call.id] = owner
            if scope is None:
                continue
            if isinstance(message, ReasoningMessage):
                scope.reasoning.owner[message.id] = owner
            elif not isinstance(message, ToolMessage):
                scope.text.owner[message.id] = owner


def _check_pending(listed: list[str], scope: RunScope) -> None:
    """A non-empty ``pendingToolCallIds`` is the list of the run's unanswered calls."""
    expected = scope.unanswered()
    if listed == expected:
        return
    never = [i for i in listed if i not in scope.calls]
    answered = [i for i in listed if i in scope.answered]
    missing = [i for i in expected if i not in listed]
    why = "; ".join(
        f"{what}: {quoted(ids)}"
        for what, ids in (
            ("never started in this run", never),
            ("answered by a TOOL_CALL_RESULT", answered),
            ("left unanswered but not listed", missing),
        )
        if ids
    ) or ("listed more than once or out of the order the calls were made")
    raise ProtocolError(
        "toolcall.pending-mismatch",
        f"RUN_FINISHED lists pendingToolCallIds [{quoted(listed)}], but the run leaves "
        f"[{quoted(expected)}] unanswered ({why}): when sent, the list agrees with the "
        f"stream",
        subject=next(iter(never or answered or missing or listed)),
    )


_Rule = Callable[[Verifier, Any], list[Diagnostic]]

_IN_RUN: Final[dict[type, _Rule]] = dispatch_table(
    {
        "RUN_STARTED": Verifier._nested,
        "RUN_FINISHED": Verifier._run_finished,
        "RUN_ERROR": Verifier._run_error,
        "TEXT_MESSAGE_START": Verifier._text_start,
        "TEXT_MESSAGE_CONTENT": Verifier._text_continue,
        "TEXT_MESSAGE_END": Verifier._text_end,
        "TOOL_CALL_START": Verifier._tool_start,
        "TOOL_CALL_ARGS": Verifier._tool_continue,
        "TOOL_CALL_END": Verifier._tool_end,
        "TOOL_CALL_RESULT": Verifier._tool_result,
        "REASONING_MESSAGE_START": Verifier._reasoning_start,
        "REASONING_MESSAGE_CONTENT": Verifier._reasoning_continue,
        "REASONING_MESSAGE_END": Verifier._reasoning_end,
        "REASONING_START": Verifier._span_start,
        "REASONING_END": Verifier._span_end,
        "REASONING_ENCRYPTED_VALUE": Verifier._encrypted_value,
        "STEP_STARTED": Verifier._step_started,
        "STEP_FINISHED": Verifier._step_finished,
        "SUBAGENT_STARTED": Verifier._subagent_started,
        "SUBAGENT_FINISHED": Verifier._subagent_ended,
        "SUBAGENT_ERROR": Verifier._subagent_ended,
        "ACTIVITY_SNAPSHOT": Verifier._activity_snapshot,
        "ACTIVITY_DELTA": Verifier._activity_delta,
        "MESSAGES_SNAPSHOT": Verifier._messages_snapshot,
        # state, RAW and CUSTOM have no sequencing rule of their own
        "CUSTOM": Verifier._custom,
        **dict.fromkeys(kinds("STATE_SNAPSHOT", "STATE_DELTA", "RAW"), Verifier._free),
        **dict.fromkeys(CHUNK_TYPES, Verifier._unexpanded),
    },
    Verifier._no_rule,
)
"""The in-run rule of every generated event class (``_no_rule`` for a class with none)."""

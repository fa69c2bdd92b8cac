"""The verifier's per-entity rules: streamed items, steps, subagents, activities.

A mixin of :class:`~agentproto.agui._verify.verifier.Verifier`; the rules and their error
codes are described in :mod:`._verify`. Each rule checks one event against the
bookkeeping of the run in progress and raises :class:`~agentproto.ProtocolError` on
a violation, or returns the tolerated problems it found.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import ProtocolError
from agentproto.agui._generated import (
    ActivityDeltaEvent,
    ActivityMessage,
    ActivitySnapshotEvent,
    AssistantMessage,
    Message,
    MessagesSnapshotEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessage,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
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
from agentproto.agui._protocol.kinds import TOOL_CALL_SUBTYPE
from agentproto.agui._verify.runs import Owner, _describe, _RunScope

__all__: list[str] = []


class _EntityRules:
    """The rules for what happens inside a run (a mixin of the verifier)."""

    _scope: _RunScope
    _known_messages: set[str]
    _known_tool_calls: set[str]
    _activity_owner: dict[str, Owner]

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
                    f"message '{parent}' ({_describe(inherited)}): a tool call inherits "
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
                f"{_describe(key[0])}: that step is already active",
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
                f"STEP_FINISHED for step '{name}' is attributed to {_describe(tag)}, which "
                f"does not match the attribution of its STEP_STARTED "
                f"({', '.join(_describe(o) for o in others)})",
                subject=name,
            )
        raise ProtocolError(
            "step.not-started",
            f"Cannot send 'STEP_FINISHED' for step '{name}' of {_describe(tag)} that was "
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
                f"replacing ACTIVITY_SNAPSHOT ({_describe(owners[event.message_id])})",
                subject=event.message_id,
            )
        return []

    def _messages_snapshot(self, event: MessagesSnapshotEvent) -> list[Diagnostic]:
        self._learn_messages(event.messages, self._scope)
        return []

    def _learn_messages(self, messages: Iterable[Message], scope: _RunScope | None = None) -> None:
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

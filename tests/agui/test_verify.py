"""Verification (SPEC-NOTES "Lifecycle and verification", "Subagents and attribution")."""

from __future__ import annotations

import ast
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from agentproto import ProtocolError, SchemaError, UsageError
from agentproto._core.diagnostics import Diagnostic
from agentproto.agui import Event, parse_event, parse_message
from agentproto.agui._consume.chunks import ChunkExpander
from agentproto.agui._verify.verifier import Verifier
from agentproto.agui.schema import RunFinishedEvent, RunFinishedInterruptOutcome
from tests.agui.synthetic import FutureEvent
from tests.needs import spec_dir


def E(type_: str, **fields: Any) -> Event:
    """A typed event from wire-style (camelCase) fields."""
    return parse_event({"type": type_, **fields})


START = E("RUN_STARTED", threadId="t", runId="r")
FINISH = E("RUN_FINISHED", threadId="t", runId="r")


def feed(*events: Event, verifier: Verifier | None = None) -> tuple[Verifier, list[Diagnostic]]:
    """Feed events to a verifier (a new one by default); returns it and the diagnostics."""
    v = verifier if verifier is not None else Verifier()
    found: list[Diagnostic] = []
    for event in events:
        found += v.feed(event)
    return v, found


def accepts(*events: Event, **kwargs: Any) -> Verifier:
    """The events form a complete, valid stream."""
    v, _ = feed(*events, verifier=Verifier(**kwargs))
    v.close()
    return v


def rejects(code: str, *events: Event, **kwargs: Any) -> ProtocolError:
    """Feeding the events (then closing) raises a ProtocolError with ``code``."""
    v = Verifier(**kwargs)
    with pytest.raises(ProtocolError) as info:
        feed(*events, verifier=v)
        v.close()
    assert info.value.code == code, str(info.value)
    return info.value


def in_run(*events: Event) -> tuple[Event, ...]:
    return (START, *events, FINISH)


# ---- run lifecycle ----------------------------------------------------------------------


def test_first_event_must_be_run_started() -> None:
    """A stream opening with anything but RUN_STARTED or RUN_ERROR is rejected."""
    exc = rejects("run.not-started", E("TEXT_MESSAGE_START", messageId="m1"))
    assert "First event must be 'RUN_STARTED'" in str(exc)
    assert "TEXT_MESSAGE_START" in str(exc)


def test_stream_may_open_with_run_error() -> None:
    """RUN_ERROR first is admitted: a failed run with no id, its error exposed."""
    error = E("RUN_ERROR", message="unreachable", code="UNAVAILABLE")
    v = accepts(error)
    [run] = v.runs
    assert (run.run_id, run.status, run.error) == (None, "failed", error)
    assert not run.succeeded


def test_nested_run_started_is_fatal() -> None:
    """A RUN_STARTED while a run is active is rejected, naming both runs."""
    exc = rejects("run.nested", START, E("RUN_STARTED", threadId="t", runId="r2"))
    assert "Cannot send 'RUN_STARTED' while a run is still active" in str(exc)
    assert "'r'" in str(exc) and "'r2'" in str(exc)


def test_event_after_run_finished_is_fatal() -> None:
    """After RUN_FINISHED only RUN_STARTED or a late RUN_ERROR may follow."""
    exc = rejects("run.after-finished", START, FINISH, E("TEXT_MESSAGE_START", messageId="m1"))
    assert "The run has already finished with 'RUN_FINISHED'" in str(exc)


def test_late_run_error_fails_the_finished_run() -> None:
    """A RUN_ERROR after RUN_FINISHED is accepted and marks that run failed."""
    late = E("RUN_ERROR", message="transport failed while flushing")
    v = accepts(START, FINISH, late)
    assert v.runs[0].status == "failed"
    assert v.runs[0].error is late
    assert v.runs[0].finished is FINISH


def test_only_run_started_may_follow_run_error() -> None:
    """After RUN_ERROR any event but RUN_STARTED is rejected, a second RUN_ERROR included."""
    rejects("run.after-error", START, E("RUN_ERROR", message="x"), E("CUSTOM", name="n", value=1))
    rejects("run.after-error", START, E("RUN_ERROR", message="x"), E("RUN_ERROR", message="y"))


def test_run_started_after_run_error_begins_a_new_run() -> None:
    """A RUN_STARTED after RUN_ERROR opens a new run with nothing open."""
    v = accepts(
        START,
        E("TEXT_MESSAGE_START", messageId="m1"),
        E("RUN_ERROR", message="first run failed"),
        E("RUN_STARTED", threadId="t", runId="r2"),
        E("TEXT_MESSAGE_START", messageId="m1"),
        E("TEXT_MESSAGE_END", messageId="m1"),
        E("RUN_FINISHED", threadId="t", runId="r2"),
    )
    assert [(r.run_id, r.status) for r in v.runs] == [("r", "failed"), ("r2", "succeeded")]


def test_sequential_runs_are_recorded() -> None:
    """Runs may follow each other in one stream; each gets its own record."""
    v = accepts(
        START,
        FINISH,
        E("RUN_STARTED", threadId="t", runId="r2"),
        E("RUN_FINISHED", threadId="t", runId="r2"),
    )
    assert [r.run_id for r in v.runs] == ["r", "r2"]
    assert all(r.succeeded for r in v.runs)


def test_current_run_is_the_open_one() -> None:
    """current_run names the run in progress, and None between runs."""
    v, _ = feed(START)
    assert v.current_run is not None and v.current_run.status == "running"
    feed(FINISH, verifier=v)
    assert v.current_run is None


def test_run_started_carries_the_inputs_thread_id() -> None:
    """RUN_STARTED with another threadId than the run input's is rejected."""
    exc = rejects("run.thread-mismatch", START, thread_id="t-input")
    assert "'t'" in str(exc) and "'t-input'" in str(exc)


def test_second_run_on_another_thread_is_fatal() -> None:
    """Without a known input, the first run's threadId binds every later run."""
    exc = rejects("run.thread-mismatch", START, FINISH, E("RUN_STARTED", threadId="u", runId="r2"))
    assert "carries threadId 'u'" in str(exc)


def test_run_finished_carries_its_runs_thread_id() -> None:
    """RUN_FINISHED naming another threadId than its RUN_STARTED is rejected."""
    exc = rejects("run.thread-mismatch", START, E("RUN_FINISHED", threadId="u", runId="r"))
    assert "carry the input's threadId" in str(exc)


def test_run_finished_agrees_on_run_id() -> None:
    """RUN_FINISHED naming another runId than its RUN_STARTED is rejected."""
    exc = rejects("run.run-id-mismatch", START, E("RUN_FINISHED", threadId="t", runId="other"))
    assert "must agree on their runId" in str(exc)
    assert "'other'" in str(exc) and "'r'" in str(exc)


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        (None, "succeeded"),
        ({"type": "success"}, "succeeded"),
        ({"type": "cancelled"}, "cancelled"),
        ({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}, "interrupted"),
    ],
)
def test_outcome_sets_the_run_status(outcome: dict[str, Any] | None, status: str) -> None:
    """No outcome or success succeeds; cancelled and interrupt are neither success nor failure."""
    fields = {} if outcome is None else {"outcome": outcome}
    v = accepts(START, E("RUN_FINISHED", threadId="t", runId="r", **fields))
    run = v.runs[0]
    assert run.status == status
    assert run.succeeded is (status == "succeeded")
    if outcome is None:
        assert run.outcome is None
    else:
        assert run.outcome is not None and run.outcome.type == outcome["type"]


def test_interrupt_ids_are_unique_within_a_run() -> None:
    """Two interrupts sharing an id in one interrupt outcome are rejected."""
    interrupts = [{"id": "i1", "reason": "a"}, {"id": "i1", "reason": "b"}]
    exc = rejects(
        "interrupt.duplicate-id",
        START,
        E(
            "RUN_FINISHED",
            threadId="t",
            runId="r",
            outcome={"type": "interrupt", "interrupts": interrupts},
        ),
    )
    assert "two interrupts carrying the id 'i1'" in str(exc)


def test_interrupt_outcome_needs_an_interrupt() -> None:
    """An interrupt outcome built without interrupts is rejected (the schema forbids it too)."""
    empty = RunFinishedEvent(
        thread_id="t", run_id="r", outcome=RunFinishedInterruptOutcome(interrupts=[])
    )
    rejects("interrupt.empty", START, empty)


def test_truncated_stream_fails_the_run() -> None:
    """A stream ending inside a run raises at close and never reports success."""
    v, _ = feed(START, E("TEXT_MESSAGE_START", messageId="m1"))
    with pytest.raises(ProtocolError) as info:
        v.close()
    assert info.value.code == "stream.truncated"
    assert "ended without a terminal event" in str(info.value)
    assert v.runs[0].status == "failed"
    assert v.runs[0].violation is info.value


def test_empty_stream_is_truncated() -> None:
    """A stream with no event at all has no outcome either."""
    exc = rejects("stream.truncated")
    assert "ended without a terminal event" in str(exc)


def test_violation_fails_the_open_run() -> None:
    """A rejected event marks the run in progress failed, with the error as its violation."""
    v = Verifier()
    with pytest.raises(ProtocolError) as info:
        feed(START, E("TEXT_MESSAGE_END", messageId="m1"), verifier=v)
    assert v.runs[0].status == "failed"
    assert v.runs[0].violation is info.value


def test_verifier_refuses_input_after_failure_or_close() -> None:
    """Feeding a failed or closed verifier is a caller error."""
    v = Verifier()
    with pytest.raises(ProtocolError):
        v.feed(FINISH)
    with pytest.raises(UsageError):
        v.feed(START)
    closed = accepts(START, FINISH)
    with pytest.raises(UsageError):
        closed.feed(START)


def test_unexpanded_chunk_is_a_caller_error() -> None:
    """A chunk reaching the verifier means expansion was skipped: a UsageError."""
    with pytest.raises(UsageError) as info:
        feed(START, E("TEXT_MESSAGE_CHUNK", messageId="m1", delta="x"))
    assert info.value.code == "verify.unexpanded-chunk"


def test_abort_fails_the_open_run() -> None:
    """abort() records another stage's fatal error as the open run's violation."""
    v, _ = feed(START)
    error = SchemaError("type", "/delta", "expected string")
    v.abort(error)
    assert (v.runs[0].status, v.runs[0].violation) == ("failed", error)


# ---- streamed items ---------------------------------------------------------------------

FAMILIES = {
    "message": ("TEXT_MESSAGE", "messageId", "CONTENT", {}),
    "toolcall": ("TOOL_CALL", "toolCallId", "ARGS", {"toolCallName": "search"}),
    "reasoning": ("REASONING_MESSAGE", "messageId", "CONTENT", {"role": "reasoning"}),
}


def family(code: str, part: str, item: str, **fields: Any) -> Event:
    prefix, id_field, content, start_fields = FAMILIES[code]
    if part == "START":
        fields = start_fields | fields
    if part == "CONTENT":
        part = content
        fields = {"delta": "d"} | fields
    return E(f"{prefix}_{part}", **{id_field: item}, **fields)


@pytest.mark.parametrize("code", sorted(FAMILIES))
def test_item_triad_is_accepted(code: str) -> None:
    """START, CONTENT (ARGS), END for one id is a valid item."""
    accepts(
        *in_run(
            family(code, "START", "x1"), family(code, "CONTENT", "x1"), family(code, "END", "x1")
        )
    )


@pytest.mark.parametrize("code", sorted(FAMILIES))
def test_no_duplicate_open(code: str) -> None:
    """A START for an id that is already open is rejected."""
    exc = rejects(
        f"{code}.duplicate-open", START, family(code, "START", "x1"), family(code, "START", "x1")
    )
    assert "'x1'" in str(exc) and f"{FAMILIES[code][0]}_START" in str(exc)


@pytest.mark.parametrize("code", sorted(FAMILIES))
@pytest.mark.parametrize("part", ["CONTENT", "END"])
def test_no_continuation_for_an_id_not_open(code: str, part: str) -> None:
    """A CONTENT (ARGS) or END for an id nothing opened is rejected, never invented."""
    exc = rejects(f"{code}.not-open", START, family(code, part, "orphan-1"))
    assert "found with ID 'orphan-1'" in str(exc)
    assert exc.subject == "orphan-1"


@pytest.mark.parametrize("code", sorted(FAMILIES))
def test_no_continuation_after_end(code: str) -> None:
    """Once END closed an item, its CONTENT (ARGS) is rejected."""
    rejects(
        f"{code}.not-open",
        START,
        family(code, "START", "x1"),
        family(code, "END", "x1"),
        family(code, "CONTENT", "x1"),
    )


@pytest.mark.parametrize("code", sorted(FAMILIES))
def test_items_closed_by_run_finished(code: str) -> None:
    """RUN_FINISHED with an item still open is rejected, naming it."""
    exc = rejects(f"{code}.open-at-finish", *in_run(family(code, "START", "x1")))
    assert "Cannot send 'RUN_FINISHED'" in str(exc) and "'x1'" in str(exc)


def test_open_text_message_message_wording() -> None:
    """The open-at-finish message names the family as the corpus wording does."""
    exc = rejects("message.open-at-finish", *in_run(E("TEXT_MESSAGE_START", messageId="m1")))
    assert "Cannot send 'RUN_FINISHED' while text messages are still active" in str(exc)


@pytest.mark.parametrize("code", ["message", "toolcall", "reasoning"])
def test_closed_item_may_be_reopened(code: str) -> None:
    """A closed message, tool call or reasoning message may be reopened and appended to."""
    accepts(
        *in_run(
            family(code, "START", "x1"),
            family(code, "END", "x1"),
            family(code, "START", "x1"),
            family(code, "CONTENT", "x1"),
            family(code, "END", "x1"),
        )
    )


def test_reasoning_span_rules() -> None:
    """Spans: no duplicate open, no END for one not open, all closed by RUN_FINISHED."""
    span = E("REASONING_START", messageId="sp1")
    end = E("REASONING_END", messageId="sp1")
    accepts(*in_run(span, end))
    exc = rejects("reasoning.span-duplicate-open", START, span, span)
    assert "'sp1'" in str(exc)
    exc = rejects("reasoning.span-not-open", START, end)
    assert "'sp1'" in str(exc) and "REASONING_END" in str(exc)
    rejects("reasoning.span-open-at-finish", *in_run(span))


def test_span_and_message_ids_are_separate() -> None:
    """A span and the reasoning message inside it may share an id; each has its own set."""
    accepts(
        *in_run(
            E("REASONING_START", messageId="x"),
            E("REASONING_MESSAGE_START", messageId="x", role="reasoning"),
            E("REASONING_MESSAGE_END", messageId="x"),
            E("REASONING_END", messageId="x"),
        )
    )
    rejects(
        "reasoning.not-open",
        START,
        E("REASONING_START", messageId="x"),
        E("REASONING_MESSAGE_CONTENT", messageId="x", delta="d"),
    )


def test_interleaved_items_are_accepted() -> None:
    """Messages, tool calls and reasoning messages may interleave freely."""
    accepts(
        *in_run(
            E("TEXT_MESSAGE_START", messageId="m1"),
            E("TOOL_CALL_START", toolCallId="tc1", toolCallName="n", parentMessageId="m1"),
            E("TEXT_MESSAGE_CONTENT", messageId="m1", delta="a"),
            E("TOOL_CALL_ARGS", toolCallId="tc1", delta="{"),
            E("TEXT_MESSAGE_END", messageId="m1"),
            E("TOOL_CALL_END", toolCallId="tc1"),
        )
    )


def test_tool_arguments_are_not_validated() -> None:
    """Tool arguments that are not JSON are not a protocol violation."""
    accepts(
        *in_run(
            E("TOOL_CALL_START", toolCallId="tc1", toolCallName="n"),
            E("TOOL_CALL_ARGS", toolCallId="tc1", delta="{not json"),
            E("TOOL_CALL_END", toolCallId="tc1"),
        )
    )


def test_run_error_abandons_open_items() -> None:
    """RUN_ERROR ends whatever was open, and the next run starts with nothing open."""
    accepts(
        START,
        E("TEXT_MESSAGE_START", messageId="m1"),
        E("STEP_STARTED", stepName="s"),
        E("SUBAGENT_STARTED", subagentRunId="s1", name="n"),
        E("RUN_ERROR", message="x"),
        E("RUN_STARTED", threadId="t", runId="r2"),
        E("RUN_FINISHED", threadId="t", runId="r2"),
    )


# ---- owners -------------------------------------------------------------------------------


@pytest.mark.parametrize("code", sorted(FAMILIES))
@pytest.mark.parametrize("part", ["CONTENT", "END"])
def test_tagged_continuation_disagreeing_with_opener_is_rejected(code: str, part: str) -> None:
    """A continuation tagged with another subagentRunId than its opener's is rejected."""
    exc = rejects(
        "owner.mismatch",
        START,
        family(code, "START", "x1", subagentRunId="s1"),
        family(code, part, "x1", subagentRunId="s2"),
    )
    assert "does not match" in str(exc)
    assert "'x1'" in str(exc) and "'s1'" in str(exc) and "'s2'" in str(exc)


@pytest.mark.parametrize("code", sorted(FAMILIES))
def test_tagged_continuation_of_a_parent_item_is_rejected(code: str) -> None:
    """A parent-owned item continued under a subagent's tag is an owner mismatch."""
    rejects(
        "owner.mismatch",
        START,
        family(code, "START", "x1"),
        family(code, "CONTENT", "x1", subagentRunId="s1"),
    )


@pytest.mark.parametrize("code", sorted(FAMILIES))
def test_untagged_continuation_is_accepted(code: str) -> None:
    """A continuation carrying no tag continues whatever its opener owns."""
    accepts(
        *in_run(
            family(code, "START", "x1", subagentRunId="s1"),
            family(code, "CONTENT", "x1"),
            family(code, "END", "x1", subagentRunId="s1"),
        )
    )


def test_reopening_under_another_owner_is_rejected() -> None:
    """Within a run, a reopening START tagged with another owner is an owner mismatch."""
    rejects(
        "owner.mismatch",
        START,
        E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s1"),
        E("TEXT_MESSAGE_END", messageId="m1"),
        E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s2"),
    )


def test_untagged_reopening_keeps_the_owner() -> None:
    """An untagged reopening continues under the owner the message already had."""
    rejects(
        "owner.mismatch",
        START,
        E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s1"),
        E("TEXT_MESSAGE_END", messageId="m1"),
        E("TEXT_MESSAGE_START", messageId="m1"),
        E("TEXT_MESSAGE_CONTENT", messageId="m1", delta="d", subagentRunId="s2"),
    )


def test_ownership_tracking_resets_across_runs() -> None:
    """A message reopened in a later run under another owner is not checked against the old."""
    accepts(
        START,
        E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s1"),
        E("TEXT_MESSAGE_END", messageId="m1"),
        FINISH,
        E("RUN_STARTED", threadId="t", runId="r2"),
        E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s2"),
        E("TEXT_MESSAGE_END", messageId="m1"),
        E("RUN_FINISHED", threadId="t", runId="r2"),
    )


def test_tool_call_inherits_its_parent_messages_owner() -> None:
    """An untagged TOOL_CALL_START takes the owner of the message parentMessageId names."""
    opener = (
        START,
        E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s1"),
        E("TEXT_MESSAGE_END", messageId="m1"),
        E("TOOL_CALL_START", toolCallId="tc1", toolCallName="n", parentMessageId="m1"),
    )
    exc = rejects(
        "owner.mismatch",
        *opener,
        E("TOOL_CALL_ARGS", toolCallId="tc1", delta="{}", subagentRunId="s2"),
    )
    assert "'tc1'" in str(exc)
    accepts(
        *opener,
        E("TOOL_CALL_ARGS", toolCallId="tc1", delta="{}", subagentRunId="s1"),
        E("TOOL_CALL_END", toolCallId="tc1"),
        FINISH,
    )


def test_tool_call_tagged_against_its_parent_message_is_rejected() -> None:
    """A tool call attributed to another owner than the message carrying it is rejected."""
    exc = rejects(
        "owner.mismatch",
        START,
        E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s1"),
        E(
            "TOOL_CALL_START",
            toolCallId="tc1",
            toolCallName="n",
            parentMessageId="m1",
            subagentRunId="s2",
        ),
    )
    assert "'m1'" in str(exc) and "'tc1'" in str(exc)


def test_tool_call_with_unknown_parent_message_keeps_its_own_tag() -> None:
    """A parentMessageId naming no known message gives the call no inherited owner."""
    accepts(
        *in_run(
            E(
                "TOOL_CALL_START",
                toolCallId="tc1",
                toolCallName="n",
                parentMessageId="elsewhere",
                subagentRunId="s1",
            ),
            E("TOOL_CALL_END", toolCallId="tc1", subagentRunId="s1"),
        )
    )


def test_messages_snapshot_establishes_owners() -> None:
    """A message restated by MESSAGES_SNAPSHOT is owned as the snapshot says."""
    snapshot = E(
        "MESSAGES_SNAPSHOT",
        messages=[{"id": "m1", "role": "assistant", "content": "x", "subagentRunId": "s1"}],
    )
    rejects(
        "owner.mismatch",
        START,
        snapshot,
        E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s2"),
    )


def activity(replace: bool | None = None, **fields: Any) -> Event:
    if replace is not None:
        fields["replace"] = replace
    return E("ACTIVITY_SNAPSHOT", messageId="a1", activityType="t", content={}, **fields)


def delta(**fields: Any) -> Event:
    return E("ACTIVITY_DELTA", messageId="a1", activityType="t", patch=[], **fields)


def test_activity_delta_tagged_against_its_owner_is_rejected() -> None:
    """An ACTIVITY_DELTA tagged with another owner than the creating snapshot's is rejected."""
    exc = rejects("owner.mismatch", START, activity(subagentRunId="s1"), delta(subagentRunId="s2"))
    assert "ACTIVITY_DELTA" in str(exc) and "'a1'" in str(exc)


def test_untagged_activity_delta_is_accepted() -> None:
    """An untagged ACTIVITY_DELTA is never a disagreement."""
    accepts(*in_run(activity(subagentRunId="s1"), delta(), delta(subagentRunId="s1")))


def test_replacing_snapshot_re_mints_the_owner() -> None:
    """A replacing snapshot sets the owner anew, to absent (the parent) included."""
    accepts(
        *in_run(
            activity(subagentRunId="s1"), activity(subagentRunId="s2"), delta(subagentRunId="s2")
        )
    )
    rejects(
        "owner.mismatch",
        START,
        activity(subagentRunId="s1"),
        activity(replace=True),
        delta(subagentRunId="s1"),
    )


def test_non_replacing_snapshot_keeps_the_owner() -> None:
    """A replace:false snapshot does not re-mint the owner of an existing activity."""
    accepts(
        *in_run(
            activity(subagentRunId="s1"),
            activity(replace=False, subagentRunId="s2"),
            delta(subagentRunId="s1"),
        )
    )
    rejects(
        "owner.mismatch",
        START,
        activity(subagentRunId="s1"),
        activity(replace=False, subagentRunId="s2"),
        delta(subagentRunId="s2"),
    )


def test_non_replacing_snapshot_creating_an_activity_sets_its_owner() -> None:
    """replace:false on an unseen activity creates it, owner included."""
    rejects(
        "owner.mismatch",
        START,
        activity(replace=False, subagentRunId="s1"),
        delta(subagentRunId="s2"),
    )


def test_activity_delta_for_unknown_activity_is_not_a_violation() -> None:
    """A delta for an activity never created is the reducer's warning, not a failure here."""
    accepts(*in_run(delta(subagentRunId="s1")))


# ---- steps --------------------------------------------------------------------------------


def step(kind: str, name: str = "plan", **fields: Any) -> Event:
    return E(f"STEP_{kind}", stepName=name, **fields)


def test_step_cannot_be_reopened_while_open() -> None:
    """A STEP_STARTED for a step its owner already has open is rejected."""
    exc = rejects("step.duplicate-open", START, step("STARTED"), step("STARTED"))
    assert "'plan'" in str(exc)


def test_step_must_be_started_before_finishing() -> None:
    """A STEP_FINISHED for a step never opened is rejected, naming it."""
    exc = rejects("step.not-started", START, step("FINISHED", "never-opened"))
    assert "that was not started" in str(exc) and "'never-opened'" in str(exc)


def test_step_finished_carries_its_starts_attribution() -> None:
    """A STEP_FINISHED attributed to another owner than its start is rejected."""
    exc = rejects("owner.mismatch", START, step("STARTED", subagentRunId="s1"), step("FINISHED"))
    assert "'plan'" in str(exc) and "does not match" in str(exc)


def test_steps_are_keyed_by_owner() -> None:
    """A parent and a subagent may each have a step of the same name open; each closes its own."""
    accepts(
        *in_run(
            step("STARTED"),
            step("STARTED", subagentRunId="s1"),
            step("FINISHED", subagentRunId="s1"),
            step("FINISHED"),
        )
    )


def test_steps_may_overlap() -> None:
    """Steps are labels over spans of the stream and may overlap in any order."""
    accepts(
        *in_run(
            step("STARTED", "a"), step("STARTED", "b"), step("FINISHED", "a"), step("FINISHED", "b")
        )
    )


def test_steps_closed_by_run_finished() -> None:
    """RUN_FINISHED with a step still open is rejected, naming it."""
    exc = rejects("step.open-at-finish", *in_run(step("STARTED")))
    assert "'plan'" in str(exc)


def test_step_may_restart_after_finishing() -> None:
    """A finished step's name may be opened again."""
    accepts(*in_run(step("STARTED"), step("FINISHED"), step("STARTED"), step("FINISHED")))


# ---- subagents ----------------------------------------------------------------------------


def started(sid: str = "s1", **fields: Any) -> Event:
    return E("SUBAGENT_STARTED", subagentRunId=sid, name="helper", **fields)


def finished(sid: str = "s1") -> Event:
    return E("SUBAGENT_FINISHED", subagentRunId=sid)


def test_subagent_lifecycle_is_accepted() -> None:
    """Announced invocations closed by SUBAGENT_FINISHED or SUBAGENT_ERROR are valid."""
    accepts(
        *in_run(
            started("s1"),
            started("s2"),
            finished("s1"),
            E("SUBAGENT_ERROR", subagentRunId="s2", message="failed"),
        )
    )


def test_no_announcing_an_active_invocation() -> None:
    """SUBAGENT_STARTED for an id that is active is rejected."""
    exc = rejects("subagent.already-active", START, started(), started())
    assert "'s1'" in str(exc)


def test_ids_are_not_reused_within_a_run() -> None:
    """SUBAGENT_STARTED for an id that already finished in this run is rejected."""
    rejects("subagent.reused", START, started(), finished(), started())


def test_ids_may_reappear_in_a_later_run() -> None:
    """A suspended invocation may be continued under the same id in a later run."""
    accepts(
        *in_run(started(), finished()),
        E("RUN_STARTED", threadId="t", runId="r2"),
        started(),
        finished(),
        E("RUN_FINISHED", threadId="t", runId="r2"),
    )


def test_parent_subagent_must_be_announced() -> None:
    """parentSubagentRunId must name an invocation announced in this run."""
    exc = rejects("subagent.unknown-parent", START, started("s2", parentSubagentRunId="s1"))
    assert "'s1'" in str(exc) and "'s2'" in str(exc)
    accepts(
        *in_run(
            started("s1"), started("s2", parentSubagentRunId="s1"), finished("s2"), finished("s1")
        )
    )


@pytest.mark.parametrize("kind", ["SUBAGENT_FINISHED", "SUBAGENT_ERROR"])
def test_terminal_only_for_an_active_invocation(kind: str) -> None:
    """SUBAGENT_FINISHED/ERROR for an invocation never announced, or already closed, is fatal."""
    fields = {"message": "x"} if kind == "SUBAGENT_ERROR" else {}
    terminal = E(kind, subagentRunId="s1", **fields)
    exc = rejects("subagent.not-active", START, terminal)
    assert "'s1'" in str(exc) and kind in str(exc)
    rejects("subagent.not-active", START, started(), finished(), terminal)


def test_invocations_closed_before_run_finished() -> None:
    """RUN_FINISHED with an invocation still active is rejected, naming it."""
    exc = rejects("subagent.active-at-finish", *in_run(started("s-active")))
    assert "s-active" in str(exc)


def test_attribution_without_lifecycle_is_accepted() -> None:
    """Events may carry a subagentRunId that no SUBAGENT_STARTED announced."""
    accepts(
        *in_run(
            E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s1"),
            E("TEXT_MESSAGE_END", messageId="m1", subagentRunId="s1"),
            E("STATE_SNAPSHOT", snapshot={}, subagentRunId="s1"),
        )
    )


def test_announcement_precedes_attributed_events() -> None:
    """SUBAGENT_STARTED after events already attributed to that id is rejected."""
    exc = rejects(
        "subagent.announced-late",
        START,
        E("CUSTOM", name="n", value=1, subagentRunId="s1"),
        started(),
    )
    assert "'s1'" in str(exc)


# ---- encrypted values ---------------------------------------------------------------------


def encrypted(entity: str, subtype: str = "message") -> Event:
    return E("REASONING_ENCRYPTED_VALUE", subtype=subtype, entityId=entity, encryptedValue="b3A=")


def test_encrypted_value_for_unknown_entity_warns() -> None:
    """An encrypted value naming nothing known is a diagnostic, never a failure."""
    v, found = feed(START, encrypted("m-absent"), FINISH)
    v.close()
    [diagnostic] = found
    assert diagnostic.code == "encrypted-value.unknown-entity"
    assert diagnostic.subject == "m-absent" and "m-absent" in diagnostic.message


def test_encrypted_value_for_known_entities_is_quiet() -> None:
    """Values naming a streamed message, a tool call or an input message draw no diagnostic."""
    history = [parse_message({"id": "h1", "role": "user", "content": "hi"})]
    _, found = feed(
        START,
        E("TEXT_MESSAGE_START", messageId="m1"),
        E("TEXT_MESSAGE_END", messageId="m1"),
        E("TOOL_CALL_START", toolCallId="tc1", toolCallName="n"),
        E("TOOL_CALL_END", toolCallId="tc1"),
        encrypted("m1"),
        encrypted("tc1", "tool-call"),
        encrypted("h1"),
        verifier=Verifier(messages=history),
    )
    assert found == []


def test_encrypted_value_subtype_picks_the_id_space() -> None:
    """A tool-call value naming a message id is unknown: the subtype decides where it goes."""
    _, found = feed(START, E("TEXT_MESSAGE_START", messageId="m1"), encrypted("m1", "tool-call"))
    assert [d.code for d in found] == ["encrypted-value.unknown-entity"]


# ---- expansion and verification together ------------------------------------------------


def pipeline(*events: Event) -> Verifier:
    x, v = ChunkExpander(), Verifier()
    for event in events:
        for out in x.feed(event):
            v.feed(out)
    for out in x.close():
        v.feed(out)
    v.close()
    return v


def test_mixing_chunk_and_explicit_forms_is_rejected() -> None:
    """An explicit CONTENT for an item a chunk stream was assembling finds it closed."""
    with pytest.raises(ProtocolError) as info:
        pipeline(
            START,
            E("TEXT_MESSAGE_CHUNK", messageId="m1", delta="a"),
            E("TEXT_MESSAGE_CONTENT", messageId="m1", delta="b"),
            FINISH,
        )
    assert info.value.code == "message.not-open"


def test_chunk_for_an_explicitly_open_item_is_rejected() -> None:
    """A chunk naming an item opened explicitly opens it again: a duplicate open."""
    with pytest.raises(ProtocolError) as info:
        pipeline(
            START,
            E("TEXT_MESSAGE_START", messageId="m1"),
            E("TEXT_MESSAGE_CHUNK", messageId="m1", delta="b"),
            FINISH,
        )
    assert info.value.code == "message.duplicate-open"


# ---- the conformance corpora ----------------------------------------------------------------

# Fatal corpus streams whose failure is a chunk or verification failure: the code we raise,
# and the index of the stream event that raises it (len(stream) means at close()).
EXPECTED_FAILURES: dict[str, tuple[str, int]] = {
    "chunk-conflicting-role-fatal": ("chunk.conflicting-field", 2),
    "chunk-conflicting-tool-name-fatal": ("chunk.conflicting-field", 2),
    "content-without-start-fatal": ("message.not-open", 1),
    "custom-closes-chunk-stream-fatal": ("chunk.missing-id", 3),
    "duplicate-interrupt-id-fatal": ("interrupt.duplicate-id", 1),
    "event-after-run-finished-fatal": ("run.after-finished", 2),
    "first-chunk-missing-id-fatal": ("chunk.missing-id", 1),
    "first-event-not-run-started-fatal": ("run.not-started", 0),
    "first-tool-chunk-missing-name-fatal": ("chunk.missing-name", 1),
    "nested-run-started-fatal": ("run.nested", 1),
    "open-message-at-run-finished-fatal": ("message.open-at-finish", 3),
    "reasoning-discipline-verified": ("reasoning.not-open", 1),
    "run-finished-with-active-subagent-fatal": ("subagent.active-at-finish", 5),
    "run-finished-wrong-run-id-fatal": ("run.run-id-mismatch", 1),
    "run-finished-wrong-thread-id-fatal": ("run.thread-mismatch", 1),
    "second-run-on-another-thread-fatal": ("run.thread-mismatch", 2),
    "step-finished-without-start-fatal": ("step.not-started", 1),
    "subagent-attribution-mismatch-fatal": ("owner.mismatch", 3),
    "subagent-finished-unstarted-fatal": ("subagent.not-active", 1),
    "truncated-stream-fails-the-run": ("stream.truncated", 4),
}
# The stream the corpus README names as an admitted gap of the TypeScript client.
ADMITTED_GAP = "unknown-enum-value-role-fatal"


def _corpus_streams() -> list[tuple[str, Path]]:
    return [
        (corpus, path)
        for corpus in ("draft", "1.1")
        for path in sorted(spec_dir(f"agui/{corpus}/conformance/streams").glob("*.json"))
    ]


def _run_stream(stream: list[dict[str, Any]]) -> tuple[ProtocolError | None, int, list[str]]:
    """Parse tolerantly, expand, verify, close; returns (error, failing index, parse failures)."""
    x, v = ChunkExpander(), Verifier()
    parse_failures: list[str] = []
    index = 0
    try:
        for index, raw in enumerate(stream):
            try:
                event = parse_event(raw, diagnostics=[])
            except SchemaError as exc:
                parse_failures.append(f"event {index} ({raw.get('type')}): {exc}")
                continue
            except Exception:  # an unknown event type: enforcement drops it
                continue
            for out in x.feed(event):
                v.feed(out)
        index = len(stream)
        for out in x.close():
            v.feed(out)
        v.close()
    except ProtocolError as exc:
        return exc, index, parse_failures
    return None, index, parse_failures


def _quoted_tokens(error_contains: str) -> list[str]:
    """Ids, event types and paths in an errorContains string (the quoted ones, or a bare id)."""
    tokens = re.findall(r"'([^']+)'", error_contains)
    if not tokens and " " not in error_contains:
        tokens = [error_contains]
    return tokens


def test_conformance_corpora() -> None:
    """Every draft and 1.1 stream: verification failures raise as expected, the rest complete."""
    problems: list[str] = []
    unclassified: list[str] = []
    seen_failures: set[str] = set()
    for corpus, path in _corpus_streams():
        fixture = json.loads(path.read_text())
        name = fixture["name"]
        label = f"{corpus}/{name}"
        if name.startswith("era-") or "client" in fixture:
            unclassified.append(f"{label}: era-* stream or a client block pinning a version")
            continue
        expected = fixture["expect"].get("outcome")
        error, index, parse_failures = _run_stream(fixture["stream"])
        if expected == "completed":
            if error is not None:
                problems.append(f"{label}: expected completed, raised {error.code}: {error}")
            continue
        if name == ADMITTED_GAP:
            unclassified.append(f"{label}: admitted gap of the TypeScript client (enforcement)")
            continue
        if parse_failures:
            unclassified.append(f"{label}: enforcement failure, {parse_failures[0]}")
            continue
        if name not in EXPECTED_FAILURES:
            problems.append(f"{label}: a fatal stream with no expected verification failure")
            continue
        seen_failures.add(name)
        code, at = EXPECTED_FAILURES[name]
        if error is None:
            problems.append(f"{label}: expected {code}, but the stream was accepted")
            continue
        if (error.code, index) != (code, at):
            problems.append(f"{label}: expected {code} at {at}, got {error.code} at {index}")
        said = f"{error} {error.subject or ''}"
        for token in _quoted_tokens(fixture["expect"].get("errorContains", "")):
            if token not in said:
                problems.append(f"{label}: {token!r} not in our error {said!r}")
    print("\nstreams not classified as chunk/verification cases:")
    for line in unclassified:
        print("  " + line)
    assert not problems, "\n".join(problems)
    assert seen_failures == set(EXPECTED_FAILURES)


def test_every_error_code_is_documented() -> None:
    """Each code the two stages raise appears in the code table of the _verify docstring."""
    import agentproto.agui._consume.chunks as chunks_module
    import agentproto.agui._verify.runs as runs_module
    import agentproto.agui._verify.verifier as verify_module

    def source(module: Any) -> str:  # the .py file, also beside a compiled module's extension
        name = module.__name__.rpartition(".")[2]
        return (Path(module.__file__ or "").parent / f"{name}.py").read_text()

    doc = ast.get_docstring(ast.parse(source(verify_module))) or ""
    table = doc[doc.index("Error codes") : doc.index("Caller errors")]
    documented = set(re.findall(r"^``([a-z.\-]+)``", table, re.M))
    raised: set[str] = set()
    for module in (chunks_module, verify_module, runs_module):
        raised |= set(re.findall(r'ProtocolError\(\s*"([a-z.\-]+)"', source(module)))
    raised |= {code for code, _, _ in verify_module._AFTER_RUN.values()}  # the lifecycle's table
    families = {"message.", "toolcall.", "reasoning.", "reasoning.span-"}
    raised |= {
        f"{f}{s}" for f in families for s in ("duplicate-open", "not-open", "open-at-finish")
    }
    assert raised == documented, (raised - documented, documented - raised)


def test_an_event_class_without_a_rule_is_passed_with_a_diagnostic() -> None:
    """A class the verifier has no rule for (a newer schema's) is tolerated, in a run or not."""
    future: Any = FutureEvent(message_id="m", subagent_run_id="s")
    v, found = feed(future, START, future, FINISH, future)
    assert [d.code for d in found] == ["event.no-rule"] * 3
    assert found[0].subject == "FUTURE_EVENT"
    assert v.runs[-1].succeeded


def test_feeding_something_that_is_not_an_event_is_a_usage_error() -> None:
    """The verifier takes typed events; anything else is a caller error."""
    with pytest.raises(UsageError) as info:
        Verifier().feed({"type": "RUN_STARTED"})  # type: ignore[arg-type]
    assert info.value.code == "verify.not-an-event"


def test_the_in_run_rules_cover_every_generated_event_class() -> None:
    """The verifier's dispatch table is built from the generated Event union."""
    from agentproto.agui._verify.verifier import _IN_RUN

    assert set(_IN_RUN) == set(typing.get_args(Event))

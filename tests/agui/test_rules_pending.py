"""pendingToolCallIds agrees with the stream (issue 10, rule 2)."""

from __future__ import annotations

from typing import Any

import pytest

from agentproto import ProtocolError, UsageError
from agentproto.agui import Consumer, RunProducer

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


def _call(call_id: str) -> list[dict[str, Any]]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "f"},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


def _result(call_id: str) -> dict[str, Any]:
    return {"type": "TOOL_CALL_RESULT", "messageId": f"res-{call_id}", "toolCallId": call_id,
            "content": "ok"}  # fmt: skip


def _finish(pending: list[str] | None) -> dict[str, Any]:
    outcome: dict[str, Any] = {"type": "success"}
    if pending is not None:
        outcome["pendingToolCallIds"] = pending
    return {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": outcome}


def _consume(*events: dict[str, Any]) -> Consumer:
    consumer = Consumer()
    consumer.feed_all(events)
    consumer.close()
    return consumer


def test_a_list_that_agrees_with_the_stream_succeeds() -> None:
    """The calls left unanswered, in the order made, is the list."""
    consumer = _consume(START, *_call("a"), *_call("b"), *_call("c"), _result("b"),
                        _finish(["a", "c"]))  # fmt: skip
    assert consumer.verifier.runs[-1].succeeded


@pytest.mark.parametrize("pending", [None, []])
def test_an_absent_or_empty_list_names_nothing(pending: list[str] | None) -> None:
    """Absent or empty: the producer named none, and the consumer derives the list."""
    assert _consume(START, *_call("a"), _finish(pending)).verifier.runs[-1].succeeded


_AB = [START, *_call("a"), *_call("b")]


@pytest.mark.parametrize(
    ("events", "pending", "named"),
    [
        (_AB, ["a", "b", "ghost"], "never started"),
        ([*_AB, _result("b")], ["a", "b"], "answered"),
        (_AB, ["a"], "not listed"),
        (_AB, ["b", "a"], "order"),
        ([START, *_call("a")], ["a", "a"], "more than once"),
    ],
)
def test_a_list_that_disagrees_fails_the_run(
    events: list[dict[str, Any]], pending: list[str], named: str
) -> None:
    """A list naming a call never started or one answered, missing one left unanswered,
    or out of the order the calls were made, fails the run."""
    consumer = Consumer()
    with pytest.raises(ProtocolError) as info:
        consumer.feed_all([*events, _finish(pending)])
    assert info.value.code == "toolcall.pending-mismatch"
    assert named in str(info.value)
    assert consumer.verifier.runs[-1].status == "failed"


def test_a_producer_cannot_finish_with_a_wrong_list() -> None:
    """RunProducer refuses RUN_FINISHED whose pendingToolCallIds disagree."""
    from agentproto.agui.schema import RunFinishedSuccessOutcome

    producer = RunProducer({"threadId": "t", "runId": "r", "messages": []})
    producer.run_started()
    producer.tool_call("f", tool_call_id="a").end()
    with pytest.raises(UsageError) as info:
        producer.run_finished(outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=["x"]))
    assert info.value.code == "toolcall.pending-mismatch"

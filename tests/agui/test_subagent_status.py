"""Each subagent invocation's status (events/subagents.mdx: lifecycle and termination),
and whether a tool call's arguments are complete (events/tool-calls.mdx: not acted on
before TOOL_CALL_END)."""

from __future__ import annotations

from typing import Any

import pytest

from agentproto import ProtocolError
from agentproto.agui import Consumer, Conversation, SubagentInvocation, parse_event
from tests.docblocks import run_doc_block

T = "t1"


def start(run_id: str = "r1") -> dict[str, Any]:
    return {"type": "RUN_STARTED", "threadId": T, "runId": run_id}


def finish(run_id: str = "r1", **extra: Any) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", "threadId": T, "runId": run_id, **extra}


def sub_start(sid: str, name: str = "helper", **extra: Any) -> dict[str, Any]:
    return {"type": "SUBAGENT_STARTED", "subagentRunId": sid, "name": name, **extra}


def sub_finish(sid: str, **extra: Any) -> dict[str, Any]:
    return {"type": "SUBAGENT_FINISHED", "subagentRunId": sid, **extra}


def sub_error(sid: str, message: str = "boom", **extra: Any) -> dict[str, Any]:
    return {"type": "SUBAGENT_ERROR", "subagentRunId": sid, "message": message, **extra}


def statuses(consumer: Consumer) -> dict[str, str]:
    return {sid: record.status for sid, record in consumer.subagents.items()}


def test_started_is_running() -> None:
    """SUBAGENT_STARTED makes an invocation running, with what it announced."""
    consumer = Consumer()
    consumer.feed_all([start(), sub_start("a", "researcher", parentToolCallId="c1")])
    record = consumer.subagents["a"]
    assert record.status == "running" and record.active
    assert record.name == "researcher"
    assert record.run_id == "r1"
    assert record.started is not None and record.started.parent_tool_call_id == "c1"


@pytest.mark.parametrize("outcome", [None, {"type": "success"}])
def test_finished_without_or_with_success_outcome_succeeds(outcome: Any) -> None:
    """SUBAGENT_FINISHED with no outcome (meaning success) or the success outcome."""
    extra = {} if outcome is None else {"outcome": outcome}
    consumer = Consumer()
    consumer.feed_all([start(), sub_start("a"), sub_finish("a", result={"n": 1}, **extra)])
    record = consumer.subagents["a"]
    assert record.status == "succeeded" and not record.active
    assert record.finished is not None and record.finished.result == {"n": 1}
    assert record.interrupt_ids == ()


def test_suspended_outcome_is_suspended_with_its_interrupts() -> None:
    """The suspended outcome pauses the invocation; its interruptIds are kept."""
    consumer = Consumer()
    consumer.feed_all(
        [
            start(),
            sub_start("a"),
            sub_finish("a", outcome={"type": "suspended", "interruptIds": ["i1"]}),
            sub_start("b"),
            sub_finish("b", outcome={"type": "suspended"}),
        ]
    )
    assert statuses(consumer) == {"a": "suspended", "b": "suspended"}
    assert consumer.subagents["a"].interrupt_ids == ("i1",)
    assert consumer.subagents["b"].interrupt_ids == ()  # a descendant interrupted


def test_error_fails_the_invocation_not_the_run() -> None:
    """SUBAGENT_ERROR fails the invocation; the parent may go on and succeed."""
    consumer = Consumer()
    consumer.feed_all([start(), sub_start("a"), sub_error("a", "timeout", code="E1"), finish()])
    consumer.close()
    record = consumer.subagents["a"]
    assert record.status == "failed"
    assert record.error is not None and (record.error.message, record.error.code) == (
        "timeout",
        "E1",
    )
    assert consumer.verifier.runs[-1].status == "succeeded"


def test_run_error_abandons_only_the_open_invocations() -> None:
    """RUN_ERROR ends everything: open invocations are abandoned, closed ones keep their
    status."""
    consumer = Consumer()
    consumer.feed_all(
        [
            start(),
            sub_start("done"),
            sub_finish("done"),
            sub_start("open"),
            sub_start("child", parentSubagentRunId="open"),
            {"type": "RUN_ERROR", "message": "crashed"},
        ]
    )
    assert statuses(consumer) == {"done": "succeeded", "open": "abandoned", "child": "abandoned"}
    assert consumer.subagents["child"].parent_subagent_run_id == "open"


def test_a_truncated_stream_abandons_open_invocations() -> None:
    """A stream cut mid-run has no closing events to come: the invocation is abandoned."""
    consumer = Consumer()
    consumer.feed_all([start(), sub_start("a")])
    with pytest.raises(ProtocolError) as caught:
        consumer.close()
    assert caught.value.code == "stream.truncated"
    assert statuses(consumer) == {"a": "abandoned"}


def test_a_violation_abandons_open_invocations() -> None:
    """A fatal protocol error fails the run; its open invocations are abandoned, and the
    rejected event changes no record."""
    consumer = Consumer()
    consumer.feed_all([start(), sub_start("a")])
    with pytest.raises(ProtocolError) as caught:
        consumer.feed_json(sub_finish("never-started"))
    assert caught.value.code == "subagent.not-active"
    assert statuses(consumer) == {"a": "abandoned"}


def test_attribution_without_lifecycle_is_unannounced() -> None:
    """Events attributed to an id nobody announced group as an unannounced invocation."""
    consumer = Consumer()
    consumer.feed_all(
        [
            start(),
            {"type": "CUSTOM", "name": "x", "value": 1, "subagentRunId": "s"},
            {"type": "STATE_SNAPSHOT", "snapshot": {}, "subagentRunId": "s"},
            finish(),
        ]
    )
    record = consumer.subagents["s"]
    assert (record.status, record.name, record.started, record.run_id) == (
        "unannounced",
        None,
        None,
        "r1",
    )


def test_a_later_run_continues_a_suspended_invocation() -> None:
    """A suspended invocation continued under the same id in a later run runs again,
    then ends with its new outcome."""
    consumer = Consumer(run_input={"threadId": T, "runId": "r1", "messages": []})
    consumer.feed_all(
        [
            start("r1"),
            sub_start("a"),
            sub_finish("a", outcome={"type": "suspended", "interruptIds": ["i1"]}),
            finish(
                "r1",
                outcome={"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]},
            ),
            start("r2"),
            sub_start("a"),
        ]
    )
    assert (consumer.subagents["a"].status, consumer.subagents["a"].run_id) == ("running", "r2")
    consumer.feed_all([sub_finish("a"), finish("r2")])
    assert consumer.subagents["a"].status == "succeeded"
    assert consumer.subagents["a"].finished is not None
    assert consumer.subagents["a"].finished.outcome is None


def test_records_are_in_order_of_first_appearance_and_read_only() -> None:
    """The mapping lists invocations as they appeared and cannot be changed."""
    consumer = Consumer()
    consumer.feed_all([start(), sub_start("b"), sub_start("a"), sub_finish("b")])
    assert list(consumer.subagents) == ["b", "a"]
    assert dict(consumer.subagents) == dict(consumer.verifier.subagents)
    with pytest.raises(TypeError):
        consumer.subagents["c"] = SubagentInvocation(  # type: ignore[index]
            subagent_run_id="c", status="running"
        )


# ---- whether a tool call's arguments are complete -----------------------------------------


def call_start(call_id: str = "c1", **extra: Any) -> dict[str, Any]:
    return {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "search", **extra}


def args(call_id: str = "c1", delta: str = '{"q":') -> dict[str, Any]:
    return {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": delta}


def call_end(call_id: str = "c1") -> dict[str, Any]:
    return {"type": "TOOL_CALL_END", "toolCallId": call_id}


def test_arguments_complete_only_after_end() -> None:
    """Arguments stream until TOOL_CALL_END; a reopened call streams again."""
    consumer = Consumer()
    conversation = consumer.conversation
    consumer.feed_all([start(), call_start()])
    assert conversation.arguments_complete("c1") is False
    consumer.feed_json(args())
    assert conversation.arguments_complete("c1") is False
    consumer.feed_json(call_end())
    assert conversation.arguments_complete("c1") is True
    consumer.feed_json(call_start())  # reopened: appended to again
    assert conversation.arguments_complete("c1") is False
    consumer.feed_all([args(delta='"x"}'), call_end()])
    assert conversation.arguments_complete("c1") is True


def test_unknown_call_has_no_answer() -> None:
    """An id no tool call has answers None (never True)."""
    assert Conversation().arguments_complete("nope") is None


def test_run_error_leaves_the_arguments_incomplete() -> None:
    """A call its run abandoned before TOOL_CALL_END never reads complete, also after
    the next run started."""
    consumer = Consumer()
    consumer.feed_all([start(), call_start(), args(), {"type": "RUN_ERROR", "message": "x"}])
    assert consumer.conversation.arguments_complete("c1") is False
    consumer.feed_all([start("r2"), finish("r2")])
    assert consumer.conversation.arguments_complete("c1") is False


def test_a_later_run_can_reopen_and_complete_an_abandoned_call() -> None:
    """A call a failed run left open is incomplete until a later START reopens it and its
    END arrives."""
    consumer = Consumer()
    consumer.feed_all([start(), call_start(), args(), {"type": "RUN_ERROR", "message": "x"}])
    consumer.feed_all([start("r2"), call_start(), args(delta='"x"}')])
    assert consumer.conversation.arguments_complete("c1") is False
    consumer.feed_all([call_end(), finish("r2")])
    assert consumer.conversation.arguments_complete("c1") is True


def test_chunked_call_completes_when_its_end_is_synthesized() -> None:
    """A TOOL_CALL_CHUNK call completes when chunk expansion closes it."""
    consumer = Consumer()
    consumer.feed_all(
        [
            start(),
            {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "f", "delta": "{}"},
        ]
    )
    assert consumer.conversation.arguments_complete("c1") is False
    consumer.feed_json(finish())  # RUN_FINISHED closes every lane first
    assert consumer.conversation.arguments_complete("c1") is True


def _assistant_with_call(arguments: str) -> dict[str, Any]:
    return {
        "id": "m1",
        "role": "assistant",
        "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        ],
    }


def test_calls_that_arrive_whole_are_complete() -> None:
    """A call in the run input, or carried by a MESSAGES_SNAPSHOT (even one a failed run
    had left incomplete), arrives whole."""
    consumer = Consumer(
        run_input={"threadId": T, "runId": "r1", "messages": [_assistant_with_call("{}")]}
    )
    assert consumer.conversation.arguments_complete("c1") is True

    conversation = Conversation()
    for event in [start(), call_start("c1", parentMessageId="m1"), args("c1")]:
        conversation.apply(parse_event(event))
    conversation.apply(parse_event({"type": "RUN_ERROR", "message": "x"}))
    assert conversation.arguments_complete("c1") is False
    snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": [_assistant_with_call('{"q": 1}')]}
    conversation.apply(parse_event(snapshot))
    assert conversation.arguments_complete("c1") is True
    conversation.apply(parse_event({"type": "MESSAGES_SNAPSHOT", "messages": []}))
    assert conversation.arguments_complete("c1") is None  # dropped by the snapshot


def test_guide_example_runs() -> None:
    """The client authors' guide's subagents and tool-call example runs as written."""
    namespace = run_doc_block("docs/guides/client-authors.md", "Subagents and tool calls")
    consumer = namespace["consumer"]
    assert statuses(consumer) == {"s1": "suspended", "s2": "failed"}
    assert consumer.conversation.arguments_complete("c1") is True

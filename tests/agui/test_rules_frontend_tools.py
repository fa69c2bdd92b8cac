"""Frontend tools: a thread continues only once the client's calls are answered, and an
agent never answers a call to the client's tools (issue 10, rule 4; the draft's
tool-calls page, "Frontend tools")."""

from __future__ import annotations

from typing import Any

import pytest

from agentproto import SchemaError, UsageError
from agentproto.agui import (
    Consumer,
    RunProducer,
    dump_event,
    dump_run_input,
    next_run_input,
    schema,
)

CONFIRM = schema.Tool(name="confirm", description="Ask the user to confirm")
START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}


def _call(call_id: str, name: str = "confirm", parent: str = "m1") -> list[dict[str, Any]]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name,
         "parentMessageId": parent},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": '{"what": "order"}'},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]  # fmt: skip


def _result(call_id: str) -> dict[str, Any]:
    return {"type": "TOOL_CALL_RESULT", "messageId": f"res-{call_id}", "toolCallId": call_id,
            "content": "found"}  # fmt: skip


def _conversation(*body: dict[str, Any]) -> Any:
    consumer = Consumer()
    consumer.feed_all([START, *body, FINISH])
    consumer.close()
    return consumer.conversation


def _answer(call_id: str, message_id: str | None = None, **fields: Any) -> schema.ToolMessage:
    return schema.ToolMessage(
        id=message_id or f"answer-{call_id}", tool_call_id=call_id, content="yes", **fields
    )


def _next(conversation: Any, **kwargs: Any) -> schema.RunAgentInput:
    return next_run_input(conversation, thread_id="t", run_id="r2", **kwargs)


# ---- the client: continuing a thread ---------------------------------------------------------


def test_a_thread_with_an_unanswered_client_call_is_not_continued() -> None:
    """next_run_input refuses, listing every unanswered call to a declared tool."""
    conversation = _conversation(*_call("c1"), *_call("c2"))
    with pytest.raises(UsageError) as info:
        _next(conversation, tools=[CONFIRM])
    assert info.value.code == "toolcall.unanswered"
    assert "'c1', 'c2'" in str(info.value)


def test_answers_supplied_let_the_thread_continue() -> None:
    """With a tool message per call the input is built, answers after their call."""
    conversation = _conversation(
        *_call("c1"),
        *_call("c2"),
        {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "Waiting for you."},
        {"type": "TEXT_MESSAGE_END", "messageId": "m2"},
    )
    declined = {"id": "answer-c1", "role": "tool", "toolCallId": "c1", "content": "",
                "error": "declined by the user"}  # fmt: skip
    run_input = _next(conversation, tools=[CONFIRM], tool_results=[_answer("c2"), declined])
    wire = dump_run_input(run_input)
    assert [m["id"] for m in wire["messages"]] == ["m1", "answer-c2", "answer-c1", "m2"]
    assert wire["messages"][2]["error"] == "declined by the user"


def test_a_partial_answer_is_still_refused() -> None:
    """Answering one call of two leaves the other, and it is named."""
    conversation = _conversation(*_call("c1"), *_call("c2"))
    with pytest.raises(UsageError) as info:
        _next(conversation, tools=[CONFIRM], tool_results=[_answer("c1")])
    assert info.value.code == "toolcall.unanswered"
    assert "'c2'" in str(info.value)
    assert "'c1'" not in str(info.value)


def test_calls_the_agent_answered_or_undeclared_tools_do_not_count() -> None:
    """A call answered in the stream, or to a tool the client did not declare, is not due."""
    conversation = _conversation(*_call("c1", name="search"), _result("c1"), *_call("c2", "web"))
    run_input = _next(conversation, tools=[CONFIRM])
    assert [m.id for m in run_input.messages] == ["m1", "res-c1"]


def test_the_declared_tools_decide_which_calls_are_due() -> None:
    """The same unanswered call blocks only when its tool is among the declared ones."""
    conversation = _conversation(*_call("c1"))
    assert _next(conversation).tools == []
    with pytest.raises(UsageError):
        _next(conversation, tools=["confirm"])


def test_an_answer_already_in_the_conversation_counts() -> None:
    """A call the conversation already answers (an earlier input) needs nothing more."""
    first = _conversation(*_call("c1"))
    answered = _next(first, tools=[CONFIRM], tool_results=[_answer("c1")])
    consumer = Consumer(run_input=answered)
    consumer.feed_all([{**START, "runId": "r2"}, {**FINISH, "runId": "r2"}])
    again = next_run_input(consumer.conversation, thread_id="t", run_id="r3", tools=[CONFIRM])
    assert [m.id for m in again.messages] == ["m1", "answer-c1"]


@pytest.mark.parametrize(
    ("answers", "code"),
    [
        ([_answer("ghost")], "toolcall.unknown-call"),
        ([_answer("c1"), _answer("c1", "other")], "toolcall.already-answered"),
        ([_answer("c1", "m1")], "toolcall.duplicate-id"),
        (["yes"], "toolcall.bad-argument"),
        (_answer("c1"), "toolcall.bad-argument"),
        (None, "toolcall.bad-argument"),
    ],
)
def test_answers_that_fit_no_call_are_refused(answers: Any, code: str) -> None:
    """An answer to an unknown call, a second answer, a reused id, a non-message, or one
    answer where a list of them belongs, fails."""
    conversation = _conversation(*_call("c1"))
    with pytest.raises(UsageError) as info:
        _next(conversation, tools=[CONFIRM], tool_results=answers)
    assert info.value.code == code


def test_an_answer_to_a_call_already_answered_in_the_stream_is_refused() -> None:
    """The agent answered it: a second tool message for it is refused."""
    conversation = _conversation(*_call("c1", name="search"), _result("c1"))
    with pytest.raises(UsageError) as info:
        _next(conversation, tool_results=[_answer("c1")])
    assert info.value.code == "toolcall.already-answered"


def test_a_malformed_wire_answer_is_a_schema_error() -> None:
    """A wire answer without content is malformed, located under tool_results."""
    conversation = _conversation(*_call("c1"))
    bad = {"id": "a", "role": "tool", "toolCallId": "c1"}
    with pytest.raises(SchemaError) as info:
        _next(conversation, tools=[CONFIRM], tool_results=[bad])
    assert info.value.location.startswith("/tool_results/0")


def test_answers_are_copied_into_the_input() -> None:
    """Changing a supplied answer afterwards does not change the built input."""
    conversation = _conversation(*_call("c1"))
    answer = _answer("c1")
    run_input = _next(conversation, tools=[CONFIRM], tool_results=[answer])
    answer.content = "changed"
    assert run_input.messages[1].content == "yes"


def test_a_bad_tool_argument_is_refused() -> None:
    """Tools are Tool objects or names."""
    with pytest.raises(UsageError) as info:
        _next(_conversation(), tools=[42])
    assert info.value.code == "toolcall.bad-argument"


# ---- the client: the previous run's declared tools count by default (issue 25) ---------------


def _declared(*body: dict[str, Any]) -> Any:
    """The conversation of a run whose input declared the tool ``confirm``."""
    tool = {"name": "confirm", "description": "Ask the user to confirm", "parameters": {}}
    run_input = {"threadId": "t", "runId": "r1", "messages": [], "tools": [tool]}
    consumer = Consumer(run_input=run_input)
    consumer.feed_all([START, *body, FINISH])
    consumer.close()
    return consumer.conversation


def test_a_call_to_the_previous_inputs_tool_is_due_without_declaring_it_again() -> None:
    """The conversation knows the tools its run input declared: a call to one left
    unanswered is refused even when the next input declares no tools."""
    conversation = _declared(*_call("c1"))
    assert conversation.declared_tools == ("confirm",)
    with pytest.raises(UsageError) as info:
        _next(conversation)
    assert info.value.code == "toolcall.unanswered" and "'c1'" in str(info.value)
    run_input = _next(conversation, tool_results=[_answer("c1")])
    assert [m.id for m in run_input.messages] == ["m1", "answer-c1"] and run_input.tools == []


def test_check_false_leaves_the_previous_inputs_tools_out() -> None:
    """``check=False``: only the tools given to this call count."""
    conversation = _declared(*_call("c1"))
    assert [m.id for m in _next(conversation, check=False).messages] == ["m1"]
    with pytest.raises(UsageError):
        _next(conversation, tools=[CONFIRM], check=False)


def test_undeclared_tools_still_do_not_count() -> None:
    """A call to a tool neither input declared stays the client's to judge."""
    conversation = _declared(*_call("c1", name="web"))
    assert [m.id for m in _next(conversation).messages] == ["m1"]


# ---- the agent: never answering the client's tools -------------------------------------------


def _producer(tools: list[schema.Tool], messages: list[Any] | None = None) -> RunProducer:
    producer = RunProducer(
        schema.RunAgentInput(thread_id="t", run_id="r1", messages=messages or [], tools=tools),
        new_id=lambda prefix: f"{prefix}-1",
    )
    producer.run_started()
    return producer


def test_a_producer_refuses_to_answer_a_client_tool_call() -> None:
    """TOOL_CALL_RESULT for a call to a declared tool is refused, nothing emitted,
    and the producer stays usable."""
    producer = _producer([CONFIRM])
    call = producer.tool_call("confirm", tool_call_id="c1", args={"what": "order"})
    call.end()
    before = len(producer.events)
    with pytest.raises(UsageError) as info:
        call.result("yes")
    assert info.value.code == "producer.client-tool-answered"
    assert "'c1'" in str(info.value) and "'confirm'" in str(info.value)
    with pytest.raises(UsageError):
        producer.emit(_result("c1"))
    assert len(producer.events) == before
    assert producer.failure is None
    producer.run_finished()


def test_a_producer_answers_its_own_tools() -> None:
    """A tool the input does not declare is the agent's, and it answers in the stream."""
    producer = _producer([CONFIRM])
    producer.tool_call("search", tool_call_id="c1", args="{}").end()
    producer.tool_result("c1", "3 results")
    producer.run_finished()


def test_a_producer_refuses_to_answer_a_client_call_from_an_earlier_run() -> None:
    """A call the input's messages hold, to a declared tool, is the client's to answer."""
    held = schema.AssistantMessage(
        id="m1",
        tool_calls=[
            schema.ToolCall(id="c1", function=schema.FunctionCall(name="confirm", arguments="{}"))
        ],
    )
    producer = _producer([CONFIRM], [held])
    with pytest.raises(UsageError) as info:
        producer.tool_result("c1", "yes")
    assert info.value.code == "producer.client-tool-answered"


def test_a_snapshot_cannot_fabricate_the_clients_answer() -> None:
    """A MESSAGES_SNAPSHOT adding a tool message for an unanswered client call is refused;
    one repeating the client's own answer is not."""
    producer = _producer([CONFIRM])
    producer.tool_call("confirm", tool_call_id="c1", parent_message_id="m1").end()
    held = list(producer.conversation.messages)
    with pytest.raises(UsageError) as info:
        producer.messages_snapshot([*held, _answer("c1")])
    assert info.value.code == "producer.client-tool-answered"
    producer.messages_snapshot(held)  # the call still unanswered: fine
    producer.run_finished()

    answered = _producer([CONFIRM], [*held, _answer("c1")])
    answered.messages_snapshot(list(answered.conversation.messages))
    answered.run_finished()


# ---- pendingToolCallIds derived for a producer ---------------------------------------------


def test_run_finished_lists_the_unanswered_calls() -> None:
    """list_pending names the run's unanswered calls, and a consumer agrees with it."""
    producer = _producer([CONFIRM])
    producer.tool_call("confirm", tool_call_id="c1").end()
    producer.tool_call("search", tool_call_id="c2").end()
    producer.tool_result("c2", "done")
    producer.tool_call("confirm", tool_call_id="c3").end()
    finished = producer.run_finished(list_pending=True)
    assert isinstance(finished.outcome, schema.RunFinishedSuccessOutcome)
    assert finished.outcome.pending_tool_call_ids == ["c1", "c3"]
    consumer = Consumer(run_input=producer.run_input)
    consumer.feed_all(dump_event(e) for e in producer.drain())
    consumer.close()
    assert consumer.verifier.runs[-1].succeeded


def test_run_finished_lists_nothing_when_nothing_is_pending() -> None:
    """With every call answered, the outcome is left as given (absent)."""
    producer = _producer([CONFIRM])
    assert producer.run_finished(list_pending=True).outcome is None


@pytest.mark.parametrize(
    "outcome",
    ["cancelled", schema.RunFinishedSuccessOutcome(pending_tool_call_ids=["c1"])],
)
def test_list_pending_with_another_outcome_is_refused(outcome: Any) -> None:
    """The list rides only on a success outcome the producer does not list itself."""
    producer = _producer([CONFIRM])
    producer.tool_call("confirm", tool_call_id="c1").end()
    with pytest.raises(UsageError) as info:
        producer.run_finished(outcome=outcome, list_pending=True)
    assert info.value.code == "producer.bad-argument"
    assert producer.phase == "running"

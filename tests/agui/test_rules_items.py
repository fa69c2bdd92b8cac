"""Reopened messages and parent-less tool calls in the reducer (issue 10, rules 7 and 8)."""

from __future__ import annotations

from typing import Any

import pytest

from agentproto import UsageError
from agentproto.agui import Consumer, Conversation, RunProducer, parse_event


def ev(type_: str, **members: Any) -> Any:
    """A typed event from its wire members (strictly parsed)."""
    return parse_event({"type": type_, **members})


def test_a_reopening_start_keeps_the_established_name() -> None:
    """A reopening TEXT_MESSAGE_START with another name keeps the name, and says so."""
    conversation = Conversation()
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="m", name="ann"))
    conversation.apply(ev("TEXT_MESSAGE_END", messageId="m"))
    change = conversation.apply(ev("TEXT_MESSAGE_START", messageId="m", name="bob"))
    assert [d.code for d in change.diagnostics] == ["message.name-mismatch"]
    assert conversation.to_json()["messages"][0]["name"] == "ann"


def test_a_reopening_start_repeating_the_name_or_leaving_it_out_is_quiet() -> None:
    """The same name, or none, agrees with the message."""
    conversation = Conversation()
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="m", name="ann"))
    conversation.apply(ev("TEXT_MESSAGE_END", messageId="m"))
    for opener in ({"name": "ann"}, {}):
        assert not conversation.apply(ev("TEXT_MESSAGE_START", messageId="m", **opener)).diagnostics
        conversation.apply(ev("TEXT_MESSAGE_END", messageId="m"))
    assert conversation.to_json()["messages"][0]["name"] == "ann"


def test_a_message_a_tool_call_created_takes_the_first_name() -> None:
    """A message with no name established yet takes the text opener's."""
    conversation = Conversation()
    conversation.apply(ev("TOOL_CALL_START", toolCallId="c", toolCallName="f", parentMessageId="m"))
    change = conversation.apply(ev("TEXT_MESSAGE_START", messageId="m", name="ann"))
    assert not change.diagnostics
    assert conversation.to_json()["messages"][0]["name"] == "ann"


def test_a_producer_refuses_to_reopen_a_message_under_another_name() -> None:
    """The producer keeps the duty: a reopening START agrees with the message."""
    producer = RunProducer({"threadId": "t", "runId": "r", "messages": []})
    producer.run_started()
    producer.text("hi", message_id="m", name="ann")
    with pytest.raises(UsageError) as info:
        producer.text_message_start("m", name="bob")
    assert info.value.code == "message.name-mismatch"


# ---- parent-less tool calls ---------------------------------------------------------------


def _calls(conversation: Conversation) -> dict[str, list[str]]:
    """message id -> the ids of its tool calls."""
    return {
        m["id"]: [c["id"] for c in m.get("toolCalls", [])]
        for m in conversation.to_json()["messages"]
        if m["role"] == "assistant"
    }


def test_a_call_tagged_for_one_subagent_never_joins_anothers_open_message() -> None:
    """A parent-less call for subagent B is not attached to A's streaming message."""
    conversation = Conversation()
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="a-msg", subagentRunId="A"))
    conversation.apply(
        ev("TOOL_CALL_START", toolCallId="b-call", toolCallName="f", subagentRunId="B")
    )
    assert _calls(conversation) == {"a-msg": [], "b-call": ["b-call"]}
    created = conversation.to_json()["messages"][1]
    assert created["subagentRunId"] == "B"


def test_a_parent_less_call_joins_its_own_owners_open_message() -> None:
    """The last streaming assistant message of the call's own owner holds it."""
    conversation = Conversation()
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="b-msg", subagentRunId="B"))
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="a-msg", subagentRunId="A"))
    conversation.apply(
        ev("TOOL_CALL_START", toolCallId="b-call", toolCallName="f", subagentRunId="B")
    )
    conversation.apply(ev("TOOL_CALL_START", toolCallId="p-call", toolCallName="f"))
    assert _calls(conversation) == {"b-msg": ["b-call"], "a-msg": [], "p-call": ["p-call"]}


def test_a_parent_less_call_still_joins_the_parents_open_message() -> None:
    """The ordinary case is unchanged: an untagged call joins the open untagged message."""
    conversation = Conversation()
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="m"))
    conversation.apply(ev("TOOL_CALL_START", toolCallId="c", toolCallName="f"))
    assert _calls(conversation) == {"m": ["c"]}


def test_nothing_of_a_failed_run_stays_open_for_the_next() -> None:
    """After RUN_ERROR, the next run's parent-less call gets a message of its own."""
    consumer = Consumer()
    consumer.feed_all(
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
            {"type": "RUN_ERROR", "message": "boom"},
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
            {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "f"},
            {"type": "TOOL_CALL_END", "toolCallId": "c2"},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"},
        ]
    )
    consumer.close()
    assert _calls(consumer.conversation) == {"m1": ["c1"], "c2": ["c2"]}

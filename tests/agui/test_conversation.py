"""Tests of agentproto.agui._reduce.conversation: the AG-UI reducer and its rules."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentproto import AgentProtoError, SchemaError, UsageError
from agentproto._core.diagnostics import Diagnostic
from agentproto.agui import _generated, make_converter, parse_event, parse_run_input, schema
from agentproto.agui._protocol.kinds import TEXT_ROLES, dispatch_table, kinds
from agentproto.agui._reduce.conversation import _RULES, Change, Conversation
from tests.agui.synthetic import FUTURE_UNION, FutureEvent
from tests.jsonsame import same_json

CONVERTER = make_converter()


# ---- helpers ------------------------------------------------------------------------------


def ev(type_: str, **members: Any) -> Any:
    """A typed event from its wire members (strictly parsed)."""
    return parse_event({"type": type_, **members})


def msg(**members: Any) -> Any:
    """A typed message from its wire members."""
    return CONVERTER.load(members, schema.Message)


def run(conversation: Conversation, *events: Any) -> list[Change]:
    return [conversation.apply(e) for e in events]


def wire(conversation: Conversation) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = conversation.to_json()["messages"]
    return messages


def codes(change: Change) -> list[str]:
    return [d.code for d in change.diagnostics]


def text(message_id: str, *deltas: str, role: str | None = None, **start: Any) -> list[Any]:
    """START, one CONTENT per delta, END."""
    opener = {"messageId": message_id, **start}
    if role is not None:
        opener["role"] = role
    return [
        ev("TEXT_MESSAGE_START", **opener),
        *(ev("TEXT_MESSAGE_CONTENT", messageId=message_id, delta=d) for d in deltas),
        ev("TEXT_MESSAGE_END", messageId=message_id),
    ]


def tool(call_id: str, name: str, *deltas: str, **start: Any) -> list[Any]:
    """TOOL_CALL_START, one ARGS per delta, END."""
    return [
        ev("TOOL_CALL_START", toolCallId=call_id, toolCallName=name, **start),
        *(ev("TOOL_CALL_ARGS", toolCallId=call_id, delta=d) for d in deltas),
        ev("TOOL_CALL_END", toolCallId=call_id),
    ]


# ---- construction and reading -------------------------------------------------------------


def test_default_baseline_is_no_messages_and_an_empty_object() -> None:
    """A new conversation has no messages and the state {}."""
    conversation = Conversation()
    assert conversation.messages == () and conversation.state == {} and wire(conversation) == []


def test_from_input_takes_messages_and_state() -> None:
    """from_input starts from the run input's messages and state."""
    run_input = parse_run_input(
        {
            "threadId": "t",
            "runId": "r",
            "messages": [{"id": "u1", "role": "user", "content": "hi"}],
            "state": {"n": 1},
        }
    )
    conversation = Conversation.from_input(run_input)
    assert wire(conversation) == [{"id": "u1", "role": "user", "content": "hi"}]
    assert conversation.state == {"n": 1}


def test_from_input_without_state_starts_from_an_empty_object() -> None:
    """A run input without state gives the baseline {}."""
    conversation = Conversation.from_input(
        parse_run_input({"threadId": "t", "runId": "r", "messages": []})
    )
    assert conversation.state_json() == {}


def test_constructor_copies_its_inputs() -> None:
    """Messages and state handed to the constructor are copied, not shared."""
    message = msg(id="u1", role="user", content="hi", metadata={"k": [1]})
    state = {"a": [1]}
    conversation = Conversation(messages=[message], state=state)
    message.metadata["k"].append(2)
    message.content = "changed"
    state["a"].append(2)
    assert wire(conversation) == [
        {"id": "u1", "role": "user", "content": "hi", "metadata": {"k": [1]}}
    ]
    assert conversation.state == {"a": [1]}


def test_constructor_accepts_any_json_state() -> None:
    """An explicit state, null included, is the baseline."""
    assert Conversation(state=None).state is None
    assert Conversation(state=[1]).state == [1]


def test_constructor_rejects_duplicate_ids() -> None:
    """Two messages with one id are a caller error."""
    with pytest.raises(UsageError):
        Conversation(
            messages=[
                msg(id="m", role="user", content="a"),
                msg(id="m", role="user", content="b"),
            ]
        )


def test_constructor_rejects_invalid_messages() -> None:
    """A typed message that does not match the schema raises SchemaError."""
    broken = msg(id="m", role="user", content="a")
    broken.content = 5
    with pytest.raises(SchemaError):
        Conversation(messages=[broken])


def test_messages_are_cached_until_their_message_changes() -> None:
    """Reads return the same objects until a change; only the changed message is rebuilt."""
    conversation = Conversation()
    run(conversation, *text("a", "x"), *text("b", "y"))
    first = conversation.messages
    assert conversation.messages is first
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="b"))
    conversation.apply(ev("TEXT_MESSAGE_CONTENT", messageId="b", delta="z"))
    second = conversation.messages
    assert second[0] is first[0] and second[1] is not first[1]
    assert second[1].content == "yz"
    assert conversation.message("a") is first[0]
    assert conversation.message("missing") is None


def test_a_caller_mutating_a_message_cannot_corrupt_the_conversation() -> None:
    """Mutating a returned message leaves the records, to_json and later reads intact."""
    conversation = Conversation()
    run(conversation, *text("a", "x", metadata={"k": [1]}))
    message = conversation.messages[0]
    message.content = "hacked"
    message.metadata["k"].append(2)
    assert wire(conversation) == [
        {"id": "a", "role": "assistant", "content": "x", "metadata": {"k": [1]}}
    ]
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="a"))
    conversation.apply(ev("TEXT_MESSAGE_CONTENT", messageId="a", delta="y"))
    assert conversation.messages[0].content == "xy"
    assert conversation.messages[0].metadata == {"k": [1]}


def test_to_json_is_the_converter_dump_of_the_messages() -> None:
    """to_json gives each message as make_converter().dump gives it, plus a copy of the state."""
    conversation = Conversation(state={"s": 1})
    run(
        conversation,
        *text("a", "hi", metadata={"m": 1}),
        *tool("c", "f", "{}", parentMessageId="a"),
        ev("TOOL_CALL_RESULT", messageId="t", toolCallId="c", content="ok"),
        ev("ACTIVITY_SNAPSHOT", messageId="act", activityType="x", content={"k": 1}),
    )
    document = conversation.to_json()
    assert document["messages"] == [CONVERTER.dump(m) for m in conversation.messages]
    assert document["state"] == {"s": 1}
    document["state"]["s"] = 2
    document["messages"][0]["content"] = "changed"
    assert conversation.state == {"s": 1} and conversation.messages[0].content == "hi"


def test_change_is_truthy_only_when_something_changed() -> None:
    """A Change is true for message or state changes, false for diagnostics alone."""
    assert not Change()
    assert Change(state=True) and Change(messages=("a",)) and Change(removed=("a",))
    assert not Change(diagnostics=(Diagnostic(code="x", message="y"),))


# ---- text messages ------------------------------------------------------------------------


def test_text_message_triad_assembles_one_message() -> None:
    """START creates the message, CONTENT deltas concatenate in order, END closes it."""
    conversation = Conversation()
    changes = run(conversation, *text("m1", "Deltas ", "concatenate."))
    assert wire(conversation) == [
        {"id": "m1", "role": "assistant", "content": "Deltas concatenate."}
    ]
    assert changes[0].created == ("m1",) and changes[1].messages == ("m1",)
    assert not changes[-1]


def test_text_message_role_comes_from_the_event() -> None:
    """The role is the event's; absent means assistant; name and subagentRunId are kept."""
    conversation = Conversation()
    run(
        conversation,
        *text("u", "hello", role="user", name="ann"),
        *text("s", "rules", role="system"),
        *text("d", "dev", role="developer"),
        *text("a", "answer", subagentRunId="sub-1"),
    )
    assert wire(conversation) == [
        {"id": "u", "role": "user", "content": "hello", "name": "ann"},
        {"id": "s", "role": "system", "content": "rules"},
        {"id": "d", "role": "developer", "content": "dev"},
        {"id": "a", "role": "assistant", "content": "answer", "subagentRunId": "sub-1"},
    ]
    assert isinstance(conversation.messages[0], schema.UserMessage)


def test_a_started_message_without_content_is_empty_text() -> None:
    """A message with no deltas yet reads as content ""."""
    conversation = Conversation()
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="m"))
    assert conversation.messages[0].content == ""


def test_reopening_a_closed_message_appends() -> None:
    """A second START for a closed message continues it and further content appends."""
    conversation = Conversation()
    changes = run(conversation, *text("m", "First half."), *text("m", " Second half."))
    assert wire(conversation) == [
        {"id": "m", "role": "assistant", "content": "First half. Second half."}
    ]
    assert changes[3].created == ()


def test_content_for_an_unknown_message_is_skipped_with_a_diagnostic() -> None:
    """CONTENT or END naming no message changes nothing and says so."""
    conversation = Conversation()
    change = conversation.apply(ev("TEXT_MESSAGE_CONTENT", messageId="ghost", delta="x"))
    assert codes(change) == ["message.unknown"] and change.diagnostics[0].subject == "ghost"
    assert not change and wire(conversation) == []
    assert codes(conversation.apply(ev("TEXT_MESSAGE_END", messageId="ghost"))) == [
        "message.unknown"
    ]


def test_text_events_for_a_message_of_another_kind_are_skipped() -> None:
    """Text events for activity, reasoning or content-part messages change nothing."""
    conversation = Conversation(
        messages=[msg(id="parts", role="user", content=[{"type": "text", "text": "a"}])]
    )
    run(
        conversation,
        ev("ACTIVITY_SNAPSHOT", messageId="act", activityType="x", content={}),
        ev("REASONING_MESSAGE_START", messageId="r", role="reasoning"),
    )
    before = wire(conversation)
    for target in ("act", "r", "parts"):
        for event in (
            ev("TEXT_MESSAGE_START", messageId=target),
            ev("TEXT_MESSAGE_CONTENT", messageId=target, delta="x"),
            ev("TEXT_MESSAGE_END", messageId=target),
        ):
            change = conversation.apply(event)
            if target == "parts" and event.type == "TEXT_MESSAGE_END":
                assert change == Change()  # closing is fine; only its content cannot stream
                continue
            assert not change and codes(change) == ["message.role-mismatch"], (target, event)
    assert wire(conversation) == before


def test_reopening_with_another_role_keeps_the_role_and_says_so() -> None:
    """Reopening a text message with another role appends, with a diagnostic."""
    conversation = Conversation()
    run(conversation, *text("m", "a"))
    change = conversation.apply(ev("TEXT_MESSAGE_START", messageId="m", role="user"))
    conversation.apply(ev("TEXT_MESSAGE_CONTENT", messageId="m", delta="b"))
    assert codes(change) == ["message.role-mismatch"] and change.messages == ("m",)
    assert wire(conversation) == [{"id": "m", "role": "assistant", "content": "ab"}]


def test_empty_deltas_change_nothing() -> None:
    """An empty delta without metadata reports no change."""
    conversation = Conversation()
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="m"))
    assert not conversation.apply(ev("TEXT_MESSAGE_CONTENT", messageId="m", delta=""))


def test_text_survives_multibyte_and_combining_sequences_split_across_deltas() -> None:
    """Deltas are joined exactly: no normalisation of split combining or joiner sequences."""
    conversation = Conversation()
    run(
        conversation,
        *text("m", "cafe", "\u0301", " \U0001f469\u200d", "\U0001f4bb", " こんに", "ちは"),
    )
    assert conversation.messages[0].content == "cafe\u0301 \U0001f469\u200d\U0001f4bb こんにちは"


# ---- reasoning ------------------------------------------------------------------------------


def test_reasoning_message_assembles_with_role_reasoning() -> None:
    """REASONING_MESSAGE_* build a reasoning message; the span events change nothing."""
    conversation = Conversation()
    changes = run(
        conversation,
        ev("REASONING_START", messageId="span"),
        ev("REASONING_MESSAGE_START", messageId="r1", role="reasoning"),
        ev("REASONING_MESSAGE_CONTENT", messageId="r1", delta="weighing "),
        ev("REASONING_MESSAGE_CONTENT", messageId="r1", delta="the options"),
        ev("REASONING_MESSAGE_END", messageId="r1"),
        ev("REASONING_END", messageId="span"),
        *text("a", "the answer"),
    )
    assert wire(conversation) == [
        {"id": "r1", "role": "reasoning", "content": "weighing the options"},
        {"id": "a", "role": "assistant", "content": "the answer"},
    ]
    assert isinstance(conversation.messages[0], schema.ReasoningMessage)
    assert changes[0] == Change() and changes[5] == Change()


def test_reasoning_events_for_a_text_message_are_skipped() -> None:
    """REASONING_MESSAGE_* naming an assistant message change nothing and say so."""
    conversation = Conversation()
    run(conversation, *text("a", "x"))
    for event in (
        ev("REASONING_MESSAGE_START", messageId="a", role="reasoning"),
        ev("REASONING_MESSAGE_CONTENT", messageId="a", delta="y"),
        ev("REASONING_MESSAGE_END", messageId="a"),
    ):
        assert codes(conversation.apply(event)) == ["message.role-mismatch"]
    assert wire(conversation) == [{"id": "a", "role": "assistant", "content": "x"}]


def test_reasoning_message_keeps_its_subagent() -> None:
    """subagentRunId on REASONING_MESSAGE_START lands on the reasoning message."""
    conversation = Conversation()
    conversation.apply(
        ev("REASONING_MESSAGE_START", messageId="r", role="reasoning", subagentRunId="s")
    )
    assert wire(conversation) == [
        {"id": "r", "role": "reasoning", "content": "", "subagentRunId": "s"}
    ]


# ---- tool calls ----------------------------------------------------------------------------


def test_tool_call_triad_attaches_to_the_named_parent() -> None:
    """START attaches a call to parentMessageId's message; ARGS concatenate in arrival order."""
    conversation = Conversation()
    changes = run(
        conversation,
        *text("m1", "Looking it up."),
        *tool("tc1", "search", '{"q":', '"agui"}', parentMessageId="m1"),
    )
    assert wire(conversation) == [
        {
            "id": "m1",
            "role": "assistant",
            "content": "Looking it up.",
            "toolCalls": [
                {
                    "id": "tc1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q":"agui"}'},
                }
            ],
        }
    ]
    assert changes[3] == Change(messages=("m1",))
    assert conversation.tool_call("tc1") is conversation.messages[0].tool_calls[0]
    assert conversation.tool_call("nope") is None


def test_tool_call_with_an_unseen_parent_creates_that_assistant_message() -> None:
    """A parentMessageId naming no message creates that assistant message (no content)."""
    conversation = Conversation()
    changes = run(conversation, *tool("c1", "get", "{}", parentMessageId="a1", subagentRunId="s"))
    assert wire(conversation) == [
        {
            "id": "a1",
            "role": "assistant",
            "subagentRunId": "s",
            "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}
            ],
        }
    ]
    assert changes[0].created == ("a1",)


def test_text_start_for_a_message_a_tool_call_created_continues_it() -> None:
    """TEXT_MESSAGE_START naming the assistant message a tool call created streams into it."""
    conversation = Conversation()
    run(conversation, *tool("c1", "get", "{}", parentMessageId="a1"), *text("a1", "done"))
    assert len(conversation.messages) == 1
    assert conversation.messages[0].content == "done"
    assert conversation.messages[0].tool_calls[0].id == "c1"


def test_tool_call_without_parent_joins_the_open_assistant_message() -> None:
    """Without parentMessageId, a call made while the last assistant message streams joins it."""
    conversation = Conversation()
    run(
        conversation,
        ev("TEXT_MESSAGE_START", messageId="m"),
        ev("TEXT_MESSAGE_CONTENT", messageId="m", delta="calling"),
        *tool("c1", "f", "{}"),
        ev("TEXT_MESSAGE_END", messageId="m"),
    )
    assert [m["id"] for m in wire(conversation)] == ["m"]
    assert [c.id for c in conversation.messages[0].tool_calls] == ["c1"]


def test_parallel_tool_calls_without_parent_share_one_message() -> None:
    """A call started while the previous parentless call is still open joins its message."""
    conversation = Conversation()
    run(
        conversation,
        ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f"),
        ev("TOOL_CALL_START", toolCallId="c2", toolCallName="g"),
        ev("TOOL_CALL_END", toolCallId="c1"),
        ev("TOOL_CALL_END", toolCallId="c2"),
    )
    assert [m["id"] for m in wire(conversation)] == ["c1"]
    assert [c.id for c in conversation.messages[0].tool_calls] == ["c1", "c2"]


def test_tool_call_without_parent_after_a_closed_message_gets_its_own_message() -> None:
    """With no parent and nothing streaming, a call gets a message keyed by its own id."""
    conversation = Conversation()
    run(conversation, *text("m", "done"), *tool("c1", "f", "{}"), *tool("c2", "g", "{}"))
    assert [(m["id"], m["role"]) for m in wire(conversation)] == [
        ("m", "assistant"),
        ("c1", "assistant"),
        ("c2", "assistant"),
    ]


def test_tool_call_whose_parent_is_not_an_assistant_message_gets_its_own() -> None:
    """A parent that is a user message: the call gets its own message, with a diagnostic."""
    conversation = Conversation(messages=[msg(id="u", role="user", content="q")])
    change = conversation.apply(
        ev("TOOL_CALL_START", toolCallId="c", toolCallName="f", parentMessageId="u")
    )
    assert codes(change) == ["tool-call.parent-not-assistant"]
    assert [(m["id"], m["role"]) for m in wire(conversation)] == [("u", "user"), ("c", "assistant")]


def test_tool_call_with_no_possible_parent_is_skipped() -> None:
    """When even the call id names a non-assistant message, the call is skipped."""
    conversation = Conversation(messages=[msg(id="c", role="user", content="q")])
    change = conversation.apply(ev("TOOL_CALL_START", toolCallId="c", toolCallName="f"))
    assert codes(change) == ["tool-call.no-parent"] and not change
    assert wire(conversation) == [{"id": "c", "role": "user", "content": "q"}]
    assert codes(conversation.apply(ev("TOOL_CALL_ARGS", toolCallId="c", delta="x"))) == [
        "tool-call.unknown"
    ]


def test_reopened_tool_call_appends_arguments() -> None:
    """A START for a known tool call reopens it; later ARGS append to its arguments."""
    conversation = Conversation()
    run(
        conversation,
        *tool("c", "f", '{"a":', parentMessageId="m"),
        *tool("c", "f", "1}", parentMessageId="m"),
    )
    calls = conversation.messages[0].tool_calls
    assert len(calls) == 1 and calls[0].function.arguments == '{"a":1}'


def test_args_and_end_for_an_unknown_tool_call_are_skipped() -> None:
    """ARGS or END naming no tool call change nothing and say so."""
    conversation = Conversation()
    for event in (
        ev("TOOL_CALL_ARGS", toolCallId="x", delta="{}"),
        ev("TOOL_CALL_END", toolCallId="x"),
    ):
        change = conversation.apply(event)
        assert codes(change) == ["tool-call.unknown"] and change.diagnostics[0].subject == "x"
    assert wire(conversation) == []


def test_tool_calls_inherit_their_parent_messages_owner() -> None:
    """A tool call carries no attribution; its parent message's subagentRunId is the owner."""
    conversation = Conversation()
    run(conversation, *tool("c", "f", "{}", parentMessageId="m", subagentRunId="sub"))
    message = conversation.messages[0]
    assert message.subagent_run_id == "sub"
    assert "subagentRunId" not in CONVERTER.dump(message.tool_calls[0])


# ---- tool results ---------------------------------------------------------------------------


def test_tool_result_with_parts_mints_a_tool_message() -> None:
    """TOOL_CALL_RESULT with content parts mints a tool message carrying them unchanged."""
    parts = [
        {"type": "text", "text": "Invoice attached."},
        {
            "type": "document",
            "id": "doc",
            "source": {
                "type": "file",
                "value": "file-abc",
                "provider": "openai",
                "mimeType": "application/pdf",
            },
            "metadata": {"title": "INV"},
        },
    ]
    conversation = Conversation()
    changes = run(
        conversation,
        *tool("c1", "get", "{}", parentMessageId="a1"),
        ev("TOOL_CALL_RESULT", messageId="t1", toolCallId="c1", content=parts),
        *text("a2", "Here it is."),
    )
    assert wire(conversation)[1] == {
        "id": "t1",
        "role": "tool",
        "toolCallId": "c1",
        "content": parts,
    }
    assert isinstance(conversation.messages[1], schema.ToolMessage)
    assert changes[3] == Change(messages=("t1",), created=("t1",))


def test_tool_result_text_content_metadata_and_owner() -> None:
    """A string result is the tool message's content; its metadata and subagentRunId land on it."""
    conversation = Conversation()
    run(
        conversation,
        *tool("c", "f", "{}", parentMessageId="a"),
        ev(
            "TOOL_CALL_RESULT",
            messageId="t",
            toolCallId="c",
            content="42",
            role="tool",
            metadata={"ms": 3},
            subagentRunId="s",
        ),
    )
    assert wire(conversation)[1] == {
        "id": "t",
        "role": "tool",
        "content": "42",
        "toolCallId": "c",
        "metadata": {"ms": 3},
        "subagentRunId": "s",
    }
    assert "metadata" not in wire(conversation)[0]


def test_tool_result_is_placed_after_its_call_and_earlier_results() -> None:
    """A result goes right after the calling message and the tool messages following it."""
    conversation = Conversation()
    run(
        conversation,
        *text("a1", "calling"),
        *tool("c1", "f", "{}", parentMessageId="a1"),
        *tool("c2", "g", "{}", parentMessageId="a1"),
        *text("a2", "meanwhile"),
        ev("TOOL_CALL_RESULT", messageId="t1", toolCallId="c1", content="one"),
        ev("TOOL_CALL_RESULT", messageId="t2", toolCallId="c2", content="two"),
        ev("TOOL_CALL_RESULT", messageId="t3", toolCallId="unknown", content="three"),
    )
    assert [m["id"] for m in wire(conversation)] == ["a1", "t1", "t2", "a2", "t3"]
    assert [m.id for m in conversation.messages] == ["a1", "t1", "t2", "a2", "t3"]


def test_tool_result_with_a_taken_id_is_skipped() -> None:
    """TOOL_CALL_RESULT whose messageId exists changes nothing and says so."""
    conversation = Conversation()
    run(conversation, *text("m", "x"))
    change = conversation.apply(ev("TOOL_CALL_RESULT", messageId="m", toolCallId="c", content="r"))
    assert codes(change) == ["tool-result.duplicate-id"]
    assert wire(conversation) == [{"id": "m", "role": "assistant", "content": "x"}]


def test_tool_result_content_is_copied() -> None:
    """Changing the event after applying it does not reach the conversation."""
    event = ev(
        "TOOL_CALL_RESULT",
        messageId="t",
        toolCallId="c",
        content=[{"type": "text", "text": "a", "metadata": {"k": [1]}}],
    )
    conversation = Conversation()
    conversation.apply(event)
    event.content[0].metadata["k"].append(2)
    event.content[0].text = "b"
    assert wire(conversation)[0]["content"] == [
        {"type": "text", "text": "a", "metadata": {"k": [1]}}
    ]


# ---- encrypted values -----------------------------------------------------------------------


def test_encrypted_value_is_stored_on_its_message() -> None:
    """subtype message stores encryptedValue and encryptedValueType on the named message."""
    conversation = Conversation()
    run(conversation, ev("REASONING_MESSAGE_START", messageId="r", role="reasoning"))
    change = conversation.apply(
        ev(
            "REASONING_ENCRYPTED_VALUE",
            subtype="message",
            entityId="r",
            encryptedValue="b3BhcXVl",
            encryptedValueType="anthropic.thinking",
        )
    )
    assert change == Change(messages=("r",))
    assert wire(conversation)[0]["encryptedValue"] == "b3BhcXVl"
    assert wire(conversation)[0]["encryptedValueType"] == "anthropic.thinking"
    conversation.apply(
        ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId="r", encryptedValue="bmV3")
    )
    assert wire(conversation)[0]["encryptedValue"] == "bmV3"
    assert "encryptedValueType" not in wire(conversation)[0]


def test_encrypted_value_is_stored_on_its_tool_call() -> None:
    """subtype tool-call stores the value on the tool call, not on its message."""
    conversation = Conversation()
    run(conversation, *tool("c", "f", "{}", parentMessageId="m"))
    conversation.apply(
        ev("REASONING_ENCRYPTED_VALUE", subtype="tool-call", entityId="c", encryptedValue="eA==")
    )
    message = wire(conversation)[0]
    assert message["toolCalls"][0]["encryptedValue"] == "eA=="
    assert "encryptedValue" not in message


def test_encrypted_value_for_an_unknown_entity_is_dropped_with_a_diagnostic() -> None:
    """An unknown entityId (either subtype) is a diagnostic naming it, never a failure."""
    conversation = Conversation()
    run(conversation, *text("m", "the answer"))
    before = wire(conversation)
    for subtype in ("message", "tool-call"):
        change = conversation.apply(
            ev("REASONING_ENCRYPTED_VALUE", subtype=subtype, entityId="absent", encryptedValue="x")
        )
        assert codes(change) == ["encrypted-value.unknown-entity"]
        assert change.diagnostics[0].subject == "absent" and not change
    assert wire(conversation) == before


def test_encrypted_value_for_an_activity_is_dropped_with_a_diagnostic() -> None:
    """An activity message has no encryptedValue field: the value is dropped with a diagnostic."""
    conversation = Conversation()
    conversation.apply(ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={}))
    change = conversation.apply(
        ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId="a", encryptedValue="x")
    )
    assert codes(change) == ["encrypted-value.not-storable"]
    assert "encryptedValue" not in wire(conversation)[0]


# ---- state ---------------------------------------------------------------------------------


@pytest.mark.parametrize("snapshot", [{"a": 1}, ["only-this"], 0, None, "text", False])
def test_state_snapshot_replaces_the_state_outright(snapshot: Any) -> None:
    """STATE_SNAPSHOT replaces the state with any JSON value, null and 0 included."""
    conversation = Conversation(state={"old": True})
    change = conversation.apply(ev("STATE_SNAPSHOT", snapshot=snapshot))
    assert change == Change(state=True)
    assert same_json(conversation.state_json(), snapshot)


def test_state_delta_applies_a_patch() -> None:
    """STATE_DELTA patches the state in operation order."""
    conversation = Conversation()
    run(
        conversation,
        ev("STATE_SNAPSHOT", snapshot={"plan": {"status": "open", "steps": ["outline"]}}),
        ev(
            "STATE_DELTA",
            delta=[
                {"op": "add", "path": "/plan/steps/-", "value": "review"},
                {"op": "replace", "path": "/plan/status", "value": "closed"},
            ],
        ),
    )
    assert conversation.state == {"plan": {"status": "closed", "steps": ["outline", "review"]}}


def test_state_delta_applies_against_the_input_baseline() -> None:
    """With no snapshot yet, a delta patches the run input's state."""
    conversation = Conversation(state={"n": 1})
    conversation.apply(ev("STATE_DELTA", delta=[{"op": "replace", "path": "/n", "value": 2}]))
    assert conversation.state == {"n": 2}


def test_failed_state_delta_keeps_the_state_and_warns() -> None:
    """A delta that cannot apply leaves the state exactly as it was, with a diagnostic."""
    conversation = Conversation()
    conversation.apply(ev("STATE_SNAPSHOT", snapshot={"plan": {"status": "open"}}))
    before = conversation._state
    change = conversation.apply(
        ev(
            "STATE_DELTA",
            delta=[
                {"op": "replace", "path": "/plan/status", "value": "closed"},
                {"op": "replace", "path": "/absent/deeper", "value": 1},
            ],
        )
    )
    assert not change and codes(change) == ["state.patch-failed"]
    assert "Failed to apply state patch" in change.diagnostics[0].message
    assert change.diagnostics[0].path == "/delta/1"
    assert conversation._state is before and conversation.state == {"plan": {"status": "open"}}


def test_failed_test_operation_keeps_the_state() -> None:
    """A failing test operation fails the whole delta."""
    conversation = Conversation(state={"v": 1})
    change = conversation.apply(
        ev(
            "STATE_DELTA",
            delta=[
                {"op": "replace", "path": "/v", "value": 2},
                {"op": "test", "path": "/v", "value": 1},
            ],
        )
    )
    assert codes(change) == ["state.patch-failed"] and conversation.state == {"v": 1}


def test_next_state_snapshot_resyncs_after_a_failed_delta() -> None:
    """After a failed delta, the next snapshot sets the state and deltas apply again."""
    conversation = Conversation()
    run(
        conversation,
        ev("STATE_DELTA", delta=[{"op": "remove", "path": "/nope"}]),
        ev("STATE_SNAPSHOT", snapshot={"nope": 1}),
        ev("STATE_DELTA", delta=[{"op": "remove", "path": "/nope"}]),
    )
    assert conversation.state == {}


def test_patch_operation_extras_are_ignored() -> None:
    """A remove carrying a leftover value (an open-object extra) applies."""
    conversation = Conversation(state={"items": ["keep-a", "drop-me", "keep-b"]})
    conversation.apply(
        ev("STATE_DELTA", delta=[{"op": "remove", "path": "/items/1", "value": "drop-me"}])
    )
    assert conversation.state == {"items": ["keep-a", "keep-b"]}


def test_state_delta_supports_every_operation() -> None:
    """add, remove, replace, move, copy and test all apply through the reducer."""
    conversation = Conversation(state={"a": {"x": 1}, "b": [1, 2], "c": 0})
    conversation.apply(
        ev(
            "STATE_DELTA",
            delta=[
                {"op": "test", "path": "/c", "value": 0},
                {"op": "copy", "from": "/a", "path": "/d"},
                {"op": "move", "from": "/b/0", "path": "/b/-"},
                {"op": "replace", "path": "/d/x", "value": 2},
                {"op": "remove", "path": "/c"},
                {"op": "add", "path": "/e", "value": {"f": [1]}},
            ],
        )
    )
    assert conversation.state == {"a": {"x": 1}, "b": [2, 1], "d": {"x": 2}, "e": {"f": [1]}}


def test_hand_built_deltas_may_carry_wire_operations() -> None:
    """A delta holding plain wire dicts (built by hand, not parsed) applies the same way."""
    event = schema.StateDeltaEvent(delta=[{"op": "add", "path": "/k", "value": [1]}])  # type: ignore[list-item]
    conversation = Conversation()
    conversation.apply(event)
    event.delta[0]["value"].append(2)  # type: ignore[index]
    assert conversation.state == {"k": [1]}


def test_empty_state_delta_changes_nothing() -> None:
    """A delta with no operations reports no change."""
    assert not Conversation().apply(ev("STATE_DELTA", delta=[]))


def test_state_is_read_only_and_copied_on_request() -> None:
    """state is a view that cannot be changed; state_json is an independent copy."""
    conversation = Conversation(state={"a": {"b": [1]}})
    with pytest.raises(TypeError):
        conversation.state["a"] = 1
    with pytest.raises(AttributeError):
        conversation.state["a"]["b"].append(2)
    copied = conversation.state_json()
    copied["a"]["b"].append(2)
    assert conversation.state == {"a": {"b": [1]}}


def test_state_view_is_live_and_json_and_message_tuples_are_snapshots() -> None:
    """A state view shows the current state; state_json() and messages tuples keep theirs."""
    conversation = Conversation(state={"n": 1, "big": {"k": [1]}})
    run(conversation, *text("m", "x"))
    view, snapshot, messages = conversation.state, conversation.state_json(), conversation.messages
    conversation.apply(ev("STATE_DELTA", delta=[{"op": "replace", "path": "/n", "value": 2}]))
    run(conversation, *text("m2", "y"))
    assert view["n"] == 2 and conversation.state["n"] == 2
    assert snapshot == {"n": 1, "big": {"k": [1]}}
    assert len(messages) == 1 and len(conversation.messages) == 2


def test_state_events_payloads_are_copied() -> None:
    """Changing a snapshot or delta value after applying it does not reach the state."""
    snapshot = ev("STATE_SNAPSHOT", snapshot={"a": [1]})
    delta = ev("STATE_DELTA", delta=[{"op": "add", "path": "/b", "value": {"c": [1]}}])
    conversation = Conversation()
    run(conversation, snapshot, delta)
    snapshot.snapshot["a"].append(2)
    delta.delta[0].value["c"].append(2)
    assert conversation.state == {"a": [1], "b": {"c": [1]}}


def _dict_paths(doc: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of every object member, depth first (arrays are leaves)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*prefix, key)
            yield from _dict_paths(value, (*prefix, key))


def _at(doc: Any, path: tuple[str, ...]) -> Any:
    for token in path:
        doc = doc[token]
    return doc


_keys = st.sampled_from(["a", "b", "c", "d"])
_leaves = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
_values = st.recursive(
    _leaves,
    lambda kids: st.lists(kids, max_size=2) | st.dictionaries(_keys, kids, max_size=3),
    max_leaves=8,
)
_states = st.dictionaries(_keys, _values, max_size=4)


@st.composite
def _patches(draw: st.DrawFn, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Operations on existing object members (or new members of existing objects)."""
    paths = list(_dict_paths(doc))
    objects = [()] + [p for p in paths if isinstance(_at(doc, p), dict)]
    ops: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["add", "replace", "remove", "test"]))
        if kind == "add" or not paths:
            parent = draw(st.sampled_from(objects))
            path = (*parent, draw(_keys))
            ops.append({"op": "add", "path": "/" + "/".join(path), "value": draw(_values)})
            continue
        path = draw(st.sampled_from(paths))
        pointer = "/" + "/".join(path)
        if kind == "remove":
            ops.append({"op": "remove", "path": pointer})
        elif kind == "test":
            ops.append({"op": "test", "path": pointer, "value": _at(doc, path)})
        else:
            ops.append({"op": "replace", "path": pointer, "value": draw(_values)})
    return ops


@given(data=st.data(), state=_states)
def test_state_delta_whose_kth_operation_fails_keeps_the_state(
    data: st.DataObject, state: dict[str, Any]
) -> None:
    """Property: a STATE_DELTA whose k-th operation fails leaves the state equal to before."""
    ops = data.draw(_patches(state))
    k = data.draw(st.integers(0, len(ops)))
    failing = {"op": "remove", "path": "/zz-absent/x"}
    conversation = Conversation(state=state)
    before = conversation._state
    change = conversation.apply(ev("STATE_DELTA", delta=[*ops[:k], failing, *ops[k:]]))
    assert codes(change) == ["state.patch-failed"] and not change.state
    assert conversation._state is before
    assert same_json(conversation.state_json(), state)


@given(data=st.data(), state=_states)
def test_state_delta_shares_untouched_subtrees(data: st.DataObject, state: dict[str, Any]) -> None:
    """Property: after a delta applies, every subtree off the touched paths is the same object."""
    import jsonpatch

    ops = data.draw(_patches(state))
    try:
        expected = jsonpatch.apply_patch(state, ops)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
        return
    conversation = Conversation(state=state)
    before = conversation._state
    conversation.apply(ev("STATE_DELTA", delta=ops))
    after = conversation._state
    assert same_json(after, expected)
    touched = [tuple(op["path"].split("/")[1:]) for op in ops]
    for path in _dict_paths(before):
        related = any(t[: len(path)] == path or path[: len(t)] == t for t in touched)
        if related:
            continue
        assert _at(after, path) is _at(before, path)


# ---- messages snapshot ----------------------------------------------------------------------


def test_messages_snapshot_reconciles_by_id() -> None:
    """Known ids are replaced in place, new ids appended in snapshot order, absent ones dropped."""
    conversation = Conversation()
    run(conversation, *text("a", "first draft"), *text("b", "retracted"), *text("c", "kept"))
    change = conversation.apply(
        ev(
            "MESSAGES_SNAPSHOT",
            messages=[
                {"id": "n2", "role": "user", "content": "new two"},
                {"id": "c", "role": "assistant", "content": "kept, edited"},
                {"id": "a", "role": "assistant", "content": "first draft, corrected"},
                {"id": "n1", "role": "user", "content": "new one"},
            ],
        )
    )
    assert [(m["id"], m["content"]) for m in wire(conversation)] == [
        ("a", "first draft, corrected"),
        ("c", "kept, edited"),
        ("n2", "new two"),
        ("n1", "new one"),
    ]
    assert change.messages == ("a", "c", "n2", "n1")
    assert change.created == ("n2", "n1") and change.removed == ("b",)


def test_activity_and_reasoning_messages_survive_a_snapshot_without_their_role() -> None:
    """Activity and reasoning messages the snapshot omits survive when it has none of their role."""
    conversation = Conversation()
    run(
        conversation,
        ev("REASONING_MESSAGE_START", messageId="r", role="reasoning"),
        ev("REASONING_MESSAGE_END", messageId="r"),
        ev("ACTIVITY_SNAPSHOT", messageId="act", activityType="t", content={"k": 1}),
        *text("m", "x"),
    )
    change = conversation.apply(
        ev("MESSAGES_SNAPSHOT", messages=[{"id": "u", "role": "user", "content": "q"}])
    )
    assert [m["id"] for m in wire(conversation)] == ["r", "act", "u"]
    assert change.removed == ("m",)


def test_a_snapshot_with_a_role_is_the_complete_set_for_that_role() -> None:
    """A snapshot carrying any reasoning (or activity) message drops the others of that role."""
    conversation = Conversation()
    run(
        conversation,
        ev("REASONING_MESSAGE_START", messageId="r-old", role="reasoning"),
        ev("ACTIVITY_SNAPSHOT", messageId="act-old", activityType="t", content={}),
    )
    conversation.apply(
        ev(
            "MESSAGES_SNAPSHOT",
            messages=[
                {"id": "r-new", "role": "reasoning", "content": "canonical"},
                {"id": "act-new", "role": "activity", "activityType": "t", "content": {}},
            ],
        )
    )
    assert [m["id"] for m in wire(conversation)] == ["r-new", "act-new"]


def test_messages_snapshot_keeps_unknown_part_free_messages_and_tool_calls() -> None:
    """Snapshot messages keep tool calls, metadata and parts; their tool calls are indexed."""
    conversation = Conversation()
    snapshot = [
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "before"}]},
        {
            "id": "a",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                    "metadata": {"m": 1},
                }
            ],
        },
    ]
    conversation.apply(ev("MESSAGES_SNAPSHOT", messages=snapshot))
    assert wire(conversation) == snapshot
    conversation.apply(ev("TOOL_CALL_ARGS", toolCallId="c", delta=" "))
    assert wire(conversation)[1]["toolCalls"][0]["function"]["arguments"] == "{} "


def test_messages_snapshot_with_duplicate_ids_keeps_the_last() -> None:
    """A snapshot naming one id twice keeps the last copy at the first position."""
    conversation = Conversation()
    change = conversation.apply(
        ev(
            "MESSAGES_SNAPSHOT",
            messages=[
                {"id": "x", "role": "user", "content": "1"},
                {"id": "y", "role": "user", "content": "2"},
                {"id": "x", "role": "user", "content": "3"},
            ],
        )
    )
    assert codes(change) == ["messages.duplicate-id"]
    assert [(m["id"], m["content"]) for m in wire(conversation)] == [("x", "3"), ("y", "2")]


def test_streaming_continues_into_a_message_a_snapshot_replaced() -> None:
    """Content after a snapshot appends to the snapshot's copy of the message."""
    conversation = Conversation()
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="m"))
    conversation.apply(ev("TEXT_MESSAGE_CONTENT", messageId="m", delta="old"))
    conversation.apply(
        ev("MESSAGES_SNAPSHOT", messages=[{"id": "m", "role": "assistant", "content": "new"}])
    )
    conversation.apply(ev("TEXT_MESSAGE_CONTENT", messageId="m", delta="!"))
    assert conversation.messages[0].content == "new!"


def test_invalid_snapshot_message_is_skipped() -> None:
    """A hand-built snapshot holding a message the schema rejects skips it with a diagnostic."""
    event = ev("MESSAGES_SNAPSHOT", messages=[{"id": "a", "role": "user", "content": "x"}])
    event.messages[0].content = 5
    change = Conversation().apply(event)
    assert codes(change) == ["messages.invalid"] and change.diagnostics[0].path == "/messages/0"


# ---- activities (seeds/agui-activity.md) ------------------------------------------------------


def test_activity_snapshot_creates_an_activity_message_at_its_arrival_position() -> None:
    """An unseen messageId creates a role-activity message where the snapshot arrived."""
    conversation = Conversation()
    changes = run(
        conversation,
        *text("m1", "searching"),
        ev("ACTIVITY_SNAPSHOT", messageId="act", activityType="web_search", content={"found": 0}),
        *text("m2", "done"),
    )
    assert wire(conversation)[1] == {
        "id": "act",
        "role": "activity",
        "activityType": "web_search",
        "content": {"found": 0},
    }
    assert [m["id"] for m in wire(conversation)] == ["m1", "act", "m2"]
    assert changes[3].created == ("act",)
    assert conversation.activities == (conversation.messages[1],)
    assert isinstance(conversation.activities[0], schema.ActivityMessage)


def test_replacing_activity_snapshot_replaces_content_and_type() -> None:
    """A snapshot for an existing activity replaces content and type (absent replace = true)."""
    conversation = Conversation()
    run(
        conversation,
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="web_search", content={"q": 1, "x": 2}),
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="file_search", content={"q": 9}),
    )
    assert wire(conversation) == [
        {"id": "a", "role": "activity", "activityType": "file_search", "content": {"q": 9}}
    ]
    conversation.apply(
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={}, replace=True)
    )
    assert wire(conversation)[0]["content"] == {}


def test_replace_false_leaves_the_activity_as_it_stands() -> None:
    """replace: false leaves content and activityType; its values apply only on creation."""
    conversation = Conversation()
    changes = run(
        conversation,
        ev(
            "ACTIVITY_SNAPSHOT",
            messageId="a",
            activityType="web_search",
            content={"query": "ag-ui", "found": 1},
        ),
        ev(
            "ACTIVITY_SNAPSHOT",
            messageId="a",
            activityType="file_search",
            content={"query": "something else", "found": 9},
            replace=False,
        ),
        ev("ACTIVITY_SNAPSHOT", messageId="b", activityType="t", content={"n": 1}, replace=False),
    )
    assert wire(conversation) == [
        {
            "id": "a",
            "role": "activity",
            "activityType": "web_search",
            "content": {"query": "ag-ui", "found": 1},
        },
        {"id": "b", "role": "activity", "activityType": "t", "content": {"n": 1}},
    ]
    assert not changes[1]


def test_replacement_keeps_merging_metadata() -> None:
    """A replacing snapshot replaces content, never metadata, which keeps merging key by key."""
    conversation = Conversation()
    run(
        conversation,
        ev(
            "ACTIVITY_SNAPSHOT",
            messageId="a",
            activityType="t",
            content={"v": 1},
            metadata={"x": 1, "y": 1},
        ),
        ev(
            "ACTIVITY_SNAPSHOT",
            messageId="a",
            activityType="t",
            content={"v": 2},
            metadata={"y": 2},
        ),
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={"v": 3}),
        ev(
            "ACTIVITY_DELTA",
            messageId="a",
            activityType="t",
            patch=[{"op": "replace", "path": "/v", "value": 4}],
            metadata={"z": 3},
        ),
        ev(
            "ACTIVITY_SNAPSHOT",
            messageId="a",
            activityType="t",
            content={},
            replace=False,
            metadata={"w": 4},
        ),
    )
    assert wire(conversation)[0]["metadata"] == {"x": 1, "y": 2, "z": 3, "w": 4}
    assert wire(conversation)[0]["content"] == {"v": 4}


def test_replacing_snapshot_re_mints_attribution() -> None:
    """A replacing snapshot sets the owner to its own subagentRunId, including becoming absent."""
    conversation = Conversation()
    run(
        conversation,
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={}, subagentRunId="s1"),
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={}, subagentRunId="s2"),
    )
    assert wire(conversation)[0]["subagentRunId"] == "s2"
    conversation.apply(ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={}))
    assert "subagentRunId" not in wire(conversation)[0]


def test_replace_false_does_not_re_mint_ownership() -> None:
    """A replace: false snapshot leaves the established owner (and an absent one) standing."""
    conversation = Conversation()
    run(
        conversation,
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={}, subagentRunId="s1"),
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={}, replace=False),
        ev("ACTIVITY_SNAPSHOT", messageId="b", activityType="t", content={}),
        ev(
            "ACTIVITY_SNAPSHOT",
            messageId="b",
            activityType="t",
            content={},
            replace=False,
            subagentRunId="s9",
        ),
    )
    assert wire(conversation)[0]["subagentRunId"] == "s1"
    assert "subagentRunId" not in wire(conversation)[1]


def test_activity_delta_patches_content() -> None:
    """ACTIVITY_DELTA patches the activity's content in place, with no diagnostic."""
    conversation = Conversation()
    changes = run(
        conversation,
        ev(
            "ACTIVITY_SNAPSHOT",
            messageId="a",
            activityType="web_search",
            content={"query": "ag-ui", "found": 0},
        ),
        ev(
            "ACTIVITY_DELTA",
            messageId="a",
            activityType="web_search",
            patch=[{"op": "replace", "path": "/found", "value": 3}],
        ),
    )
    assert wire(conversation) == [
        {
            "id": "a",
            "role": "activity",
            "activityType": "web_search",
            "content": {"query": "ag-ui", "found": 3},
        }
    ]
    assert changes[1] == Change(messages=("a",))


def test_activity_delta_retypes_and_keeps_the_owner() -> None:
    """A delta's activityType replaces the message's; its owner stays the snapshot's."""
    conversation = Conversation()
    run(
        conversation,
        ev(
            "ACTIVITY_SNAPSHOT", messageId="a", activityType="search", content={}, subagentRunId="s"
        ),
        ev("ACTIVITY_DELTA", messageId="a", activityType="checklist", patch=[]),
    )
    assert wire(conversation)[0]["activityType"] == "checklist"
    assert wire(conversation)[0]["subagentRunId"] == "s"


def test_activity_delta_for_a_missing_message_is_skipped_with_a_warning() -> None:
    """A delta naming no message invents none; its diagnostic names ACTIVITY_DELTA and the id."""
    conversation = Conversation()
    run(conversation, *text("m1", "searching"))
    change = conversation.apply(
        ev(
            "ACTIVITY_DELTA",
            messageId="never-created",
            activityType="web_search",
            patch=[{"op": "replace", "path": "/found", "value": 3}],
        )
    )
    assert codes(change) == ["activity.delta-skipped"] and not change
    (diagnostic,) = change.diagnostics
    assert "ACTIVITY_DELTA" in diagnostic.message and "never-created" in diagnostic.message
    assert diagnostic.subject == "never-created"
    assert wire(conversation) == [{"id": "m1", "role": "assistant", "content": "searching"}]


def test_activity_delta_for_a_non_activity_message_is_skipped_with_a_warning() -> None:
    """A delta naming a text message leaves it alone and yields the same diagnostic."""
    conversation = Conversation()
    run(conversation, *text("m1", "text"))
    change = conversation.apply(
        ev(
            "ACTIVITY_DELTA",
            messageId="m1",
            activityType="t",
            patch=[{"op": "add", "path": "/x", "value": 1}],
        )
    )
    assert codes(change) == ["activity.delta-skipped"]
    assert (
        "ACTIVITY_DELTA" in change.diagnostics[0].message and "m1" in change.diagnostics[0].message
    )
    assert wire(conversation) == [{"id": "m1", "role": "assistant", "content": "text"}]


def test_failed_activity_delta_changes_nothing_and_a_snapshot_resyncs() -> None:
    """A delta that fails leaves content, type and metadata alone; the next snapshot resyncs."""
    conversation = Conversation()
    run(conversation, ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={"n": 1}))
    change = conversation.apply(
        ev(
            "ACTIVITY_DELTA",
            messageId="a",
            activityType="other",
            patch=[{"op": "replace", "path": "/n", "value": 2}, {"op": "remove", "path": "/gone"}],
            metadata={"k": 1},
        )
    )
    assert codes(change) == ["activity.patch-failed"] and change.diagnostics[0].path == "/patch/1"
    assert wire(conversation) == [
        {"id": "a", "role": "activity", "activityType": "t", "content": {"n": 1}}
    ]
    conversation.apply(
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={"gone": 0})
    )
    conversation.apply(
        ev(
            "ACTIVITY_DELTA",
            messageId="a",
            activityType="t",
            patch=[{"op": "remove", "path": "/gone"}],
        )
    )
    assert wire(conversation)[0]["content"] == {}


def test_activity_delta_whose_result_is_not_an_object_is_skipped() -> None:
    """A patch that would make content a non-object (a root replacement) changes nothing."""
    conversation = Conversation()
    conversation.apply(ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={"n": 1}))
    change = conversation.apply(
        ev(
            "ACTIVITY_DELTA",
            messageId="a",
            activityType="t",
            patch=[{"op": "replace", "path": "", "value": [1]}],
        )
    )
    assert codes(change) == ["activity.not-object"]
    assert wire(conversation)[0]["content"] == {"n": 1}


def test_activity_snapshot_for_a_non_activity_message_is_skipped() -> None:
    """A snapshot naming a text message leaves it alone, with a diagnostic."""
    conversation = Conversation()
    run(conversation, *text("m", "words"))
    change = conversation.apply(
        ev("ACTIVITY_SNAPSHOT", messageId="m", activityType="t", content={})
    )
    assert codes(change) == ["activity.not-activity"]
    assert wire(conversation) == [{"id": "m", "role": "assistant", "content": "words"}]


def test_unknown_activity_types_are_tolerated() -> None:
    """activityType is open: any string is kept as is."""
    conversation = Conversation()
    change = conversation.apply(
        ev(
            "ACTIVITY_SNAPSHOT",
            messageId="a",
            activityType="com.example/never-heard-of",
            content={},
        )
    )
    assert not change.diagnostics
    assert conversation.activities[0].activity_type == "com.example/never-heard-of"


def test_activity_content_is_copied_and_patched_copy_on_write() -> None:
    """Snapshot content is copied on arrival, and a delta shares the members it does not touch."""
    event = ev(
        "ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={"big": {"k": [1]}, "n": 0}
    )
    conversation = Conversation()
    conversation.apply(event)
    event.content["big"]["k"].append(2)
    before = conversation._by_id["a"].fields["content"]
    conversation.apply(
        ev(
            "ACTIVITY_DELTA",
            messageId="a",
            activityType="t",
            patch=[{"op": "replace", "path": "/n", "value": 1}],
        )
    )
    after = conversation._by_id["a"].fields["content"]
    assert after == {"big": {"k": [1]}, "n": 1} and after["big"] is before["big"]


# ---- metadata ------------------------------------------------------------------------------


def test_text_metadata_merges_last_write_wins_without_recursion() -> None:
    """Metadata from every event of a text message merges key by key; arrays are replaced whole."""
    conversation = Conversation()
    run(
        conversation,
        ev(
            "TEXT_MESSAGE_START",
            messageId="m",
            metadata={"a": 1, "b": 1, "trace": ["one", "two"], "o": {"x": 1}},
        ),
        ev(
            "TEXT_MESSAGE_CONTENT",
            messageId="m",
            delta="done",
            metadata={"b": 2, "c": 3, "trace": ["three"]},
        ),
        ev("TEXT_MESSAGE_END", messageId="m", metadata={"o": {"y": 2}, "n": None}),
    )
    assert wire(conversation)[0]["metadata"] == {
        "a": 1,
        "b": 2,
        "c": 3,
        "trace": ["three"],
        "o": {"y": 2},
        "n": None,
    }


def test_tool_call_metadata_lands_on_the_call() -> None:
    """TOOL_CALL_START/ARGS/END metadata accumulates on the tool call, not its message."""
    conversation = Conversation()
    run(
        conversation,
        ev(
            "TOOL_CALL_START",
            toolCallId="tc",
            toolCallName="search",
            parentMessageId="m",
            metadata={"provider": "acme", "attempt": 1},
        ),
        ev("TOOL_CALL_ARGS", toolCallId="tc", delta='{"q":"ag-ui"}', metadata={"bytes": 12}),
        ev("TOOL_CALL_END", toolCallId="tc", metadata={"attempt": 2}),
    )
    assert wire(conversation) == [
        {
            "id": "m",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": "tc",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q":"ag-ui"}'},
                    "metadata": {"provider": "acme", "attempt": 2, "bytes": 12},
                }
            ],
        }
    ]


def test_reasoning_metadata_lands_on_the_reasoning_message() -> None:
    """REASONING_MESSAGE_* metadata merges onto the reasoning message."""
    conversation = Conversation()
    run(
        conversation,
        ev("REASONING_MESSAGE_START", messageId="r", role="reasoning", metadata={"a": 1}),
        ev("REASONING_MESSAGE_CONTENT", messageId="r", delta="x", metadata={"b": 2}),
        ev("REASONING_MESSAGE_END", messageId="r", metadata={"a": 3}),
    )
    assert wire(conversation)[0]["metadata"] == {"a": 3, "b": 2}


def test_other_events_merge_metadata_nowhere() -> None:
    """Metadata of run, step, state, raw, custom, span, encrypted, subagent events lands nowhere."""
    conversation = Conversation()
    run(
        conversation,
        *text("m", "x"),
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={}),
    )
    meta = {"metadata": {"leak": True}}
    before = wire(conversation)
    run(
        conversation,
        ev("RUN_STARTED", threadId="t", runId="r", **meta),
        ev("STEP_STARTED", stepName="s", **meta),
        ev("STEP_FINISHED", stepName="s", **meta),
        ev("STATE_DELTA", delta=[], **meta),
        ev("RAW", event={}, **meta),
        ev("CUSTOM", name="n", value=1, **meta),
        ev("REASONING_START", messageId="m", **meta),
        ev("REASONING_END", messageId="m", **meta),
        ev(
            "REASONING_ENCRYPTED_VALUE", subtype="message", entityId="m", encryptedValue="e", **meta
        ),
        ev("SUBAGENT_STARTED", subagentRunId="s", name="n", **meta),
        ev("SUBAGENT_FINISHED", subagentRunId="s", **meta),
        ev("RUN_FINISHED", threadId="t", runId="r", **meta),
    )
    after = wire(conversation)
    assert "metadata" not in after[0] and "metadata" not in after[1]
    assert after[0]["encryptedValue"] == "e" and before[1] == after[1]


def test_event_metadata_is_copied() -> None:
    """Changing an event's metadata after applying it does not reach the message."""
    event = ev("TEXT_MESSAGE_START", messageId="m", metadata={"k": [1]})
    conversation = Conversation()
    conversation.apply(event)
    event.metadata["k"].append(2)
    event.metadata["new"] = 1
    assert wire(conversation)[0]["metadata"] == {"k": [1]}


# ---- subagents, lifecycle and the rest ------------------------------------------------------


def test_subagent_run_id_is_kept_on_messages_tool_messages_and_activities() -> None:
    """Attribution lands on text, reasoning and tool messages, tool-call parents and activities."""
    conversation = Conversation()
    run(
        conversation,
        *text("m", "delegated", subagentRunId="s1"),
        ev("REASONING_MESSAGE_START", messageId="r", role="reasoning", subagentRunId="s2"),
        *tool("c", "f", "{}", parentMessageId="p", subagentRunId="s3"),
        ev("TOOL_CALL_RESULT", messageId="t", toolCallId="c", content="x", subagentRunId="s3"),
        ev("ACTIVITY_SNAPSHOT", messageId="a", activityType="t", content={}, subagentRunId="s4"),
    )
    assert [m.get("subagentRunId") for m in wire(conversation)] == ["s1", "s2", "s3", "s3", "s4"]


@pytest.mark.parametrize(
    "event",
    [
        ev("RUN_STARTED", threadId="t", runId="r"),
        ev("RUN_FINISHED", threadId="t", runId="r"),
        ev("RUN_ERROR", message="boom"),
        ev("STEP_STARTED", stepName="s"),
        ev("STEP_FINISHED", stepName="s"),
        ev("SUBAGENT_STARTED", subagentRunId="s", name="n"),
        ev("SUBAGENT_FINISHED", subagentRunId="s"),
        ev("SUBAGENT_ERROR", subagentRunId="s", message="m"),
        ev("RAW", event={"x": 1}),
        ev("CUSTOM", name="n", value={"items": 3}),
        ev("REASONING_START", messageId="x"),
        ev("REASONING_END", messageId="x"),
    ],
    ids=lambda e: e.type,
)
def test_lifecycle_and_pass_through_events_change_nothing(event: Any) -> None:
    """Run, step, subagent, raw, custom and reasoning-span events return an empty Change."""
    conversation = Conversation()
    run(conversation, *text("m", "x"))
    before = conversation.to_json()
    assert conversation.apply(event) == Change()
    assert conversation.to_json() == before


def test_run_started_input_does_not_change_the_conversation() -> None:
    """RUN_STARTED.input is an echo of the request: the conversation already holds it."""
    conversation = Conversation()
    event = ev(
        "RUN_STARTED",
        threadId="t",
        runId="r",
        input={
            "threadId": "t",
            "runId": "r",
            "messages": [{"id": "u", "role": "user", "content": "q"}],
        },
    )
    assert conversation.apply(event) == Change() and conversation.messages == ()


@pytest.mark.parametrize(
    "event",
    [
        ev("TEXT_MESSAGE_CHUNK", messageId="m", delta="x"),
        ev("TOOL_CALL_CHUNK", toolCallId="c", toolCallName="f", delta="{}"),
        ev("REASONING_MESSAGE_CHUNK", messageId="r", delta="x"),
    ],
    ids=lambda e: e.type,
)
def test_unexpanded_chunks_change_nothing_and_say_so(event: Any) -> None:
    """A *_CHUNK event that skipped chunk expansion is ignored with a diagnostic naming it."""
    change = Conversation().apply(event)
    assert codes(change) == ["event.not-expanded"] and change.diagnostics[0].subject == event.type


def test_applying_something_that_is_not_an_event_is_a_usage_error() -> None:
    """apply() takes typed events; a dict is a caller error."""
    with pytest.raises(UsageError):
        Conversation().apply({"type": "TEXT_MESSAGE_START", "messageId": "m"})


def test_every_event_type_has_a_rule() -> None:
    """The reducer's dispatch table covers exactly the schema's event classes."""
    assert set(_RULES) == set(typing.get_args(schema.Event))


def test_hand_built_events_with_wrong_types_do_not_corrupt_the_conversation() -> None:
    """Non-string deltas and non-list patches are skipped with diagnostics, never stored."""
    conversation = Conversation(state={"a": 1})
    run(conversation, *text("m", "x"), *tool("c", "f", "{}", parentMessageId="m"))
    conversation.apply(ev("ACTIVITY_SNAPSHOT", messageId="act", activityType="t", content={}))
    before = conversation.to_json()
    bad_text = ev("TEXT_MESSAGE_CONTENT", messageId="m", delta="y")
    bad_text.delta = 5
    bad_args = ev("TOOL_CALL_ARGS", toolCallId="c", delta="y")
    bad_args.delta = None
    bad_state = ev("STATE_DELTA", delta=[])
    bad_state.delta = "nope"
    bad_activity = ev("ACTIVITY_DELTA", messageId="act", activityType="t", patch=[])
    bad_activity.patch = None
    bad_snapshot = ev("ACTIVITY_SNAPSHOT", messageId="act2", activityType="t", content={})
    bad_snapshot.content = [1]
    bad_result = ev("TOOL_CALL_RESULT", messageId="t", toolCallId="c", content="r")
    bad_result.content = 3
    for event in (bad_text, bad_args, bad_state, bad_activity, bad_snapshot, bad_result):
        change = conversation.apply(event)
        assert change.diagnostics and not change, event
    assert conversation.to_json() == before


# ---- what the runtime reads from the generated code ---------------------------------------


def test_an_event_class_without_a_rule_changes_nothing_and_says_so() -> None:
    """An event class the reducer has no rule for (a newer schema's) is tolerated, not fatal."""
    conversation = Conversation(state={"a": 1})
    run(conversation, *text("m", "x"))
    before = conversation.to_json()
    change = conversation.apply(FutureEvent(message_id="m"))  # type: ignore[arg-type]
    assert not change and codes(change) == ["event.no-rule"]
    assert change.diagnostics[0].subject == "FUTURE_EVENT"
    assert conversation.check(FutureEvent()) == change.diagnostics  # type: ignore[arg-type]
    assert conversation.to_json() == before


def test_the_dispatch_table_covers_a_regenerated_union() -> None:
    """A class a regeneration adds to the Event union gets the fallback rule, not a gap."""
    table = dispatch_table({"RUN_STARTED": "run"}, "fallback", union=FUTURE_UNION)
    assert table[FutureEvent] == "fallback" and table[schema.RunStartedEvent] == "run"
    assert set(table) == {*typing.get_args(schema.Event), FutureEvent}


def test_a_rule_for_a_type_the_schema_lacks_fails_loudly() -> None:
    """A rule or a named kind for a type no generated class has is an error at build time."""
    with pytest.raises(AgentProtoError):
        dispatch_table({"THINKING_START": 1}, 0)
    with pytest.raises(AgentProtoError):
        kinds("RUN_STARTED", "RUN_RENAMED")


def test_text_roles_are_the_schema_text_message_roles() -> None:
    """The roles a text message may have come from the generated TextMessageRole."""
    assert set(TEXT_ROLES) == set(typing.get_args(schema.TextMessageRole))
    assert set(TEXT_ROLES) == set(_generated.ENUM_VALUES["TextMessageRole"])


def test_a_text_role_the_runtime_cannot_build_is_stripped_with_a_diagnostic() -> None:
    """A role with no message class is an unknown enum value: stripped, never dropped silently."""
    conversation = Conversation()
    start = ev("TEXT_MESSAGE_START", messageId="m")
    start.role = "critic"
    assert [d.code for d in conversation.check(start)] == ["unknown-member-stripped"]
    assert conversation.to_json()["messages"] == []
    change = conversation.apply(start)
    assert codes(change) == ["unknown-member-stripped"] and change.created == ("m",)
    assert change.diagnostics[0].path == "/role"
    conversation.apply(ev("TEXT_MESSAGE_CONTENT", messageId="m", delta="hi"))
    assert wire(conversation) == [{"id": "m", "role": "assistant", "content": "hi"}]


def test_check_reports_what_apply_would_without_changing_anything() -> None:
    """check() gives apply()'s diagnostics (skip, failed patch, non-object) and changes nothing."""
    conversation = Conversation(state={"a": 1})
    run(conversation, *text("m", "x"))
    conversation.apply(ev("ACTIVITY_SNAPSHOT", messageId="act", activityType="t", content={}))
    before = conversation.to_json()
    cases = {
        "state.patch-failed": ev("STATE_DELTA", delta=[{"op": "remove", "path": "/b"}]),
        "activity.patch-failed": ev(
            "ACTIVITY_DELTA", messageId="act", activityType="t",
            patch=[{"op": "test", "path": "/x", "value": 1}],
        ),
        "activity.not-object": ev(
            "ACTIVITY_DELTA", messageId="act", activityType="t",
            patch=[{"op": "replace", "path": "", "value": [1]}],
        ),
        "activity.delta-skipped": ev("ACTIVITY_DELTA", messageId="m", activityType="t", patch=[]),
        "activity.not-activity": ev(
            "ACTIVITY_SNAPSHOT", messageId="m", activityType="t", content={}
        ),
        "tool-result.duplicate-id": ev(
            "TOOL_CALL_RESULT", messageId="m", toolCallId="c", content="r"
        ),
        "message.unknown": ev("TEXT_MESSAGE_CONTENT", messageId="nope", delta="y"),
        "tool-call.unknown": ev("TOOL_CALL_ARGS", toolCallId="nope", delta="y"),
    }  # fmt: skip
    for code, event in cases.items():
        assert [d.code for d in conversation.check(event)] == [code], code
        assert conversation.to_json() == before, code
        assert codes(conversation.apply(event)) == [code], code
        assert conversation.to_json() == before, code
    clean = [
        ev("STATE_DELTA", delta=[{"op": "add", "path": "/b", "value": 2}]),
        ev("TOOL_CALL_START", toolCallId="c", toolCallName="f"),
        ev("TEXT_MESSAGE_START", messageId="new"),
        ev("MESSAGES_SNAPSHOT", messages=[]),
    ]
    for event in clean:
        assert conversation.check(event) == (), event.type
    assert conversation.to_json() == before

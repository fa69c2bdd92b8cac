"""Tests of agentproto.agui._thread.run_input: building, enforcing and dumping the next request."""

from __future__ import annotations

from typing import Any

import pytest

from agentproto import SchemaError
from agentproto._core.diagnostics import Diagnostic
from agentproto.agui import make_converter, parse_event, parse_run_input, schema
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._thread.run_input import PROTOCOL_VERSION, dump_run_input, next_run_input

CONVERTER = make_converter()


def ev(type_: str, **members: Any) -> Any:
    return parse_event({"type": type_, **members})


def conversation_with_activity() -> Conversation:
    conversation = Conversation(
        messages=[CONVERTER.load({"id": "u", "role": "user", "content": "q"}, schema.Message)],
        state={"plan": ["a"]},
    )
    for event in (
        ev("ACTIVITY_SNAPSHOT", messageId="act", activityType="t", content={"n": 1}),
        ev("TEXT_MESSAGE_START", messageId="m"),
        ev("TEXT_MESSAGE_CONTENT", messageId="m", delta="answer"),
        ev("TEXT_MESSAGE_END", messageId="m"),
    ):
        conversation.apply(event)
    return conversation


def test_next_run_input_strips_activity_messages_and_carries_the_state() -> None:
    """The next input holds every message but activities, and the conversation's state."""
    run_input = next_run_input(conversation_with_activity(), thread_id="t", run_id="r2")
    assert [m.id for m in run_input.messages] == ["u", "m"]
    assert run_input.state == {"plan": ["a"]}
    assert dump_run_input(run_input) == {
        "threadId": "t",
        "runId": "r2",
        "messages": [
            {"id": "u", "role": "user", "content": "q"},
            {"id": "m", "role": "assistant", "content": "answer"},
        ],
        "protocolVersion": "1.0",
        "state": {"plan": ["a"]},
        "tools": [],
        "context": [],
    }


def test_next_run_input_passes_the_runs_own_parameters() -> None:
    """Tools, context, forwardedProps, resume and parentRunId go into the input as given."""
    tool = schema.Tool(name="search", description="find", parameters={"type": "object"})
    context = schema.Context(description="tz", value="UTC")
    resume = schema.ResumeEntry(interrupt_id="i1", status="resolved", payload={"ok": True})
    run_input = next_run_input(
        Conversation(),
        thread_id="t",
        run_id="r",
        tools=[tool],
        context=[context],
        forwarded_props={"x": [1]},
        resume=[resume],
        parent_run_id="r0",
    )
    wire = dump_run_input(run_input)
    assert wire["tools"] == [
        {"name": "search", "description": "find", "parameters": {"type": "object"}}
    ]
    assert wire["context"] == [{"description": "tz", "value": "UTC"}]
    assert wire["forwardedProps"] == {"x": [1]}
    assert wire["resume"] == [{"interruptId": "i1", "status": "resolved", "payload": {"ok": True}}]
    assert wire["parentRunId"] == "r0"
    assert "forwardedProps" not in dump_run_input(
        next_run_input(Conversation(), thread_id="t", run_id="r")
    )


def test_protocol_version_defaults_to_ours_and_can_be_left_out() -> None:
    """The input declares "1.0" unless told to leave the field out for an older peer."""
    assert PROTOCOL_VERSION == "1.0"
    inp = next_run_input(Conversation(), thread_id="t", run_id="r", protocol_version=None)
    assert "protocolVersion" not in dump_run_input(inp)


def test_state_can_be_overridden() -> None:
    """An explicit state replaces the conversation's in the input."""
    inp = next_run_input(conversation_with_activity(), thread_id="t", run_id="r", state=[1])
    assert dump_run_input(inp)["state"] == [1]


def test_null_state_is_left_out_with_a_diagnostic() -> None:
    """A null state cannot be sent; it is left out (read as {}) and reported."""
    conversation = Conversation()
    conversation.apply(ev("STATE_SNAPSHOT", snapshot=None))
    diagnostics: list[Diagnostic] = []
    inp = next_run_input(conversation, thread_id="t", run_id="r", diagnostics=diagnostics)
    assert "state" not in dump_run_input(inp)
    assert [d.code for d in diagnostics] == ["run-input.null-state"]


def test_falsy_state_is_sent() -> None:
    """A state of 0 or false is a value and is sent as such."""
    conversation = Conversation(state=0)
    assert dump_run_input(next_run_input(conversation, thread_id="t", run_id="r"))["state"] == 0


def test_next_run_input_shares_nothing_with_the_conversation() -> None:
    """Changing the input leaves the conversation alone, and later events leave the input alone."""
    conversation = conversation_with_activity()
    inp = next_run_input(conversation, thread_id="t", run_id="r", forwarded_props={"k": [1]})
    inp.messages[1].content = "changed"
    inp.state["plan"].append("b")
    assert conversation.messages[2].content == "answer"
    assert conversation.state == {"plan": ["a"]}
    assert inp.messages[1] is not conversation.messages[2]
    conversation.apply(ev("TEXT_MESSAGE_START", messageId="m"))
    conversation.apply(ev("TEXT_MESSAGE_CONTENT", messageId="m", delta="!"))
    assert inp.messages[1].content == "changed"


def test_dumped_input_parses_back_to_an_equal_input() -> None:
    """dump_run_input output is a valid RunAgentInput document."""
    inp = next_run_input(conversation_with_activity(), thread_id="t", run_id="r")
    assert parse_run_input(dump_run_input(inp)) == inp


def test_dump_shares_nothing_with_the_typed_input() -> None:
    """The dumped dict is a copy: changing it leaves the typed input alone."""
    inp = next_run_input(Conversation(state={"a": [1]}), thread_id="t", run_id="r")
    wire = dump_run_input(inp)
    wire["state"]["a"].append(2)
    assert inp.state == {"a": [1]}


@pytest.mark.parametrize(
    ("mutate", "location"),
    [
        (lambda i: setattr(i, "thread_id", 5), "/threadId"),
        (lambda i: setattr(i.messages[0], "content", 7), "/messages/0/content"),
        (
            lambda i: setattr(i, "tools", [schema.Tool(name="t", description=None)]),
            "/tools/0/description",
        ),
        (lambda i: setattr(i, "messages", None), "/messages"),
    ],
)
def test_malformed_known_field_is_fatal_before_sending(mutate: Any, location: str) -> None:
    """A known field the schema rejects raises SchemaError naming where, in both modes."""
    for diagnostics in (None, []):
        inp = next_run_input(conversation_with_activity(), thread_id="t", run_id="r")
        mutate(inp)
        with pytest.raises(SchemaError) as caught:
            dump_run_input(inp, diagnostics=diagnostics)
        assert caught.value.location == location


def test_unknown_material_is_fatal_strictly_and_stripped_tolerantly() -> None:
    """An unknown enum value is a SchemaError by default, stripped with a diagnostic on request."""
    resume = schema.ResumeEntry(interrupt_id="i", status="resolved")
    resume.status = "postponed"  # type: ignore[assignment]
    inp = next_run_input(Conversation(), thread_id="t", run_id="r", resume=[resume])
    with pytest.raises(SchemaError):
        dump_run_input(inp)
    diagnostics: list[Diagnostic] = []
    wire = dump_run_input(inp, diagnostics=diagnostics)
    assert wire["resume"] == []
    assert [d.path for d in diagnostics] == ["/resume/0/status"]


def test_unknown_message_role_is_dropped_tolerantly() -> None:
    """A message of a role the schema does not know is dropped from the list, which survives."""
    inp = next_run_input(conversation_with_activity(), thread_id="t", run_id="r")
    inp.messages[0].role = "narrator"  # type: ignore[assignment]
    diagnostics: list[Diagnostic] = []
    wire = dump_run_input(inp, diagnostics=diagnostics)
    assert [m["id"] for m in wire["messages"]] == ["m"]
    assert [d.path for d in diagnostics] == ["/messages/0"]


def test_activity_messages_are_never_dumped() -> None:
    """An activity message put into a hand-built input is stripped (and reported when asked)."""
    activity = CONVERTER.load(
        {"id": "a", "role": "activity", "activityType": "t", "content": {}}, schema.Message
    )
    inp = schema.RunAgentInput(thread_id="t", run_id="r", messages=[activity])
    assert dump_run_input(inp)["messages"] == []
    diagnostics: list[Diagnostic] = []
    dump_run_input(inp, diagnostics=diagnostics)
    assert [(d.code, d.subject) for d in diagnostics] == [("run-input.activity-stripped", "a")]

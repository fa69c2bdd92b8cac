"""Issue 10, fitting the ecosystem: opt-in, named repairs for known peers' bugs; strict stays
the default and every repair is a diagnostic naming its quirk."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentproto import ProtocolError, SchemaError, UsageError
from agentproto.agui import Consumer, EventDecoder, parse_run_input, quirks, schema
from agentproto.agui.quirks import (
    DOTNET_MISSING_MESSAGE_ID,
    KNOWN_QUIRKS,
    QUIRK_REPAIRED,
    DotnetEmptyParentMessageId,
    LangGraphRunId,
    repair_dotnet_message_ids,
)

RUN_INPUT = {"threadId": "t", "runId": "c0609373", "messages": []}

# what a LangGraph integration sent: RUN_FINISHED with LangGraph's own run id
LANGGRAPH = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "c0609373"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "019cd777"},
]

# what the .NET server sent: a tool call whose parentMessageId is ""
DOTNET = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "c0609373"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "looking"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": ""},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "c0609373"},
]


def _consume(events: list[dict[str, Any]], *middleware: Any) -> Consumer:
    consumer = Consumer(run_input=RUN_INPUT, middleware=list(middleware))
    consumer.feed_all(events)
    consumer.close()
    return consumer


def _repairs(consumer: Consumer) -> list[tuple[str | None, int | None, str | None]]:
    return [(d.subject, d.index, d.path) for d in consumer.diagnostics if d.code == QUIRK_REPAIRED]


def test_langgraph_run_id_is_fatal_by_default() -> None:
    """Strict by default: a RUN_FINISHED with another runId than its start fails the run."""
    with pytest.raises(ProtocolError):
        _consume(LANGGRAPH)


def test_langgraph_run_id_quirk_finishes_the_run_it_started() -> None:
    """With the quirk the RUN_FINISHED gets its start's runId, and one diagnostic says so."""
    consumer = _consume(copy.deepcopy(LANGGRAPH), LangGraphRunId())
    (run,) = consumer.verifier.runs
    assert (run.run_id, run.status) == ("c0609373", "succeeded")
    assert _repairs(consumer) == [("langgraph-run-id", 4, "/runId")]
    (diagnostic,) = consumer.diagnostics
    assert "'019cd777'" in diagnostic.message and "LangGraph" in diagnostic.message


def test_langgraph_run_id_quirk_leaves_other_streams_alone() -> None:
    """Matching runs, several runs in one stream and a RUN_FINISHED with no run open are
    untouched: the verifier still judges the last."""
    second = [dict(e, runId="r2") if e["type"].startswith("RUN_") else e for e in LANGGRAPH[:4]]
    second = [*second, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"}]
    fixed = [*LANGGRAPH[:4], dict(LANGGRAPH[4], runId="c0609373")]
    consumer = _consume(fixed + second, LangGraphRunId())
    assert [r.status for r in consumer.verifier.runs] == ["succeeded", "succeeded"]
    assert _repairs(consumer) == []
    orphan = {"type": "RUN_FINISHED", "threadId": "t", "runId": "x"}
    with pytest.raises(ProtocolError):
        _consume([*fixed, orphan], LangGraphRunId())


def test_a_run_error_closes_the_run_for_the_quirk() -> None:
    """After RUN_ERROR the errored run is not open: a later stray RUN_FINISHED is not repaired."""
    quirk = LangGraphRunId()
    quirk({"type": "RUN_STARTED", "threadId": "t", "runId": "a"})
    quirk({"type": "RUN_ERROR", "message": "boom"})
    stray = {"type": "RUN_FINISHED", "threadId": "t", "runId": "b"}
    assert quirk(stray) is stray
    assert quirk.diagnostics == []


def test_empty_parent_message_id_is_kept_by_default() -> None:
    """Strict by default: ``parentMessageId: ""`` names a message whose id is ``""``."""
    messages = _consume(DOTNET).conversation.to_json()["messages"]
    assert "" in [m["id"] for m in messages]


def test_dotnet_empty_parent_message_id_quirk_removes_it() -> None:
    """With the quirk the empty member is removed (the call has no parent), reported once."""
    events = copy.deepcopy(DOTNET)
    consumer = _consume(events, DotnetEmptyParentMessageId())
    messages = consumer.conversation.to_json()["messages"]
    assert "" not in [m["id"] for m in messages]
    calls = [c["id"] for m in messages for c in m.get("toolCalls", [])]
    assert calls == ["c1"]
    assert _repairs(consumer) == [("dotnet-empty-parent-message-id", 4, "/parentMessageId")]
    assert events == DOTNET  # the caller's dicts are never changed


def test_dotnet_quirk_covers_every_event_the_schema_gives_a_parent() -> None:
    """Chunks and subagent starts carry parentMessageId too: the repair covers each, and
    a real parent id is kept."""
    quirk = DotnetEmptyParentMessageId()
    chunk = {
        "type": "TOOL_CALL_CHUNK",
        "toolCallId": "c",
        "toolCallName": "f",
        "parentMessageId": "",
    }
    started = {"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "n", "parentMessageId": ""}
    assert "parentMessageId" not in quirk(chunk) and "parentMessageId" not in quirk(started)
    kept = dict(chunk, parentMessageId="m1")
    assert quirk(kept) is kept
    assert [d.subject for d in quirk.diagnostics] == ["dotnet-empty-parent-message-id"] * 2


def test_quirks_compose_and_work_in_the_decoder() -> None:
    """Both quirks in one middleware list repair one stream, through EventDecoder too."""
    events = [*DOTNET[:-1], dict(DOTNET[-1], runId="019cd777")]
    consumer = _consume(events, LangGraphRunId(), DotnetEmptyParentMessageId())
    assert [s for s, _, _ in _repairs(consumer)] == [
        "dotnet-empty-parent-message-id",
        "langgraph-run-id",
    ]
    decoder = EventDecoder(middleware=[DotnetEmptyParentMessageId()])
    (event,) = decoder.feed_json(DOTNET[4])
    assert isinstance(event, schema.ToolCallStartEvent) and event.parent_message_id is None
    assert [(d.code, d.index) for d in decoder.diagnostics] == [(QUIRK_REPAIRED, 0)]


def test_a_quirk_serves_one_stream() -> None:
    """A stream quirk keeps state per stream: a second consumer cannot share it."""
    quirk = LangGraphRunId()
    Consumer(middleware=[quirk])
    with pytest.raises(UsageError):
        Consumer(middleware=[quirk])


def test_known_quirks_are_named() -> None:
    """Every stream quirk is listed by its name and says which peer it is for."""
    assert {
        "langgraph-run-id": LangGraphRunId,
        "dotnet-empty-parent-message-id": DotnetEmptyParentMessageId,
    } == KNOWN_QUIRKS
    assert all(quirk.peer for quirk in KNOWN_QUIRKS.values())
    assert quirks.KNOWN_QUIRKS is KNOWN_QUIRKS


DOTNET_INPUT = {
    "threadId": "t",
    "runId": "r",
    "messages": [
        {"role": "system", "content": "be brief"},
        {"id": "u1", "role": "user", "content": "hi"},
        {"role": "user", "content": "hi"},
    ],
    "tools": [],
    "context": [],
    "state": {},
    "forwardedProps": {},
}


def test_messages_without_id_are_refused_by_default() -> None:
    """Strict by default: a run input message without ``id`` is a SchemaError."""
    with pytest.raises(SchemaError) as caught:
        parse_run_input(DOTNET_INPUT)
    assert (caught.value.keyword, caught.value.location) == ("required", "/messages/0")


def test_dotnet_message_ids_are_made_stable_and_unique() -> None:
    """The repair gives each message without an id a stable, distinct one, reports each,
    and leaves the caller's document and the other messages as they were."""
    original = copy.deepcopy(DOTNET_INPUT)
    found: list[Any] = []
    repaired = repair_dotnet_message_ids(DOTNET_INPUT, diagnostics=found)
    assert original == DOTNET_INPUT
    ids = [m["id"] for m in repaired["messages"]]
    assert ids[1] == "u1" and len(set(ids)) == 3
    assert repair_dotnet_message_ids(DOTNET_INPUT)["messages"] == repaired["messages"]
    run_input = parse_run_input(repaired)
    assert [m.id for m in run_input.messages] == ids
    assert [(d.code, d.subject, d.path) for d in found] == [
        (QUIRK_REPAIRED, DOTNET_MISSING_MESSAGE_ID, "/messages/0"),
        (QUIRK_REPAIRED, DOTNET_MISSING_MESSAGE_ID, "/messages/2"),
    ]


def test_dotnet_message_ids_leave_what_parsing_must_judge() -> None:
    """Messages that are not objects, ids of the wrong type and inputs without a message
    list are left for parsing to reject."""
    odd = {"threadId": "t", "runId": "r", "messages": [5, {"id": [1], "role": "user"}]}
    assert repair_dotnet_message_ids(odd) == odd
    assert repair_dotnet_message_ids({"threadId": "t"}) == {"threadId": "t"}
    taken = {"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x"}]}
    made = repair_dotnet_message_ids(taken)["messages"][0]["id"]
    clash = {**taken, "messages": [*taken["messages"], {"id": made, "role": "user"}]}
    assert repair_dotnet_message_ids(clash)["messages"][0]["id"] != made

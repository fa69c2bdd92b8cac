"""Chunk expansion (SPEC-NOTES step 4; spec basic/patterns/streaming, "The chunked form")."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentproto import ProtocolError
from agentproto.agui import Event, dump_event, parse_event
from agentproto.agui._consume.chunks import ChunkExpander


def E(type_: str, **fields: Any) -> Event:
    """A typed event from wire-style (camelCase) fields."""
    return parse_event({"type": type_, **fields})


def wire(events: list[Event]) -> list[dict[str, Any]]:
    return [dump_event(e) for e in events]


def expand(*events: Event, expander: ChunkExpander | None = None) -> list[dict[str, Any]]:
    """Feed events through one expander; the output as wire dicts."""
    x = expander or ChunkExpander()
    out: list[Event] = []
    for event in events:
        out += x.feed(event)
    out += x.close()
    return wire(out)


def types(out: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in out]


RUN_FINISHED = E("RUN_FINISHED", threadId="t", runId="r")


def chunk(
    kind: str, id_field: str, item_id: str | None, delta: str | None, fields: dict[str, Any]
) -> Event:
    """A ``kind`` chunk with ``fields``; a ``None`` id or delta is left out."""
    if item_id is not None:
        fields[id_field] = item_id
    if delta is not None:
        fields["delta"] = delta
    return E(kind, **fields)


def text(message_id: str | None = None, delta: str | None = "x", **fields: Any) -> Event:
    return chunk("TEXT_MESSAGE_CHUNK", "messageId", message_id, delta, fields)


def tool(call_id: str | None = None, delta: str | None = "{}", **fields: Any) -> Event:
    return chunk("TOOL_CALL_CHUNK", "toolCallId", call_id, delta, fields)


def reasoning(message_id: str | None = None, delta: str | None = "x", **fields: Any) -> Event:
    return chunk("REASONING_MESSAGE_CHUNK", "messageId", message_id, delta, fields)


def raises(code: str, *events: Event) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        expand(*events)
    assert info.value.code == code, str(info.value)
    return info.value


# ---- expansion ----------------------------------------------------------------------


def test_text_chunks_expand_into_the_triad() -> None:
    """A text chunk stream becomes START, CONTENT per delta, and END at the run terminal."""
    out = expand(text("m1", "Chunks ", role="assistant"), text(None, "expand."), RUN_FINISHED)
    assert out == [
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Chunks "},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "expand."},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        dump_event(RUN_FINISHED),
    ]


def test_tool_chunks_expand_into_the_triad() -> None:
    """A tool chunk stream becomes TOOL_CALL_START with name and parent, ARGS, and END."""
    out = expand(
        tool("tc1", '{"q":', toolCallName="search", parentMessageId="m1"),
        tool(None, '"a"}'),
        RUN_FINISHED,
    )
    assert out[:3] == [
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "tc1",
            "toolCallName": "search",
            "parentMessageId": "m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "tc1", "delta": '{"q":'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "tc1", "delta": '"a"}'},
    ]
    assert out[3] == {"type": "TOOL_CALL_END", "toolCallId": "tc1"}


def test_reasoning_chunks_expand_into_the_triad() -> None:
    """A reasoning chunk stream becomes REASONING_MESSAGE_START (role reasoning), CONTENT, END."""
    out = expand(reasoning("r1", "think"), RUN_FINISHED)
    assert out[:3] == [
        {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "think"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r1"},
    ]


def test_text_opener_fields_reach_the_start() -> None:
    """The opener's role and name are carried by the synthesized TEXT_MESSAGE_START."""
    out = expand(text("m1", role="user", name="bob"))
    assert out[0] == {
        "type": "TEXT_MESSAGE_START",
        "messageId": "m1",
        "role": "user",
        "name": "bob",
    }


def test_absent_role_stays_absent_on_the_start() -> None:
    """A roleless opener synthesizes a START without role (absent means assistant)."""
    assert "role" not in expand(text("m1"))[0]


def test_non_chunk_events_pass_through_unchanged() -> None:
    """A non-chunk event comes back as the very same object when nothing is open."""
    event = E("STATE_SNAPSHOT", snapshot={"a": 1})
    assert ChunkExpander().feed(event) == [event]
    assert ChunkExpander().feed(event)[0] is event


def test_received_events_are_never_mutated() -> None:
    """Expansion builds new events and leaves every event it receives as it was."""
    events = [
        text("m1", "a", role="assistant", metadata={"k": 1}),
        text(None, "b", metadata={"k": 2}),
        E("CUSTOM", name="n", value=1),
        RUN_FINISHED,
    ]
    before = [copy.deepcopy(dump_event(e)) for e in events]
    expand(*events)
    assert [dump_event(e) for e in events] == before


def test_close_synthesizes_nothing() -> None:
    """At end of stream an open chunk stream is left open: truncation is verification's call."""
    x = ChunkExpander()
    x.feed(text("m1"))
    assert x.close() == []
    assert x.open_streams == {None: ("text", "m1")}


# ---- first chunk ----------------------------------------------------------------------


def test_first_text_chunk_needs_its_message_id() -> None:
    """A first TEXT_MESSAGE_CHUNK without messageId is rejected, never given an invented id."""
    exc = raises("chunk.missing-id", text(None, "no message is open"))
    assert "First TEXT_MESSAGE_CHUNK must have a messageId" in str(exc)
    assert exc.subject == "TEXT_MESSAGE_CHUNK"


def test_first_reasoning_chunk_needs_its_message_id() -> None:
    """A first REASONING_MESSAGE_CHUNK without messageId is rejected."""
    exc = raises("chunk.missing-id", reasoning(None))
    assert "First REASONING_MESSAGE_CHUNK must have a messageId" in str(exc)


def test_first_tool_chunk_needs_its_call_id() -> None:
    """A first TOOL_CALL_CHUNK without toolCallId is rejected."""
    exc = raises("chunk.missing-id", tool(None, toolCallName="search"))
    assert "First TOOL_CALL_CHUNK must have a toolCallId" in str(exc)


def test_first_tool_chunk_needs_its_name() -> None:
    """A first TOOL_CALL_CHUNK with an id but no toolCallName cannot open a call."""
    exc = raises("chunk.missing-name", tool("tc1"))
    assert "First TOOL_CALL_CHUNK must have a toolCallName" in str(exc)
    assert "tc1" in str(exc)


def test_id_less_chunk_of_another_kind_has_no_referent() -> None:
    """An id-less tool chunk after a text stream does not continue it: it needs its own id."""
    raises("chunk.missing-id", text("m1"), tool(None))


# ---- continuation agreement -----------------------------------------------------------


def test_conflicting_role_is_fatal() -> None:
    """A continuation repeating role with another value than the opener's is rejected."""
    exc = raises("chunk.conflicting-field", text("m1", role="user"), text("m1", role="assistant"))
    assert "does not match the open stream's role" in str(exc)
    assert "'m1'" in str(exc)


def test_non_assistant_role_after_roleless_opener_is_fatal() -> None:
    """A roleless opener established assistant, so a later non-assistant role conflicts."""
    exc = raises("chunk.conflicting-field", text("m1"), text(None, role="user"))
    assert "'assistant'" in str(exc)


def test_assistant_role_after_roleless_opener_is_accepted() -> None:
    """Repeating the assistant role a roleless opener implied is an identical repeat."""
    out = expand(text("m1", "a"), text("m1", "b", role="assistant"), RUN_FINISHED)
    assert types(out)[:4] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]


def test_conflicting_name_is_fatal() -> None:
    """A continuation naming the author differently than the opener is rejected."""
    raises("chunk.conflicting-field", text("m1", name="ann"), text(None, name="bob"))


def test_name_the_opener_did_not_carry_is_fatal() -> None:
    """A continuation introducing a name the opener established by omission conflicts."""
    exc = raises("chunk.conflicting-field", text("m1"), text(None, name="bob"))
    assert "(absent)" in str(exc)


def test_conflicting_tool_call_name_is_fatal() -> None:
    """A continuation renaming the open call is rejected, not taken as a late correction."""
    exc = raises(
        "chunk.conflicting-field",
        tool("tc1", toolCallName="search"),
        tool("tc1", toolCallName="delete"),
    )
    assert "does not match the open stream's toolCallName" in str(exc)


def test_conflicting_parent_message_id_is_fatal() -> None:
    """A continuation naming another parentMessageId than the opener's is rejected."""
    raises(
        "chunk.conflicting-field",
        tool("tc1", toolCallName="s", parentMessageId="m1"),
        tool(None, parentMessageId="m2"),
    )


def test_identical_repeats_are_accepted() -> None:
    """Continuations may repeat toolCallName and parentMessageId with the opener's values."""
    out = expand(
        tool("tc1", '{"q":', toolCallName="search", parentMessageId="m1"),
        tool("tc1", '"a"}', toolCallName="search", parentMessageId="m1"),
        RUN_FINISHED,
    )
    assert types(out) == [
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]


def test_a_new_id_is_not_a_conflicting_continuation() -> None:
    """A chunk with another id opens a new item, so its different role is no conflict."""
    out = expand(text("m1", role="user"), text("m2", role="assistant"))
    assert types(out) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
    ]


# ---- deltas, metadata, rawEvent, timestamp --------------------------------------------


def test_empty_delta_produces_no_content() -> None:
    """A chunk whose delta is empty or absent adds no CONTENT event."""
    out = expand(text("m1", ""), text(None, ""), text(None, None), RUN_FINISHED)
    assert types(out) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_FINISHED"]


def test_chunk_metadata_goes_on_every_event_made_from_it() -> None:
    """An opener's metadata rides both its START and its CONTENT."""
    out = expand(text("m1", "a", metadata={"k": 1}))
    assert [e.get("metadata") for e in out] == [{"k": 1}, {"k": 1}]


def test_metadata_only_continuation_still_reaches_its_item() -> None:
    """A continuation carrying only metadata becomes an empty-delta CONTENT with it."""
    out = expand(tool("tc1", toolCallName="s"), tool(None, None, metadata={"finish": "stop"}))
    assert out[-1] == {
        "type": "TOOL_CALL_ARGS",
        "toolCallId": "tc1",
        "delta": "",
        "metadata": {"finish": "stop"},
    }


def test_synthesized_end_carries_no_metadata_of_what_closed_it() -> None:
    """The END a new item's chunk synthesizes carries nothing of that chunk."""
    out = expand(text("m1"), text("m2", metadata={"for": "m2"}))
    assert out[2] == {"type": "TEXT_MESSAGE_END", "messageId": "m1"}


def test_raw_event_rides_the_content() -> None:
    """A chunk's rawEvent is carried on its CONTENT, not duplicated on the START."""
    out = expand(text("m1", "a", rawEvent={"p": 1}))
    assert "rawEvent" not in out[0]
    assert out[1]["rawEvent"] == {"p": 1}


def test_raw_event_rides_the_start_when_there_is_no_content() -> None:
    """A first chunk without delta keeps its rawEvent on the START."""
    assert expand(text("m1", None, rawEvent={"p": 1}))[0]["rawEvent"] == {"p": 1}


def test_raw_event_only_continuation_gets_a_carrier() -> None:
    """A continuation with only a rawEvent yields an empty-delta CONTENT carrying it."""
    out = expand(reasoning("r1"), reasoning(None, None, rawEvent=[1]))
    assert out[-1] == {
        "type": "REASONING_MESSAGE_CONTENT",
        "messageId": "r1",
        "delta": "",
        "rawEvent": [1],
    }


def test_timestamp_is_not_copied() -> None:
    """Synthesized events are not the chunk, so they do not carry its timestamp."""
    out = expand(text("m1", "a", timestamp=5), RUN_FINISHED)
    assert all("timestamp" not in e for e in out[:3])


# ---- closing the lane -----------------------------------------------------------------


def test_chunk_with_another_id_closes_the_previous_item() -> None:
    """A chunk naming a different id in the same lane ends the open item first."""
    out = expand(text("m1", "a"), text("m2", "b"))
    assert types(out) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
    ]
    assert out[2]["messageId"] == "m1"


def test_chunk_of_another_kind_closes_the_lane() -> None:
    """A lane holds one chunk stream: a tool chunk ends the text stream open in that lane."""
    out = expand(text("m1"), tool("tc1", toolCallName="s", parentMessageId="m1"))
    assert types(out) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
    ]


CLOSING_EVENTS = {
    "TEXT_MESSAGE_START": {"messageId": "x1"},
    "TEXT_MESSAGE_CONTENT": {"messageId": "x1", "delta": "d"},
    "TEXT_MESSAGE_END": {"messageId": "x1"},
    "TOOL_CALL_START": {"toolCallId": "x1", "toolCallName": "n"},
    "TOOL_CALL_ARGS": {"toolCallId": "x1", "delta": "d"},
    "TOOL_CALL_END": {"toolCallId": "x1"},
    "TOOL_CALL_RESULT": {"messageId": "x2", "toolCallId": "x1", "content": "ok"},
    "STEP_STARTED": {"stepName": "s"},
    "STEP_FINISHED": {"stepName": "s"},
    "STATE_SNAPSHOT": {"snapshot": {}},
    "STATE_DELTA": {"delta": []},
    "CUSTOM": {"name": "n", "value": 1},
    "REASONING_START": {"messageId": "x1"},
    "REASONING_END": {"messageId": "x1"},
    "REASONING_MESSAGE_START": {"messageId": "x1", "role": "reasoning"},
    "REASONING_MESSAGE_CONTENT": {"messageId": "x1", "delta": "d"},
    "REASONING_MESSAGE_END": {"messageId": "x1"},
}


@pytest.mark.parametrize("kind", sorted(CLOSING_EVENTS))
def test_lane_events_close_the_open_stream(kind: str) -> None:
    """A message, tool-call, step, state, custom or reasoning event closes its lane's stream."""
    event = E(kind, **CLOSING_EVENTS[kind])
    out = expand(text("m1"), event)
    assert types(out) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", kind]


def test_custom_closes_so_an_id_less_continuation_has_no_referent() -> None:
    """After CUSTOM ends the open stream, an id-less continuation is a first chunk without id."""
    exc = raises("chunk.missing-id", text("m1"), E("CUSTOM", name="n", value={}), text(None))
    assert "First TEXT_MESSAGE_CHUNK must have a messageId" in str(exc)


ASIDE_EVENTS = {
    "RAW": {"event": {"k": 1}},
    "ACTIVITY_SNAPSHOT": {"messageId": "a1", "activityType": "t", "content": {}},
    "ACTIVITY_DELTA": {"messageId": "a1", "activityType": "t", "patch": []},
    "REASONING_ENCRYPTED_VALUE": {"subtype": "message", "entityId": "m1", "encryptedValue": "v"},
    "SUBAGENT_STARTED": {"subagentRunId": "s9", "name": "n"},
}


@pytest.mark.parametrize("kind", sorted(ASIDE_EVENTS))
def test_aside_events_close_nothing(kind: str) -> None:
    """RAW, ACTIVITY_*, REASONING_ENCRYPTED_VALUE and SUBAGENT_STARTED leave the stream open."""
    event = E(kind, **ASIDE_EVENTS[kind])
    out = expand(text("m1", "Half "), event, text(None, "and half."))
    assert types(out) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        kind,
        "TEXT_MESSAGE_CONTENT",
    ]


RUN_LEVEL = {
    "RUN_STARTED": {"threadId": "t", "runId": "r2"},
    "RUN_FINISHED": {"threadId": "t", "runId": "r"},
    "RUN_ERROR": {"message": "boom"},
    "MESSAGES_SNAPSHOT": {"messages": []},
}


@pytest.mark.parametrize("kind", sorted(RUN_LEVEL))
def test_run_level_events_close_every_lane_in_opening_order(kind: str) -> None:
    """RUN_* and MESSAGES_SNAPSHOT close every lane, in the order the streams opened."""
    out = expand(
        text("m1", subagentRunId="s1"),
        tool("tc1", toolCallName="n"),
        reasoning("r1", subagentRunId="s2"),
        E(kind, **RUN_LEVEL[kind]),
    )
    ends = [(e["type"], e.get("subagentRunId")) for e in out if e["type"].endswith("_END")]
    assert ends == [
        ("TEXT_MESSAGE_END", "s1"),
        ("TOOL_CALL_END", None),
        ("REASONING_MESSAGE_END", "s2"),
    ]
    assert out[-1]["type"] == kind


@pytest.mark.parametrize("kind", ["SUBAGENT_FINISHED", "SUBAGENT_ERROR"])
def test_subagent_terminal_closes_only_its_own_lane(kind: str) -> None:
    """A subagent's terminal synthesizes the END of its own stream just before itself."""
    fields = {"subagentRunId": "s1"} | ({"message": "x"} if kind == "SUBAGENT_ERROR" else {})
    x = ChunkExpander()
    out = expand(
        text("m1", subagentRunId="s1"),
        text("m2", subagentRunId="s2"),
        text("p1"),
        E(kind, **fields),
        expander=x,
    )
    assert types(out)[-2:] == ["TEXT_MESSAGE_END", kind]
    assert out[-2] == {"type": "TEXT_MESSAGE_END", "messageId": "m1", "subagentRunId": "s1"}
    assert x.open_streams == {"s2": ("text", "m2"), None: ("text", "p1")}


def test_subagent_terminal_closes_open_chunk_stream_before_itself() -> None:
    """The corpus order: the synthesized END lands before its owner's SUBAGENT_FINISHED."""
    out = expand(
        E("SUBAGENT_STARTED", subagentRunId="s1", name="summariser"),
        text("m1", "half ", role="assistant", subagentRunId="s1"),
        text(None, "assembled", subagentRunId="s1"),
        E("SUBAGENT_FINISHED", subagentRunId="s1"),
        RUN_FINISHED,
    )
    assert types(out) == [
        "SUBAGENT_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "SUBAGENT_FINISHED",
        "RUN_FINISHED",
    ]


# ---- lanes ----------------------------------------------------------------------------


def test_an_event_in_another_lane_closes_nothing_here() -> None:
    """A subagent's step does not end the parent's chunk stream, nor the reverse."""
    x = ChunkExpander()
    out = expand(
        text("p1"),
        text("m1", subagentRunId="s1"),
        E("STEP_STARTED", stepName="a", subagentRunId="s1"),
        expander=x,
    )
    assert out[-2:] == [
        {"type": "TEXT_MESSAGE_END", "messageId": "m1", "subagentRunId": "s1"},
        {"type": "STEP_STARTED", "stepName": "a", "subagentRunId": "s1"},
    ]
    assert x.open_streams == {None: ("text", "p1")}


def test_parallel_subagents_stream_independently() -> None:
    """Two subagents' tagged id-less continuations each extend their own stream."""
    out = expand(
        text("m1", "A", subagentRunId="s1"),
        text("m2", "B", subagentRunId="s2"),
        text(None, "a", subagentRunId="s1"),
        text(None, "b", subagentRunId="s2"),
        RUN_FINISHED,
    )
    contents = [(e["messageId"], e["delta"]) for e in out if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert contents == [("m1", "A"), ("m2", "B"), ("m1", "a"), ("m2", "b")]


def test_untagged_continuation_prefers_the_parent_stream() -> None:
    """An untagged id-less chunk continues the parent's open stream of its kind."""
    out = expand(text("m1", subagentRunId="s1"), text("p1"), text(None, "P"))
    assert out[-1] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "p1", "delta": "P"}


def test_untagged_continuation_goes_to_the_only_open_stream() -> None:
    """With no parent stream of its kind, an untagged id-less chunk continues the only one."""
    out = expand(text("m1", subagentRunId="s1"), tool("tc1", toolCallName="n"), text(None, "A"))
    assert out[-1] == {
        "type": "TEXT_MESSAGE_CONTENT",
        "messageId": "m1",
        "delta": "A",
        "subagentRunId": "s1",
    }


def test_ambiguous_untagged_continuation_is_rejected() -> None:
    """Several subagent streams of the kind and none the parent's: no unique referent."""
    exc = raises(
        "chunk.ambiguous",
        text("m1", subagentRunId="s1"),
        text("m2", subagentRunId="s2"),
        text(None, "?"),
    )
    assert "TEXT_MESSAGE_CHUNK" in str(exc) and "'s1'" in str(exc) and "'s2'" in str(exc)


def test_untagged_chunk_naming_an_open_id_continues_it_in_its_lane() -> None:
    """A chunk naming an id open in a subagent's lane continues it there."""
    out = expand(text("m1", subagentRunId="s1"), text("p1"), text("m1", "more"))
    assert out[-1]["subagentRunId"] == "s1"
    assert out[-1]["messageId"] == "m1"


@pytest.mark.parametrize("delta", ["B", None])
def test_chunk_with_disagreeing_owner_is_rejected(delta: str | None) -> None:
    """A chunk naming an open id under another subagentRunId is an owner mismatch."""
    exc = raises(
        "owner.mismatch",
        text("m1", "A", subagentRunId="s1"),
        text("m1", delta, subagentRunId="s2"),
    )
    assert "'m1'" in str(exc) and "'s2'" in str(exc) and "'s1'" in str(exc)


def test_synthesized_events_carry_the_lane_owner() -> None:
    """START, CONTENT (tagged or not) and END of a subagent's stream carry its subagentRunId."""
    out = expand(
        text("m1", "a", subagentRunId="s1"), text(None, "b", subagentRunId="s1"), RUN_FINISHED
    )
    assert [e.get("subagentRunId") for e in out[:4]] == ["s1"] * 4
    out = expand(text("m1", "a", subagentRunId="s1"), text(None, "b"), RUN_FINISHED)
    assert [e.get("subagentRunId") for e in out[:4]] == ["s1"] * 4


def test_untagged_explicit_continuation_belongs_to_its_openers_lane() -> None:
    """An untagged CONTENT of a subagent's message does not end the parent's chunk stream."""
    x = ChunkExpander()
    out = expand(
        text("p1"),
        E("TEXT_MESSAGE_START", messageId="m1", subagentRunId="s1"),
        E("TEXT_MESSAGE_CONTENT", messageId="m1", delta="d"),
        text(None, "more"),
        expander=x,
    )
    assert "TEXT_MESSAGE_END" not in types(out)
    assert out[-1] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "p1", "delta": "more"}


def test_untagged_tool_start_belongs_to_its_parent_messages_lane() -> None:
    """An untagged TOOL_CALL_START inherits its parent message's owner, and so its lane."""
    x = ChunkExpander()
    out = expand(
        text("p1"),
        text("m1", subagentRunId="s1"),
        E("TOOL_CALL_START", toolCallId="tc1", toolCallName="n", parentMessageId="m1"),
        expander=x,
    )
    assert out[-2] == {"type": "TEXT_MESSAGE_END", "messageId": "m1", "subagentRunId": "s1"}
    assert x.open_streams == {None: ("text", "p1")}


def test_explicit_event_for_the_assembled_id_ends_the_shorthand() -> None:
    """An explicit CONTENT naming the chunk stream's id is no continuation: the stream ends."""
    out = expand(text("m1", "a"), E("TEXT_MESSAGE_CONTENT", messageId="m1", delta="b"))
    assert types(out) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CONTENT",
    ]


def test_chunk_for_a_closed_item_reopens_it() -> None:
    """A chunk naming an item whose stream already closed opens it again (START)."""
    out = expand(text("m1", "a"), E("CUSTOM", name="n", value=1), text("m1", "b"))
    assert types(out)[-2:] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]


def test_untagged_reopening_chunk_keeps_the_items_owner() -> None:
    """An untagged chunk reopening a subagent's closed message opens it in that subagent's lane."""
    out = expand(
        text("m1", "a", subagentRunId="s1"),
        E("CUSTOM", name="n", value=1, subagentRunId="s1"),
        text("m1", "b"),
    )
    assert out[-2] == {"type": "TEXT_MESSAGE_START", "messageId": "m1", "subagentRunId": "s1"}


def test_ownership_tracking_resets_at_run_started() -> None:
    """A new run forgets the previous run's owners, so an untagged reopen is the parent's."""
    out = expand(
        text("m1", "a", subagentRunId="s1"),
        RUN_FINISHED,
        E("RUN_STARTED", threadId="t", runId="r2"),
        text("m1", "b"),
    )
    assert out[-2] == {"type": "TEXT_MESSAGE_START", "messageId": "m1"}

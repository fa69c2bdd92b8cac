"""Issue 10, fitting the ecosystem: what goes on the wire is held to the schema, and a
rejected document lists every problem it has, not only the first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from agui_scripted_agent import scripted_events

from agentproto import SchemaError
from agentproto._core.wire.problems import MAX_PROBLEMS
from agentproto.agui import (
    dump_event,
    encode_event_jsonl,
    encode_event_sse,
    encode_jsonl_stream,
    encode_sse_stream,
    make_converter,
    parse_event,
    parse_message,
    parse_run_input,
    schema,
)

WRONG_TYPE = schema.TextMessageStartEvent(message_id=1)  # type: ignore[arg-type]


def _stream_sse(event: Any) -> bytes:
    return b"".join(encode_sse_stream([event]))


def _stream_jsonl(event: Any) -> bytes:
    return b"".join(encode_jsonl_stream([event]))


def _stream_async(event: Any) -> bytes:
    async def events() -> AsyncIterator[Any]:
        yield event

    async def collect() -> bytes:
        return b"".join([frame async for frame in encode_sse_stream(events())])

    return asyncio.run(collect())


ENCODERS: dict[str, Callable[..., Any]] = {
    "dump_event": dump_event,
    "encode_event_sse": encode_event_sse,
    "encode_event_jsonl": encode_event_jsonl,
    "encode_sse_stream": _stream_sse,
    "encode_jsonl_stream": _stream_jsonl,
    "encode_sse_stream-async": _stream_async,
}


@pytest.mark.parametrize("name", list(ENCODERS))
def test_a_field_of_the_wrong_type_never_reaches_the_wire(name: str) -> None:
    """``message_id=1`` is a SchemaError at ``/messageId``, whichever way the event is encoded."""
    with pytest.raises(SchemaError) as caught:
        ENCODERS[name](WRONG_TYPE)
    assert (caught.value.keyword, caught.value.location) == ("type", "/messageId")


def test_check_false_is_the_opt_out_for_checked_events() -> None:
    """``check=False`` encodes as before, without the schema check (the caller checked)."""
    assert dump_event(WRONG_TYPE, check=False)["messageId"] == 1
    assert b'"messageId":1' in encode_event_sse(WRONG_TYPE, check=False)
    assert b'"messageId":1' in encode_event_jsonl(WRONG_TYPE, check=False)
    assert b'"messageId":1' in b"".join(encode_sse_stream([WRONG_TYPE], check=False))
    assert b'"messageId":1' in b"".join(encode_jsonl_stream([WRONG_TYPE], check=False))


def test_checked_encoding_of_valid_events_is_unchanged() -> None:
    """For valid events the check changes nothing: the same bytes and the same dicts."""
    for event in scripted_events():
        assert encode_event_sse(event) == encode_event_sse(event, check=False)
        assert encode_event_jsonl(event) == encode_event_jsonl(event, check=False)
        assert dump_event(event) == dump_event(event, check=False)


def test_values_that_are_not_json_are_still_located() -> None:
    """A free-form value that is not JSON is refused at its location, checked or not."""
    event = schema.CustomEvent(name="n", value={"x": {1, 2}})
    for check in (True, False):
        with pytest.raises(SchemaError) as caught:
            encode_event_sse(event, check=check)
        assert caught.value.location == "/value/x"
    with pytest.raises(SchemaError) as dumped:
        dump_event(event)
    assert dumped.value.location == "/value/x"


def _problems(error: SchemaError) -> list[tuple[str, str]]:
    return [(p.keyword, p.location) for p in error.problems]


def test_an_event_lists_every_problem() -> None:
    """Each wrong field of an event is one problem with its keyword and location; the
    first is the error's own (the one the fast path found)."""
    event = schema.TextMessageStartEvent(
        message_id=1,  # type: ignore[arg-type]
        role="robot",  # type: ignore[arg-type]
        timestamp=1.5,  # type: ignore[arg-type]
    )
    with pytest.raises(SchemaError) as caught:
        encode_event_sse(event)
    error = caught.value
    assert _problems(error) == [("type", "/messageId"), ("enum", "/role"), ("type", "/timestamp")]
    assert error.problems[0] is error
    assert "2 more problem(s)" in str(error)
    assert all(problem.detail for problem in error.problems)


def test_parsing_lists_every_problem_at_any_depth() -> None:
    """parse_run_input finds problems in nested messages, tool calls and the root at once."""
    document = {
        "threadId": 1,
        "runId": "r",
        "messages": [
            {"role": "user", "content": "hi"},
            {"id": "a", "role": "assistant", "toolCalls": [{"id": 5}]},
        ],
        "bogus": True,
    }
    with pytest.raises(SchemaError) as caught:
        parse_run_input(document)
    assert _problems(caught.value) == [
        ("type", "/threadId"),
        ("required", "/messages/0"),
        ("type", "/messages/1/toolCalls/0/id"),
        ("required", "/messages/1/toolCalls/0"),
        ("required", "/messages/1/toolCalls/0"),
        ("unevaluatedProperties", ""),
    ]


def test_parse_event_and_parse_message_list_every_problem() -> None:
    """parse_event and parse_message report all problems too; one problem is ``(error,)``."""
    with pytest.raises(SchemaError) as event:
        parse_event({"type": "RUN_FINISHED", "threadId": 2})
    assert _problems(event.value) == [("type", "/threadId"), ("required", "")]
    with pytest.raises(SchemaError) as message:
        parse_message({"role": "tool", "id": 3, "content": "x"})
    assert _problems(message.value) == [("type", "/id"), ("required", "")]
    with pytest.raises(SchemaError) as single:
        parse_event({"type": "RUN_STARTED", "threadId": "t"})
    assert single.value.problems == (single.value,)


def test_problems_are_bounded() -> None:
    """A document with thousands of problems lists at most MAX_PROBLEMS of them."""
    document = {"threadId": "t", "runId": "r", "messages": [{"role": "user"}] * 5000}
    with pytest.raises(SchemaError) as caught:
        make_converter().load(document, schema.RunAgentInput)
    assert len(caught.value.problems) == MAX_PROBLEMS


def test_tolerant_parsing_reports_its_diagnostics_once() -> None:
    """Looking for the other problems adds no diagnostic: the list holds the first pass's."""
    found: list[Any] = []
    with pytest.raises(SchemaError) as caught:
        parse_event({"type": "RUN_STARTED", "threadId": 1, "runId": 2, "x": 1}, diagnostics=found)
    assert _problems(caught.value) == [("type", "/threadId"), ("type", "/runId")]
    assert [d.code for d in found] == []


def test_moving_an_error_moves_every_problem() -> None:
    """``at(prefix)`` moves each problem's location, as it moves the error's."""
    with pytest.raises(SchemaError) as caught:
        parse_event({"type": "RUN_FINISHED", "threadId": 2})
    moved = caught.value.at("/params")
    assert _problems(moved) == [("type", "/params/threadId"), ("required", "/params")]


def test_what_tolerant_parsing_repairs_is_no_problem() -> None:
    """A field tolerant parsing defaults (ACP ``x-deserialize-default-on-error``) is not
    listed when parsing tolerantly, and is when parsing strictly."""
    from agentproto.acp import make_converter as make_acp_converter
    from agentproto.acp import schema as acp

    server = {"type": "acp", "name": 1, "serverId": "s", "_meta": 5}
    converter = make_acp_converter()
    with pytest.raises(SchemaError) as tolerant:
        converter.load(server, acp.AcpMcpServer, diagnostics=[])
    assert _problems(tolerant.value) == [("type", "/name")]
    with pytest.raises(SchemaError) as strict:
        converter.load(server, acp.AcpMcpServer)
    assert _problems(strict.value) == [("type", "/name"), ("type", "/_meta")]


def test_json_rpc_params_are_judged_by_their_method() -> None:
    """``params`` is walked as the class its ``method`` names, as the loader reads it, so a
    request with a bad ``id`` lists the problem of its params too."""
    from agentproto.acp import make_converter as make_acp_converter
    from agentproto.acp import schema as acp

    request = {"id": [1], "method": "session/prompt", "params": {"sessionId": 5, "prompt": []}}
    with pytest.raises(SchemaError) as caught:
        make_acp_converter().load(request, acp.ClientRequest)
    assert _problems(caught.value) == [("oneOf", "/id"), ("type", "/params/sessionId")]


def test_a_deep_value_after_a_problem_keeps_the_schema_error() -> None:
    """Past the first problem, a free-form value nested too deep does not turn the
    SchemaError into another error: the walk lists schema problems only."""
    deep: Any = {}
    for _ in range(600):
        deep = {"k": deep}
    with pytest.raises(SchemaError) as caught:
        parse_event({"type": "CUSTOM", "name": 1, "value": deep})
    assert caught.value.location == "/name"

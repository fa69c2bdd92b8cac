"""Hostile input from Python: the depth limit and JSON-ness checked on entry; any failure fails."""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest

from agentproto import AgentProtoError, DecodeError, ProtocolError, SchemaError, UsageError, acp
from agentproto._core.errors import InternalError
from agentproto._core.sse import encode_sse
from agentproto.acp import schema_v1 as acp_v1
from agentproto.agui import (
    Consumer,
    consume,
    make_converter,
    parse_event,
    parse_message,
    parse_run_input,
)
from agentproto.agui._reduce import conversation as _conversation
from agentproto.agui._verify import verifier as _verify
from agentproto.agui.schema import (
    Event,
    ReasoningEncryptedValueSubtype,
    StateDeltaEvent,
    UserMessage,
)

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def test_feed_json_checks_the_depth_limit() -> None:
    """A 600-deep state snapshot fed as a dict fails on entry, naming the limit."""
    consumer = Consumer()
    consumer.feed_json(START)
    with pytest.raises(DecodeError, match="512"):
        consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": _deep(600)})
    assert consumer.failure is not None
    assert consumer.verifier.runs[-1].status != "finished"


@pytest.mark.parametrize(
    "bad", [math.nan, {1, 2}, b"x", {1: "a"}], ids=["nan", "set", "bytes", "key"]
)
def test_feed_json_refuses_non_json_values(bad: Any) -> None:
    """NaN, sets, bytes and non-string keys in state are refused when they enter."""
    consumer = Consumer()
    consumer.feed_json(START)
    with pytest.raises(SchemaError, match="event 1"):
        consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": {"a": bad}})
    assert consumer.failure is not None


def test_parse_functions_check_depth_of_dicts() -> None:
    """parse_event and parse_run_input given dicts apply the same 512 limit as bytes."""
    with pytest.raises(DecodeError, match="512"):
        parse_event({"type": "STATE_SNAPSHOT", "snapshot": _deep(1200)})
    with pytest.raises(DecodeError, match="512"):
        parse_run_input({"threadId": "t", "runId": "r", "state": _deep(1200)})
    with pytest.raises(DecodeError, match="512"):
        Consumer(run_input={"threadId": "t", "runId": "r", "state": _deep(1200)})
    assert parse_event({"type": "STATE_SNAPSHOT", "snapshot": _deep(500)}).snapshot


def test_run_input_of_another_type_is_a_usage_error() -> None:
    """A run input that is neither typed nor a dict is refused with a UsageError."""
    with pytest.raises(UsageError):
        Consumer(run_input=1.5)  # type: ignore[arg-type]


def test_unexpected_exception_fails_the_stream() -> None:
    """A non-SDK exception in a stage fails the run and surfaces as InternalError with its cause."""

    def broken(event: dict[str, Any]) -> dict[str, Any]:
        if event["type"] == "STATE_SNAPSHOT":
            raise KeyError("bug")
        return event

    consumer = Consumer(middleware=[broken])
    consumer.feed_json(START)
    with pytest.raises(InternalError) as info:
        consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": {}})
    assert isinstance(info.value, AgentProtoError)
    assert isinstance(info.value.__cause__, KeyError)
    assert consumer.failure is info.value
    assert consumer.verifier.runs[-1].status == "failed"
    with pytest.raises(UsageError):
        consumer.feed_json(FINISH)


def _line(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event)


def test_jsonl_final_line_without_newline_is_delivered_then_truncation_follows() -> None:
    """close() returns the final line's events; the truncation is recorded and raised next."""
    text = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
    consumer = Consumer(transport="jsonl")
    consumer.feed_bytes(_line(START) + b"\n" + _line(text))
    delivered = consumer.close()
    assert [e.type for e in delivered] == ["TEXT_MESSAGE_START"]
    assert isinstance(consumer.failure, ProtocolError)
    assert consumer.verifier.runs[-1].status == "failed"
    with pytest.raises(ProtocolError):
        consumer.close()
    with pytest.raises(ProtocolError):
        consume([_line(START) + b"\n" + _line(text)], transport="jsonl")


def test_jsonl_complete_final_line_without_newline_succeeds() -> None:
    """A final RUN_FINISHED line without its newline completes the run."""
    consumer = Consumer(transport="jsonl")
    consumer.feed_bytes(_line(START) + b"\n" + _line(FINISH))
    assert [e.type for e in consumer.close()] == ["RUN_FINISHED"]
    assert consumer.failure is None and consumer.verifier.runs[-1].status == "succeeded"


def test_sse_comment_at_eof_without_newline_is_not_truncation() -> None:
    """A complete run followed by ': keep-alive' with no final newline closes cleanly."""
    stream = b"".join(encode_sse(_line(e)) for e in (START, FINISH)) + b": keep-alive"
    consumer = Consumer()
    consumer.feed_bytes(stream)
    assert consumer.close() == []
    assert consumer.failure is None and consumer.verifier.runs[-1].status == "succeeded"
    with pytest.raises(DecodeError):
        broken = Consumer()
        broken.feed_bytes(stream[: -len(b": keep-alive")] + b"data: {")
        broken.close()


def test_the_schema_has_no_recursive_types() -> None:
    """parse_event checks only free-form values of a dict from Python, which is enough
    because typed nesting is bounded by the schema: no generated class reaches itself."""
    import typing

    import attrs

    from agentproto.agui import schema

    def classes(tp: Any) -> set[type]:
        if attrs.has(tp):
            return {tp}
        return {c for arg in typing.get_args(tp) for c in classes(arg)}

    graph = {
        cls: {c for hint in typing.get_type_hints(cls).values() for c in classes(hint)}
        for cls in vars(schema).values()
        if isinstance(cls, type) and attrs.has(cls)
    }
    for start in graph:
        seen: set[type] = set()
        todo = list(graph[start])
        while todo:
            cls = todo.pop()
            assert cls is not start, f"{start.__name__} reaches itself"
            if cls not in seen:
                seen.add(cls)
                todo.extend(graph.get(cls, ()))


def test_parse_event_checks_free_form_values_where_they_are() -> None:
    """A deep or non-JSON value in a free-form field, or a non-string key, is refused with
    its location; the same nesting in bytes would be refused by the parser."""
    meta = {"a": _deep(600)}
    with pytest.raises(DecodeError, match="512"):
        parse_event({"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": meta})
    with pytest.raises(SchemaError) as info:
        parse_event({"type": "STATE_SNAPSHOT", "snapshot": {"a": {1, 2}}})
    assert info.value.location.startswith("/snapshot")
    with pytest.raises(SchemaError):
        parse_event({"type": "TEXT_MESSAGE_END", "messageId": "m", 5: "x"}, diagnostics=[])


@pytest.mark.parametrize("stage", ["verifier", "conversation"])
def test_a_bug_in_a_later_stage_fails_the_stream_and_changes_nothing(
    stage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A non-SDK exception raised by the verifier or the reducer: InternalError, the run
    failed, the conversation as before the event, and no later event is taken."""
    consumer = Consumer()
    consumer.feed_json(START)
    consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}})
    before = consumer.conversation.to_json()

    def broken(*args: Any) -> Any:
        raise ZeroDivisionError("bug")

    # the stage's rule for STATE_DELTA, looked up per event in its dispatch table (a
    # patched method would not be seen by the compiled build, whose stages call directly)
    rules = _verify._IN_RUN if stage == "verifier" else _conversation._RULES
    monkeypatch.setitem(rules, StateDeltaEvent, broken)
    with pytest.raises(InternalError) as info:
        consumer.feed_json(
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/n", "value": 2}]}
        )
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert consumer.failure is info.value
    assert consumer.verifier.runs[-1].status == "failed"
    assert consumer.conversation.to_json() == before
    monkeypatch.undo()
    with pytest.raises(UsageError):
        consumer.feed_json(FINISH)
    assert consumer.verifier.runs[-1].status == "failed"


@pytest.mark.parametrize(
    ("load", "keyword"),
    [
        (
            lambda d: parse_message({"role": "frob", "id": "m", "content": "x"}, diagnostics=d),
            "oneOf",
        ),
        (lambda d: make_converter().load({"type": "FROB"}, Event, diagnostics=d), "oneOf"),
        (
            lambda d: make_converter().load(
                {"role": "user", "id": "m", "content": [{"type": "frob"}]},
                UserMessage,
                diagnostics=d,
            ),
            None,
        ),
        (
            lambda d: make_converter().load("frob", ReasoningEncryptedValueSubtype, diagnostics=d),
            "enum",
        ),
        (
            lambda d: acp.make_v1_converter().load(
                {"sessionUpdate": "frob"}, acp_v1.SessionUpdate, diagnostics=d
            ),
            "oneOf",
        ),
    ],
    ids=["agui-message-role", "agui-event-type", "list-element", "enum", "acp-v1-update-kind"],
)
def test_an_unknown_member_with_nothing_to_drop_is_a_schema_error(load: Any, keyword: Any) -> None:
    """Tolerant parsing drops an unknown member's container; where that is the value asked
    for, the caller gets a SchemaError (never the internal class), as strict parsing does."""
    if keyword is None:  # an unknown list element: dropped, the list survives
        found: list[Any] = []
        assert load(found).content == []
        assert [d.code for d in found] == ["unknown-member-dropped"]
        return
    with pytest.raises(SchemaError) as tolerant:
        load([])
    assert tolerant.value.keyword == keyword
    assert tolerant.value.location == ""
    with pytest.raises(SchemaError):
        load(None)


def _on_a_deep_stack(frames: int, call: Any) -> Any:
    return call() if frames == 0 else _on_a_deep_stack(frames - 1, call)


def test_a_deep_array_event_over_sse_is_a_schema_error_from_a_deep_caller() -> None:
    """A 510-deep array as an SSE event (a fuzzer find): not an event object, a
    SchemaError, also from a caller deep in its own stack (the search for integers orjson
    rounded recursed, two frames a level, into an InternalError)."""
    data = b"data:" + b"[" * 510 + b"1e19" + b"]" * 510 + b"\n\n"

    def feed() -> None:
        Consumer(transport="sse").feed_bytes(data)

    with pytest.raises(SchemaError, match="must be a JSON object"):
        _on_a_deep_stack(300, feed)

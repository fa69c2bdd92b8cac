"""Bad input through the whole Consumer pipeline: clear errors, failed runs, nothing lost."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentproto import AgentProtoError, DecodeError, ProtocolError, SchemaError, UsageError
from agentproto._core.sse import encode_sse
from agentproto.agui import Consumer
from agentproto.agui._consume import decoder as _decoder
from tests.agui.synthetic import FutureEvent

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
TEXT = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
]
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def sse(*events: object) -> bytes:
    return b"".join(encode_sse(orjson.dumps(e)) for e in events)


def test_truncated_stream_fails_the_run() -> None:
    """A stream ending inside a run raises stream.truncated and the run is failed, not done."""
    consumer = Consumer()
    consumer.feed_bytes(sse(START, *TEXT))
    with pytest.raises(ProtocolError) as info:
        consumer.close()
    assert info.value.code == "stream.truncated"
    assert consumer.verifier.runs[-1].status == "failed"
    assert consumer.conversation.message("m") is not None  # what arrived is kept


def test_truncated_frame_is_a_decode_error_and_fails_the_run() -> None:
    """Bytes ending inside an SSE event raise DecodeError at close and fail the run."""
    consumer = Consumer()
    consumer.feed_bytes(sse(START) + b'data: {"type":"TEXT_MES')
    with pytest.raises(DecodeError):
        consumer.close()
    assert consumer.verifier.runs[-1].status == "failed"


def test_invalid_utf8_names_the_byte_offset() -> None:
    """Invalid UTF-8 is an error carrying the absolute byte offset of the bad byte."""
    head = sse(START)
    bad = head + b'data: {"type":"CUSTOM","name":"x","value":"\xff"}\n\n'
    consumer = Consumer()
    with pytest.raises(DecodeError) as info:
        for i in range(len(bad)):  # byte by byte: the offset is still absolute
            consumer.feed_bytes(bad[i : i + 1])
    assert info.value.offset == bad.index(b"\xff")


def test_deep_json_is_an_error_not_a_recursion_error() -> None:
    """JSON nested deeper than the limit is a DecodeError, never RecursionError."""
    deep = b"[" * 100_000 + b"]" * 100_000
    event = b'data: {"type":"CUSTOM","name":"x","value":' + deep + b"}\n\n"
    consumer = Consumer()
    consumer.feed_bytes(sse(START))
    with pytest.raises(DecodeError):
        consumer.feed_bytes(event)
    consumer2 = Consumer(max_depth=8)
    consumer2.feed_bytes(sse(START))
    with pytest.raises(DecodeError):
        consumer2.feed_bytes(sse({"type": "CUSTOM", "name": "x", "value": [[[[[[[[[[1]]]]]]]]]]}))


def test_oversized_event_fails_before_buffering_more() -> None:
    """One SSE event over max_event_bytes is an error before the rest is buffered."""
    consumer = Consumer(max_event_bytes=1024)
    consumer.feed_bytes(sse(START))
    with pytest.raises(DecodeError):
        consumer.feed_bytes(b"data: " + b"x" * 2048)
    assert consumer.decoder._sse is not None and consumer.decoder._sse.buffered <= 1024


def test_malformed_known_field_is_fatal_with_path() -> None:
    """A wrong-typed known field is a SchemaError naming the event and the path."""
    consumer = Consumer()
    consumer.feed_bytes(sse(START, TEXT[0]))
    with pytest.raises(SchemaError) as info:
        consumer.feed_bytes(sse({**TEXT[1], "delta": 42}))
    assert (info.value.keyword, info.value.location) == ("type", "/delta")
    assert "event 2" in str(info.value)
    assert consumer.verifier.runs[-1].status == "failed"


def test_events_before_a_problem_in_the_same_chunk_are_delivered() -> None:
    """Events decoded before a fatal problem in one chunk are returned; the error comes next."""
    consumer = Consumer()
    delivered = consumer.feed_bytes(sse(START, TEXT[0], {**TEXT[1], "delta": 42}))
    assert [e.type for e in delivered] == ["RUN_STARTED", "TEXT_MESSAGE_START"]
    with pytest.raises(SchemaError):
        consumer.feed_bytes(b"")
    with pytest.raises(UsageError):
        consumer.feed_bytes(sse(FINISH))


def test_non_object_event_is_a_schema_error() -> None:
    """An event that is not a JSON object is rejected with keyword `type`, never a crash."""
    consumer = Consumer()
    with pytest.raises(SchemaError) as info:
        consumer.feed_bytes(b"data: [1, 2]\n\n")
    assert info.value.keyword == "type"


@pytest.mark.parametrize(
    "data",
    [b"data: {\n\n", b"data: nul\n\n", b'data: {"type": 1}\n\n', b"data: 1e999\n\n"],
)
def test_garbage_raises_only_agentproto_errors(data: bytes) -> None:
    """Garbage in a frame raises an AgentProtoError, never a bare exception."""
    consumer = Consumer()
    with pytest.raises(AgentProtoError):
        consumer.feed_bytes(data)
        consumer.close()


def test_failed_run_input_field_is_fatal_before_anything() -> None:
    """A run input with a malformed known field is fatal when the consumer is built."""
    with pytest.raises(SchemaError):
        Consumer(run_input={"threadId": "t", "runId": "r", "messages": [], "tools": [42]})


def test_an_event_class_no_stage_has_a_rule_for_is_delivered_with_diagnostics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A class the converter parses but no runtime rule knows (a regeneration's) is tolerated:
    delivered with diagnostics, closing no chunk stream, never a UsageError."""
    original = _decoder.load_event

    def load(value: Any, path: str, ctx: Any) -> Any:
        if value.get("type") == "FUTURE_EVENT":
            return FutureEvent(message_id=value.get("messageId"))
        return original(value, path, ctx)

    monkeypatch.setattr(_decoder, "load_event", load)
    consumer = Consumer()
    delivered = consumer.feed_bytes(
        sse(
            START,
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "a"},
            {"type": "FUTURE_EVENT", "messageId": "m"},
            {"type": "TEXT_MESSAGE_CHUNK", "delta": "b"},
            FINISH,
        )
    )
    consumer.close()
    assert [e.type for e in delivered].count("FUTURE_EVENT") == 1
    assert [d.code for d in consumer.diagnostics] == ["event.no-rule", "event.no-rule"]
    assert consumer.verifier.runs[-1].succeeded
    message = consumer.conversation.message("m")
    assert message is not None and message.content == "ab"

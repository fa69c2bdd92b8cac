"""Transport encoders (issue 5 item 2): SSE frames, JSON Lines, headers and negotiation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from agui_scripted_agent import scripted_events

from agentproto.agui import Consumer, Event, schema
from agentproto.agui._consume.decoder import Transport
from agentproto.agui._protocol.encoding import (
    JSONL_CONTENT_TYPE,
    SSE_CONTENT_TYPE,
    encode_event_jsonl,
    encode_event_sse,
    encode_jsonl_stream,
    encode_sse_stream,
    negotiate_transport,
    stream_headers,
)

# ---- encoders ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encode", "transport"), [(encode_event_sse, "sse"), (encode_event_jsonl, "jsonl")]
)
def test_encoders_round_trip_through_the_consumer(encode: Any, transport: Transport) -> None:
    """The encoded scripted run, fed to a Consumer byte by byte, gives back the same events
    and the same fold as the producer's own conversation."""
    events = scripted_events()
    data = b"".join(encode(e) for e in events)
    run_input = {"threadId": "thread-1", "runId": "run-1", "messages": []}
    consumer = Consumer(run_input=run_input, transport=transport)
    delivered: list[Event] = []
    for i in range(len(data)):
        delivered += consumer.feed_bytes(data[i : i + 1])
    delivered += consumer.close()
    assert delivered == events
    assert consumer.diagnostics == []


def test_sse_frame_is_one_data_line() -> None:
    """An SSE frame is one ``data:`` line of compact JSON, whatever line breaks the text has."""
    event = schema.TextMessageContentEvent(message_id="m", delta="a\nb\r\nc é")
    frame = encode_event_sse(event)
    assert frame.startswith(b"data: {") and frame.endswith(b"}\n\n")
    assert frame.count(b"\n") == 2 and b"\r" not in frame
    assert encode_event_jsonl(event) == frame[6:-1]


def test_stream_encoders_keep_sync_and_async() -> None:
    """Sync events give a sync iterator, async events an async one; closing closes the source."""
    closed: list[str] = []

    def sync_events() -> Iterator[Event]:
        try:
            yield from scripted_events()
        finally:
            closed.append("sync")

    async def async_events() -> AsyncIterator[Event]:
        try:
            for event in scripted_events():
                yield event
        finally:
            closed.append("async")

    frames = encode_sse_stream(sync_events())
    assert next(frames).startswith(b"data: ")
    frames.close()  # type: ignore[attr-defined]
    assert closed == ["sync"]

    async def read() -> list[bytes]:
        stream = encode_jsonl_stream(async_events())
        first = await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
        return [first]

    assert asyncio.run(read())[0].endswith(b"}\n")
    assert closed == ["sync", "async"]


@pytest.mark.parametrize(
    ("accept", "transport"),
    [
        (None, "sse"),
        ("", "sse"),
        ("text/event-stream", "sse"),
        ("application/jsonl", "jsonl"),
        ("application/json, application/jsonl", "jsonl"),
        ("text/event-stream, application/jsonl", "sse"),
        ("application/jsonl, text/event-stream", "jsonl"),
        ("text/event-stream;q=0.5, application/jsonl", "jsonl"),
        ("application/jsonl;q=0", "sse"),
        ("*/*", "sse"),
    ],
)
def test_negotiate_transport(accept: str | None, transport: str) -> None:
    """JSON Lines only when ``Accept`` prefers ``application/jsonl``; SSE otherwise."""
    assert negotiate_transport(accept) == transport


def test_stream_headers() -> None:
    """The headers name the content type and turn off caching and proxy buffering."""
    assert stream_headers("sse") == {
        "content-type": SSE_CONTENT_TYPE,
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
    }
    assert stream_headers("jsonl")["content-type"] == JSONL_CONTENT_TYPE

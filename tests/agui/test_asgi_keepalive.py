"""SSE keep-alive comments (issue 10, "Fitting the ecosystem"): sent in every quiet
stretch of the interval the app sets, never inside a frame, never after the end or
once the client has gone.

The ASGI-level tests record when each message was sent (the event loop's clock, the
one the keep-alive timer runs on) with a short interval; timers never fire early,
so the lower bounds are exact and only the upper bounds leave room for a busy machine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agentproto import UsageError
from agentproto.agui import RunProducer, agent_app, agent_route, consume, schema
from agentproto.agui._serve.keepalive import KEEPALIVE_COMMENT
from agentproto.agui.asgi import EventStreamResponse
from tests.agui.live_server import serve
from tests.agui.test_asgi_limits import BODY, http_scope, then_silence

INTERVAL = 0.05
QUIET = 0.3  # a quiet stretch of the handlers below: six intervals
EARLY = 0.005  # the event loop's clock resolution, and then some


class Recorder:
    """An ASGI ``send`` keeping each message with the loop time it was sent at."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, dict[str, Any]]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append((asyncio.get_running_loop().time(), message))

    def chunks(self) -> list[tuple[float, bytes]]:
        return [
            (at, m["body"])
            for at, m in self.sent
            if m["type"] == "http.response.body" and m.get("body")
        ]


def blocks(chunk: bytes) -> list[bytes]:
    """The SSE blocks of a chunk that holds whole blocks only (else the test fails)."""
    assert chunk.endswith(b"\n\n"), chunk
    return chunk[:-2].split(b"\n\n")


def is_frame(block: bytes) -> bool:
    """A block is one event frame (``data: <one JSON event>``)."""
    if not block.startswith(b"data: ") or b"\n" in block:
        return False
    return isinstance(json.loads(block[len(b"data: ") :]), dict)


async def slow(run_input: Any, producer: RunProducer) -> None:
    producer.run_started()
    await asyncio.sleep(QUIET)
    producer.text("after a quiet stretch")
    await asyncio.sleep(QUIET)
    producer.run_finished()


async def test_keepalives_fill_each_quiet_stretch_at_the_interval() -> None:
    """Each chunk sent is one whole frame or one comment; comments come only when
    nothing was sent for ``keepalive`` seconds (never sooner after anything), about
    ``QUIET / INTERVAL`` of them per quiet stretch, and the stream consumes cleanly."""
    send = Recorder()
    await asyncio.wait_for(
        agent_app(slow, keepalive=INTERVAL)(http_scope(), then_silence(), send), 5
    )
    chunks = send.chunks()
    for _, chunk in chunks:
        (block,) = blocks(chunk)  # one block per chunk: a frame or a comment, never mixed
        assert is_frame(block) or block == KEEPALIVE_COMMENT[:-2]
    previous = send.sent[0][0]  # the response start
    stretches: list[tuple[float, int]] = []  # (when the last frame went, comments since)
    for at, chunk in chunks:
        if chunk == KEEPALIVE_COMMENT:
            assert at - previous >= INTERVAL - EARLY
            since, count = stretches[-1]
            stretches[-1] = (since, count + 1)
        else:
            if stretches and stretches[-1][1]:
                since, count = stretches[-1]
                assert count <= (at - since) / (INTERVAL - EARLY)  # none sooner than due
            stretches.append((at, 0))
        previous = at
    # frames: RUN_STARTED, then the three text events together, then RUN_FINISHED
    assert [count >= 1 for _, count in stretches] == [True, False, False, True, False]
    consumer = consume([chunk for _, chunk in chunks], run_input=json.loads(BODY))
    assert consumer.verifier.runs[-1].succeeded and consumer.diagnostics == []


async def test_no_keepalive_when_events_keep_coming() -> None:
    """A stream whose events come faster than the interval gets no comment."""

    async def quick(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()
        for n in range(20):
            producer.custom("tick", n)
            await asyncio.sleep(0)
        producer.run_finished()

    send = Recorder()
    await agent_app(quick, keepalive=5.0)(http_scope(), then_silence(), send)
    assert all(chunk != KEEPALIVE_COMMENT for _, chunk in send.chunks())
    assert len(send.chunks()) == 22


async def test_keepalives_end_with_the_stream() -> None:
    """The last message sent ends the body; nothing is sent after it, and no task is
    left behind that could send."""
    send = Recorder()
    await agent_app(slow, keepalive=INTERVAL)(http_scope(), then_silence(), send)
    final = send.sent[-1][1]
    assert final == {"type": "http.response.body", "body": b"", "more_body": False}
    count = len(send.sent)
    await asyncio.sleep(3 * INTERVAL)
    assert len(send.sent) == count
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_keepalives_stop_when_the_client_disconnects() -> None:
    """A client that goes away mid-stream stops the comments and cancels the handler
    (its ``finally`` runs); nothing is sent after the disconnect."""
    cleaned = asyncio.Event()

    async def silent(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.set()

    requests = [{"type": "http.request", "body": BODY, "more_body": False}]

    gone_at: list[float] = []

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop(0)
        await asyncio.sleep(6 * INTERVAL)
        gone_at.append(asyncio.get_running_loop().time())
        return {"type": "http.disconnect"}

    send = Recorder()
    await asyncio.wait_for(agent_app(silent, keepalive=INTERVAL)(http_scope(), receive, send), 5)
    assert gone_at and cleaned.is_set()
    comments = [at for at, chunk in send.chunks() if chunk == KEEPALIVE_COMMENT]
    assert 1 <= len(comments) <= (gone_at[0] - send.sent[0][0]) / (INTERVAL - EARLY)
    count = len(send.sent)
    await asyncio.sleep(3 * INTERVAL)
    assert len(send.sent) == count
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_json_lines_get_no_keepalive() -> None:
    """JSON Lines has no comment syntax: a JSON Lines stream gets no keep-alive."""
    send = Recorder()
    headers = [(b"content-type", b"application/json"), (b"accept", b"application/jsonl")]
    await agent_app(slow, keepalive=INTERVAL)(http_scope(headers), then_silence(), send)
    chunks = [chunk for _, chunk in send.chunks()]
    assert all(json.loads(line) for chunk in chunks for line in chunk.splitlines())
    assert len(chunks) == 5


@pytest.mark.parametrize("keepalive", [None, INTERVAL])
async def test_a_failing_source_fails_the_same_with_keepalives(keepalive: float | None) -> None:
    """An event source that raises: the frames before it are sent, then its exception
    reaches the caller, with or without keep-alives."""

    async def events() -> AsyncIterator[Any]:
        yield schema.RunStartedEvent(thread_id="t", run_id="r")
        await asyncio.sleep(3 * INTERVAL)
        raise RuntimeError("the source broke")

    send = Recorder()
    response = EventStreamResponse(events(), keepalive=keepalive)
    with pytest.raises(RuntimeError, match="the source broke"):
        await response(http_scope(), then_silence(), send)
    frames = [chunk for _, chunk in send.chunks() if chunk != KEEPALIVE_COMMENT]
    assert len(frames) == 1 and is_frame(blocks(frames[0])[0])
    assert asyncio.all_tasks() == {asyncio.current_task()}


@pytest.mark.parametrize("keepalive", [0, -1, True, "15", float("nan")])
def test_a_keepalive_that_is_not_a_positive_number_is_refused(keepalive: Any) -> None:
    """``keepalive`` must be a positive number of seconds (or ``None``)."""
    for make in (
        lambda: agent_app(slow, keepalive=keepalive),
        lambda: EventStreamResponse([], keepalive=keepalive),
        lambda: agent_route("/agent", slow, keepalive=keepalive),
    ):
        with pytest.raises(UsageError, match="keepalive"):
            make()


def test_keepalives_over_a_real_socket() -> None:
    """Under uvicorn, through a Starlette route, the bytes as they arrive hold the
    comments between whole frames and consume into the same run."""
    app = Starlette(routes=[agent_route("/agent", slow, keepalive=INTERVAL)])
    with (
        serve(app) as url,
        httpx.Client(timeout=httpx.Timeout(10.0)) as client,
        client.stream("POST", url + "/agent", json=json.loads(BODY)) as response,
    ):
        raw = b"".join(response.iter_raw())
    found = blocks(raw)
    assert found.count(KEEPALIVE_COMMENT[:-2]) >= 2
    assert all(is_frame(b) or b == KEEPALIVE_COMMENT[:-2] for b in found)
    consumer = consume([raw], run_input=json.loads(BODY))
    assert consumer.verifier.runs[-1].succeeded and consumer.diagnostics == []

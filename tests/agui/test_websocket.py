"""AG-UI over a WebSocket (issue 26, item 4): ``agent_app`` answers a WebSocket on its own
path with the run's events, one per message (the upstream proposal's shape), resumable by
cursor with our subprotocol; ``WebSocketAgent`` speaks it and reconnects."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from agentproto.agui import (
    HttpStatusError,
    OpenInterrupts,
    Reconnect,
    RunProducer,
    WebSocketAgent,
    agent_app,
    consume,
    encode_event_sse,
)
from agentproto.agui._protocol.encoding import WEBSOCKET_SUBPROTOCOL
from agentproto.stores import MemoryEventLog, Retention
from tests.agui.faults import Fault, Proxy
from tests.agui.live_server import serve
from tests.agui.resume_app import INTERRUPTED, run_events

BODY: dict[str, Any] = {"threadId": "t", "runId": "r", "messages": []}
FAST = Reconnect(attempts=20, delay=0.0, jitter=0.0)


def _handler(run_input: Any, producer: RunProducer) -> Any:
    async def run() -> None:
        for event in run_events(run_input):
            producer.emit(event)
            await asyncio.sleep(0)

    return run()


def _expected(run_id: str = "r") -> tuple[list[Any], dict[str, Any]]:
    wire = {**BODY, "runId": run_id}
    events = run_events(RunProducer(wire).run_input)
    sse = b"".join(map(encode_event_sse, events))
    return events, consume([sse], run_input=wire).conversation.to_json()


async def _rest(socket: Any) -> list[Any]:
    """The messages until the socket closes, however it closes."""
    received = []
    with contextlib.suppress(ConnectionClosed):
        async for message in socket:
            received.append(message)
    return received


def _ws(url: str) -> str:
    return "ws://" + url.removeprefix("http://")


@pytest.mark.parametrize("logged", [False, True], ids=["no-log", "log"])
async def test_a_plain_websocket_client_gets_one_event_per_message(logged: bool) -> None:
    """Without the subprotocol, each message is one event's JSON and the socket closes with
    1000 at the end, as the upstream proposal has it, whether the agent keeps a log or not."""
    app = agent_app(_handler, log=MemoryEventLog() if logged else None)
    with serve(app) as url:
        async with connect(_ws(url)) as socket:
            await socket.send(json.dumps(BODY))
            messages = [json.loads(m) async for m in socket]
            assert socket.close_code == 1000
    assert [m["type"] for m in messages] == [e.type for e in _expected()[0]]


async def test_the_subprotocol_gives_cursors_and_resumes_after_one() -> None:
    """With the subprotocol, each message is ``{"id", "event"}``; a resume request after
    the k-th cursor gets exactly the events after it."""
    with serve(agent_app(_handler, log=MemoryEventLog())) as url:
        async with connect(_ws(url), subprotocols=[WEBSOCKET_SUBPROTOCOL]) as socket:  # type: ignore[list-item]
            assert socket.subprotocol == WEBSOCKET_SUBPROTOCOL
            await socket.send(json.dumps(BODY))
            whole = [json.loads(m) async for m in socket]
        async with connect(_ws(url), subprotocols=[WEBSOCKET_SUBPROTOCOL]) as socket:  # type: ignore[list-item]
            resume = {"type": "resume", "threadId": "t", "runId": "r", "after": whole[4]["id"]}
            await socket.send(json.dumps(resume))
            rest = [json.loads(m) async for m in socket]
    assert "event" not in whole[0]  # the start's cursor
    assert rest == whole[5:]
    assert len({m["id"] for m in whole}) == len(whole)
    assert [m["event"]["type"] for m in whole[1:]] == [e.type for e in _expected()[0]]


async def test_refusals_are_an_error_message_then_close_1008() -> None:
    """A first message that is not a run input, or a foreign cursor, gets the HTTP refusal's
    JSON body (with its status) and close 1008."""
    with serve(agent_app(_handler, log=MemoryEventLog())) as url:
        async with connect(_ws(url)) as socket:
            await socket.send('{"threadId": 1}')
            refusal = json.loads(await socket.recv())
            assert refusal["status"] == 400 and refusal["error"] == "invalid-run-input"
            assert await _rest(socket) == []
            assert socket.close_code == 1008
        async with connect(_ws(url), subprotocols=[WEBSOCKET_SUBPROTOCOL]) as socket:  # type: ignore[list-item]
            await socket.send(
                json.dumps({"type": "resume", "threadId": "t", "runId": "r", "after": "x.1"})
            )
            refusal = json.loads(await socket.recv())
            assert refusal["error"] in ("invalid-cursor", "unknown-run")


async def test_a_first_message_over_the_limit_is_closed_with_1009() -> None:
    """The body limit applies to the first message: over it, close 1009."""
    with serve(agent_app(_handler, max_body_bytes=64)) as url:
        async with connect(_ws(url)) as socket:
            await socket.send(json.dumps({**BODY, "messages": [], "state": {"x": "y" * 100}}))
            assert await _rest(socket) == []
            assert socket.close_code == 1009


@pytest.mark.parametrize("logged", [False, True], ids=["no-log", "log"])
async def test_the_websocket_agent_runs_a_thread(logged: bool) -> None:
    """``WebSocketAgent`` runs the agent and folds the run as ``AsyncHttpAgent`` does."""
    events, conversation = _expected()
    with serve(agent_app(_handler, log=MemoryEventLog() if logged else None)) as url:
        async with WebSocketAgent(_ws(url), thread_id="t") as agent:
            got = [event async for event in agent.run(run_id="r")]
            assert got == events
            assert agent.conversation.to_json() == conversation
            assert agent.runs[-1].succeeded


CUTS = 60


def _frame_size(data: bytes) -> int:
    """The size of the WebSocket frame ``data`` starts with (a server's: unmasked)."""
    length = data[1] & 0x7F
    if length == 126:
        return 4 + int.from_bytes(data[2:4], "big")
    if length == 127:
        return 10 + int.from_bytes(data[2:10], "big")
    return 2 + length


@pytest.fixture(scope="module")
def ws_span() -> tuple[int, int]:
    """Where an uninterrupted run's WebSocket bytes start to carry cursors (after the
    handshake answer and the start's cursor) and where they end."""

    async def measure(url: str) -> None:
        async with WebSocketAgent(_ws(url), thread_id="t") as agent:
            async for _ in agent.run(run_id="measure"):
                pass

    with serve(agent_app(_handler, log=MemoryEventLog(), detached_timeout=None)) as url:
        host, port = url.removeprefix("http://").split(":")
        proxy = Proxy([(host, int(port))])
        try:
            asyncio.run(measure(proxy.url))
            head = proxy.head.index(b"\r\n\r\n") + 4
            return head + _frame_size(proxy.head[head:]), proxy.forwarded  # past the start's cursor
        finally:
            proxy.close()


@pytest.mark.parametrize("cut", range(CUTS))
def test_the_websocket_agent_resumes_after_a_cut(ws_span: tuple[int, int], cut: int) -> None:
    """The socket cut at one of 60 byte offsets spread over the run's messages (through a TCP
    proxy): the agent reopens it with a resume request and every event arrives once."""
    start, end = ws_span
    offset = start + (end - start) * (2 * cut + 1) // (2 * CUTS)
    run_id = f"ws-{cut}"
    events, conversation = _expected(run_id)

    async def run(url: str) -> None:
        async with WebSocketAgent(_ws(url), thread_id="t", reconnect=FAST) as agent:
            assert [event async for event in agent.run(run_id=run_id)] == events
            assert agent.conversation.to_json() == conversation

    with serve(agent_app(_handler, log=MemoryEventLog(), detached_timeout=None)) as url:
        host, port = url.removeprefix("http://").split(":")
        proxy = Proxy([(host, int(port))], [Fault(offset)])
        try:
            asyncio.run(run(proxy.url))
            assert proxy.connections >= 2  # the cut happened, and reconnecting mended it
        finally:
            proxy.close()


TAIL_CUTS = 12


@pytest.mark.parametrize("cut", range(TAIL_CUTS))
def test_an_interrupted_run_cut_near_its_end_is_resumed(ws_span: tuple[int, int], cut: int) -> None:
    """A run ending interrupted, its socket cut at one of 12 offsets over the last fifth:
    every event arrives once and the agent holds the open interrupt."""
    start, end = ws_span
    tail = start + (end - start) * 4 // 5
    offset = tail + (end - tail) * (2 * cut + 1) // (2 * TAIL_CUTS)
    run_id = f"{INTERRUPTED}ws-{cut}"
    events, conversation = _expected(run_id)

    async def run(url: str) -> None:
        async with WebSocketAgent(_ws(url), thread_id="t", reconnect=FAST) as agent:
            assert [event async for event in agent.run(run_id=run_id)] == events
            assert agent.conversation.to_json() == conversation
            assert agent.runs[-1].status == "interrupted"
            assert agent.interrupts.ids == ("approve",)

    with serve(agent_app(_handler, log=MemoryEventLog(), detached_timeout=None)) as url:
        host, port = url.removeprefix("http://").split(":")
        proxy = Proxy([(host, int(port))], [Fault(offset)])
        try:
            asyncio.run(run(proxy.url))
            assert proxy.connections >= 2
        finally:
            proxy.close()


def test_the_websocket_agent_is_resynced_after_retention_moved_on(
    ws_span: tuple[int, int],
) -> None:
    """Cut early in the run against a log keeping 8 frames: by the reconnection the frames
    after the agent's cursor are gone, and the server's resync (``agentproto.resync``,
    snapshots, the tail) leaves it with the uninterrupted run's conversation."""
    start, end = ws_span
    _, conversation = _expected("ws-resync")

    async def run(url: str) -> list[Any]:
        async with WebSocketAgent(_ws(url), thread_id="t", reconnect=FAST) as agent:
            events = [event async for event in agent.run(run_id="ws-resync")]
            assert agent.runs[-1].succeeded
            assert agent.conversation.to_json() == conversation
            return events

    log = MemoryEventLog(Retention(max_frames=8))
    with serve(agent_app(_handler, log=log, detached_timeout=None)) as url:
        host, port = url.removeprefix("http://").split(":")
        proxy = Proxy([(host, int(port))], [Fault(start + (end - start) // 8)])
        try:
            events = asyncio.run(run(proxy.url))
            assert proxy.connections >= 2
        finally:
            proxy.close()
    resyncs = [e.name for e in events if e.type == "CUSTOM"]  # the first socket's may add one
    assert resyncs and set(resyncs) == {"agentproto.resync"}


async def test_a_refusal_reaches_the_websocket_agent_as_an_http_status_error() -> None:
    """The agent's refusal message (here: the thread's last run left an interrupt open that
    the run does not answer) is raised as HttpStatusError with its status and body."""
    left_open = OpenInterrupts([{"id": "i1", "reason": "confirm"}], thread_id="t")
    with serve(agent_app(_handler, interrupts=lambda _: left_open)) as url:
        async with WebSocketAgent(_ws(url), thread_id="t") as agent:
            with pytest.raises(HttpStatusError) as caught:
                async for _ in agent.run(run_id="r"):
                    pass
            assert caught.value.status == 400
            assert caught.value.body["error"] == "invalid-resume"

"""``agent_app`` against clients it does not trust (issue 11, deliverable 4).

A slow or stalled request body, a client that stops reading, a client that goes
away: first at the ASGI level with hand-driven ``receive``/``send`` (fast and
deterministic), then over a real uvicorn socket.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import select
import socket
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from agentproto import UsageError
from agentproto.agui import Consumer, RunProducer, schema
from agentproto.agui.asgi import agent_app, run_events
from tests.agui.live_server import serve

BODY = json.dumps({"threadId": "t", "runId": "r", "messages": []}).encode()
LIMIT = 8  # max_buffered_events in the backpressure tests


def http_scope(headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    """An ASGI scope for ``POST /``."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "path": "/",
        "raw_path": b"/",
        "query_string": b"",
        "headers": headers or [(b"content-type", b"application/json")],
    }


def then_silence(*messages: dict[str, Any]) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An ASGI ``receive`` giving ``messages`` (default: the whole request), then nothing."""
    pending = list(messages or [{"type": "http.request", "body": BODY, "more_body": False}])

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop(0)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return receive


async def not_called(run_input: Any, producer: RunProducer) -> None:
    raise AssertionError("the handler must not run")


def response_of(sent: list[dict[str, Any]]) -> tuple[int, dict[bytes, bytes], Any]:
    """Status, headers and JSON body of a recorded (complete) error response."""
    assert sent[0]["type"] == "http.response.start"
    assert sent[-1]["type"] == "http.response.body" and not sent[-1].get("more_body")
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], dict(sent[0]["headers"]), json.loads(body)


async def call(app: Any, receive: Any, headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    """Run ``app`` for one request; what it sent, and how long it took."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    start = time.monotonic()
    await asyncio.wait_for(app(http_scope(headers), receive, send), 3)
    return response_of(sent), time.monotonic() - start


# ---- the request body: size and time ------------------------------------------------------


async def test_trickled_body_gets_408_at_the_timeout() -> None:
    """A body trickling in (each byte well within the timeout, the whole body not) gets
    408 naming ``body_timeout`` once the timeout has passed for the whole body."""

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"type": "http.request", "body": b" ", "more_body": True}

    app = agent_app(not_called, body_timeout=0.2)
    (status, headers, body), elapsed = await call(app, receive)
    assert status == 408 and headers[b"connection"] == b"close"
    assert body["error"] == "body-timeout"
    assert body["limit"] == "body_timeout" and body["value"] == 0.2
    assert "agent_app(body_timeout=...)" in body["detail"]
    assert 0.2 <= elapsed < 0.5


async def test_stalled_body_gets_408() -> None:
    """A client that sends part of its body and then nothing gets 408."""
    receive = then_silence({"type": "http.request", "body": BODY[:5], "more_body": True})
    (status, _, body), elapsed = await call(agent_app(not_called, body_timeout=0.1), receive)
    assert status == 408 and body["error"] == "body-timeout"
    assert elapsed < 0.4
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_body_timeout_none_waits_for_a_slow_body() -> None:
    """With ``body_timeout=None`` a body that takes its time is read and served."""
    pieces = [BODY[i : i + 10] for i in range(0, len(BODY), 10)]
    requests = [
        {"type": "http.request", "body": piece, "more_body": n < len(pieces) - 1}
        for n, piece in enumerate(pieces)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0.03)
        return requests.pop(0) if requests else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def handler(run_input: Any, producer: RunProducer) -> None:
        with producer.run():
            producer.text("ok")

    app = agent_app(handler, body_timeout=None)
    await asyncio.wait_for(app(http_scope(), receive, send), 3)
    assert sent[0]["status"] == 200
    consumer = Consumer(run_input=json.loads(BODY))
    consumer.feed_bytes(b"".join(m.get("body", b"") for m in sent[1:]))
    assert consumer.verifier.runs[-1].succeeded


async def test_body_over_the_limit_names_the_limit() -> None:
    """A body over ``max_body_bytes`` gets 413 naming the limit and how to raise it."""
    app = agent_app(not_called, max_body_bytes=10)
    (status, headers, body), _ = await call(app, then_silence())
    assert status == 413 and headers[b"connection"] == b"close"
    assert body["error"] == "body-too-large"
    assert body["limit"] == "max_body_bytes" and body["value"] == 10
    assert "agent_app(max_body_bytes=...)" in body["detail"]


@pytest.mark.parametrize("declared", [b"11", b"00011", b"9" * 5000])
async def test_declared_length_over_the_limit_is_refused_unread(declared: bytes) -> None:
    """A ``content-length`` over ``max_body_bytes`` gets 413 before any of the body is read."""

    async def receive() -> dict[str, Any]:
        raise AssertionError("the body must not be read")

    headers = [(b"content-length", declared)]
    (status, _, body), _ = await call(agent_app(not_called, max_body_bytes=10), receive, headers)
    assert status == 413 and body["limit"] == "max_body_bytes"


@pytest.mark.parametrize(
    "limits",
    [
        {"max_body_bytes": 0},
        {"max_body_bytes": 1.5},
        {"max_body_bytes": True},
        {"body_timeout": 0},
        {"body_timeout": -1.0},
        {"body_timeout": math.nan},
        {"body_timeout": "30"},
        {"max_buffered_events": 0},
        {"max_buffered_events": 2.0},
        {"max_buffered_events": [1] * 10_000},
    ],
    ids=lambda limits: repr(limits)[:40],
)
def test_bad_limits_are_usage_errors(limits: dict[str, Any]) -> None:
    """A limit that is not a positive number is refused when the app is made, naming it."""
    (name,) = limits
    with pytest.raises(UsageError, match=name) as caught:
        agent_app(not_called, **limits)
    assert len(str(caught.value)) < 200
    if name == "max_buffered_events":
        with pytest.raises(UsageError, match=name):
            run_events(not_called, RunProducer(json.loads(BODY)).run_input, **limits)


# ---- a client that stops reading ----------------------------------------------------------


class StalledClient:
    """Sends the request, reads ``reads`` body messages, then stops reading: its next
    ``send`` never returns. ``leave()`` disconnects it."""

    def __init__(self, reads: int = 3) -> None:
        self.reads = reads
        self.sent: list[dict[str, Any]] = []
        self.requested = False
        self.gone = asyncio.Event()

    @property
    def bodies(self) -> int:
        """Body messages the app has sent (or is sending)."""
        return sum(m["type"] == "http.response.body" for m in self.sent)

    async def receive(self) -> dict[str, Any]:
        if not self.requested:
            self.requested = True
            return {"type": "http.request", "body": BODY, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        if self.bodies > self.reads:
            await asyncio.Event().wait()  # the write buffer never drains

    def leave(self) -> None:
        self.gone.set()


class Counted:
    """An endless handler of one kind, counting the events it made; ``stopped`` once its
    (awaiting) cleanup has run."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.made = 0
        self.stopped = False

    def __call__(self, run_input: Any, producer: RunProducer) -> Any:
        return getattr(self, self.kind)(producer)

    async def cleanup(self) -> None:
        await asyncio.sleep(0)  # a cleanup that awaits still runs to its end
        self.stopped = True

    async def coroutine(self, producer: RunProducer) -> None:
        try:
            producer.run_started()
            while True:
                producer.custom("tick", self.made)
                self.made += 1
                await asyncio.sleep(0)
        finally:
            await self.cleanup()

    async def generator(self, producer: RunProducer) -> AsyncIterator[Any]:
        try:
            producer.run_started()
            while True:  # yields, never awaits
                self.made += 1
                yield schema.CustomEvent(name="tick", value=self.made)
        finally:
            await self.cleanup()

    async def generator_step(self, producer: RunProducer) -> AsyncIterator[Any]:
        try:
            yield producer.run_started()
            while True:  # one endless step: emits and awaits, never yields again
                producer.custom("tick", self.made)
                self.made += 1
                await asyncio.sleep(0)
        finally:
            await self.cleanup()


async def settle(handler: Counted, rounds: int = 3) -> None:
    """Let the loop run until the handler has made nothing new for a while."""
    for _ in range(rounds):
        before = handler.made
        for _ in range(500):
            await asyncio.sleep(0)
        if handler.made == before:
            return


@pytest.mark.parametrize("kind", ["coroutine", "generator", "generator_step"])
async def test_a_client_that_stops_reading_holds_the_handler(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """While the client reads nothing, the handler makes at most ``max_buffered_events``
    events beyond those sent; when the client leaves, it is cancelled and its cleanup
    runs, with one log line and nothing left running."""
    client, handler = StalledClient(), Counted(kind)
    app = agent_app(handler, max_buffered_events=LIMIT)
    caplog.set_level(logging.INFO)
    serving = asyncio.ensure_future(app(http_scope(), client.receive, client.send))
    await settle(handler)
    made = handler.made
    await settle(handler)
    assert handler.made == made, "the handler is still producing"
    assert handler.made >= LIMIT, "the handler never ran up to the limit"
    # made: the ticks; +1: RUN_STARTED; each body message sent (or being sent) is one event
    assert handler.made + 1 <= client.bodies + LIMIT
    assert not handler.stopped
    client.leave()
    await asyncio.wait_for(serving, 2)
    assert handler.stopped
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert [(r.name, r.levelno) for r in caplog.records] == [("agentproto.agui", logging.INFO)]
    assert "disconnected" in caplog.records[0].getMessage()


async def test_a_handler_timeout_while_held_does_not_end_the_hold() -> None:
    """A handler's own ``asyncio.timeout`` firing while it is held reaches it at once,
    and the handler is held again at its next ``await``."""
    client = StalledClient()
    made, timeouts = [0], [0]

    async def handler(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()
        while True:
            try:
                async with asyncio.timeout(0.01):
                    while True:
                        producer.custom("tick", made[0])
                        made[0] += 1
                        await asyncio.sleep(0)
            except TimeoutError:
                timeouts[0] += 1

    app = agent_app(handler, max_buffered_events=LIMIT)
    serving = asyncio.ensure_future(app(http_scope(), client.receive, client.send))
    await asyncio.sleep(0.2)
    assert timeouts[0] >= 3
    # each timeout lets the handler run to its next await: one more event each time
    assert made[0] + 1 <= client.bodies + LIMIT + timeouts[0]
    client.leave()
    await asyncio.wait_for(serving, 2)


async def test_a_failing_send_cancels_the_handler(caplog: pytest.LogCaptureFixture) -> None:
    """A ``send`` that raises ``OSError`` (an ASGI 2.4 server whose client left) stops the
    stream: the handler is cancelled, its cleanup runs, one line is logged."""
    handler = Counted("coroutine")
    client = StalledClient()

    async def send(message: dict[str, Any]) -> None:
        client.sent.append(message)
        if client.bodies > 3:
            raise OSError("connection reset")

    caplog.set_level(logging.INFO)
    await asyncio.wait_for(agent_app(handler)(http_scope(), client.receive, send), 2)
    assert handler.stopped
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert [(r.name, r.levelno) for r in caplog.records] == [("agentproto.agui", logging.INFO)]
    assert "connection reset" in caplog.records[0].getMessage()


async def test_disconnect_cancels_a_handler_waiting_on_something_else() -> None:
    """A handler awaiting something unrelated (not held) is cancelled on disconnect too."""
    client = StalledClient(reads=100)
    stopped = asyncio.Event()

    async def handler(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.set()

    serving = asyncio.ensure_future(agent_app(handler)(http_scope(), client.receive, client.send))
    for _ in range(20):
        await asyncio.sleep(0)
    client.leave()
    await asyncio.wait_for(serving, 2)
    assert stopped.is_set()


async def test_a_held_handler_resumes_when_the_client_reads_on() -> None:
    """Backpressure holds, it does not drop: once the client reads again, every event
    arrives, in order."""
    reading = asyncio.Event()
    sent: list[bytes] = []
    receive = then_silence()

    async def send(message: dict[str, Any]) -> None:
        if len(sent) > 2:
            await reading.wait()
        sent.append(message.get("body", b""))

    async def handler(run_input: Any, producer: RunProducer) -> None:
        with producer.run():
            for n in range(200):
                producer.custom("n", n)
                await asyncio.sleep(0)

    serving = asyncio.ensure_future(
        agent_app(handler, max_buffered_events=4)(http_scope(), receive, send)
    )
    for _ in range(200):
        await asyncio.sleep(0)
    assert not serving.done()
    reading.set()
    await asyncio.wait_for(serving, 2)
    consumer = Consumer(run_input=json.loads(BODY))
    events = consumer.feed_bytes(b"".join(sent)) + consumer.close()
    assert consumer.verifier.runs[-1].succeeded
    values = [e.value for e in events if isinstance(e, schema.CustomEvent)]
    assert values == list(range(200))


async def test_a_long_generator_step_keeps_only_what_is_unsent() -> None:
    """An async generator handler emitting many events within one step (awaiting, not
    yielding) to a reading client: the events already sent are not kept alive."""
    alive: list[weakref.ref[Any]] = []
    still_alive: list[int] = []
    receive = then_silence()

    async def send(message: dict[str, Any]) -> None:
        await asyncio.sleep(0)

    async def handler(run_input: Any, producer: RunProducer) -> AsyncIterator[Any]:
        yield producer.run_started()
        for n in range(2_000):
            alive.append(weakref.ref(producer.custom("n", n)))
            await asyncio.sleep(0)
        still_alive.append(sum(seen() is not None for seen in alive))
        yield producer.run_finished()

    app = agent_app(handler, max_buffered_events=LIMIT)
    await asyncio.wait_for(app(http_scope(), receive, send), 5)
    assert still_alive and still_alive[0] <= 2 * LIMIT


# ---- over a real uvicorn socket -----------------------------------------------------------


def request_head(length: int) -> bytes:
    """The head of ``POST /`` with a JSON body of ``length`` bytes."""
    return (
        b"POST / HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n" % length
    )


def connect(url: str, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket()
    if rcvbuf is not None:  # a small window: what the client does not read stays server-side
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", int(url.rsplit(":", 1)[1])))
    return sock


def read_to_close(sock: socket.socket) -> bytes:
    """All the peer sends until it closes the connection. A reset counts as the close: a
    server that closes with request bytes still unread resets the connection, and the
    kernel hands over what arrived before the reset first."""
    sock.settimeout(3)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def test_served_slow_body_gets_408() -> None:
    """Under uvicorn, a client sending its body at 5 bytes every 0.1 s gets 408 once
    ``body_timeout`` has passed, and the connection is closed."""
    with serve(agent_app(not_called, body_timeout=0.5)) as url, connect(url) as sock:
        sock.sendall(request_head(len(BODY)))
        start = time.monotonic()
        for offset in range(0, len(BODY), 5):
            if select.select([sock], [], [], 0.1)[0]:
                break
            try:
                sock.sendall(BODY[offset : offset + 5])
            except (BrokenPipeError, ConnectionResetError):
                break  # the server answered and closed between the select and the send
        response = read_to_close(sock)
        elapsed = time.monotonic() - start
    assert response.startswith(b"HTTP/1.1 408 ")
    assert b'"limit":"body_timeout"' in response
    assert 0.5 <= elapsed < 1.5


def test_served_client_that_stops_reading_holds_then_stops_the_handler() -> None:
    """Under uvicorn, a client that reads nothing makes the handler stop producing (what
    it made is bounded by ``max_buffered_events`` plus the socket buffers); when the
    client closes the connection, the handler is cancelled and its cleanup runs."""
    made = [0]
    stopped = threading.Event()

    async def handler(run_input: Any, producer: RunProducer) -> None:
        try:
            producer.run_started()
            while True:
                producer.custom("tick", "x" * 10_000)
                made[0] += 1
                await asyncio.sleep(0)
        finally:
            stopped.set()

    with serve(agent_app(handler, max_buffered_events=LIMIT)) as url:
        with connect(url, rcvbuf=4096) as sock:
            sock.sendall(request_head(len(BODY)) + BODY)
            samples = wait_until_stable(lambda: made[0])
            assert samples[-1] == samples[-2], f"still producing: {samples}"
            assert samples[-1] > LIMIT, f"never produced: {samples}"
            # about 540 events (5 MB) sit in the kernel's socket buffers on this machine
            assert samples[-1] < 1_500
            assert not stopped.is_set()
        assert stopped.wait(5)


def wait_until_stable(count: Callable[[], int], step: float = 0.3, most: int = 8) -> list[int]:
    """Sample ``count`` every ``step`` seconds until two non-zero samples agree (or
    ``most`` are taken)."""
    samples = [count()]
    while len(samples) < most and (len(samples) < 2 or not samples[-1] == samples[-2] > 0):
        time.sleep(step)
        samples.append(count())
    return samples

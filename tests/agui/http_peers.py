"""Servers for the HTTP agent client tests: agents served by ``agent_app`` and raw ASGI
apps that misbehave on purpose (a wrong status or type, a truncated or stalled stream)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from agentproto.agui import RunProducer, agent_app, schema
from agentproto.agui.asgi import ASGIApp, Receive, Scope, Send


class Echo:
    """An agent that answers each run with ``You said: <last user text>`` and counts the
    turns in the state; it records every run input and request header it received."""

    def __init__(self) -> None:
        self.inputs: list[schema.RunAgentInput] = []
        self.headers: list[dict[str, str]] = []
        self.app = self._recording(agent_app(self.handler))

    async def handler(self, run_input: schema.RunAgentInput, producer: RunProducer) -> None:
        self.inputs.append(run_input)
        producer.run_started()
        users = [m for m in run_input.messages if isinstance(m, schema.UserMessage)]
        producer.text(["You said: ", str(users[-1].content) if users else "nothing"])
        turns = (run_input.state or {}).get("turns", 0)
        producer.state_snapshot({"turns": turns + 1})
        producer.run_finished()

    def _recording(self, app: ASGIApp) -> ASGIApp:
        async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
            await app(scope, receive, send)

        return recorded


class Endless:
    """An agent that streams one text message piece by piece until it is stopped;
    ``stopped`` is set when its handler is cancelled (the client went away)."""

    def __init__(self, pause: float = 0.02) -> None:
        self.pause = pause
        self.stopped = threading.Event()
        self.app = agent_app(self.handler)

    async def handler(self, run_input: schema.RunAgentInput, producer: RunProducer) -> None:
        producer.run_started()
        writer = producer.text_message()
        try:
            while True:
                writer.content("tick ")
                await asyncio.sleep(self.pause)
        finally:
            self.stopped.set()


def stalling(after: list[dict[str, Any]]) -> ASGIApp:
    """SSE that sends ``after`` (wire events; their ids follow the run input) and then
    nothing, without ending the response."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await _read_body(receive)
        await _start(send, 200, "text/event-stream")
        for event in after:
            await send({"type": "http.response.body", "body": sse(event, body), "more_body": True})
        await _disconnected(receive)

    return app


def scripted(
    events: list[dict[str, Any]],
    *,
    status: int = 200,
    content_type: str = "text/event-stream",
    raw: bytes | None = None,
    trickle: float | None = None,
) -> ASGIApp:
    """An app answering with ``status``, ``content_type`` and either ``raw`` or the
    ``events`` as SSE (their ``threadId``/``runId`` taken from the request); with
    ``trickle``, an SSE comment every ``trickle`` seconds forever after the events."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await _read_body(receive)
        await _start(send, status, content_type)
        data = raw if raw is not None else b"".join(sse(event, body) for event in events)
        await send({"type": "http.response.body", "body": data, "more_body": trickle is not None})
        if trickle is not None:
            pinging = asyncio.ensure_future(_ping(send, trickle))
            await _disconnected(receive)
            pinging.cancel()

    return app


def sse(event: dict[str, Any], body: bytes) -> bytes:
    """One SSE frame of ``event``, with the request's ids where it names ``threadId`` and
    ``runId`` as ``"?"``."""
    import json

    request = json.loads(body)
    filled = {
        k: (request[k] if v == "?" and k in ("threadId", "runId") else v) for k, v in event.items()
    }
    return b"data: " + json.dumps(filled).encode() + b"\n\n"


async def _ping(send: Send, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        await send({"type": "http.response.body", "body": b": ping\n\n", "more_body": True})


async def _disconnected(receive: Receive) -> None:
    """Return once the client has gone."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def _start(send: Send, status: int, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})


RUN_STARTED = {"type": "RUN_STARTED", "threadId": "?", "runId": "?"}
RUN_FINISHED = {"type": "RUN_FINISHED", "threadId": "?", "runId": "?"}


@contextmanager
def raw_http(answer: bytes) -> Iterator[str]:
    """A one-connection-at-a-time TCP server that reads a request, writes ``answer``
    and closes the connection (a response cut off however ``answer`` cuts it)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(5)
                request = b""
                while b"\r\n\r\n" not in request:
                    request += connection.recv(65536)
                head, _, body = request.partition(b"\r\n\r\n")
                length = int(
                    next(
                        line.split(b":", 1)[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    )
                )
                while len(body) < length:
                    body += connection.recv(65536)
                connection.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/agent"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@contextmanager
def unaccepting() -> Iterator[str]:
    """A port whose listen backlog is full, so that a new connection never completes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        with suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield f"http://127.0.0.1:{port}/agent"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()

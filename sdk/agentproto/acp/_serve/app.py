"""An ACP agent served over HTTP and WebSocket: the ASGI application of :func:`acp_app`.

Theory of operation
-------------------
Each ACP connection (created by a ``POST`` of ``initialize``, or by a WebSocket upgrade)
is a :class:`RemoteConnection`: a fresh :class:`~agentproto.acp.Agent` from the app's
factory, served by an :class:`~agentproto.acp.AgentRunner` over two in-memory pipes, the
same code that serves it over stdio. What the client POSTs (or sends over the socket)
is written into the agent's pipe; what the agent writes is *pumped*: each message is
given the next cursor of the stream it belongs on (:func:`~.wire.route_of`: a session's
or the connection's; a WebSocket has one) and appended, cursor inside
(``_meta["acp/cursor"]``), to the event log (:mod:`agentproto.stores`; in memory by
default). Readers read the log: an SSE ``GET`` or the socket gets the frames after its
cursor, then the live tail, at its own pace; the log's retention bounds what a slow or
absent reader leaves behind, and the pump stops reading the agent (backpressure, through
the pipe) only while the log cannot take more.

Over HTTP the ``initialize`` answer is not logged: it is the ``200`` body of the POST
that sent it (with the connection id in :data:`~.wire.CONNECTION_ID`); over a WebSocket it
is the socket's first message, logged like the rest. Its result carries
``capabilities.transport.resumable`` (the log's retention) for a client to know it can
resume.

Resuming: a ``GET`` with ``Last-Event-ID`` (or a WebSocket whose first message is
:data:`~.wire.RESUME`) replays the frames after that cursor, then, on a session's stream of
a v2 connection, sends that session's current ``state_update`` (the last one the agent
sent, re-sent; ``idle`` when there was none), then goes on live. A cursor the log cannot
read after (malformed, another stream's, dropped by retention, a connection this server no
longer has) is refused with ``409`` (:data:`~.wire.RESUME_FAILED` on a socket), never with
a silent live stream: the client then rebuilds the session with ``session/resume``.

A stream dropped is not a connection closed: the agent goes on, its frames are logged,
and a new ``GET`` (or socket) takes the stream over. A connection ends with ``DELETE``, a
WebSocket closed cleanly by the client, the agent's end, or ``idle_timeout`` seconds with
no stream open and no message from the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Final, Literal

from agentproto._core import asgi
from agentproto._core.errors import (
    AgentProtoError,
    CursorError,
    CursorExpiredError,
    DecodeError,
    UsageError,
)
from agentproto._core.json.codec import dumps, loads
from agentproto._core.store.log import EventLog, cursor_of
from agentproto._core.store.memory import MemoryEventLog
from agentproto.acp._agent.agent import Agent
from agentproto.acp._agent.runner import AgentRunner
from agentproto.acp._io.transports import MemoryPipe
from agentproto.acp._remote.wire import (
    CANCEL_REQUEST,
    CONNECTION_ID,
    LAST_EVENT_ID,
    RESUME,
    RESUME_FAILED,
    SESSION_ID,
    SESSION_METHODS,
    UNKNOWN_CONNECTION,
    route_of,
    session_of,
    with_cursor,
)

__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_KEEPALIVE", "RemoteConnection", "acp_app"]

DEFAULT_KEEPALIVE: Final = 15.0
"""Seconds of silence on an SSE stream before a ``:`` comment keeps it alive."""
DEFAULT_IDLE_TIMEOUT: Final = 300.0
"""Seconds a connection is kept with no stream open and nothing from its client."""
_READ_WAIT: Final = 1.0
_BATCH: Final = 256
_MAX_ID: Final = 1024
_logger = logging.getLogger("agentproto.acp")

Transport = Literal["http", "websocket"]


def _key(ident: Any) -> str:
    """A JSON-RPC id as a dict key (``1`` and ``"1"`` are different ids)."""
    return dumps(ident).decode()


class RemoteConnection:
    """One ACP connection served remotely: its agent, its streams, its routes.

    Args:
        server: the app serving it.
        connection_id: its id (:data:`~.wire.CONNECTION_ID`).
        agent: the agent serving it.
        transport: ``"http"`` (a stream per session and one for the connection) or
            ``"websocket"`` (one stream).
    """

    def __init__(
        self, server: _Server, connection_id: str, agent: Agent, transport: Transport
    ) -> None:
        self.id = connection_id
        self.transport = transport
        self.log = server.log
        self._server = server
        self._inbound = MemoryPipe()
        self._outbound = MemoryPipe()
        self.runner = AgentRunner(agent, self._inbound, self._outbound, **server.runner_options)
        self._routes: dict[str, str | None] = {}  # the client's requests: whose stream answers
        self._asked: dict[str, str | None] = {}  # the agent's requests: the stream they rode
        self._states: dict[str, Any] = {}  # each session's last state_update, as sent
        self._positions: dict[str, int] = {}  # each stream's last position
        self._initialize: tuple[str, asyncio.Future[dict[str, Any]]] | None = None
        self._readers: dict[str, asyncio.Event] = {}  # each stream's reader: set to stop it
        self.touched = time.monotonic()
        self.closed = asyncio.Event()
        self._serving = asyncio.ensure_future(self.runner.serve())
        self._pump = asyncio.ensure_future(self._pump_out())

    # ---- streams -------------------------------------------------------------------------

    def stream(self, session: str | None) -> str:
        """The log stream of ``session``'s messages (``None``: the connection's)."""
        if self.transport == "websocket" or session is None:
            return f"acp:{self.id}"
        return f"acp:{self.id}:{session}"

    async def open_stream(self, stream: str) -> None:
        """Make sure ``stream`` exists (a reader may come before its first message).

        Raises:
            StoreError: the log failed.
        """
        with contextlib.suppress(UsageError):  # ended: the reader reads its end
            await self.log.append(stream, [])

    def attach(self, stream: str) -> asyncio.Event:
        """A reader takes ``stream`` over (the one before it is told to stop)."""
        previous = self._readers.get(stream)
        if previous is not None:
            previous.set()
        stop = self._readers[stream] = asyncio.Event()
        self.touched = time.monotonic()
        return stop

    def detach(self, stream: str, stop: asyncio.Event) -> None:
        """The reader of ``stream`` holding ``stop`` is gone."""
        if self._readers.get(stream) is stop:
            del self._readers[stream]
        self.touched = time.monotonic()

    @property
    def attached(self) -> bool:
        """Whether a stream is being read."""
        return bool(self._readers)

    def state_of(self, session: str) -> bytes | None:
        """What a resumed reader of ``session``'s stream is told of its state: the last
        ``state_update`` the agent sent, re-sent (``idle`` before any); ``None`` on a v1
        connection, which has no ``state_update``."""
        if self.runner.version == 1:
            return None
        update = self._states.get(session, {"sessionUpdate": "state_update", "state": "idle"})
        notification = {"sessionId": session, "update": update}
        return dumps({"jsonrpc": "2.0", "method": "session/update", "params": notification})

    def states(self) -> list[bytes]:
        """:meth:`state_of` every session of the connection (a resumed WebSocket's)."""
        found = (self.state_of(session) for session in sorted(self.runner.sessions))
        return [state for state in found if state is not None]

    # ---- the client's messages -----------------------------------------------------------

    async def initialize(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Hand the agent the ``initialize`` request. Over HTTP, return its answer (the
        POST's body, not logged); over a WebSocket its answer is logged like any other
        message (a socket that breaks before it gets it resumes it), and ``None`` is
        returned. Either way the result's capabilities say the transport resumes."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._initialize = (_key(message.get("id")), future)
        if self.transport == "websocket":
            await self.open_stream(self.stream(None))
            await self.write(message, None)
            return None
        await self.write(message, None)
        return await future

    def _resumable(self, answer: dict[str, Any]) -> None:
        """Say in the ``initialize`` answer's capabilities that the transport resumes."""
        result = answer.get("result")
        if isinstance(result, dict):
            field = "agentCapabilities" if "agentCapabilities" in result else "capabilities"
            capabilities = result.setdefault(field, {})
            if isinstance(capabilities, dict):
                capabilities["transport"] = {"resumable": self._server.retention()}

    async def write(self, message: dict[str, Any], session: str | None) -> None:
        """Hand the agent one message of the client (POSTed with ``session``)."""
        self.touched = time.monotonic()
        if "method" in message and "id" in message:
            self._routes[_key(message["id"])] = route_of(message, session)
        elif "method" not in message and "id" in message:
            self._asked.pop(_key(message["id"]), None)
        self._inbound.write(dumps(message) + b"\n")
        await self._inbound.drain()

    def asked_on(self, message: dict[str, Any]) -> str | Literal[False] | None:
        """The session stream the agent's request ``message`` answers rode
        (``None``: the connection's; ``False``: no such request is pending)."""
        return self._asked.get(_key(message.get("id")), False)

    # ---- the agent's messages ------------------------------------------------------------

    async def _pump_out(self) -> None:
        pending = b""
        try:
            while chunk := await self._outbound.read(64 * 1024):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        await self._route(loads(line))
        except AgentProtoError:
            _logger.exception("connection %s: the agent's output could not be logged", self.id)
        finally:
            await self._end_streams()
            self.closed.set()
            self._server.forget(self)

    async def _route(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        initialize = self._initialize
        if initialize is not None and "method" not in message:
            ident, future = initialize
            if _key(message.get("id")) == ident:
                self._initialize = None
                self._resumable(message)
                if self.transport == "http":
                    future.set_result(message)
                    return
        if "method" in message:
            session = session_of(message)
            params = message.get("params")
            update = params.get("update") if isinstance(params, dict) else None
            is_state = isinstance(update, dict) and update.get("sessionUpdate") == "state_update"
            if session is not None and is_state:
                self._states[session] = update
            if message["method"] == CANCEL_REQUEST and isinstance(params, dict):
                # on the stream of the request it withdraws, so that it never overtakes it
                session = self._asked.get(_key(params.get("requestId")), session)
            if "id" in message:
                self._asked[_key(message["id"])] = session
        else:
            session = self._routes.pop(_key(message.get("id")), None)
        stream = self.stream(session)
        position = self._positions.get(stream, 0) + 1
        self._positions[stream] = position
        await self.log.append(stream, [with_cursor(message, cursor_of(stream, position))])

    async def _end_streams(self) -> None:
        for stream in self._positions.keys() | {self.stream(None)}:
            with contextlib.suppress(AgentProtoError):
                await self.log.append(stream, [], end=True)
        for stop in list(self._readers.values()):
            stop.set()

    # ---- the end -------------------------------------------------------------------------

    async def close(self) -> None:
        """End the connection: the agent's side is closed, its streams end."""
        self._inbound.close()
        with contextlib.suppress(Exception):
            await self.runner.close()
        self._outbound.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._pump), 5.0)
        if not self._pump.done():
            self._pump.cancel()
        self._serving.cancel()
        with contextlib.suppress(BaseException):
            await self._serving
        self.closed.set()
        self._server.forget(self)


class _Server:
    """The state behind :func:`acp_app`: its options and its connections."""

    def __init__(
        self,
        agent: Callable[[], Agent],
        log: EventLog,
        reading: asgi.BodyLimits,
        keepalive: float,
        idle_timeout: float | None,
        max_connections: int,
        runner_options: dict[str, Any],
    ) -> None:
        self.agent = agent
        self.log = log
        self.reading = reading
        self.keepalive = keepalive
        self.idle_timeout = idle_timeout
        self.runner_options = runner_options
        self.connections: dict[str, RemoteConnection] = {}
        self.max_connections = max_connections
        self._janitor: asyncio.Task[None] | None = None

    @property
    def full(self) -> bool:
        """Whether a new connection would be one too many."""
        return len(self.connections) >= self.max_connections

    def retention(self) -> dict[str, int | float]:
        """What the log keeps, as ``transport.resumable`` says it."""
        kept = self.log.retention
        figures = {"retentionMessages": kept.max_frames, "retentionSeconds": kept.max_age}
        return {name: value for name, value in figures.items() if value is not None}

    def open(self, transport: Transport, ident: str | None = None) -> RemoteConnection:
        """A new connection (its id ``ident``, default a new one), its agent started."""
        if self._janitor is None and self.idle_timeout is not None:
            self._janitor = asyncio.ensure_future(self._sweep(self.idle_timeout))
        ident = ident if ident is not None else str(uuid.uuid4())
        connection = RemoteConnection(self, ident, self.agent(), transport)
        self.connections[connection.id] = connection
        return connection

    def forget(self, connection: RemoteConnection) -> None:
        """``connection`` is over."""
        if self.connections.get(connection.id) is connection:
            del self.connections[connection.id]

    async def _sweep(self, idle_timeout: float) -> None:
        while True:
            await asyncio.sleep(min(idle_timeout, 30.0) / 2)
            horizon = time.monotonic() - idle_timeout
            for connection in list(self.connections.values()):
                if not connection.attached and connection.touched < horizon:
                    _logger.info("connection %s idle: closed", connection.id)
                    await connection.close()

    async def aclose(self) -> None:
        """Close every connection (the server shuts down)."""
        if self._janitor is not None:
            self._janitor.cancel()
        for connection in list(self.connections.values()):
            await connection.close()

    # ---- HTTP ----------------------------------------------------------------------------

    async def __call__(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind != "http":
            raise UsageError("serve.scope", f"acp_app answers HTTP and WebSocket, not {kind!r}")
        else:
            method = scope.get("method")
            if method == "POST":
                await self._post(scope, receive, send)
            elif method == "GET":
                await self._get(scope, receive, send)
            elif method == "DELETE":
                await self._delete(scope, send)
            else:
                await _refuse(send, 405, "method-not-allowed", "POST, GET or DELETE", allow=True)

    async def _lifespan(self, receive: asgi.Receive, send: asgi.Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _connection(self, scope: asgi.Scope) -> RemoteConnection | tuple[int, str, str]:
        ident = asgi.header(scope, CONNECTION_ID.encode())
        if ident is None:
            return 400, "missing-connection-id", f"no {CONNECTION_ID} header"
        connection = self.connections.get(ident)
        if connection is None:
            return 404, UNKNOWN_CONNECTION, f"no connection {ident[:80]!r} here"
        return connection

    async def _post(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        try:
            asgi.check_content_type(scope)
            body = await self.reading.read(scope, receive)
        except asgi.Refusal as refusal:
            await refusal.answer(send)
            return
        if body is None:
            return
        try:
            message = loads(body)
        except DecodeError as exc:
            await _refuse(send, 400, "invalid-json", str(exc))
            return
        if isinstance(message, list):
            error = {"code": -32600, "message": "JSON-RPC batches are not supported over HTTP"}
            await asgi.send_json(send, 501, {"jsonrpc": "2.0", "id": None, "error": error})
            return
        if not isinstance(message, dict):
            await _refuse(send, 400, "invalid-message", "a JSON-RPC message is an object")
            return
        session = asgi.header(scope, SESSION_ID.encode())
        if (
            message.get("method") == "initialize"
            and asgi.header(scope, CONNECTION_ID.encode()) is None
        ):
            await self._initialize(message, send)
            return
        found = self._connection(scope)
        if not isinstance(found, RemoteConnection):
            await _refuse(send, *found)
            return
        problem = _session_problem(message, session, found)
        if problem is not None:
            await _refuse(send, 400, *problem)
            return
        await found.write(message, session)
        await _accepted(send)

    async def _initialize(self, message: dict[str, Any], send: asgi.Send) -> None:
        if message.get("id") is None:
            await _refuse(send, 400, "invalid-message", "initialize is a request: it needs an id")
            return
        if self.full:
            detail = f"{self.max_connections} connections are open (acp_app(max_connections=...))"
            await _refuse(send, 503, "too-many-connections", detail)
            return
        connection = self.open("http")
        try:
            answer = await asyncio.wait_for(connection.initialize(message), 60.0)
            assert answer is not None  # over HTTP, the POST's body
        except (TimeoutError, AgentProtoError):
            await connection.close()
            error = {"code": -32603, "message": "initialize failed"}
            await asgi.send_json(send, 500, {"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        await asgi.send_json(send, 200, answer, {CONNECTION_ID: connection.id})

    async def _get(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        accept = asgi.header(scope, b"accept") or ""
        if "text/event-stream" not in accept:
            await _refuse(send, 406, "not-acceptable", "a stream is text/event-stream")
            return
        found = self._connection(scope)
        cursor = asgi.header(scope, LAST_EVENT_ID.encode())
        if not isinstance(found, RemoteConnection):
            status, error, detail = found
            # a resume of a connection this server no longer has: the RFD's refusal
            await _refuse(send, 409 if status == 404 and cursor else status, error, detail)
            return
        session = asgi.header(scope, SESSION_ID.encode())
        if session is not None and len(session) > _MAX_ID:
            await _refuse(send, 400, "invalid-session-id", f"over {_MAX_ID} characters")
            return
        stream = found.stream(session)
        try:
            if cursor is None:  # a fresh reader: from what the log still holds
                await found.open_stream(stream)
                start = await _held(self.log, stream)
            else:
                await self.log.read(stream, cursor, limit=1)
                start = cursor
        except CursorError as exc:
            await asgi.send_json(send, 409, _refused(exc))
            return
        except AgentProtoError:
            await _refuse(send, 503, "store-unavailable", "the event log failed")
            return
        state = None if cursor is None or session is None else found.state_of(session)
        headers = {"content-type": "text/event-stream", "cache-control": "no-store"}
        await send(
            {"type": "http.response.start", "status": 200, "headers": asgi.raw_headers(headers)}
        )
        frames = _sse(self._entries(found, stream, start, state), self.keepalive)
        await _stream(frames, receive, send)

    async def _entries(
        self, connection: RemoteConnection, stream: str, cursor: str | None, state: bytes | None
    ) -> AsyncIterator[tuple[str | None, bytes]]:
        """``stream``'s messages after ``cursor`` (then, once caught up, ``state``), to its
        end or until another reader takes it over; ``(None, b"")`` marks a quiet wait."""
        stop = connection.attach(stream)
        try:
            while not stop.is_set():
                try:
                    page = await self.log.read(stream, cursor, limit=_BATCH, wait=_READ_WAIT)
                except AgentProtoError:
                    _logger.exception("connection %s: reading %s failed", connection.id, stream)
                    return
                for entry in page.entries:
                    yield entry.cursor, entry.data
                cursor = page.cursor
                if page.ended:
                    return
                if len(page.entries) < _BATCH and state is not None:
                    yield None, state  # caught up after a resume: the session's state
                    state = None
                if not page.entries:
                    yield None, b""
        finally:
            connection.detach(stream, stop)

    async def _delete(self, scope: asgi.Scope, send: asgi.Send) -> None:
        found = self._connection(scope)
        if not isinstance(found, RemoteConnection):
            await _refuse(send, *found)
            return
        await found.close()
        await _accepted(send)

    # ---- WebSocket -----------------------------------------------------------------------

    async def _websocket(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        ident = str(uuid.uuid4())
        accept = {"type": "websocket.accept", "headers": [(CONNECTION_ID.encode(), ident.encode())]}
        await send(accept)
        first = await _next_text(receive)
        if first is None:
            return
        if len(first) > self.reading.max_bytes:
            await _ws_close(send, 1009, "the message is over max_body_bytes")
            return
        try:
            message = loads(first)
        except DecodeError:
            await _ws_close(send, 1002, "the first message is not JSON")
            return
        if not isinstance(message, dict):
            await _ws_close(send, 1002, "the first message is not a JSON-RPC message")
            return
        if message.get("method") == RESUME:
            await self._ws_resume(message, receive, send)
            return
        if message.get("method") != "initialize" or message.get("id") is None:
            await _ws_close(send, 1002, "the first message must be initialize")
            return
        if self.full:
            await _ws_close(send, 1013, "too many connections")
            return
        connection = self.open("websocket", ident)
        await connection.initialize(message)
        await self._ws_serve(connection, None, None, receive, send)

    async def _ws_resume(
        self, message: dict[str, Any], receive: asgi.Receive, send: asgi.Send
    ) -> None:
        given = message.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        connection = self.connections.get(str(params.get("connectionId")))
        cursor = params.get("cursor")
        reason = None
        if connection is None or connection.transport != "websocket":
            reason = UNKNOWN_CONNECTION
        elif cursor is not None and not isinstance(cursor, str):
            reason = "invalid-cursor"
        else:
            try:
                await self.log.read(connection.stream(None), cursor, limit=1)
            except CursorError as exc:
                reason = _refused(exc)["error"]
            except AgentProtoError:
                reason = "store-unavailable"
        if reason is not None or connection is None:
            failed = {"jsonrpc": "2.0", "method": RESUME_FAILED, "params": {"reason": reason}}
            await send({"type": "websocket.send", "text": dumps(failed).decode()})
            await _ws_close(send, 1008, "resume refused")
            return
        await self._ws_serve(connection, cursor, connection.states(), receive, send)

    async def _ws_serve(
        self,
        connection: RemoteConnection,
        cursor: str | None,
        states: list[bytes] | None,
        receive: asgi.Receive,
        send: asgi.Send,
    ) -> None:
        stream = connection.stream(None)
        await connection.open_stream(stream)
        clean = False

        async def sending() -> None:
            pending = states
            async for _, data in self._entries(connection, stream, cursor, None):
                if data:
                    await send({"type": "websocket.send", "text": data.decode()})
                elif pending:
                    for state in pending:
                        await send({"type": "websocket.send", "text": state.decode()})
                    pending = None
            await _ws_close(send, 1000, "the connection ended")

        async def receiving() -> None:
            nonlocal clean
            while True:
                event = await receive()
                if event["type"] == "websocket.disconnect":
                    clean = event.get("code", 1005) in (1000, 1001, 1005)
                    return
                text = event.get("text")
                if text is None:
                    continue  # binary frames are not ACP
                if len(text) > self.reading.max_bytes:
                    await _ws_close(send, 1009, "the message is over max_body_bytes")
                    return
                try:
                    message = loads(text)
                except DecodeError:
                    continue
                if isinstance(message, dict):
                    await connection.write(message, None)

        await _race(sending(), receiving())
        if clean:
            await connection.close()


def _session_problem(
    message: dict[str, Any], session: str | None, connection: RemoteConnection
) -> tuple[str, str] | None:
    """Why a POST names its session wrongly (``None``: it does not)."""
    if session is not None and len(session) > _MAX_ID:
        return "invalid-session-id", f"{SESSION_ID} is over {_MAX_ID} characters"
    if "method" not in message:  # an answer: to a request that rode a session's stream?
        rode = connection.asked_on(message)
        if rode and session is not None and session != rode:
            return "mismatched-session-id", f"the request answered rode {rode!r}'s stream"
        return None
    named = session_of(message)
    if session is None and named is None and message.get("method") in SESSION_METHODS:
        return "missing-session-id", f"a session's message needs {SESSION_ID} (or a sessionId)"
    if session is not None and named is not None and session != named:
        return "mismatched-session-id", f"{SESSION_ID} is not the params' sessionId"
    return None


async def _held(log: EventLog, stream: str) -> str | None:
    """The cursor to read every message ``stream`` still holds after (``None``: all of it).

    Raises:
        AgentProtoError: the log failed.
    """
    try:
        await log.read(stream, None, limit=1)
    except CursorExpiredError as dropped:  # retention dropped its first messages
        return dropped.held_after
    return None


async def _accepted(send: asgi.Send) -> None:
    """``202 Accepted``, no body."""
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _refused(error: CursorError) -> dict[str, Any]:
    return {"error": "resume-refused", "code": error.code, "detail": str(error)}


async def _refuse(
    send: asgi.Send, status: int, error: str, detail: str, *, allow: bool = False
) -> None:
    headers = {"allow": "POST, GET, DELETE"} if allow else None
    await asgi.send_json(send, status, {"error": error, "detail": detail}, headers)


async def _sse(
    entries: AsyncIterator[tuple[str | None, bytes]], keepalive: float
) -> AsyncIterator[bytes]:
    """SSE frames of ``entries`` (``id:`` the cursor), a ``:`` comment after ``keepalive``
    seconds of quiet waits."""
    quiet_since = time.monotonic()
    async for cursor, data in entries:
        if data:
            quiet_since = time.monotonic()
            if cursor is None:
                yield b"data: %b\n\n" % data
            else:
                yield b"id: %b\ndata: %b\n\n" % (cursor.encode("ascii"), data)
        elif time.monotonic() - quiet_since >= keepalive:
            quiet_since = time.monotonic()
            yield b":\n\n"


async def _stream(frames: AsyncIterator[bytes], receive: asgi.Receive, send: asgi.Send) -> None:
    """asgi.Send ``frames`` as the body until they end or the client goes."""

    async def sending() -> None:
        async for frame in frames:
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def watching() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    await _race(sending(), watching())


async def _race(*work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` until the first of it is over; the rest is cancelled (and awaited)."""
    tasks = [asyncio.ensure_future(item) for item in work]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _next_text(receive: asgi.Receive) -> str | None:
    while True:
        event = await receive()
        if event["type"] == "websocket.disconnect":
            return None
        text = event.get("text")
        if text is not None:
            return str(text)


async def _ws_close(send: asgi.Send, code: int, reason: str) -> None:
    with contextlib.suppress(Exception):
        await send({"type": "websocket.close", "code": code, "reason": reason})


def acp_app(
    agent: Callable[[], Agent],
    *,
    log: EventLog | None = None,
    keepalive: float = DEFAULT_KEEPALIVE,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    max_body_bytes: int = 16 * 1024 * 1024,
    body_timeout: float | None = 30.0,
    max_connections: int = 1000,
    **runner_options: Any,
) -> asgi.ASGIApp:
    """An ASGI application serving an ACP agent over HTTP and WebSocket, on one path.

    Each connection gets its own agent (``agent()``), served exactly as over stdio
    (:class:`~agentproto.acp.AgentRunner`, with ``runner_options``). The endpoint speaks
    the ACP "Streamable HTTP & WebSocket" transport as the official TypeScript SDK does
    (``POST`` a message: ``initialize`` answers ``200`` with the connection id in
    ``Acp-Connection-Id``, the rest ``202``; ``GET`` a stream, ``Acp-Session-Id`` for a
    session's; ``DELETE`` to end; a WebSocket upgrade on the same path), with the
    durable-resumable RFD's cursors: every message carries one (SSE ``id:`` and
    ``_meta["acp/cursor"]``), and a stream reopened after one replays what followed it
    (see :mod:`agentproto.acp._serve.app`).

    Args:
        agent: makes the agent of each connection.
        log: where the streams' messages are kept for readers and resumption
            (:mod:`agentproto.stores`); default: a :class:`MemoryEventLog`.
        keepalive: seconds of quiet before an SSE stream gets a ``:`` comment.
        idle_timeout: seconds a connection lives with no stream open and nothing
            from its client; ``None``: until ``DELETE`` or its agent's end.
        max_body_bytes: the largest POST body (413 over it).
        body_timeout: seconds a POST body may take to arrive (408 after).
        max_connections: the most connections (each with its agent) at once; one
            more is refused (503 ``too-many-connections``; a WebSocket: close 1013).
        **runner_options: for each connection's :class:`~agentproto.acp.AgentRunner`.

    Returns:
        The ASGI 3 application.
    """
    if keepalive <= 0 or (idle_timeout is not None and idle_timeout <= 0):
        raise UsageError("serve.limit", "keepalive and idle_timeout must be positive")
    if isinstance(max_connections, bool) or not isinstance(max_connections, int):
        raise UsageError("serve.limit", "max_connections must be a positive integer")
    if max_connections < 1:
        raise UsageError("serve.limit", "max_connections must be a positive integer")
    reading = asgi.BodyLimits(max_body_bytes, body_timeout, "acp_app")
    return _Server(
        agent,
        log if log is not None else MemoryEventLog(),
        reading,
        keepalive,
        idle_timeout,
        max_connections,
        runner_options,
    )

"""The byte streams through which an :class:`~agentproto.acp.AcpClient` talks to a remote
ACP agent, over HTTP (:class:`HttpStreams`) or a WebSocket (:class:`WebSocketStreams`).

Theory of operation
-------------------
A :class:`~agentproto.acp.Connection` reads and writes JSON lines; these classes are its
reader and its writer at once, and turn the lines into the transport's requests
(:mod:`agentproto.acp._remote.wire`). Each line written is one message sent, in order
(one sender task): over HTTP a ``POST`` (the first, ``initialize``, gets the connection
id; a session's message names the session, and the session's stream is opened first, so
that nothing it answers is missed), over a WebSocket a text frame. Each message received
has its cursor taken out (the layers above never see ``_meta["acp/cursor"]``) and
remembered per stream, and is given to the reader as a line.

A stream that breaks or goes quiet for ``5 * keepalive`` seconds (the RFD's dead peer) is
reopened after the last cursor seen (``Last-Event-ID``; a WebSocket's first message
``stream/resume``), with the bounded, jittered backoff of a
:class:`~agentproto._core.reconnect.Reconnect`. A refused resume (``409``) is reported to
``on_refused(session)`` (the client then rebuilds the session with ``session/resume``),
each request whose answer was owed on that stream is answered with an error
(:data:`ANSWER_LOST`: it may have been dropped), and the stream is reopened from its live
end. When the connection itself is gone (``404``, a
refused WebSocket resume, attempts exhausted) the reader ends: the connection closes as
closed by the peer. Closing the writer ends the connection (``DELETE``; a clean close).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import httpx

from agentproto._core.errors import AgentProtoError, DecodeError
from agentproto._core.json.codec import dumps, loads
from agentproto._core.optional import missing
from agentproto._core.reconnect import DEFAULT_RECONNECT, Reconnect
from agentproto._core.sse import SSEDecoder
from agentproto.acp._io.transports import MemoryPipe
from agentproto.acp._remote.wire import (
    CONNECTION_ID,
    LAST_EVENT_ID,
    RESUME,
    RESUME_FAILED,
    SESSION_ID,
    route_of,
    session_of,
    take_cursor,
)

__all__ = ["HttpStreams", "RemoteStreams", "WebSocketStreams"]

ANSWER_LOST: Final = "the answer was lost: the agent could not resume the stream it rode"
"""The message of the error a request gets when its answer's stream could not be resumed."""
_DEAD_AFTER: Final = 5
"""Keep-alive intervals of silence after which a stream is taken for dead (the RFD's)."""
_logger = logging.getLogger("agentproto.acp")

OnRefused = Callable[[str | None], Awaitable[None]]


def _key(ident: Any) -> str:
    return dumps(ident).decode()


class RemoteStreams:
    """What both transports share: the reader side (lines in), the writer side (lines
    out, one sender task), the cursors and the end."""

    def __init__(self, reconnect: Reconnect | None) -> None:
        self._incoming = MemoryPipe(high_water=1 << 62)  # bounded by the server's streams
        self._outgoing: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._partial = b""
        self._sender: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False
        self._reconnect = reconnect if reconnect is not None else Reconnect(attempts=0)
        self.cursors: dict[str | None, str] = {}  # per stream (a session, None: the connection)
        self.on_refused: OnRefused | None = None

    # ---- the reader side -----------------------------------------------------------------

    async def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes of the messages received (``b""``: the connection is over)."""
        return await self._incoming.read(n)

    def _receive(self, message: Any, stream: str | None, cursor: str | None) -> None:
        """A message arrived on ``stream``; its cursor (given, or in it) is remembered."""
        inside = take_cursor(message)
        cursor = cursor or inside
        if cursor is not None:
            self.cursors[stream] = cursor
        with contextlib.suppress(BrokenPipeError):  # over: what comes late is dropped
            self._incoming.write(dumps(message) + b"\n")

    def _end(self) -> None:
        self._incoming.close()

    # ---- the writer side -----------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Queue the complete lines of ``data`` for sending, in order."""
        if self._closing:
            raise BrokenPipeError("the connection is closed")
        self._partial += data
        *lines, self._partial = self._partial.split(b"\n")
        for line in lines:
            if line.strip():
                self._outgoing.put_nowait(line)
        if self._sender is None:
            self._sender = asyncio.ensure_future(self._send_all())

    async def drain(self) -> None:
        """Nothing to wait for: lines are sent in order by one task."""

    def close(self) -> None:
        """End the connection (the rest of what was written is sent first)."""
        if not self._closing:
            self._closing = True
            self._outgoing.put_nowait(None)
            if self._sender is None:
                self._sender = asyncio.ensure_future(self._send_all())

    async def wait_closed(self) -> None:
        """Wait until the connection is ended and every task is over."""
        if self._sender is not None:
            with contextlib.suppress(BaseException):
                await self._sender
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._end()

    async def _send_all(self) -> None:
        try:
            while (line := await self._outgoing.get()) is not None:
                try:
                    message = loads(line)
                except DecodeError:
                    continue
                if not isinstance(message, dict):  # a batch: the transport carries none
                    for member in message if isinstance(message, list) else ():
                        self._failed(member, "the remote transport carries no JSON-RPC batch")
                    continue
                await self._send(message, line)
        except Exception:
            _logger.exception("the remote connection failed")
            self._end()
        finally:
            with contextlib.suppress(Exception):
                await self._finish()

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, message: Any, line: bytes) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def _finish(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _failed(self, message: Any, detail: str, data: Any = None) -> None:
        """A request the transport could not deliver gets an error answer (the
        connection's caller learns it, never waits forever)."""
        if isinstance(message, dict) and "method" in message and "id" in message:
            error = {"code": -32603, "message": f"the request was not delivered: {detail}"}
            if data is not None:
                error["data"] = data
            self._receive({"jsonrpc": "2.0", "id": message["id"], "error": error}, None, None)
        else:
            _logger.warning("a message to the agent was not delivered: %s", detail)


class HttpStreams(RemoteStreams):
    """An ACP connection over the Streamable HTTP transport (see the module notes).

    Args:
        url: the agent's endpoint.
        headers: sent with every request (authorization, ...).
        client: the ``httpx.AsyncClient`` to use (default: one of its own, with
            cookies kept for the connection, as the RFD requires).
        keepalive: the server's keep-alive interval; a stream silent for five of
            them is taken for dead and reopened.
        reconnect: how a broken stream is reopened (``None``: never).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        keepalive: float = 15.0,
        reconnect: Reconnect | None = DEFAULT_RECONNECT,
    ) -> None:
        super().__init__(reconnect)
        self.url = url
        self._headers = dict(headers or {})
        self._owns_client = client is None
        timeout = httpx.Timeout(30.0, read=keepalive * _DEAD_AFTER)
        self._client = client if client is not None else httpx.AsyncClient(timeout=timeout)
        self.connection_id: str | None = None
        self._streams: dict[str | None, asyncio.Event] = {}  # each stream: set once open
        self._origin: dict[str, str | None] = {}  # the agent's requests: their stream
        self._awaiting: dict[str, tuple[str | None, Any]] = {}  # ours: (answer's stream, id)

    def _request_headers(self, session: str | None) -> dict[str, str]:
        found = {**self._headers, "content-type": "application/json"}
        if self.connection_id is not None:
            found[CONNECTION_ID] = self.connection_id
        if session is not None:
            found[SESSION_ID] = session
        return found

    async def _send(self, message: Any, line: bytes) -> None:
        if self.connection_id is None:
            await self._initialize(message, line)
            return
        if "method" in message:
            session = session_of(message)
            if "id" in message:
                self._awaiting[_key(message["id"])] = (route_of(message, session), message["id"])
        else:
            session = self._origin.pop(_key(message.get("id")), None)
        if session is not None:
            await self._open(session)
        response = await self._post(message, line, session)
        if response is None:
            return
        if response.status_code == 404:  # the connection is gone
            self._failed(message, "the agent no longer has this connection")
            self._end()
        elif not response.is_success:
            self._failed(message, f"{response.status_code}", _body(response))

    async def _post(self, message: Any, line: bytes, session: str | None) -> httpx.Response | None:
        """POST one message (``None``: it could not be sent; its request is answered so)."""
        try:
            return await self._client.post(
                self.url, content=line, headers=self._request_headers(session)
            )
        except httpx.HTTPError as exc:
            self._failed(message, f"{type(exc).__name__}: {exc}")
            return None

    async def _initialize(self, message: Any, line: bytes) -> None:
        response = await self._post(message, line, None)
        if response is None:
            return
        ident = response.headers.get(CONNECTION_ID)
        try:
            answer = loads(response.content)
        except DecodeError:
            answer = None
        if not isinstance(answer, dict) or ident is None:
            self._failed(message, f"initialize answered {response.status_code}", _body(response))
            return
        self.connection_id = ident
        self._receive(answer, None, None)
        await self._open(None, wait=False)

    async def _open(self, session: str | None, *, wait: bool = True) -> None:
        """Open ``session``'s stream (``None``: the connection's) unless it is; with
        ``wait``, until the server has answered its ``GET``."""
        opened = self._streams.get(session)
        if opened is None:
            opened = self._streams[session] = asyncio.Event()
            self._spawn(self._listen(session, opened))
        if wait:
            await opened.wait()

    async def _listen(self, session: str | None, opened: asyncio.Event) -> None:
        failures = 0
        while not self._closing:
            progressed = False
            try:
                progressed = await self._read_stream(session, opened)
            except httpx.HTTPError as exc:
                _logger.info("the stream of %s broke: %s", session or "the connection", exc)
            except _Gone:
                self._end()
                return
            if self._closing:
                return
            failures = 0 if progressed else failures + 1
            if failures > self._reconnect.attempts:
                _logger.warning(
                    "the stream of %s could not be reopened", session or "the connection"
                )
                self._end()
                return
            await asyncio.sleep(self._reconnect.wait(max(failures, 1)))

    async def _read_stream(self, session: str | None, opened: asyncio.Event) -> bool:
        """Read one response of ``session``'s stream; whether it brought anything."""
        headers = {**self._request_headers(session), "accept": "text/event-stream"}
        headers.pop("content-type")
        cursor = self.cursors.get(session)
        if cursor is not None:
            headers[LAST_EVENT_ID] = cursor
        progressed = False
        async with self._client.stream("GET", self.url, headers=headers) as response:
            if response.status_code == 409:  # the cursor is refused: rebuild, read on live
                self.cursors.pop(session, None)
                opened.set()
                self._lost_answers(session)
                if self.on_refused is not None:
                    self._spawn(self.on_refused(session))
                return True
            if response.status_code == 404:
                opened.set()
                raise _Gone
            if not response.is_success:
                return False
            opened.set()
            decoder = SSEDecoder(strict_end=False)
            async for chunk in response.aiter_raw():
                for event in decoder.feed(chunk):
                    if not event.data:
                        continue
                    try:
                        message = loads(event.data)
                    except DecodeError:
                        _logger.warning("a stream event is not JSON; skipped")
                        continue
                    self._arrived(message, session, event.id)
                    progressed = True
        return progressed

    def _lost_answers(self, stream: str | None) -> None:
        """The answers ``stream`` owed may be among what could not be replayed: each of
        those requests is answered with an error rather than waiting forever."""
        for key, (route, ident) in list(self._awaiting.items()):
            if route == stream:
                del self._awaiting[key]
                error = {"code": -32603, "message": ANSWER_LOST}
                self._receive({"jsonrpc": "2.0", "id": ident, "error": error}, stream, None)

    def _arrived(self, message: Any, stream: str | None, cursor: str | None) -> None:
        if isinstance(message, dict):
            if "method" not in message and "id" in message:
                self._awaiting.pop(_key(message["id"]), None)
            if "method" in message and "id" in message:
                self._origin[_key(message["id"])] = stream
            result = message.get("result")
            created = result.get("sessionId") if isinstance(result, dict) else None
            if isinstance(created, str) and created not in self._streams:
                self._spawn(self._open(created, wait=False))
        self._receive(message, stream, cursor)

    async def _finish(self) -> None:
        if self.connection_id is not None:
            with contextlib.suppress(httpx.HTTPError):
                await self._client.delete(self.url, headers=self._request_headers(None))
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._owns_client:
            await self._client.aclose()
        self._end()


class WebSocketStreams(RemoteStreams):
    """An ACP connection over a WebSocket (see the module notes).

    Args:
        url: the agent's endpoint (``ws://`` or ``wss://``).
        headers: sent with the upgrade.
        reconnect: how a broken socket is reopened and resumed (``None``: never).
        ping_interval: seconds between the client's pings; a pong missing for as long
            takes the socket for dead.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        reconnect: Reconnect | None = DEFAULT_RECONNECT,
        ping_interval: float = 20.0,
    ) -> None:
        super().__init__(reconnect)
        try:
            from websockets.asyncio.client import connect
        except ModuleNotFoundError as exc:
            raise missing(
                exc, "ACP over a WebSocket", "pip install 'agentproto[websocket]'"
            ) from exc
        self._connect = connect
        self.url = url
        self._headers = dict(headers or {})
        self._ping = ping_interval
        self.connection_id: str | None = None
        self._socket: Any = None
        self._ready = asyncio.Event()

    async def _dial(self, first: str) -> None:
        """Open the socket and send ``first``; start reading it."""
        socket = await self._connect(
            self.url,
            additional_headers=self._headers,
            ping_interval=self._ping,
            ping_timeout=self._ping,
            max_size=None,
        )
        if self.connection_id is None and socket.response is not None:
            self.connection_id = socket.response.headers.get(CONNECTION_ID)
        await socket.send(first)
        self._socket = socket
        self._ready.set()
        self._spawn(self._read(socket))

    async def _send(self, message: Any, line: bytes) -> None:
        if self._socket is None and not self._ready.is_set():
            await self._dial(line.decode())
            return
        await self._ready.wait()
        try:
            await self._socket.send(line.decode())
        except Exception as exc:  # the socket broke: the resumed one sends it
            await self._ready.wait()
            if self._socket is None:
                self._failed(message, f"{type(exc).__name__}: {exc}")
                return
            await self._socket.send(line.decode())

    async def _read(self, socket: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for text in socket:
                if not isinstance(text, str):
                    continue
                try:
                    message = loads(text)
                except DecodeError:
                    continue
                if isinstance(message, dict) and message.get("method") == RESUME_FAILED:
                    _logger.warning("the agent refused to resume the connection: %s", message)
                    self._end()
                    return
                self._receive(message, None, None)
        except ConnectionClosed:
            pass
        if self._closing or socket.close_code in (1000, 1001):
            self._end()
            return
        self._ready.clear()
        self._spawn(self._resume())

    async def _resume(self) -> None:
        failures = 0
        while not self._closing:
            failures += 1
            if failures > self._reconnect.attempts:
                self._end()
                return
            await asyncio.sleep(self._reconnect.wait(failures))
            params = {"connectionId": self.connection_id, "cursor": self.cursors.get(None)}
            resume = {"jsonrpc": "2.0", "method": RESUME, "params": params}
            try:
                await self._dial(dumps(resume).decode())
                return
            except (OSError, AgentProtoError, Exception) as exc:
                _logger.info("resuming the socket failed: %s", exc)

    async def _finish(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._end()


class _Gone(Exception):
    """The server no longer has the connection."""


def _body(response: httpx.Response) -> Any:
    try:
        return loads(response.content)
    except DecodeError:
        return response.text[:8192]

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
end.

When the connection itself is gone (the agent's server restarted, or dropped it: ``404``,
a ``409`` saying :data:`~.wire.UNKNOWN_CONNECTION`, a refused WebSocket resume), a new one
is made with the ``initialize`` request first sent (the RFD's "the agent broke" case):
the requests still owed an answer get an error (:data:`CONNECTION_LOST`), the agent's
requests being handled are withdrawn (a ``$/cancel_request`` handed to the reader; their
late answers are dropped, the new agent never asked them), and ``on_renewed()`` is told
(the client then rebuilds each session with ``session/resume``). What is written in the
meantime waits for the new connection. When no new connection can be made either
(``reconnect`` attempts exhausted, another protocol version negotiated), the reader ends:
the connection closes as closed by the peer. Closing the writer ends the connection
(``DELETE``; a clean close).
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
    CANCEL_REQUEST,
    CONNECTION_ID,
    LAST_EVENT_ID,
    RESUME,
    RESUME_FAILED,
    SESSION_ID,
    UNKNOWN_CONNECTION,
    route_of,
    session_of,
    take_cursor,
)

__all__ = ["HttpStreams", "RemoteStreams", "WebSocketStreams"]

ANSWER_LOST: Final = "the answer was lost: the agent could not resume the stream it rode"
"""The message of the error a request gets when its answer's stream could not be resumed."""
CONNECTION_LOST: Final = "the answer was lost: the agent no longer has the connection"
"""The message of the error a request gets when the connection it was sent on is gone."""
_DEAD_AFTER: Final = 5
"""Keep-alive intervals of silence after which a stream is taken for dead (the RFD's)."""
_logger = logging.getLogger("agentproto.acp")

OnRefused = Callable[[str | None], Awaitable[None]]
OnRenewed = Callable[[], Awaitable[None]]


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
        self.on_renewed: OnRenewed | None = None
        self.connection_id: str | None = None
        self._hello: tuple[bytes, Any] | None = None  # the initialize line, its protocol version
        self._awaiting: dict[str, tuple[str | None, Any]] = {}  # ours: (answer's stream, id)
        self._origin: dict[str, str | None] = {}  # the agent's requests: their stream
        self._stale: set[str] = set()  # the agent's requests of a connection gone
        self._lost: set[str] = set()  # ours whose answers may be lost (:meth:`_owed`)
        self._renewal: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()  # clear while a new connection is being made

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
        if isinstance(message, dict) and "id" in message:
            key = _key(message["id"])
            if "method" in message:
                self._origin[key] = stream
                self._stale.discard(key)  # the new agent's request: answer it
            else:
                self._awaiting.pop(key, None)
                self._lost.discard(key)  # it came after all
        self._give(message)

    def _give(self, message: Any) -> None:
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
                if "method" not in message and _key(message.get("id")) in self._stale:
                    self._stale.discard(_key(message.get("id")))
                    continue  # the answer to a request of the agent that is gone
                if self._hello is None and message.get("method") == "initialize":
                    self._hello = (line, None)
                elif self._renewal is not None:
                    await self._connected.wait()  # a new connection is being made: on it
                    if self.connection_id is None:
                        self._failed(message, "the agent no longer has the connection")
                        continue
                if "method" in message and "id" in message:
                    route = self._answer_stream(message)
                    self._awaiting[_key(message["id"])] = (route, message["id"])
                await self._send(message, line)
        except Exception:
            _logger.exception("the remote connection failed")
            self._end()
        finally:
            with contextlib.suppress(Exception):
                await self._finish()

    def _spawn(self, work: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _answer_stream(self, message: dict[str, Any]) -> str | None:
        """The stream the answer to our request ``message`` will ride."""
        return None

    # ---- a connection gone -----------------------------------------------------------------

    def _gone(self) -> None:
        """The agent no longer has the connection: make a new one (see the module notes),
        or end when that is not to be tried."""
        if self._closing or (self._renewal is not None and not self._renewal.done()):
            return
        if self._hello is None or self._reconnect.attempts == 0:
            self._end()
            return
        self.connection_id = None
        self.cursors.clear()
        self._connected.clear()
        for key in self._origin:  # the agent that asked is gone: withdrawn
            self._stale.add(key)
            params = {"requestId": loads(key)}
            self._give({"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": params})
        self._origin.clear()
        owed = self._owed(lambda stream: True)
        self._renewal = self._spawn(self._renew(owed))

    def _owed(self, on: Callable[[str | None], bool]) -> list[Any]:
        """The ids of our requests whose answers were to ride a stream ``on`` accepts;
        they are no longer awaited (:meth:`_lose` answers them)."""
        owed = [ident for route, ident in self._awaiting.values() if on(route)]
        for ident in owed:
            self._awaiting.pop(_key(ident), None)
            self._lost.add(_key(ident))
        return owed

    def _lose(self, owed: list[Any], why: str) -> None:
        """Answer each request of ``owed`` that got no answer meanwhile with an error
        saying ``why``."""
        for ident in owed:
            if _key(ident) in self._lost:
                self._lost.discard(_key(ident))
                error = {"code": -32603, "message": why}
                self._give({"jsonrpc": "2.0", "id": ident, "error": error})

    async def _renew(self, owed: list[Any]) -> None:
        """Make a new connection with the first ``initialize`` (with backoff) and tell
        ``on_renewed``; then the requests ``owed`` fail (so that, when they do, the
        sessions are rebuilt). The reader ends when no connection can be made."""
        assert self._hello is not None
        line, version = self._hello
        failures = 0
        try:
            while not self._closing:
                try:
                    answer = await self._connect_again(line)
                except (OSError, AgentProtoError, httpx.HTTPError) as exc:
                    _logger.info("a new connection to the agent failed: %s", exc)
                    answer = None
                if answer is not None:
                    if _version(answer) != version:
                        _logger.warning("the agent's new connection speaks another version")
                        break
                    _logger.info("the agent had lost the connection: a new one is made")
                    self._connected.set()
                    if self.on_renewed is not None:
                        await self.on_renewed()
                    return
                failures += 1
                if failures > self._reconnect.attempts:
                    break
                await asyncio.sleep(self._reconnect.wait(failures))
            self.connection_id = None
            self._connected.set()  # what waits for it fails
            self._end()
        finally:
            self._lose(owed, CONNECTION_LOST)

    async def _connect_again(self, line: bytes) -> Any:  # pragma: no cover - abstract
        """Make a new connection with ``initialize`` ``line``: its answer (``None``: refused)."""
        raise NotImplementedError

    def _greeted(self, answer: Any) -> None:
        """The first ``initialize`` was answered: its protocol version is the connection's."""
        if self._hello is not None:
            self._hello = (self._hello[0], _version(answer))

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
        self._streams: dict[str | None, tuple[asyncio.Event, asyncio.Task[None]]] = {}

    def _request_headers(self, session: str | None) -> dict[str, str]:
        found = {**self._headers, "content-type": "application/json"}
        if self.connection_id is not None:
            found[CONNECTION_ID] = self.connection_id
        if session is not None:
            found[SESSION_ID] = session
        return found

    def _answer_stream(self, message: dict[str, Any]) -> str | None:
        return route_of(message, session_of(message))

    async def _send(self, message: Any, line: bytes) -> None:
        if self.connection_id is None:
            await self._initialize(message, line)
            return
        if "method" in message:
            session = session_of(message)
        else:
            session = self._origin.pop(_key(message.get("id")), None)
        if session is not None:
            await self._open(session)
        response = await self._post(message, line, session)
        if response is None:
            return
        if response.status_code == 404:  # the connection is gone
            self._failed(message, "the agent no longer has the connection")
            self._gone()
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
        answer = self._connection_made(response)
        if answer is None:
            self._failed(message, f"initialize answered {response.status_code}", _body(response))
            return
        self._connected.set()
        self._greeted(answer)
        self._receive(answer, None, None)

    def _connection_made(self, response: httpx.Response) -> dict[str, Any] | None:
        """The answer of a POST of ``initialize``, its connection id taken and its
        stream opened (``None``: no connection was made)."""
        ident = response.headers.get(CONNECTION_ID)
        try:
            answer = loads(response.content)
        except DecodeError:
            answer = None
        if not isinstance(answer, dict) or ident is None or "result" not in answer:
            return None
        self.connection_id = ident
        self._spawn(self._open(None, wait=False))
        return answer

    async def _connect_again(self, line: bytes) -> Any:
        for _, listening in self._streams.values():
            listening.cancel()
        self._streams.clear()
        response = await self._client.post(
            self.url, content=line, headers=self._request_headers(None)
        )
        return self._connection_made(response)

    async def _open(self, session: str | None, *, wait: bool = True) -> None:
        """Open ``session``'s stream (``None``: the connection's) unless it is; with
        ``wait``, until the server has answered its ``GET``."""
        found = self._streams.get(session)
        if found is None:
            opened = asyncio.Event()
            found = self._streams[session] = (opened, self._spawn(self._listen(session, opened)))
        if wait:
            await found[0].wait()

    async def _listen(self, session: str | None, opened: asyncio.Event) -> None:
        failures = 0
        while not self._closing:
            progressed = False
            try:
                progressed = await self._read_stream(session, opened)
            except httpx.HTTPError as exc:
                _logger.info("the stream of %s broke: %s", session or "the connection", exc)
            except _Gone:
                self._gone()
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
            if response.status_code == 404 or (
                response.status_code == 409 and _error(await response.aread()) == UNKNOWN_CONNECTION
            ):
                opened.set()
                raise _Gone
            if response.status_code == 409:  # the cursor is refused: rebuild, read on live
                self.cursors.pop(session, None)
                opened.set()
                self._spawn(self._refused(session, self._owed(lambda route: route == session)))
                return True
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

    async def _refused(self, stream: str | None, owed: list[Any]) -> None:
        """``stream`` could not be resumed: ``on_refused`` rebuilds its session, then the
        requests whose answers it owed fail (their answers may be among what could not
        be replayed: an error rather than a wait forever)."""
        try:
            if self.on_refused is not None:
                await self.on_refused(stream)
        finally:
            self._lose(owed, ANSWER_LOST)

    def _arrived(self, message: Any, stream: str | None, cursor: str | None) -> None:
        if isinstance(message, dict):
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
        self._socket: Any = None
        self._greeting: asyncio.Future[Any] | None = None  # a new connection's answer
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
        renewing = self._greeting is not None
        if socket.response is not None and (self.connection_id is None or renewing):
            self.connection_id = socket.response.headers.get(CONNECTION_ID)
        await socket.send(first)
        self._socket = socket
        self._ready.set()
        self._spawn(self._read(socket))

    async def _send(self, message: Any, line: bytes) -> None:
        if self._socket is None and not self._ready.is_set():
            await self._dial(line.decode())
            return
        if "method" not in message:
            self._origin.pop(_key(message.get("id")), None)
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
                    _logger.info("the agent refused to resume the connection: %s", message)
                    self._ready.clear()
                    self._gone()
                    return
                answer = isinstance(message, dict) and "method" not in message
                greeting = self._greeting
                if answer and greeting is not None and not greeting.done():
                    greeting.set_result(message)  # a new connection's initialize answer
                    continue
                if answer and self._hello is not None and self._hello[1] is None:
                    self._greeted(message)  # the first answer: initialize's
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

    async def _connect_again(self, line: bytes) -> Any:
        self._greeting = asyncio.get_running_loop().create_future()
        try:
            await self._dial(line.decode())
            return await asyncio.wait_for(asyncio.shield(self._greeting), 30.0)
        finally:
            self._greeting = None

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


def _version(answer: Any) -> Any:
    """The protocol version an ``initialize`` answer settles on."""
    result = answer.get("result") if isinstance(answer, dict) else None
    return result.get("protocolVersion") if isinstance(result, dict) else None


def _error(body: bytes) -> Any:
    """The ``error`` a refusal's JSON body names."""
    try:
        found = loads(body)
    except DecodeError:
        return None
    return found.get("error") if isinstance(found, dict) else None


def _body(response: httpx.Response) -> Any:
    try:
        return loads(response.content)
    except DecodeError:
        return response.text[:8192]

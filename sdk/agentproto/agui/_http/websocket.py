"""Run an AG-UI agent over a WebSocket: :class:`WebSocketAgent` (asyncio, ``websockets``).

The socket twin of :class:`~agentproto.agui.AsyncHttpAgent`, around the same sans-I/O
thread (:mod:`agentproto.agui._thread.exchange`): it opens a WebSocket on the agent's
URL (``ws://`` or ``wss://``), sends the run input as its first message and feeds the
events it gets, one per message, through a :class:`Consumer`. It offers the
subprotocol :data:`~agentproto.agui._protocol.encoding.WEBSOCKET_SUBPROTOCOL`: from an agent that
keeps an event log each event then carries its cursor, and a socket that breaks (or
closes) before the run ended is opened again with a resume request for the events
after the last cursor (:class:`~agentproto.agui.Reconnect`). ``websockets`` is the
``agentproto[websocket]`` extra, imported on first use.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Final, cast

from agentproto._core.errors import (
    AgentProtoError,
    HttpError,
    HttpStatusError,
    HttpTimeoutError,
    ProtocolError,
    UsageError,
)
from agentproto._core.json.codec import dumps, loads
from agentproto._core.optional import missing
from agentproto.agui._consume.decoder import Middleware
from agentproto.agui._consume.stream import aiter_events
from agentproto.agui._generated import Event, Message
from agentproto.agui._http.reconnect import DEFAULT_RECONNECT, Attempts, Reconnect
from agentproto.agui._protocol.encoding import JSONL_CONTENT_TYPE, WEBSOCKET_SUBPROTOCOL
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._thread.exchange import AgentThread, Exchange, RunResult, running

__all__ = ["WebSocketAgent"]

_INSTALL: Final = "pip install 'agentproto[websocket]'"
_CLOSED_NORMALLY: Final = 1000


class WebSocketAgent(AgentThread):
    """Run an AG-UI agent over a WebSocket, one thread, run after run (asyncio).

    The arguments and attributes are :class:`~agentproto.agui.AsyncHttpAgent`'s where
    they apply (``thread_id``, ``conversation``, ``run_timeout``, ``middleware``,
    ``consumer_options``, ``reconnect``); ``run()`` and ``run_to_end()`` behave alike.

    Args:
        url: the agent's WebSocket URL (``ws://host/agent``; ``agent_app`` answers on
            the path it serves HTTP on).
        headers: headers of the opening handshake (``authorization``, ...).
        open_timeout: seconds to open the socket (and for each reconnection).
        max_message_bytes: the largest message accepted (one event).

    Raises:
        UsageError: a bad URL or option.
        MissingDependencyError: ``websockets`` is not installed (when a run starts).
    """

    def __init__(
        self,
        url: str,
        *,
        thread_id: str | None = None,
        conversation: Conversation | None = None,
        headers: Mapping[str, str] | None = None,
        open_timeout: float | None = 10.0,
        run_timeout: float | None = None,
        max_message_bytes: int = 64 * 1024 * 1024,
        middleware: Callable[[], Sequence[Middleware]] | None = None,
        consumer_options: Mapping[str, Any] | None = None,
        reconnect: Reconnect | None = DEFAULT_RECONNECT,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
            raise UsageError("ws.url", f"a WebSocket URL starts with ws:// or wss://: {url!r}")
        if reconnect is not None and not isinstance(reconnect, Reconnect):
            raise UsageError(
                "http.reconnect", f"reconnect must be a Reconnect or None: {reconnect!r}"
            )
        super().__init__(
            url,
            thread_id=thread_id,
            conversation=conversation,
            transport="jsonl",
            run_timeout=run_timeout,
            middleware=middleware,
            consumer_options=consumer_options or {},
        )
        self._headers = dict(headers or {})
        self._open_timeout = open_timeout
        self._max_message = max_message_bytes
        self._reconnect = reconnect

    def run(
        self, *messages: Message | str, run_id: str | None = None, **options: Any
    ) -> AsyncIterator[Event]:
        """Run the agent once; see :meth:`HttpAgent.run <agentproto.agui.HttpAgent.run>`."""
        return self._stream(self._prepare(messages, run_id, options))

    async def run_to_end(
        self, *messages: Message | str, run_id: str | None = None, **options: Any
    ) -> RunResult:
        """Run the agent once, to the end; see
        :meth:`HttpAgent.run_to_end <agentproto.agui.HttpAgent.run_to_end>`."""
        exchange = self._prepare(messages, run_id, options)
        async with aclosing(self._stream(exchange)) as events:
            async for _ in events:
                pass
        return exchange.result()

    async def aclose(self) -> None:
        """Nothing to release: each run's socket closes with the run."""

    async def __aenter__(self) -> WebSocketAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _open(self, first: bytes) -> Any:
        try:
            from websockets.asyncio.client import connect
        except ModuleNotFoundError as error:
            raise missing(error, "agentproto.agui.WebSocketAgent", _INSTALL) from None
        try:
            socket = await connect(
                self.url,
                subprotocols=[WEBSOCKET_SUBPROTOCOL],  # type: ignore[list-item]
                additional_headers=self._headers,
                open_timeout=self._open_timeout,
                max_size=self._max_message,
            )
        except TimeoutError as exc:
            raise HttpTimeoutError(
                "http.connect-timeout",
                f"could not open a WebSocket to {self.url} within {self._open_timeout}s",
                url=self.url,
                timeout=self._open_timeout,
            ) from exc
        except OSError as exc:
            raise HttpError(
                "http.connect-failed", f"could not connect to {self.url}: {exc}", url=self.url
            ) from exc
        except Exception as exc:  # the handshake was refused (websockets' InvalidStatus, ...)
            raise HttpError(
                "http.network", f"the WebSocket to {self.url} failed: {exc}", url=self.url
            ) from exc
        await socket.send(first.decode("utf-8"))
        return socket

    async def _stream(self, exchange: Exchange) -> AsyncGenerator[Event, None]:
        with running(exchange) as cause:
            socket = await self._open(exchange.body)
            consumer = exchange.open(101, "Switching Protocols", JSONL_CONTENT_TYPE)
            lines = self._lines(exchange, socket, cause)
            async with (
                aclosing(lines),
                aclosing(_generator(aiter_events(lines, consumer=consumer))) as events,
            ):
                async for event in events:
                    yield event

    async def _lines(
        self, exchange: Exchange, socket: Any, cause: list[BaseException]
    ) -> AsyncGenerator[bytes, None]:
        """Each event as a JSON line, across reconnections."""
        attempts = None if self._reconnect is None else Attempts(exchange, self._reconnect)
        last: str | None = None
        try:
            while True:
                failure: BaseException | None = None
                try:
                    async for message in socket:
                        text = message if isinstance(message, str) else message.decode()
                        line, last = _event_of(
                            text, socket.subprotocol == WEBSOCKET_SUBPROTOCOL, last, self.url
                        )
                        if line is None:
                            continue
                        if attempts is not None:
                            attempts.progressed()
                        yield line
                        if exchange.late():
                            return
                except AgentProtoError:
                    raise  # a refusal, a malformed message: the run fails with it
                except Exception as exc:  # the socket broke (websockets' ConnectionClosed, OSError)
                    failure = exc
                code = getattr(socket, "close_code", None)
                await socket.close()
                if failure is None and code == _CLOSED_NORMALLY:
                    return  # the agent ended the stream: the consumer judges the run
                while attempts is not None and attempts.wanted(last):
                    await asyncio.sleep(attempts.wait())
                    resume = {
                        "type": "resume",
                        "threadId": self.thread_id,
                        "runId": exchange.run_input.run_id,
                        "after": last,
                    }
                    try:
                        socket = await self._open(dumps(resume))
                        break
                    except HttpError as exc:
                        failure = exc
                else:
                    if failure is not None:
                        cause.append(failure)
                    return
        finally:
            await socket.close()


def _generator(events: AsyncIterator[Event]) -> AsyncGenerator[Event, None]:
    """``aiter_events``'s iterator as what it is, an async generator (closable)."""
    return cast(AsyncGenerator[Event, None], events)


def _event_of(
    text: str, cursored: bool, last: str | None, url: str
) -> tuple[bytes | None, str | None]:
    """The event line a message holds, and the cursor to resume after.

    Raises:
        HttpStatusError: the message is the agent's refusal (a JSON error body).
        ProtocolError: a cursored message that is not ``{"id": ..., "event": ...}``.
    """
    if text.startswith('{"error"'):
        body = loads(text)
        status = body.get("status") if isinstance(body, dict) else None
        raise HttpStatusError(
            status if isinstance(status, int) else 400, "(WebSocket)", url=url, body=body, text=text
        )
    if not cursored:
        return text.encode("utf-8") + b"\n", last
    document = loads(text)
    if not isinstance(document, dict) or not isinstance(document.get("id"), str):
        raise ProtocolError("ws.frame", 'a cursored message is {"id": <cursor>, "event": <event>}')
    if "event" not in document:
        return None, document["id"]  # the start's cursor
    return dumps(document["event"]) + b"\n", document["id"]

"""Serving AG-UI events over HTTP: wire encoders and framework-free ASGI helpers.

Theory of operation
-------------------
Three layers, each usable alone:

* **Encoders** turn one typed event into the bytes of one transport frame:
  :func:`encode_event_sse` (``data: <json>`` and a blank line) and
  :func:`encode_event_jsonl` (``<json>`` and LF). The JSON is the event's wire form
  (:func:`~agentproto.agui.dump_event`) encoded compactly; compact JSON holds no raw
  line break, so it is always one ``data`` line. The encoders do not check the
  protocol: events built by :class:`~agentproto.agui.RunProducer` already are.
  :func:`encode_sse_stream` / :func:`encode_jsonl_stream` map them over an iterable
  (sync in, sync out; async in, async out), which is what a framework's streaming
  response wants, e.g. Starlette/FastAPI::

      StreamingResponse(encode_sse_stream(events), headers=stream_headers("sse"))

* :class:`EventStreamResponse` is an ASGI application streaming events with the
  right headers (``content-type``, ``cache-control: no-cache``,
  ``x-accel-buffering: no`` so that proxies do not buffer). While it streams it
  listens for ``http.disconnect``: when the client goes away it stops iterating and
  closes the event source (``aclose()`` for an async generator, ``close()`` for a
  sync one), so the agent's ``finally`` blocks run, and returns normally instead of
  raising into the server. It needs no framework, only asyncio (it runs under
  uvicorn, hypercorn's asyncio worker, and as a Starlette endpoint's response). A
  sync iterable that is not a list or tuple is iterated in a worker thread, one
  event at a time, so that a blocking agent does not stall the event loop.
* :func:`agent_app` turns an agent handler into a whole ASGI application: it reads
  the POST body, checks it as a ``RunAgentInput`` (unknown fields are dropped, a
  malformed known field is a 400 response whose JSON body names the JSON Schema
  keyword and location), gives the handler a :class:`~agentproto.agui.RunProducer`
  for that input, and streams what it emits in the transport the request's
  ``Accept`` asks for (``application/jsonl``: JSON Lines; anything else: SSE). When
  the handler raises, or returns with the run still open, the client gets a
  RUN_ERROR (the exception itself is logged on the server, never sent).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
)
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeAlias, overload

from agentproto._core.errors import AgentProtoError, DecodeError, SchemaError, UsageError
from agentproto._core.jsonutil import dumps, loads
from agentproto.agui._boundary import upgrade_input
from agentproto.agui._decoder import Transport
from agentproto.agui._generated import Event, RunAgentInput
from agentproto.agui._producer import RunProducer
from agentproto.agui._wire import _converter

__all__ = [
    "JSONL_CONTENT_TYPE",
    "SSE_CONTENT_TYPE",
    "EventStreamResponse",
    "agent_app",
    "encode_event_jsonl",
    "encode_event_sse",
    "encode_jsonl_stream",
    "encode_sse_stream",
    "negotiate_transport",
    "run_events",
    "stream_headers",
]

SSE_CONTENT_TYPE: Final = "text/event-stream; charset=utf-8"
"""``content-type`` of an AG-UI SSE response."""
JSONL_CONTENT_TYPE: Final = "application/jsonl"
"""``content-type`` of an AG-UI JSON Lines response (and the ``Accept`` that asks for it)."""
DEFAULT_MAX_BODY_BYTES: Final = 16 * 1024 * 1024
"""Largest request body :func:`agent_app` reads."""

Scope: TypeAlias = MutableMapping[str, Any]
ASGIMessage: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[ASGIMessage]]
Send: TypeAlias = Callable[[ASGIMessage], Awaitable[None]]
ASGIApp: TypeAlias = Callable[[Scope, Receive, Send], Awaitable[None]]
Events: TypeAlias = AsyncIterable[Event] | Iterable[Event]
AgentHandler: TypeAlias = Callable[[RunAgentInput, RunProducer], Any]
"""``handler(run_input, producer)``: a coroutine function (``-> None``), an async
generator function yielding events, or a plain function; see :func:`agent_app`."""

_logger = logging.getLogger("agentproto.agui")
_dump = _converter.dump
_DONE: Any = object()


# ---- encoders ---------------------------------------------------------------------------


def encode_event_sse(event: Event) -> bytes:
    """One event as an SSE frame: ``data: <compact JSON>`` and a blank line.

    Raises:
        SchemaError: the event holds a value that is not JSON (its location named).
    """
    return b"data: " + dumps(_dump(event)) + b"\n\n"


def encode_event_jsonl(event: Event) -> bytes:
    """One event as a JSON Lines line: compact JSON and LF.

    Raises:
        SchemaError: the event holds a value that is not JSON (its location named).
    """
    return dumps(_dump(event)) + b"\n"


_ENCODERS: Final[dict[str, Callable[[Event], bytes]]] = {
    "sse": encode_event_sse,
    "jsonl": encode_event_jsonl,
}


def _encoder(transport: str) -> Callable[[Event], bytes]:
    encoder = _ENCODERS.get(transport)
    if encoder is None:
        raise UsageError("serve.transport", f"transport must be 'sse' or 'jsonl': {transport!r}")
    return encoder


def _encode_sync(events: Iterable[Event], encode: Callable[[Event], bytes]) -> Iterator[bytes]:
    iterator = iter(events)
    try:
        for event in iterator:
            yield encode(event)
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


async def _encode_async(
    events: AsyncIterable[Event], encode: Callable[[Event], bytes]
) -> AsyncIterator[bytes]:
    iterator = aiter(events)
    try:
        async for event in iterator:
            yield encode(event)
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()


@overload
def encode_sse_stream(events: AsyncIterable[Event]) -> AsyncIterator[bytes]: ...
@overload
def encode_sse_stream(events: Iterable[Event]) -> Iterator[bytes]: ...
def encode_sse_stream(events: Events) -> AsyncIterator[bytes] | Iterator[bytes]:
    """SSE frames of ``events``: an async iterator for async events, else a sync one.

    Closing the result closes ``events`` (when it can be closed). For a framework's
    streaming response, e.g. Starlette's ``StreamingResponse(encode_sse_stream(events),
    headers=stream_headers("sse"))``.
    """
    if isinstance(events, AsyncIterable):
        return _encode_async(events, encode_event_sse)
    return _encode_sync(events, encode_event_sse)


@overload
def encode_jsonl_stream(events: AsyncIterable[Event]) -> AsyncIterator[bytes]: ...
@overload
def encode_jsonl_stream(events: Iterable[Event]) -> Iterator[bytes]: ...
def encode_jsonl_stream(events: Events) -> AsyncIterator[bytes] | Iterator[bytes]:
    """JSON Lines of ``events``; see :func:`encode_sse_stream`."""
    if isinstance(events, AsyncIterable):
        return _encode_async(events, encode_event_jsonl)
    return _encode_sync(events, encode_event_jsonl)


def stream_headers(transport: Transport = "sse") -> dict[str, str]:
    """The response headers of an event stream in ``transport``.

    ``content-type`` (:data:`SSE_CONTENT_TYPE` or :data:`JSONL_CONTENT_TYPE`),
    ``cache-control: no-cache`` and ``x-accel-buffering: no`` (no proxy buffering).
    """
    _encoder(transport)
    return {
        "content-type": SSE_CONTENT_TYPE if transport == "sse" else JSONL_CONTENT_TYPE,
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
    }


def negotiate_transport(accept: str | None) -> Transport:
    """The transport an ``Accept`` header asks for: JSON Lines when it names
    ``application/jsonl`` with a higher preference than ``text/event-stream`` (by
    ``q``, then by order), else SSE."""
    if not accept:
        return "sse"
    best: dict[str, tuple[float, int]] = {}
    for position, item in enumerate(accept.split(",")):
        media, *params = (part.strip() for part in item.split(";"))
        media = media.lower()
        if media not in ("application/jsonl", "text/event-stream"):
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        best[media] = (quality, -position)
    jsonl = best.get("application/jsonl")
    if jsonl is None or jsonl[0] <= 0:
        return "sse"
    sse = best.get("text/event-stream")
    return "jsonl" if sse is None or jsonl > sse else "sse"


# ---- the ASGI response ------------------------------------------------------------------


async def _iterate_in_thread(events: Iterable[Event]) -> AsyncIterator[Event]:
    """A blocking iterable, one ``next()`` at a time in one worker thread of its own.

    Closing this closes the iterable in that same thread, after any ``next()`` still
    running there (never concurrently with it), without waiting for it here.
    """
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentproto-events")
    iterator = iter(events)

    def step() -> Any:
        return next(iterator, _DONE)

    try:
        while True:
            context = contextvars.copy_context()
            item = await loop.run_in_executor(executor, context.run, step)
            if item is _DONE:
                return
            yield item
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            executor.submit(close)
        executor.shutdown(wait=False)


async def _body(events: Events, encode: Callable[[Event], bytes]) -> AsyncGenerator[bytes, None]:
    if isinstance(events, AsyncIterable):
        source: AsyncIterable[Event] = events
    elif isinstance(events, list | tuple):
        for event in events:
            yield encode(event)
        return
    else:
        source = _iterate_in_thread(events)
    iterator = aiter(source)
    try:
        async for event in iterator:
            yield encode(event)
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()


async def _wait_for_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def _raw_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


class EventStreamResponse:
    """An ASGI application that streams AG-UI events as SSE or JSON Lines.

    Usable directly as an ASGI app for one request, or returned from a Starlette
    endpoint (FastAPI: wrap :func:`encode_sse_stream` in its ``StreamingResponse``).

    Args:
        events: the events, as an async iterable (an async generator: closed with
            ``aclose()`` when the client disconnects), a list or tuple, or any other
            iterable (iterated in a worker thread; a generator is closed on
            disconnect).
        transport: ``"sse"`` (default) or ``"jsonl"``.
        status_code: the HTTP status.
        headers: extra response headers (they override the defaults of
            :func:`stream_headers`).

    Raises:
        UsageError: ``transport`` is neither ``"sse"`` nor ``"jsonl"``.
    """

    def __init__(
        self,
        events: Events,
        *,
        transport: Transport = "sse",
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.encode = _encoder(transport)
        self.events = events
        self.transport = transport
        self.status_code = status_code
        self.headers = {
            **stream_headers(transport),
            **{k.lower(): v for k, v in (headers or {}).items()},
        }

    @property
    def media_type(self) -> str:
        """The ``content-type`` sent."""
        return self.headers["content-type"]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream the events; returns when they are done or the client has gone."""
        if scope["type"] != "http":
            raise UsageError("serve.scope", f"an event stream answers HTTP, not {scope['type']!r}")
        streaming = asyncio.ensure_future(self._stream(send))
        watching = asyncio.ensure_future(_wait_for_disconnect(receive))
        try:
            await asyncio.wait((streaming, watching), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (streaming, watching):
                task.cancel()
            await asyncio.wait((streaming, watching))
        failure = None if streaming.cancelled() else streaming.exception()
        if failure is not None:
            raise failure

    async def _stream(self, send: Send) -> None:
        body = _body(self.events, self.encode)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": _raw_headers(self.headers),
                }
            )
            async for chunk in body:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away (servers of ASGI spec 2.4 raise on send)
        finally:
            await body.aclose()


# ---- the agent application --------------------------------------------------------------


async def _send_json(
    send: Send, status: int, body: Any, headers: Mapping[str, str] | None = None
) -> None:
    payload = dumps(body)
    all_headers = {
        "content-type": "application/json",
        "content-length": str(len(payload)),
        **(headers or {}),
    }
    await send(
        {"type": "http.response.start", "status": status, "headers": _raw_headers(all_headers)}
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body; ``None`` when the client disconnected first; raises
    :class:`OverflowError` past ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise OverflowError(size)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _load_run_input(body: bytes) -> RunAgentInput:
    """Check a request body as a ``RunAgentInput`` (tolerantly: unknown fields dropped)."""
    document = loads(body)
    if not isinstance(document, dict):
        raise SchemaError("type", "", "a RunAgentInput must be a JSON object")
    found: list[Any] = []
    run_input: RunAgentInput = _converter.load(
        upgrade_input(document), RunAgentInput, diagnostics=found
    )
    for diagnostic in found:
        _logger.debug("run input: %s", diagnostic)
    return run_input


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def run_events(handler: AgentHandler, run_input: RunAgentInput) -> AsyncIterator[Event]:
    """Run ``handler`` with a producer for ``run_input``; yields what it emits, in order.

    This is the event source :func:`agent_app` streams; it is public so that a
    framework route can stream it itself. The stream always ends with a terminal
    event: when the handler raises (the exception is logged, not sent) or returns
    with the run still open, a RUN_ERROR (code ``agent.exception`` or
    ``agent.unfinished``) ends the run. Closing this generator (the client went away)
    cancels the handler.
    """
    pending: deque[Event] = deque()
    recent: list[Event] = []
    wake = asyncio.Event()

    def sink(event: Event) -> None:
        pending.append(event)
        recent.append(event)
        wake.set()

    producer = RunProducer(run_input, sink=sink)
    error: Exception | None = None
    try:
        result = handler(run_input, producer)
        if hasattr(result, "__anext__"):
            try:
                async for item in result:
                    # an event the producer already emitted (a helper's return value)
                    # is not emitted twice
                    if item is not None and not any(item is seen for seen in recent):
                        producer.emit(item)
                    recent.clear()
                    while pending:
                        yield pending.popleft()
            finally:
                await result.aclose()
        elif inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            try:
                while True:
                    while pending:
                        yield pending.popleft()
                    if task.done():
                        break
                    wake.clear()
                    waiter = asyncio.ensure_future(wake.wait())
                    try:
                        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        waiter.cancel()
                task.result()
            finally:
                if not task.done():
                    task.cancel()
                    await asyncio.wait((task,))
        elif result is not None:
            raise UsageError(
                "serve.handler",
                f"an agent handler returns None, a coroutine or an async generator, not "
                f"{type(result).__name__}",
            )
    except Exception as exc:  # the agent failed: the client learns it from RUN_ERROR
        _logger.exception("agent handler failed")
        error = exc
    while pending:
        yield pending.popleft()
    for event in _ending(producer, error):
        yield event


def _ending(producer: RunProducer, error: Exception | None) -> list[Event]:
    """The RUN_ERROR that gives the stream a terminal event, when it lacks one."""
    if producer.closed:
        return []
    phase = producer.phase
    if phase in ("idle", "running") or (error is not None and phase == "finished"):
        if error is not None:
            message, code = f"the agent failed ({type(error).__name__})", "agent.exception"
        else:
            message, code = "the agent returned without finishing the run", "agent.unfinished"
            _logger.warning("agent handler returned with the run %s; sending RUN_ERROR", phase)
        try:
            event: Event = producer.run_error(message, code=code)
        except AgentProtoError:  # pragma: no cover - RUN_ERROR is accepted in these phases
            _logger.exception("could not end the run with RUN_ERROR")
            return []
        return [event]
    return []


def agent_app(handler: AgentHandler, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> ASGIApp:
    """An ASGI application serving one agent: POST a ``RunAgentInput``, get its events.

    The handler is called as ``handler(run_input, producer)`` with the checked input
    and a :class:`~agentproto.agui.RunProducer` for it, and may be:

    * a coroutine function returning ``None``: whatever it emits through the producer
      streams while it runs (``await`` something, e.g. ``asyncio.sleep(0)``, to let a
      burst of events go out);
    * an async generator function: each event it yields is emitted through the
      producer (so every producer duty is checked) unless the producer already
      emitted that very object, and events its producer calls emit stream too;
    * a plain function returning ``None`` (it runs on the event loop: keep it quick).

    Responses: 405 for a method other than POST, 413 for a body over
    ``max_body_bytes``, 400 with ``{"error": "invalid-json", "detail": ...}`` or
    ``{"error": "invalid-run-input", "keyword": ..., "location": ..., "detail": ...}``
    for a body that is not a ``RunAgentInput``; otherwise 200 and the event stream
    (see :func:`run_events`), JSON Lines when ``Accept`` asks for
    ``application/jsonl``, else SSE. Every path answers; the lifespan protocol is
    acknowledged. For browsers on another origin, wrap the app in a CORS middleware
    (for example Starlette's ``CORSMiddleware``), which answers the preflight.

    Example::

        async def handler(run_input, producer):
            producer.run_started()
            producer.text("Hello!")
            producer.run_finished()

        app = agent_app(handler)  # uvicorn module:app
    """

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await _lifespan(receive, send)
            return
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})  # HTTP only
            return
        if kind != "http":
            raise UsageError("serve.scope", f"agent_app answers HTTP, not {kind!r}")
        if scope.get("method") != "POST":
            await _send_json(
                send,
                405,
                {"error": "method-not-allowed", "detail": "POST a RunAgentInput"},
                {"allow": "POST"},
            )
            return
        try:
            body = await _read_body(receive, max_body_bytes)
        except OverflowError:
            await _send_json(
                send,
                413,
                {"error": "body-too-large", "detail": f"the limit is {max_body_bytes} bytes"},
            )
            return
        if body is None:
            return  # the client left before sending its request
        try:
            run_input = _load_run_input(body)
        except DecodeError as exc:
            await _send_json(send, 400, {"error": "invalid-json", "detail": str(exc)})
            return
        except SchemaError as exc:
            await _send_json(
                send,
                400,
                {
                    "error": "invalid-run-input",
                    "keyword": exc.keyword,
                    "location": exc.location,
                    "detail": exc.detail,
                },
            )
            return
        transport = negotiate_transport(_header(scope, b"accept"))
        response = EventStreamResponse(run_events(handler, run_input), transport=transport)
        await response(scope, receive, send)

    return app

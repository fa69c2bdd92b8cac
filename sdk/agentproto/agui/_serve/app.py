"""Serving AG-UI events over HTTP: framework-free ASGI applications (the I/O edge).

Theory of operation
-------------------
Two layers, each usable alone, on top of the sans-I/O encoders of
:mod:`agentproto.agui._protocol.encoding` (:func:`~agentproto.agui.encode_event_sse`,
:func:`~agentproto.agui.encode_sse_stream`, :func:`~agentproto.agui.stream_headers`,
...), which a framework's own streaming response can use directly:

* :class:`EventStreamResponse` is an ASGI application streaming events with the
  right headers (``content-type``, ``cache-control: no-cache``,
  ``x-accel-buffering: no`` so that proxies do not buffer). While it streams it
  listens for ``http.disconnect``: when the client goes away it stops iterating and
  closes the event source (``aclose()`` for an async generator, ``close()`` for a
  sync one), so the agent's ``finally`` blocks run, logs one INFO line and returns
  normally instead of raising into the server (a ``send`` raising ``OSError`` is
  taken the same way). It needs no framework, only asyncio (it runs under
  uvicorn, hypercorn's asyncio worker, and as a Starlette endpoint's response). A
  sync iterable that is not a list or tuple is iterated in a worker thread, one
  event at a time, so that a blocking agent does not stall the event loop. With a
  ``keepalive`` interval, an SSE stream gets a comment in every quiet stretch of
  that length (:mod:`agentproto.agui._serve.keepalive`).
* :func:`agent_app` turns an agent handler into a whole ASGI application: it reads
  the POST body (:mod:`agentproto._core.asgi`: JSON or no ``content-type``,
  within a size and a time limit), checks it as a ``RunAgentInput`` (unknown
  fields are dropped, each logged at WARNING with its path; a malformed known field
  is a 400 response whose JSON body names the JSON Schema keyword and location),
  gives the handler a :class:`~agentproto.agui.RunProducer` for that input (a
  refusal of the producer is a 400 too, before anything streams), and streams what
  it emits (:func:`run_events`) in the transport the request's ``Accept`` asks for
  (``application/jsonl``: JSON Lines; anything else: SSE). When the handler raises,
  or returns with the run still open, the client gets a RUN_ERROR (the exception
  itself is logged on the server, never sent). It is built for clients it does not
  trust: the handler runs at most ``max_buffered_events`` ahead of the client
  (:mod:`agentproto.agui._serve.outbox`), and it is cancelled when the client goes away.

Framework routes that serve it at an exact path, with the run input's schema for
OpenAPI, are :func:`~agentproto.agui.agent_route` (Starlette) and
:func:`~agentproto.agui.agent_api_route` (FastAPI), in :mod:`agentproto.agui._serve.routes`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Mapping,
)
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeAlias
from urllib.parse import parse_qs

import attrs

from agentproto._core.asgi import (
    ASGIApp,
    ASGIMessage,
    BodyLimits,
    Receive,
    Refusal,
    Scope,
    Send,
    check_content_type,
    header,
    raw_headers,
    send_json,
)
from agentproto._core.describe import describe
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import (
    AgentProtoError,
    CursorExpiredError,
    DecodeError,
    SchemaError,
    StoreError,
    UnknownStreamError,
    UsageError,
)
from agentproto._core.json.codec import loads
from agentproto._core.store.log import Entry, EventLog, ThreadStore
from agentproto.agui._generated import Event, RunAgentInput
from agentproto.agui._produce.producer import RunProducer
from agentproto.agui._protocol.compat import upgrade_input
from agentproto.agui._protocol.encoding import (
    Events,
    Transport,
    encode_async,
    encoder_for,
    negotiate_transport,
    stream_headers,
)
from agentproto.agui._protocol.wire import CONVERTER
from agentproto.agui._serve.keepalive import with_keepalives
from agentproto.agui._serve.outbox import Outbox, start_handler, stream_outbox
from agentproto.agui._serve.request import Begun
from agentproto.agui._serve.resume import (
    DEFAULT_LOST_TIMEOUT,
    Checkpoints,
    Runs,
    check_cursor,
    refusal_of,
    resync,
    stream_name,
    thread_document,
)
from agentproto.agui._serve.websocket import websocket_session
from agentproto.agui._thread.interrupts import InterruptLookup, OpenInterrupts, screen_resume

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "ASGIApp",
    "ASGIMessage",
    "AgentHandler",
    "EventStreamResponse",
    "Events",
    "Receive",
    "Scope",
    "Send",
    "agent_app",
    "run_events",
]

DEFAULT_MAX_BODY_BYTES: Final = 16 * 1024 * 1024
"""Largest request body :func:`agent_app` reads."""
DEFAULT_BODY_TIMEOUT: Final = 30.0
"""Seconds :func:`agent_app` waits for a whole request body."""
DEFAULT_MAX_BUFFERED_EVENTS: Final = 256
"""Events a handler may emit ahead of a slow client before it is held."""
DEFAULT_DETACHED_TIMEOUT: Final = 60.0
"""Seconds a logged run goes on with no client attached before it is cancelled."""
_MAX_LOGGED_PER_REQUEST: Final = 20
"""Tolerated problems of one request logged one by one (the rest are counted)."""

AgentHandler: TypeAlias = Callable[[RunAgentInput, RunProducer], Any]
"""``handler(run_input, producer)``: a coroutine function (``-> None``), an async
generator function yielding events, or a plain function; see :func:`agent_app`."""

_logger = logging.getLogger("agentproto.agui")
_DONE: Any = object()


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


async def _listed(events: list[Event] | tuple[Event, ...]) -> AsyncIterator[Event]:
    for event in events:
        yield event


def _body(events: Events, encode: Callable[[Event], bytes]) -> AsyncGenerator[bytes, None]:
    """The encoded events, from an async source (a sync iterable other than a list or
    tuple runs in a worker thread); closing the body closes the source."""
    if isinstance(events, AsyncIterable):
        source: AsyncIterable[Event] = events
    elif isinstance(events, list | tuple):
        source = _listed(events)
    else:
        source = _iterate_in_thread(events)
    return encode_async(source, encode)


async def _wait_for_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


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
        check: hold each event to the schema before it is sent (``False`` for
            events checked already, e.g. a :class:`~agentproto.agui.RunProducer`'s).
        keepalive: seconds of silence after which an SSE stream gets a
            ``: keep-alive`` comment (again after each such stretch, always
            between two frames, never after the last); ``None`` (default): none.
            JSON Lines has no comments: it gets none.

    Raises:
        UsageError: ``transport`` is neither ``"sse"`` nor ``"jsonl"``, or
            ``keepalive`` is not a positive number.
    """

    def __init__(
        self,
        events: Events,
        *,
        transport: Transport = "sse",
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        check: bool = True,
        keepalive: float | None = None,
    ) -> None:
        self.encode = encoder_for(transport, check=check)
        _check_limit("keepalive", keepalive, integer=False, optional=True)
        self.keepalive = keepalive if transport == "sse" else None
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
            if not streaming.done():
                _logger.info("the client disconnected; the event stream is stopped")
        finally:
            for task in (streaming, watching):
                task.cancel()
            await asyncio.wait((streaming, watching))
        failure = None if streaming.cancelled() else streaming.exception()
        if failure is not None:
            raise failure

    def _chunks(self) -> AsyncGenerator[bytes, None]:
        return _body(self.events, self.encode)

    async def _stream(self, send: Send) -> None:
        body = self._chunks()
        if self.keepalive is not None:
            body = with_keepalives(body, self.keepalive)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": raw_headers(self.headers),
                }
            )
            async for chunk in body:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError as exc:  # the client went away (servers of ASGI spec 2.4 raise)
            _logger.info("sending to the client failed (%s); the event stream is stopped", exc)
        finally:
            await body.aclose()


class _FrameStream(EventStreamResponse):
    """A response streaming frames already encoded (a run read from the event log)."""

    def __init__(
        self, frames: AsyncIterator[bytes], transport: Transport, keepalive: float | None
    ) -> None:
        super().__init__((), transport=transport, check=False, keepalive=keepalive)
        self._frames = frames

    def _chunks(self) -> AsyncGenerator[bytes, None]:
        return _passed(self._frames)


async def _passed(frames: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    try:
        async for frame in frames:
            yield frame
    finally:
        aclose = getattr(frames, "aclose", None)
        if aclose is not None:
            await aclose()


# ---- the agent application --------------------------------------------------------------


def _load_run_input(body: bytes) -> RunAgentInput:
    """Check a request body as a ``RunAgentInput`` (tolerantly: unknown fields
    dropped, each logged at WARNING with its path).

    Raises:
        DecodeError: the body is not JSON (or nests too deep).
        SchemaError: the JSON is not a ``RunAgentInput``.
    """
    document = loads(body)
    if not isinstance(document, dict):
        raise SchemaError("type", "", "a RunAgentInput must be a JSON object")
    found: list[Diagnostic] = []
    run_input: RunAgentInput = CONVERTER.load(
        upgrade_input(document), RunAgentInput, diagnostics=found
    )
    _log_warnings("run input", found)
    return run_input


def _log_warnings(what: str, found: list[Diagnostic]) -> None:
    """Each tolerated problem at WARNING with its path; past
    :data:`_MAX_LOGGED_PER_REQUEST` only their number (one request cannot flood the log)."""
    for diagnostic in found[:_MAX_LOGGED_PER_REQUEST]:
        where = f" at {diagnostic.path!r}" if diagnostic.path is not None else ""
        _logger.warning("%s%s: %s [%s]", what, where, diagnostic.message, diagnostic.code)
    if len(found) > _MAX_LOGGED_PER_REQUEST:
        more = len(found) - _MAX_LOGGED_PER_REQUEST
        _logger.warning("%s: %d more problem(s) tolerated, not logged one by one", what, more)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def run_events(
    handler: AgentHandler,
    run_input: RunAgentInput,
    *,
    max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS,
    interrupts: OpenInterrupts | None = None,
) -> AsyncIterator[Event]:
    """Run ``handler`` with a producer for ``run_input``; yields what it emits, in order.

    This is the event source :func:`agent_app` streams; it is public so that a
    framework route can stream it itself. The handler runs as a task of its own
    once iteration starts; while ``max_buffered_events`` of its events wait to be
    taken from this iterator, the handler is held (backpressure: see
    :func:`agent_app`). The stream always ends with a terminal event: when the
    handler raises (the exception is logged, not sent) or returns with the run still
    open, a RUN_ERROR (code ``agent.exception`` or ``agent.unfinished``) ends the run.
    Closing this generator (the client went away) cancels the handler and waits for
    its cleanup.

    Args:
        handler: the agent handler (see :func:`agent_app`).
        run_input: the checked run input.
        max_buffered_events: how many emitted events may wait before the handler
            is held (at least 1; default 256).
        interrupts: what the thread's last run left open, for the producer's
            interrupt rules (see :class:`~agentproto.agui.RunProducer`).

    Returns:
        An async generator of the events.

    Raises:
        UsageError: ``max_buffered_events`` is not a positive integer.
        AgentProtoError: the :class:`~agentproto.agui.RunProducer` refused
            ``run_input`` (raised here, before anything streams).
    """
    _check_limit("max_buffered_events", max_buffered_events, integer=True)
    return _prepared(handler, run_input, max_buffered_events, interrupts)[1]


def _prepared(
    handler: AgentHandler,
    run_input: RunAgentInput,
    max_buffered_events: int,
    interrupts: OpenInterrupts | None,
    checkpoints: Checkpoints | None = None,
) -> tuple[RunProducer, AsyncGenerator[Event, None]]:
    """The run's producer and its event source (see :func:`run_events`); ``checkpoints``
    observes each event as it is emitted."""
    outbox = Outbox(max_buffered_events)
    sink = outbox.put
    if checkpoints is not None:
        observe = checkpoints.observe

        def sink(event: Event) -> None:
            outbox.put(event)
            observe(event)

    producer = RunProducer(run_input, sink=sink, interrupts=interrupts)
    _log_warnings("run input", producer.diagnostics)
    return producer, _run_events(handler, run_input, producer, outbox)


async def _run_events(
    handler: AgentHandler, run_input: RunAgentInput, producer: RunProducer, outbox: Outbox
) -> AsyncGenerator[Event, None]:
    error: Exception | None = None
    try:
        task = start_handler(handler(run_input, producer), producer, outbox)
        if task is not None:
            source = stream_outbox(task, outbox)
            try:
                async for event in source:
                    yield event
            finally:
                await source.aclose()
    except Exception as exc:  # the agent failed: the client learns it from RUN_ERROR
        _logger.exception("agent handler failed")
        error = exc
    for event in outbox.take():
        yield event
    for event in _ending(producer, error):
        yield event


def _check_limit(name: str, value: Any, *, integer: bool, optional: bool = False) -> None:
    """Refuse a limit that is not a positive integer (or number, unless ``integer``;
    or ``None``, when ``optional``)."""
    if optional and value is None:
        return
    number = None if isinstance(value, bool) or not isinstance(value, int | float) else value
    if number is None or (integer and not isinstance(number, int)) or not number > 0:
        what = "a positive integer" if integer else "a positive number of seconds or None"
        raise UsageError("serve.limit", f"{name} must be {what}, not {describe(value)}")


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


def agent_app(
    handler: AgentHandler,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS,
    keepalive: float | None = None,
    interrupts: InterruptLookup | None = None,
    log: EventLog | None = None,
    detached_timeout: float | None = DEFAULT_DETACHED_TIMEOUT,
    threads: ThreadStore | None = None,
    lost_timeout: float = DEFAULT_LOST_TIMEOUT,
) -> ASGIApp:
    """An ASGI application serving one agent: POST a ``RunAgentInput``, get its events.

    The handler is called as ``handler(run_input, producer)`` with the checked input
    and a :class:`~agentproto.agui.RunProducer` for it, and returns ``None``. It may
    be a coroutine function (what it emits streams while it runs: ``await`` to let a
    burst go out), an async generator function (each event it yields is emitted
    through the producer, unless the producer already emitted that very object), or
    a plain function (it runs on the event loop: keep it quick).

    Responses: 405 for a method other than POST; 415 for a ``content-type`` that is
    not JSON (none at all is accepted); 413 or 408 for a body over a limit; 400 for a
    body that is not a ``RunAgentInput`` (``{"error": "invalid-json", "offset": ...}``
    or ``{"error": "invalid-run-input", "keyword", "location", "problems", ...}``,
    each with a ``detail``) or that the producer refuses (with its ``code``); else 200
    and the event stream (:func:`run_events`), JSON Lines when ``Accept`` asks for
    ``application/jsonl``, else SSE. Unknown input members are dropped, each logged
    at WARNING with its path. Lifespan is acknowledged; CORS is a middleware's job.

    Limits, for clients the server does not trust: a refusal's JSON body names the
    ``limit``, its ``value`` and how to raise it, and the connection closes. The
    stream goes at the client's pace (the server's ``send`` waits while its write
    buffer is full); once ``max_buffered_events`` events wait, the handler is held at
    its next ``await`` (or yield) until the client reads on, so a client that stops
    reading stops the handler. A client that disconnects (or a failing ``send``)
    cancels the handler: its ``finally`` blocks run, one INFO line is logged.

    Args:
        handler: the agent handler.
        max_body_bytes: the largest body read, in bytes (default 16 MiB); over it
            (or a ``content-length`` over it): 413 ``body-too-large``.
        body_timeout: seconds for the whole body to arrive, timed for the whole body
            and not per chunk, so that a trickle cannot hold the connection (default
            30); then 408 ``body-timeout``. ``None``: as long as the client takes.
        max_buffered_events: emitted events that may wait for the client before the
            handler is held (default 256).
        keepalive: seconds of silence before an SSE keep-alive comment; ``None``: none.
        interrupts: ``lookup(run_input)``, maybe async: what the thread's last run left
            open; a ``resume`` breaking a rule gets 400 ``invalid-resume`` (the client
            authors' guide, "Interrupts and resume").
        log: an event log (:mod:`agentproto.stores`): runs outlive their connection.
            Each run's frames are kept in it and every SSE frame carries its cursor
            as ``id:``; the same request with ``Last-Event-ID`` (or ``GET
            ?threadId=T&runId=R``, optionally with ``Last-Event-ID``) gets the frames
            after that cursor, then the live tail; a second ``POST`` of a run the log
            holds attaches from its start. The handler runs on while no client is
            attached (see :mod:`agentproto.agui._serve.resume`). ``None`` (default):
            a run lives in its response, and a client that leaves cancels it.
        detached_timeout: with a ``log``, seconds a run's handler goes on with no
            client of this process attached before it is cancelled (the run then
            ends with ``RUN_ERROR`` code ``agent.detached``); ``None``: to its end.
        lost_timeout: with a ``log``, seconds a reader of a run written by another
            process (another worker, or one that died) waits without a frame before
            it ends the run with ``RUN_ERROR`` code ``agent.lost`` (default 30); a
            writer that is alive appends a beat after a quarter of it without one.
        threads: a thread store (:mod:`agentproto.stores`; needs a ``log``): each
            run, once over, is added to its thread as a
            :class:`~agentproto.agui.History` document whose ``RUN_STARTED`` carries
            the run input, and ``GET ?threadId=T`` answers the thread's runs as one
            History JSON array (404 ``unknown-thread`` when none is recorded), from
            which a client restores the thread after a reload
            (:meth:`HttpAgent.load_thread <agentproto.agui.HttpAgent.load_thread>`).

    Returns:
        The ASGI 3 application (``app = agent_app(handler)``; ``uvicorn module:app``).

    Raises:
        UsageError: a limit (or ``keepalive``) is not a positive number; ``threads``
            without a ``log`` (``serve.threads-without-log``).
    """
    _check_limit("max_body_bytes", max_body_bytes, integer=True)
    if threads is not None and log is None:
        raise UsageError(
            "serve.threads-without-log",
            "a thread store records the runs an event log keeps: pass log= too",
        )
    _check_limit("body_timeout", body_timeout, integer=False, optional=True)
    _check_limit("max_buffered_events", max_buffered_events, integer=True)
    _check_limit("keepalive", keepalive, integer=False, optional=True)
    _check_limit("detached_timeout", detached_timeout, integer=False, optional=True)
    _check_limit("lost_timeout", lost_timeout, integer=False)
    reading = BodyLimits(max_body_bytes, body_timeout)
    runs = None if log is None else Runs(log, detached_timeout, threads, lost_timeout)
    return _Agent(handler, reading, max_buffered_events, keepalive, interrupts, runs)


@attrs.frozen
class _Agent:
    """One served agent: its handler, limits and log; answers HTTP (and WebSocket)."""

    handler: AgentHandler
    reading: BodyLimits
    max_buffered_events: int
    keepalive: float | None
    lookup: InterruptLookup | None
    runs: Runs | None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "websocket":
            await websocket_session(scope, receive, send, self)
            return
        if kind != "http":
            await _not_http(scope, receive, send, self.runs)
            return
        if self.runs is not None and scope.get("method") == "GET":
            await self._attach(scope, receive, send)
            return
        run_input = await _request_input(scope, receive, send, self.reading)
        if run_input is None:
            return  # answered with an error, or the client left before its request
        begun = await self.begin(run_input, header(scope, b"last-event-id"))
        await self._answer(scope, receive, send, begun)

    async def begin(self, run_input: RunAgentInput, cursor: str | None) -> Begun:
        """Start ``run_input``'s run, or find the logged run it names (after ``cursor``)."""
        runs = self.runs
        stream = stream_name(run_input.thread_id, run_input.run_id)
        if runs is not None:
            held = await _held_run(runs, stream, cursor)
            if held is not None:
                return held
        issued, refusal = await screen_resume(self.lookup, run_input)  # the interrupt rules
        if refusal is not None:
            return Begun(refusal=(400, refusal))
        checkpoints = None if runs is None else runs.checkpoints()
        try:
            producer, events = _prepared(
                self.handler, run_input, self.max_buffered_events, issued, checkpoints
            )
        except AgentProtoError as exc:  # the producer refused the input: nothing started
            return Begun(refusal=(400, _refusal_body(exc)))
        if runs is None:
            return Begun(events=events)
        try:
            await runs.start(stream, events, producer, checkpoints)
        except AgentProtoError as exc:
            await events.aclose()
            return Begun(refusal=refusal_of(exc))
        return Begun(stream=stream)

    async def attach(self, thread_id: str, run_id: str, cursor: str | None) -> Begun:
        """The logged run ``run_id`` of ``thread_id``, after ``cursor``."""
        if self.runs is None:
            detail = "this agent keeps no event log: runs cannot be attached to"
            return Begun(refusal=(400, {"error": "invalid-attach", "detail": detail}))
        return await _logged(self.runs, stream_name(thread_id, run_id), cursor)

    @property
    def logged(self) -> bool:
        """Whether runs are kept in an event log."""
        return self.runs is not None

    def entries(self, begun: Begun) -> AsyncGenerator[Entry, None]:
        """The logged run :meth:`begin` or :meth:`attach` came to, entry by entry."""
        assert self.runs is not None and begun.stream is not None
        runs = self.runs
        return runs.entries(begun.stream, begun.cursor, begun.preface)

    def load(self, body: bytes) -> RunAgentInput | Begun:
        """A body read as a run input, or the refusal of one that is not."""
        try:
            return _load_run_input(body)
        except AgentProtoError as exc:
            return Begun(refusal=(400, _refusal_body(exc)))

    async def _attach(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``GET ?threadId=T&runId=R``: the run's frames after ``Last-Event-ID`` (or all)."""
        query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
        thread_id, run_id = query.get("threadId", [None])[0], query.get("runId", [None])[0]
        threads = None if self.runs is None else self.runs.threads
        if thread_id is not None and run_id is None and threads is not None:
            await _thread(send, threads, thread_id)
            return
        if thread_id is None or run_id is None:
            detail = "GET attaches to a run: ?threadId=...&runId=... (POST a RunAgentInput to run)"
            await send_json(send, 400, {"error": "invalid-attach", "detail": detail})
            return
        begun = await self.attach(thread_id, run_id, header(scope, b"last-event-id"))
        await self._answer(scope, receive, send, begun)

    async def _answer(self, scope: Scope, receive: Receive, send: Send, begun: Begun) -> None:
        """Answer an HTTP request with what :meth:`begin` came to."""
        if begun.refusal is not None:
            await send_json(send, *begun.refusal)
            return
        transport = negotiate_transport(header(scope, b"accept"))
        if begun.events is not None:
            # every event comes from the run's producer, which checked it against the schema
            response: EventStreamResponse = EventStreamResponse(
                begun.events, transport=transport, check=False, keepalive=self.keepalive
            )
        else:
            assert self.runs is not None and begun.stream is not None
            runs, stream = self.runs, begun.stream
            frames = runs.frames(stream, begun.cursor, transport, begun.preface)
            response = _FrameStream(frames, transport, self.keepalive)
        await response(scope, receive, send)


async def _held_run(runs: Runs, stream: str, cursor: str | None) -> Begun | None:
    """What a request for ``stream`` comes to when the log holds the run (another worker's,
    or over: it is not run again) or a cursor names it; ``None``: the run is new."""
    if cursor is not None or runs.writer(stream) is not None:
        return await _logged(runs, stream, cursor)
    try:
        await check_cursor(runs.log, stream, None)
    except UnknownStreamError:
        return None
    except AgentProtoError as exc:
        return Begun(refusal=refusal_of(exc))
    return Begun(stream=stream)


async def _logged(runs: Runs, stream: str, cursor: str | None) -> Begun:
    """The logged stream after ``cursor`` (an expired one: after a resync), or the refusal
    of a cursor the log cannot read."""
    try:
        try:
            await check_cursor(runs.log, stream, cursor)
        except CursorExpiredError as expired:
            preface = await resync(runs.log, stream, expired, cursor)
            return Begun(stream=stream, cursor=preface[-1].cursor, preface=preface)
    except AgentProtoError as exc:
        return Begun(refusal=refusal_of(exc))
    return Begun(stream=stream, cursor=cursor)


async def _thread(send: Send, threads: ThreadStore, thread_id: str) -> None:
    """``GET ?threadId=T``: the thread's recorded runs, one History JSON array."""
    try:
        document = await thread_document(threads, thread_id)
    except StoreError:
        _logger.exception("the thread store failed")
        await send_json(send, 503, {"error": "store-unavailable", "detail": "the store failed"})
        return
    if document is None:
        await send_json(send, 404, {"error": "unknown-thread", "detail": "no run is recorded"})
        return
    headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": document})


async def _not_http(scope: Scope, receive: Receive, send: Send, runs: Runs | None) -> None:
    """Answer a connection that is not an HTTP request: lifespan, websocket, other."""
    kind = scope["type"]
    if kind == "lifespan":
        await _lifespan(receive, send)
        if runs is not None:
            await runs.aclose()
    else:
        raise UsageError("serve.scope", f"agent_app answers HTTP, not {kind!r}")


async def _request_input(
    scope: Scope, receive: Receive, send: Send, reading: BodyLimits
) -> RunAgentInput | None:
    """The request's checked run input; ``None`` once an error response is sent, or
    when the client left before sending its request."""
    if scope.get("method") != "POST":
        await send_json(
            send,
            405,
            {"error": "method-not-allowed", "detail": "POST a RunAgentInput"},
            {"allow": "POST"},
        )
        return None
    try:
        check_content_type(scope)
        body = await reading.read(scope, receive)
    except Refusal as refusal:
        await refusal.answer(send)
        return None
    if body is None:
        return None
    try:
        return _load_run_input(body)
    except AgentProtoError as exc:
        await _refuse_input(send, exc)
    return None


async def _refuse_input(send: Send, exc: AgentProtoError) -> None:
    """Answer 400 for a run input that cannot run, saying where it is wrong."""
    await send_json(send, 400, _refusal_body(exc))


def _refusal_body(exc: AgentProtoError) -> dict[str, Any]:
    """The JSON body of a 400: what is wrong, and where (a byte offset in the body for
    bad JSON, a JSON Pointer for a schema problem)."""
    if isinstance(exc, DecodeError):
        body: dict[str, Any] = {"error": "invalid-json", "detail": str(exc)}
        if exc.offset is not None:
            body["offset"] = exc.offset
        return body
    if isinstance(exc, SchemaError):
        return {
            "error": "invalid-run-input",
            "keyword": exc.keyword,
            "location": exc.location,
            "detail": exc.detail,
            "problems": [
                {"keyword": p.keyword, "location": p.location, "detail": p.detail}
                for p in exc.problems
            ],
        }
    body = {"error": "invalid-run-input", "detail": str(exc)}
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        body["code"] = code
    return body

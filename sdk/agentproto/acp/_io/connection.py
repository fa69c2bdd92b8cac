"""ACP connections over asyncio byte streams: the I/O edge of :mod:`agentproto.acp._rpc.endpoint`.

Theory of operation
-------------------
A :class:`Connection` wraps one sans-I/O :class:`~agentproto.acp._rpc.endpoint.Endpoint`
and a pair of byte streams (an agent's stdio, a socket, an in-memory pipe). One
*reader task* reads bytes, feeds the endpoint and acts on its events:

* an incoming request runs its handler in a task of its own, so requests in
  both directions proceed concurrently; at most ``max_concurrent_requests`` run
  at once (the reader waits for a slot, which stops reading: backpressure);
* incoming notifications go through a bounded queue to one *dispatcher task*,
  which runs their handlers one at a time in receive order (``session/update``
  order matters); a full queue stops the reader, so a peer that floods
  notifications is slowed down by the transport instead of filling memory;
* responses resolve the futures of :meth:`Connection.request`;
* ``$/cancel_request`` cancels the handler's task, and the peer gets the
  ``request cancelled`` error.

A batch from the peer is served request by request like the rest; the endpoint
gathers the answers and the connection writes them as one array once the last
is answered. :meth:`Connection.send_batch` sends a batch of this side's calls.

Everything the endpoint queues is written at once, in order, and drained.
When the peer's stream ends, the requests it sent before the end are still
answered, for up to ``drain_timeout`` seconds (a client that pipes its requests
and closes its end, ``printf ... | agent``, gets its answers), and the
notifications it sent are handled. Then (or at once when the connection is closed
here) pending requests fail with :class:`~agentproto.acp.ConnectionClosedError`,
whose ``by_peer`` says which of the two happened, handler tasks still running are
cancelled and every task the connection started has ended when
:meth:`Connection.close` or :meth:`Connection.wait_closed` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, overload

from typing_extensions import TypeForm

from agentproto._core.diagnostics import Diagnostic, log_diagnostics
from agentproto._core.errors import (
    AgentProtoError,
    ConnectionClosedError,
    ProtocolError,
    RequestTimeoutError,
    RpcError,
    SchemaError,
    UsageError,
)
from agentproto.acp._io.streams import ByteReader, ByteWriter, Translator
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._rpc.endpoint import (
    BatchCall,
    CancelRequested,
    Endpoint,
    Event,
    NotificationReceived,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    Side,
)

__all__ = [
    "AgentSideConnection",
    "BatchCall",
    "ByteReader",
    "ByteWriter",
    "ClientSideConnection",
    "Connection",
]

_logger = logging.getLogger("agentproto.acp")
P = TypeVar("P")
Handler = Callable[[Any], Awaitable[Any]]
ExtensionHandler = Callable[[str, Any], Awaitable[Any]]
_DEFAULT: Any = object()
_READ_SIZE = 64 * 1024
_Queued = NotificationReceived | asyncio.Future[None] | None  # a future: settle()'s barrier


class Connection:
    """One side of an ACP connection over a pair of byte streams.

    Register handlers with :meth:`handle` (before :meth:`start`, or before the
    peer can call them), then use it as an async context manager or call
    :meth:`start` and :meth:`close`.

    Args:
        side: ``"agent"`` or ``"client"``: the side this connection plays.
        reader: the peer's bytes (``read(n)``).
        writer: the bytes for the peer (``write``, ``drain``, ``close``).
        protocol: ACP major version (2, or 1).
        request_timeout: seconds :meth:`request` waits by default (``None``:
            no limit).
        max_concurrent_requests: incoming requests handled at once.
        max_queued_notifications: incoming notifications waiting for their
            handler before the connection stops reading.
        max_line_bytes: the longest line accepted from the peer.
        strict: read incoming params and results strictly.
        on_diagnostic: called with each tolerated problem (default: logged to
            the ``agentproto`` logger).
        drain_timeout: seconds the requests the peer sent before its stream ended
            are still given to be answered (then their handlers are cancelled).
    """

    def __init__(
        self,
        side: Side,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        protocol: int = 2,
        request_timeout: float | None = None,
        max_concurrent_requests: int = 64,
        max_queued_notifications: int = 256,
        max_line_bytes: int = 64 * 1024 * 1024,
        strict: bool = False,
        on_diagnostic: Callable[[Diagnostic], None] | None = None,
        drain_timeout: float = 5.0,
    ) -> None:
        self._drain_timeout = drain_timeout
        self._endpoint = Endpoint(
            side, protocol=protocol, strict=strict, max_line_bytes=max_line_bytes
        )
        self._reader = reader
        self._writer = writer
        self._timeout = request_timeout
        self._on_diagnostic = on_diagnostic or (lambda d: log_diagnostics([d]))
        self._handlers: dict[tuple[str, str], Handler] = {}
        self._extension: ExtensionHandler | None = None
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._serving: dict[int | str, asyncio.Task[None]] = {}
        self._peer_cancelled: set[int | str] = set()
        self._notes: asyncio.Queue[_Queued] = asyncio.Queue(max_queued_notifications)
        self._slots = asyncio.Semaphore(max_concurrent_requests)
        self._drain_lock = asyncio.Lock()
        self._closed = asyncio.Event()
        self._reader_task: asyncio.Task[None] | None = None
        self._dispatcher: asyncio.Task[None] | None = None
        self._error: AgentProtoError | None = None
        self._closed_here = False  # close() ended it, not the peer
        self._translator: Translator | None = None

    # ---- handlers ----------------------------------------------------------------------------

    @property
    def side(self) -> Side:
        """The side this connection plays."""
        return self._endpoint.side

    @overload
    def handle(self, target: type[P], handler: Callable[[P], Awaitable[Any]]) -> None: ...

    @overload  # a union alias of params classes (SetSessionConfigOptionRequest)
    def handle(self, target: TypeForm[P], handler: Callable[[P], Awaitable[Any]]) -> None: ...

    @overload
    def handle(self, target: str, handler: Handler) -> None: ...

    def handle(self, target: Any, handler: Handler) -> None:
        """Register the handler of a method this side handles.

        A request handler returns the result (an instance of the method's result
        class, or plain JSON for an untyped method) or raises :class:`RpcError`
        to answer with that error; any other exception answers ``internal
        error``. A notification handler's return value is ignored.

        Args:
            target: the method's params class (``PromptRequest``), the union
                alias of its params classes (``SetSessionConfigOptionRequest``;
                the handler then takes the union), or its name;
                a name that is both a request and a notification registers both.
                A ``_``-prefixed name registers an extension method, whose
                handler gets the params as plain JSON.
            handler: an async function of the params.

        Raises:
            UsageError: no such method, or the other side handles it.
        """
        table = self._endpoint.table
        if isinstance(target, str) and target.startswith("_"):
            self._handlers[("request", target)] = handler
            self._handlers[("notification", target)] = handler
            return
        if isinstance(target, str):
            specs = [s for s in (table.requests.get(target), table.notifications.get(target)) if s]
        else:
            spec = table.for_params(target)
            specs = [] if spec is None else [spec]
        if not specs:
            raise UsageError("connection.unknown-method", f"no method for {target!r}")
        mine = [spec for spec in specs if spec.side == self.side]
        if not mine:
            sides = ", ".join(sorted({spec.side for spec in specs}))
            raise UsageError(
                "connection.wrong-side",
                f"{specs[0].method!r} is handled by the {sides}, not by this {self.side}",
            )
        for spec in mine:
            self._handlers[(spec.kind, spec.method)] = handler

    def handle_extensions(self, handler: ExtensionHandler) -> None:
        """Register the handler of every extension method without its own handler.

        Args:
            handler: an async function of the method name and its plain JSON
                params; its return value answers a request.
        """
        self._extension = handler

    @property
    def protocol(self) -> int:
        """The ACP major version spoken on the wire."""
        return self._endpoint.protocol

    async def settle(self) -> None:
        """Wait until the handlers of the notifications received so far have run."""
        if self._dispatcher is None or self._dispatcher.done():
            return
        barrier: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self._notes.put(barrier)
        await asyncio.wait({barrier, self._dispatcher}, return_when=asyncio.FIRST_COMPLETED)

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start reading from the peer (in a task of the running event loop)."""
        if self._reader_task is None:
            self._dispatcher = asyncio.create_task(self._dispatch_notifications())
            self._reader_task = asyncio.create_task(self._run())

    async def __aenter__(self) -> Connection:
        self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """Whether the connection has closed (either side)."""
        return self._closed.is_set()

    @property
    def closed_by_peer(self) -> bool:
        """Whether the connection has closed without this side closing it: the peer's
        stream ended or failed, or the peer broke the protocol (``False`` while open,
        and after :meth:`close` ended it)."""
        return self.closed and not self._closed_here

    @property
    def queued_notifications(self) -> int:
        """Incoming notifications waiting for their handler."""
        return self._notes.qsize()

    @property
    def error(self) -> AgentProtoError | None:
        """Why the connection closed, when the peer broke the protocol or the stream failed."""
        return self._error

    async def close(self) -> None:
        """Close the connection and wait until every task it started has ended."""
        if not self._endpoint.closed:  # else the peer ended it first
            self._closed_here = True
        if self._reader_task is not None and not self._reader_task.done():
            self._reader_task.cancel()
        self._finish(self._error)  # also when the reader task was cancelled before it ran
        await self._join()

    async def wait_closed(self) -> None:
        """Wait until the connection has closed and its tasks have ended (starts it if needed)."""
        self.start()
        await self._closed.wait()
        await self._join()

    async def _join(self) -> None:
        me = asyncio.current_task()
        tasks = [
            task
            for task in (self._reader_task, self._dispatcher, *self._serving.values())
            if task is not None and task is not me
        ]
        await asyncio.gather(*tasks, return_exceptions=True)
        wait_closed = getattr(self._writer, "wait_closed", None)
        if wait_closed is not None:
            with contextlib.suppress(OSError, RuntimeError):
                await wait_closed()

    # ---- sending -----------------------------------------------------------------------------

    async def request(
        self, target: Any, params: Any = None, *, timeout: float | None = _DEFAULT
    ) -> Any:
        """Send a request and wait for its result.

        Args:
            target: a typed params object (``PromptRequest(...)``), or a method
                name with ``params``; an extension method's params go as given.
            params: the params when ``target`` is a method name.
            timeout: seconds to wait (default: the connection's
                ``request_timeout``; ``None``: no limit). On expiry the peer is
                asked to cancel (``$/cancel_request``). Cancelling the awaiting
                task does the same.

        Returns:
            The typed result (plain JSON for an untyped method).

        Raises:
            RpcError: the peer answered with an error.
            RequestTimeoutError: no response within ``timeout``.
            ConnectionClosedError: the connection closed first.
            ProtocolError: the result does not match the schema.
            UsageError: no such request, or the peer does not handle it.
        """
        if self._translator is not None:
            send = functools.partial(self._request, timeout=timeout)
            return await self._translator.request(send, target, params)
        return await self._request(target, params, timeout=timeout)

    async def _request(self, target: Any, params: Any = None, *, timeout: Any = _DEFAULT) -> Any:
        self.start()
        if self._endpoint.closed:
            raise self._closed_error()
        ident = self._endpoint.send_request(target, params)
        method = self._endpoint.method_of(ident)
        return await self._response(ident, method, self._expect(ident), timeout, flush=True)

    def _expect(self, ident: int) -> asyncio.Future[Any]:
        """The future the response to our request ``ident`` will settle."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        return future

    async def _response(
        self, ident: int, method: str, future: asyncio.Future[Any], timeout: Any, *, flush: bool
    ) -> Any:
        """Wait for the response to our request ``ident`` (after writing it, with ``flush``)."""
        limit = self._timeout if timeout is _DEFAULT else timeout
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                if flush:
                    await self._flush()
                return await future
        except TimeoutError:
            if not deadline.expired():
                raise
            self._give_up(ident)
            raise RequestTimeoutError(method, limit or 0.0) from None
        except asyncio.CancelledError:
            self._give_up(ident)
            raise
        finally:
            self._waiting.pop(ident, None)
            if future.done() and not future.cancelled():
                future.exception()  # retrieved, also when this task was cancelled meanwhile

    async def send_batch(
        self, calls: Sequence[BatchCall], *, timeout: float | None = _DEFAULT
    ) -> list[asyncio.Task[Any] | None]:
        """Send several requests and notifications as one JSON-RPC batch (one line).

        The peer answers the requests with one array (JSON-RPC 2.0 section 6); each
        response settles its own request, whatever its place in the array.

        Example::

            first, second = await connection.send_batch(
                [BatchCall.request(ListSessionsRequest()), BatchCall.request(ListSessionsRequest())]
            )
            listed = await first

        Args:
            calls: the members in order, built with :meth:`BatchCall.request` and
                :meth:`BatchCall.notify` (arguments as for :meth:`request`).
            timeout: for each request, as for :meth:`request`, counted from now.

        Returns:
            For each member in order: for a request, a task that returns its typed
            result or raises as :meth:`request` does (cancelling it asks the peer
            to cancel that request); for a notification, ``None``. Await every
            task (``asyncio.gather(*tasks, return_exceptions=True)`` for all):
            the failure of a task never awaited is logged by asyncio.

        Raises:
            UsageError: no member, a member's method does not exist or the peer does
                not handle it, or the connection speaks ACP v1 (no batches there).
            SchemaError: dict params that the schema rejects (nothing is sent).
            ConnectionClosedError: the connection is closed, or writing failed.
        """
        self.start()
        if self._endpoint.closed:
            raise self._closed_error()
        ids = self._endpoint.send_batch(calls)
        tasks: list[asyncio.Task[Any] | None] = [
            None
            if ident is None
            else asyncio.create_task(
                self._response(
                    ident,
                    self._endpoint.method_of(ident),
                    self._expect(ident),
                    timeout,
                    flush=False,
                )
            )
            for ident in ids
        ]
        try:
            await self._flush()
        except BaseException:
            for task in tasks:
                if task is not None:
                    task.cancel()
            raise
        return tasks

    async def notify(self, target: Any, params: Any = None) -> None:
        """Send a notification (arguments as for :meth:`request`) and drain the stream.

        Raises:
            ConnectionClosedError: the connection is closed.
            UsageError: no such notification, or the peer does not handle it.
        """
        if self._translator is not None:
            return await self._translator.notify(self._notify, target, params)
        await self._notify(target, params)

    async def _notify(self, target: Any, params: Any = None) -> None:
        self.start()
        if self._endpoint.closed:
            raise self._closed_error()
        self._endpoint.notify(target, params)
        await self._flush()

    def _give_up(self, ident: int) -> None:
        """Stop waiting for ``ident``: ask the peer to cancel it and forget it."""
        if ident in self._endpoint.pending:
            self._endpoint.cancel(ident, forget=True)
            self._write()

    def _closed_error(self) -> ConnectionClosedError:
        error = ConnectionClosedError(
            "connection.closed", "the connection is closed", by_peer=not self._closed_here
        )
        error.__cause__ = self._error
        return error

    def _write(self) -> bool:
        """Write what the endpoint queued; whether anything was written."""
        data = self._endpoint.data_to_send()
        if not data:
            return False
        try:
            self._writer.write(data)
        except (OSError, RuntimeError) as err:
            self._broken(err)
            raise self._closed_error() from err
        return True

    async def _flush(self) -> None:
        """Write what the endpoint queued and drain.

        Raises:
            ConnectionClosedError: the stream failed.
        """
        if not self._write():
            return
        try:
            async with self._drain_lock:
                await self._writer.drain()
        except (OSError, RuntimeError) as err:
            self._broken(err)
            raise self._closed_error() from err

    def _broken(self, err: BaseException) -> None:
        """The stream to the peer failed: close the connection."""
        if self._error is None:
            self._error = ConnectionClosedError(
                "connection.broken", f"writing failed: {err!r}", by_peer=True
            )
        if self._reader_task is not None and not self._reader_task.done():
            self._reader_task.cancel()
        self._finish(self._error)

    # ---- reading -----------------------------------------------------------------------------

    async def _run(self) -> None:
        """The reader task: read, feed the endpoint, act on its events, until the end."""
        try:
            while True:
                data = await self._read()
                if not data:
                    await self._dispatch(self._endpoint.feed(b"\n"))  # a last unended line
                    await self._answer_in_flight()
                    await self._dispatch(self._endpoint.feed_eof())
                    break
                await self._dispatch(self._endpoint.feed(data))
            await self._notes.put(None)  # the dispatcher handles what is queued, then ends
            if self._dispatcher is not None:
                await self._dispatcher
        except ProtocolError as err:
            self._error = err
            _logger.warning("closing the ACP connection: %s", err)
        except ConnectionClosedError:
            raise  # closed meanwhile (an OSError too, but no failure of the stream)
        except (OSError, RuntimeError) as err:
            self._error = ConnectionClosedError(
                "connection.broken", f"reading failed: {err!r}", by_peer=True
            )
        finally:
            self._finish(self._error)

    async def _answer_in_flight(self) -> None:
        """The peer's stream ended: give its requests ``drain_timeout`` seconds to be
        answered (the answers are written as they come)."""
        serving = [task for task in self._serving.values() if not task.done()]
        if serving and self._drain_timeout > 0:
            await asyncio.wait(serving, timeout=self._drain_timeout)

    async def _read(self) -> bytes:
        read = getattr(self._reader, "read", None)
        if read is not None:
            data: bytes = await read(_READ_SIZE)
        else:  # a reader with readline() only
            data = await self._reader.readline()  # type: ignore[attr-defined]
        return data

    async def _dispatch(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, Diagnostic):
                self._on_diagnostic(event)
            elif isinstance(event, RequestReceived):
                await self._start_serving(event)
            elif isinstance(event, NotificationReceived):
                for diagnostic in event.diagnostics:
                    self._on_diagnostic(diagnostic)
                await self._notes.put(event)
            elif isinstance(event, ResponseReceived | RequestFailed):
                self._settle(event)
            elif isinstance(event, CancelRequested):
                task = self._serving.get(event.id)
                if task is not None:
                    self._peer_cancelled.add(event.id)
                    task.cancel()
        with contextlib.suppress(ConnectionClosedError):
            await self._flush()

    def _settle(self, event: ResponseReceived | RequestFailed) -> None:
        future = self._waiting.get(event.id)
        if future is None or future.done():
            return
        if isinstance(event, ResponseReceived):
            future.set_result(event.result)
        else:
            future.set_exception(event.error)

    def _request_handler(self, event: RequestReceived) -> Callable[[], Awaitable[Any]] | None:
        handler = self._handlers.get(("request", event.method))
        if handler is not None:
            return lambda: handler(event.params)
        extension = self._extension
        if event.extension and extension is not None:
            return lambda: extension(event.method, event.params)
        return None

    async def _start_serving(self, event: RequestReceived) -> None:
        for diagnostic in event.diagnostics:
            self._on_diagnostic(diagnostic)
        call = self._request_handler(event)
        if call is None:
            message = f"method not found: {event.method} (no handler)"
            self._endpoint.respond_error(event.id, RpcErrorCode.METHOD_NOT_FOUND, message)
            return
        await self._slots.acquire()
        task = asyncio.create_task(self._serve(event, call))
        self._serving[event.id] = task
        task.add_done_callback(lambda done: self._served(event.id, done))

    def _served(self, ident: int | str, task: asyncio.Task[None]) -> None:
        self._slots.release()
        if self._serving.get(ident) is task:
            del self._serving[ident]
            self._peer_cancelled.discard(ident)

    async def _serve(self, event: RequestReceived, call: Callable[[], Awaitable[Any]]) -> None:
        """A handler task: run the handler, answer with its result or error."""
        ident = event.id
        try:
            result = await call()
        except asyncio.CancelledError:
            if ident not in self._peer_cancelled or self._endpoint.closed:
                raise
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            self._answer(ident, RpcError(RpcErrorCode.REQUEST_CANCELLED, "request cancelled"))
        except RpcError as err:
            self._answer(ident, err)
        except Exception as err:
            _logger.exception("the handler of %s failed", event.method)
            self._answer(ident, _internal_error(err))
        else:
            if ident in self._endpoint.in_flight:
                try:
                    self._endpoint.respond(ident, result)
                except (UsageError, SchemaError) as err:
                    _logger.error("the handler of %s returned a bad result: %s", event.method, err)
                    self._answer(ident, _internal_error(err))
        with contextlib.suppress(ConnectionClosedError):
            await self._flush()

    def _answer(self, ident: int | str, error: RpcError) -> None:
        if ident in self._endpoint.in_flight:
            self._endpoint.respond_error(ident, error)

    async def _dispatch_notifications(self) -> None:
        """The dispatcher task: notification handlers, one at a time, in receive order."""
        while (event := await self._notes.get()) is not None:
            if isinstance(event, asyncio.Future):
                event.set_result(None)  # settle(): what came before it was handled
                continue
            handler = self._handlers.get(("notification", event.method))
            try:
                if handler is not None:
                    await handler(event.params)
                elif event.extension and self._extension is not None:
                    await self._extension(event.method, event.params)
                else:
                    self._on_diagnostic(
                        Diagnostic(
                            code="connection.unhandled-notification",
                            message=f"no handler for {event.method!r}",
                            subject=event.method,
                        )
                    )
            except Exception:
                _logger.exception("the handler of %s failed", event.method)

    def _finish(self, error: AgentProtoError | None) -> None:
        """Close everything (synchronously): fail pending requests, cancel handlers."""
        if self._closed.is_set():
            return
        for event in self._endpoint.close(by_peer=not self._closed_here):
            if isinstance(event, RequestFailed):
                event.error.__cause__ = error
                self._settle(event)
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(self._closed_error())
        for task in self._serving.values():
            task.cancel()
        if self._dispatcher is not None and not self._dispatcher.done():
            self._dispatcher.cancel()
        data = self._endpoint.data_to_send()  # a batch partly answered: the answers it has
        with contextlib.suppress(OSError, RuntimeError):
            if data:
                self._writer.write(data)
            self._writer.close()
        self._closed.set()


def _internal_error(err: BaseException) -> RpcError:
    return RpcError(RpcErrorCode.INTERNAL_ERROR, "internal error", {"details": str(err)})


class AgentSideConnection(Connection):
    """The agent's end: it serves agent methods (``session/prompt``, …) and calls
    client methods (``session/request_permission``, …).

    Args:
        reader: the client's bytes (the agent's stdin).
        writer: the bytes for the client (the agent's stdout).
        **options: as for :class:`Connection`.
    """

    def __init__(self, reader: ByteReader, writer: ByteWriter, **options: Any) -> None:
        super().__init__("agent", reader, writer, **options)


class ClientSideConnection(Connection):
    """The client's (editor's) end: it serves client methods (``session/update``,
    ``session/request_permission``, …) and calls agent methods.

    Args:
        reader: the agent's bytes (its stdout).
        writer: the bytes for the agent (its stdin).
        **options: as for :class:`Connection`.
    """

    def __init__(self, reader: ByteReader, writer: ByteWriter, **options: Any) -> None:
        super().__init__("client", reader, writer, **options)


def switch_protocol(
    connection: Connection, protocol: int, translator: Translator | None = None
) -> None:
    """Make ``connection`` speak ``protocol`` on the wire from now on, ``translator``
    sending what the application sends in it (the runner and the client call it once
    ``initialize`` settled on ACP v1)."""
    connection._endpoint.switch_protocol(protocol)
    connection._translator = translator

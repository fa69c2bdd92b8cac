"""Runs that outlive their connection: every frame in an event log, read after a cursor.

Theory of operation
-------------------
When :func:`~agentproto.agui.agent_app` is given an event log
(:class:`~agentproto.stores.EventLog`), a run no longer lives in the response that
started it. A :class:`RunWriter` task runs the handler and appends each event it
emits (its compact JSON) to the log, under the run's stream (:func:`stream_name`:
the thread and run ids), ending the stream with the run. Every response, the first
one included, is a *reader* (:func:`read_frames`): it takes the frames after a
cursor from the log, waiting for the live tail, and sends each as an SSE frame
whose ``id:`` is the frame's cursor (JSON Lines: the bare line, no cursor). A
response from the start opens with a block holding only the start's cursor
(``id:`` and no ``data:``, which dispatches no event), so that a client cut off
before the first frame can resume too.

A client that lost its connection sends the same request again with the
``Last-Event-ID`` header (what a browser's ``EventSource`` does), or asks
``GET ?threadId=T&runId=R`` to attach to a run from another client (a reloaded
page): it gets exactly the frames after its cursor, then the live tail. A second
``POST`` of a run already in the log attaches from its start instead of running it
again. The handler goes on while no client is attached; it is cancelled (and the
run ended with ``RUN_ERROR`` code ``agent.detached``) only when no client was
attached for ``detached_timeout`` seconds.

Cursors are checked by the log (:mod:`agentproto._core.store.log`): a malformed or
foreign cursor is 400, a run the log does not hold 404, a cursor whose frames
retention dropped 410 ``cursor-expired``, a failing store 503, each with a JSON
body naming the ``error`` code. A store that fails while a response streams ends
that response (the failure is logged); the client's reconnection then gets 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any, Final

from agentproto._core.errors import (
    AgentProtoError,
    CursorError,
    CursorExpiredError,
    StoreError,
    UnknownStreamError,
)
from agentproto._core.json.codec import dumps
from agentproto._core.store.log import Entry, EventLog, cursor_of
from agentproto.agui._generated import Event
from agentproto.agui._produce.producer import RunProducer
from agentproto.agui._protocol.encoding import Transport
from agentproto.agui._protocol.wire import CONVERTER

__all__ = [
    "READ_WAIT",
    "RunWriter",
    "Runs",
    "check_cursor",
    "read_entries",
    "read_frames",
    "refusal_of",
    "stream_name",
]

READ_WAIT: Final = 15.0
"""Seconds a reader waits in one :meth:`EventLog.read` for the live tail."""
_BATCH: Final = 256

_logger = logging.getLogger("agentproto.agui")


def stream_name(thread_id: str, run_id: str) -> str:
    """The log stream of one run (unambiguous whatever the ids hold)."""
    return f"agui:{len(thread_id)}:{thread_id}:{run_id}"


def refusal_of(error: AgentProtoError) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON body answering a cursor or store error."""
    if isinstance(error, UnknownStreamError):
        return 404, {"error": "unknown-run", "detail": "no such run is held"}
    if isinstance(error, CursorExpiredError):
        return 410, {"error": "cursor-expired", "detail": str(error)}
    if isinstance(error, CursorError):
        return 400, {"error": "invalid-cursor", "code": error.code, "detail": str(error)}
    return 503, {"error": "store-unavailable", "detail": "the event log failed"}


class RunWriter:
    """One run of this process: its handler's events appended to the log as they come.

    Args:
        log: the event log.
        stream: the run's stream.
        events: the run's events (from :func:`~agentproto.agui.run_events`'s machinery).
        producer: the run's producer (to end the run when it is abandoned).
        detached_timeout: seconds with no reader attached before the handler is
            cancelled; ``None``: it runs to its end.
        done: called when the writer is over.
    """

    def __init__(
        self,
        log: EventLog,
        stream: str,
        events: AsyncGenerator[Event, None],
        producer: RunProducer,
        detached_timeout: float | None,
        done: Any,
    ) -> None:
        self.log = log
        self.stream = stream
        self._events = events
        self._producer = producer
        self._detached_timeout = detached_timeout
        self._readers = 0
        self._timer: asyncio.TimerHandle | None = None
        self._abandoned = False
        self.task = asyncio.ensure_future(self._write())
        self.task.add_done_callback(lambda _: done(stream))

    def attach(self) -> None:
        """A reader started reading the run."""
        self._readers += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def detach(self) -> None:
        """A reader stopped; the last one starts the detached clock."""
        self._readers -= 1
        if self._readers == 0 and self._detached_timeout is not None and not self.task.done():
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self._detached_timeout, self._abandon)

    def _abandon(self) -> None:
        _logger.info("no client attached to run %s; cancelling its handler", self.stream)
        self._abandoned = True
        self.task.cancel()

    async def _write(self) -> None:
        ending: list[bytes] = []
        try:
            try:
                async for event in self._events:
                    await self.log.append(self.stream, [_frame(event)])
            finally:
                await self._events.aclose()
        except asyncio.CancelledError:
            if not self._abandoned:
                raise
            ending = self._abandoned_ending()
        except StoreError:
            _logger.exception("the event log failed; run %s is stopped", self.stream)
            return
        try:
            await self.log.append(self.stream, ending, end=True)
        except StoreError:
            _logger.exception("the event log failed; run %s is not ended in it", self.stream)

    def _abandoned_ending(self) -> list[bytes]:
        if self._producer.closed or self._producer.phase not in ("idle", "running"):
            return []
        event = self._producer.run_error("no client was attached to the run", code="agent.detached")
        return [_frame(event)]

    async def aclose(self) -> None:
        """Cancel the run (server shutdown) and wait for it."""
        self._abandoned = True
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def _frame(event: Event) -> bytes:
    return dumps(CONVERTER.dump(event))


class Runs:
    """The runs this process writes, by stream."""

    def __init__(self, log: EventLog, detached_timeout: float | None) -> None:
        self.log = log
        self.detached_timeout = detached_timeout
        self._writers: dict[str, RunWriter] = {}

    async def start(
        self, stream: str, events: AsyncGenerator[Event, None], producer: RunProducer
    ) -> RunWriter:
        """Start writing a run's events (its stream exists in the log on return).

        Raises:
            StoreError: the log failed; the run did not start.
        """
        await self.log.append(stream, [])
        writer = RunWriter(
            self.log, stream, events, producer, self.detached_timeout, self._writers.pop
        )
        self._writers[stream] = writer
        return writer

    def writer(self, stream: str) -> RunWriter | None:
        """The writer of ``stream`` in this process, if it is running."""
        return self._writers.get(stream)

    async def aclose(self) -> None:
        """Cancel every run (the server shuts down)."""
        for writer in list(self._writers.values()):
            await writer.aclose()


async def check_cursor(log: EventLog, stream: str, cursor: str | None) -> None:
    """Refuse, before anything streams, a cursor the log cannot read after.

    Raises:
        CursorError: (and its subclasses) as :meth:`EventLog.read` does.
        StoreError: the log failed.
    """
    await log.read(stream, cursor, limit=1)


async def read_entries(
    log: EventLog, stream: str, cursor: str | None, writer: RunWriter | None
) -> AsyncGenerator[Entry, None]:
    """The run's entries after ``cursor``, to its end, waiting for the live tail (a store
    failure ends them: it is logged)."""
    if writer is not None:
        writer.attach()
    try:
        while True:
            try:
                page = await log.read(stream, cursor, limit=_BATCH, wait=READ_WAIT)
            except AgentProtoError:
                _logger.exception("reading run %s from the event log failed", stream)
                return
            for entry in page.entries:
                yield entry
            cursor = page.cursor
            if page.ended:
                return
    finally:
        if writer is not None:
            writer.detach()


async def read_frames(
    log: EventLog,
    stream: str,
    cursor: str | None,
    transport: Transport,
    writer: RunWriter | None,
) -> AsyncGenerator[bytes, None]:
    """The run's frames after ``cursor`` as SSE (with ``id:``) or JSON Lines, to its end."""
    if cursor is None and transport == "sse":  # the start's cursor: resumable from byte one
        yield b"id: %b\n\n" % cursor_of(stream, 0).encode("ascii")
    entries = read_entries(log, stream, cursor, writer)
    try:
        async for entry in entries:
            if transport == "sse":
                yield b"id: %b\ndata: %b\n\n" % (entry.cursor.encode("ascii"), entry.data)
            else:
                yield entry.data + b"\n"
    finally:
        await entries.aclose()

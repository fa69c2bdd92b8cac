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

Frames of a run stream are of three kinds, told apart by their first byte: events (a
JSON object, the only frames readers send on), checkpoints (a JSON array, below) and
beats (``.``). Several processes may share a log (Redis; SQLite on one machine), so a
run may be read where it is not written, and its writer may die. Two signs of life
cross between them: the writer appends a beat after ``lost_timeout / 4`` seconds
without an append, and a reader in a process without the run's writer marks the run's
readers stream (:func:`readers_of`) at least every quarter of ``detached_timeout``.
The writer's detached clock counts those marks as readers; a reader that hears
nothing from the run for ``lost_timeout`` seconds takes the writer for lost and ends
the run itself with ``RUN_ERROR`` code ``agent.lost`` (a writer that comes back finds
its run ended and stops its handler).

A client that lost its connection sends the same request again with the
``Last-Event-ID`` header (what a browser's ``EventSource`` does), or asks
``GET ?threadId=T&runId=R`` to attach to a run from another client (a reloaded
page): it gets exactly the frames after its cursor, then the live tail. A second
``POST`` of a run already in the log attaches from its start instead of running it
again. The handler goes on while no client is attached; it is cancelled (and the
run ended with ``RUN_ERROR`` code ``agent.detached``) only when no client was
attached for ``detached_timeout`` seconds.

Cursors are checked by the log (:mod:`agentproto._core.store.log`): a malformed or
foreign cursor is 400, a run the log does not hold 404, a failing store 503, each
with a JSON body naming the ``error`` code. A store that fails while a response
streams ends that response (the failure is logged); the client's reconnection then
gets 503.

A cursor whose frames retention dropped (the log keeps ``max_frames`` per stream)
cannot be answered frame by frame; it is answered from a *checkpoint*
(:class:`Checkpoints`). While the run goes on, at the first point where nothing in
it is open (no message, tool call, reasoning, step or subagent; every tool call
answered: :attr:`RunProducer.quiet <agentproto.agui.RunProducer.quiet>`) after
every quarter of ``max_frames`` events, the writer appends a checkpoint frame (a
JSON array, which no reader sends on): the events that rebuild the client's view
of the run as it stands there. An expired cursor gets those events from the first
checkpoint the log still holds, then the frames after it: the run's
``RUN_STARTED`` (only to a client that saw nothing), a ``CUSTOM`` event named
``agentproto.resync`` (what the client had open is over), then the messages and
activities in conversation order (``MESSAGES_SNAPSHOT`` of the messages before
each activity, the activity's ``ACTIVITY_SNAPSHOT``, and a last
``MESSAGES_SNAPSHOT`` of them all: activity messages never ride in a messages
snapshot, since a client holds activities of earlier runs the server never saw)
and a ``STATE_SNAPSHOT``. Each of those frames but the last carries the cursor the
client sent, so that a client cut off among them comes back to the same answer.
Only a log holding no checkpoint of the run (no quiet point in the frames kept,
or the stream dropped whole after ``max_age``) answers 410 ``cursor-expired``:
never a silent gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import AsyncGenerator
from typing import Any, Final

import attrs

from agentproto._core.errors import (
    AgentProtoError,
    CursorError,
    CursorExpiredError,
    StoreError,
    UnknownStreamError,
    UsageError,
)
from agentproto._core.json.codec import dumps, loads
from agentproto._core.store.log import Entry, EventLog, ThreadStore, cursor_of, position_of
from agentproto.agui._generated import (
    ActivityMessage,
    ActivitySnapshotEvent,
    CustomEvent,
    Event,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunStartedEvent,
    StateSnapshotEvent,
)
from agentproto.agui._produce.producer import RunProducer
from agentproto.agui._protocol.encoding import Transport
from agentproto.agui._protocol.kinds import RESYNC
from agentproto.agui._protocol.wire import CONVERTER

__all__ = [
    "DEFAULT_LOST_TIMEOUT",
    "READ_WAIT",
    "Checkpoints",
    "RunWriter",
    "Runs",
    "ThreadRecord",
    "check_cursor",
    "readers_of",
    "refusal_of",
    "resync",
    "stream_name",
    "thread_document",
]

READ_WAIT: Final = 15.0
"""Seconds a reader waits in one :meth:`EventLog.read` for the live tail."""
_BATCH: Final = 256
_CHECKPOINT: Final = b"["
"""How a checkpoint frame begins."""
_EVENT: Final = b"{"
"""How an event frame begins (the only frames readers send on)."""
_BEAT: Final = b"."
"""A writer's beat: the run goes on, quiet."""
DEFAULT_LOST_TIMEOUT: Final = 30.0
"""Seconds without a frame from a run written by another process before it is lost."""

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


class Checkpoints:
    """Where a run can be rebuilt from snapshots: taken as the producer emits (its sink
    calls :meth:`observe`), appended by the writer once the event they follow is in the
    log (:meth:`due`).

    Args:
        every: the fewest events between two checkpoints.
    """

    def __init__(self, every: int) -> None:
        self.every = every
        self.producer: RunProducer | None = None
        self._emitted = 0
        self._since = 0
        self._first: Any = None  # the run's first event (RUN_STARTED), as wire JSON
        self._taken: deque[tuple[int, bytes]] = deque()

    def observe(self, event: Event) -> None:
        """The producer emitted ``event`` (its conversation and verifier hold it)."""
        self._emitted += 1
        self._since += 1
        if self._first is None:
            self._first = CONVERTER.dump(event)
        producer = self.producer
        if self._since >= self.every and producer is not None and producer.quiet:
            self._since = 0
            self._taken.append((self._emitted, self._frame(producer)))

    def _frame(self, producer: RunProducer) -> bytes:
        conversation = producer.conversation
        resync = CustomEvent(name=RESYNC, value={"reason": "cursor-expired"})
        events: list[Event] = [resync]
        before: list[Any] = []
        for message in conversation.messages:
            if isinstance(message, ActivityMessage):
                if before:
                    events.append(MessagesSnapshotEvent(messages=list(before)))
                events.append(
                    ActivitySnapshotEvent(
                        message_id=message.id,
                        activity_type=message.activity_type,
                        content=message.content,
                        replace=True,
                        subagent_run_id=message.subagent_run_id,
                    )
                )
            else:
                before.append(message)
        events.append(MessagesSnapshotEvent(messages=before))
        events.append(StateSnapshotEvent(snapshot=conversation.state_json()))
        return dumps([self._first, *map(CONVERTER.dump, events)])

    def due(self, written: int) -> bytes | None:
        """The checkpoint to append after the run's ``written``-th event, if one is."""
        taken = self._taken
        if taken and taken[0][0] <= written:
            return taken.popleft()[1]
        return None


class ThreadRecord:
    """A run as a thread store keeps it: its events as a :class:`~agentproto.agui.History`
    document (a JSON array of wire events), its ``RUN_STARTED`` carrying the run input
    (what the serialization page's ``input`` is for), added when the run is over.

    Args:
        threads: the thread store.
        run_input: the run's input.
    """

    def __init__(self, threads: ThreadStore, run_input: RunAgentInput) -> None:
        self._threads = threads
        self._run_input = run_input
        self._frames: list[bytes] = []

    def keep(self, event: Event, frame: bytes) -> None:
        """The run emitted ``event`` (sent as ``frame``)."""
        if not self._frames and isinstance(event, RunStartedEvent) and event.input is None:
            frame = _frame(attrs.evolve(event, input=self._run_input))
        self._frames.append(frame)

    async def save(self) -> None:
        """Add the run to its thread.

        Raises:
            StoreError: the store failed.
        """
        document = b"[" + b",".join(self._frames) + b"]"
        await self._threads.add(self._run_input.thread_id, document)


async def thread_document(threads: ThreadStore, thread_id: str) -> bytes | None:
    """Every recorded run of ``thread_id`` as one History document (``None``: none is).

    Raises:
        StoreError: the store failed.
    """
    records = [record.strip()[1:-1].strip() for record in await threads.records(thread_id)]
    kept = [record for record in records if record]
    return None if not kept else b"[" + b",".join(kept) + b"]"


class RunWriter:
    """One run of this process: its handler's events appended to the log as they come.

    While it goes on it shows it is alive: after ``lost_timeout / 4`` seconds without an
    append it appends a beat (a frame no reader sends on), so that a reader in another
    process, which has no writer to ask, can tell a quiet run from a dead worker's.

    Args:
        runs: the runs of this process (the log, the timeouts).
        stream: the run's stream.
        events: the run's events (from :func:`~agentproto.agui.run_events`'s machinery).
        producer: the run's producer (to end the run when it is abandoned).
        checkpoints: what the producer's sink took, appended as the events are.
        record: the run as its thread's store will keep it, saved at its end.
    """

    def __init__(
        self,
        runs: Runs,
        stream: str,
        events: AsyncGenerator[Event, None],
        producer: RunProducer,
        checkpoints: Checkpoints | None = None,
        record: ThreadRecord | None = None,
    ) -> None:
        self.log = runs.log
        self.stream = stream
        self._runs = runs
        self._events = events
        self._producer = producer
        self._checkpoints = checkpoints
        self._record = record
        self._readers = 0
        self._timer: asyncio.TimerHandle | None = None
        self._remote_seen: str | None = None  # the last reader mark of another process read
        self._checking: asyncio.Future[None] | None = None
        self._abandoned = False
        self._ended: list[Event] = []  # the RUN_ERROR of an abandoned run
        self._appended = time.monotonic()
        self.task = asyncio.ensure_future(self._write())
        self._beating = asyncio.ensure_future(self._beat(runs.lost_timeout / 4))
        self.task.add_done_callback(self._over)

    def _over(self, _: object) -> None:
        self._beating.cancel()
        if self._timer is not None:
            self._timer.cancel()
        self._runs.forget(self.stream)

    def attach(self) -> None:
        """A reader started reading the run."""
        self._readers += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def detach(self) -> None:
        """A reader stopped; the last one starts the detached clock."""
        self._readers -= 1
        if self._readers == 0:
            self._arm()

    def _arm(self) -> None:
        timeout = self._runs.detached_timeout
        if timeout is not None and not self.task.done():
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(timeout, self._check_detached)

    def _check_detached(self) -> None:
        self._timer = None
        self._checking = asyncio.ensure_future(self._maybe_abandon())

    async def _maybe_abandon(self) -> None:
        """No reader of this process for ``detached_timeout``: the run is abandoned
        unless a reader of another process marked it meanwhile."""
        if self._readers or self.task.done():
            return
        if await self._read_elsewhere():
            self._arm()
            return
        _logger.info("no client attached to run %s; cancelling its handler", self.stream)
        self._abandoned = True
        self.task.cancel()

    async def _read_elsewhere(self) -> bool:
        try:
            page = await self.log.read(readers_of(self.stream), self._remote_seen, limit=_BATCH)
        except CursorExpiredError as dropped:  # marks came and went: they came
            self._remote_seen = dropped.held_after
            return True
        except UnknownStreamError:
            return False
        except AgentProtoError:
            _logger.exception("reading the readers of run %s failed", self.stream)
            return False
        if page.entries:
            self._remote_seen = page.cursor
        return bool(page.entries)

    async def _beat(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            if time.monotonic() - self._appended < every:
                continue
            try:
                await self._append([_BEAT])
            except StoreError:
                _logger.warning("the event log failed; run %s missed a beat", self.stream)
            except UsageError:  # ended: by this writer, or by a reader that took it for lost
                return

    async def _append(self, frames: list[bytes], end: bool = False) -> None:
        self._appended = time.monotonic()
        await self.log.append(self.stream, frames, end=end)

    async def _write(self) -> None:
        ending: list[bytes] = []
        try:
            try:
                checkpoints, record, written = self._checkpoints, self._record, 0
                async for event in self._events:
                    frames = [_frame(event)]
                    written += 1
                    if record is not None:
                        record.keep(event, frames[0])
                    checkpoint = None if checkpoints is None else checkpoints.due(written)
                    if checkpoint is not None:
                        frames.append(checkpoint)
                    await self._append(frames)
            finally:
                await self._events.aclose()
        except asyncio.CancelledError:
            if not self._abandoned:
                raise
            ending = self._abandoned_ending()
        except StoreError:
            _logger.exception("the event log failed; run %s is stopped", self.stream)
            return
        except UsageError:  # a reader of another process ended it, taking this worker for lost
            _logger.warning(
                "run %s was ended by another process; its handler is stopped", self.stream
            )
            return
        self._beating.cancel()
        with contextlib.suppress(AgentProtoError):  # only the detached clock read it
            await self.log.drop(readers_of(self.stream))
        try:
            await self._append(ending, end=True)
        except StoreError:
            _logger.exception("the event log failed; run %s is not ended in it", self.stream)
        except UsageError:
            _logger.warning("run %s was ended by another process", self.stream)
        if self._record is not None:
            for event in self._ended:
                self._record.keep(event, _frame(event))
            try:
                await self._record.save()
            except StoreError:
                _logger.exception("the thread store failed; run %s is not recorded", self.stream)

    def _abandoned_ending(self) -> list[bytes]:
        if self._producer.closed or self._producer.phase not in ("idle", "running"):
            return []
        event = self._producer.run_error("no client was attached to the run", code="agent.detached")
        self._ended.append(event)
        return [_frame(event)]

    async def aclose(self) -> None:
        """Cancel the run (server shutdown) and wait for it."""
        self._abandoned = True
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def _frame(event: Event) -> bytes:
    return dumps(CONVERTER.dump(event))


def readers_of(stream: str) -> str:
    """The stream where readers of ``stream`` in processes without its writer mark that
    they are reading (the writer's detached clock counts them)."""
    return f"{stream}:readers"


class Runs:
    """The runs this process writes, by stream, and how runs are read.

    Args:
        log: the event log.
        detached_timeout: seconds a run's handler goes on with no reader attached
            (``None``: to its end).
        threads: the thread store, if any.
        lost_timeout: seconds without a frame (events or beats) from a run whose
            writer is in another process before a reader ends it as lost.
    """

    def __init__(
        self,
        log: EventLog,
        detached_timeout: float | None,
        threads: ThreadStore | None = None,
        lost_timeout: float = DEFAULT_LOST_TIMEOUT,
    ) -> None:
        self.log = log
        self.detached_timeout = detached_timeout
        self.threads = threads
        self.lost_timeout = lost_timeout
        self._writers: dict[str, RunWriter] = {}

    def checkpoints(self) -> Checkpoints | None:
        """What takes a run's checkpoints: one each quarter of the frames the log keeps
        (``None``: the log keeps every frame, a cursor never expires but whole)."""
        max_frames = self.log.retention.max_frames
        return None if max_frames is None else Checkpoints(max(1, max_frames // 4))

    async def start(
        self,
        stream: str,
        events: AsyncGenerator[Event, None],
        producer: RunProducer,
        checkpoints: Checkpoints | None = None,
    ) -> RunWriter:
        """Start writing a run's events (its stream exists in the log on return; with a
        thread store, the run is added to its thread when it is over).

        Raises:
            StoreError: the log failed; the run did not start.
        """
        await self.log.append(stream, [])
        if checkpoints is not None:
            checkpoints.producer = producer
        run_input = producer.run_input
        threads = self.threads
        record = None if threads is None or run_input is None else ThreadRecord(threads, run_input)
        writer = RunWriter(self, stream, events, producer, checkpoints, record)
        self._writers[stream] = writer
        return writer

    def writer(self, stream: str) -> RunWriter | None:
        """The writer of ``stream`` in this process, if it is running."""
        return self._writers.get(stream)

    def forget(self, stream: str) -> None:
        """The writer of ``stream`` is over."""
        self._writers.pop(stream, None)

    async def aclose(self) -> None:
        """Cancel every run (the server shuts down)."""
        for writer in list(self._writers.values()):
            await writer.aclose()

    async def entries(
        self, stream: str, cursor: str | None, preface: tuple[Entry, ...] = ()
    ) -> AsyncGenerator[Entry, None]:
        """The run's entries after ``cursor`` (after ``preface``, the entries of a
        resync), to its end, waiting for the live tail; only events are sent on. A reader
        that retention passes (a slow client) is resynced where it stands; a store failure
        ends them (it is logged). A run written by another process is watched:
        this reader marks the run's readers stream (for the writer's detached clock) and
        ends the run with ``RUN_ERROR`` ``agent.lost`` when no frame came for
        ``lost_timeout`` seconds."""
        writer = self.writer(stream)
        watch = None if writer is not None else _Watch(self, stream)
        if writer is not None:
            writer.attach()
        try:
            for entry in preface:
                yield entry
            while True:
                wait = READ_WAIT if watch is None else watch.wait
                try:
                    try:
                        page = await self.log.read(stream, cursor, limit=_BATCH, wait=wait)
                    except CursorExpiredError as behind:  # retention passed this reader
                        for entry in await resync(self.log, stream, behind, cursor):
                            yield entry
                            cursor = entry.cursor
                        continue
                except AgentProtoError:
                    _logger.exception("reading run %s from the event log failed", stream)
                    return
                for entry in page.entries:
                    if entry.data[:1] == _EVENT:
                        yield entry
                cursor = page.cursor
                if page.ended:
                    return
                if watch is not None:
                    await watch.mark()
                    await watch.check(bool(page.entries))
        finally:
            if writer is not None:
                writer.detach()

    async def frames(
        self,
        stream: str,
        cursor: str | None,
        transport: Transport,
        preface: tuple[Entry, ...] = (),
    ) -> AsyncGenerator[bytes, None]:
        """The run's frames after ``cursor`` (and ``preface``) as SSE (with ``id:``) or JSON
        Lines, to its end."""
        if cursor is None and transport == "sse":  # the start's cursor: resumable from byte one
            yield b"id: %b\n\n" % cursor_of(stream, 0).encode("ascii")
        entries = self.entries(stream, cursor, preface)
        try:
            async for entry in entries:
                if transport == "sse":
                    yield b"id: %b\ndata: %b\n\n" % (entry.cursor.encode("ascii"), entry.data)
                else:
                    yield entry.data + b"\n"
        finally:
            await entries.aclose()


class _Watch:
    """A reader of a run whose writer is in another process (or nowhere any more)."""

    def __init__(self, runs: Runs, stream: str) -> None:
        self._log = runs.log
        self._stream = stream
        self._lost_timeout = runs.lost_timeout
        detached = runs.detached_timeout
        # marks often enough for the writer's detached clock, and reads short enough to
        # make them, and to notice a lost writer, in time
        self._every = min(READ_WAIT, runs.lost_timeout / 4, *([detached / 4] if detached else []))
        self.wait = self._every
        self._marked = -math.inf
        self._heard = time.monotonic()

    async def mark(self) -> None:
        """Mark the readers stream, when a mark is due."""
        now = time.monotonic()
        if now - self._marked < self._every:
            return
        self._marked = now
        try:
            await self._log.append(readers_of(self._stream), [b"r"])
        except AgentProtoError:
            _logger.warning("marking a reader of run %s failed", self._stream)

    async def check(self, heard: bool) -> None:
        """After a read: end the run as lost when its writer was silent too long."""
        now = time.monotonic()
        if heard:
            self._heard = now
            return
        if now - self._heard < self._lost_timeout:
            return
        _logger.warning(
            "run %s has had no writer for %ss; ending it", self._stream, self._lost_timeout
        )
        event = RunErrorEvent(message="the worker running the run was lost", code="agent.lost")
        try:
            await self._log.append(self._stream, [_frame(event)], end=True)
        except UsageError:  # ended meanwhile: the next read has its end
            pass
        except AgentProtoError:
            _logger.exception("ending the lost run %s failed", self._stream)
        self._heard = now


async def check_cursor(log: EventLog, stream: str, cursor: str | None) -> None:
    """Refuse, before anything streams, a cursor the log cannot read after.

    Raises:
        CursorError: (and its subclasses) as :meth:`EventLog.read` does.
        StoreError: the log failed.
    """
    await log.read(stream, cursor, limit=1)


async def resync(
    log: EventLog, stream: str, expired: CursorExpiredError, cursor: str | None
) -> tuple[Entry, ...]:
    """The entries that rebuild the run for a client whose ``cursor`` expired: the
    first checkpoint the log holds, as events (the last with the checkpoint's cursor, to
    read on after; see the module notes).

    Raises:
        CursorExpiredError: ``expired``, when the log holds no checkpoint of the run.
        StoreError: the log failed.
    """
    after = expired.held_after
    while after is not None:
        try:
            page = await log.read(stream, after, limit=_BATCH)
        except CursorExpiredError as again:  # retention moved on while we looked
            after = again.held_after
            continue
        for entry in page.entries:
            if entry.data[:1] == _CHECKPOINT:
                return _preface(stream, entry, cursor)
        if page.ended or not page.entries:
            break
        after = page.cursor
    raise expired


def _preface(stream: str, checkpoint: Entry, cursor: str | None) -> tuple[Entry, ...]:
    first, *events = loads(checkpoint.data)
    frames = [dumps(event) for event in events]
    again = cursor_of(stream, 0) if cursor is None else cursor
    started: tuple[Entry, ...] = ()
    if position_of(stream, cursor) == 0:  # the client saw nothing: the run starts here too,
        again = cursor_of(stream, 1)  # with the cursor it has in the log (the run's first)
        started = (Entry(again, dumps(first)),)
    return (
        *started,
        *(Entry(again, frame) for frame in frames[:-1]),
        Entry(checkpoint.cursor, frames[-1]),
    )

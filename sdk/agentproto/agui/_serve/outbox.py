"""The bounded hand-off between an agent handler and the response streaming its events.

Theory of operation
-------------------
The handler runs as a task of its own. Its producer's sink puts every event it emits
in an :class:`Outbox`, and the response takes them out as fast as the client reads:
the ASGI ``send`` of a server such as uvicorn waits while the connection's write
buffer is over its high-water mark, so the response goes at the client's pace. The
outbox is *full* once it holds ``limit`` events. While it is full the handler is
held: each time it would resume after an ``await`` (and, for an async generator
handler, after each item it yields) it first waits until the response has taken out
half of them, so that it then runs for a batch rather than for one event at a time.
A client that stops reading thus stops the handler, and what the server keeps for
it is at most ``limit`` events plus the server's own write buffer.

Emitting stays a plain synchronous call, which cannot be paused halfway: between
two of its suspensions a handler may take the outbox past the limit by what it emits
in that stretch. A handler that never awaits (a plain function) is never held.
When the response stops (the client went away) the outbox is closed, which
releases a held handler for good, and the task is cancelled: the handler gets the
cancellation wherever it is, and its cleanup can await what it needs.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Coroutine, Generator, Iterator
from typing import Any, Generic, TypeVar
from weakref import ref

from agentproto._core.errors import UsageError
from agentproto.agui._generated import Event
from agentproto.agui._produce.producer import RunProducer

T = TypeVar("T")

_logger = logging.getLogger("agentproto.agui")


class Outbox:
    """What the producer emitted and the response has not streamed yet.

    Args:
        limit: how many pending events make the outbox full (at least 1).
    """

    __slots__ = ("_prune_at", "_recent", "closed", "limit", "pending", "ready", "room")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pending: deque[Event] = deque()
        self.ready = asyncio.Event()  # something was put since the last wait
        self.room = asyncio.Event()  # set while the outbox is not full
        self.room.set()
        self.closed = False
        # what was put since the last forget(), by identity, weakly (so that a long
        # stretch keeps only the entries of events still alive); None: not tracked
        self._recent: dict[int, ref[Event]] | None = None
        self._prune_at = 2 * limit

    def put(self, event: Event) -> None:
        """The producer's sink."""
        if self.closed:
            return  # nobody will take it
        self.pending.append(event)
        if len(self.pending) >= self.limit:
            self.room.clear()
        self.ready.set()
        recent = self._recent
        if recent is not None:
            recent[id(event)] = ref(event)
            if len(recent) >= self._prune_at:
                self._recent = {key: seen for key, seen in recent.items() if seen() is not None}
                self._prune_at = 2 * (len(self._recent) + self.limit)

    def take(self) -> Iterator[Event]:
        """The pending events, oldest first, each handed out once."""
        pending, low = self.pending, self.limit // 2
        while pending:
            event = pending.popleft()
            if len(pending) <= low:  # a held handler resumes for a batch, not for one event
                self.room.set()
            yield event

    def close(self) -> None:
        """Nobody takes events any more: drop them, and hold the handler no longer."""
        self.closed = True
        self.pending.clear()
        self.room.set()

    def forget(self) -> None:
        """Start tracking what is put anew (for :meth:`was_put`)."""
        self._recent = {}

    def was_put(self, item: object) -> bool:
        """Whether ``item`` itself was put since the last :meth:`forget`."""
        seen = None if self._recent is None else self._recent.get(id(item))
        return seen is not None and seen() is item


class _Held(Generic[T]):
    """Awaits ``coroutine``, holding it before each resumption while ``room`` is clear.

    A cancellation of the task (while held or not) is passed on to the coroutine at
    once, as the task itself would; holding goes on afterwards (a handler's own
    ``asyncio.timeout`` does not end the backpressure)."""

    __slots__ = ("_coroutine", "_room")

    def __init__(self, coroutine: Coroutine[Any, Any, T], room: asyncio.Event) -> None:
        self._coroutine = coroutine
        self._room = room

    def __await__(self) -> Generator[Any, Any, T]:
        coroutine, room = self._coroutine, self._room
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                suspended = coroutine.send(value) if error is None else coroutine.throw(error)
            except StopIteration as stop:
                result: T = stop.value
                return result
            value = error = None
            try:
                value = yield suspended  # what the coroutine waits for, to the task
                if not room.is_set():
                    yield from room.wait().__await__()
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # thrown into the task: pass it on
                error = exc


async def _held(coroutine: Coroutine[Any, Any, T], room: asyncio.Event) -> T:
    return await _Held(coroutine, room)


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def _generator_items(result: Any, producer: RunProducer, outbox: Outbox) -> None:
    """Run an async generator handler: emit what it yields, held while the outbox is full."""
    outbox.forget()
    try:
        async for item in result:
            # an event the producer already emitted (a helper's return value) is not
            # emitted twice
            if item is not None and not outbox.was_put(item):
                producer.emit(item)
            outbox.forget()
            if not outbox.room.is_set():
                await outbox.room.wait()
    finally:
        await result.aclose()


def start_handler(result: Any, producer: RunProducer, outbox: Outbox) -> asyncio.Task[Any] | None:
    """Run what a handler returned as a held task; ``None`` when it has already run.

    Raises:
        UsageError: the handler returned something other than ``None``, an awaitable
            or an async generator.
    """
    coroutine: Coroutine[Any, Any, Any]
    if hasattr(result, "__anext__"):
        coroutine = _generator_items(result, producer, outbox)
    elif inspect.iscoroutine(result):
        coroutine = result
    elif inspect.isawaitable(result):
        coroutine = _awaited(result)
    elif result is None:
        return None
    else:
        raise UsageError(
            "serve.handler",
            f"an agent handler returns None, a coroutine or an async generator, not "
            f"{type(result).__name__}",
        )
    return asyncio.ensure_future(_held(coroutine, outbox.room))


async def stream_outbox(task: asyncio.Task[Any], outbox: Outbox) -> AsyncGenerator[Event, None]:
    """The events ``task`` emits through ``outbox``, as they come; then its exception,
    if it raised. Closing this cancels the task and waits for it to end."""
    try:
        while True:
            for event in outbox.take():
                yield event
            if task.done():
                break
            outbox.ready.clear()
            waiter = asyncio.ensure_future(outbox.ready.wait())
            try:
                await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
        task.result()
    finally:
        if not task.done():
            outbox.close()  # first: a held handler's cleanup must not wait for room
            task.cancel()
            await asyncio.wait((task,))
            if not task.cancelled() and task.exception() is not None:
                _logger.warning(
                    "agent handler raised while being cancelled", exc_info=task.exception()
                )

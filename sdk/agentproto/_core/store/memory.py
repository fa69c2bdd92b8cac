"""The in-memory event log and thread store: the default, bounded, gone with the process."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from functools import partial

from agentproto._core.errors import UsageError
from agentproto._core.store.log import (
    Bell,
    Entry,
    Page,
    Retention,
    check_position,
    cursor_of,
    position_of,
    read_waiting,
    unknown,
)

__all__ = ["MemoryEventLog", "MemoryThreadStore"]


class _Stream:
    __slots__ = ("ended", "first", "frames", "touched")

    def __init__(self) -> None:
        self.frames: deque[bytes] = deque()
        self.first = 1  # the position of frames[0]
        self.ended = False
        self.touched = time.monotonic()

    @property
    def last(self) -> int:
        return self.first + len(self.frames) - 1


class MemoryEventLog:
    """An :class:`~agentproto.stores.EventLog` in this process's memory.

    Bounded by ``retention`` (frames per stream, idle seconds, streams); what it
    holds is lost when the process ends.
    """

    def __init__(self, retention: Retention | None = None) -> None:
        self.retention = retention or Retention()
        self._streams: OrderedDict[str, _Stream] = OrderedDict()  # least recently written first
        self._bell = Bell()

    def _expire(self) -> None:
        max_age = self.retention.max_age
        if max_age is None:
            return
        horizon = time.monotonic() - max_age
        while self._streams:
            name, stream = next(iter(self._streams.items()))
            if stream.touched > horizon:
                return
            del self._streams[name]

    def _live(self, name: str) -> _Stream | None:
        self._expire()
        return self._streams.get(name)

    async def append(self, stream: str, frames: Sequence[bytes], *, end: bool = False) -> list[str]:
        """See :meth:`EventLog.append <agentproto.stores.EventLog.append>`."""
        held = self._live(stream)
        if held is None:
            held = self._streams[stream] = _Stream()
            limit = self.retention.max_streams
            while limit is not None and len(self._streams) > limit:
                self._streams.popitem(last=False)
        elif held.ended:
            raise UsageError("store.stream-ended", f"{stream!r} was ended: no frame may follow")
        start = held.last + 1
        held.frames.extend(bytes(frame) for frame in frames)
        held.ended = end
        held.touched = time.monotonic()
        self._streams.move_to_end(stream)
        cap = self.retention.max_frames
        if cap is not None:
            while len(held.frames) > cap:
                held.frames.popleft()
                held.first += 1
        self._bell.ring(stream)
        return [cursor_of(stream, start + i) for i in range(len(frames))]

    def _page(self, name: str, after: int, limit: int) -> Page:
        held = self._live(name)
        if held is None:
            raise unknown(name, after)
        check_position(name, after, held.first, held.last)
        skip = after - held.first + 1
        taken = [held.frames[i] for i in range(skip, min(len(held.frames), skip + limit))]
        entries = tuple(Entry(cursor_of(name, after + 1 + i), data) for i, data in enumerate(taken))
        position = after + len(entries)
        cursor = cursor_of(name, position) if position else None
        return Page(entries, held.ended and position == held.last, cursor)

    async def read(
        self, stream: str, after: str | None = None, *, limit: int = 1000, wait: float = 0.0
    ) -> Page:
        """See :meth:`EventLog.read <agentproto.stores.EventLog.read>`."""
        position = position_of(stream, after)
        page = partial(self._page, stream, position, limit)
        return await read_waiting(page, self._bell, stream, wait, wait)

    async def drop(self, stream: str) -> None:
        """See :meth:`EventLog.drop <agentproto.stores.EventLog.drop>`."""
        self._streams.pop(stream, None)
        self._bell.ring(stream)

    async def aclose(self) -> None:
        """Nothing to release."""


class MemoryThreadStore:
    """A :class:`~agentproto.stores.ThreadStore` in this process's memory.

    Args:
        max_threads: the most threads kept; the least recently added to go first.
    """

    def __init__(self, max_threads: int | None = 1_000) -> None:
        self.max_threads = max_threads
        self._threads: OrderedDict[str, list[bytes]] = OrderedDict()

    async def add(self, thread: str, record: bytes) -> None:
        """See :meth:`ThreadStore.add <agentproto.stores.ThreadStore.add>`."""
        self._threads.setdefault(thread, []).append(bytes(record))
        self._threads.move_to_end(thread)
        while self.max_threads is not None and len(self._threads) > self.max_threads:
            self._threads.popitem(last=False)

    async def records(self, thread: str) -> list[bytes]:
        """See :meth:`ThreadStore.records <agentproto.stores.ThreadStore.records>`."""
        return list(self._threads.get(thread, ()))

    async def drop(self, thread: str) -> None:
        """See :meth:`ThreadStore.drop <agentproto.stores.ThreadStore.drop>`."""
        self._threads.pop(thread, None)

    async def aclose(self) -> None:
        """Nothing to release."""

"""What an event log and a thread store promise, whatever keeps the bytes.

Theory of operation
-------------------
An :class:`EventLog` keeps *streams*: named, append-only sequences of frames (the
bytes a server sent, or will send, to a client), each frame at a position
1, 2, 3, ... of its stream. A server appends a run's frames as it produces them
and ends the stream when the run is over; a client that lost its connection comes
back with the *cursor* of the last frame it saw, and :meth:`EventLog.read` gives it
exactly the frames after that one, then (``wait``) blocks for the live tail.

Cursors are opaque to clients and checked here, never trusted:

* a cursor is ``<tag>.<position>``, the tag a digest of the stream's name: one
  issued for another stream is refused (:class:`~agentproto.CursorError`,
  ``store.cursor-foreign``), and so is one that is not a cursor at all
  (``store.cursor-malformed``) or points past the last frame (``store.cursor-ahead``);
  a read never returns another stream's frames;
* a position retention has dropped is :class:`~agentproto.CursorExpiredError`: the
  frames after it cannot be replayed one by one, so the server rebuilds the
  client's state from snapshots instead (never a silent gap);
* a stream the log does not hold is :class:`~agentproto.UnknownStreamError`
  (with a cursor, :class:`~agentproto.CursorExpiredError`: the log held it once).

Retention (:class:`Retention`) bounds each stream's frames (the oldest go first)
and drops a stream whole when nothing was appended to it for ``max_age`` seconds.
A failing backend is a :class:`~agentproto.StoreError` from the call that met
it; an append stores all its frames or none.

A :class:`ThreadStore` keeps the recorded runs of each thread, in the order they
were added, as opaque documents (the AG-UI server stores :class:`History`
JSON), so that a server can answer "give me thread T" after a restart.

The implementations: :mod:`.memory` (the default; bounded), :mod:`.sqlite` (one
file, survives a restart), :mod:`.redis` (shared by several workers).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import attrs

from agentproto._core.errors import CursorError, CursorExpiredError, UnknownStreamError

__all__ = [
    "Entry",
    "EventLog",
    "Page",
    "Retention",
    "ThreadStore",
    "cursor_of",
    "position_of",
    "read_waiting",
]

_TAG_BYTES = 6
_MAX_CURSOR = 64
_MAX_DIGITS = 18


@attrs.frozen
class Retention:
    """How much an event log keeps.

    Attributes:
        max_frames: the most frames kept per stream; older ones are dropped
            first (a cursor among them then expires). ``None``: no bound.
        max_age: seconds after its last append when a stream is dropped whole.
            ``None``: never.
        max_streams: the most streams kept (the in-memory log only: the least
            recently written go first). ``None``: no bound.
    """

    max_frames: int | None = 10_000
    max_age: float | None = 3600.0
    max_streams: int | None = 1_000

    def __attrs_post_init__(self) -> None:
        for name in ("max_frames", "max_age", "max_streams"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"Retention.{name} must be positive or None, not {value!r}")


@attrs.frozen
class Entry:
    """One frame of a stream.

    Attributes:
        cursor: where the frame is; reading after it gives the frames that follow.
        data: the frame, as it was appended.
    """

    cursor: str
    data: bytes


@attrs.frozen
class Page:
    """What one :meth:`EventLog.read` found.

    Attributes:
        entries: the frames after the cursor, oldest first.
        ended: whether the stream was ended and ``entries`` reach its last frame
            (no frame will ever follow).
        cursor: the cursor to read on from: the last entry's, else the one read
            after (``None``: from the start).
    """

    entries: tuple[Entry, ...]
    ended: bool
    cursor: str | None


def _tag(stream: str) -> str:
    return hashlib.blake2b(
        stream.encode("utf-8", "surrogatepass"), digest_size=_TAG_BYTES
    ).hexdigest()


def cursor_of(stream: str, position: int) -> str:
    """The cursor of the frame at ``position`` (1-based) of ``stream``; position 0 is the
    stream's start (reading after it gives every frame, as ``None`` does)."""
    return f"{_tag(stream)}.{position}"


def position_of(stream: str, cursor: str | None) -> int:
    """The position ``cursor`` names in ``stream`` (0 for ``None`` or the start cursor:
    before the first frame).

    Raises:
        CursorError: the cursor is malformed or was issued for another stream.
    """
    if cursor is None:
        return 0
    tag, dot, digits = cursor.partition(".") if isinstance(cursor, str) else ("", "", "")
    if (
        not dot
        or len(cursor) > _MAX_CURSOR
        or not digits.isascii()
        or not digits.isdigit()
        or (digits.startswith("0") and digits != "0")
    ):
        raise CursorError("store.cursor-malformed", f"not a stream cursor: {str(cursor)[:80]!r}")
    if tag != _tag(stream):
        raise CursorError("store.cursor-foreign", "the cursor was issued for another stream")
    if len(digits) > _MAX_DIGITS:  # past any stream (and past what the backends count)
        raise CursorError("store.cursor-ahead", f"{stream!r} has no frame {digits[:40]}")
    return int(digits)


def check_position(stream: str, after: int, first: int, last: int) -> None:
    """Refuse reading after ``after`` when the stream holds ``first``..``last``.

    ``first`` is the oldest position still held (``last + 1`` when none is).

    Raises:
        CursorError: ``after`` is past ``last``.
        CursorExpiredError: frames between ``after`` and ``first`` were dropped.
    """
    if after > last:
        raise CursorError("store.cursor-ahead", f"{stream!r} has no frame {after} yet")
    if after < first - 1:
        raise CursorExpiredError(
            "store.cursor-expired",
            f"{stream!r} no longer holds the frames after {after} (it keeps {first}..{last})",
            cursor_of(stream, first - 1),
        )


def unknown(stream: str, after: int) -> CursorError:
    """The error for reading a stream the log does not hold."""
    if after:
        return CursorExpiredError("store.cursor-expired", f"{stream!r} is no longer held")
    return UnknownStreamError("store.unknown-stream", f"no stream {stream!r}")


class Bell:
    """Wakes the readers waiting in this process for a stream to grow."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def ring(self, stream: str) -> None:
        event = self._events.pop(stream, None)
        if event is not None:
            event.set()

    async def wait(self, stream: str, timeout: float) -> None:
        event = self._events.get(stream)
        if event is None:
            event = self._events[stream] = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)


async def read_waiting(
    page: Callable[[], Page], bell: Bell, stream: str, wait: float, poll: float
) -> Page:
    """``page()``, and while it finds nothing and the stream goes on, again each time
    the bell rings for ``stream`` (or every ``poll`` seconds), for up to ``wait`` seconds."""
    found = page()
    deadline = time.monotonic() + wait
    while not found.entries and not found.ended:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        await bell.wait(stream, min(remaining, poll))
        found = page()
    return found


@runtime_checkable
class EventLog(Protocol):
    """Append-only streams of frames, read after a cursor (see the module docstring).

    Attributes:
        retention: what the log keeps (a server takes checkpoints of its runs, to
            answer an expired cursor, a quarter of ``max_frames`` apart).
    """

    retention: Retention

    async def append(self, stream: str, frames: Sequence[bytes], *, end: bool = False) -> list[str]:
        """Add ``frames`` at the end of ``stream`` (created on first use); return their cursors.

        Args:
            stream: the stream's name.
            frames: the frames, oldest first (may be empty, to only ``end``).
            end: end the stream after them: no frame may follow.

        Raises:
            UsageError: the stream was ended.
            StoreError: the backend failed; no frame was stored.
        """
        ...

    async def read(
        self, stream: str, after: str | None = None, *, limit: int = 1000, wait: float = 0.0
    ) -> Page:
        """The frames of ``stream`` after ``after`` (``None``: from its first).

        Args:
            stream: the stream's name.
            after: a cursor this log issued for ``stream``.
            limit: the most entries returned.
            wait: when no frame follows yet and the stream goes on, wait up to
                this many seconds for one.

        Raises:
            CursorError: a malformed, foreign or ahead cursor.
            CursorExpiredError: the frames after ``after`` are no longer held.
            UnknownStreamError: no such stream (and no cursor given).
            StoreError: the backend failed.
        """
        ...

    async def drop(self, stream: str) -> None:
        """Forget ``stream`` (nothing happens when it is unknown)."""
        ...

    async def aclose(self) -> None:
        """Release the backend's resources."""
        ...


@runtime_checkable
class ThreadStore(Protocol):
    """The recorded runs of each thread, as opaque documents in the order they were added."""

    async def add(self, thread: str, record: bytes) -> None:
        """Add one record (a run) to ``thread``.

        Raises:
            StoreError: the backend failed; nothing was added.
        """
        ...

    async def records(self, thread: str) -> list[bytes]:
        """Every record of ``thread``, oldest first (``[]`` for an unknown thread)."""
        ...

    async def drop(self, thread: str) -> None:
        """Forget ``thread`` (nothing happens when it is unknown)."""
        ...

    async def aclose(self) -> None:
        """Release the backend's resources."""
        ...

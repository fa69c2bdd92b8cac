"""SSE keep-alive comments in the quiet stretches of an event stream.

Theory of operation
-------------------
A proxy or client that sees no byte for a while may close the connection, while an
agent can be silent for long (a slow model, a tool at work). SSE has comments for
this: a line starting with ``:`` that every consumer ignores (the draft's HTTP
binding: consumers MUST tolerate them, producers MAY send them at any cadence).
:func:`with_keepalives` passes the encoded frames of a stream through unchanged
and, whenever ``interval`` seconds pass with nothing to send, sends
:data:`KEEPALIVE_COMMENT` instead. Frames arrive here whole (each chunk is one
event's frame), and a comment is sent only between two chunks, so a keep-alive
never lands inside a frame.

The frames are read by a task of its own (a pump) into a one-place queue, and the
stream waits on that queue with a timeout: a timeout never interrupts the source
mid-step (cancelling an async generator's step would end it), and the source
runs in one task from start to end, so its context variables hold across events.
When the stream ends, or is closed because the client went away, the pump is
cancelled and the source closed before this generator returns: no keep-alive
follows the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Final

__all__ = ["KEEPALIVE_COMMENT", "with_keepalives"]

KEEPALIVE_COMMENT: Final = b": keep-alive\n\n"
"""The SSE comment sent in a quiet stretch (the form the draft's HTTP binding shows)."""

_END: Final = object()


async def with_keepalives(
    frames: AsyncIterator[bytes], interval: float
) -> AsyncGenerator[bytes, None]:
    """``frames``, with :data:`KEEPALIVE_COMMENT` after each ``interval`` seconds
    in which no frame came; closing this closes ``frames``.

    Raises:
        Exception: what ``frames`` raised, once the frames before it are sent.
    """
    queue: asyncio.Queue[bytes | object] = asyncio.Queue(maxsize=1)
    failure: list[Exception] = []

    async def pump() -> None:
        try:
            async for frame in frames:
                await queue.put(frame)
        except Exception as exc:  # handed to the stream, raised there in order
            failure.append(exc)
        finally:
            aclose = getattr(frames, "aclose", None)
            if aclose is not None:
                await aclose()
        await queue.put(_END)

    task = asyncio.ensure_future(pump())
    try:
        while True:
            try:
                async with asyncio.timeout(interval):
                    frame = await queue.get()
            except TimeoutError:
                yield KEEPALIVE_COMMENT
                continue
            if frame is _END:
                break
            assert isinstance(frame, bytes)
            yield frame
        await task
        if failure:
            raise failure[0]
    finally:
        task.cancel()
        await asyncio.wait((task,))

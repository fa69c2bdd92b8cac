"""Thin adapters: feed a :class:`Consumer` from byte iterators (sync and async).

They work on anything yielding ``bytes``, such as an httpx response's
``iter_bytes()`` / ``aiter_bytes()``::

    with httpx.stream("POST", url, json=body) as response:
        for event in iter_events(response.iter_bytes(), run_input=body):
            ...
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

from agentproto.agui._consume.consumer import Consumer
from agentproto.agui._generated import Event

__all__ = ["aconsume", "aiter_events", "consume", "iter_events"]


def iter_events(
    chunks: Iterable[bytes], *, consumer: Consumer | None = None, **options: Any
) -> Iterator[Event]:
    """Yield the verified events of a byte stream as they complete.

    Args:
        chunks: the stream's bytes, in pieces of any size.
        consumer: the consumer to feed (its state is then readable afterwards);
            by default a new one built from ``options``.
        **options: :class:`Consumer` arguments (``run_input``, ``transport``, ...).

    Raises:
        AgentProtoError: the stream broke the protocol, or ended mid-run.
    """
    consumer = consumer if consumer is not None else Consumer(**options)
    for chunk in chunks:
        yield from consumer.feed_bytes(chunk)
    yield from consumer.close()
    if consumer.failure is not None:  # found by close() after it delivered its events
        raise consumer.failure


async def aiter_events(
    chunks: AsyncIterable[bytes], *, consumer: Consumer | None = None, **options: Any
) -> AsyncIterator[Event]:
    """Async :func:`iter_events`, for ``response.aiter_bytes()``."""
    consumer = consumer if consumer is not None else Consumer(**options)
    async for chunk in chunks:
        for event in consumer.feed_bytes(chunk):
            yield event
    for event in consumer.close():
        yield event
    if consumer.failure is not None:  # found by close() after it delivered its events
        raise consumer.failure


def consume(chunks: Iterable[bytes], **options: Any) -> Consumer:
    """Run a whole byte stream into state; returns the consumer to read it from.

    ``consume(response.iter_bytes()).conversation.messages`` is the one-call way
    from an HTTP response to the final messages and state.
    """
    consumer = Consumer(**options)
    for _ in iter_events(chunks, consumer=consumer):
        pass
    return consumer


async def aconsume(chunks: AsyncIterable[bytes], **options: Any) -> Consumer:
    """Async :func:`consume`."""
    consumer = Consumer(**options)
    async for _ in aiter_events(chunks, consumer=consumer):
        pass
    return consumer

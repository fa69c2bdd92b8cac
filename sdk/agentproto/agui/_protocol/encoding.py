"""AG-UI events as transport bytes: SSE frames, JSON Lines, and the headers naming them.

Theory of operation
-------------------
The frame encoders (:mod:`agentproto.agui._protocol.frames`: one event, one frame) are
:func:`encode_event_sse` and :func:`encode_event_jsonl`.
:func:`encode_sse_stream` / :func:`encode_jsonl_stream` map them over an iterable
(sync in, sync out; async in, async out), which is what a framework's streaming
response wants, e.g. Starlette/FastAPI::

    StreamingResponse(encode_sse_stream(events), headers=stream_headers("sse"))

:func:`stream_headers` and :func:`negotiate_transport` are the HTTP side of the
choice between the two transports. Nothing here reads or writes a socket: serving
is :mod:`agentproto.agui._serve.app`.
"""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
)
from typing import Final, Literal, TypeAlias, overload

from agentproto._core.errors import UsageError
from agentproto.agui._generated import Event
from agentproto.agui._protocol.frames import encode_event_jsonl, encode_event_sse

__all__ = [
    "JSONL_CONTENT_TYPE",
    "SSE_CONTENT_TYPE",
    "WEBSOCKET_SUBPROTOCOL",
    "Events",
    "Transport",
    "encode_event_jsonl",
    "encode_event_sse",
    "encode_jsonl_stream",
    "encode_sse_stream",
    "negotiate_transport",
    "stream_headers",
]

Transport: TypeAlias = Literal["sse", "jsonl"]
"""The two transports of an AG-UI event stream: Server-Sent Events and JSON Lines."""

SSE_CONTENT_TYPE: Final = "text/event-stream; charset=utf-8"
"""``content-type`` of an AG-UI SSE response."""
JSONL_CONTENT_TYPE: Final = "application/jsonl"
"""``content-type`` of an AG-UI JSON Lines response (and the ``Accept`` that asks for it)."""
WEBSOCKET_SUBPROTOCOL: Final = "agentproto.agui.v1"
"""The WebSocket subprotocol of cursored events and resume requests (ours: the upstream
proposal has none; see :mod:`agentproto.agui._serve.websocket`)."""

Events: TypeAlias = AsyncIterable[Event] | Iterable[Event]
"""Events to stream: an async iterable or a plain one."""


_ENCODERS: Final[dict[str, Callable[[Event], bytes]]] = {
    "sse": encode_event_sse,
    "jsonl": encode_event_jsonl,
}
_UNCHECKED: Final[dict[str, Callable[[Event], bytes]]] = {
    "sse": lambda event: encode_event_sse(event, check=False),
    "jsonl": lambda event: encode_event_jsonl(event, check=False),
}


def encoder_for(transport: str, *, check: bool = True) -> Callable[[Event], bytes]:
    encoder = (_ENCODERS if check else _UNCHECKED).get(transport)
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


async def encode_async(
    events: AsyncIterable[Event], encode: Callable[[Event], bytes]
) -> AsyncGenerator[bytes, None]:
    iterator = aiter(events)
    try:
        async for event in iterator:
            yield encode(event)
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()


def _encode_stream(
    events: Events, transport: str, check: bool
) -> AsyncIterator[bytes] | Iterator[bytes]:
    """``events`` framed for ``transport``: async in, async out; sync in, sync out."""
    encode = encoder_for(transport, check=check)
    if isinstance(events, AsyncIterable):
        return encode_async(events, encode)
    return _encode_sync(events, encode)


@overload
def encode_sse_stream(
    events: AsyncIterable[Event], *, check: bool = True
) -> AsyncIterator[bytes]: ...
@overload
def encode_sse_stream(events: Iterable[Event], *, check: bool = True) -> Iterator[bytes]: ...
def encode_sse_stream(
    events: Events, *, check: bool = True
) -> AsyncIterator[bytes] | Iterator[bytes]:
    """SSE frames of ``events``: an async iterator for async events, else a sync one.

    Closing the result closes ``events`` (when it can be closed). For a framework's
    streaming response, e.g. Starlette's ``StreamingResponse(encode_sse_stream(events),
    headers=stream_headers("sse"))``. ``check`` as for :func:`encode_event_sse`.
    """
    return _encode_stream(events, "sse", check)


@overload
def encode_jsonl_stream(
    events: AsyncIterable[Event], *, check: bool = True
) -> AsyncIterator[bytes]: ...
@overload
def encode_jsonl_stream(events: Iterable[Event], *, check: bool = True) -> Iterator[bytes]: ...
def encode_jsonl_stream(
    events: Events, *, check: bool = True
) -> AsyncIterator[bytes] | Iterator[bytes]:
    """JSON Lines of ``events``; see :func:`encode_sse_stream`."""
    return _encode_stream(events, "jsonl", check)


def stream_headers(transport: Transport = "sse") -> dict[str, str]:
    """The response headers of an event stream in ``transport``.

    ``content-type`` (:data:`SSE_CONTENT_TYPE` or :data:`JSONL_CONTENT_TYPE`),
    ``cache-control: no-cache`` and ``x-accel-buffering: no`` (no proxy buffering).
    """
    encoder_for(transport)
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

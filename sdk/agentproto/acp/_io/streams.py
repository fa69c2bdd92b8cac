"""What an ACP connection talks to: the byte streams, and a translator for another version."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

__all__ = ["ByteReader", "ByteWriter", "Translator"]

Send = Callable[..., Awaitable[Any]]


class ByteReader(Protocol):
    """What a connection reads from: ``asyncio.StreamReader`` and the like.

    An object with ``readline()`` only is read line by line.
    """

    async def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes; ``b""`` at the end of the stream."""
        ...


class ByteWriter(Protocol):
    """What a connection writes to: ``asyncio.StreamWriter`` and the like."""

    def write(self, data: bytes) -> None:
        """Queue ``data`` for writing."""
        ...

    async def drain(self) -> None:
        """Wait until the queued data is below the transport's high-water mark."""
        ...

    def close(self) -> None:
        """Close the stream (the peer reads the end of it)."""
        ...


class Translator(Protocol):
    """What a connection that speaks another version on the wire sends instead.

    :func:`~agentproto.acp._io.connection.switch_protocol` installs one
    (the bridges of :mod:`agentproto.acp._io.v1bridge`): the application keeps
    calling with the v2 classes.
    """

    async def request(self, send: Send, target: Any, params: Any) -> Any:
        """Send the request ``target`` with ``send`` (the untranslated request)."""
        ...

    async def notify(self, send: Send, target: Any, params: Any) -> None:
        """Send the notification ``target`` with ``send`` (untranslated)."""
        ...

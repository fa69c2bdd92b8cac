"""Transports for ACP connections: an agent subprocess, this process's stdio, in-memory pipes."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

from agentproto._core.errors import UsageError
from agentproto.acp._io.connection import AgentSideConnection, ClientSideConnection
from agentproto.acp._io.streams import ByteReader, ByteWriter

__all__ = [
    "AgentProcess",
    "MemoryPipe",
    "connect_pair",
    "spawn_agent",
    "stdio_streams",
]


class MemoryPipe:
    """An in-memory byte pipe with flow control, for tests.

    Its writing end behaves like ``asyncio.StreamWriter`` (``write``, ``drain``
    waits while more than ``high_water`` bytes are unread, ``close``), its
    reading end like ``asyncio.StreamReader`` (``read``).

    Args:
        high_water: unread bytes above which ``drain()`` waits.
    """

    def __init__(self, high_water: int = 64 * 1024) -> None:
        self._buffer = bytearray()
        self._high_water = high_water
        self._eof = False
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()

    @property
    def buffered(self) -> int:
        """Bytes written and not read yet."""
        return len(self._buffer)

    def write(self, data: bytes) -> None:
        """Add bytes (``BrokenPipeError`` after :meth:`close`)."""
        if self._eof:
            raise BrokenPipeError("the pipe is closed")
        self._buffer += data
        self._readable.set()
        if len(self._buffer) > self._high_water:
            self._writable.clear()

    async def drain(self) -> None:
        """Wait until the reader has caught up below the high-water mark."""
        await self._writable.wait()

    def close(self) -> None:
        """End the stream: the reader gets what is buffered, then ``b""``."""
        self._eof = True
        self._readable.set()
        self._writable.set()

    async def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (all buffered when ``n < 0``); ``b""`` at the end."""
        while not self._buffer and not self._eof:
            self._readable.clear()
            await self._readable.wait()
        size = len(self._buffer) if n < 0 else n
        chunk = bytes(self._buffer[:size])
        del self._buffer[:size]
        if len(self._buffer) <= self._high_water:
            self._writable.set()
        return chunk


def connect_pair(**options: Any) -> tuple[AgentSideConnection, ClientSideConnection]:
    """An agent and a client connected by in-memory pipes (not started yet).

    Args:
        **options: for both connections, as for :class:`Connection`.
    """
    to_agent, to_client = MemoryPipe(), MemoryPipe()
    agent = AgentSideConnection(to_agent, to_client, **options)
    client = ClientSideConnection(to_client, to_agent, **options)
    return agent, client


class AgentProcess:
    """An agent subprocess and the client connection to its stdio.

    Use it as an async context manager: on exit the connection closes (the
    agent reads the end of its stdin) and the process gets ``grace`` seconds to
    exit before it is killed.

    Attributes:
        connection: the client's connection to the agent.
        process: the subprocess.
    """

    def __init__(
        self, connection: ClientSideConnection, process: asyncio.subprocess.Process
    ) -> None:
        self.connection = connection
        self.process = process

    async def __aenter__(self) -> AgentProcess:
        self.connection.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self, grace: float = 5.0) -> None:
        """Close the connection, wait up to ``grace`` seconds for the exit, then kill."""
        await self.connection.close()
        try:
            await asyncio.wait_for(self.process.wait(), grace)
        except TimeoutError:
            if self.process.returncode is None:
                self.process.kill()
            await self.process.wait()


async def spawn_agent(
    command: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stderr: int | None = None,
    **options: Any,
) -> AgentProcess:
    """Start an agent subprocess and connect a client to its stdin and stdout.

    Args:
        command: the program and its arguments.
        cwd: the working directory of the agent.
        env: its environment (default: inherited).
        stderr: where its stderr goes (default: inherited; e.g.
            ``asyncio.subprocess.DEVNULL``).
        **options: for the :class:`ClientSideConnection`.

    Returns:
        The process and its connection, not started: register handlers, then
        ``async with`` it.
    """
    if not command:
        raise UsageError("connection.no-command", "spawn_agent() needs a command")
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        cwd=cwd,
        env=None if env is None else dict(env),
    )
    if process.stdin is None or process.stdout is None:  # pragma: no cover (both are PIPE)
        raise UsageError("connection.no-pipes", "the subprocess has no stdio pipes")
    connection = ClientSideConnection(process.stdout, process.stdin, **options)
    return AgentProcess(connection, process)


class _FileReader:
    """Reads a regular file (stdin redirected from a file): it never blocks for long.

    Args:
        file: a binary file open for reading.
    """

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file

    async def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (the rest of the file when ``n < 0``); ``b""`` at its end."""
        return self._file.read(n if n >= 0 else -1) or b""


class _FileWriter:
    """Writes to a regular file (stdout redirected to a file), flushing each write.

    Closing flushes and leaves the file open (it is the process's own stream).

    Args:
        file: a binary file open for writing.
    """

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file

    def write(self, data: bytes) -> None:
        """Write ``data`` and flush it (a reader of the file sees whole lines)."""
        self._file.write(data)
        self._file.flush()

    async def drain(self) -> None:
        """Nothing to wait for: writes reach the file at once."""

    def close(self) -> None:
        """Flush what is written."""
        self._file.flush()


def _is_regular_file(file: IO[bytes]) -> bool:
    """Whether ``file`` is a regular file (which asyncio's pipe transports refuse)."""
    try:
        return stat.S_ISREG(os.fstat(file.fileno()).st_mode)
    except (OSError, ValueError):
        return False


async def stdio_streams() -> tuple[ByteReader, ByteWriter]:
    """This process's stdin and stdout as asyncio streams (for an agent program).

    Pipes, sockets and terminals get asyncio streams; a stdin or stdout
    redirected to a regular file (``agent < requests.ndjson > out.ndjson``), which
    asyncio's pipe transports refuse, is read or written directly instead (a
    regular file never blocks for long; each write is flushed, so a reader of
    the file sees whole lines).

    Once connected, stdout belongs to the protocol: anything else printed there
    corrupts the stream (log to stderr instead).

    Returns:
        A :class:`~agentproto.acp._io.streams.ByteReader` and a
        :class:`~agentproto.acp._io.streams.ByteWriter`.

    Example:
        >>> async def main() -> None:  # doctest: +SKIP
        ...     conn = AgentSideConnection(*await stdio_streams())
    """
    loop = asyncio.get_running_loop()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    reader: ByteReader
    writer: ByteWriter
    if _is_regular_file(stdin):
        reader = _FileReader(stdin)
    else:
        reader = asyncio.StreamReader()
        protocol = asyncio.StreamReaderProtocol(reader)
        await loop.connect_read_pipe(lambda: protocol, stdin)
    if _is_regular_file(stdout):
        writer = _FileWriter(stdout)
    else:
        transport, flow = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
        writer = asyncio.StreamWriter(transport, flow, None, loop)
    return reader, writer

"""Shared pieces of the lifecycle tests: an agent and a client joined by memory pipes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson

from agentproto.acp import AcpClient, Agent, AgentRunner, ClientHandlers, MemoryPipe
from agentproto.acp import schema as acp

ALLOW = acp.PermissionOption(option_id="yes", name="Yes", kind="allow_once")
REJECT = acp.PermissionOption(option_id="no", name="No", kind="reject_once")


def other_tasks() -> set[asyncio.Task[Any]]:
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


class Lines:
    """The JSON-RPC messages a hand-driven test reads from a pipe, one line each."""

    def __init__(self, pipe: MemoryPipe) -> None:
        self.pipe = pipe
        self._buffer = b""

    async def next(self) -> dict[str, Any]:
        """The next message (fails after 5 s, or when the pipe ends)."""
        while b"\n" not in self._buffer:
            chunk = await asyncio.wait_for(self.pipe.read(65536), 5)
            assert chunk, "the peer closed"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        value: dict[str, Any] = orjson.loads(line)
        return value


class Answers(ClientHandlers):
    """Answers permission requests with a fixed answer and records updates."""

    def __init__(self, answer: Any = "yes") -> None:
        self.answer = answer
        self.updates: list[tuple[str, Any]] = []
        self.asked = asyncio.Event()

    async def on_update(self, session: Any, update: Any) -> None:
        self.updates.append((session.session_id, update))

    async def on_permission(self, session: Any, request: Any) -> Any:
        self.asked.set()
        if self.answer == "wait":
            await asyncio.Event().wait()
        return self.answer


@contextlib.asynccontextmanager
async def pair(
    agent: Agent, handlers: ClientHandlers | None = None, **options: Any
) -> AsyncIterator[tuple[AgentRunner, AcpClient]]:
    """A runner serving ``agent`` and a started client connected to it; both closed after."""
    unstable = options.pop("unstable", False)
    to_agent, to_client = MemoryPipe(), MemoryPipe()
    runner = AgentRunner(agent, to_agent, to_client, unstable=unstable, **options)
    client = AcpClient.connect(to_client, to_agent, handlers, unstable=unstable, **options)
    serving = asyncio.create_task(runner.serve())
    try:
        async with client:
            yield runner, client
    finally:
        await runner.close()
        await serving

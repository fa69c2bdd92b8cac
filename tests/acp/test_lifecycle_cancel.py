"""session/cancel and the permission requests of the cancelled work: the agent stops waiting,
treats them as not approved and cancels each at the client with $/cancel_request; the client
answers a cancelled request `cancelled` (the schema's CancelSessionNotification,
RequestPermissionRequest and RequestPermissionOutcome `cancelled`)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from agentproto.acp import Agent, AgentRunner, AgentSession, MemoryPipe
from agentproto.acp import schema as acp
from tests.acp.lifecycle_helpers import ALLOW, Answers, Lines, other_tasks, pair


class Cooperative(Agent):
    """Asks permission; on cancel it does not cancel the turn's task (it finishes itself)."""

    def __init__(self) -> None:
        self.decisions: list[Any] = []

    async def cancel(self, session: AgentSession) -> None:
        pass

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str | None:
        tool = await session.tool_call("Edit")
        self.decisions.append(await session.request_permission("ok?", [ALLOW], tool_call=tool))
        return "cancelled" if session.cancelled else "end_turn"


class Withdrawn(Answers):
    """Never answers a permission request; records that the agent withdrew it."""

    def __init__(self) -> None:
        super().__init__("wait")
        self.withdrawn = asyncio.Event()

    async def on_permission(self, session: Any, request: Any) -> Any:
        try:
            return await super().on_permission(session, request)
        except asyncio.CancelledError:
            self.withdrawn.set()
            raise


async def test_cancel_withdraws_the_pending_permission_request() -> None:
    """A session/cancel that does not answer the request itself (a client other than
    AcpClient.cancel): the agent's request_permission returns `cancelled` without the
    client's answer, the client's handler is cancelled by $/cancel_request, and the turn
    ends `cancelled`."""
    agent, handlers = Cooperative(), Withdrawn()
    async with pair(agent, handlers) as (_, client):
        await client.initialize()
        session = await client.new_session("/w")
        turn = asyncio.create_task(client.prompt(session.session_id, "go"))
        await asyncio.wait_for(handlers.asked.wait(), 5)
        await client.connection.notify(acp.CancelSessionNotification(session_id=session.session_id))
        assert await asyncio.wait_for(turn, 5) == "cancelled"
        await asyncio.wait_for(handlers.withdrawn.wait(), 5)
        (decision,) = agent.decisions
        assert decision.cancelled and not decision.allowed
        assert client.diagnostics == []


class RawClient:
    """A hand-driven client end of an AgentRunner: the test writes and reads the lines."""

    def __init__(self, agent: Agent) -> None:
        self.to_agent, self.to_client = MemoryPipe(), MemoryPipe()
        self.diagnostics: list[Any] = []
        self.runner = AgentRunner(
            agent, self.to_agent, self.to_client, on_diagnostic=self.diagnostics.append
        )
        self.recv = Lines(self.to_client).next

    def send(self, obj: dict[str, Any]) -> None:
        self.to_agent.write(orjson.dumps({"jsonrpc": "2.0", **obj}) + b"\n")

    async def until(self, method: str | None = None, ident: int | None = None) -> dict[str, Any]:
        """The next message of ``method`` (or the response to ``ident``), skipping others."""
        while True:
            message = await self.recv()
            if message.get("method") == method if method else message.get("id") == ident:
                return message


async def test_the_wire_carries_cancel_request_for_the_permission_request() -> None:
    """On session/cancel the agent sends $/cancel_request naming its permission request,
    never resumes `running` for the cancelled work, ends it with the idle `cancelled`
    update, and ignores the client's late answer."""
    raw = RawClient(Cooperative())
    serving = asyncio.create_task(raw.runner.serve())
    info = {"name": "raw", "version": "0"}
    raw.send({"id": 1, "method": "initialize", "params": {"protocolVersion": 2, "info": info}})
    await raw.until(ident=1)
    raw.send({"id": 2, "method": "session/new", "params": {"cwd": "/w"}})
    session_id = (await raw.until(ident=2))["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    raw.send({"id": 3, "method": "session/prompt", "params": prompt})
    asked = await raw.until("session/request_permission")
    raw.send({"method": "session/cancel", "params": {"sessionId": session_id}})
    cancels, states = [], []
    while not states or states[-1].get("state") != "idle":
        message = await raw.recv()
        if message.get("method") == "$/cancel_request":
            cancels.append(message["params"])
        update = message.get("params", {}).get("update", {})
        if update.get("sessionUpdate") == "state_update":
            states.append(update)
    assert cancels == [{"requestId": asked["id"]}]
    assert states == [{"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}]
    raw.send({"id": asked["id"], "result": {"outcome": {"outcome": "cancelled"}}})  # late
    await asyncio.sleep(0.05)
    assert raw.diagnostics == []
    raw.to_agent.close()
    await asyncio.wait_for(serving, 5)
    assert other_tasks() == set()


async def test_acp_client_cancel_answers_itself_and_ignores_the_late_cancel_request() -> None:
    """AcpClient.cancel answers the pending request `cancelled` at once (the schema allows it
    for requests of the cancelled work); the agent's $/cancel_request that follows names an
    answered request and is ignored without a diagnostic."""
    agent, handlers = Cooperative(), Answers("wait")
    async with pair(agent, handlers) as (_, client):
        await client.initialize()
        session = await client.new_session("/w")
        turn = asyncio.create_task(client.prompt(session.session_id, "go"))
        await asyncio.wait_for(handlers.asked.wait(), 5)
        await client.cancel(session.session_id)
        assert await asyncio.wait_for(turn, 5) == "cancelled"
        await client.connection.settle()
        assert agent.decisions[0].cancelled
        assert client.diagnostics == []

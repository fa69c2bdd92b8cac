"""ACP v1 peers behind the v2 lifecycle API: when ``initialize`` negotiates 1, the wire speaks
v1 and the application keeps speaking v2, on the client side and on the agent side."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentproto.acp import AcpClient, Agent, AgentRunner, AgentSession, MemoryPipe
from agentproto.acp import schema as acp
from agentproto.acp._rpc.negotiation import SUPPORTED_VERSIONS
from tests.acp.lifecycle_helpers import ALLOW, REJECT, Answers


class Tap:
    """A writer that records every JSON-RPC message written through it."""

    def __init__(self, pipe: MemoryPipe) -> None:
        self.pipe = pipe
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.sent += [json.loads(line) for line in data.splitlines() if line.strip()]
        self.pipe.write(data)

    async def drain(self) -> None:
        await self.pipe.drain()

    def close(self) -> None:
        self.pipe.close()


class Scripted(Agent):
    """A v2 agent: a message, a tool call behind a permission, a plan."""

    protocol_versions = (1,)

    def __init__(self) -> None:
        self.decisions: list[Any] = []

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str | None:
        await session.message("working")
        tool = await session.tool_call("Edit", kind="edit")
        decision = await session.request_permission("Edit?", [ALLOW, REJECT], tool_call=tool)
        self.decisions.append(decision)
        await tool.finish("completed" if decision.allowed else "failed")
        await session.plan([acp.PlanEntry(content="x", priority="low", status="completed")])
        return None


def test_supported_versions_include_v1() -> None:
    """Version 1 is supported, since the bridge serves it."""
    assert SUPPORTED_VERSIONS == (1, 2)


async def test_v2_client_and_v2_agent_speak_v1_on_the_wire() -> None:
    """A v1-only agent and a v2 client negotiate 1; the wire carries v1 shapes only (the
    permission's toolCall, the prompt's stopReason, no state_update), and both applications
    see the v2 turn: prompt() returns the stop reason, the states agree on the entities."""
    to_agent, to_client = MemoryPipe(), MemoryPipe()
    agent_out, client_out = Tap(to_client), Tap(to_agent)
    agent = Scripted()
    runner = AgentRunner(agent, to_agent, agent_out)
    client = AcpClient.connect(to_client, client_out, Answers("yes"))
    serving = asyncio.create_task(runner.serve())
    async with client:
        answer = await client.initialize()
        assert answer.protocol_version == 1 and runner.version == 1
        assert client.connection.protocol == 1 and runner.connection.protocol == 1
        session = await client.new_session("/w")
        assert await client.prompt(session.session_id, "go") == "end_turn"
        assert session.phase == "idle" and agent.decisions[0].allowed
        (call,) = session.state.tool_calls.values()
        assert call.status == "completed" and call.title == "Edit"
        agent_state = runner.sessions[session.session_id].state
        assert session.state.tool_calls.keys() == agent_state.tool_calls.keys()
        assert len(session.state.plans) == 1
    await runner.close()
    await serving
    init = agent_out.sent[0]["result"]
    assert init["protocolVersion"] == 1 and init["agentCapabilities"]["loadSession"] is True
    updates = [m for m in agent_out.sent if m.get("method") == "session/update"]
    kinds = [m["params"]["update"]["sessionUpdate"] for m in updates]
    assert "state_update" not in kinds and "tool_call" in kinds
    (permission,) = [m for m in agent_out.sent if m.get("method") == "session/request_permission"]
    assert permission["params"]["toolCall"]["toolCallId"] == call.tool_call_id
    assert "subject" not in permission["params"]
    (prompt,) = [m for m in agent_out.sent if m.get("id") == 2 and "result" in m]
    assert prompt["result"] == {"stopReason": "end_turn"}


async def test_resume_with_replay_is_v1_session_load() -> None:
    """resume_session(replay=True) becomes v1 session/load; the replay (through a fresh
    adapter) rebuilds the client's state by the live rules."""
    to_agent, to_client = MemoryPipe(), MemoryPipe()
    client_out = Tap(to_agent)
    runner = AgentRunner(Scripted(), to_agent, to_client)
    client = AcpClient.connect(to_client, client_out, Answers("yes"))
    serving = asyncio.create_task(runner.serve())
    async with client:
        await client.initialize()
        session = await client.new_session("/w")
        await client.prompt(session.session_id, "go")
        live = session.state.to_json()
        replayed = await client.resume_session(session.session_id, "/w")
        assert replayed is not session
        assert replayed.state.to_json()["entities"].keys() == live["entities"].keys()
        (call,) = replayed.state.tool_calls.values()
        assert call.status == "completed"
        assert replayed.stop_reason == "end_turn"
    await runner.close()
    await serving
    methods = [m.get("method") for m in client_out.sent]
    assert "session/load" in methods and "session/resume" not in methods


async def test_cancelled_turn_ends_with_cancelled() -> None:
    """cancel() during a v1 turn: the v1 prompt response says cancelled, and prompt() too."""

    class Waits(Agent):
        protocol_versions = (1,)
        started = asyncio.Event()

        async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str | None:
            self.started.set()
            await asyncio.sleep(30)
            return None

    to_agent, to_client = MemoryPipe(), MemoryPipe()
    agent = Waits()
    runner = AgentRunner(agent, to_agent, to_client)
    client = AcpClient.connect(to_client, to_agent, Answers("yes"))
    serving = asyncio.create_task(runner.serve())
    async with client:
        await client.initialize()
        session = await client.new_session("/w")
        turn = asyncio.create_task(client.prompt(session.session_id, "go"))
        await agent.started.wait()
        await client.cancel(session.session_id)
        assert await asyncio.wait_for(turn, 5) == "cancelled"
    await runner.close()
    await serving


def test_capabilities_cross_versions_in_each_versions_shape() -> None:
    """A v2 agent's markers reach a v1 client as v1 capabilities (v2's session baseline as
    v1's list/resume/close markers, prompt and MCP markers as flags), and a v1 agent's
    capabilities reach a v2 client as v2 markers; nothing of one version's shape leaks into
    the other's."""
    from agentproto.acp._io.v1bridge import agent_capabilities_v1, agent_capabilities_v2

    v2_caps = {
        "session": {"prompt": {"image": {}, "audio": None}, "mcp": {"http": {}}, "delete": {}},
        "auth": {"status": {}},
        "_meta": {"x": 1},
    }
    v1_caps = agent_capabilities_v1(v2_caps)
    assert v1_caps == {
        "auth": {"status": {}},
        "_meta": {"x": 1},
        "sessionCapabilities": {"close": {}, "delete": {}, "list": {}, "resume": {}},
        "promptCapabilities": {"image": True},
        "mcpCapabilities": {"http": True},
    }
    back = agent_capabilities_v2({**v1_caps, "loadSession": True})
    assert back == {
        "auth": {"status": {}},
        "_meta": {"x": 1},
        "session": {"delete": {}, "prompt": {"image": {}}, "mcp": {"http": {}}},
    }
    assert agent_capabilities_v1({}) == {}
    assert agent_capabilities_v2({}) == {"session": {}}

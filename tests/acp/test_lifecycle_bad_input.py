"""Bad input against the lifecycle API: malformed lines, unknown ids, stray responses, a peer
that never answers, a flood of notifications, a peer dying mid-turn. Each gets an error or a
diagnostic, other sessions keep working, nothing hangs and no task is left behind."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from agentproto.acp import (
    AcpClient,
    Agent,
    AgentRunner,
    AgentSession,
    ConnectionClosedError,
    MemoryPipe,
    RequestTimeoutError,
    RpcError,
)
from agentproto.acp import schema as acp
from tests.acp.lifecycle_helpers import Answers, Lines, other_tasks, pair


def line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **obj}) + b"\n"


class FakeAgent:
    """A hand-driven agent end: the test writes its lines and reads the client's."""

    def __init__(self, **options: Any) -> None:
        self.to_client, self.to_agent = MemoryPipe(), MemoryPipe()
        self.client = AcpClient.connect(self.to_client, self.to_agent, Answers("yes"), **options)
        self.recv = Lines(self.to_agent).next

    def send(self, data: dict[str, Any] | bytes) -> None:
        self.to_client.write(data if isinstance(data, bytes) else line(data))

    async def answer_setup(self) -> str:
        """Answer initialize and session/new; return the session id."""
        request = await self.recv()
        info = {"name": "fake", "version": "0"}
        self.send({"id": request["id"], "result": {"protocolVersion": 2, "info": info}})
        request = await self.recv()
        self.send({"id": request["id"], "result": {"sessionId": "s1"}})
        return "s1"


def update(session: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"method": "session/update", "params": {"sessionId": session, "update": body}}


async def _setup(fake: FakeAgent) -> None:
    task = asyncio.create_task(fake.answer_setup())
    await fake.client.initialize()
    await fake.client.new_session("/w")
    await task


async def test_malformed_lines_unknown_ids_and_stray_responses() -> None:
    """A line that is not JSON is answered with parse error, a response to an id never sent
    and an update for an unknown session are diagnostics; the client keeps working."""
    fake = FakeAgent()
    async with fake.client:
        await _setup(fake)
        fake.send(b"{not json\n")
        reply = await fake.recv()
        assert reply["error"]["code"] == -32700 and reply["id"] is None
        fake.send({"id": 99, "result": {}})
        fake.send(
            update(
                "ghost",
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": "m",
                    "content": {"type": "text", "text": "x"},
                },
            )
        )
        fake.send(update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "c"}))
        await asyncio.sleep(0.05)
        codes = {d.code for d in fake.client.diagnostics}
        assert {"rpc.malformed-line", "rpc.unknown-response", "client.unannounced-session"} <= codes
        assert "c" in fake.client.sessions["s1"].state.tool_calls


async def test_a_peer_that_never_answers_times_out() -> None:
    """A prompt the agent never accepts fails with RequestTimeoutError after the app's
    timeout (the agent is asked to cancel it); the session can prompt again."""
    fake = FakeAgent(request_timeout=0.2)
    async with fake.client:
        await _setup(fake)
        with pytest.raises(RequestTimeoutError):
            await fake.client.prompt("s1", "hello?")
        assert (await fake.recv())["method"] == "session/prompt"
        assert (await fake.recv())["method"] == "$/cancel_request"
        assert not fake.client.sessions["s1"].busy
        with pytest.raises(TimeoutError):
            await fake.client.prompt("s1", "again", timeout=0.1)


async def test_a_peer_dying_mid_turn_fails_the_prompt() -> None:
    """The agent's stream ending after it accepted a prompt fails the waiting prompt with
    ConnectionClosedError; nothing hangs and no task is left."""
    fake = FakeAgent()
    async with fake.client:
        await _setup(fake)
        turn = asyncio.create_task(fake.client.prompt("s1", "go"))
        request = await fake.recv()
        fake.send({"id": request["id"], "result": {"messageId": "u1"}})
        fake.send(update("s1", {"sessionUpdate": "state_update", "state": "running"}))
        await asyncio.sleep(0.05)
        fake.to_client.close()
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(turn, 5)
    assert other_tasks() == set()


async def test_an_idle_left_from_earlier_work_does_not_end_the_prompt() -> None:
    """An idle update that arrives after the prompt was sent but before it was accepted and
    before any running update is earlier work's: the prompt waits for its own idle."""
    fake = FakeAgent()
    async with fake.client:
        await _setup(fake)
        turn = asyncio.create_task(fake.client.prompt("s1", "go"))
        request = await fake.recv()
        fake.send(
            update(
                "s1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "max_tokens"}
            )
        )
        fake.send({"id": request["id"], "result": {"messageId": "u1"}})
        fake.send(update("s1", {"sessionUpdate": "state_update", "state": "running"}))
        fake.send(
            update(
                "s1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
            )
        )
        assert await asyncio.wait_for(turn, 5) == "end_turn"


class Flooder(Agent):
    """Floods one session with chunks while another session prompts normally."""

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str | None:
        if request.prompt[0].text == "flood":  # type: ignore[union-attr]
            for number in range(3000):
                await session.message_chunk(f"{number} ", message_id="flood")
        return None


async def test_a_flood_of_notifications_leaves_other_sessions_working() -> None:
    """Thousands of updates on one session are all applied in order, and a prompt on
    another session completes meanwhile (backpressure, not unbounded buffering)."""
    async with pair(Flooder(), max_queued_notifications=8) as (_, client):
        await client.initialize()
        noisy = await client.new_session("/w")
        quiet = await client.new_session("/w")
        flood = asyncio.create_task(client.prompt(noisy.session_id, "flood"))
        assert await client.prompt(quiet.session_id, "hi") == "end_turn"
        assert await asyncio.wait_for(flood, 30) == "end_turn"
        content = noisy.state.agent_messages["flood"].content
        assert len(content) == 3000 and content[-1].text == "2999 "  # type: ignore[union-attr]


async def test_the_client_going_away_ends_the_agents_turns() -> None:
    """When the client's stream ends mid-turn, the runner cancels the turn and serve()
    returns; no task of the agent side is left."""
    started = asyncio.Event()

    class Slow(Agent):
        async def prompt(self, session: AgentSession, request: Any) -> str | None:
            started.set()
            await asyncio.sleep(30)
            return None

    to_agent, to_client = MemoryPipe(), MemoryPipe()
    runner = AgentRunner(Slow(), to_agent, to_client)
    serving = asyncio.create_task(runner.serve())
    to_agent.write(
        line(
            {
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": 2, "info": {"name": "c", "version": "0"}},
            }
        )
    )
    to_agent.write(line({"id": 1, "method": "session/new", "params": {"cwd": "/w"}}))
    await asyncio.sleep(0.05)
    (session_id,) = runner.sessions
    to_agent.write(
        line(
            {
                "id": 2,
                "method": "session/prompt",
                "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]},
            }
        )
    )
    await asyncio.wait_for(started.wait(), 5)
    to_agent.close()
    await asyncio.wait_for(serving, 5)
    assert other_tasks() == set()


async def test_the_agent_refuses_bad_prompts() -> None:
    """An empty prompt is -32602 and a prompt for an unknown session -32002; neither starts a
    turn."""
    async with pair(Flooder()) as (runner, client):
        await client.initialize()
        session = await client.new_session("/w")
        with pytest.raises(RpcError) as caught:
            await client.connection.request(
                acp.PromptRequest(session_id=session.session_id, prompt=[])
            )
        assert caught.value.code == -32602
        with pytest.raises(RpcError) as caught:
            await client.connection.request(
                acp.PromptRequest(session_id="nope", prompt=[acp.TextContentBlock(text="x")])
            )
        assert caught.value.code == -32002
        assert runner.sessions[session.session_id].turn is None


# ---- child sessions: announced first, replayed afresh (issue 25; the subagents RFD) ---------


def chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
            "content": {"type": "text", "text": text}}  # fmt: skip


def announce(child: str) -> dict[str, Any]:
    return {"sessionUpdate": "subagent_update", "sessionId": child, "title": "helper"}


def child_text(client: AcpClient, child: str = "child") -> str:
    return "".join(b.text for b in client.sessions[child].state.agent_messages["m1"].content)  # type: ignore[union-attr]


async def test_a_replay_forgets_the_children_it_announces_again() -> None:
    """Resuming with replay rebuilds the child sessions too: the replay's child traffic
    does not land on the child's old state, and child traffic replayed before its
    announcement is reported (it is kept, and the announcement attaches it)."""
    fake = FakeAgent()
    async with fake.client:
        await _setup(fake)
        fake.send(update("s1", announce("child")))
        fake.send(update("child", chunk("live")))
        await asyncio.sleep(0.05)
        assert child_text(fake.client) == "live" and fake.client.diagnostics == []
        resuming = asyncio.create_task(fake.client.resume_session("s1", "/w"))
        request = await fake.recv()
        assert request["method"] == "session/resume"
        fake.send(update("child", chunk("replayed")))
        fake.send(update("s1", announce("child")))
        fake.send({"id": request["id"], "result": {}})
        resumed = await resuming
        assert child_text(fake.client) == "replayed"
        assert [d.code for d in fake.client.diagnostics] == ["client.unannounced-session"]
        child = fake.client.sessions["child"]
        assert resumed.children == {"child": child} and child.parent is resumed


class SlowUpdates(Answers):
    """An application whose update handler takes a while (it awaits)."""

    async def on_update(self, session: Any, update: Any) -> None:
        await asyncio.sleep(0.01)
        await super().on_update(session, update)


async def test_a_permission_request_comes_after_the_updates_before_it() -> None:
    """A permission request for a child, right after the announcement, finds the child
    announced, even while the application's update handler is busy; its tool call
    patches the state the updates before it built."""
    fake = FakeAgent()
    fake.client.handlers = SlowUpdates("yes")
    async with fake.client:
        await _setup(fake)
        ask = {
            "id": 7,
            "method": "session/request_permission",
            "params": {
                "sessionId": "child",
                "title": "Allow?",
                "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
                "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c", "title": "B"}},
            },
        }
        tool = {"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "A"}
        fake.send(
            line(update("s1", {**tool, "toolCallId": "p"}))
            + line(update("s1", announce("child")))
            + line(update("child", tool))
            + line(ask)
        )
        reply = await fake.recv()
        assert reply["id"] == 7 and reply["result"]["outcome"]["optionId"] == "yes"
        await asyncio.sleep(0.1)  # every update handled
        assert fake.client.diagnostics == []
        child = fake.client.sessions["child"]
        assert child.parent is fake.client.sessions["s1"]
        assert child.state.tool_calls["c"].title == "B"

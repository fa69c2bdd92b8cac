"""v1 mode against bytes agentproto did not produce: a v1 agent written by hand
(``raw_v1_agent.py``, the standard library only) in a subprocess, driven by AcpClient."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agentproto.acp import AcpClient, ClientHandlers, ClientSession
from agentproto.acp import schema as acp
from tests.needs import spec_dir

RAW_AGENT = Path(__file__).with_name("raw_v1_agent.py")


class Handlers(ClientHandlers):
    """Allow t1; cancel the turn when t2 asks (which answers that request `cancelled`)."""

    def __init__(self) -> None:
        self.client: AcpClient | None = None
        self.titles: list[str] = []

    async def on_permission(
        self, session: ClientSession, request: acp.RequestPermissionRequest
    ) -> str | None:
        subject = request.subject
        assert isinstance(subject, acp.ToolCallRequestPermissionSubject)
        self.titles.append(request.title)
        if subject.tool_call.tool_call_id == "t2":
            assert self.client is not None
            await self.client.cancel(session.session_id)
            return None
        return "ok"


def _view(session: ClientSession) -> dict[str, Any]:
    state = session.state.to_json()["entities"]
    return {key: value for key, value in state.items() if not key.startswith("state")}


async def _drive(log_path: Path) -> tuple[AcpClient, Handlers, list[Any]]:
    handlers = Handlers()
    command = [sys.executable, str(RAW_AGENT), str(log_path)]
    client = await AcpClient.spawn(command, handlers, request_timeout=20)
    handlers.client = client
    results: list[Any] = []
    async with client:
        answer = await client.initialize(timeout=20)
        results.append(answer)
        session = await client.new_session("/w")
        results.append(session)
        results.append(await client.prompt(session.session_id, "go", timeout=20))
        results.append(await client.prompt(session.session_id, "cancel me", timeout=20))
        results.append(await client.resume_session(session.session_id, "/w", replay=True))
    return client, handlers, results


async def test_a_hand_written_v1_agent(tmp_path: Path) -> None:
    """initialize negotiates 1; the client sends v1 shapes (mcpServers, session/load, the
    v1 permission outcomes) and folds the agent's v1 updates into v2 state: chunks into one
    message, the v1 diff into a v2 diff, the plan into the plan `main`; the cancelled turn
    ends `cancelled`; the session/load replay rebuilds the same entities."""
    log_path = tmp_path / "raw.json"
    client, handlers, results = await asyncio.wait_for(_drive(log_path), 60)
    answer, session, first, second, replayed = results
    report = json.loads(log_path.read_text("utf-8"))
    assert report["problems"] == []

    assert answer.protocol_version == 1 and answer.info.name == "raw-v1-agent"
    assert (first, second) == ("end_turn", "cancelled")
    assert client.diagnostics == []
    calls = session.state.tool_calls
    assert {ident: call.status for ident, call in calls.items()} == {
        "t1": "completed",
        "t2": "cancelled",  # marked by the client's cancel (v1 has no `cancelled` status)
    }
    (diff,) = calls["t1"].content or []
    assert isinstance(diff, acp.DiffToolCallContent)
    assert [(c.operation, c.path) for c in diff.changes] == [("modify", "/w/a.txt")]
    assert diff.patch is not None and "-a\n+b\n" in diff.patch.text
    entities = session.state.to_json()["entities"]
    (message,) = [value for key, value in entities.items() if key.startswith("agent_message:")]
    assert "".join(block["text"] for block in message["content"]) == "Hello world"
    (plan,) = session.state.plans.values()
    assert plan.plan_id == "main" and isinstance(plan.plan, acp.ItemsPlanUpdateContent)
    assert [entry.content for entry in plan.plan.entries] == ["Edit a.txt"]
    assert handlers.titles == ["Edit a.txt", "Long task"]  # v1: the tool call's title

    received = [m for m in report["log"] if "method" in m]
    methods = [m["method"] for m in received]
    assert methods == [
        "initialize",
        "session/new",
        "session/prompt",
        "session/prompt",
        "session/cancel",
        "session/load",
    ]
    new = received[1]["params"]
    assert new == {"cwd": "/w", "mcpServers": []}
    outcomes = [m["result"]["outcome"] for m in report["log"] if m.get("id") in (100, 101)]
    assert outcomes == [{"outcome": "selected", "optionId": "ok"}, {"outcome": "cancelled"}]
    load = received[-1]["params"]
    assert load["sessionId"] == "raw-1" and "replayFrom" not in load

    replayed_view = _view(replayed)
    live_view = _view(session)
    live_view["tool_call:t2"]["status"] = "in_progress"  # the client's own mark is not replayed
    assert replayed_view == live_view


# ---- the other direction: a hand-written v1 client of agentproto's agent ---------------------


def _v1_update_kinds() -> set[str]:
    schema = json.loads(spec_dir("acp/v1/schema.json").read_text("utf-8"))
    members = schema["$defs"]["SessionUpdate"]["oneOf"]
    return {member["properties"]["sessionUpdate"]["const"] for member in members}


class RawV1Client:
    """Lines written by hand (json.dumps of literal v1 objects) to an agent subprocess."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.received: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        await self.process.stdin.drain()

    async def recv(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 20)
        assert line, "the agent closed its stdout"
        message: dict[str, Any] = json.loads(line)
        assert message.get("jsonrpc") == "2.0", message
        self.received.append(message)
        return message

    async def call(self, ident: int, method: str, params: dict[str, Any]) -> Any:
        """Send a request; answer permission requests `allow`; return its result."""
        await self.send({"id": ident, "method": method, "params": params})
        while True:
            message = await self.recv()
            if message.get("method") == "session/request_permission":
                outcome = {"outcome": "selected", "optionId": "allow"}
                await self.send({"id": message["id"], "result": {"outcome": outcome}})
            elif message.get("id") == ident and "method" not in message:
                assert "error" not in message, message
                return message.get("result")


async def test_a_hand_written_v1_client_of_the_example_agent() -> None:
    """The scripted example agent (a v2 application) negotiates 1 with a client written by
    hand and sends only v1: kinds of the v1 schema, the v1 permission shape, the v1 diff, the
    stop reason in the prompt response; session/load replays the same updates."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentproto",
        "acp",
        "serve-example",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    raw = RawV1Client(process)
    info = {"name": "raw-v1-client", "version": "0"}
    init = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": info}
    answer = await raw.call(0, "initialize", init)
    assert answer["protocolVersion"] == 1 and answer["agentCapabilities"]["loadSession"] is True
    assert answer["agentInfo"]["name"] == "agentproto-scripted-agent"
    session_id = (await raw.call(1, "session/new", {"cwd": "/w", "mcpServers": []}))["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    assert await raw.call(2, "session/prompt", prompt) == {"stopReason": "end_turn"}
    live = [m["params"]["update"] for m in raw.received if m.get("method") == "session/update"]
    asking = [m for m in raw.received if m.get("method") == "session/request_permission"]
    (asked,) = [m["params"] for m in asking]
    load = {"sessionId": session_id, "cwd": "/w", "mcpServers": []}
    start = len(raw.received)
    await raw.call(3, "session/load", load)
    replayed = [
        m["params"]["update"] for m in raw.received[start:] if m.get("method") == "session/update"
    ]
    assert process.stdin is not None
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), 20) == 0

    kinds = {update["sessionUpdate"] for update in live}
    assert kinds <= _v1_update_kinds() and {"tool_call", "plan", "agent_message_chunk"} <= kinds
    (call,) = [u for u in live if u["sessionUpdate"] == "tool_call"]
    assert (call["title"], call["kind"]) == ("Edit hello.py", "edit")
    assert set(asked) == {"sessionId", "toolCall", "options"}
    assert asked["toolCall"]["toolCallId"] == call["toolCallId"]
    # the example's patch names `hello.py`, its change `/w/hello.py`: no v1 diff of a whole
    # file can be read off it, so v1 gets the patch as text (the documented lossy-conversion)
    calls = [u for u in live if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    contents = [item for u in calls for item in u.get("content") or []]
    assert [(c["type"], c["content"]["text"].startswith("--- a/hello.py")) for c in contents] == [
        ("content", True)
    ]
    assert {update["sessionUpdate"] for update in replayed} <= _v1_update_kinds()
    assert [u for u in replayed if u["sessionUpdate"] == "plan"][-1] == [
        u for u in live if u["sessionUpdate"] == "plan"
    ][-1]

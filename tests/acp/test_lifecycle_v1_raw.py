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

"""An ACP v1 agent written with the official Python SDK, agent-client-protocol 0.12.1.

It serves one client on stdio (with ``--listen``: over the SDK's ``acp.http`` server,
Streamable HTTP and WebSocket, printing ``LISTENING <port>``) and plays the v1 form of
the interop scenario: the turn "go" (a plan, a tool call that asks permission and shows
a diff, an agent message), the turn "cancel me" (a tool call whose permission request the client
answers ``cancelled`` after cancelling the turn), ``session/close``, and
``session/load``, which replays every notification it sent. v1 has no agent-owned
terminals (its terminals are client methods) and no ``state_update``.

When stdin ends it writes its own view of the session (what it sent, folded by the
SDK's SessionAccumulator, see py_view.py) as JSON to the file named by its argument.

usage: python py_agent.py VIEW_PATH [--listen]
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import acp
from acp import schema
from py_view import PeerView

SCENARIO = json.loads(Path(__file__).with_name("scenario.json").read_text("utf-8"))
CWD = SCENARIO["cwd"]
PATH = f"{CWD}/main.py"
OPTIONS = [schema.PermissionOption.model_validate(o) for o in SCENARIO["options"]]


class ScenarioAgent:
    """The agent: its handlers are the SDK's ``Agent`` interface."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.view = PeerView()
        self.history: list[Any] = []
        self.record: dict[str, list[Any]] = {"permissions": [], "stopReasons": []}
        self.record |= {"methods": [], "errors": []}
        self.cancelled = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def send(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id=session_id, update=update)
        self.view.apply(schema.SessionNotification(session_id=session_id, update=update))
        self.history.append(update)

    async def ask(self, session_id: str, tool_call_id: str, expect: str) -> None:
        request = self.conn.request_permission(
            session_id=session_id,
            tool_call=schema.ToolCallUpdate(tool_call_id=tool_call_id),
            options=OPTIONS,
        )
        waits = [request, self.cancelled.wait()] if expect == "cancelled" else [request]
        response, *_ = await asyncio.gather(*waits)
        outcome = response.outcome
        seen = getattr(outcome, "option_id", outcome.outcome)
        self.record["permissions"].append({"toolCallId": tool_call_id, "outcome": seen})
        if seen != expect:
            self.record["errors"].append(f"{tool_call_id}: answered {seen}, not {expect}")

    async def initialize(self, protocol_version: int, **_: Any) -> schema.InitializeResponse:
        self.record["methods"].append("initialize")
        return schema.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(load_session=True),
            agent_info=schema.Implementation(name="py-interop-agent", version="1.0.0"),
        )

    async def new_session(self, cwd: str, **_: Any) -> schema.NewSessionResponse:
        self.record["methods"].append("session/new")
        return schema.NewSessionResponse(session_id="py-session-1")

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> schema.PromptResponse:
        self.record["methods"].append("session/prompt")
        text = "".join(getattr(block, "text", "") for block in prompt)
        stop = await (self.cancel_turn(session_id) if text == "cancel me" else self.go(session_id))
        self.record["stopReasons"].append(stop)
        return schema.PromptResponse(stop_reason=stop)

    async def go(self, session_id: str) -> str:
        entry = acp.plan_entry
        await self.send(
            session_id,
            acp.update_plan(
                [
                    entry("Edit main.py", priority="high", status="in_progress"),
                    entry("Run the tests", priority="medium", status="pending"),
                ]
            ),
        )
        await self.send(
            session_id,
            acp.start_tool_call(
                "c1",
                "Edit main.py",
                kind="edit",
                status="pending",
                locations=[schema.ToolCallLocation(path=PATH)],
            ),
        )
        await self.ask(session_id, "c1", "allow")
        diff = acp.tool_diff_content(PATH, "print('hello')\n", "print('hi')\n")
        await self.send(
            session_id, acp.update_tool_call("c1", status="in_progress", content=[diff])
        )
        await self.send(session_id, acp.update_tool_call("c1", status="completed"))
        await self.send(
            session_id,
            acp.update_plan(
                [
                    entry("Edit main.py", priority="high", status="completed"),
                    entry("Run the tests", priority="medium", status="completed"),
                ]
            ),
        )
        for text in ("Edited main.py; ", "the tests pass."):
            await self.send(session_id, acp.update_agent_message_text(text))
        return "end_turn"

    async def cancel_turn(self, session_id: str) -> str:
        await self.send(
            session_id, acp.start_tool_call("c3", "Long task", kind="execute", status="in_progress")
        )
        await self.ask(session_id, "c3", "cancelled")
        return "cancelled"

    async def cancel(self, session_id: str, **_: Any) -> None:
        self.record["methods"].append("session/cancel")
        self.cancelled.set()

    async def close_session(self, session_id: str, **_: Any) -> schema.CloseSessionResponse:
        self.record["methods"].append("session/close")
        return schema.CloseSessionResponse()

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> schema.LoadSessionResponse:
        self.record["methods"].append("session/load")
        for update in self.history:
            await self.conn.session_update(session_id=session_id, update=update)
        return schema.LoadSessionResponse()


async def main(view_path: str) -> None:
    agent = ScenarioAgent()
    try:
        await acp.run_agent(agent, use_unstable_protocol=True)
    finally:
        report = {"view": agent.view.to_json(), **agent.record}
        Path(view_path).write_text(json.dumps(report, indent=1), "utf-8")


async def listen(view_path: str) -> None:
    """Serve over the SDK's ``acp.http`` ASGI app (Streamable HTTP and WebSocket) under
    uvicorn on a free port of 127.0.0.1; print ``LISTENING <port>``; write the view of the
    last connection's agent every 100 ms."""
    import socket

    import uvicorn
    from acp.http.asgi import create_asgi_app

    agents: list[ScenarioAgent] = []

    def factory(conn: Any) -> ScenarioAgent:
        agent = ScenarioAgent()
        agent.on_connect(conn)
        agents.append(agent)
        return agent

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_asgi_app(factory), log_level="warning"))
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    print(f"LISTENING {sock.getsockname()[1]}", flush=True)
    while not serving.done():
        if agents:
            report = {"view": agents[-1].view.to_json(), **agents[-1].record}
            Path(view_path).write_text(json.dumps(report, indent=1), "utf-8")
        await asyncio.sleep(0.1)


if __name__ == "__main__":
    asyncio.run(listen(sys.argv[1]) if "--listen" in sys.argv else main(sys.argv[1]))

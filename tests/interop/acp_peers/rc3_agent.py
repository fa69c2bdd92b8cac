"""An ACP v2 agent written with the official Python SDK's v2 pre-release
(agent-client-protocol 1.0.0rc3, ``acp.experimental.v2``), serving one client on stdio
(with ``--listen``: over the SDK's remote server, Streamable HTTP and WebSocket at /acp,
printing ``LISTENING <port>``).

It plays scenario.json as ts_agent.mjs does: each prompt's turn (updates sent, a
permission asked, the idle state_update with its stop reason); on ``session/cancel`` the
pending permission request is left to the client's ``cancelled`` answer (the SDK has no
way to send ``$/cancel_request`` for it); on ``session/resume`` with ``replayFrom`` start
it replays what it kept. When stdin ends it writes its record (the updates it sent, in
wire JSON, the methods it served, the permission outcomes and stop reasons) as JSON to
the file named by its first argument.

Runs in the pre-release's own environment (it cannot share one with 0.12.1).
usage: python rc3_agent.py RECORD_PATH
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from acp.experimental.v2 import PROTOCOL_VERSION, run_agent

SCENARIO = json.loads((Path(__file__).parent / "scenario.json").read_text("utf-8"))


class ScenarioAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sent: list[dict[str, Any]] = []
        self.history: list[dict[str, Any]] = []
        self.record: dict[str, Any] = {
            "methods": [],
            "permissions": [],
            "stopReasons": [],
            "errors": [],
        }
        self.sessions = 0
        self.turns = 0
        self.last_stop: str | None = None
        self.playing: asyncio.Future[None] | None = None  # the turn after its prompt's answer

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def _send(self, session_id: str, update: dict[str, Any], retain: bool = True) -> None:
        await self.conn.session_update(session_id=session_id, update=update)
        self.sent.append(update)
        if retain:
            self.history.append(update)

    async def initialize(
        self, protocol_version: int, info: Any, capabilities: Any = None, **_: Any
    ) -> Any:
        self.record["methods"].append("initialize")
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "info": {"name": "rc3-interop-agent", "version": "1.0.0"},
            "capabilities": {"session": {}},
        }

    async def new_session(self, cwd: str, **_: Any) -> Any:
        self.record["methods"].append("session/new")
        self.sessions += 1
        return {"sessionId": f"rc3-session-{self.sessions}"}

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> Any:
        self.record["methods"].append("session/prompt")
        self.turns += 1
        message_id = f"u{self.turns}"
        blocks = [block.model_dump(by_alias=True, exclude_none=True) for block in prompt]
        text = "".join(block.get("text", "") for block in blocks)
        await self._send(session_id, {"sessionUpdate": "state_update", "state": "running"}, False)
        await self._send(
            session_id,
            {"sessionUpdate": "user_message", "messageId": message_id, "content": blocks},
        )
        self.playing = asyncio.ensure_future(self._play(session_id, SCENARIO["turns"][text]))
        return {"messageId": message_id}

    async def _play(self, session_id: str, steps: list[dict[str, Any]]) -> None:
        try:
            for step in steps:
                if "send" in step:
                    await self._send(session_id, step["send"])
                elif "ask" in step:
                    await self._ask(session_id, step["ask"])
                elif "idle" in step:
                    idle = {
                        "sessionUpdate": "state_update",
                        "state": "idle",
                        "stopReason": step["idle"],
                    }
                    await self._send(session_id, idle, False)
                    self.record["stopReasons"].append(step["idle"])
                    self.last_stop = step["idle"]
        except Exception as exc:  # recorded for the test to see
            self.record["errors"].append(f"{type(exc).__name__}: {exc}")

    async def _ask(self, session_id: str, ask: dict[str, Any]) -> None:
        response = await self.conn.request_permission(
            session_id=session_id,
            title=ask["title"],
            options=SCENARIO["options"],
            subject={"type": "tool_call", "toolCall": {"toolCallId": ask["toolCallId"]}},
        )
        outcome = response.outcome.model_dump(by_alias=True)
        seen = outcome.get("optionId") if outcome["outcome"] == "selected" else outcome["outcome"]
        self.record["permissions"].append({"toolCallId": ask["toolCallId"], "outcome": seen})
        if seen != ask["expect"]:
            self.record["errors"].append(
                f"{ask['toolCallId']}: answered {seen}, not {ask['expect']}"
            )

    async def cancel_session(self, session_id: str, **_: Any) -> None:
        self.record["methods"].append("session/cancel")

    async def close_session(self, session_id: str, **_: Any) -> Any:
        self.record["methods"].append("session/close")
        return {}

    async def resume_session(
        self, session_id: str, cwd: str, replay_from: Any = None, **_: Any
    ) -> Any:
        self.record["methods"].append("session/resume")
        if replay_from is not None and replay_from.model_dump(by_alias=True).get("type") == "start":
            for update in self.history:
                await self.conn.session_update(session_id=session_id, update=update)
        idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": self.last_stop}
        await self.conn.session_update(session_id=session_id, update=idle)
        return {}


async def main(path: str) -> None:
    agent = ScenarioAgent()
    try:
        await run_agent(agent)
    finally:
        record = {**agent.record, "sent": agent.sent}
        Path(path).write_text(json.dumps(record, indent=1), "utf-8")


async def listen(path: str) -> None:
    """Serve over the SDK's remote server (``acp.http.asgi``: Streamable HTTP and WebSocket
    at /acp, v2 through its protocol router) under uvicorn on a free port of 127.0.0.1;
    print ``LISTENING <port>``; write the last connection's record every 100 ms."""
    import socket

    import uvicorn
    from acp.experimental.negotiation import AgentProtocolRouter
    from acp.http.asgi import create_asgi_app

    agents: list[ScenarioAgent] = []

    def factory(conn: Any) -> ScenarioAgent:
        agent = ScenarioAgent()
        agent.on_connect(conn)
        agents.append(agent)
        return agent

    app = create_asgi_app(AgentProtocolRouter(v2=factory))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    print(f"LISTENING {sock.getsockname()[1]}", flush=True)
    while not serving.done():
        if agents:
            record = {**agents[-1].record, "sent": agents[-1].sent}
            Path(path).write_text(json.dumps(record, indent=1), "utf-8")
        await asyncio.sleep(0.1)


if __name__ == "__main__":
    asyncio.run(listen(sys.argv[1]) if "--listen" in sys.argv else main(sys.argv[1]))

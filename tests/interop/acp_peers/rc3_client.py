"""An ACP v2 client written with the official Python SDK's v2 pre-release
(agent-client-protocol 1.0.0rc3, ``acp.experimental.v2``). It spawns the agent command it
is given and drives scenario.json as ts_client.mjs does: the turn "go" (allowing the
permission it is asked), the turn "cancel me" (sending ``session/cancel`` when the
permission request comes, then answering it ``cancelled``: once the handler is cancelled
by the agent's ``$/cancel_request``, or after 10 s), ``session/close`` and
``session/resume`` with replay from the start.

It prints one JSON object: the updates it received live and replayed (wire JSON, as the
SDK parsed them), the permission outcomes it gave, the requests the agent cancelled, the
stop reasons it saw, the initialize result and any error.

Runs in the pre-release's own environment (it cannot share one with 0.12.1).
usage: python rc3_client.py -- AGENT_COMMAND...
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from acp.experimental.v2 import PROTOCOL_VERSION, connect_to_agent

SCENARIO = json.loads((Path(__file__).parent / "scenario.json").read_text("utf-8"))


def wire(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class ScenarioClient:
    def __init__(self) -> None:
        self.conn: Any = None
        self.out: dict[str, Any] = {
            "updates": [],
            "replayed": [],
            "permissions": [],
            "stopReasons": [],
            "cancelRequests": [],
            "initialize": None,
            "error": None,
        }
        self.replaying = False
        self.cancel_turn = False
        self.idle = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        data = wire(update)
        (self.out["replayed"] if self.replaying else self.out["updates"]).append(data)
        if data.get("sessionUpdate") == "state_update" and data.get("state") == "idle":
            if not self.replaying:
                self.out["stopReasons"].append(data.get("stopReason"))
            self.idle.set()

    async def request_permission(
        self, session_id: str, title: str, options: Any, subject: Any = None, **_: Any
    ) -> Any:
        tool_call_id = wire(subject)["toolCall"]["toolCallId"] if subject is not None else None
        if self.cancel_turn:
            await self.conn.cancel_session(session_id=session_id)
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:  # the agent withdrew the request
                self.out["cancelRequests"].append(tool_call_id)
                self.out["permissions"].append({"toolCallId": tool_call_id, "outcome": "cancelled"})
                raise
            self.out["permissions"].append({"toolCallId": tool_call_id, "outcome": "cancelled"})
            return {"outcome": {"outcome": "cancelled"}}
        self.out["permissions"].append({"toolCallId": tool_call_id, "outcome": "allow"})
        return {"outcome": {"outcome": "selected", "optionId": "allow"}}

    async def turn(self, session_id: str, text: str) -> None:
        self.idle.clear()
        await self.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": text}])
        await asyncio.wait_for(self.idle.wait(), 30)


async def main(command: list[str], url: str | None = None, transport: str = "http") -> int:
    client = ScenarioClient()
    process = None
    if url is None:
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 24
        )
        conn = client.conn = connect_to_agent(client, process.stdin, process.stdout)
    elif transport == "ws":
        from acp.ws import create_websocket_stream

        stream = await create_websocket_stream(url.replace("http", "ws", 1))
        conn = client.conn = connect_to_agent(client, stream)
    else:
        from acp.http import create_http_stream

        conn = client.conn = connect_to_agent(client, create_http_stream(url))
    out = client.out
    try:
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            info={"name": "rc3-interop-client", "version": "1.0.0"},
            capabilities={},
        )
        out["initialize"] = wire(init)
        session_id = (await conn.new_session(cwd=SCENARIO["cwd"])).session_id
        await client.turn(session_id, "go")
        client.cancel_turn = True
        await client.turn(session_id, "cancel me")
        client.cancel_turn = False
        await conn.close_session(session_id=session_id)
        client.replaying = True
        client.idle.clear()
        await conn.resume_session(
            session_id=session_id, cwd=SCENARIO["cwd"], replay_from={"type": "start"}
        )
        await asyncio.wait_for(client.idle.wait(), 30)
    except Exception:
        out["error"] = traceback.format_exc()
    await conn.close()
    out["agentExit"] = None  # a remote agent: no process of ours
    if process is not None:
        if process.stdin is not None:
            process.stdin.close()
        out["agentExit"] = await asyncio.wait_for(process.wait(), 30)
    print(json.dumps(out))
    return 0 if out["error"] is None else 1


if __name__ == "__main__":
    if "--url" in sys.argv:
        sys.exit(asyncio.run(main([], sys.argv[sys.argv.index("--url") + 1], sys.argv[-1])))
    sys.exit(asyncio.run(main(sys.argv[sys.argv.index("--") + 1 :])))

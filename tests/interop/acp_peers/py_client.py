"""An ACP v1 client written with the official Python SDK, agent-client-protocol 0.12.1.

It spawns the agent command it is given and drives the interop scenario over the
child's stdio: ``initialize`` (version 1), the turn "go" (allowing the permission
it is asked), the turn "cancel me" (cancelling it when the permission request
comes, then answering that request ``cancelled`` a second later), ``session/close``, and
``session/load``, whose replay it folds into a fresh view.

It prints one JSON object on stdout: its live and replayed views (folded by the
SDK's SessionAccumulator, see py_view.py), the permission outcomes it gave, the
stop reasons of the prompt responses and any error.

usage: python py_client.py -- AGENT_COMMAND...
       python py_client.py --url http://HOST:PORT/acp --transport http|ws
       (a remote agent, over the SDK's ``acp.http`` or ``acp.ws`` client)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import acp
from acp import schema
from py_view import PeerView

SCENARIO = json.loads(Path(__file__).with_name("scenario.json").read_text("utf-8"))


class ScenarioClient:
    """The client: its handlers are the SDK's ``Client`` interface."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.live = PeerView()
        self.replayed = PeerView()
        self.target = self.live
        self.cancel_next = False
        self.out: dict[str, Any] = {"permissions": [], "stopReasons": [], "error": None}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.target.apply(schema.SessionNotification(session_id=session_id, update=update))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> schema.RequestPermissionResponse:
        ident = tool_call.tool_call_id
        if self.cancel_next:
            await self.conn.cancel(session_id=session_id)
            self.out["permissions"].append({"toolCallId": ident, "outcome": "cancelled"})
            # answer as a UI would, a moment later: the agent meanwhile handles the cancel
            # (agentproto's sends $/cancel_request for this request, which the SDK ignores)
            await asyncio.sleep(0.5)
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        self.out["permissions"].append({"toolCallId": ident, "outcome": "allow"})
        outcome = schema.AllowedOutcome(outcome="selected", option_id="allow")
        return schema.RequestPermissionResponse(outcome=outcome)

    async def run(self) -> None:
        conn = self.conn
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        self.out["initialize"] = init.model_dump(mode="json", by_alias=True, exclude_none=True)
        session = await conn.new_session(cwd=SCENARIO["cwd"], mcp_servers=[])
        sid = session.session_id
        for text, cancel in (("go", False), ("cancel me", True)):
            self.cancel_next = cancel
            response = await conn.prompt(session_id=sid, prompt=[acp.text_block(text)])
            self.out["stopReasons"].append(response.stop_reason)
        self.cancel_next = False
        await conn.close_session(session_id=sid)
        self.target = self.replayed
        await conn.load_session(cwd=SCENARIO["cwd"], session_id=sid, mcp_servers=[])
        self.target = self.live


async def over_url(url: str, transport: str) -> int:
    """The scenario against a remote agent, over the SDK's HTTP or WebSocket client."""
    client = ScenarioClient()
    client.out["agentExit"] = None  # no process of ours
    try:
        if transport == "ws":
            from acp.ws import create_websocket_stream

            stream = await create_websocket_stream(url.replace("http", "ws", 1))
        else:
            from acp.http import create_http_stream

            stream = create_http_stream(url)
        conn = acp.connect_to_agent(client, stream, use_unstable_protocol=True)
        try:
            await asyncio.wait_for(client.run(), 60)
        finally:
            await conn.close()
    except Exception:
        client.out["error"] = traceback.format_exc()
    report = {"view": client.live.to_json(), "replayed": client.replayed.to_json()}
    sys.stdout.write(json.dumps(report | client.out) + "\n")
    return 0 if client.out["error"] is None else 1


async def main(command: list[str]) -> int:
    client = ScenarioClient()
    try:
        # the SDK passes the agent a trimmed environment: give it ours, so that it runs
        # the agentproto under test (PYTHONPATH), not whichever one is installed
        async with acp.spawn_agent_process(
            client, command[0], *command[1:], env=dict(os.environ), use_unstable_protocol=True
        ) as (_, process):
            await asyncio.wait_for(client.run(), 60)
            process.stdin.close()
            client.out["agentExit"] = await asyncio.wait_for(process.wait(), 10)
    except Exception:
        client.out["error"] = traceback.format_exc()
    report = {"view": client.live.to_json(), "replayed": client.replayed.to_json()}
    sys.stdout.write(json.dumps(report | client.out) + "\n")
    return 0 if client.out["error"] is None else 1


if __name__ == "__main__":
    if "--url" in sys.argv:
        url, transport = sys.argv[sys.argv.index("--url") + 1], sys.argv[-1]
        sys.exit(asyncio.run(over_url(url, transport)))
    sys.exit(asyncio.run(main(sys.argv[sys.argv.index("--") + 1 :])))

"""The demo of both protocols (``nox -s demo``), public API only.

1. **AG-UI**: serves ``agui_hello_agent.py`` (beside this file) with uvicorn on a free port
   of 127.0.0.1, runs it once with :class:`~agentproto.agui.HttpAgent`, prints each
   event as it arrives, then the conversation and state the client folded.
2. **ACP**: starts ``acp_hello_agent.py`` as a subprocess and talks to it over stdio with
   :class:`~agentproto.acp.AcpClient`: one prompt turn, a permission granted. The
   client prints each update it applies; the agent reports on stderr what it saw of
   the client, and the demo prints that after the turn. Last, the session state the
   client kept.

Needs httpx and uvicorn (``pip install 'agentproto[http]' uvicorn``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from agentproto.acp import AcpClient, ClientHandlers, ClientSession
from agentproto.acp import schema as acp
from agentproto.agui import HttpAgent

HERE = Path(__file__).resolve().parent


def agui_part() -> None:
    """Serve the AG-UI example agent and run it once."""
    import uvicorn

    sys.path.insert(0, str(HERE))
    from agui_hello_agent import app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    print(f"== AG-UI: the example agent serves {url}; the client runs it once\n")
    try:
        with HttpAgent(url, thread_id="demo-thread") as agent:
            for event in agent.run():
                print(f"  client got {event.type}")
            folded = agent.conversation.to_json()
    finally:
        server.should_exit = True
        thread.join(10)
    print("\n  the client's conversation:")
    for message in folded["messages"]:
        calls = ", ".join(c["function"]["name"] for c in message.get("toolCalls") or [])
        print(f"    {message['role']:<9} {message.get('content') or ''!r} {calls}".rstrip())
    print(f"  the client's state: {json.dumps(folded['state'])}\n")


class Printer(ClientHandlers):
    """Prints each update the client applies, and allows every permission request."""

    async def on_update(self, session: ClientSession, update: acp.SessionUpdate) -> None:
        print(f"  client applied {update.session_update}")

    async def on_permission(
        self, session: ClientSession, request: acp.RequestPermissionRequest
    ) -> str | None:
        print(f"  client asked: {request.title!r}; answering allow")
        return "allow"


async def acp_part() -> None:
    """Run one prompt turn against the ACP example agent over stdio."""
    print("== ACP: the client starts the example agent and sends one prompt\n")
    with tempfile.TemporaryFile(mode="w+") as agent_log:
        command = [sys.executable, str(HERE / "acp_hello_agent.py")]
        client = await AcpClient.spawn(command, Printer(), stderr=agent_log.fileno())
        async with client:
            await client.initialize()
            session = await client.new_session(str(HERE))
            stop_reason = await client.prompt(session.session_id, "Add a greeting", timeout=30)
        agent_log.seek(0)
        print(f"\n  the turn ended: {stop_reason}")
        print("\n  what the agent saw:")
        for line in agent_log.read().splitlines():
            print(f"    {line}")
    entities = session.state.to_json()["entities"]
    print(f"\n  the client's session state: {len(entities)} entities")
    for key in entities:
        print(f"    {key}")


def main() -> int:
    """Both parts; 0 when both ran to their end."""
    try:
        import httpx  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print("the demo needs httpx and uvicorn: pip install httpx uvicorn", file=sys.stderr)
        return 2
    agui_part()
    asyncio.run(acp_part())
    return 0


if __name__ == "__main__":
    sys.exit(main())

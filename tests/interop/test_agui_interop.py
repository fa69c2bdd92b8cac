"""Interop with the real TypeScript peer: @ag-ui/client 1.0.0's HttpAgent.

The example agent is served by uvicorn on 127.0.0.1; a small Node script runs the
published client's ``HttpAgent`` against it. The response bytes the client received
are recorded on the server side and fed to agentproto's own Consumer: both must end
with the same messages and state, and deliver the same event types.

The client is installed with npm into ``.interop/`` (ignored by git) on first use.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agui_scripted_agent import DEFAULT_RUN_ID, DEFAULT_THREAD_ID, app, scripted_events

from agentproto.agui import Consumer, RunProducer, agent_app
from agentproto.stores import MemoryEventLog
from tests.agui.live_server import recording, serve
from tests.needs import need_node, npm_install

ROOT = Path(__file__).resolve().parents[2]
PREFIX = ROOT / ".interop"
CLIENT_VERSION = "1.0.0"
SCRIPT = Path(__file__).with_name("agui_client.mjs")


def _ensure_client() -> Path:
    """Install @ag-ui/client into .interop/ once; returns the folder holding node_modules."""
    need_node()
    package = PREFIX / "node_modules" / "@ag-ui" / "client" / "package.json"
    if not package.is_file() or json.loads(package.read_text())["version"] != CLIENT_VERSION:
        PREFIX.mkdir(exist_ok=True)
        (PREFIX / "package.json").write_text('{"private": true, "type": "module"}\n')
        npm_install(PREFIX, [f"@ag-ui/client@{CLIENT_VERSION}"])
    shutil.copyfile(SCRIPT, PREFIX / SCRIPT.name)  # resolves @ag-ui/client from .interop
    return PREFIX


def _with_cursors() -> Any:
    """The scripted agent served with an event log: every frame carries an ``id:`` cursor."""

    async def handler(run_input: Any, producer: RunProducer) -> None:
        for event in scripted_events(run_input):
            producer.emit(event)
            await asyncio.sleep(0)

    return agent_app(handler, log=MemoryEventLog())


@pytest.mark.parametrize("cursors", [False, True], ids=["plain", "with-cursors"])
def test_typescript_client_and_agentproto_agree(cursors: bool) -> None:
    """The TS client and agentproto's reducer end with the same messages and state, also
    when the server gives every frame a cursor (the client ignores ``id:``)."""
    folder = _ensure_client()
    bodies: list[bytes] = []
    with serve(recording(_with_cursors() if cursors else app, bodies)) as url:
        result = subprocess.run(
            ["node", str(folder / SCRIPT.name), url, DEFAULT_THREAD_ID, DEFAULT_RUN_ID],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NODE_NO_WARNINGS": "1"},
        )
    assert result.returncode == 0, result.stdout + result.stderr
    theirs = json.loads(result.stdout)
    assert theirs["warnings"] == [] and theirs["runError"] is None

    consumer = Consumer(
        run_input={"threadId": DEFAULT_THREAD_ID, "runId": DEFAULT_RUN_ID, "messages": []}
    )
    delivered = [e.type for chunk in bodies for e in consumer.feed_bytes(chunk)]
    delivered += [e.type for e in consumer.close()]
    ours = consumer.conversation.to_json()

    assert consumer.diagnostics == []
    assert delivered == theirs["eventTypes"]
    assert ours["state"] == theirs["state"]
    assert ours["messages"] == theirs["messages"]
    assert consumer.verifier.runs[-1].status == "succeeded"
    assert (b"\nid: " in b"\n" + b"".join(bodies)) is cursors

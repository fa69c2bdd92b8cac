"""ACP over HTTP and WebSocket with the real TypeScript peer: @agentclientprotocol/sdk 2.4.0's
``experimental/server``, ``experimental/http-client`` and ``experimental/ws-client``.

Both directions, over real sockets, through the scenario of ``acp_peers/scenario.json`` (a
turn with a plan, a permission, a diff and a terminal; a turn cancelled while its
permission request is pending, the agent withdrawing it with ``$/cancel_request``; a
``session/close``; a ``session/resume`` with replay; the connection's close):

* the SDK's client (``ts_client.mjs --url``) against ``acp_app`` serving agentproto's
  scenario agent, in this process under uvicorn;
* ``AcpClient.connect_url`` against the SDK's server (``ts_agent.mjs --listen``).

The two sides' views must be equal. Where the wire differs from the SDK's own (cursors in
SSE ``id:`` and ``_meta["acp/cursor"]``, ``transport.resumable`` in the capabilities), the
SDK ignores them: its parser skips ``id:``, its schema drops the unknown capability and its
view of the session is unchanged. A dropped stream is resumed by cursor
between agentproto's two sides (``tests/acp/test_remote.py``); the SDK 2.4.0 implements no
resumption (no ``Last-Event-ID``, no cursor), which ``test_the_sdk_server_gives_no_cursor``
records, so that the day it does the suite says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentproto.acp import AcpClient, SessionState, parse_session_update
from tests.agui.live_server import serve
from tests.interop.acp_side import (
    PERMISSIONS,
    STOP_REASONS,
    ScenarioClient,
    ScenarioHandlers,
    ServedAgents,
)
from tests.interop.test_acp_interop_ts import METHODS, check_scenario_ran, ensure_sdk

ROOT = Path(__file__).resolve().parents[2]
TRANSPORTS = ["http", "ws"]


def _node(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NODE_NO_WARNINGS": "1"},
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_sdk_client_drives_agentproto_served_over_the_network(transport: str) -> None:
    """The SDK's HTTP (or WebSocket) client runs the scenario against ``acp_app``: the two
    views agree, the SDK ignoring the cursors it is sent."""
    folder = ensure_sdk()
    agents = ServedAgents()
    with serve(agents.app()) as url:
        script = str(folder / "ts_client.mjs")
        result = _node(folder, script, "--url", url + "/acp", "--transport", transport)
    assert result.returncode == 0, result.stdout + result.stderr
    theirs = json.loads(result.stdout)
    ours = agents.last_report()
    assert theirs["error"] is None
    assert ours["errors"] == [] and ours["diagnostics"] == []
    assert ours["methods"] == METHODS
    assert theirs["initialize"]["protocolVersion"] == 2
    # transport.resumable (ours, the RFD's; the SDK's schema has no such capability): the
    # SDK's parse drops the unknown key without complaint
    assert "transport" not in theirs["initialize"]["capabilities"]
    assert theirs["cancelRequests"] == ["c3"]
    check_scenario_ran(theirs["view"])
    assert theirs["view"] == ours["view"]
    assert theirs["replayed"] == theirs["view"]
    assert theirs["permissions"] == ours["permissions"] == PERMISSIONS
    assert theirs["stopReasons"] == ours["stopReasons"] == STOP_REASONS
    received = SessionState()
    received.replay(parse_session_update(update) for update in theirs["updates"])
    assert received.to_json() == ours["state"]


@pytest.fixture
def sdk_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The SDK's server (``ts_agent.mjs --listen``): its URL and where its view goes."""
    folder = ensure_sdk()
    view = tmp_path / "agent.json"
    process = subprocess.Popen(
        ["node", str(folder / "ts_agent.mjs"), str(view), "--listen"],
        cwd=folder,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "NODE_NO_WARNINGS": "1"},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("LISTENING "), line
        yield f"http://127.0.0.1:{line.split()[1]}/acp", view
    finally:
        process.terminate()
        process.wait(10)


async def _drive(url: str) -> dict[str, Any]:
    handlers = ScenarioHandlers()
    client = AcpClient.connect_url(url, handlers, request_timeout=30)
    scenario = ScenarioClient(client, handlers)
    async with client:
        await asyncio.wait_for(scenario.run(), 60)
    assert client.agent is not None
    return {**scenario.report(), "protocol": client.agent.protocol_version}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_agentproto_client_drives_the_sdk_server(
    sdk_server: tuple[str, Path], transport: str
) -> None:
    """``AcpClient.connect_url`` runs the scenario against the SDK's server over HTTP (its
    session streams, ``Acp-Session-Id`` on every session message and permission answer)
    or a WebSocket: the two views agree."""
    url, view = sdk_server
    ours = asyncio.run(_drive(url.replace("http", "ws", 1) if transport == "ws" else url))
    # the SDK's server writes its view every 100 ms: wait for the final one
    for _ in range(50):
        theirs = json.loads(view.read_text("utf-8")) if view.is_file() else {}
        if theirs.get("methods") == METHODS:
            break
        asyncio.run(asyncio.sleep(0.1))
    assert ours["protocol"] == 2
    assert theirs["errors"] == [] and ours["diagnostics"] == [] and ours["errors"] == []
    assert theirs["methods"] == METHODS
    assert theirs["cancelRequests"] == ours["cancelRequests"] == ["c3"]
    check_scenario_ran(ours["view"])
    assert ours["view"] == theirs["view"]
    assert ours["permissions"] == theirs["permissions"] == PERMISSIONS
    assert ours["stopReasons"] == theirs["stopReasons"] == STOP_REASONS
    assert ours["replayedState"] == ours["state"]


def test_the_sdk_server_gives_no_cursor(sdk_server: tuple[str, Path]) -> None:
    """What resuming against the SDK's server cannot rely on, recorded: 2.4.0 sends no SSE
    ``id:`` (so no ``Last-Event-ID`` can name a position) and advertises no
    ``transport.resumable``. agentproto's client then reopens a broken stream without a
    cursor and gets only what the server still queued (the RFD's fallback is
    ``session/resume``)."""
    url, _ = sdk_server
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": 2, "info": {"name": "p", "version": "1"}, "capabilities": {}},
    }
    with httpx.Client(timeout=10) as http:
        answer = http.post(url, json=initialize)
        assert answer.status_code == 200
        assert "transport" not in answer.json()["result"]["capabilities"]
        headers = {"acp-connection-id": answer.headers["acp-connection-id"]}
        new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp"}}
        assert http.post(url, json=new, headers=headers).status_code == 202
        stream = {**headers, "accept": "text/event-stream"}
        with http.stream("GET", url, headers=stream) as response:
            first = next(line for line in response.iter_lines() if line)
    assert first.startswith("data: ")  # no id: line before it

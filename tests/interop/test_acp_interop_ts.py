"""Interop with the real TypeScript peer: @agentclientprotocol/sdk 2.4.0, experimental/v2.

Both directions run over a real subprocess and its stdio, through the scenario of
``acp_peers/scenario.json`` (a turn with a plan, a permission, a diff and a
terminal; a turn cancelled while its permission request is pending; a
``session/close`` and a ``session/resume`` with replay). On ``session/cancel`` each
agent cancels its pending permission request with ``$/cancel_request`` and each client
answers it ``cancelled`` only then (the SDK supports both directions: a request's
``cancellationSignal``, a handler's ``signal``). Each side dumps its view
of the session (the shape of ``acp_peers/view.mjs``) and the two must agree.

The SDK is installed with npm into ``.interop/acp/`` (ignored by git) on first use.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import agentproto
from agentproto.acp import SessionState, parse_session_update
from tests.interop.acp_side import METHODS as SCENARIO_METHODS
from tests.interop.acp_side import PEERS, PERMISSIONS, STOP_REASONS, drive_agent
from tests.needs import need_node, npm_install

ROOT = Path(__file__).resolve().parents[2]
UNDER_TEST = str(Path(agentproto.__file__).resolve())  # the spawned agent must run this one
PREFIX = ROOT / ".interop" / "acp"
SDK = "@agentclientprotocol/sdk"
SDK_VERSION = "2.4.0"
WS_VERSION = "8.23.1"  # Node 20 has no WebSocket: the SDK's ws-client and server take this one
METHODS = [*SCENARIO_METHODS, "session/resume"]


def ensure_sdk() -> Path:
    """Install the TypeScript SDK into .interop/acp/ once; returns the peer scripts' folder."""
    need_node()
    pins = {SDK: SDK_VERSION, "ws": WS_VERSION}
    if any(_installed(name) != version for name, version in pins.items()):
        PREFIX.mkdir(parents=True, exist_ok=True)
        (PREFIX / "package.json").write_text('{"private": true, "type": "module"}\n')
        npm_install(PREFIX, [f"{name}@{version}" for name, version in pins.items()])
    folder = PREFIX / "acp_peers"  # the scripts resolve the SDK from .interop/acp
    folder.mkdir(exist_ok=True)
    for script in PEERS.iterdir():
        if script.suffix in (".mjs", ".json"):
            shutil.copyfile(script, folder / script.name)
    return folder


def _installed(package: str) -> str | None:
    found = PREFIX / "node_modules" / package / "package.json"
    return json.loads(found.read_text())["version"] if found.is_file() else None


def check_scenario_ran(view: dict[str, Any]) -> None:
    """The view holds what the scenario does, so that agreeing means something."""
    calls = view["toolCalls"]
    assert {ident: call["status"] for ident, call in calls.items()} == {
        "c1": "completed",
        "c2": "completed",
        "c3": "cancelled",
    }
    assert calls["c1"]["content"] == [{"type": "diff", "paths": [calls["c1"]["locations"][0]]}]
    assert calls["c2"]["content"] == [{"type": "terminal", "terminalId": "t1"}]
    terminal = {"command": "pytest -q", "output": "2 passed ✓\n", "exitCode": 0}
    assert view["terminals"]["t1"] == terminal
    assert [entry["status"] for entry in view["plans"]["main"]] == ["completed", "completed"]
    texts = [message["text"] for message in view["messages"]]
    assert texts == ["go", "Edited main.py; the tests pass.", "cancel me"]
    assert view["state"] == {"state": "idle", "stopReason": "cancelled"}
    assert view["unhandled"] == []


async def test_agentproto_client_drives_typescript_agent(tmp_path: Path) -> None:
    """agentproto's client and the TS SDK's v2 agent end with the same view of the session."""
    folder = ensure_sdk()
    agent_view = tmp_path / "agent.json"
    ours, protocol = await drive_agent(["node", str(folder / "ts_agent.mjs"), str(agent_view)])
    theirs = json.loads(agent_view.read_text("utf-8"))

    assert protocol == 2
    assert theirs["errors"] == [] and ours["diagnostics"] == [] and ours["errors"] == []
    assert theirs["methods"] == METHODS
    # session/cancel: the TS agent cancels its pending permission request with
    # $/cancel_request, and agentproto's client answers that request `cancelled`
    assert theirs["cancelRequests"] == ours["cancelRequests"] == ["c3"]
    check_scenario_ran(ours["view"])
    assert ours["view"] == theirs["view"]
    assert ours["permissions"] == theirs["permissions"] == PERMISSIONS
    assert ours["stopReasons"] == theirs["stopReasons"] == STOP_REASONS
    # the replay rebuilds the state by the rules of live delivery; only the order of first
    # sight differs (the state snapshot comes after the replay), which to_json's dict ignores
    assert ours["replayedState"] == ours["state"]


def test_typescript_client_drives_agentproto_agent(tmp_path: Path) -> None:
    """The TS SDK's v2 client and agentproto's agent end with the same view of the session."""
    folder = ensure_sdk()
    agent_view = tmp_path / "agent.json"
    agent = [sys.executable, "-m", "tests.interop.acp_side", str(agent_view)]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    result = subprocess.run(
        ["node", str(folder / "ts_client.mjs"), "--", *agent],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": path, "NODE_NO_WARNINGS": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    theirs = json.loads(result.stdout)
    ours = json.loads(agent_view.read_text("utf-8"))

    assert theirs["error"] is None and theirs["agentExit"] == 0
    assert ours["agentproto"] == UNDER_TEST
    assert ours["errors"] == [] and ours["diagnostics"] == []
    assert ours["methods"] == METHODS
    assert theirs["initialize"]["protocolVersion"] == 2
    # session/cancel: agentproto's agent cancels its pending permission request with
    # $/cancel_request (the TS client waits for it before answering `cancelled`)
    assert theirs["cancelRequests"] == ["c3"]
    check_scenario_ran(theirs["view"])
    assert theirs["view"] == ours["view"]
    assert theirs["replayed"] == theirs["view"]
    assert theirs["permissions"] == ours["permissions"] == PERMISSIONS
    assert theirs["stopReasons"] == ours["stopReasons"] == STOP_REASONS
    # what the TS client received, as its SDK handed it over, folds into agentproto's state
    received = SessionState()
    received.replay(parse_session_update(update) for update in theirs["updates"])
    assert received.to_json() == ours["state"]

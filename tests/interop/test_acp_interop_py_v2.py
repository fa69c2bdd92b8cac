"""Interop with the official Python SDK's v2 pre-release: agent-client-protocol 1.0.0rc3,
``acp.experimental.v2``, in both directions, over a real subprocess and its stdio.

The pre-release shares its distribution name with the v1 release the other tests use
(0.12.1), so it lives in an environment of its own, ``.interop/rc3/`` (ignored by git),
made with ``pip install --pre`` on first use; its peer scripts (``acp_peers/rc3_*.py``)
run with that environment's Python. Both play ``acp_peers/scenario.json``, as the
TypeScript peers do: a turn with a plan, a permission, a diff and a terminal; a turn
cancelled while its permission request is pending; ``session/close``; ``session/resume``
with replay. What each side sent or received is folded by agentproto's
``SessionState`` and must equal the other side's state.

One difference, by a rule: on ``session/cancel`` agentproto's agent withdraws its pending
permission request with ``$/cancel_request`` and the SDK's client sees it (its handler is
cancelled), but the SDK's agent has no way to withdraw its own request, so agentproto's
client answers it ``cancelled`` after waiting for the withdrawal (sending one is a MAY:
the kit's ACP-INFO-CANCEL-202 only records it).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path
from typing import Any

import pytest

import agentproto
from agentproto.acp import SessionState, parse_session_update
from tests.agui.live_server import serve
from tests.interop.acp_side import METHODS as SCENARIO_METHODS
from tests.interop.acp_side import (
    PEERS,
    PERMISSIONS,
    STOP_REASONS,
    ServedAgents,
    drive_agent,
)
from tests.interop.test_acp_interop_ts import check_scenario_ran
from tests.needs import PEERS as PEER_PACKAGES
from tests.needs import missing

ROOT = Path(__file__).resolve().parents[2]
UNDER_TEST = str(Path(agentproto.__file__).resolve())  # the spawned agent must run this one
ENVIRONMENT = ROOT / ".interop" / "rc3"
SDK = "agent-client-protocol[http]==1.0.0rc3"
SERVER = "uvicorn==0.38.0"  # serves the SDK's ASGI app (rc3_agent.py --listen)
METHODS = [*SCENARIO_METHODS, "session/resume"]
NO_WITHDRAWAL = "c3: no $/cancel_request within 10 s after session/cancel"


def _python() -> str:
    """The pre-release's environment (made once); its Python."""
    python = ENVIRONMENT / "bin" / "python"
    probe = [str(python), "-c", "import acp.experimental.v2, acp.http.asgi, acp.ws, uvicorn"]
    if python.is_file() and subprocess.run(probe, capture_output=True).returncode == 0:
        return str(python)
    venv.EnvBuilder(with_pip=True, clear=True).create(ENVIRONMENT)
    install = [str(python), "-m", "pip", "install", "--quiet", "--pre", SDK, SERVER]
    done = subprocess.run(install, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no output"]
        missing(PEER_PACKAGES, f"pip install --pre {SDK} failed: {lines[-1]}", SDK)
    return str(python)


def _fold(updates: list[dict[str, Any]]) -> Any:
    state = SessionState()
    state.replay(parse_session_update(update) for update in updates)
    return state.to_json()


@pytest.fixture(scope="module")
def python() -> str:
    return _python()


async def test_agentproto_client_drives_the_sdk_v2_agent(python: str, tmp_path: Path) -> None:
    """agentproto's client and the SDK's v2 agent end with the same session: what the agent
    sent folds into the client's state; permissions and stop reasons agree."""
    record = tmp_path / "agent.json"
    ours, protocol = await drive_agent([python, str(PEERS / "rc3_agent.py"), str(record)])
    theirs = json.loads(record.read_text("utf-8"))

    assert protocol == 2
    assert theirs["errors"] == [] and ours["diagnostics"] == []
    assert ours["errors"] == [NO_WITHDRAWAL]  # the SDK's agent cannot withdraw (see above)
    assert theirs["methods"] == METHODS
    check_scenario_ran(ours["view"])
    assert _fold(theirs["sent"]) == ours["state"]
    assert ours["permissions"] == theirs["permissions"] == PERMISSIONS
    assert ours["stopReasons"] == theirs["stopReasons"] == STOP_REASONS
    assert ours["replayedState"] == ours["state"]


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_agentproto_client_drives_the_sdk_v2_remote_server(
    python: str, tmp_path: Path, transport: str
) -> None:
    """``AcpClient.connect_url`` against the SDK's own remote server (``acp.http.asgi``
    with its protocol router, under uvicorn): the same session as over stdio."""
    record = tmp_path / "agent.json"
    command = [python, str(PEERS / "rc3_agent.py"), str(record), "--listen"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("LISTENING "), line
        url = f"http://127.0.0.1:{line.split()[1]}/acp"
        ours, protocol = asyncio.run(
            drive_agent(url.replace("http", "ws", 1) if transport == "ws" else url)
        )
        time.sleep(0.3)  # the agent writes its record every 100 ms
    finally:
        process.terminate()
        process.wait(10)
    theirs = json.loads(record.read_text("utf-8"))
    assert protocol == 2
    assert theirs["errors"] == [] and ours["diagnostics"] == []
    assert ours["errors"] == [NO_WITHDRAWAL]  # the SDK's agent cannot withdraw (see above)
    assert theirs["methods"] == METHODS
    check_scenario_ran(ours["view"])
    assert _fold(theirs["sent"]) == ours["state"]
    assert ours["permissions"] == theirs["permissions"] == PERMISSIONS
    assert ours["stopReasons"] == theirs["stopReasons"] == STOP_REASONS
    assert ours["replayedState"] == ours["state"]


@pytest.mark.parametrize("transport", ["stdio", "http", "ws"])
def test_the_sdk_v2_client_drives_agentproto_agent(
    python: str, tmp_path: Path, transport: str
) -> None:
    """The SDK's v2 client and agentproto's agent end with the same session, live and after
    the replay; the agent's ``$/cancel_request`` reaches the SDK's handler. Over stdio, and
    over the SDK's remote clients (``acp.http``, ``acp.ws``) against ``acp_app``.

    One difference, the SDK's: its HTTP client does not cancel the permission handler on
    the agent's ``$/cancel_request`` (its stdio and WebSocket clients do; the TypeScript
    SDK's HTTP client does against the same server), so its handler is still waiting when
    the scenario ends, and it records no answer for ``c3``; the agent, by the v2 rules,
    counts the request cancelled with the turn."""
    record = tmp_path / "agent.json"
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    run = functools.partial(
        subprocess.run,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": path},
    )
    client = [python, str(PEERS / "rc3_client.py")]
    if transport == "stdio":
        agent = [sys.executable, "-m", "tests.interop.acp_side", str(record)]
        result = run([*client, "--", *agent])
        ours = json.loads(record.read_text("utf-8"))
    else:
        agents = ServedAgents()
        with serve(agents.app()) as url:
            result = run([*client, "--url", url + "/acp", "--transport", transport])
        ours = agents.last_report()
    assert result.returncode == 0, result.stdout + result.stderr
    theirs = json.loads(result.stdout)

    assert theirs["error"] is None
    assert theirs["agentExit"] == (0 if transport == "stdio" else None)
    assert ours["agentproto"] == UNDER_TEST
    assert ours["errors"] == [] and ours["diagnostics"] == []
    assert ours["methods"] == METHODS
    assert theirs["initialize"]["protocolVersion"] == 2
    assert ours["permissions"] == PERMISSIONS
    if transport == "http":  # the SDK's HTTP client: see above
        assert theirs["cancelRequests"] == []
        assert theirs["permissions"] == PERMISSIONS[:1]
    else:
        assert theirs["cancelRequests"] == ["c3"]
        assert theirs["permissions"] == PERMISSIONS
    assert theirs["stopReasons"] == ours["stopReasons"] == STOP_REASONS
    assert _fold(theirs["updates"]) == ours["state"]
    assert _fold(theirs["replayed"]) == ours["state"]

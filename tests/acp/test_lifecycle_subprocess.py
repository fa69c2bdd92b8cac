"""The scripted example agent over a real subprocess and stdio, driven by AcpClient and by
``agentproto acp run``; the CLI's ``serve-example`` is the agent."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import orjson
from acp_client import Approver, drive

from agentproto.acp import AcpClient, ConnectionClosedError

ROOT = Path(__file__).parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'sdk'}{os.pathsep}{ROOT}"}
AGENT = [sys.executable, "-m", "agentproto", "acp", "serve-example"]


async def test_the_example_agent_over_a_subprocess() -> None:
    """A whole turn over stdio: message, tool call approved after a permission request, a
    diff, a plan; then a slow turn cancelled ends 'cancelled'."""
    stop, session = await drive(AGENT, cwd="/w")
    assert stop == "end_turn"
    (call,) = session.state.tool_calls.values()
    assert call.status == "completed" and call.content[0].type == "diff"  # type: ignore[union-attr]
    assert session.state.plans["main"].plan.entries[0].status == "completed"  # type: ignore[union-attr]
    client = await AcpClient.spawn(AGENT, Approver(), env=ENV, request_timeout=30)
    async with client:
        await client.initialize()
        slow = await client.new_session("/w")
        turn = asyncio.create_task(client.prompt(slow.session_id, "slow"))
        while not any(c.status == "in_progress" for c in slow.state.tool_calls.values()):
            await asyncio.sleep(0.02)
        await client.cancel(slow.session_id)
        assert await asyncio.wait_for(turn, 10) == "cancelled"
    assert client.connection.closed
    try:
        await client.prompt(slow.session_id, "again")
    except ConnectionClosedError as closed:
        assert not closed.by_peer  # the client closed it, the agent did not go away
    else:  # pragma: no cover
        raise AssertionError("a closed client must not prompt")


def test_acp_run_prints_the_final_state() -> None:
    """``agentproto acp run --json -- CMD`` prints the stop reason and the session's
    entities; no command is a usage error, an agent that exits a protocol failure."""
    base = [sys.executable, "-m", "agentproto", "acp", "run"]
    done = subprocess.run(
        [*base, "--json", "--", *AGENT], env=ENV, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result = orjson.loads(done.stdout)
    assert result["stopReason"] == "end_turn"
    calls = [v for k, v in result["session"]["entities"].items() if k.startswith("tool_call:")]
    assert [c["status"] for c in calls] == ["completed"]
    usage = subprocess.run(base, env=ENV, capture_output=True, timeout=60, check=False)
    assert usage.returncode == 2
    dead = subprocess.run(
        [*base, "--", sys.executable, "-c", "pass"],
        env=ENV,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert dead.returncode == 1 and b"closed by the peer" in dead.stderr


async def test_spawn_can_insist_on_protocol_version_1() -> None:
    """``AcpClient.spawn(versions=(1,))`` negotiates v1 with the example agent, and the app
    still sees v2: the turn completes and the session state holds the approved tool call."""
    client = await AcpClient.spawn(AGENT, Approver(), versions=(1,), env=ENV, request_timeout=30)
    async with client:
        answer = await client.initialize()
        assert answer.protocol_version == 1
        assert client.connection.protocol == 1
        session = await client.new_session("/w")
        assert await client.prompt(session.session_id, "hello") == "end_turn"
        assert [c.status for c in session.state.tool_calls.values()] == ["completed"]

"""Interop of the HTTP agent client with a real peer: a Node.js server built on the
published @ag-ui/encoder and @ag-ui/core 1.0.0 packages.

The server checks each request with @ag-ui/core's ``RunAgentInputSchema`` and answers
with events encoded by @ag-ui/encoder's ``EventEncoder`` (SSE, whatever JSON Lines
preference the request shows: the encoder knows SSE and protobuf only). It reports
each request and the events it sent; ``HttpAgent`` must have sent inputs the peer
accepts, yielded exactly the events the peer encoded, and kept the thread across runs.

The packages are installed with npm into ``.interop/encoder/`` (ignored by git) on
first use.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from agentproto import ProtocolError
from agentproto.agui import HttpAgent, dump_event
from tests.needs import need_node, npm_install

ROOT = Path(__file__).resolve().parents[2]
PREFIX = ROOT / ".interop" / "encoder"
PACKAGES = {"@ag-ui/encoder": "1.0.0", "@ag-ui/core": "1.0.0"}
SCRIPT = Path(__file__).with_name("agui_encoder_server.mjs")


def _ensure_packages() -> Path:
    """Install the pinned packages into .interop/encoder/ once; returns that folder."""
    need_node()

    def installed(name: str) -> str | None:
        package = PREFIX / "node_modules" / name / "package.json"
        return json.loads(package.read_text())["version"] if package.is_file() else None

    if any(installed(name) != version for name, version in PACKAGES.items()):
        PREFIX.mkdir(parents=True, exist_ok=True)
        (PREFIX / "package.json").write_text('{"private": true, "type": "module"}\n')
        npm_install(PREFIX, [f"{name}@{version}" for name, version in PACKAGES.items()])
    shutil.copyfile(SCRIPT, PREFIX / SCRIPT.name)  # resolves the packages from PREFIX
    return PREFIX


@contextmanager
def node_agent() -> Iterator[tuple[str, IO[str]]]:
    """Run the Node server; yields its base URL and its report stream (one line each)."""
    folder = _ensure_packages()
    process = subprocess.Popen(
        ["node", str(folder / SCRIPT.name)],
        cwd=folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NODE_NO_WARNINGS": "1"},
    )
    assert process.stdout is not None and process.stdin is not None
    try:
        port = json.loads(process.stdout.readline())["port"]
        yield f"http://127.0.0.1:{port}", process.stdout
    finally:
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def report(lines: IO[str]) -> dict[str, Any]:
    line = lines.readline()
    assert line, "the Node server stopped without reporting"
    found: dict[str, Any] = json.loads(line)
    return found


def test_runs_of_one_thread_against_the_published_encoder() -> None:
    """Two runs on one thread: the peer accepts both inputs, the client yields the
    events the peer encoded, the second input carries the first run's messages and
    state, and a JSON Lines preference gets SSE back, read as such."""
    with node_agent() as (base, lines), HttpAgent(base + "/agent") as agent:
        first = [dump_event(e) for e in agent.run("hello")]
        one = report(lines)
        agent_jsonl = HttpAgent(
            base + "/agent",
            thread_id=agent.thread_id,
            conversation=agent.conversation,
            transport="jsonl",
        )
        with agent_jsonl:
            second = [dump_event(e) for e in agent_jsonl.run("again")]
        two = report(lines)
    assert "refused" not in one and "refused" not in two
    assert first == one["sent"] and second == two["sent"]
    assert one["accept"] == "text/event-stream"
    assert two["accept"].startswith("application/jsonl")
    assert two["input"]["threadId"] == one["input"]["threadId"] == agent.thread_id
    assert [m["role"] for m in two["input"]["messages"]] == ["user", "assistant", "user"]
    assert two["input"]["state"] == {"turns": 1, "received": 1}
    final = agent_jsonl.conversation
    assert [(m.role, m.content) for m in final.messages] == [
        ("user", "hello"),
        ("assistant", "You said: hello"),
        ("user", "again"),
        ("assistant", "You said: again"),
    ]
    assert final.state == {"turns": 2, "received": 3}
    assert agent.diagnostics == [] and agent_jsonl.diagnostics == []
    assert agent_jsonl.runs[-1].succeeded


def test_a_peer_that_drops_the_connection_mid_run() -> None:
    """The peer destroying the socket mid-run: stream.truncated, the thread unchanged."""
    with node_agent() as (base, lines), HttpAgent(base + "/cut") as agent:
        got = []
        with pytest.raises(ProtocolError) as caught:
            for event in agent.run("hello"):
                got.append(dump_event(event))
        sent = report(lines)["sent"]
    assert caught.value.code == "stream.truncated"
    assert got == sent
    assert agent.conversation.messages == ()
    assert agent.runs[-1].status == "failed"

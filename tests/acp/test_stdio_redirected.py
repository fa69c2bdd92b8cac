"""``run_agent`` with its stdio redirected: stdout to a regular file (``agent > out.ndjson``),
stdin from one (``agent < in.ndjson``), and the usual pipes; a real subprocess each time
(the example agent of ``examples/acp_hello_agent.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'sdk'}{os.pathsep}{ROOT}"}
AGENT = [sys.executable, str(ROOT / "examples" / "acp_hello_agent.py")]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 2, "info": {"name": "test", "version": "0"}},
}
NEW_SESSION = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w"}}


def line(message: dict[str, Any]) -> bytes:
    return orjson.dumps(message) + b"\n"


def answers(data: bytes) -> dict[int, dict[str, Any]]:
    """The responses among NDJSON lines, by id."""
    messages = [orjson.loads(text) for text in data.splitlines() if text.strip()]
    return {m["id"]: m for m in messages if "id" in m and "method" not in m}


def wait_for_answers(path: Path, count: int, process: subprocess.Popen[bytes]) -> None:
    """Wait (up to 30 s) until the file holds ``count`` responses."""
    deadline = time.monotonic() + 30
    while len(answers(path.read_bytes())) < count:
        assert process.poll() is None, process.stderr.read() if process.stderr else b""
        assert time.monotonic() < deadline, path.read_bytes()
        time.sleep(0.05)


def check(found: dict[int, dict[str, Any]]) -> None:
    assert found[1]["result"]["protocolVersion"] == 2
    assert found[1]["result"]["capabilities"]["session"] is not None  # it serves sessions
    assert found[2]["result"]["sessionId"]


def test_stdout_redirected_to_a_file(tmp_path: Path) -> None:
    """``agent > out.ndjson``: the answers land in the file, whole lines; the agent exits
    cleanly when its stdin ends."""
    out = tmp_path / "out.ndjson"
    with out.open("wb") as stdout:
        process = subprocess.Popen(
            AGENT, stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.PIPE, env=ENV
        )
    assert process.stdin is not None
    try:
        process.stdin.write(line(INITIALIZE))
        process.stdin.flush()
        wait_for_answers(out, 1, process)
        process.stdin.write(line(NEW_SESSION))
        process.stdin.flush()
        wait_for_answers(out, 2, process)
        process.stdin.close()
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:  # pragma: no cover (only when the test failed)
            process.kill()
            process.wait()
    check(answers(out.read_bytes()))
    assert process.stderr is not None and b"Traceback" not in process.stderr.read()


def test_stdin_and_stdout_both_files(tmp_path: Path) -> None:
    """``agent < in.ndjson > out.ndjson`` starts, reads the file and exits cleanly at its
    end (the end of stdin closes the connection, so what is still being answered then
    is dropped, as for a client that goes away: no crash, nothing malformed)."""
    requests, out = tmp_path / "in.ndjson", tmp_path / "out.ndjson"
    requests.write_bytes(line(INITIALIZE))
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        done = subprocess.run(
            AGENT, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, env=ENV, timeout=60
        )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    for found in answers(out.read_bytes()).values():
        assert found["result"]["protocolVersion"] == 2


def test_stdio_pipes() -> None:
    """Pipes both ways (the usual case) keep working."""
    process = subprocess.Popen(
        AGENT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(line(INITIALIZE))
        process.stdin.flush()
        first = process.stdout.readline()
        process.stdin.write(line(NEW_SESSION))
        process.stdin.flush()
        second = process.stdout.readline()
        process.stdin.close()
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:  # pragma: no cover (only when the test failed)
            process.kill()
            process.wait()
    check(answers(first + second))

"""``run_agent`` with its stdio redirected: stdout to a regular file (``agent > out.ndjson``),
stdin from one (``agent < in.ndjson``), a one-shot pipe (``printf ... | agent``), and the
usual pipes; a real subprocess each time (the example agent of
``examples/acp_hello_agent.py``)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

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


@contextlib.contextmanager
def agent(stdout: IO[bytes] | int) -> Iterator[subprocess.Popen[bytes]]:
    """The example agent, its stdin a pipe and its stdout ``stdout``.

    On exit its stdin is closed, and it must then exit 0 without a traceback (it is
    killed if the test failed).
    """
    process = subprocess.Popen(
        AGENT, stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.PIPE, env=ENV
    )
    assert process.stdin is not None and process.stderr is not None
    try:
        yield process
        process.stdin.close()
        assert process.wait(30) == 0
        assert b"Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:  # pragma: no cover (only when the test failed)
            process.kill()
            process.wait()


def send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None and process.poll() is None
    process.stdin.write(line(message))
    process.stdin.flush()


def test_stdout_redirected_to_a_file(tmp_path: Path) -> None:
    """``agent > out.ndjson``: the answers land in the file, whole lines; the agent exits
    cleanly when its stdin ends."""
    out = tmp_path / "out.ndjson"
    with out.open("wb") as stdout, agent(stdout) as process:
        send(process, INITIALIZE)
        wait_for_answers(out, 1, process)
        send(process, NEW_SESSION)
        wait_for_answers(out, 2, process)
    check(answers(out.read_bytes()))


def test_stdin_and_stdout_both_files(tmp_path: Path) -> None:
    """``agent < in.ndjson > out.ndjson`` reads the file, answers every request in it (the
    end of stdin leaves the requests already read time to be answered) and exits cleanly."""
    requests, out = tmp_path / "in.ndjson", tmp_path / "out.ndjson"
    requests.write_bytes(line(INITIALIZE) + line(NEW_SESSION))
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        done = subprocess.run(
            AGENT, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, env=ENV, timeout=60
        )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    check(answers(out.read_bytes()))


def test_a_piped_client_that_closes_its_end_gets_its_answers() -> None:
    """``printf '<requests>' | agent``: the requests written before stdin closed are all
    answered (the last one even without its newline), then the agent exits."""
    done = subprocess.run(
        AGENT,
        input=line(INITIALIZE) + line(NEW_SESSION)[:-1],
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    check(answers(done.stdout))


def test_stdio_pipes() -> None:
    """Pipes both ways (the usual case) keep working."""
    with agent(subprocess.PIPE) as process:
        assert process.stdout is not None
        send(process, INITIALIZE)
        first = process.stdout.readline()
        send(process, NEW_SESSION)
        second = process.stdout.readline()
    check(answers(first + second))

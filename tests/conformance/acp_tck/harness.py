"""An ACP agent as a real subprocess on stdio, driven line by line by a mock client.

:class:`AgentProcess` starts the agent, writes raw NDJSON lines to its stdin and reads
its stdout lines on a thread, so every wait has a timeout and nothing hangs: a wait
that runs out returns what arrived (or raises :class:`NoAnswer`). Every line both ways
is kept in :attr:`AgentProcess.transcript`, bytes as sent or received, and every
message the agent sent (batch arrays flattened) in :attr:`AgentProcess.received`.

While it waits, the harness answers the agent's requests as a client would
(:class:`MockClient`): ``session/request_permission`` selects the first option,
``elicitation/create`` declines, anything else is ``-32601``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

TIMEOUT = 5.0
"""How long a request waits for its response (seconds)."""
QUIET = 0.3
"""How long "nothing more arrives" is watched for (seconds)."""

Message = dict[str, Any]


class NoAnswer(AssertionError):
    """The agent did not answer in time (or its stdout closed)."""


@dataclass
class Line:
    """One line of the transcript."""

    outgoing: bool
    """True: the harness wrote it; False: the agent did."""
    raw: bytes
    """Without its newline."""
    at: float
    value: Any = None
    """The parsed JSON (``None`` when it is not JSON)."""
    error: str | None = None
    """Why it did not parse (bad UTF-8 or JSON), for agent lines."""


@dataclass
class MockClient:
    """Answers the agent's requests; ``permission_outcome`` overrides the answer."""

    permission_outcome: Message | None = None
    hold_permissions: bool = False
    """Leave ``session/request_permission`` unanswered (to keep a turn's work in flight)."""
    requests: list[Message] = field(default_factory=list)
    held: list[Message] = field(default_factory=list)

    def answer(self, message: Message) -> Message | None:
        """The response to one agent request (``None``: held back)."""
        self.requests.append(message)
        method, params = message.get("method"), message.get("params") or {}
        reply: Message = {"jsonrpc": "2.0", "id": message.get("id")}
        if method == "session/request_permission" and self.hold_permissions:
            self.held.append(message)
            return None
        if method == "session/request_permission":
            options = params.get("options") or [{}]
            outcome = self.permission_outcome or {
                "outcome": "selected",
                "optionId": options[0].get("optionId"),
            }
            reply["result"] = {"outcome": outcome}
        elif method == "elicitation/create":
            reply["result"] = {"action": "decline"}
        else:
            reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
        return reply


def is_response(message: Any) -> bool:
    """A JSON-RPC response (no ``method``)."""
    return isinstance(message, dict) and "method" not in message and "id" in message


def is_request(message: Any) -> bool:
    """A JSON-RPC request (``method`` and ``id``)."""
    return isinstance(message, dict) and "method" in message and "id" in message


def messages_of(value: Any) -> list[Any]:
    """The messages a line holds (a batch array's members, else the one value)."""
    return list(value) if isinstance(value, list) else [value]


class AgentProcess:
    """One agent subprocess and its transcript."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        client: MockClient | None = None,
    ) -> None:
        self.argv = list(argv)
        self.client = client or MockClient()
        self.transcript: list[Line] = []
        self.received: list[Any] = []
        """Every message the agent sent, in order (batch members flattened)."""
        self.stderr = bytearray()
        self._lines: queue.Queue[Line | None] = queue.Queue()
        self._next_id = 0
        self.methods: dict[str, str] = {}
        """The method of every request the harness sent, by ``json.dumps(id)``."""
        self.sent_ids: set[str] = set()
        """``json.dumps`` of every id the harness sent in something that is no response
        (requests, and invalid messages carrying an id)."""
        self.version: int | None = None
        """The protocol version ``initialize`` negotiated (set by the probe)."""
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # ---- reading --------------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            line = Line(False, raw.rstrip(b"\n"), time.monotonic())
            try:
                line.value = json.loads(line.raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                line.error = f"not UTF-8: {error}"
            except ValueError as error:
                line.error = f"not JSON: {error}"
            self.transcript.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        for chunk in iter(lambda: os.read(stream.fileno(), 4096), b""):
            self.stderr.extend(chunk)

    def pump(self, until: Callable[[Any], bool] | None = None, timeout: float = QUIET) -> list[Any]:
        """Read the agent's messages for up to ``timeout`` seconds, or until one satisfies
        ``until``; answer its requests on the way. Returns the messages read."""
        got: list[Any] = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                self._lines.put(None)  # stays closed for the next reader
                break
            for message in messages_of(line.value) if line.error is None else [None]:
                self.received.append(message)
                got.append(message)
                if isinstance(message, dict) and is_request(message) and self.proc.poll() is None:
                    reply = self.client.answer(message)
                    if reply is not None:
                        self.send(reply)
            if until is not None and any(until(message) for message in got):
                break
        return got

    # ---- writing --------------------------------------------------------------------

    def send_raw(self, data: bytes | str) -> None:
        """Write one line as is (a newline is added)."""
        raw = data.encode() if isinstance(data, str) else data
        line = Line(True, raw, time.monotonic())
        try:
            line.value = json.loads(raw)
        except ValueError:
            line.error = "not JSON"
        for message in messages_of(line.value) if line.error is None else []:
            if isinstance(message, dict) and ("result" in message or "error" in message):
                continue  # the harness's own responses
            if isinstance(message, dict) and "id" in message:
                self.sent_ids.add(json.dumps(message["id"]))
        self.transcript.append(line)
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(raw + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError) as error:
            raise NoAnswer(f"the agent's stdin is closed: {error}") from None

    def send(self, value: Any) -> None:
        """Write one JSON value as one line."""
        for message in messages_of(value):
            if is_request(message):
                self.methods[json.dumps(message["id"])] = message["method"]
        self.send_raw(json.dumps(value, separators=(",", ":")))

    def answered_method(self, response: Any) -> str | None:
        """The method of the request ``response`` answers (``None``: none the harness sent)."""
        if not is_response(response):
            return None
        return self.methods.get(json.dumps(response.get("id")))

    def agent_lines(self, since: int = 0) -> list[Line]:
        """The agent's lines from transcript index ``since`` on."""
        return [line for line in self.transcript[since:] if not line.outgoing]

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def call(
        self, method: str, params: Any = None, *, timeout: float = TIMEOUT
    ) -> tuple[Message, list[Any]]:
        """Send a request; return its response and everything else read meanwhile."""
        ident = self.new_id()
        message: Message = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        got = self.pump(lambda m: is_response(m) and m.get("id") == ident, timeout)
        for item in got:
            if is_response(item) and item.get("id") == ident:
                return item, got
        raise NoAnswer(f"no response to {method} (id {ident}) within {timeout}s")

    def request(self, method: str, params: Any = None, *, timeout: float = TIMEOUT) -> Message:
        """Send a request; return its response."""
        return self.call(method, params, timeout=timeout)[0]

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    # ---- ending ---------------------------------------------------------------------

    def close_stdin(self, timeout: float = 3.0) -> int | None:
        """Close stdin and wait for the exit; its code, or ``None`` if it had to be killed."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """End the process (it is the harness's own child)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *_: object) -> None:
        self.close_stdin(1.0)

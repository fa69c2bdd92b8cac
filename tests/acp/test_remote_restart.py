"""ACP over HTTP and WebSocket across an agent-server restart (issue 27, the fault matrix's
last row): the server (``tests/acp/durable_app.py`` under uvicorn, one SQLite file for the
streams and the agent's sessions) kills itself at each point of a turn and a new process
starts on the same file and port.

The client's connection died with the process (the RFD's "the agent broke" case): its
resume is refused, so it makes a new connection by itself, rebuilds its session with
``session/resume`` and a replay, and goes on. Each run then checks, against what the
agent itself recorded (not against the client's own figures). The agent is the one of
``docs/guides/acp-agents.md``, "Sessions that outlive the process", run as written:

* the client's session is the agent's: nothing the dead process had sent is lost, nothing
  is applied twice;
* the turn the restart cut fails for its caller (an error, never a hang), and only once
  the session is rebuilt: the next prompt on the same session just works;
* a permission request the dead process was waiting on is withdrawn from the client's
  handler, which never answers it (no request answered twice);
* a turn that had ended before the restart leaves the same session as a run with no
  restart at all.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentproto._core.json.codec import loads
from agentproto.acp import (
    AcpClient,
    ClientHandlers,
    ClientSession,
    ConnectionClosedError,
    RpcError,
    SessionState,
    parse_session_update,
)
from agentproto.acp import schema as acp
from agentproto.stores import SQLiteThreadStore
from tests.acp import durable_app
from tests.agui.faults import free_port, worker_app
from tests.interop.acp_side import view_of

ROOT = Path(__file__).resolve().parents[2]
# the turn's updates, in the order the agent sends them (counted over the process)
KINDS = {
    "update:1": "state running",
    "update:2": "user message",
    "update:3": "plan",
    "update:4": "tool call",
    "update:5": "state requires_action",
    "asked": "permission request pending",
    "update:6": "state running (answered)",
    "update:7": "diff",
    "update:8": "tool call completed",
    "update:9": "message chunk",
    "update:11": "state idle (the turn ended)",
}


class _Handlers(ClientHandlers):
    """Allows, the first time after ``wait`` seconds (a user slow to answer, for an agent
    to die on); keeps what each request came to."""

    def __init__(self, wait: float) -> None:
        self.outcomes: list[str] = []
        self.wait = wait

    async def on_permission(
        self, session: ClientSession, request: acp.RequestPermissionRequest
    ) -> str | None:
        wait, self.wait = self.wait, 0.0
        try:
            await asyncio.sleep(wait)
        except asyncio.CancelledError:
            self.outcomes.append("withdrawn")
            raise
        self.outcomes.append("allow")
        return "allow"


@contextmanager
def _server(store: Path, die: str | None) -> Iterator[str]:
    """The durable app on a free port, dying as ``die`` says; when that process ends,
    another starts on the same store and port (no dying). Yields the endpoint."""
    port = free_port()
    env = {"ACP_STORE": str(store)}
    app_dir = ROOT / "tests" / "acp"
    with ExitStack() as stack:
        first = stack.enter_context(
            worker_app(port, "durable_app:app", app_dir, **env, ACP_DIE=die or "")
        )
        stopping = threading.Event()

        def restart() -> None:
            while first.poll() is None:
                if stopping.wait(0.02):
                    return
            stack.enter_context(worker_app(port, "durable_app:app", app_dir, **env))

        watcher = threading.Thread(target=restart, daemon=True)
        watcher.start()
        try:
            yield f"http://127.0.0.1:{port}/acp"
        finally:
            stopping.set()
            watcher.join(30)


async def _run(url: str, handlers: _Handlers) -> dict[str, Any]:
    """A session, a turn (``go``), another turn (``again``) on it; what the client saw."""
    client = AcpClient.connect_url(url, handlers, request_timeout=30, keepalive=0.5)
    async with client:
        await client.initialize(timeout=30)
        session = (await client.new_session("/work")).session_id
        try:
            first: Any = await client.prompt(session, "go", timeout=60)
        except (RpcError, ConnectionClosedError) as error:
            first = error
        second = await client.prompt(session, "again", timeout=60)
        return {
            "session": session,
            "first": first,
            "second": second,
            "view": view_of(client.sessions[session].state),
            "diagnostics": [d.code for d in client.diagnostics],
        }


def _recorded(store: Path, session: str) -> dict[str, Any]:
    """The view of the session as the agent recorded it (every update it sent)."""

    async def read() -> list[bytes]:
        threads = SQLiteThreadStore(store)
        try:
            return await threads.records(session)
        finally:
            await threads.aclose()

    state = SessionState(session)
    state.replay(parse_session_update(loads(record)) for record in asyncio.run(read()))
    return view_of(state)


def _without_ids(view: dict[str, Any]) -> dict[str, Any]:
    """``view`` without the message ids the agent draws at random (user messages)."""
    return {**view, "messages": [{**m, "id": None} for m in view["messages"]]}


def _session(store: Path, die: str | None, websocket: bool) -> tuple[dict[str, Any], _Handlers]:
    handlers = _Handlers(30.0 if die == "asked" else 0.0)
    with _server(store, die) as url:
        url = "ws" + url.removeprefix("http") if websocket else url
        ours = asyncio.run(asyncio.wait_for(_run(url, handlers), 120))
    return ours, handlers


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same two turns with no restart: the client's view."""
    ours, handlers = _session(tmp_path_factory.mktemp("plain") / "acp.db", None, False)
    assert ours["first"] == ours["second"] == "end_turn"
    assert ours["diagnostics"] == [] and handlers.outcomes == ["allow", "allow"]
    return ours["view"]


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
@pytest.mark.parametrize("die", list(KINDS), ids=list(KINDS.values()))
def test_a_restart_at_any_point_of_a_turn_leaves_the_agents_session(
    die: str, websocket: bool, tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    """The agent's server dies (SIGKILL) right after sending one update of the turn (or
    while its permission request waits) and is started again: the client makes a new
    connection, rebuilds the session by replay, its turn fails once rebuilt, and the
    next turn runs; the client ends holding exactly what the agent recorded."""
    store = tmp_path / "acp.db"
    ours, handlers = _session(store, die, websocket)
    assert isinstance(ours["first"], (RpcError, ConnectionClosedError)), ours["first"]
    assert ours["second"] == "end_turn"
    assert ours["diagnostics"] == ["connection.renewed"]
    assert ours["view"] == _recorded(store, ours["session"])
    answer = [m for m in ours["view"]["messages"] if m["id"] == "answer-again"]
    assert [m["text"] for m in answer] == ["".join(durable_app.ANSWER)]  # not twice
    # the first turn's permission: never asked (the process died first), answered before
    # the restart, or withdrawn when the connection was renewed (its handler never
    # answers); the second turn's: answered once
    asked = list(KINDS).index(die) >= list(KINDS).index("asked")
    expected = ["withdrawn", "allow"] if die == "asked" else ["allow", "allow"]
    assert handlers.outcomes == (expected if asked else ["allow"])
    if die == "update:11":  # the turn had ended: the same session as with no restart
        assert _without_ids(ours["view"]) == _without_ids(uninterrupted)

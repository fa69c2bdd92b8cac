"""ACP beyond stdio (issue 27): ``acp_app`` serves an agent over Streamable HTTP and a
WebSocket, ``AcpClient.connect_url`` talks to it, under a real uvicorn. The interop
scenario (a plan, a permission, a diff, a terminal, a cancelled turn, close, resume with
replay) runs whole over both; a stream cut anywhere is resumed by cursor with nothing
applied twice; bad requests get the transport's refusals."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentproto.acp import AcpClient, Agent, AgentSession, ConnectionClosedError, RpcError
from agentproto.acp import schema as acp
from agentproto.acp._serve.app import acp_app
from agentproto.stores import EventLog, MemoryEventLog, RedisEventLog, Retention, SQLiteEventLog
from tests.agui.live_server import serve
from tests.docblocks import doc_block
from tests.interop.acp_side import ScenarioAgent, ScenarioClient, ScenarioHandlers
from tests.interop.test_acp_interop_ts import check_scenario_ran
from tests.needs import redis_server

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 2, "info": {"name": "probe", "version": "1"}, "capabilities": {}},
}


class _Agents:
    """The agent factory of the app, keeping each agent it made (for its report)."""

    def __init__(self) -> None:
        self.made: list[ScenarioAgent] = []

    def __call__(self) -> ScenarioAgent:
        agent = ScenarioAgent()
        self.made.append(agent)
        return agent


async def _scenario(url: str, **options: Any) -> dict[str, Any]:
    handlers = ScenarioHandlers()
    client = AcpClient.connect_url(url, handlers, request_timeout=30, **options)
    scenario = ScenarioClient(client, handlers)
    async with client:
        await asyncio.wait_for(scenario.run(), 60)
    assert client.agent is not None
    return {**scenario.report(), "protocol": client.agent.protocol_version}


def _ws(url: str) -> str:
    return "ws" + url.removeprefix("http")


@pytest.fixture
def served() -> Iterator[tuple[str, _Agents]]:
    agents = _Agents()
    with serve(acp_app(agents)) as url:
        yield url + "/acp", agents


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_the_scenario_runs_whole_over_the_transport(
    served: tuple[str, _Agents], websocket: bool
) -> None:
    """Client and agent, the same code as over stdio, end with the same view of the
    session: nothing lost, nothing applied twice, no diagnostic."""
    url, agents = served
    ours = asyncio.run(_scenario(_ws(url) if websocket else url))
    theirs = agents.made[-1].report()
    assert ours["errors"] == ours["diagnostics"] == theirs["errors"] == theirs["diagnostics"] == []
    check_scenario_ran(ours["view"])
    assert ours["view"] == theirs["view"]
    assert ours["cancelRequests"] == ["c3"]
    assert ours["replayedState"] == ours["state"]


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_v1_is_negotiated_over_the_transport_as_over_stdio(
    served: tuple[str, _Agents], websocket: bool
) -> None:
    """A client that speaks only v1 gets v1 from the same app (the runner's v1 mode), and
    the scenario's turns end as they do over stdio with a v1 peer."""
    url, agents = served
    ours = asyncio.run(_scenario(_ws(url) if websocket else url, versions=(1,)))
    theirs = agents.made[-1].report()
    assert ours["protocol"] == 1
    assert ours["errors"] == theirs["errors"] == []
    assert ours["stopReasons"] == ["end_turn", "cancelled"]
    assert ours["permissions"] == theirs["permissions"]


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_the_streams_can_be_kept_in_any_store(kind: str, tmp_path: Path) -> None:
    """The same log stores as the AG-UI streams: the scenario over SQLite and Redis logs,
    one socket cut and resumed on each."""
    log: EventLog = (
        SQLiteEventLog(tmp_path / "acp.db")
        if kind == "sqlite"
        else RedisEventLog(redis_server(), prefix=f"t{uuid.uuid4().hex}")
    )
    agents = _Agents()
    app = _CutStreams(acp_app(agents, log=log), 7)
    with serve(app) as url:
        ours = asyncio.run(_scenario(_ws(url + "/acp")))
    assert app.cut == 1 and app.reopened >= 2
    assert ours["errors"] == ours["diagnostics"] == []
    assert ours["view"] == agents.made[-1].report()["view"]


def test_every_message_of_a_stream_carries_its_cursor(served: tuple[str, _Agents]) -> None:
    """``initialize`` answers 200 with the connection id and ``transport.resumable``; each
    SSE frame's ``id:`` is the cursor its message carries in ``_meta["acp/cursor"]``."""
    url, _ = served
    with httpx.Client(timeout=10) as http:
        answer = http.post(url, json=INITIALIZE)
        assert answer.status_code == 200
        connection = answer.headers["acp-connection-id"]
        resumable = answer.json()["result"]["capabilities"]["transport"]["resumable"]
        assert resumable == {"retentionMessages": 10_000, "retentionSeconds": 3600.0}
        headers = {"acp-connection-id": connection}
        new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp"}}
        assert http.post(url, json=new, headers=headers).status_code == 202
        with http.stream("GET", url, headers={**headers, "accept": "text/event-stream"}) as got:
            lines = iter(got.iter_lines())
            cursor = next(lines).removeprefix("id: ")
            data = httpx.Response(200, content=next(lines).removeprefix("data: ")).json()
    assert data["id"] == 1 and data["result"]["sessionId"]
    assert data["result"]["_meta"]["acp/cursor"] == cursor


def test_bad_requests_get_the_transports_refusals(served: tuple[str, _Agents]) -> None:
    """Unknown or missing connection ids, a session's message naming no session or two,
    batches, other media types, a stream without ``text/event-stream``, a foreign cursor;
    and a deleted connection is gone. (A message whose params name its session needs no
    ``Acp-Session-Id``: the Python SDK's client sends none, and the params route it.)"""
    url, _ = served
    with httpx.Client(timeout=10) as http:
        connection = http.post(url, json=INITIALIZE).headers["acp-connection-id"]
        mine = {"acp-connection-id": connection}
        note = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}
        bare = {"jsonrpc": "2.0", "method": "session/cancel", "params": {}}
        stream = {"accept": "text/event-stream"}
        cases = [
            (http.post(url, json=note), 400, "missing-connection-id"),
            (http.post(url, json=note, headers={"acp-connection-id": "x"}), 404, None),
            (http.post(url, json=bare, headers=mine), 400, "missing-session-id"),
            (http.post(url, json=note, headers={**mine, "acp-session-id": "t"}), 400, None),
            (http.post(url, json=[note], headers=mine), 501, None),
            (
                http.post(url, content=b"{}", headers={**mine, "content-type": "text/plain"}),
                415,
                None,
            ),
            (http.get(url, headers=mine), 406, None),
            (http.get(url, headers={**mine, **stream, "last-event-id": "abc.1"}), 409, None),
            (http.get(url, headers={"acp-connection-id": "x", **stream}), 404, None),
        ]
        for response, status, error in cases:
            assert response.status_code == status, response.text
            if error is not None:
                assert response.json()["error"] == error
        assert http.delete(url, headers=mine).status_code == 202
        assert http.post(url, json=note, headers=mine).status_code == 404


class _CutStreams:
    """``app`` whose first response to a GET of a session's stream (or first WebSocket)
    breaks after ``after`` messages (uvicorn drops a response whose app raised): between
    messages, in the middle of the next one (``fault="mid"``: half its bytes sent), or
    by going silent with the socket kept open (``fault="silent"``). ``reopened`` counts the
    session streams and sockets opened."""

    def __init__(self, app: Any, after: int, fault: str = "cut") -> None:
        self.app, self.after, self.fault = app, after, fault
        self.cut = 0
        self.reopened = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", ()))
        session_get = scope["type"] == "http" and b"acp-session-id" in headers
        self.reopened += session_get or scope["type"] == "websocket"
        if self.cut or not (session_get or scope["type"] == "websocket"):
            await self.app(scope, receive, send)
            return
        self.cut = 1
        sent = 0

        async def counting(message: Any) -> None:
            nonlocal sent
            body = message.get("body") or message.get("text")
            if message["type"] in ("http.response.body", "websocket.send") and body:
                if sent == self.after:
                    if self.fault == "silent":
                        await asyncio.Event().wait()  # half-open: no byte, no end
                    if self.fault == "mid":
                        await send({**message, "body": body[: len(body) // 2]})
                    raise ConnectionResetError("cut")
                sent += 1
            await send(message)

        await self.app(scope, receive, counting)


def _cut_run(after: int, websocket: bool, fault: str = "cut") -> None:
    """The scenario through :class:`_CutStreams`: it ends with the agent's view, nothing
    applied twice (the views agree), no permission answered twice (the agent got each
    answer once)."""
    agents = _Agents()
    keepalive = 0.2 if fault == "silent" else 15.0
    app = _CutStreams(acp_app(agents, keepalive=keepalive), after, fault)
    with serve(app) as url:
        url += "/acp"
        ours = asyncio.run(_scenario(_ws(url) if websocket else url, keepalive=keepalive))
    assert app.cut == 1 and app.reopened >= 2  # cut, then opened again
    theirs = agents.made[-1].report()
    assert ours["errors"] == ours["diagnostics"] == theirs["errors"] == []
    check_scenario_ran(ours["view"])
    assert ours["view"] == theirs["view"]
    assert ours["permissions"] == theirs["permissions"]
    assert ours["cancelRequests"] == ["c3"]


# the scenario's first session stream carries 39 messages over HTTP; the socket carries 42
@pytest.mark.parametrize("mid", [False, True], ids=["between", "mid-message"])
@pytest.mark.parametrize("after", range(39))
def test_a_session_stream_cut_after_any_message_is_resumed(after: int, mid: bool) -> None:
    """The session's SSE stream breaks after each of its messages in turn (plan, tool
    calls, the permission request, the diff, the terminal, state updates, the cancelled
    turn, the replay), between two messages or inside the next one: the client reopens it
    after its last cursor and nothing is lost or applied twice."""
    _cut_run(after, websocket=False, fault="mid" if mid else "cut")


@pytest.mark.parametrize("after", range(42))
def test_a_socket_cut_after_any_message_is_resumed(after: int) -> None:
    """The WebSocket breaks (no close frame) after each of its messages in turn: the
    client opens another and resumes the connection after its last cursor."""
    _cut_run(after, websocket=True)


@pytest.mark.parametrize("after", [0, 5, 20])
def test_a_silent_stream_is_taken_for_dead_and_resumed(after: int) -> None:
    """The session's stream stops sending with its socket open (half-open): five
    keep-alive intervals of silence later the client takes it for dead and reopens it."""
    _cut_run(after, websocket=False, fault="silent")


def test_a_refused_cursor_is_a_409_never_a_live_stream() -> None:
    """A log that keeps 2 messages cannot replay after an early cursor: 409, with the
    reason, so the client rebuilds instead of missing what was dropped."""
    log = MemoryEventLog(Retention(max_frames=2))
    with serve(acp_app(_Agents(), log=log)) as url, httpx.Client(timeout=10) as http:
        url += "/acp"
        connection = http.post(url, json=INITIALIZE).headers["acp-connection-id"]
        headers = {"acp-connection-id": connection}
        stream = {**headers, "accept": "text/event-stream"}

        def new_session(ident: int) -> None:
            new = {"jsonrpc": "2.0", "id": ident, "method": "session/new", "params": {"cwd": "/"}}
            assert http.post(url, json=new, headers=headers).status_code == 202

        new_session(1)
        with http.stream("GET", url, headers=stream) as first:
            cursor = next(line for line in first.iter_lines() if line.startswith("id: "))[4:]
        for ident in (2, 3, 4):
            new_session(ident)
        time.sleep(0.5)  # the agent answers; the log keeps the last two answers only
        refused = http.get(url, headers={**stream, "last-event-id": cursor})
    assert refused.status_code == 409
    assert refused.json()["code"] == "store.cursor-expired"


def test_the_readme_block_serves_an_agent_and_connects_to_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """README.md, "ACP beyond stdio: an agent over HTTP and WebSocket": its app, served,
    answers its client over HTTP and over a WebSocket, as the comments say."""
    namespace: dict[str, Any] = {"__name__": "__doc_block__"}
    exec(doc_block("README.md", "ACP beyond stdio: an agent over HTTP and WebSocket"), namespace)
    with serve(namespace["app"]) as url:
        for where in (url + "/", _ws(url) + "/"):
            asyncio.run(namespace["main"](where))
    assert capsys.readouterr().out == "end_turn\nYou said: hello\n" * 2


def test_connections_are_bounded() -> None:
    """``max_connections``: one more ``initialize`` is 503, one more socket closed 1013;
    a connection ended makes room again."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    with serve(acp_app(_Agents(), max_connections=1)) as url, httpx.Client(timeout=10) as http:
        url += "/acp"
        first = http.post(url, json=INITIALIZE)
        refused = http.post(url, json=INITIALIZE)
        assert refused.status_code == 503 and refused.json()["error"] == "too-many-connections"
        with connect(_ws(url)) as socket, pytest.raises(ConnectionClosed) as closed:
            socket.send(json.dumps(INITIALIZE))
            socket.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        mine = {"acp-connection-id": first.headers["acp-connection-id"]}
        assert http.delete(url, headers=mine).status_code == 202
        assert http.post(url, json=INITIALIZE).status_code == 200


class _Chatty(Agent):
    """Answers a prompt with 30 chunks of one message, a little apart."""

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str:
        for n in range(30):
            await session.message_chunk(f"{n} ", message_id="answer")
            await asyncio.sleep(0.01)
        return "end_turn"


class _SlowReturn:
    """``app`` whose session streams break after 2 messages the first time, and whose
    reopening waits ``delay`` seconds first (a client away that long)."""

    def __init__(self, app: Any, delay: float) -> None:
        self.app, self.delay, self.gets = app, delay, 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", ()))
        if scope["type"] != "http" or b"acp-session-id" not in headers:
            await self.app(scope, receive, send)
            return
        self.gets += 1
        if self.gets > 1:
            await asyncio.sleep(self.delay)
            await self.app(scope, receive, send)
            return
        sent = 0

        async def counting(message: Any) -> None:
            nonlocal sent
            if message["type"] == "http.response.body" and message.get("body"):
                if sent == 2:
                    raise ConnectionResetError("cut")
                sent += 1
            await send(message)

        await self.app(scope, receive, counting)


def test_a_refused_resume_rebuilds_the_session_by_replay() -> None:
    """Away longer than a log of 4 messages remembers, the client is refused (409): the
    prompt it awaited fails (its answer or its turn's end may have been dropped: an error,
    never a hang), and the session is rebuilt by ``session/resume`` with replay: the whole
    answer is there."""
    log = MemoryEventLog(Retention(max_frames=4))
    app = _SlowReturn(acp_app(_Chatty, log=log), delay=1.0)

    async def run(url: str) -> tuple[BaseException | None, str]:
        async with AcpClient.connect_url(url, request_timeout=30) as client:
            await client.initialize(timeout=30)
            session = await client.new_session("/tmp")
            failed: BaseException | None = None
            try:
                await client.prompt(session.session_id, "go", timeout=30)
            except (ConnectionClosedError, RpcError) as error:
                failed = error
            for _ in range(100):  # the rebuild runs on: wait for its replay
                rebuilt = client.sessions[session.session_id].state.agent_messages
                if "answer" in rebuilt and len(rebuilt["answer"].content) == 30:
                    break
                await asyncio.sleep(0.05)
            message = client.sessions[session.session_id].state.agent_messages["answer"]
            return failed, "".join(block.text for block in message.content)

    with serve(app) as url:
        failed, text = asyncio.run(run(url + "/acp"))
    # the prompt's own answer (v2: once the user message is in) or the turn's end was lost
    lost = (RpcError, "the answer was lost"), (ConnectionClosedError, "stream was lost")
    assert any(isinstance(failed, kind) and text in str(failed) for kind, text in lost), failed
    assert text == "".join(f"{n} " for n in range(30))


def test_a_batch_is_answered_not_left_waiting(served: tuple[str, _Agents]) -> None:
    """The remote transport carries no JSON-RPC batch (the RFD: 501): a batch sent through
    ``connect_url`` gets each request an error at once, never a wait."""
    from agentproto.acp import BatchCall
    from agentproto.acp import schema as v2

    url, _ = served

    async def run() -> list[BaseException | None]:
        async with AcpClient.connect_url(url, request_timeout=10) as client:
            await client.initialize(timeout=10)
            tasks = await client.send_batch([BatchCall.request(v2.ListSessionsRequest())])
            done = await asyncio.gather(*[t for t in tasks if t], return_exceptions=True)
            return [d if isinstance(d, BaseException) else None for d in done]

    (failure,) = asyncio.run(run())
    assert isinstance(failure, RpcError) and "batch" in str(failure)

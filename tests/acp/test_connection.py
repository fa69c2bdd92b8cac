"""asyncio connections: concurrency, cancellation, timeouts, bad peers, shutdown, subprocesses."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import (
    ConnectionClosedError,
    ProtocolError,
    RequestTimeoutError,
    RpcError,
    UsageError,
)
from agentproto.acp._generated_v2 import (
    BooleanSetSessionConfigOptionRequest,
    CancelSessionNotification,
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    TextContentBlock,
)
from agentproto.acp._io.transports import MemoryPipe, connect_pair, spawn_agent
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp.connection import AgentSideConnection, BatchCall, ClientSideConnection
from tests.acp.lifecycle_helpers import Lines, other_tasks

AGENT_SCRIPT = Path(__file__).with_name("stdio_agent.py")
ROOT = Path(__file__).parents[2]


def prompt(text: str = "hi", session: str = "s") -> PromptRequest:
    return PromptRequest(session_id=session, prompt=[TextContentBlock(text=text)])


def permission() -> RequestPermissionRequest:
    option = PermissionOption(option_id="y", name="Yes", kind="allow_once")
    return RequestPermissionRequest(session_id="s", title="ok?", options=[option])


class RawPeer:
    """A hand-driven peer: writes raw lines to a connection, reads its lines."""

    def __init__(self, side: str = "agent", **options: Any) -> None:
        self.inbound, self.outbound = MemoryPipe(), MemoryPipe()
        cls = AgentSideConnection if side == "agent" else ClientSideConnection
        self.diagnostics: list[Diagnostic] = []
        self.conn = cls(
            self.inbound, self.outbound, on_diagnostic=self.diagnostics.append, **options
        )
        self.recv = Lines(self.outbound).next

    def send(self, obj: dict[str, Any] | bytes) -> None:
        data = obj if isinstance(obj, bytes) else orjson.dumps({"jsonrpc": "2.0", **obj}) + b"\n"
        self.inbound.write(data)


async def test_typed_request_and_result() -> None:
    """A typed request comes back as the typed result of its method."""
    agent, client = connect_pair()

    async def new_session(params: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="sess:" + params.cwd)

    agent.handle(NewSessionRequest, new_session)
    async with agent, client:
        result = await client.request(NewSessionRequest(cwd="/w"))
        assert result == NewSessionResponse(session_id="sess:/w")
        assert await client.request("session/new", {"cwd": "/x"}) == NewSessionResponse(
            session_id="sess:/x"
        )


async def test_a_union_alias_registers_its_method() -> None:
    """A handler registered for a union alias of params classes serves that method (the
    typing side of it: tests/typing/acp_handlers.py)."""
    agent, client = connect_pair()
    seen: list[Any] = []

    async def on_config(params: SetSessionConfigOptionRequest) -> SetSessionConfigOptionResponse:
        seen.append(params)
        return SetSessionConfigOptionResponse(config_options=[])

    agent.handle(SetSessionConfigOptionRequest, on_config)
    request = BooleanSetSessionConfigOptionRequest(session_id="s", config_id="c", value=True)
    async with agent, client:
        result = await client.request("session/set_config_option", request)
    assert result == SetSessionConfigOptionResponse(config_options=[])
    assert seen == [request]


async def test_concurrent_requests_in_both_directions() -> None:
    """Requests run concurrently, and a handler may call the other side meanwhile."""
    agent, client = connect_pair()
    second_arrived = asyncio.Event()

    async def on_prompt(params: PromptRequest) -> PromptResponse:
        text = params.prompt[0].text  # type: ignore[union-attr]
        if text == "first":
            await second_arrived.wait()  # only the second request can release the first
        else:
            second_arrived.set()
        answer = await agent.request(permission())
        assert isinstance(answer, RequestPermissionResponse)
        return PromptResponse(message_id=text)

    async def on_permission(params: RequestPermissionRequest) -> RequestPermissionResponse:
        return RequestPermissionResponse(
            outcome=SelectedRequestPermissionOutcome(option_id=params.options[0].option_id)
        )

    agent.handle(PromptRequest, on_prompt)
    client.handle(RequestPermissionRequest, on_permission)
    async with agent, client:
        first, second = await asyncio.wait_for(
            asyncio.gather(client.request(prompt("first")), client.request(prompt("second"))),
            5,
        )
    assert (first.message_id, second.message_id) == ("first", "second")


async def test_caller_cancel_cancels_the_handler() -> None:
    """Cancelling the awaiting task sends $/cancel_request; the handler task is cancelled."""
    agent, client = connect_pair()
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def on_prompt(params: PromptRequest) -> PromptResponse:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    agent.handle(PromptRequest, on_prompt)
    async with agent, client:
        call = asyncio.create_task(client.request(prompt()))
        await asyncio.wait_for(started.wait(), 5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(cancelled.wait(), 5)


async def test_peer_cancel_is_answered_with_request_cancelled() -> None:
    """$/cancel_request from the peer cancels the handler and answers -32800."""
    peer = RawPeer()
    started = asyncio.Event()

    async def on_prompt(params: PromptRequest) -> PromptResponse:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    peer.conn.handle(PromptRequest, on_prompt)
    async with peer.conn:
        peer.send({"id": "p1", "method": "session/prompt", "params": {"sessionId": "s",
                   "prompt": [{"type": "text", "text": "x"}]}})  # fmt: skip
        await asyncio.wait_for(started.wait(), 5)
        peer.send({"method": "$/cancel_request", "params": {"requestId": "p1"}})
        reply = await peer.recv()
    assert reply["id"] == "p1"
    assert reply["error"]["code"] == RpcErrorCode.REQUEST_CANCELLED == -32800


async def test_invalid_params_reach_the_peer_with_location() -> None:
    """Bad params get -32602 carrying the schema keyword and location."""
    peer = RawPeer()

    async def on_new(params: NewSessionRequest) -> NewSessionResponse:
        raise AssertionError("not called")

    peer.conn.handle(NewSessionRequest, on_new)
    async with peer.conn:
        peer.send({"id": 1, "method": "session/new", "params": {"cwd": ["no"]}})
        reply = await peer.recv()
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"] == {"keyword": "type", "location": "/params/cwd"}


async def test_method_not_found() -> None:
    """An unknown method, and a known one without a handler, get -32601."""
    peer = RawPeer()
    async with peer.conn:
        peer.send({"id": 1, "method": "nope/nope", "params": {}})
        peer.send({"id": 2, "method": "session/new", "params": {"cwd": "/"}})
        replies = [await peer.recv(), await peer.recv()]
    assert [(r["id"], r["error"]["code"]) for r in replies] == [(1, -32601), (2, -32601)]


async def test_extension_methods_and_notifications() -> None:
    """Extension methods reach their handler, or the catch-all, with raw params."""
    agent, client = connect_pair()
    seen: list[tuple[str, Any]] = []

    async def echo(params: Any) -> Any:
        return {"echo": params}

    async def catch_all(method: str, params: Any) -> Any:
        seen.append((method, params))
        return [method]

    agent.handle("_acme/echo", echo)
    agent.handle_extensions(catch_all)
    async with agent, client:
        assert await client.request("_acme/echo", {"a": 1}) == {"echo": {"a": 1}}
        assert await client.request("_acme/other", [1]) == ["_acme/other"]
        await client.notify("_acme/note", {"n": 2})
        await client.request("_acme/other", None)  # the notification was handled before this
    assert seen[:2] == [("_acme/other", [1]), ("_acme/note", {"n": 2})]


async def test_handler_errors_are_answered() -> None:
    """An RpcError from a handler is sent as is; another exception as internal error."""
    agent, client = connect_pair()

    async def on_new(params: NewSessionRequest) -> NewSessionResponse:
        if params.cwd == "/auth":
            raise RpcError(RpcErrorCode.AUTHENTICATION_REQUIRED, "log in first", {"hint": 1})
        raise ValueError("boom")

    agent.handle(NewSessionRequest, on_new)
    async with agent, client:
        with pytest.raises(RpcError) as auth:
            await client.request(NewSessionRequest(cwd="/auth"))
        with pytest.raises(RpcError) as internal:
            await client.request(NewSessionRequest(cwd="/x"))
    assert (auth.value.code, auth.value.data) == (RpcErrorCode.AUTHENTICATION_REQUIRED, {"hint": 1})
    assert internal.value.code == RpcErrorCode.INTERNAL_ERROR
    assert internal.value.method == "session/new"


async def test_response_to_unknown_id_and_malformed_lines() -> None:
    """Unknown response ids and bad lines are diagnostics; the connection keeps working."""
    peer = RawPeer()

    async def on_new(params: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="ok")

    peer.conn.handle(NewSessionRequest, on_new)
    async with peer.conn:
        peer.send({"id": 99, "result": {}})
        peer.send(b"this is not json\n")
        peer.send({"id": 1, "method": "session/new", "params": {"cwd": "/"}})
        parse_error = await peer.recv()
        reply = await peer.recv()
    assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
    assert reply == {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "ok"}}
    codes = [d.code for d in peer.diagnostics]
    assert "rpc.unknown-response" in codes and "rpc.malformed-line" in codes


async def test_timeout_when_the_peer_never_answers() -> None:
    """A request without an answer fails with RequestTimeoutError and is cancelled at the peer."""
    peer = RawPeer(side="client", request_timeout=0.05)
    async with peer.conn:
        with pytest.raises(RequestTimeoutError) as timed_out:
            await peer.conn.request(NewSessionRequest(cwd="/"))
        request, cancel = await peer.recv(), await peer.recv()
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": request["id"]},
        }
        peer.send({"id": request["id"], "result": {"sessionId": "late"}})  # dropped quietly
        with pytest.raises(RequestTimeoutError):
            await peer.conn.request(NewSessionRequest(cwd="/"), timeout=0.01)
    assert timed_out.value.method == "session/new"
    assert isinstance(timed_out.value, TimeoutError)
    assert not [d for d in peer.diagnostics if d.code == "rpc.unknown-response"]


async def test_notification_flood_is_bounded() -> None:
    """A flood of notifications waits in a bounded queue; the peer's writes back up."""
    peer = RawPeer(side="client", max_queued_notifications=8)
    release = asyncio.Event()
    handled: list[str] = []

    async def on_update(params: Any) -> None:
        await release.wait()
        handled.append(params.update.message_id)

    peer.conn.handle("session/update", on_update)
    count = 5000
    line = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'

    async def flood() -> None:
        for i in range(count):
            peer.inbound.write(
                line
                + b'{"sessionUpdate":"agent_message_chunk","messageId":"m%d",' % i
                + b'"content":{"type":"text","text":"x"}}}}\n'
            )
            await peer.inbound.drain()

    async with peer.conn:
        writer = asyncio.create_task(flood())
        await asyncio.sleep(0.2)
        assert not writer.done()  # backpressure: the flood is held up
        assert peer.conn.queued_notifications <= 8
        assert peer.inbound.buffered <= 64 * 1024 + 200
        release.set()
        await asyncio.wait_for(writer, 20)
        while len(handled) < count:
            await asyncio.sleep(0.01)
    assert handled == [f"m{i}" for i in range(count)]


async def test_peer_closing_fails_pending_requests_without_leaks() -> None:
    """When the peer closes, pending requests fail with ConnectionClosedError, no task leaks."""
    before = other_tasks()
    peer = RawPeer(side="client")
    peer.conn.start()
    call = asyncio.create_task(peer.conn.request(NewSessionRequest(cwd="/")))
    await peer.recv()
    peer.inbound.close()  # the agent goes away
    with pytest.raises(ConnectionClosedError):
        await asyncio.wait_for(call, 5)
    await asyncio.wait_for(peer.conn.wait_closed(), 5)
    assert peer.conn.closed
    with pytest.raises(ConnectionClosedError):
        await peer.conn.request(NewSessionRequest(cwd="/"))
    assert other_tasks() == before


async def test_overlong_line_closes_the_connection() -> None:
    """A line over max_line_bytes is the peer's fault: the connection closes, requests fail."""
    peer = RawPeer(side="client", max_line_bytes=1000)
    async with peer.conn:
        call = asyncio.create_task(peer.conn.request(NewSessionRequest(cwd="/")))
        await peer.recv()
        peer.send(b"x" * 2000)
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(call, 5)
        await asyncio.wait_for(peer.conn.wait_closed(), 5)
    assert isinstance(peer.conn.error, ProtocolError)


async def test_a_connection_closed_by_the_peer_says_so() -> None:
    """The peer's end of stream fails pending requests with ``by_peer`` true, and so does
    sending afterwards; a connection that breaks the protocol chains the ProtocolError."""
    peer = RawPeer(side="client")
    peer.conn.start()
    call = asyncio.create_task(peer.conn.request(NewSessionRequest(cwd="/")))
    await peer.recv()
    peer.inbound.close()
    with pytest.raises(ConnectionClosedError) as pending:
        await asyncio.wait_for(call, 5)
    assert pending.value.by_peer and "(closed by the peer)" in str(pending.value)
    await asyncio.wait_for(peer.conn.wait_closed(), 5)
    assert peer.conn.closed_by_peer
    with pytest.raises(ConnectionClosedError) as sending:
        await peer.conn.request(NewSessionRequest(cwd="/"))
    assert sending.value.by_peer
    rude = RawPeer(side="client", max_line_bytes=1000)
    async with rude.conn:
        call = asyncio.create_task(rude.conn.request(NewSessionRequest(cwd="/")))
        await rude.recv()
        rude.send(b"x" * 2000)
        with pytest.raises(ConnectionClosedError) as broken:
            await asyncio.wait_for(call, 5)
    assert broken.value.by_peer and isinstance(broken.value.__cause__, ProtocolError)


async def test_a_connection_closed_here_is_not_the_peers_fault() -> None:
    """close() fails pending requests with ``by_peer`` false, which is no ProtocolError (the
    peer broke nothing), and so does sending afterwards."""
    peer = RawPeer(side="client")
    peer.conn.start()
    call = asyncio.create_task(peer.conn.request(NewSessionRequest(cwd="/")))
    await peer.recv()
    await peer.conn.close()
    with pytest.raises(ConnectionClosedError) as pending:
        await asyncio.wait_for(call, 5)
    error = pending.value
    assert not error.by_peer and "(closed here)" in str(error)
    assert not isinstance(error, ProtocolError) and isinstance(error, ConnectionError)
    assert peer.conn.closed and not peer.conn.closed_by_peer and peer.conn.error is None
    with pytest.raises(ConnectionClosedError) as sending:
        await peer.conn.request(NewSessionRequest(cwd="/"))
    assert not sending.value.by_peer


async def test_close_cancels_handlers_without_leaks() -> None:
    """close() ends the reader, the dispatcher and running handlers."""
    before = other_tasks()
    agent, client = connect_pair()
    started = asyncio.Event()

    async def on_prompt(params: PromptRequest) -> PromptResponse:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    agent.handle(PromptRequest, on_prompt)
    agent.start()
    client.start()
    call = asyncio.create_task(client.request(prompt()))
    await asyncio.wait_for(started.wait(), 5)
    await agent.close()
    with pytest.raises(ConnectionClosedError):
        await asyncio.wait_for(call, 5)
    await client.wait_closed()
    assert other_tasks() == before


async def test_concurrent_incoming_requests_are_bounded() -> None:
    """At most max_concurrent_requests handlers run at once; the rest wait their turn."""
    agent, client = connect_pair(max_concurrent_requests=2)
    running, peak = 0, 0

    async def on_new(params: NewSessionRequest) -> NewSessionResponse:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return NewSessionResponse(session_id=params.cwd)

    agent.handle(NewSessionRequest, on_new)
    async with agent, client:
        calls = [client.request(NewSessionRequest(cwd=str(i))) for i in range(10)]
        results = await asyncio.wait_for(asyncio.gather(*calls), 5)
    assert [r.session_id for r in results] == [str(i) for i in range(10)]
    assert peak == 2


async def test_a_result_that_is_not_json_is_an_internal_error() -> None:
    """A handler result that cannot be sent is answered with internal error, not silence."""
    agent, client = connect_pair()

    async def weird(params: Any) -> Any:
        return {"x": object()}

    agent.handle("_acme/weird", weird)
    async with agent, client:
        with pytest.raises(RpcError) as failed:
            await asyncio.wait_for(client.request("_acme/weird", {}), 5)
    assert failed.value.code == RpcErrorCode.INTERNAL_ERROR


async def test_notification_handlers_run_in_order() -> None:
    """Notifications reach their handler in receive order, typed."""
    agent, client = connect_pair()
    got: list[str] = []

    async def on_cancel(params: CancelSessionNotification) -> None:
        await asyncio.sleep(0)
        got.append(params.session_id)

    agent.handle(CancelSessionNotification, on_cancel)
    async with agent, client:
        for i in range(20):
            await client.notify(CancelSessionNotification(session_id=str(i)))
        while len(got) < 20:
            await asyncio.sleep(0.01)
    assert got == [str(i) for i in range(20)]


def test_registering_the_other_sides_method_is_a_usage_error() -> None:
    """A side cannot handle a method the other side handles, nor an unknown one."""
    agent, client = connect_pair()

    async def handler(params: Any) -> Any:
        return None

    with pytest.raises(UsageError):
        agent.handle(RequestPermissionRequest, handler)
    with pytest.raises(UsageError):
        client.handle(PromptRequest, handler)
    with pytest.raises(UsageError):
        client.handle("no/such", handler)
    with pytest.raises(UsageError):
        client.handle("$/cancel_request", handler)


async def test_sending_what_the_peer_does_not_handle_is_a_usage_error() -> None:
    """An agent cannot send session/prompt; a client cannot send session/update."""
    agent, client = connect_pair()
    async with agent, client:
        with pytest.raises(UsageError):
            await agent.request(prompt())
        with pytest.raises(UsageError):
            await client.notify("session/update", {"sessionId": "s", "update": {}})


async def _spawn(**options: Any) -> Any:
    return await spawn_agent([sys.executable, str(AGENT_SCRIPT)], cwd=str(ROOT), **options)


async def test_spawned_agent_round_trip() -> None:
    """A real subprocess agent answers, and calls back the client mid-request."""
    before = other_tasks()
    agent = await _spawn()
    asked: list[str] = []

    async def on_permission(params: RequestPermissionRequest) -> RequestPermissionResponse:
        asked.append(params.title)
        return RequestPermissionResponse(outcome=SelectedRequestPermissionOutcome(option_id="y"))

    agent.connection.handle(RequestPermissionRequest, on_permission)
    async with agent:
        conn = agent.connection
        assert await asyncio.wait_for(conn.request(NewSessionRequest(cwd="/w")), 20) == (
            NewSessionResponse(session_id="s-/w")
        )
        result = await asyncio.wait_for(conn.request(prompt()), 20)
        assert result == PromptResponse(message_id="m1")
    assert asked == ["go?"]
    assert agent.process.returncode == 0
    assert other_tasks() == before


async def test_agent_killed_mid_request() -> None:
    """Killing the agent fails its pending request promptly; nothing hangs."""
    agent = await _spawn()
    async with agent:
        conn = agent.connection
        await asyncio.wait_for(conn.request(NewSessionRequest(cwd="/w")), 20)
        call = asyncio.create_task(conn.request(prompt("hang")))
        await asyncio.sleep(0.2)
        agent.process.kill()
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(call, 10)
        await asyncio.wait_for(conn.wait_closed(), 10)
    assert agent.process.returncode is not None


# --- batches -------------------------------------------------------------------------------------


def batch_line(*objs: Any) -> bytes:
    members = [{"jsonrpc": "2.0", **obj} if isinstance(obj, dict) else obj for obj in objs]
    return orjson.dumps(members) + b"\n"


async def test_a_batch_from_the_peer_is_answered_with_one_array() -> None:
    """Requests served concurrently, an invalid member, a method without handler, a
    notification: one line holding one array of the four answers; the connection goes on."""
    peer = RawPeer()
    noted: list[Any] = []

    async def on_new(params: NewSessionRequest) -> NewSessionResponse:
        await asyncio.sleep(0.05 if params.cwd == "/slow" else 0)
        return NewSessionResponse(session_id="s-" + params.cwd)

    async def on_note(params: Any) -> None:
        noted.append(params)

    peer.conn.handle(NewSessionRequest, on_new)
    peer.conn.handle("_note", on_note)
    async with peer.conn:
        peer.send(
            batch_line(
                {"id": 1, "method": "session/new", "params": {"cwd": "/slow"}},
                {"id": "b", "method": "session/new", "params": {"cwd": "/fast"}},
                {"method": "_note", "params": {"n": 1}},
                17,
                {"id": 3, "method": "session/list", "params": {}},
            )
        )
        reply = await peer.recv()
        peer.send({"id": 4, "method": "session/new", "params": {"cwd": "/after"}})
        after = await peer.recv()
        await peer.conn.settle()
    assert isinstance(reply, list) and len(reply) == 4
    by_id = {r["id"]: r for r in reply}
    assert by_id[1]["result"] == {"sessionId": "s-/slow"}
    assert by_id["b"]["result"] == {"sessionId": "s-/fast"}
    assert by_id[None]["error"]["code"] == -32600
    assert by_id[3]["error"]["code"] == -32601
    assert after == {"jsonrpc": "2.0", "id": 4, "result": {"sessionId": "s-/after"}}
    assert noted == [{"n": 1}]


async def test_send_batch_returns_a_task_per_request() -> None:
    """send_batch: one line out; the peer's response array (any order) settles each task
    with its typed result or its error; a notification member gets None."""
    peer = RawPeer(side="client")
    async with peer.conn:
        tasks = await peer.conn.send_batch(
            [
                BatchCall.request(NewSessionRequest(cwd="/a")),
                BatchCall.notify(CancelSessionNotification(session_id="s")),
                BatchCall.request("session/new", {"cwd": "/b"}),
            ]
        )
        assert tasks[1] is None
        sent = await peer.recv()
        assert isinstance(sent, list) and [m.get("id") for m in sent] == [0, None, 1]
        peer.send(
            batch_line(
                {"id": 1, "error": {"code": -32602, "message": "no"}},
                {"id": 0, "result": {"sessionId": "a"}},
            )
        )
        first, _, second = tasks
        assert first is not None and second is not None
        assert await asyncio.wait_for(first, 5) == NewSessionResponse(session_id="a")
        with pytest.raises(RpcError) as failed:
            await asyncio.wait_for(second, 5)
    assert failed.value.code == -32602


async def test_send_batch_between_connections_cancel_and_timeout() -> None:
    """A batch between two connections. Cancelling a member's task cancels it at the peer,
    whose answer completes the batch, so its sibling's result arrives; a member left
    unanswered times out; an empty batch is a usage error, a closed connection refuses."""
    agent, client = connect_pair()
    release = asyncio.Event()

    async def on_new(params: NewSessionRequest) -> NewSessionResponse:
        if params.cwd == "/hang":
            await release.wait()
        return NewSessionResponse(session_id="s-" + params.cwd)

    agent.handle(NewSessionRequest, on_new)
    async with agent, client:
        a, b = await client.send_batch([new("/a"), new("/b")])
        assert a is not None and b is not None
        assert await asyncio.wait_for(asyncio.gather(a, b), 5) == [
            NewSessionResponse(session_id="s-/a"),
            NewSessionResponse(session_id="s-/b"),
        ]
        quick, hang = await client.send_batch([new("/q"), new("/hang")])
        assert hang is not None and quick is not None
        await asyncio.sleep(0.05)
        assert not quick.done()  # its answer waits in the peer's batch for the hung one
        hang.cancel()
        assert await asyncio.wait_for(quick, 5) == NewSessionResponse(session_id="s-/q")
        (lone,) = await client.send_batch([new("/hang")], timeout=0.05)
        assert lone is not None
        with pytest.raises(RequestTimeoutError):
            await lone
        with pytest.raises(UsageError):
            await client.send_batch([])
    with pytest.raises(ConnectionClosedError):
        await client.send_batch([new("/")])


def new(cwd: str) -> BatchCall:
    return BatchCall.request(NewSessionRequest(cwd=cwd))


async def test_closing_with_a_batch_partly_answered_writes_what_it_has() -> None:
    """close() while a batch waits for a handler: the answers it has go out as its array."""
    peer = RawPeer()
    started = asyncio.Event()

    async def on_new(params: NewSessionRequest) -> NewSessionResponse:
        if params.cwd == "/hang":
            started.set()
            await asyncio.Event().wait()
        return NewSessionResponse(session_id="s")

    peer.conn.handle(NewSessionRequest, on_new)
    peer.conn.start()
    peer.send(
        batch_line(
            {"id": 1, "method": "session/new", "params": {"cwd": "/hang"}},
            {"id": 2, "method": "session/new", "params": {"cwd": "/"}},
        )
    )
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.sleep(0.05)  # request 2 is answered meanwhile, into the batch
    await asyncio.wait_for(peer.conn.close(), 5)
    assert await peer.recv() == [{"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s"}}]


async def test_spawned_agent_answers_a_batch_with_one_array() -> None:
    """The example agent (a real process on stdio, served by the runner) gets a raw batch
    of two ``session/new`` requests and writes back one line holding both responses."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'sdk'}{os.pathsep}{ROOT}"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "examples" / "acp_hello_agent.py"),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:

        async def exchange(data: bytes) -> Any:
            process.stdin.write(data)  # type: ignore[union-attr]
            await process.stdin.drain()  # type: ignore[union-attr]
            line = await asyncio.wait_for(process.stdout.readline(), 30)  # type: ignore[union-attr]
            return orjson.loads(line)

        info = {"name": "raw", "version": "1"}
        init = {"id": 0, "method": "initialize", "params": {"protocolVersion": 2, "info": info}}
        assert "result" in await exchange(orjson.dumps({"jsonrpc": "2.0", **init}) + b"\n")
        reply = await exchange(
            batch_line(
                {"id": "x", "method": "session/new", "params": {"cwd": "/w"}},
                {"method": "session/cancel", "params": {"sessionId": "nope"}},
                {"id": "y", "method": "session/new", "params": {"cwd": "/v"}},
            )
        )
        assert isinstance(reply, list) and sorted(r["id"] for r in reply) == ["x", "y"]
        assert all(isinstance(r["result"]["sessionId"], str) for r in reply)
        empty = await exchange(b"[]\n")
        assert empty["id"] is None and empty["error"]["code"] == -32600
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 30)

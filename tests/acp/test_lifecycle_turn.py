"""The ACP v2 session lifecycle end to end over memory pipes: initialize, sessions, prompt
turns, permissions, cancellation, resume with replay, child sessions, the unstable opt-in."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentproto._core.errors import UsageError
from agentproto.acp import (
    AcpClient,
    Agent,
    AgentRunner,
    AgentSession,
    BatchCall,
    ConnectionClosedError,
    MemoryPipe,
    RpcError,
    RpcErrorCode,
    UnsupportedVersionError,
    dump_session_update,
    parse_session_update,
)
from agentproto.acp import schema as acp
from tests.acp.lifecycle_helpers import ALLOW, REJECT, Answers, other_tasks, pair


class Scripted(Agent):
    """A message, a tool call behind a permission, a plan; ``wait`` blocks until cancelled."""

    def __init__(self) -> None:
        self.decisions: list[Any] = []
        self.started = asyncio.Event()
        self.ignore_cancel = False

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str | None:
        text = request.prompt[0].text  # type: ignore[union-attr]
        await session.message("working")
        tool = await session.tool_call("Edit", kind="edit")
        if text in ("wait", "stubborn"):
            self.started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                if text == "stubborn":
                    return "end_turn"  # what the spec forbids after a cancel
                raise
        decision = await session.request_permission("Edit?", [ALLOW, REJECT], tool_call=tool)
        self.decisions.append(decision)
        await tool.finish("completed" if decision.allowed else "failed")
        await session.plan([acp.PlanEntry(content="x", priority="low", status="completed")])
        return None


async def test_initialize_negotiates_and_prompt_returns_the_stop_reason() -> None:
    """initialize answers the highest supported version; prompt() ends with the idle update's
    stop reason and the client's state holds every update."""
    agent = Scripted()
    async with pair(agent, Answers("yes")) as (runner, client):
        answer = await client.initialize(protocol_version=7)
        assert answer.protocol_version == 2 and runner.version == 2
        session = await client.new_session("/w")
        assert await client.prompt(session.session_id, "go") == "end_turn"
        state = session.state
        assert state.state is not None and state.state.extra == {
            "state": "idle",
            "stopReason": "end_turn",
        }
        (call,) = state.tool_calls.values()
        assert call.status == "completed" and call.title == "Edit"
        assert [m.content[0].text for m in state.user_messages.values()] == ["go"]  # type: ignore[union-attr]
        assert state.plans.keys() == {"main"}
        assert agent.decisions[0].allowed
        assert state == runner.sessions[session.session_id].state


async def test_unsupported_version_is_the_schemas_error() -> None:
    """An agent with no version at or below the client's answers -32022 with the schema's
    data; the client raises UnsupportedVersionError and closes the connection."""

    class Future(Scripted):
        protocol_versions = (3,)

    async with pair(Future()) as (_, client):
        with pytest.raises(UnsupportedVersionError) as caught:
            await client.initialize()
        assert caught.value.requested == 2 and caught.value.supported == (3,)
        cause = caught.value.__cause__
        assert isinstance(cause, RpcError)
        assert cause.code == RpcErrorCode.UNSUPPORTED_PROTOCOL_VERSION
        assert cause.data == {"requested": 2, "supported": [3]}
        assert client.connection.closed


async def test_client_refuses_an_answer_above_its_request() -> None:
    """An agent answering a version the client does not support (here 1, to a client of
    version 2 only): the client gives up with UnsupportedVersionError."""

    class Liar(Scripted):
        async def initialize(self, request: Any, version: int) -> acp.InitializeResponse:
            return acp.InitializeResponse(protocol_version=version, info=self.info)

    agent = Liar()
    agent.protocol_versions = (1, 2)
    to_agent, to_client = MemoryPipe(), MemoryPipe()
    runner = AgentRunner(agent, to_agent, to_client)
    serving = asyncio.create_task(runner.serve())
    async with AcpClient.connect(to_client, to_agent, versions=(2,)) as client:
        with pytest.raises(UnsupportedVersionError) as caught:
            await client.initialize(protocol_version=1)
        assert caught.value.offered == 1 or caught.value.offered is None
    await runner.close()
    await serving


async def test_session_methods_need_initialize() -> None:
    """session/new before initialize is refused with invalid request."""
    async with pair(Scripted()) as (_, client):
        with pytest.raises(RpcError) as caught:
            await client.new_session("/w")
        assert caught.value.code == RpcErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(
    ("answer", "allowed", "diagnostic"),
    [
        ("yes", True, None),
        ("no", False, None),
        ("bogus", False, "client.permission-answer"),
        (None, False, None),
        (acp.OtherRequestPermissionOutcome(outcome="_maybe"), False, None),
    ],
)
async def test_permission_answers(answer: Any, allowed: bool, diagnostic: str | None) -> None:
    """Only an offered allow option approves; an option that was not offered becomes
    cancelled with a diagnostic, and an unknown outcome never approves."""
    agent = Scripted()
    async with pair(agent, Answers(answer)) as (_, client):
        await client.initialize()
        session = await client.new_session("/w")
        await client.prompt(session.session_id, "go")
        (decision,) = agent.decisions
        assert decision.allowed is allowed
        codes = [d.code for d in client.diagnostics]
        assert (diagnostic in codes) if diagnostic else codes == []
        (call,) = session.state.tool_calls.values()
        assert call.status == ("completed" if allowed else "failed")


async def test_cancel_marks_tool_calls_and_answers_pending_permissions() -> None:
    """cancel() marks unfinished tool calls cancelled, answers the session's pending
    permission requests cancelled itself, and the prompt returns 'cancelled'."""

    class Asks(Scripted):
        async def cancel(self, session: AgentSession) -> None:
            pass  # cooperative: the turn sees the cancelled answer and stops by itself

        async def prompt(self, session: AgentSession, request: Any) -> str | None:
            tool = await session.tool_call("Edit")
            self.decisions.append(await session.request_permission("ok?", [ALLOW], tool_call=tool))
            return "cancelled" if session.cancelled else "end_turn"

    agent = Asks()
    handlers = Answers("wait")
    async with pair(agent, handlers) as (_, client):
        await client.initialize()
        session = await client.new_session("/w")
        turn = asyncio.create_task(client.prompt(session.session_id, "go"))
        await handlers.asked.wait()
        await client.cancel(session.session_id)
        (call,) = session.state.tool_calls.values()
        assert call.status == "cancelled"
        assert await asyncio.wait_for(turn, 5) == "cancelled"
        assert agent.decisions and agent.decisions[0].cancelled


@pytest.mark.parametrize("text", ["wait", "stubborn"])
async def test_a_cancelled_turn_ends_cancelled(text: str) -> None:
    """After session/cancel the turn ends 'cancelled', also when the agent returns another
    stop reason (refused with a diagnostic and reported as cancelled)."""
    agent = Scripted()
    diagnostics: list[Any] = []
    async with pair(agent, on_diagnostic=diagnostics.append) as (_, client):
        await client.initialize()
        session = await client.new_session("/w")
        turn = asyncio.create_task(client.prompt(session.session_id, text))
        await agent.started.wait()
        await client.cancel(session.session_id)
        assert await asyncio.wait_for(turn, 5) == "cancelled"
    if text == "stubborn":
        assert "turn.cancelled" in [d.code for d in diagnostics]


async def test_one_prompt_at_a_time_per_session() -> None:
    """A second prompt on a busy session is refused: by the client (UsageError) and by the
    agent (-32600) for a client that does not wait; another session keeps working."""
    agent = Scripted()
    async with pair(agent, Answers("yes")) as (_, client):
        await client.initialize()
        busy = await client.new_session("/w")
        other = await client.new_session("/w")
        turn = asyncio.create_task(client.prompt(busy.session_id, "wait"))
        await agent.started.wait()
        with pytest.raises(UsageError):
            await client.prompt(busy.session_id, "again")
        request = acp.PromptRequest(
            session_id=busy.session_id, prompt=[acp.TextContentBlock(text="x")]
        )
        with pytest.raises(RpcError) as caught:
            await client.connection.request(request)
        assert caught.value.code == RpcErrorCode.INVALID_REQUEST
        assert await client.prompt(other.session_id, "go") == "end_turn"
        await client.cancel(busy.session_id)
        assert await turn == "cancelled"


async def test_resume_with_replay_rebuilds_the_same_state() -> None:
    """A resumed session's replayed updates rebuild the client's state by the live rules: it
    equals the state live delivery built (the current-state snapshot last)."""
    agent = Scripted()
    async with pair(agent, Answers("yes")) as (_, client):
        await client.initialize()
        session = await client.new_session("/w")
        await client.prompt(session.session_id, "go")
        await session_info(agent, client, session.session_id)
        live = session.state.to_json()
        resumed = await client.resume_session(session.session_id, "/w")
        assert resumed is not session
        assert resumed.state.to_json() == live
        kept = await client.resume_session(session.session_id, "/w", replay=False)
        assert kept is resumed


async def session_info(agent: Scripted, client: Any, session_id: str) -> None:
    """Give the session metadata to resend (a tool call with _meta, a title)."""
    session = agent.runner.sessions[session_id]
    await session.session_info(title="T", meta={"k": 1})
    await asyncio.sleep(0.05)


async def test_resume_unknown_session_and_bad_cursor() -> None:
    """Resuming a session the agent does not hold is -32002; an unknown replay cursor is
    -32602 (the schema: never substitute another cursor)."""
    async with pair(Scripted()) as (_, client):
        await client.initialize()
        with pytest.raises(RpcError) as caught:
            await client.resume_session("nope", "/w")
        assert caught.value.code == RpcErrorCode.RESOURCE_NOT_FOUND
        assert "nope" not in client.sessions
        session = await client.new_session("/w")
        request = acp.ResumeSessionRequest(
            session_id=session.session_id, cwd="/w", replay_from=acp.OtherReplayFrom(type="_x")
        )
        with pytest.raises(RpcError) as caught:
            await client.connection.request(request)
        assert caught.value.code == RpcErrorCode.INVALID_PARAMS


async def test_close_list_delete() -> None:
    """close cancels running work first (idle 'cancelled' before the answer); list shows the
    held sessions; delete forgets one; closing or deleting an unknown session succeeds."""
    agent = Scripted()
    async with pair(agent) as (_, client):
        await client.initialize()
        first = await client.new_session("/a")
        second = await client.new_session("/b")
        turn = asyncio.create_task(client.prompt(first.session_id, "wait"))
        await agent.started.wait()
        await client.close_session(first.session_id)
        assert first.stop_reason == "cancelled"
        assert await turn == "cancelled"
        await client.close_session("unknown")
        listed = await client.list_sessions(cwd="/b")
        assert [s.session_id for s in listed.sessions] == [second.session_id]
        await client.delete_session(second.session_id)
        assert second.session_id not in client.sessions
        await client.delete_session(second.session_id)  # gone already: succeeds, as the kit asks
        listed = await client.list_sessions()
        assert second.session_id not in [s.session_id for s in listed.sessions]


async def test_child_sessions_register_with_their_parent() -> None:
    """A child announced by subagent_update is registered with its parent before its own
    traffic; traffic for a session never announced gets a diagnostic and is kept."""

    class Parent(Agent):
        async def prompt(self, session: AgentSession, request: Any) -> str | None:
            child = await session.subagent(title="helper")
            await child.message("from the child")
            return None

    agent = Parent()
    async with pair(agent) as (runner, client):
        await client.initialize()
        session = await client.new_session("/w")
        await client.prompt(session.session_id, "go")
        (child,) = session.children.values()
        assert child.parent is session and child.announced
        assert [m.content[0].text for m in child.state.agent_messages.values()] == [  # type: ignore[union-attr]
            "from the child"
        ]
        assert client.diagnostics == []
        stray = runner._make_session("stray", "/w", None)
        await stray.message("who am I")
        await asyncio.sleep(0.05)
        assert [d.code for d in client.diagnostics] == ["client.unannounced-session"]
        assert not client.sessions["stray"].announced


async def test_unstable_methods_need_the_opt_in() -> None:
    """Unstable calls raise UsageError without unstable=True, and the agent answers method not
    found; with the opt-in on both sides they reach the agent."""

    class Forks(Scripted):
        async def session_status(self, request: Any) -> acp.SessionStatusResponse:
            return acp.SessionStatusResponse(status="open")

    async with pair(Forks()) as (_, client):
        await client.initialize()
        with pytest.raises(UsageError):
            await client.unstable.session_status("s")
        with pytest.raises(RpcError) as caught:
            await client.connection.request(acp.SessionStatusRequest(session_id="s"))
        assert caught.value.code == RpcErrorCode.METHOD_NOT_FOUND
    async with pair(Forks(), unstable=True) as (_, client):
        await client.initialize()
        assert (await client.unstable.session_status("s")).status == "open"
        with pytest.raises(RpcError) as caught:
            await client.unstable.fork_session("s", "/w")
        assert caught.value.code == RpcErrorCode.METHOD_NOT_FOUND


async def test_nothing_outlives_the_pair() -> None:
    """After a turn, a cancelled turn and closing, no task of the runner or client remains."""
    agent = Scripted()
    async with pair(agent, Answers("yes")) as (_, client):
        await client.initialize()
        session = await client.new_session("/w")
        await client.prompt(session.session_id, "go")
        turn = asyncio.create_task(client.prompt(session.session_id, "wait"))
        await agent.started.wait()
    with pytest.raises(ConnectionClosedError):
        await turn
    assert other_tasks() == set()


async def test_a_client_sends_a_batch_through_the_runner() -> None:
    """AcpClient.send_batch: two ``session/list`` calls in one batch reach the runner, which
    answers with one array; each task gets its typed result. An unstable method is refused
    without ``unstable=True``, before anything is sent."""
    async with pair(Scripted()) as (_, client):
        await client.initialize()
        created = await client.new_session("/b")
        tasks = await client.send_batch(
            [
                BatchCall.request(acp.ListSessionsRequest(cwd="/b")),
                BatchCall.request(acp.ListSessionsRequest(cwd="/elsewhere")),
            ]
        )
        assert all(task is not None for task in tasks)
        here, elsewhere = await asyncio.wait_for(asyncio.gather(*tasks), 5)  # type: ignore[arg-type]
        status = BatchCall.request(acp.SessionStatusRequest(session_id=created.session_id))
        with pytest.raises(UsageError) as unstable:  # unstable methods need unstable=True
            await client.send_batch([BatchCall.request(acp.ListSessionsRequest()), status])
        with pytest.raises(UsageError):
            await client.send_batch([BatchCall.request("session/status", {"sessionId": "s"})])
    assert [s.session_id for s in here.sessions] == [created.session_id]
    assert elsewhere.sessions == []
    assert unstable.value.code == "client.unstable"


class Recorded(Scripted):
    """:class:`Scripted` keeping each update it sends; a session it does not hold is
    restored from what was kept (a process that outlived another)."""

    def __init__(self, kept: dict[str, list[Any]], fail: bool = False) -> None:
        super().__init__()
        self.kept = kept
        self.fail = fail

    async def record_update(self, session: AgentSession, update: acp.SessionUpdate) -> None:
        if self.fail and isinstance(update, acp.ToolCallUpdateSessionUpdate):
            raise OSError("the disk is full")
        self.kept.setdefault(session.session_id, []).append(dump_session_update(update))

    async def restore_session(
        self, session: AgentSession, request: acp.ResumeSessionRequest
    ) -> None:
        updates = self.kept.get(session.session_id, [])
        session.state.replay(parse_session_update(update) for update in updates)


async def test_record_update_keeps_every_update_sent_and_restores_a_session() -> None:
    """``record_update`` gets every update of the session in order, the turn's state and
    the user's message included, so that another agent process restores the session from
    it (``session/resume``); what a resume re-sends (replay, snapshot) is not recorded."""
    kept: dict[str, list[Any]] = {}
    answers = Answers("yes")  # keeps what reaches the client, in order
    async with pair(Recorded(kept), answers) as (_, client):
        await client.initialize()
        session = await client.new_session("/w")
        await client.prompt(session.session_id, "go")
        live = session.state
    (updates,) = kept.values()
    assert updates == [dump_session_update(update) for _, update in answers.updates]
    assert {u["sessionUpdate"] for u in updates} >= {"state_update", "user_message"}
    async with pair(Recorded(kept), Answers("yes")) as (_, client):  # a new process
        await client.initialize()
        resumed = await client.resume_session(session.session_id, "/w")
        assert resumed.state.tool_calls == live.tool_calls
        assert resumed.state.user_messages == live.user_messages
        assert resumed.state.plans == live.plans
    assert kept[session.session_id] == updates  # the replay was not recorded again


async def test_an_update_that_cannot_be_recorded_is_not_sent() -> None:
    """``record_update`` raising keeps the update from the wire: the client never holds
    what the agent could not keep; the turn ends with the ``error`` stop reason."""
    kept: dict[str, list[Any]] = {}
    async with pair(Recorded(kept, fail=True), Answers("yes")) as (_, client):
        await client.initialize()
        session = await client.new_session("/w")
        assert await client.prompt(session.session_id, "go") == "error"
        assert session.state.tool_calls == {}
    assert not any(u["sessionUpdate"] == "tool_call" for u in kept[session.session_id])

"""The HTTP agent client's one-call run and its interrupts (issue 24, deliverable 3):
``run_to_end`` returns what a run came to, and a run that leaves an open interrupt
unanswered is refused before any request is sent."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from agui_scripted_agent import app as scripted_app

from agentproto import ProtocolError, UsageError
from agentproto.agui import (
    AsyncHttpAgent,
    Conversation,
    HttpAgent,
    HttpStatusError,
    OpenInterrupts,
    RunProducer,
    RunResult,
    agent_app,
    schema,
)
from agentproto.agui.asgi import ASGIApp, Receive, Scope, Send
from tests.agui.http_peers import RUN_FINISHED, RUN_STARTED, Echo, scripted
from tests.agui.live_server import serve
from tests.docblocks import run_doc_block, said

ASKED = {"id": "send-email", "reason": "tool_call", "toolCallId": "tc-1"}


def texts(conversation: Conversation) -> list[tuple[str, Any]]:
    return [(m.role, getattr(m, "content", None)) for m in conversation.messages]


class Approval:
    """An agent that asks for approval (an interrupt) before it sends an email, and
    sends it in the run that resumes with the approval. It keeps what it asked per
    thread, and ``agent_app`` refuses a resume that does not answer it (400).
    ``truncate`` makes the next answer stop after RUN_STARTED."""

    def __init__(self, *, expires_at: str | None = None) -> None:
        self.asked: dict[str, list[dict[str, Any]]] = {}
        self.inputs: list[schema.RunAgentInput] = []
        self.truncate = False
        interrupt = {**ASKED, **({"expiresAt": expires_at} if expires_at else {})}
        self.interrupt = interrupt
        self._agent = agent_app(self.handler, interrupts=self.lookup)
        self._truncated = scripted([RUN_STARTED])

    def lookup(self, run_input: schema.RunAgentInput) -> list[dict[str, Any]] | None:
        return self.asked.get(run_input.thread_id)

    async def handler(self, run_input: schema.RunAgentInput, producer: RunProducer) -> None:
        self.inputs.append(run_input)
        producer.run_started()
        approved = [e for e in producer.resume if e.status == "resolved"]
        if producer.resume:
            self.asked.pop(run_input.thread_id, None)
            producer.text("Sent." if approved else "Not sent.")
            producer.run_finished(result={"sent": bool(approved)})
            return
        producer.text("I need your approval to send the email.")
        self.asked[run_input.thread_id] = [self.interrupt]
        producer.run_interrupted([self.interrupt])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.truncate and scope["type"] == "http":
            self.truncate = False
            await self._truncated(scope, receive, send)
            return
        await self._agent(scope, receive, send)


@contextmanager
def recorded_agent(app: ASGIApp, **options: Any) -> Iterator[tuple[HttpAgent, list[str]]]:
    """An ``HttpAgent`` against ``app`` under uvicorn whose client records every request."""
    sent: list[str] = []
    with (
        serve(app) as url,
        httpx.Client(event_hooks={"request": [lambda r: sent.append(r.method)]}) as client,
        HttpAgent(url, client=client, **options) as agent,
    ):
        yield agent, sent


class RecordingTransport(httpx.ASGITransport):
    """httpx's ASGI transport, recording each request it is asked to send."""

    def __init__(self, app: ASGIApp) -> None:
        super().__init__(app=app)
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await super().handle_async_request(request)


# ---- run_to_end ----------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["sse", "jsonl"])
def test_run_to_end_returns_the_new_messages_state_and_record(transport: str) -> None:
    """One call runs the agent to the end: the result has the run's record, the messages
    the agent added (not the input's), the state after it, nothing left open; the thread
    carries on to the next run as with ``run()``."""
    echo = Echo()
    with serve(echo.app) as url, HttpAgent(url, transport=transport) as agent:
        first = agent.run_to_end("hello")
        second = agent.run_to_end("again", run_id="run-b")
    assert isinstance(first, RunResult)
    assert first.status == "succeeded" and first.succeeded
    assert first.record is agent.runs[0]
    assert [(m.role, m.content) for m in first.new_messages] == [("assistant", "You said: hello")]
    assert first.state == {"turns": 1}
    assert len(first.interrupts) == 0 and first.result is None and first.diagnostics == ()
    assert second.record.run_id == "run-b" and second.state == {"turns": 2}
    assert [m.content for m in second.new_messages] == ["You said: again"]
    assert texts(agent.conversation)[-2:] == [("user", "again"), ("assistant", "You said: again")]
    assert echo.inputs[1].state == {"turns": 1}


def test_run_to_end_folds_what_run_folds() -> None:
    """Against the example agent, ``run_to_end`` leaves the thread as iterating ``run()``
    does; the new messages are the conversation's less the input (activities included)."""
    with serve(scripted_app) as url:
        with HttpAgent(url, thread_id="t1") as iterated:
            list(iterated.run("go", run_id="r1"))
        with HttpAgent(url, thread_id="t1") as agent:
            result = agent.run_to_end("go", run_id="r1")
    assert agent.conversation.to_json()["state"] == iterated.conversation.to_json()["state"]
    assert [m.id for m in result.new_messages] == [
        m.id for m in agent.conversation.messages if m.role != "user"
    ]
    assert texts(agent.conversation)[1:] == texts(iterated.conversation)[1:]
    assert any(m.role == "activity" for m in result.new_messages)
    assert result.state == agent.conversation.state_json()
    assert [r.status for r in agent.runs] == [r.status for r in iterated.runs] == ["succeeded"]


def test_the_result_is_independent_of_the_thread() -> None:
    """The result's state is a copy: changing it changes neither the thread nor the
    next run's input."""
    echo = Echo()
    with serve(echo.app) as url, HttpAgent(url) as agent:
        result = agent.run_to_end("hi")
        result.state["turns"] = 99
        agent.run_to_end("again")
    assert echo.inputs[1].state == {"turns": 1}


def test_run_to_end_gives_the_run_finished_result() -> None:
    """``result`` is the value RUN_FINISHED carried."""
    events = [RUN_STARTED, {**RUN_FINISHED, "result": {"answer": 42}}]
    with serve(scripted(events)) as url, HttpAgent(url) as agent:
        result = agent.run_to_end("hi")
    assert result.result == {"answer": 42} and result.succeeded


def test_an_agents_run_error_is_a_failed_result() -> None:
    """A run the agent ends with RUN_ERROR is returned, not raised (as ``run()`` yields
    it): status ``failed``, the RUN_ERROR in the record, what the run said kept."""
    events = [
        RUN_STARTED,
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "partial"},
        {"type": "RUN_ERROR", "message": "model overloaded", "code": "overloaded"},
    ]
    with serve(scripted(events)) as url, HttpAgent(url) as agent:
        result = agent.run_to_end("hi")
    assert result.status == "failed" and not result.succeeded
    assert result.record.error is not None and result.record.error.code == "overloaded"
    assert [m.content for m in result.new_messages] == ["partial"]


def test_a_broken_exchange_raises_and_leaves_the_thread() -> None:
    """A non-2xx answer or a truncated stream raises from ``run_to_end``, as from
    ``run()``; the conversation is the one from before."""
    with (
        serve(scripted([], status=503)) as url,
        HttpAgent(url) as agent,
        pytest.raises(HttpStatusError),
    ):
        agent.run_to_end("hi")
    assert texts(agent.conversation) == []
    with (
        serve(scripted([RUN_STARTED])) as url,
        HttpAgent(url) as agent,
        pytest.raises(ProtocolError) as caught,
    ):
        agent.run_to_end("hi")
    assert caught.value.code == "stream.truncated"
    assert texts(agent.conversation) == [] and agent.runs[-1].status == "failed"


@pytest.mark.parametrize("transport", ["sse", "jsonl"])
async def test_async_run_to_end(transport: str) -> None:
    """``await AsyncHttpAgent.run_to_end(...)`` is the same, for asyncio."""
    echo = Echo()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=echo.app))
    async with client, AsyncHttpAgent("http://agent/", client=client, transport=transport) as agent:
        first = await agent.run_to_end("hello")
        second = await agent.run_to_end("again")
    assert [m.content for m in first.new_messages] == ["You said: hello"]
    assert second.state == {"turns": 2} and second.succeeded
    assert [run.status for run in agent.runs] == ["succeeded", "succeeded"]


# ---- interrupts: refused locally, answered with resume -------------------------------------


def test_an_interrupted_run_leaves_its_interrupts_open_on_the_thread() -> None:
    """The result of an interrupted run, and the thread, hold the open interrupts (the
    same object: answering one answers the other)."""
    approval = Approval()
    with serve(approval) as url, HttpAgent(url) as agent:
        result = agent.run_to_end("Email the report to Ann")
    assert result.status == "interrupted"
    assert result.interrupts is agent.interrupts
    assert result.interrupts.ids == ("send-email",)
    assert result.interrupts.get("send-email").tool_call_id == "tc-1"
    assert result.interrupts.run_id == result.record.run_id
    assert [m.content for m in result.new_messages] == ["I need your approval to send the email."]


def test_a_run_leaving_an_interrupt_unanswered_is_refused_before_sending() -> None:
    """With interrupts open, a run whose ``resume`` does not answer each is refused by
    the call itself (``resume.uncovered``, naming the ids); no request is sent."""
    with recorded_agent(Approval()) as (agent, sent):
        agent.run_to_end("Email the report to Ann")
        assert sent == ["POST"]
        for call in (
            lambda: agent.run_to_end("hurry up"),
            lambda: agent.run("hurry up"),
            lambda: agent.run_to_end(resume=[]),
        ):
            with pytest.raises(UsageError) as caught:
                call()
            assert caught.value.code == "resume.uncovered"
            assert "'send-email'" in str(caught.value)
        assert "resume=agent.interrupts" in str(caught.value)
        with pytest.raises(UsageError) as caught:
            agent.run_to_end(resume=agent.interrupts)  # nothing answered yet
        assert caught.value.code == "resume.uncovered"
        assert sent == ["POST"]
        assert len(agent.runs) == 1


def test_a_hand_built_resume_list_is_held_to_the_open_interrupts() -> None:
    """A resume list built by hand is checked against what the thread's last run left
    open (an unknown id, a missing one, a duplicate), before any request."""
    with recorded_agent(Approval()) as (agent, sent):
        agent.run_to_end("Email the report to Ann")
        cases = {
            "resume.unknown-interrupt": [
                schema.ResumeEntry(interrupt_id="other", status="cancelled")
            ],
            "resume.duplicate": [schema.ResumeEntry(interrupt_id="send-email", status="cancelled")]
            * 2,
        }
        for code, entries in cases.items():
            with pytest.raises(UsageError) as caught:
                agent.run_to_end(resume=entries)
            assert caught.value.code == code
        assert sent == ["POST"]
        ok = [schema.ResumeEntry(interrupt_id="send-email", status="resolved", payload=True)]
        assert agent.run_to_end(resume=ok).succeeded
        assert sent == ["POST", "POST"]


def test_an_expired_interrupt_can_only_be_cancelled() -> None:
    """Resolving an interrupt judged expired is refused before sending (as the reference
    client refuses it); cancelling it continues the thread."""
    approval = Approval(expires_at="2000-01-01T00:00:00Z")
    with recorded_agent(approval) as (agent, sent):
        agent.run_to_end("Email the report to Ann")
        late = [schema.ResumeEntry(interrupt_id="send-email", status="resolved", payload=True)]
        with pytest.raises(UsageError) as caught:
            agent.run_to_end(resume=late)
        assert caught.value.code == "resume.expired" and "'send-email'" in str(caught.value)
        assert sent == ["POST"]
        agent.interrupts.cancel("send-email")
        result = agent.run_to_end(resume=agent.interrupts)
    assert result.result == {"sent": False}
    assert sent == ["POST", "POST"]


def test_answering_the_interrupts_continues_the_thread() -> None:
    """The documented way: resolve (or cancel) each open interrupt, pass them as
    ``resume``; the agent receives the answers and the thread has nothing open after."""
    approval = Approval()
    with serve(approval) as url, HttpAgent(url) as agent:
        asked = agent.run_to_end("Email the report to Ann")
        asked.interrupts.resolve("send-email", {"approved": True})
        done = agent.run_to_end(resume=asked.interrupts)
    resume = approval.inputs[-1].resume
    assert resume is not None
    assert [(e.interrupt_id, e.status, e.payload) for e in resume] == [
        ("send-email", "resolved", {"approved": True})
    ]
    assert done.status == "succeeded" and done.result == {"sent": True}
    assert len(agent.interrupts) == 0 and len(done.interrupts) == 0
    assert [m.content for m in done.new_messages] == ["Sent."]


def test_a_failed_resumed_run_keeps_the_interrupts_and_their_answers() -> None:
    """A resumed run whose stream breaks is not adopted: the interrupts stay open with
    the answers recorded, so the same ``resume`` can be sent again."""
    approval = Approval()
    with serve(approval) as url, HttpAgent(url) as agent:
        agent.run_to_end("Email the report to Ann")
        agent.interrupts.resolve("send-email", {"approved": True})
        approval.truncate = True
        with pytest.raises(ProtocolError):
            agent.run_to_end(resume=agent.interrupts)
        assert agent.interrupts.ids == ("send-email",)
        with pytest.raises(UsageError):
            agent.run_to_end("anything else")
        done = agent.run_to_end(resume=agent.interrupts)
    assert done.result == {"sent": True}


def test_a_thread_built_from_a_conversation_knows_of_no_interrupt() -> None:
    """A thread given only a conversation has nothing open (the conversation does not
    say what a run asked): runs are not refused locally."""
    agent = HttpAgent("http://127.0.0.1:1/agent", conversation=Conversation())
    with agent:
        assert isinstance(agent.interrupts, OpenInterrupts) and len(agent.interrupts) == 0


async def test_async_refusal_sends_nothing() -> None:
    """``AsyncHttpAgent`` refuses the same way, before its transport sees a request."""
    transport = RecordingTransport(Approval())
    client = httpx.AsyncClient(transport=transport)
    async with client, AsyncHttpAgent("http://agent/", client=client) as agent:
        asked = await agent.run_to_end("Email the report to Ann")
        assert len(transport.requests) == 1
        with pytest.raises(UsageError) as caught:
            await agent.run_to_end("hurry up")
        assert caught.value.code == "resume.uncovered"
        with pytest.raises(UsageError):
            agent.run("hurry up")
        assert len(transport.requests) == 1
        asked.interrupts.resolve("send-email", {"approved": True})
        done = await agent.run_to_end(resume=asked.interrupts)
    assert done.result == {"sent": True} and len(transport.requests) == 2


# ---- the client authors' guide ------------------------------------------------------------------

GUIDE = "docs/guides/client-authors.md"


def test_guide_run_to_end_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """The guide's one-call block runs as written and prints what the guide says."""
    run_doc_block(GUIDE, "A whole run in one call")
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["succeeded ['You said: hello'] {'turns': 1} {'tokens': 3}"]
    assert lines[0] in said(GUIDE, "A whole run in one call")


def test_guide_interrupts_over_http_example_runs_as_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The guide's interrupts-over-HTTP block runs as written: the run is interrupted,
    the unanswered run refused locally, the answered one succeeds."""
    namespace = run_doc_block(GUIDE, "Interrupts over HTTP")
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["interrupted ('send-email',)", "resume.uncovered", "succeeded ['Sent.'] 0"]
    assert all(line in said(GUIDE, "Interrupts over HTTP") for line in lines)
    assert namespace["asked"] == {}


# ---- checked against the thread by default; check=False opts out (issue 25) -----------------

CONFIRM = schema.Tool(name="confirm", description="Ask the user to confirm", parameters={})


class Confirming:
    """An agent that calls the client's ``confirm`` tool whenever its input declares it."""

    def __init__(self) -> None:
        self.inputs: list[schema.RunAgentInput] = []
        self.app = agent_app(self.handler)

    async def handler(self, run_input: schema.RunAgentInput, producer: RunProducer) -> None:
        self.inputs.append(run_input)
        producer.run_started()
        if any(tool.name == "confirm" for tool in run_input.tools):
            call_id = f"call-{len(self.inputs)}"
            producer.tool_call("confirm", tool_call_id=call_id, args={"what": "send"}).end()
            producer.run_finished(list_pending=True)
            return
        producer.text("Done.")
        producer.run_finished()


def test_a_call_to_the_last_runs_tool_must_be_answered_before_sending() -> None:
    """The previous run declared ``confirm`` and the agent called it: the next run is
    refused until it answers the call, even though it declares no tools itself; with
    ``check=False`` it goes out as built."""
    confirming = Confirming()
    with recorded_agent(confirming.app) as (agent, sent):
        agent.run_to_end("Send it", tools=[CONFIRM])
        with pytest.raises(UsageError) as caught:
            agent.run_to_end("go on")
        assert caught.value.code == "toolcall.unanswered" and "'call-1'" in str(caught.value)
        assert sent == ["POST"]
        answer = schema.ToolMessage(id="t-1", tool_call_id="call-1", content="yes")
        assert agent.run_to_end("go on", tool_results=[answer]).succeeded
        assert [m.role for m in confirming.inputs[-1].messages] == [
            "user", "assistant", "tool", "user"
        ]  # fmt: skip
    with recorded_agent(confirming.app) as (agent, sent):
        agent.run_to_end("Send it", tools=[CONFIRM])
        assert agent.run_to_end("go on", check=False).succeeded
        assert [m.role for m in confirming.inputs[-1].messages] == ["user", "assistant", "user"]
        assert sent == ["POST", "POST"]


def test_check_false_sends_a_resume_the_thread_would_refuse() -> None:
    """``check=False`` opts out of the thread's interrupt record: the request goes out and
    the agent, which keeps its own record, answers 400."""
    with recorded_agent(Approval()) as (agent, sent):
        agent.run_to_end("Email the report to Ann")
        with pytest.raises(HttpStatusError) as caught:
            agent.run_to_end("hurry up", check=False)
        assert caught.value.status == 400
        assert sent == ["POST", "POST"]


def test_a_thread_made_from_an_interrupted_conversation_holds_its_interrupts() -> None:
    """``conversation=`` from a consumer whose last run ended interrupted: the thread's
    interrupts are that run's, and a run must answer them before anything is sent."""
    approval = Approval()
    with serve(approval) as url:
        with HttpAgent(url) as first:
            first.run_to_end("Email the report to Ann")
        with recorded_agent(approval, conversation=first.conversation) as (agent, sent):
            assert agent.interrupts.ids == ("send-email",)
            with pytest.raises(UsageError) as caught:
                agent.run_to_end("hurry up")
            assert caught.value.code == "resume.uncovered"
            assert "resume=agent.interrupts" in str(caught.value) and sent == []

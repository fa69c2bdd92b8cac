"""The HTTP agent client (issue 10): runs of one thread against agents served by uvicorn,
over real sockets, in SSE and JSON Lines, sync and async."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from agui_scripted_agent import app as scripted_app

from agentproto import ProtocolError, SchemaError, UsageError
from agentproto.agui import (
    AsyncHttpAgent,
    Consumer,
    Conversation,
    HttpAgent,
    dump_event,
    quirks,
    schema,
)
from agentproto.agui._protocol.encoding import JSONL_CONTENT_TYPE
from tests.agui.http_peers import RUN_FINISHED, RUN_STARTED, Echo, scripted
from tests.agui.live_server import recording, serve
from tests.docblocks import doc_block, run_doc_block, said

ROOT = Path(__file__).resolve().parents[2]


def texts(conversation: Conversation) -> list[tuple[str, Any]]:
    return [(m.role, getattr(m, "content", None)) for m in conversation.messages]


# ---- a thread of runs ----------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["sse", "jsonl"])
def test_two_runs_keep_the_thread(transport: str) -> None:
    """The second run's input carries the first run's messages and state, the thread
    id stays, the run ids differ, and the conversation holds both turns."""
    echo = Echo()
    with serve(echo.app) as url, HttpAgent(url, transport=transport) as agent:
        first = list(agent.run("hello"))
        second = list(agent.run("again", run_id="run-b"))
    assert first[0].type == "RUN_STARTED" and first[-1].type == "RUN_FINISHED"
    assert second[0].run_id == "run-b"
    one, two = echo.inputs
    assert one.thread_id == two.thread_id == agent.thread_id
    assert one.run_id != two.run_id == "run-b"
    assert [m.role for m in one.messages] == ["user"]
    assert [m.role for m in two.messages] == ["user", "assistant", "user"]
    assert two.state == {"turns": 1}
    assert texts(agent.conversation) == [
        ("user", "hello"),
        ("assistant", "You said: hello"),
        ("user", "again"),
        ("assistant", "You said: again"),
    ]
    assert agent.conversation.state == {"turns": 2}
    assert [run.status for run in agent.runs] == ["succeeded", "succeeded"]
    assert agent.diagnostics == []


@pytest.mark.parametrize(
    ("transport", "accept"),
    [
        ("sse", "text/event-stream"),
        ("jsonl", f"{JSONL_CONTENT_TYPE}, text/event-stream;q=0.5"),
    ],
)
def test_request_headers_and_transport(transport: str, accept: str) -> None:
    """The client POSTs JSON with the Accept of its transport (and the caller's
    headers); the server answers in that transport and the client reads it."""
    echo = Echo()
    with (
        serve(echo.app) as url,
        HttpAgent(url, transport=transport, headers={"Authorization": "Bearer x"}) as agent,
    ):
        list(agent.run("hi"))
    headers = echo.headers[0]
    assert headers["accept"] == accept
    assert headers["content-type"] == "application/json"
    assert headers["authorization"] == "Bearer x"
    assert agent.runs[-1].succeeded


def test_events_are_the_verified_typed_events() -> None:
    """What ``run`` yields is what a Consumer fed the same bytes delivers."""
    recorded: list[bytes] = []
    with serve(recording(scripted_app, recorded)) as url, HttpAgent(url, thread_id="t1") as agent:
        events = list(agent.run(run_id="r1"))
    consumer = Consumer(run_input={"threadId": "t1", "runId": "r1", "messages": []})
    expected = [e for chunk in recorded for e in consumer.feed_bytes(chunk)] + consumer.close()
    assert [dump_event(e) for e in events] == [dump_event(e) for e in expected]
    assert agent.conversation.to_json() == consumer.conversation.to_json()


def test_activities_stay_in_the_thread_but_out_of_the_input() -> None:
    """Activity messages are not sent in the next input, yet the thread's conversation
    still holds them after the next run."""
    echo = Echo()
    with serve(scripted_app) as scripted_url, serve(echo.app) as echo_url:
        with HttpAgent(scripted_url) as first:
            list(first.run())
        assert len(first.conversation.activities) == 1
        with HttpAgent(echo_url, conversation=first.conversation) as agent:
            list(agent.run("next"))
    assert all(m.role != "activity" for m in echo.inputs[0].messages)
    assert len(echo.inputs[0].messages) == len(first.conversation.messages) - 1 + 1
    assert agent.conversation.activities == first.conversation.activities
    assert agent.conversation.messages[-1].content == "You said: next"


def test_options_pass_through_to_next_run_input() -> None:
    """Tools, context, forwarded props and typed messages reach the agent as given."""
    echo = Echo()
    tool = schema.Tool(name="lookup", description="look it up", parameters={"type": "object"})
    context = schema.Context(description="locale", value="fr")
    mine = schema.UserMessage(id="u-1", content="typed")
    with serve(echo.app) as url, HttpAgent(url) as agent:
        list(agent.run(mine, tools=[tool], context=[context], forwarded_props={"k": [1]}))
    received = echo.inputs[0]
    assert received.tools == [tool] and received.context == [context]
    assert received.forwarded_props == {"k": [1]}
    assert received.messages == [mine]
    assert received.protocol_version == "1.0"


def test_bad_input_is_refused_before_anything_is_sent() -> None:
    """A bad option raises from ``run()`` itself, and no request is made."""
    echo = Echo()
    with serve(echo.app) as url, HttpAgent(url) as agent:
        with pytest.raises(UsageError) as caught:
            agent.run("x", protocol_version="draft")
        assert caught.value.code == "version.not-declarable"
        with pytest.raises(UsageError, match="Message or text"):
            agent.run(42)  # type: ignore[arg-type]
        with pytest.raises(SchemaError):
            agent.run(schema.UserMessage(id="u", content=3))  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="thread_id"):
            agent.run(thread_id="other")
        with pytest.raises(UsageError) as caught:
            agent.run(
                schema.UserMessage(id="u", content="a"), schema.UserMessage(id="u", content="b")
            )
        assert caught.value.code == "http.duplicate-id"
    assert echo.headers == [] and agent.runs == []


def test_one_run_at_a_time() -> None:
    """A second run of a thread cannot start while one is streaming, nor run from an
    input built before another run settled; the thread works on afterwards."""
    echo = Echo()
    with serve(echo.app) as url, HttpAgent(url) as agent:
        running = agent.run("one")
        next(running)
        with pytest.raises(UsageError) as caught:
            agent.run("two")
        assert caught.value.code == "http.run-in-progress"
        list(running)
        early = agent.run("built")
        list(agent.run("three"))
        with pytest.raises(UsageError) as caught:
            next(early)
        assert caught.value.code == "http.stale-run"
    assert [t for r, t in texts(agent.conversation) if r == "user"] == ["one", "three"]


def test_run_error_is_an_event_and_settles_the_thread() -> None:
    """A run the agent ends with RUN_ERROR is yielded, not raised: the run is failed,
    the conversation takes what the run said."""
    events = [
        RUN_STARTED,
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "partial"},
        {"type": "RUN_ERROR", "message": "model overloaded", "code": "overloaded"},
    ]
    with serve(scripted(events)) as url, HttpAgent(url) as agent:
        types = [e.type for e in agent.run("hi")]
    assert types[-1] == "RUN_ERROR"
    assert agent.runs[-1].status == "failed"
    assert agent.runs[-1].error is not None
    assert texts(agent.conversation) == [("user", "hi"), ("assistant", "partial")]


def test_a_given_client_is_reused_and_left_open() -> None:
    """An ``httpx.Client`` given to the agent carries the requests and stays open."""
    echo = Echo()
    seen: list[str] = []
    with serve(echo.app) as url:
        client = httpx.Client(event_hooks={"request": [lambda r: seen.append(r.method)]})
        with HttpAgent(url, client=client) as agent:
            list(agent.run("hi"))
        assert not client.is_closed
        client.close()
    assert seen == ["POST"]


def test_bad_options_are_refused() -> None:
    """Options the client cannot honour are usage errors at construction."""
    with pytest.raises(UsageError, match="transport"):
        HttpAgent("http://127.0.0.1:1/agent", transport="xml")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="run_input"):
        HttpAgent("http://127.0.0.1:1/agent", consumer_options={"run_input": {}})
    for bad in (0, True, "5"):
        with pytest.raises(UsageError, match="run_timeout"):
            HttpAgent("http://127.0.0.1:1/agent", run_timeout=bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="URL"):
        HttpAgent("http://[::1/agent")


def test_middleware_factory_gives_each_run_fresh_repairs() -> None:
    """``middleware`` is called once per run; a LangGraph stream is then repaired each
    time (strictly, the mismatched RUN_FINISHED fails the run)."""
    events = [RUN_STARTED, {**RUN_FINISHED, "runId": "019cd777"}]
    made: list[quirks.LangGraphRunId] = []

    def fresh() -> list[quirks.LangGraphRunId]:
        made.append(quirks.LangGraphRunId())
        return made[-1:]

    with serve(scripted(events)) as url:
        with HttpAgent(url, middleware=fresh) as agent:
            list(agent.run("one"))
            list(agent.run("two"))
        with HttpAgent(url) as strict, pytest.raises(ProtocolError):
            list(strict.run("one"))
    assert len(made) == 2 and made[0] is not made[1]
    assert [r.status for r in agent.runs] == ["succeeded", "succeeded"]
    assert [d.subject for d in agent.diagnostics] == ["langgraph-run-id"] * 2
    with pytest.raises(UsageError, match="factory"):
        HttpAgent(url, consumer_options={"middleware": made})


# ---- async -------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["sse", "jsonl"])
async def test_async_two_runs_keep_the_thread(transport: str) -> None:
    """The same thread rules with ``AsyncHttpAgent``."""
    echo = Echo()
    with serve(echo.app) as url:
        async with AsyncHttpAgent(url, transport=transport) as agent:
            first = [e.type async for e in agent.run("hello")]
            [e async for e in agent.run("again")]
    assert first[0] == "RUN_STARTED" and first[-1] == "RUN_FINISHED"
    assert [m.role for m in echo.inputs[1].messages] == ["user", "assistant", "user"]
    assert echo.inputs[1].state == {"turns": 1}
    assert agent.conversation.state == {"turns": 2}
    assert [run.status for run in agent.runs] == ["succeeded", "succeeded"]


async def test_async_runs_of_two_threads_run_concurrently() -> None:
    """Two threads (two agents) stream at the same time on one event loop."""
    echo = Echo()
    with serve(echo.app) as url:
        async with AsyncHttpAgent(url) as a, AsyncHttpAgent(url) as b:

            async def one(agent: AsyncHttpAgent, text: str) -> None:
                async for _ in agent.run(text):
                    await asyncio.sleep(0)

            await asyncio.gather(one(a, "from a"), one(b, "from b"))
    assert a.conversation.messages[-1].content == "You said: from a"
    assert b.conversation.messages[-1].content == "You said: from b"


def test_protocol_violation_is_raised_after_the_events_before_it() -> None:
    """A stream that breaks a rule raises ProtocolError after delivering what came before
    it; the thread's conversation is left as it was."""
    events = [RUN_STARTED, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope", "delta": "x"}]
    with serve(scripted(events)) as url, HttpAgent(url) as agent:
        got = []
        with pytest.raises(ProtocolError):
            for event in agent.run("hi"):
                got.append(event.type)
    assert got == ["RUN_STARTED"]
    assert agent.conversation.messages == ()
    assert agent.runs[-1].status == "failed"


def test_several_runs_in_one_stream_are_all_kept() -> None:
    """A stream may hold runs one after another; each run's record is kept."""
    events = [RUN_STARTED, RUN_FINISHED, {**RUN_STARTED, "runId": "extra"}]
    events.append({**RUN_FINISHED, "runId": "extra"})
    with serve(scripted(events)) as url, HttpAgent(url) as agent:
        list(agent.run("hi"))
    assert [r.run_id for r in agent.runs][1] == "extra"
    assert all(r.succeeded for r in agent.runs)


# ---- the client authors' guide ------------------------------------------------------------------

GUIDE = "docs/guides/client-authors.md"


def test_guide_example_runs_as_written(tmp_path: Path) -> None:
    """The guide's HTTP agent client block runs as written and prints what it says."""
    (tmp_path / "example.py").write_text(doc_block(GUIDE, "HTTP agent client"), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "sdk")}
    done = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:6] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert lines[6:] == [
        "['hello', 'You said: hello', 'again', 'You said: again']",
        "{'turns': 2} ['succeeded', 'succeeded']",
    ]
    assert all(line in said(GUIDE, "HTTP agent client") for line in lines[6:])


def test_the_guides_client_consumes_the_guides_agent() -> None:
    """The first block of the client authors' guide ("Client authors: consume a stream
    into state"), which needs an agent on port 8000, consumes the run of the agent
    authors' guide ("Agent authors: produce and serve a run", docs/guides/agent-authors.md)
    served by uvicorn: the block runs as written but for the port."""
    agent = run_doc_block("docs/guides/agent-authors.md", "Agent authors: produce and serve a run")
    block = doc_block(GUIDE, "Client authors: consume a stream into state")
    assert block.count("http://127.0.0.1:8000/agent") == 1
    with serve(agent["app"]) as url:
        namespace: dict[str, Any] = {}
        exec(block.replace("http://127.0.0.1:8000", url), namespace)
    consumer = namespace["consumer"]
    assert consumer.verifier.runs[-1].status == "succeeded"
    assert consumer.conversation.state_json() == {"status": "done"}
    assert [m.role for m in consumer.conversation.messages] == ["assistant", "assistant", "tool"]
    assert consumer.diagnostics == []

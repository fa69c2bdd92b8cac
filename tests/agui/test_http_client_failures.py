"""The HTTP agent client when things go wrong (issue 10): error answers, wrong types,
truncated and broken streams, stalled servers, cancellation; each over real sockets,
each leaving the thread consistent."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import aclosing

import httpx
import pytest

from agentproto import ProtocolError
from agentproto.agui import (
    AsyncHttpAgent,
    HttpAgent,
    HttpError,
    HttpStatusError,
    HttpTimeoutError,
    agent_app,
)
from tests.agui.http_peers import (
    RUN_FINISHED,
    RUN_STARTED,
    Echo,
    Endless,
    raw_http,
    scripted,
    stalling,
    unaccepting,
)
from tests.agui.live_server import serve

QUICK = httpx.Timeout(5.0, read=0.5, connect=0.5)


def settled_once(url: str) -> HttpAgent:
    """An agent of ``url`` that has had one successful run (against an Echo agent)."""
    agent = HttpAgent(url, timeout=QUICK)
    list(agent.run("first"))
    assert agent.runs[-1].succeeded
    return agent


# ---- answers that are not a stream ---------------------------------------------------------


def test_status_error_carries_status_and_json_body() -> None:
    """A non-2xx answer is HttpStatusError with the status and the JSON error body."""
    body = json.dumps({"error": "overloaded", "detail": "try later"}).encode()
    app = scripted([], status=503, content_type="application/json", raw=body)
    with serve(app) as url, HttpAgent(url) as agent, pytest.raises(HttpStatusError) as caught:
        list(agent.run("hi"))
    error = caught.value
    assert error.status == 503 and error.code == "http.status" and error.url == url
    assert error.body == {"error": "overloaded", "detail": "try later"}
    assert "503" in str(error) and "overloaded" in str(error)
    assert agent.runs == [] and agent.conversation.messages == ()


def test_agent_app_refusal_is_reported_with_its_json_body() -> None:
    """agent_app's own refusal (413: the body is over its limit) reaches the caller
    with the JSON body naming the limit."""
    app = agent_app(Echo().handler, max_body_bytes=16)
    with serve(app) as url, HttpAgent(url) as agent, pytest.raises(HttpStatusError) as caught:
        list(agent.run("hi"))
    assert caught.value.status == 413
    assert caught.value.body["error"] == "body-too-large"
    assert caught.value.body["limit"] == "max_body_bytes"


def test_text_error_answer_is_kept_as_text() -> None:
    """A non-JSON error body is kept as text; ``body`` is None."""
    app = scripted([], status=404, content_type="text/plain", raw=b"no agent here")
    with serve(app) as url, HttpAgent(url) as agent, pytest.raises(HttpStatusError) as caught:
        list(agent.run("hi"))
    assert caught.value.status == 404 and caught.value.body is None
    assert caught.value.text == "no agent here"


def test_redirect_is_reported_with_its_location() -> None:
    """A redirect (Starlette's mount answers ``POST /agent`` with 307) is not followed by
    the agent's own client: HttpStatusError names where it points."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    app = Starlette(routes=[Mount("/agent", app=Echo().app)])
    with serve(app) as url, HttpAgent(url + "/agent") as agent:
        with pytest.raises(HttpStatusError) as caught:
            list(agent.run("hi"))
        assert caught.value.status == 307
        assert f"location: {url}/agent/" in str(caught.value)
        assert agent.runs == [] and agent.conversation.messages == ()
        agent.url = url + "/agent/"  # where it points: the thread runs on
        list(agent.run("hi"))
    assert [m.role for m in agent.conversation.messages] == ["user", "assistant"]


def test_wrong_content_type_is_a_protocol_error() -> None:
    """A 2xx answer that is neither SSE nor JSON Lines is ProtocolError http.content-type."""
    app = scripted([], content_type="application/json", raw=b'{"ok": true}')
    with serve(app) as url, HttpAgent(url) as agent, pytest.raises(ProtocolError) as caught:
        list(agent.run("hi"))
    assert caught.value.code == "http.content-type"
    assert "application/json" in str(caught.value)
    assert agent.runs == []


def test_connect_failure() -> None:
    """Nothing listening: HttpError http.connect-failed."""
    with unaccepting() as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
    with HttpAgent(f"http://127.0.0.1:{port}/agent") as agent, pytest.raises(HttpError) as caught:
        list(agent.run("hi"))
    assert caught.value.code == "http.connect-failed"


# ---- streams that end too early ------------------------------------------------------------


def test_truncated_stream_fails_the_run_and_keeps_the_conversation() -> None:
    """A response that ends before RUN_FINISHED is ProtocolError stream.truncated, the
    run failed; the conversation is the one from before the run."""
    echo = Echo()
    events = [RUN_STARTED, {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}]
    with serve(echo.app) as good, serve(scripted(events)) as cut, settled_once(good) as agent:
        before = agent.conversation.to_json()
        agent.url = cut
        got = []
        with pytest.raises(ProtocolError) as caught:
            for event in agent.run("second"):
                got.append(event.type)
    assert caught.value.code == "stream.truncated"
    assert got == ["RUN_STARTED", "TEXT_MESSAGE_START"]
    assert agent.conversation.to_json() == before
    assert [r.status for r in agent.runs] == ["succeeded", "failed"]
    assert agent.runs[-1].violation is caught.value
    assert agent.last_consumer is not None
    assert [m.id for m in agent.last_consumer.conversation.messages][-1] == "m"


CUT = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 4000\r\n\r\n"
    b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n'
)


def test_broken_connection_mid_run_is_a_truncation_with_its_cause() -> None:
    """A connection that breaks mid-run is stream.truncated, chaining httpx's error."""
    with (
        raw_http(CUT) as url,
        HttpAgent(url, thread_id="t") as agent,
        pytest.raises(ProtocolError) as caught,
    ):
        list(agent.run("hi", run_id="r"))
    assert caught.value.code == "stream.truncated"
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)
    assert agent.runs[-1].status == "failed" and agent.conversation.messages == ()


def test_broken_connection_after_the_run_ended_is_only_a_warning() -> None:
    """A connection that breaks after RUN_FINISHED loses nothing: the run counts, with an
    http.connection-lost diagnostic."""
    finished = b'data: {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}\n\n'
    with raw_http(CUT + finished) as url, HttpAgent(url, thread_id="t") as agent:
        types = [e.type for e in agent.run("hi", run_id="r")]
    assert types == ["RUN_STARTED", "RUN_FINISHED"]
    assert agent.runs[-1].succeeded
    assert [d.code for d in agent.diagnostics] == ["http.connection-lost"]
    assert [m.role for m in agent.conversation.messages] == ["user"]


# ---- timeouts ------------------------------------------------------------------------------


def test_stalled_stream_is_a_read_timeout() -> None:
    """A server that goes silent mid-run makes the client fail the run after the read
    timeout, not hang; the conversation is unchanged."""
    with serve(stalling([RUN_STARTED])) as url, HttpAgent(url, timeout=QUICK) as agent:
        started = time.monotonic()
        with pytest.raises(HttpTimeoutError) as caught:
            list(agent.run("hi"))
        took = time.monotonic() - started
    assert caught.value.code == "http.read-timeout" and caught.value.timeout == 0.5
    assert isinstance(caught.value, TimeoutError)
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    assert took < 5
    assert agent.runs[-1].status == "failed" and agent.runs[-1].violation is caught.value
    assert agent.conversation.messages == ()


def test_silent_after_the_run_ended_is_only_a_warning() -> None:
    """A server that keeps the response open after RUN_FINISHED: the run counts once the
    read timeout ends the wait."""
    with serve(stalling([RUN_STARTED, RUN_FINISHED])) as url, HttpAgent(url, timeout=QUICK) as a:
        types = [e.type for e in a.run("hi")]
    assert types == ["RUN_STARTED", "RUN_FINISHED"]
    assert a.runs[-1].succeeded and [d.code for d in a.diagnostics] == ["http.connection-lost"]


def test_connect_timeout() -> None:
    """A server that never completes the connection: HttpTimeoutError http.connect-timeout."""
    with (
        unaccepting() as url,
        HttpAgent(url, timeout=QUICK) as agent,
        pytest.raises(HttpTimeoutError) as caught,
    ):
        list(agent.run("hi"))
    assert caught.value.code == "http.connect-timeout"
    assert agent.runs == []


def test_run_timeout_bounds_a_trickling_stream() -> None:
    """A server that sends keep-alive comments forever is cut by ``run_timeout``."""
    app = scripted([RUN_STARTED], trickle=0.05)
    with (
        serve(app) as url,
        HttpAgent(url, timeout=QUICK, run_timeout=0.5) as agent,
        pytest.raises(HttpTimeoutError) as caught,
    ):
        list(agent.run("hi"))
    assert caught.value.code == "http.run-timeout"
    assert agent.runs[-1].status == "failed"


async def test_async_stalled_stream_is_a_read_timeout() -> None:
    """The same read timeout with the async client."""
    with serve(stalling([RUN_STARTED])) as url:
        async with AsyncHttpAgent(url, timeout=QUICK) as agent:
            with pytest.raises(HttpTimeoutError) as caught:
                [e async for e in agent.run("hi")]
    assert caught.value.code == "http.read-timeout"
    assert agent.runs[-1].status == "failed"


# ---- cancellation --------------------------------------------------------------------------


def test_break_closes_the_response_and_cancels_the_run() -> None:
    """Leaving the loop mid-run closes the response (the server's handler stops), fails
    the run as http.cancelled and leaves the conversation as before; the thread runs on."""
    endless, echo = Endless(), Echo()
    with serve(echo.app) as good, serve(endless.app) as forever, settled_once(good) as agent:
        before = agent.conversation.to_json()
        agent.url = forever
        for event in agent.run("second"):
            if event.type == "TEXT_MESSAGE_CONTENT":
                break
        assert endless.stopped.wait(5)
        assert agent.conversation.to_json() == before
        run = agent.runs[-1]
        assert run.status == "failed" and isinstance(run.violation, HttpError)
        assert run.violation.code == "http.cancelled"
        agent.url = good
        list(agent.run("third"))
    assert agent.conversation.messages[-1].content == "You said: third"
    assert len(echo.inputs[1].messages) == 3  # first, its answer, third: not "second"


def test_break_after_the_run_ended_keeps_the_run() -> None:
    """Leaving the loop at RUN_FINISHED keeps the finished run in the conversation."""
    echo = Echo()
    with serve(echo.app) as url, HttpAgent(url) as agent:
        for event in agent.run("hi"):
            if event.type == "RUN_FINISHED":
                break
    assert agent.runs[-1].succeeded and len(agent.conversation.messages) == 2


async def test_cancelling_the_task_closes_the_response() -> None:
    """Cancelling the task that iterates an async run closes the response, fails the run
    as http.cancelled, keeps the conversation; the thread runs on."""
    endless, echo = Endless(), Echo()
    with serve(echo.app) as good, serve(endless.app) as forever:
        async with AsyncHttpAgent(forever) as agent:
            seen = asyncio.Event()

            async def consume() -> None:
                async for event in agent.run("hi"):
                    if event.type == "TEXT_MESSAGE_CONTENT":
                        seen.set()

            task = asyncio.create_task(consume())
            await asyncio.wait_for(seen.wait(), 5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await asyncio.to_thread(endless.stopped.wait, 5)
            assert agent.conversation.messages == ()
            assert agent.runs[-1].violation is not None
            assert getattr(agent.runs[-1].violation, "code", None) == "http.cancelled"
            agent.url = good
            [e async for e in agent.run("again")]
    assert [m.content for m in agent.conversation.messages] == ["again", "You said: again"]


async def test_async_break_inside_aclosing_closes_at_once() -> None:
    """Breaking out of ``aclosing(agent.run(...))`` closes the response right away."""
    endless = Endless()
    with serve(endless.app) as url:
        async with AsyncHttpAgent(url) as agent:
            async with aclosing(agent.run("hi")) as events:  # type: ignore[type-var]
                async for event in events:
                    if event.type == "TEXT_MESSAGE_CONTENT":
                        break
            assert agent.runs[-1].status == "failed"
            assert await asyncio.to_thread(endless.stopped.wait, 5)

"""Serving (issue 5 item 2): the ASGI response and ``agent_app`` under a real uvicorn."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from agui_scripted_agent import app as scripted_app
from agui_scripted_agent import scripted_events

from agentproto.agui import Consumer, Event, aconsume, consume, schema
from agentproto.agui._produce.producer import RunProducer
from agentproto.agui._protocol.encoding import (
    JSONL_CONTENT_TYPE,
    SSE_CONTENT_TYPE,
    encode_event_sse,
    encode_sse_stream,
    stream_headers,
)
from agentproto.agui.asgi import EventStreamResponse, agent_app, run_events
from tests.agui.live_server import serve

BODY: dict[str, Any] = {"threadId": "thread-9", "runId": "run-9", "messages": []}
TIMEOUT = httpx.Timeout(10.0)


def expected_fold() -> dict[str, Any]:
    """What the scripted events for BODY fold into (messages and state, wire JSON)."""
    consumer = Consumer(run_input=BODY)
    for event in scripted_events(RunProducer(BODY).run_input):
        consumer.feed_bytes(encode_event_sse(event))
    consumer.close()
    return consumer.conversation.to_json()


# ---- the scripted agent under uvicorn ----------------------------------------------------


def test_served_sse_consumed_with_httpx() -> None:
    """The scripted agent under uvicorn, read with httpx ``iter_bytes`` into ``consume``,
    folds into what the scripted events fold into; the headers are the stream headers."""
    with (
        serve(scripted_app) as url,
        httpx.Client(timeout=TIMEOUT) as client,
        client.stream("POST", url + "/agent", json=BODY) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"] == SSE_CONTENT_TYPE
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        consumer = consume(response.iter_bytes(), run_input=BODY)
    assert consumer.diagnostics == []
    assert consumer.verifier.runs[-1].succeeded
    assert consumer.conversation.to_json() == expected_fold()


async def test_served_sse_consumed_with_async_httpx() -> None:
    """The same with ``httpx.AsyncClient`` and ``aiter_bytes`` into ``aconsume``."""
    with serve(scripted_app) as url:
        async with (
            httpx.AsyncClient(timeout=TIMEOUT) as client,
            client.stream("POST", url, json=BODY) as response,
        ):
            consumer = await aconsume(response.aiter_bytes(), run_input=BODY)
    assert consumer.diagnostics == []
    assert consumer.conversation.to_json() == expected_fold()


def test_served_jsonl_when_accept_asks_for_it() -> None:
    """``Accept: application/jsonl`` gets JSON Lines with the same events."""
    with serve(scripted_app) as url, httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(url, json=BODY, headers={"accept": JSONL_CONTENT_TYPE})
    assert response.headers["content-type"] == JSONL_CONTENT_TYPE
    consumer = consume([response.content], run_input=BODY, transport="jsonl")
    assert consumer.conversation.to_json() == expected_fold()


@pytest.mark.parametrize(
    ("body", "error", "keyword", "location"),
    [
        ({"threadId": 1, "runId": "r", "messages": []}, "invalid-run-input", "type", "/threadId"),
        ({"threadId": "t", "messages": []}, "invalid-run-input", "required", ""),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "m", "role": "user", "content": 5}],
            },
            "invalid-run-input",
            None,
            "/messages/0",
        ),
        ([1, 2], "invalid-run-input", "type", ""),
        (b"{not json", "invalid-json", None, None),
    ],
)
def test_bad_run_input_is_a_400_naming_the_problem(
    body: Any, error: str, keyword: str | None, location: str | None
) -> None:
    """A body that is not a RunAgentInput gets 400 and a JSON body naming keyword and location."""
    with serve(scripted_app) as url, httpx.Client(timeout=TIMEOUT) as client:
        if isinstance(body, bytes):
            response = client.post(url, content=body)
        else:
            response = client.post(url, json=body)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    payload = response.json()
    assert payload["error"] == error and payload["detail"]
    if keyword is not None:
        assert payload["keyword"] == keyword
    if location is not None:
        assert payload["location"].startswith(location)


def test_unknown_input_fields_are_dropped_not_refused() -> None:
    """Unknown members of the run input are stripped (tolerant), not a 400."""
    with serve(scripted_app) as url, httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(url, json={**BODY, "newerField": {"x": 1}})
    assert response.status_code == 200
    assert consume([response.content], run_input=BODY).verifier.runs[-1].succeeded


def test_methods_other_than_post_are_refused() -> None:
    """GET gets 405 with ``allow: POST``."""
    with serve(scripted_app) as url, httpx.Client(timeout=TIMEOUT) as client:
        response = client.get(url)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_body_over_the_limit_is_refused() -> None:
    """A body larger than ``max_body_bytes`` gets 413."""
    small = agent_app(lambda run_input, producer: None, max_body_bytes=10)
    with serve(small) as url, httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(url, json=BODY)
    assert response.status_code == 413


# ---- handlers ------------------------------------------------------------------------------


def run_app(handler: Any) -> Consumer:
    """Serve ``agent_app(handler)``, POST BODY, and consume the response."""
    with serve(agent_app(handler)) as url, httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(url, json=BODY)
    assert response.status_code == 200
    return consume([response.content], run_input=BODY)


def test_handler_exception_ends_the_run_with_run_error() -> None:
    """A handler that raises mid-run gives the client a RUN_ERROR (not the exception text)."""

    async def handler(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()
        producer.text("partial")
        raise ValueError("secret detail")

    consumer = run_app(handler)
    run = consumer.verifier.runs[-1]
    assert run.status == "failed" and run.violation is None
    assert run.error is not None and run.error.code == "agent.exception"
    assert "secret" not in run.error.message


def test_handler_breaking_a_duty_ends_the_run_with_run_error() -> None:
    """A handler whose producer refuses an event (a bug) still ends the stream cleanly."""

    async def handler(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()
        producer.text_message_end("never-opened")

    consumer = run_app(handler)
    assert consumer.verifier.runs[-1].error is not None


def test_handler_returning_with_the_run_open_ends_it_with_run_error() -> None:
    """A handler that returns without RUN_FINISHED gets RUN_ERROR ``agent.unfinished``."""

    async def handler(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()

    error = run_app(handler).verifier.runs[-1].error
    assert error is not None and error.code == "agent.unfinished"


def test_async_generator_handler_yields_events() -> None:
    """An async generator handler's yielded events are emitted once, with those its
    producer emitted, in order."""

    async def handler(run_input: Any, producer: RunProducer) -> AsyncIterator[Any]:
        yield schema.RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
        yield producer.text_message_start("m")  # already emitted: not emitted twice
        producer.text_message_content("m", "hi")
        yield {"type": "TEXT_MESSAGE_END", "messageId": "m"}
        yield producer.run_finished()

    consumer = run_app(handler)
    assert consumer.diagnostics == []
    assert consumer.verifier.runs[-1].succeeded
    message = consumer.conversation.message("m")
    assert message is not None and message.content == "hi"


def test_plain_function_handler() -> None:
    """A plain function handler works too."""

    def handler(run_input: Any, producer: RunProducer) -> None:
        with producer.run():
            producer.text("sync")

    assert run_app(handler).verifier.runs[-1].succeeded


def test_handler_sees_the_checked_input() -> None:
    """The handler gets the typed run input, state included, as the producer's baseline."""
    seen: list[Any] = []

    async def handler(run_input: Any, producer: RunProducer) -> None:
        seen.append(run_input)
        with producer.run():
            producer.state_update({"n": 2})

    with serve(agent_app(handler)) as url, httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(url, json={**BODY, "state": {"n": 1}})
    assert seen[0].state == {"n": 1}
    consumer = consume([response.content], run_input={**BODY, "state": {"n": 1}})
    assert consumer.conversation.state_json() == {"n": 2}


# ---- client disconnect --------------------------------------------------------------------


def read_some_then_disconnect(url: str) -> None:
    """Open a stream, read a few bytes, and close the connection."""
    with httpx.Client(timeout=TIMEOUT) as client, client.stream("POST", url, json=BODY) as response:
        for chunk in response.iter_bytes():
            if chunk:
                break


def test_disconnect_cancels_the_handler() -> None:
    """When the client goes away mid-stream the handler is cancelled (its finally runs)."""
    stopped = threading.Event()

    async def handler(run_input: Any, producer: RunProducer) -> None:
        try:
            producer.run_started()
            tick = 0
            while True:
                producer.custom("tick", tick)
                tick += 1
                await asyncio.sleep(0.01)
        finally:
            stopped.set()

    with serve(agent_app(handler)) as url:
        read_some_then_disconnect(url)
        assert stopped.wait(5)


def test_disconnect_closes_an_async_generator() -> None:
    """EventStreamResponse over an async generator closes it (``aclose``) on disconnect."""
    stopped = threading.Event()

    async def events() -> AsyncIterator[Event]:
        try:
            yield schema.RunStartedEvent(thread_id="t", run_id="r")
            while True:
                yield schema.CustomEvent(name="tick", value=None)
                await asyncio.sleep(0.01)
        finally:
            stopped.set()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await EventStreamResponse(events())(scope, receive, send)

    with serve(app) as url:
        read_some_then_disconnect(url)
        assert stopped.wait(5)


def test_disconnect_closes_a_sync_generator() -> None:
    """A sync generator (iterated in a worker thread) is closed on disconnect too."""
    stopped = threading.Event()

    def events() -> Iterator[Event]:
        try:
            yield schema.RunStartedEvent(thread_id="t", run_id="r")
            while True:
                yield schema.CustomEvent(name="tick", value=None)
                stopped.wait(0.01)
        finally:
            stopped.set()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await EventStreamResponse(events(), transport="jsonl")(scope, receive, send)

    with serve(app) as url:
        read_some_then_disconnect(url)
        assert stopped.wait(5)


# ---- frameworks ---------------------------------------------------------------------------


def test_starlette_endpoints() -> None:
    """Starlette can return an EventStreamResponse (also after reading the request body),
    or stream ``encode_sse_stream`` with its own StreamingResponse."""
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def slow(run_input: Any, producer: RunProducer) -> None:
        with producer.run():
            for piece in ("a", "b", "c"):
                producer.text(piece)
                await asyncio.sleep(0.01)

    async def agent(request: Request) -> Any:
        run_input = RunProducer(await request.json()).run_input
        assert run_input is not None
        return EventStreamResponse(run_events(slow, run_input))

    async def direct(request: Request) -> Any:
        return EventStreamResponse(scripted_events())

    async def wrapped(request: Request) -> Any:
        return StreamingResponse(encode_sse_stream(scripted_events()), headers=stream_headers())

    app = Starlette(
        routes=[
            Route("/agent", agent, methods=["POST"]),
            Route("/direct", direct),
            Route("/wrapped", wrapped),
        ]
    )
    scripted_input = {"threadId": "thread-1", "runId": "run-1", "messages": []}
    with serve(app) as url, httpx.Client(timeout=TIMEOUT) as client:
        for path in ("/direct", "/wrapped"):
            response = client.get(url + path)
            assert response.headers["content-type"] == SSE_CONTENT_TYPE
            consumer = consume([response.content], run_input=scripted_input)
            assert consumer.diagnostics == [] and consumer.verifier.runs[-1].succeeded
        response = client.post(url + "/agent", json=BODY)
        consumer = consume([response.content], run_input=BODY)
        assert consumer.verifier.runs[-1].succeeded
        assert len(consumer.conversation.messages) == 3

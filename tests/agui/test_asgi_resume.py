"""Runs that outlive their connection (issue 26, item 1): ``agent_app(log=...)`` gives every
SSE frame a cursor, keeps the run in the event log, and answers a reconnection with exactly
the frames after its cursor, under a real uvicorn."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agui_scripted_agent import scripted_events, scripted_sse

from agentproto import StoreError
from agentproto._core.sse import SSEDecoder
from agentproto.agui import RunProducer, consume
from agentproto.agui.asgi import agent_app
from agentproto.stores import (
    EventLog,
    MemoryEventLog,
    RedisEventLog,
    Retention,
    SQLiteEventLog,
)
from tests.agui.live_server import serve
from tests.needs import redis_server

BODY: dict[str, Any] = {"threadId": "thread-r", "runId": "run-r", "messages": []}
TIMEOUT = httpx.Timeout(10.0)
EARLIER_ACTIVITY = {"id": "a0", "role": "activity", "activityType": "plan", "content": {"n": 0}}


def _log(kind: str, tmp_path: Path, retention: Retention | None = None) -> EventLog:
    if kind == "memory":
        return MemoryEventLog(retention)
    if kind == "sqlite":
        return SQLiteEventLog(tmp_path / "log.db", retention=retention)
    return RedisEventLog(redis_server(), prefix=f"t{uuid.uuid4().hex}", retention=retention)


def _handler_of_scripted(calls: list[str] | None = None) -> Any:
    """The scripted run as a handler (each run id it runs appended to ``calls``)."""

    async def handler(run_input: Any, producer: RunProducer) -> None:
        if calls is not None:
            calls.append(run_input.run_id)
        for event in scripted_events(run_input):
            producer.emit(event)
            await asyncio.sleep(0)

    return handler


def _scripted_app(log: EventLog, calls: list[str] | None = None, **options: Any) -> Any:
    return agent_app(_handler_of_scripted(calls), log=log, **options)


def _expected(body: dict[str, Any] = BODY, held: dict[str, Any] | None = None) -> dict[str, Any]:
    """The conversation of the uninterrupted run of ``body``, for a client that started
    from ``held`` (default: ``body``)."""
    run_input = RunProducer(body).run_input
    consumer = consume([scripted_sse(run_input)], run_input=held or body)
    return consumer.conversation.to_json()


def _frames(data: bytes) -> list[tuple[str | None, str]]:
    decoder = SSEDecoder()
    events = decoder.feed(data) + decoder.close()
    return [(event.id, event.data) for event in events]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def served(request: Any, tmp_path: Path) -> Iterator[str]:
    with serve(_scripted_app(_log(request.param, tmp_path))) as url:
        yield url


def test_every_frame_carries_a_distinct_cursor(served: str) -> None:
    """Each SSE frame has an ``id:``, all distinct, and the stream folds as the run does."""
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(served, json=BODY)
    frames = _frames(response.content)
    ids = [frame_id for frame_id, _ in frames]
    assert None not in ids and len(set(ids)) == len(ids) == len(scripted_events())
    consumer = consume([response.content], run_input=BODY)
    assert consumer.verifier.runs[-1].succeeded
    assert consumer.conversation.to_json() == _expected()


def _read_some(
    client: httpx.Client, url: str, count: int, body: dict[str, Any] = BODY, **kwargs: Any
) -> bytes:
    """The first ``count`` frames of a response, the connection then dropped."""
    taken = b""
    with client.stream("POST", url, json=body, **kwargs) as response:
        assert response.status_code == 200
        decoder = SSEDecoder()
        seen = 0
        for chunk in response.iter_raw():
            for part in _split_frames(chunk):
                taken += part
                seen += len(decoder.feed(part))
                if seen >= count:
                    return taken
    return taken


def _split_frames(chunk: bytes) -> list[bytes]:
    parts = chunk.split(b"\n\n")
    return [part + b"\n\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def test_a_reconnection_after_every_cut_point_loses_and_repeats_nothing(served: str) -> None:
    """Cut after each frame k, reconnect with ``Last-Event-ID``: the two halves are the
    uninterrupted stream, frame for frame, and fold into the same conversation."""
    with httpx.Client(timeout=TIMEOUT) as client:
        whole = client.post(served, json=BODY).content
        expected = _frames(whole)
        for k in range(1, len(expected)):
            first = _read_some(client, served, k)
            assert _frames(first) == expected[:k]
            last_id = expected[k - 1][0]
            assert last_id is not None
            rest = client.post(served, json=BODY, headers={"last-event-id": last_id}).content
            assert _frames(first + rest) == expected, k
    consumer = consume([first, rest], run_input=BODY)
    assert consumer.conversation.to_json() == _expected()


def test_a_second_post_of_the_same_run_attaches_instead_of_running_again(tmp_path: Path) -> None:
    """POSTing a run the log holds streams it from its start; the handler ran once."""
    calls: list[str] = []
    with serve(_scripted_app(MemoryEventLog(), calls)) as url, httpx.Client(timeout=TIMEOUT) as c:
        first = c.post(url, json=BODY).content
        second = c.post(url, json=BODY).content
    assert calls == ["run-r"]
    assert _frames(first) == _frames(second)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
def test_an_expired_cursor_is_answered_from_a_checkpoint(kind: str, tmp_path: Path) -> None:
    """With a log that keeps 8 frames, a client cut after any frame k comes back once the
    run is over: whatever its cursor (still held, or dropped), what it gets folds with
    what it had into the uninterrupted run's conversation, state and outcome; a dropped
    cursor is answered by ``agentproto.resync`` and snapshots, never a gap or a 410. The
    client holds an activity of an earlier run, which no run input carries: the resync
    neither drops it nor moves the run's own activity."""
    app = _scripted_app(_log(kind, tmp_path, Retention(max_frames=8)))
    resynced = 0
    count = len(scripted_events())
    with serve(app) as url, httpx.Client(timeout=TIMEOUT) as client:
        for k in range(count):
            body = {**BODY, "runId": f"run-{k}"}
            first = _read_some(client, url, k + 1, body)  # the start's cursor, then k events
            cursor = _frames(first)[-1][0]
            assert cursor is not None
            ids = {"threadId": body["threadId"], "runId": body["runId"]}
            client.get(url, params=ids)  # returns once the run is over: frames were dropped
            rest = client.post(url, json=body, headers={"last-event-id": cursor})
            assert rest.status_code == 200, (k, rest.text)
            resynced += b"agentproto.resync" in rest.content
            held = {**body, "messages": [EARLIER_ACTIVITY]}
            consumer = consume([first, rest.content], run_input=held)
            assert consumer.verifier.runs[-1].succeeded, k
            assert consumer.conversation.to_json() == _expected(body, held), k
            assert consumer.conversation.arguments_complete("call-1"), k
    assert resynced >= count // 2  # most cursors had expired: the fallback was taken


def test_a_reader_retention_passes_is_resynced_in_its_own_response() -> None:
    """A client too slow for a log that keeps 8 frames (big frames fill the socket while it
    sleeps; the run goes on without it) is not cut off: its response goes on with the
    resync and the frames after the checkpoint, and folds into the run's conversation."""
    piece = "x" * 200_000

    async def handler(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()
        for n in range(30):
            producer.text([piece], message_id=f"m{n}")
            await asyncio.sleep(0)
        producer.run_finished()

    app = agent_app(handler, log=MemoryEventLog(Retention(max_frames=8)))
    with (
        serve(app) as url,
        httpx.Client(timeout=TIMEOUT) as client,
        client.stream("POST", url, json=BODY) as response,
    ):
        chunks = response.iter_raw()
        body = next(chunks)
        time.sleep(1.0)  # the run ends meanwhile; its first frames are dropped
        body += b"".join(chunks)
    assert b"agentproto.resync" in body
    consumer = consume([body], run_input=BODY)
    assert consumer.verifier.runs[-1].succeeded
    assert [m.id for m in consumer.conversation.messages] == [f"m{n}" for n in range(30)]


def test_a_resync_from_the_start_gives_run_started_its_own_cursor() -> None:
    """A client that saw nothing of a run whose first frames are dropped gets RUN_STARTED
    in the resync, under the cursor it has in the log (``.1``): cut right after it, the
    client comes back with that cursor and is not sent RUN_STARTED again."""
    app = _scripted_app(MemoryEventLog(Retention(max_frames=8)))
    ids = {"threadId": BODY["threadId"], "runId": BODY["runId"]}
    with serve(app) as url, httpx.Client(timeout=TIMEOUT) as client:
        client.post(url, json=BODY)  # the whole run; the log keeps its last frames only
        frames = _frames(client.get(url, params=ids).content)
        (started_id, started), *_ = frames
        assert '"RUN_STARTED"' in started and started_id is not None
        assert started_id.endswith(".1")
        rest = client.get(url, params=ids, headers={"last-event-id": started_id}).content
    assert b'"RUN_STARTED"' not in rest
    first = f"id: {started_id}\ndata: {started}\n\n".encode()
    consumer = consume([first, rest], run_input=BODY)
    assert consumer.verifier.runs[-1].succeeded
    assert consumer.conversation.to_json() == _expected()


def test_a_new_client_attaches_with_get(served: str) -> None:
    """``GET ?threadId&runId`` streams a run from its start; with ``Last-Event-ID``, after it."""
    with httpx.Client(timeout=TIMEOUT) as client:
        expected = _frames(client.post(served, json=BODY).content)
        params = {"threadId": "thread-r", "runId": "run-r"}
        assert _frames(client.get(served, params=params).content) == expected
        after = client.get(served, params=params, headers={"last-event-id": expected[3][0] or ""})
        assert _frames(after.content) == expected[4:]


def test_cursors_are_checked(served: str) -> None:
    """A malformed cursor or one of another run is 400 ``invalid-cursor``, an unknown run 404,
    a GET without ids 400; none streams another run's frames."""
    other = {**BODY, "runId": "run-other"}
    with httpx.Client(timeout=TIMEOUT) as client:
        foreign = _frames(client.post(served, json=other).content)[0][0] or ""
        client.post(served, json=BODY)
        for cursor, code in (
            ("garbage", "store.cursor-malformed"),
            (foreign, "store.cursor-foreign"),
        ):
            response = client.post(served, json=BODY, headers={"last-event-id": cursor})
            assert response.status_code == 400
            assert response.json()["error"] == "invalid-cursor"
            assert response.json()["code"] == code
        unknown = client.get(served, params={"threadId": "thread-r", "runId": "nope"})
        assert unknown.status_code == 404 and unknown.json()["error"] == "unknown-run"
        assert client.get(served).status_code == 400


def test_the_run_goes_on_while_no_client_is_attached() -> None:
    """A client that leaves does not stop the run: a later reconnection gets what the handler
    emitted meanwhile, through the end."""
    released = asyncio.Event()

    async def handler(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()
        with producer.text_message("m") as message:
            message.content("before ")
            await asyncio.sleep(0.3)  # the client has left by now
            message.content("after")
        producer.run_finished()
        released.set()

    app = agent_app(handler, log=MemoryEventLog())
    with serve(app) as url, httpx.Client(timeout=TIMEOUT) as client:
        first = _read_some(client, url, 2)
        last_id = _frames(first)[-1][0] or ""
        rest = client.post(url, json=BODY, headers={"last-event-id": last_id}).content
    consumer = consume([first, rest], run_input=BODY)
    assert consumer.verifier.runs[-1].succeeded
    assert consumer.conversation.messages[0].content == "before after"


def test_an_abandoned_run_is_cancelled_and_ended_with_run_error() -> None:
    """With no client attached for ``detached_timeout`` seconds the handler is cancelled (its
    ``finally`` runs) and the log ends the run with RUN_ERROR ``agent.detached``."""
    cleaned: list[bool] = []

    async def handler(run_input: Any, producer: RunProducer) -> None:
        producer.run_started()
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.append(True)

    app = agent_app(handler, log=MemoryEventLog(), detached_timeout=0.2)
    with serve(app) as url, httpx.Client(timeout=TIMEOUT) as client:
        first = _read_some(client, url, 1)
        last_id = _frames(first)[-1][0] or ""
        time.sleep(1.0)  # no client attached, past detached_timeout
        rest = client.post(url, json=BODY, headers={"last-event-id": last_id}).content
    assert cleaned == [True]
    consumer = consume([first, rest], run_input=BODY)
    run = consumer.verifier.runs[-1]
    assert not run.succeeded
    assert '"agent.detached"' in rest.decode()


class _FailingLog(MemoryEventLog):
    async def append(self, stream: str, frames: Any, *, end: bool = False) -> list[str]:
        raise StoreError("append", "the disk is full")


def test_a_failing_store_is_a_503_before_anything_streams() -> None:
    """A log that cannot append answers the run's request with 503 ``store-unavailable``."""
    app = _scripted_app(_FailingLog())
    with serve(app) as url, httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(url, json=BODY)
    assert response.status_code == 503
    assert response.json()["error"] == "store-unavailable"


def test_the_routes_resume_too() -> None:
    """``agent_route`` and ``agent_router`` take the log: a reconnection with ``Last-Event-ID``
    gets the rest of the run, and the Starlette route attaches with GET."""
    from fastapi import FastAPI
    from starlette.applications import Starlette

    from agentproto.agui import agent_route, agent_router

    log = MemoryEventLog()
    starlette = Starlette(routes=[agent_route("/agent", _handler_of_scripted(), log=log)])
    fastapi = FastAPI()
    fastapi.include_router(agent_router(_handler_of_scripted(), log=MemoryEventLog()))
    for app in (starlette, fastapi):
        with serve(app) as url, httpx.Client(timeout=TIMEOUT) as client:
            expected = _frames(client.post(url + "/agent", json=BODY).content)
            cursor = expected[2][0] or ""
            rest = client.post(url + "/agent", json=BODY, headers={"last-event-id": cursor})
            assert _frames(rest.content) == expected[3:]
    with serve(starlette) as url, httpx.Client(timeout=TIMEOUT) as client:
        attached = client.get(url + "/agent", params={"threadId": "thread-r", "runId": "run-r"})
        assert _frames(attached.content) == expected

"""Reconnecting a broken stream (issue 26, item 2): ``HttpAgent`` / ``AsyncHttpAgent`` resume
after the last cursor they saw, and the caller, the verifier and the reducer see one
uninterrupted run, whatever the frame the connection broke after or inside."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agui_scripted_agent import scripted_events

from agentproto import ProtocolError
from agentproto.agui import (
    AsyncHttpAgent,
    HttpAgent,
    HttpStatusError,
    Reconnect,
    RunProducer,
    agent_app,
)
from agentproto.stores import MemoryEventLog, Retention
from tests.agui.live_server import serve

FAST = Reconnect(delay=0.0, jitter=0.0)
FRAMES = len(scripted_events())


def _handler() -> Any:
    async def handler(run_input: Any, producer: RunProducer) -> None:
        for event in scripted_events(run_input):
            producer.emit(event)
            await asyncio.sleep(0)

    return handler


class _Cut(Exception):
    """Breaks the connection (uvicorn drops a response whose app raised)."""


def _cutting(app: Any, cuts: list[tuple[int, bool]]) -> Any:
    """``app`` whose next responses (one per entry of ``cuts``) break after ``frames`` whole
    frames, and with ``mid`` inside the next one; later responses are whole."""
    requests: list[dict[str, Any]] = []

    async def cutting(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not cuts:
            await app(scope, receive, send)
            return
        frames, mid = cuts.pop(0)
        requests.append(dict(scope.get("headers", ())))
        sent = 0

        async def counting(message: Any) -> None:
            nonlocal sent
            body = message.get("body", b"")
            if message["type"] == "http.response.body" and body:
                if sent == frames:
                    if mid:
                        await send({**message, "body": body[: len(body) // 2]})
                    raise _Cut
                sent += 1
            await send(message)

        await app(scope, receive, counting)

    cutting.requests = requests  # type: ignore[attr-defined]
    return cutting


def _reference() -> tuple[list[Any], dict[str, Any]]:
    with (
        serve(agent_app(_handler(), log=MemoryEventLog())) as url,
        HttpAgent(url, thread_id="t") as agent,
    ):
        events = list(agent.run(run_id="r"))
        return events, agent.conversation.to_json()


@pytest.fixture(scope="module")
def reference() -> tuple[list[Any], dict[str, Any]]:
    return _reference()


# a response opens with the start's cursor (one chunk), then one chunk per frame
CUT_POINTS = [(chunks, mid) for chunks in range(1, FRAMES + 1) for mid in (False, True)]


@pytest.mark.parametrize(("frames", "mid"), CUT_POINTS)
def test_a_run_cut_anywhere_is_resumed_whole(
    frames: int, mid: bool, reference: tuple[list[Any], dict[str, Any]]
) -> None:
    """Cut after each frame of the scripted run (and after the start's cursor), between frames
    and inside the next one: the client reconnects with the last cursor it saw and hands out
    every event exactly once; its conversation equals the uninterrupted run's."""
    events, conversation = reference
    app = _cutting(agent_app(_handler(), log=MemoryEventLog()), [(frames, mid)])
    with serve(app) as url, HttpAgent(url, thread_id="t", reconnect=FAST) as agent:
        got = list(agent.run(run_id="r"))
        assert agent.runs[-1].succeeded
        assert got == events
        assert agent.conversation.to_json() == conversation


async def test_the_async_agent_resumes_too(reference: tuple[list[Any], dict[str, Any]]) -> None:
    """``AsyncHttpAgent`` resumes after cuts in two successive connections."""
    events, conversation = reference
    app = _cutting(agent_app(_handler(), log=MemoryEventLog()), [(3, True), (5, False)])
    with serve(app) as url:
        async with AsyncHttpAgent(url, thread_id="t", reconnect=FAST) as agent:
            got = [event async for event in agent.run(run_id="r")]
            assert got == events
            assert agent.conversation.to_json() == conversation
    assert len(app.requests) == 2
    assert b"last-event-id" in app.requests[1]


def test_a_stream_without_cursors_is_not_resumed() -> None:
    """A server without a log gives no cursor: a break is the truncation it always was, and no
    second request is sent."""
    app = _cutting(agent_app(_handler()), [(3, False)])
    with serve(app) as url, HttpAgent(url, thread_id="t", reconnect=FAST) as agent:
        with pytest.raises(ProtocolError) as caught:
            list(agent.run(run_id="r"))
        assert caught.value.code == "stream.truncated"
    assert len(app.requests) == 1


def test_attempts_are_bounded() -> None:
    """When every reconnection breaks before a frame, the run fails as truncated after
    ``attempts`` of them."""
    cuts = [(2, False)] + [(0, False)] * 10
    app = _cutting(agent_app(_handler(), log=MemoryEventLog()), cuts)
    with serve(app) as url, HttpAgent(url, reconnect=Reconnect(attempts=2, delay=0)) as agent:
        with pytest.raises(ProtocolError) as caught:
            list(agent.run(run_id="r"))
        assert caught.value.code == "stream.truncated"
    assert len(app.requests) == 3  # the run, then two attempts


def test_a_refused_reconnection_is_an_http_status_error() -> None:
    """A reconnection the server refuses (here: a restarted server whose log lost the run)
    fails the run with the server's status, never a silent gap."""
    servers = [
        agent_app(_handler(), log=MemoryEventLog()),
        agent_app(_handler(), log=MemoryEventLog()),
    ]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        server = servers.pop(0) if scope["type"] == "http" and len(servers) > 1 else servers[0]
        await server(scope, receive, send)

    cutting = _cutting(app, [(2, False)])
    with serve(cutting) as url, HttpAgent(url, thread_id="t", reconnect=FAST) as agent:
        with pytest.raises(HttpStatusError) as caught:
            list(agent.run(run_id="r"))
        assert caught.value.status == 410


def _two_runs(run_input: Any, producer: RunProducer) -> Any:
    """Run ``first``: an activity; any other run: messages around an activity of its own and
    a state, enough frames that a log keeping 8 has dropped the first ones by its end."""

    async def handler() -> None:
        producer.run_started()
        if run_input.run_id == "first":
            producer.activity_snapshot("a-first", "plan", {"step": 1})
        else:
            for n in range(3):
                producer.text([f"part {n} ", "of the answer"], message_id=f"m{n}")
                await asyncio.sleep(0)
            producer.activity_snapshot("a-second", "plan", {"step": 2})
            for n in range(3, 6):
                producer.text([f"part {n}"], message_id=f"m{n}")
                producer.state_update({"n": n})
                await asyncio.sleep(0)
        producer.run_finished()

    return handler()


def test_a_reconnection_after_retention_moved_on_is_resynced() -> None:
    """A client cut off long enough that the log (8 frames) dropped the frames after its
    cursor reconnects all the same: the server resyncs it (``CUSTOM agentproto.resync``,
    snapshots, then the tail), and the thread ends as the uninterrupted one, the activity
    of its first run kept where it was."""

    def thread(app: Any) -> tuple[dict[str, Any], list[Any]]:
        with serve(app) as url, HttpAgent(url, thread_id="t", reconnect=FAST) as agent:
            agent.run_to_end(run_id="first")
            events = list(agent.run(run_id="second"))
            assert agent.runs[-1].succeeded
            return agent.conversation.to_json(), events

    expected, _ = thread(agent_app(_two_runs, log=MemoryEventLog()))
    log = MemoryEventLog(Retention(max_frames=8))
    cut = _cutting(agent_app(_two_runs, log=log), [(20, False), (3, True)])
    got, events = thread(cut)
    assert got == expected
    # one resync at least: the reconnection's; the first response may have been passed by
    # retention too (the run outruns a reader), and is then resynced where it stands
    resyncs = [e.name for e in events if e.type == "CUSTOM"]
    assert resyncs and set(resyncs) == {"agentproto.resync"}
    assert [m["id"] for m in got["messages"]][:2] == ["a-first", "m0"]


def test_reconnect_options_are_checked() -> None:
    """A bad policy is a UsageError when it is made or given."""
    from agentproto import UsageError

    for bad in ({"attempts": -1}, {"jitter": 2.0}, {"delay": -1.0}, {"attempts": 1.5}):
        with pytest.raises(UsageError):
            Reconnect(**bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        HttpAgent("http://127.0.0.1:1/", reconnect=5)  # type: ignore[arg-type]

"""Streams that survive faults (issue 26, item 5), through a TCP proxy: a connection cut at
a byte offset, a half-open connection, a server restarted on its SQLite log, and a switch
to another worker process sharing a Redis log. Each run ends with the client's events and
conversation equal to the uninterrupted run's."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentproto.agui import (
    HttpAgent,
    HttpError,
    Reconnect,
    RunProducer,
    agent_app,
    consume,
    encode_event_sse,
)
from agentproto.stores import MemoryEventLog, SQLiteEventLog
from tests.agui.faults import Fault, Proxy, free_port, worker
from tests.agui.live_server import serve
from tests.agui.resume_app import INTERRUPTED, handler, run_events
from tests.needs import redis_server

THREAD = "t"
PATIENT = Reconnect(attempts=40, delay=0.05, max_delay=0.2, jitter=0.0)


def _expected(run_id: str) -> tuple[list[Any], dict[str, Any]]:
    """The uninterrupted run's events and conversation."""
    wire = {"threadId": THREAD, "runId": run_id, "messages": []}
    events = run_events(RunProducer(wire).run_input)
    sse = b"".join(map(encode_event_sse, events))
    conversation = consume([sse], run_input=wire).conversation.to_json()
    return events, conversation


def _run(url: str, run_id: str, **options: Any) -> tuple[list[Any], dict[str, Any]]:
    with HttpAgent(url, thread_id=THREAD, reconnect=PATIENT, **options) as agent:
        events = list(agent.run(run_id=run_id))
        if run_id.startswith(INTERRUPTED):  # the outcome: what the run left open
            assert agent.runs[-1].status == "interrupted"
            assert agent.interrupts.ids == ("approve",)
        else:
            assert agent.runs[-1].succeeded
        return events, agent.conversation.to_json()


@pytest.fixture(scope="module")
def memory_server() -> Any:
    with serve(agent_app(handler, log=MemoryEventLog(), detached_timeout=None)) as url:
        yield url.removeprefix("http://").split(":")


CUTS = 60


@pytest.fixture(scope="module")
def response_span(memory_server: Any) -> tuple[int, int]:
    """Where an uninterrupted run's response body starts (after the head) and ends, in bytes."""
    host, port = memory_server
    proxy = Proxy([(host, int(port))])
    try:
        _run(proxy.url, "whole")
        return proxy.head.index(b"\r\n\r\n") + 4, proxy.forwarded
    finally:
        proxy.close()


@pytest.mark.parametrize("cut", range(CUTS))
def test_a_cut_at_any_byte_is_resumed(
    memory_server: Any, response_span: tuple[int, int], cut: int
) -> None:
    """The connection cut at one of 60 byte offsets spread over the whole body (the start's
    cursor, inside frames and chunk sizes, between frames): the run resumes whole."""
    host, port = memory_server
    start, end = response_span
    offset = start + (end - start) * (2 * cut + 1) // (2 * CUTS)
    run_id = f"cut-{cut}"
    proxy = Proxy([(host, int(port))], [Fault(offset)])
    try:
        assert _run(proxy.url, run_id) == _expected(run_id)
        assert proxy.connections >= 2  # the cut happened, and reconnecting mended it
    finally:
        proxy.close()


TAIL_CUTS = 12


@pytest.mark.parametrize("cut", range(TAIL_CUTS))
def test_a_cut_near_an_interrupted_end_is_resumed(
    memory_server: Any, response_span: tuple[int, int], cut: int
) -> None:
    """A run that ends interrupted (the last text, then RUN_FINISHED asking for an
    approval), cut at one of 12 offsets over its last fifth: it resumes whole, and the
    client holds the open interrupt, as after the uninterrupted run."""
    host, port = memory_server
    start, end = response_span
    tail = start + (end - start) * 4 // 5
    offset = tail + (end - tail) * (2 * cut + 1) // (2 * TAIL_CUTS)
    run_id = f"{INTERRUPTED}{cut}"
    proxy = Proxy([(host, int(port))], [Fault(offset)])
    try:
        assert _run(proxy.url, run_id) == _expected(run_id)
        assert proxy.connections >= 2
    finally:
        proxy.close()


def test_a_cut_before_the_response_is_an_error_not_a_retry(
    memory_server: Any, response_span: tuple[int, int]
) -> None:
    """Cut inside the response head, the client has seen no cursor, so nothing says the
    server could resume: it fails with HttpError and sends nothing again (a server without
    a log would run the agent twice)."""
    host, port = memory_server
    proxy = Proxy([(host, int(port))], [Fault(response_span[0] // 2)])
    try:
        with pytest.raises(HttpError):
            _run(proxy.url, "head-cut")
        assert proxy.connections == 1
    finally:
        proxy.close()


def test_a_half_open_connection_is_resumed_after_the_read_timeout(memory_server: Any) -> None:
    """Bytes stop without the connection closing: the read timeout ends the wait and the run
    resumes on a new connection."""
    host, port = memory_server
    proxy = Proxy([(host, int(port))], [Fault(900, cut=False)])
    try:
        got = _run(proxy.url, "half-open", timeout=httpx.Timeout(1.0))
        assert got == _expected("half-open")
        assert proxy.connections == 2
    finally:
        proxy.close()


def _ended(path: Path, run_id: str) -> bool:
    from agentproto.agui._serve.resume import stream_name

    async def read() -> bool:
        log = SQLiteEventLog(path)
        try:
            page = await log.read(stream_name(THREAD, run_id), limit=10_000)
            return page.ended
        finally:
            await log.aclose()

    try:
        return asyncio.run(read())
    except Exception:
        return False


def test_a_server_restarted_on_its_sqlite_log_resumes_the_stream(tmp_path: Path) -> None:
    """The connection breaks; the server finishes the run into its SQLite file and is killed;
    a new server on the same file answers the reconnection with the rest of the run."""
    path, port = tmp_path / "runs.db", free_port()
    gate = threading.Event()
    proxy = Proxy([("127.0.0.1", port)], [Fault(1200)], gate=gate)
    result: list[Any] = []
    try:
        with worker(port, RESUME_LOG=f"sqlite:{path}"):
            client = threading.Thread(target=lambda: result.append(_run(proxy.url, "restart")))
            client.start()
            deadline = time.monotonic() + 20
            while not _ended(path, "restart"):
                assert time.monotonic() < deadline, "the run did not end in the log"
                time.sleep(0.05)
        with worker(port, RESUME_LOG=f"sqlite:{path}"):
            gate.set()
            client.join(30)
        assert result == [_expected("restart")]
        assert proxy.connections >= 2
    finally:
        gate.set()
        proxy.close()


def _redis_env(**env: str) -> dict[str, str]:
    """The workers' environment: a Redis log of their own, and ``env``."""
    return {"RESUME_LOG": f"redis:{redis_server()}", "RESUME_PREFIX": f"t{uuid.uuid4().hex}", **env}


def _switched(run_id: str, **env: str) -> None:
    """Run ``run_id`` through a balancer that sends the reconnection to a second worker."""
    first, second = free_port(), free_port()
    with worker(first, **env), worker(second, **env):
        proxy = Proxy([("127.0.0.1", first), ("127.0.0.1", second)], [Fault(700)])
        try:
            assert _run(proxy.url, run_id) == _expected(run_id)
            assert proxy.connections == 2
        finally:
            proxy.close()


def test_a_reconnection_to_another_worker_sharing_redis_resumes_the_live_run() -> None:
    """Two worker processes share a Redis log; the run goes on in the first while the client,
    cut off, reconnects through the balancer to the second, which streams the frames the
    first goes on appending."""
    _switched("switch", **_redis_env(RESUME_DELAY="0.05"))


def test_a_reader_on_another_worker_keeps_the_run_from_being_abandoned() -> None:
    """The writer's worker counts readers of other workers too: with ``detached_timeout``
    of 1 s, a client that reconnected to the second worker reads the whole 3-second run,
    never cut short by RUN_ERROR ``agent.detached``."""
    _switched("elsewhere", **_redis_env(RESUME_DELAY="0.1", RESUME_DETACHED="1.0"))


def test_a_run_whose_worker_died_ends_as_lost_not_in_a_hang() -> None:
    """The worker writing the run is killed while the client, cut off, waits to reconnect:
    the other worker, hearing nothing from the run for ``lost_timeout`` (1 s), ends it with
    RUN_ERROR ``agent.lost``; the client gets every event written before, once, then that."""
    env = _redis_env(RESUME_LOST="1.0")
    first, second = free_port(), free_port()
    gate = threading.Event()
    result: list[Any] = []

    def run(proxy_url: str) -> None:
        with HttpAgent(proxy_url, thread_id=THREAD, reconnect=PATIENT) as agent:
            events = list(agent.run(run_id="lost"))
            result.append((events, agent.runs[-1]))

    with worker(second, **env):
        proxy = Proxy([("127.0.0.1", first), ("127.0.0.1", second)], [Fault(700)], gate=gate)
        try:
            with worker(first, **env, RESUME_DELAY="0.3"):
                client = threading.Thread(target=run, args=(proxy.url,))
                client.start()
                time.sleep(2.0)  # the cut came; the run goes on in the first worker
            started = time.monotonic()
            gate.set()  # the first worker is dead: reconnect to the second
            client.join(30)
            assert not client.is_alive()
            assert time.monotonic() - started < 15
        finally:
            gate.set()
            proxy.close()
    events, record = result[0]
    expected, _ = _expected("lost")
    assert events[:-1] == expected[: len(events) - 1]  # what was written, once, in order
    assert len(events) - 1 < len(expected)
    assert record.status == "failed" and record.error.code == "agent.lost"

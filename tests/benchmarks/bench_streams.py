"""Resumable-stream figures (issue 26): what keeping runs in an event log costs.

Registered into :data:`tests.benchmarks.bench.REGISTRY` on import (``bench`` imports this
module at its end). Ours alone: no peer SDK resumes a stream.

* ``stream.log_memory`` / ``stream.log_sqlite`` / ``stream.log_redis``: events per second
  through an event log, each event appended on its own (as a serving run appends them)
  and the stream read back after the start, in pages; the workload's events as frames.
  The Redis figure needs ``redis-server`` (``tests/needs.py`` starts one); without it the
  figure is reported missing.
* ``stream.reconnect_p50`` / ``stream.reconnect_p95``: milliseconds from opening a new
  connection for a reconnection (the run's POST with ``Last-Event-ID``) to the first
  frame after the cursor, loopback, against ``agent_app(log=MemoryEventLog())`` under
  uvicorn.
* ``stream.idle_stream_kib``: the server's resident memory per open SSE stream of a run
  that is quiet (its handler waiting), over 200 streams opened after 50 others (what a
  server allocates once is not counted), in a uvicorn process of its own.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from agentproto.stores import EventLog, MemoryEventLog, RedisEventLog, Retention, SQLiteEventLog
from tests.benchmarks.bench import Figure, PeerMissing, Workload, benchmark

__all__ = ["log_events_per_s"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
_RECONNECTS = 60
_IDLE_STREAMS = 200
_WARM_STREAMS = 50


async def _through(log: EventLog, frames: list[bytes]) -> float:
    """Seconds to append ``frames`` one by one and read them all back."""
    stream = f"bench-{uuid.uuid4().hex}"
    started = time.perf_counter()
    for frame in frames:
        await log.append(stream, [frame])
    await log.append(stream, [], end=True)
    cursor = None
    while True:
        page = await log.read(stream, cursor, limit=1000)
        cursor = page.cursor
        if page.ended:
            break
    elapsed = time.perf_counter() - started
    await log.drop(stream)
    return elapsed


def log_events_per_s(make: Any, frames: list[bytes], repeat: int) -> float:
    """The best events per second of ``repeat`` runs through a log ``make()`` builds."""

    async def best() -> float:
        log = make()
        try:
            return min([await _through(log, frames) for _ in range(max(1, repeat))])
        finally:
            await log.aclose()

    return len(frames) / asyncio.run(best())


def _frames(w: Workload) -> list[bytes]:
    return list(w.blobs)


_RETAIN = Retention(max_frames=None, max_age=None, max_streams=None)


@benchmark("stream.log_memory")
def bench_log_memory(w: Workload) -> list[Figure]:
    """Events per second through the in-memory log."""
    rate = log_events_per_s(lambda: MemoryEventLog(_RETAIN), _frames(w), w.repeat)
    return [Figure.throughput("stream.log_memory", rate)]


@benchmark("stream.log_sqlite")
def bench_log_sqlite(w: Workload) -> list[Figure]:
    """Events per second through the SQLite log (a file in a temporary folder)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        rate = log_events_per_s(
            lambda: SQLiteEventLog(path, retention=_RETAIN), _frames(w), w.repeat
        )
    return [Figure.throughput("stream.log_sqlite", rate)]


@benchmark("stream.log_redis")
def bench_log_redis(w: Workload) -> list[Figure]:
    """Events per second through the Redis log (a local redis-server on loopback)."""
    url = _redis()
    prefix = f"bench{uuid.uuid4().hex}"
    make = lambda: RedisEventLog(url, prefix=prefix, retention=_RETAIN)  # noqa: E731
    return [Figure.throughput("stream.log_redis", log_events_per_s(make, _frames(w), w.repeat))]


def _redis() -> str:
    from tests.redis_server import RedisUnavailable, start

    try:
        return start()
    except RedisUnavailable as exc:
        raise PeerMissing(f"stream.log_redis needs a Redis server: {exc}") from None


def _reconnect_ms() -> list[float]:
    """Milliseconds from a reconnection's request to its first frame, ``_RECONNECTS`` times."""
    if str(EXAMPLES) not in sys.path:  # the scripted agent is a bundled example
        sys.path.append(str(EXAMPLES))
    from agui_scripted_agent import scripted_events

    from agentproto.agui import RunProducer, agent_app
    from tests.agui.live_server import serve

    async def handler(run_input: Any, producer: RunProducer) -> None:
        for event in scripted_events(run_input):
            producer.emit(event)

    body = {"threadId": "bench", "runId": "bench", "messages": []}
    timings = []
    with serve(agent_app(handler, log=MemoryEventLog())) as url:
        first = httpx.post(url, json=body).text
        cursor = next(
            line[4:] for line in first.splitlines() if line.startswith("id: ") and ".1" in line
        )
        for _ in range(_RECONNECTS):  # a new connection each time, as after a break
            with httpx.Client() as client:
                started = time.perf_counter()
                headers = {"last-event-id": cursor}
                with client.stream("POST", url, json=body, headers=headers) as response:
                    chunks = response.iter_raw()
                    next(chunks)
                    timings.append((time.perf_counter() - started) * 1000)
                    for _rest in chunks:  # read to the end: no write to a closed socket
                        pass
    return timings


@benchmark("stream.reconnect_p50")
def bench_reconnect_p50(w: Workload) -> list[Figure]:
    """Median reconnection latency, loopback (ms)."""
    return [Figure.measure("stream.reconnect_p50", "ms", statistics.median(_reconnect_ms()))]


@benchmark("stream.reconnect_p95")
def bench_reconnect_p95(w: Workload) -> list[Figure]:
    """95th percentile of the reconnection latency, loopback (ms)."""
    timings = sorted(_reconnect_ms())
    p95 = timings[min(len(timings) - 1, math.ceil(0.95 * len(timings)) - 1)]
    return [Figure.measure("stream.reconnect_p95", "ms", p95)]


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


@benchmark("stream.idle_stream_kib")
def bench_idle_stream(w: Workload) -> list[Figure]:
    """Server memory per open, quiet SSE stream (KiB), over 200 streams."""
    from tests.agui.faults import free_port, worker

    port = free_port()
    with worker(port, RESUME_DELAY="3600") as server:
        url = f"http://127.0.0.1:{port}"
        per_stream = asyncio.run(_idle(url, server.pid))
    return [Figure.measure("stream.idle_stream_kib", "KiB", per_stream)]


async def _idle(url: str, pid: int) -> float:
    """The server's RSS growth per quiet stream: ``_WARM_STREAMS`` opened first (the
    allocations a server makes once), then ``_IDLE_STREAMS`` more, all held open."""
    limits = httpx.Limits(max_connections=_WARM_STREAMS + _IDLE_STREAMS + 10)
    opened: list[Any] = []

    async def open_streams(client: httpx.AsyncClient, prefix: str, count: int) -> None:
        for i in range(count):
            body = {"threadId": "idle", "runId": f"{prefix}-{i}", "messages": []}
            stream = client.stream("POST", url, json=body)
            response = await stream.__aenter__()
            opened.append(stream)
            async for _ in response.aiter_raw():  # the first frame: the stream is open
                break

    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        try:
            await open_streams(client, "warm", _WARM_STREAMS)
            await asyncio.sleep(0.5)
            before = _rss_kib(pid)
            await open_streams(client, "run", _IDLE_STREAMS)
            await asyncio.sleep(0.5)
            after = _rss_kib(pid)
        finally:
            for stream in opened:
                await stream.__aexit__(None, None, None)
    return max(after - before, 0) / _IDLE_STREAMS

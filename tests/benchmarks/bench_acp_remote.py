"""ACP transport figures (issue 27): a turn over Streamable HTTP (SSE) and a WebSocket,
beside the same turn over stdio. Ours alone: the peers' remote transports are not
measured here.

The agent (:mod:`tests.benchmarks.acp_remote_agent`) runs in a process of its own: a
subprocess on stdio, or uvicorn serving ``acp_app``; the client is
:class:`~agentproto.acp.AcpClient` (``spawn``, or ``connect_url``), its session state
folding every update.

* ``acp.stdio.turn_ms`` / ``acp.http.turn_ms`` / ``acp.ws.turn_ms``: the median
  milliseconds of a turn of one update, prompt sent to stop reason received, over
  ``_TURNS`` turns on one connection (after one turn of warm-up).
* ``acp.stdio.updates_s`` / ``acp.http.updates_s`` / ``acp.ws.updates_s``: updates per
  second through a turn of ``_UPDATES`` ``agent_message_chunk`` updates, the best of
  ``repeat`` turns.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

from agentproto.acp import AcpClient
from tests.benchmarks.bench import Figure, Workload, benchmark

ROOT = Path(__file__).resolve().parents[2]
_TURNS = 50
_UPDATES = 2000


async def _measure(client: AcpClient, repeat: int) -> tuple[float, float]:
    """(median turn ms, best updates/s) on ``client``."""
    async with client:
        await client.initialize(timeout=30)
        session = await client.new_session(str(ROOT))
        sid = session.session_id
        await client.prompt(sid, "1", timeout=30)  # warm-up
        turns = []
        for _ in range(_TURNS):
            started = time.perf_counter()
            await client.prompt(sid, "1", timeout=30)
            turns.append((time.perf_counter() - started) * 1000)
        rates = []
        for _ in range(repeat):
            started = time.perf_counter()
            await client.prompt(sid, str(_UPDATES), timeout=120)
            rates.append(_UPDATES / (time.perf_counter() - started))
    return statistics.median(turns), max(rates)


def _over(transport: str, repeat: int) -> tuple[float, float]:
    if transport == "stdio":
        command = [sys.executable, "-m", "tests.benchmarks.acp_remote_agent"]

        async def stdio() -> tuple[float, float]:
            client = await AcpClient.spawn(command, cwd=str(ROOT))
            return await _measure(client, repeat)

        return asyncio.run(stdio())
    from tests.agui.faults import free_port, worker_app

    port = free_port()
    with worker_app(port, "tests.benchmarks.acp_remote_agent:app"):
        scheme = "ws" if transport == "ws" else "http"
        url = f"{scheme}://127.0.0.1:{port}/acp"
        return asyncio.run(_measure(AcpClient.connect_url(url), repeat))


_RESULTS: dict[tuple[str, int], tuple[float, float]] = {}


def _figures(transport: str, w: Workload) -> tuple[float, float]:
    key = (transport, w.repeat)
    if key not in _RESULTS:
        _RESULTS[key] = _over(transport, w.repeat)
    return _RESULTS[key]


def _register(transport: str) -> None:
    def turn(w: Workload) -> list[Figure]:
        return [Figure.measure(f"acp.{transport}.turn_ms", "ms", _figures(transport, w)[0])]

    def updates(w: Workload) -> list[Figure]:
        rate = _figures(transport, w)[1]
        return [Figure.throughput(f"acp.{transport}.updates_s", rate)]

    benchmark(f"acp.{transport}.turn_ms")(turn)
    benchmark(f"acp.{transport}.updates_s")(updates)


for _transport in ("stdio", "http", "ws"):
    _register(_transport)

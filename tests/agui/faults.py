"""Fault injection for the resumable streams: a TCP proxy that cuts, stalls or reroutes
connections, and agent servers in processes of their own (uvicorn) that can be killed.

:class:`Proxy` forwards each client connection to the backend it currently points at (a
load balancer that can switch workers) and applies the next fault of its plan to the
bytes flowing back: cut the connection after so many bytes, or stop forwarding while
keeping both sockets open (a half-open connection the client only notices by its read
timeout). :func:`worker` runs ``tests/agui/resume_app.py`` under uvicorn in a subprocess
with the log the test names (SQLite file, Redis URL), so that a test can kill it and start
another on the same store.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATHS = (ROOT / "sdk", ROOT, ROOT / "examples")


@dataclass
class Fault:
    """What happens to one connection's response bytes: pass ``after`` bytes, then ``cut``
    (close both sides) or stall (keep them open, forward nothing more)."""

    after: int
    cut: bool = True


@dataclass
class Proxy:
    """A TCP proxy on 127.0.0.1: connection ``i`` goes to ``backends[i]`` (the last one
    for the rest) and gets fault ``plan[i]`` (none past the plan's end). While ``gate`` is
    clear, every connection but the first waits before reaching its backend."""

    backends: list[tuple[str, int]]
    plan: list[Fault] = field(default_factory=list)
    gate: threading.Event | None = None
    connections: int = 0
    forwarded: int = 0  # response bytes passed to clients, over every connection
    head: bytes = b""  # the first bytes of the first response

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._server = server
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = self.connections
        self.connections += 1
        fault = self.plan[index] if index < len(self.plan) else None
        backend = self.backends[min(index, len(self.backends) - 1)]
        gate = self.gate
        if index and gate is not None:
            while not gate.is_set():
                await asyncio.sleep(0.02)
        try:
            up_reader, up_writer = await asyncio.open_connection(*backend)
        except OSError:
            writer.close()
            return

        async def upstream() -> None:
            try:
                while data := await reader.read(65536):
                    up_writer.write(data)
                    await up_writer.drain()
            except OSError:
                pass

        async def downstream() -> None:
            sent = 0
            try:
                while data := await up_reader.read(65536):
                    if fault is not None and sent + len(data) > fault.after:
                        writer.write(data[: fault.after - sent])
                        await writer.drain()
                        if fault.cut:
                            return
                        await asyncio.sleep(3600)  # half-open: silence, sockets kept
                    writer.write(data)
                    sent += len(data)
                    self.forwarded += len(data)
                    if index == 0 and len(self.head) < 4096:
                        self.head += data[:4096]
                    await writer.drain()
            except OSError:
                pass

        pump = asyncio.ensure_future(upstream())
        try:
            await downstream()
        finally:
            pump.cancel()
            for stream in (writer, up_writer):
                stream.close()

    async def _shutdown(self) -> None:
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def worker(port: int, **env: str) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """``tests/agui/resume_app.py:app`` under uvicorn on ``port``, configured by ``env``
    (``RESUME_LOG``: ``sqlite:PATH`` or ``redis:URL``); killed on exit."""
    return worker_app(port, "resume_app:app", ROOT / "tests" / "agui", **env)


@contextmanager
def worker_app(
    port: int, app: str, app_dir: Path = ROOT, **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    """The ASGI ``app`` (``module:attribute``, found from ``app_dir``) under uvicorn on
    ``port`` in a process of its own, with ``env``; killed on exit."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--app-dir",
            str(app_dir),
            app,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, PATHS)), **env},
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the worker on port {port} did not start") from None
                time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(10)

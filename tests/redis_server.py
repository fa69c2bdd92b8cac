"""A real ``redis-server`` on a free loopback port, for the tests and the benchmarks (no
pytest here: the benchmarks run without it; ``tests/needs.py`` turns a failure into a skip)."""

from __future__ import annotations

import atexit
import functools
import shutil
import socket
import subprocess
import time

__all__ = ["RedisUnavailable", "start"]


class RedisUnavailable(Exception):
    """No Redis server can be had here; ``short`` says what is missing in a few words."""

    def __init__(self, detail: str, short: str) -> None:
        super().__init__(detail)
        self.short = short


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@functools.cache
def start() -> str:
    """The URL of a ``redis-server`` started for this process (no persistence; killed at
    exit); the same one on every call.

    Raises:
        RedisUnavailable: the server or the ``redis`` package is missing, or it did not start.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisUnavailable("redis-server not on PATH", "redis-server")
    try:
        import redis  # noqa: F401
    except ModuleNotFoundError:
        raise RedisUnavailable("the redis package is not installed", "redis package") from None
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(process.kill)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RedisUnavailable(
        f"redis-server did not answer on port {port}", "redis-server did not start"
    )

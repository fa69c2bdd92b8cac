"""A real uvicorn server on 127.0.0.1 for the serving tests (started in a thread), and a
recorder of what an ASGI app sends."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free port of 127.0.0.1; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def recording(asgi: Any, bodies: list[bytes]) -> Any:
    """Wrap an ASGI app so that every response body it sends is recorded in ``bodies``."""

    async def recorded(scope: Any, receive: Any, send: Any) -> None:
        async def tee(message: Any) -> None:
            if message["type"] == "http.response.body":
                bodies.append(message.get("body", b""))
            await send(message)

        await asgi(scope, receive, tee)

    return recorded

"""The request side of serving over ASGI: types, headers, the body within limits, refusals.

Theory of operation
-------------------
Both protocols' servers (:func:`~agentproto.agui.agent_app`,
:func:`~agentproto.acp.acp_app`) answer every request they cannot serve with an HTTP
error status and a JSON body, before anything streams. Here are the parts that decide
before a body is read: the ``content-type`` (JSON, or none given), the declared and
actual body size, and the time the whole body may take. Each refusal is a
:class:`Refusal` carrying its status and JSON body; the connection closes after it,
since the rest of the body stays unread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, TypeAlias

from agentproto._core.describe import describe
from agentproto._core.json.codec import dumps

__all__ = [
    "ASGIApp",
    "ASGIMessage",
    "BodyLimits",
    "Receive",
    "Refusal",
    "Scope",
    "Send",
    "check_content_type",
    "header",
    "raw_headers",
    "send_json",
]

Scope: TypeAlias = MutableMapping[str, Any]
"""An ASGI connection scope."""
ASGIMessage: TypeAlias = MutableMapping[str, Any]
"""An ASGI event or message (``{"type": "http.request", ...}``)."""
Receive: TypeAlias = Callable[[], Awaitable[ASGIMessage]]
"""The ASGI ``receive`` callable."""
Send: TypeAlias = Callable[[ASGIMessage], Awaitable[None]]
"""The ASGI ``send`` callable."""
ASGIApp: TypeAlias = Callable[[Scope, Receive, Send], Awaitable[None]]
"""An ASGI 3 application."""


def raw_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    """Headers as ASGI wants them: lower-case names, latin-1 bytes."""
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of the request header ``name`` (lower case), if sent."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def send_json(
    send: Send, status: int, body: Any, headers: Mapping[str, str] | None = None
) -> None:
    """A whole response: ``status`` and ``body`` as JSON."""
    payload = dumps(body)
    all_headers = {
        "content-type": "application/json",
        "content-length": str(len(payload)),
        **(headers or {}),
    }
    await send(
        {"type": "http.response.start", "status": status, "headers": raw_headers(all_headers)}
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})


class Refusal(Exception):
    """A request refused before its body was read whole (never raised out of the
    app: :meth:`answer` sends it)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body["detail"])
        self.status = status
        self.body = body

    @classmethod
    def limit(
        cls, status: int, error: str, limit: str, value: float, what: str, owner: str
    ) -> Refusal:
        """A limit of the server ``owner`` (``"agent_app"``, ``"acp_app"``) was reached."""
        detail = f"{what} (limit {limit}={value}; raise it with {owner}({limit}=...))"
        return cls(status, {"error": error, "limit": limit, "value": value, "detail": detail})

    async def answer(self, send: Send) -> None:
        """Send the refusal; the connection closes (the rest of the body is unread)."""
        await send_json(send, self.status, self.body, {"connection": "close"})


def check_content_type(scope: Scope) -> None:
    """Refuse a body declared as something other than JSON.

    ``application/json`` (any parameters) and the ``+json`` media types pass; so
    does a request without ``content-type`` (the body is then read as JSON anyway).

    Raises:
        Refusal: 415 ``unsupported-media-type``.
    """
    declared = header(scope, b"content-type")
    if declared is None:
        return
    media = declared.split(";", 1)[0].strip().lower()
    kind, _, subtype = media.partition("/")
    if kind == "application" and (subtype == "json" or subtype.endswith("+json")):
        return
    detail = f"the body must be JSON (content-type: application/json), not {describe(declared)}"
    body = {"error": "unsupported-media-type", "contentType": declared[:200], "detail": detail}
    raise Refusal(415, body)


def _declared_size(scope: Scope) -> int:
    """The request's ``content-length`` (a long one counts as huge); 0 without one."""
    declared = (header(scope, b"content-length") or "").strip().lstrip("0")
    if not (declared.isascii() and declared.isdigit()):
        return 0
    return int(declared) if len(declared) <= 18 else 10**18


class BodyLimits:
    """How much of a request body is read, and for how long."""

    __slots__ = ("max_bytes", "owner", "timeout")

    def __init__(self, max_bytes: int, timeout: float | None, owner: str = "agent_app") -> None:
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.owner = owner  # the server whose options these are (named in refusals)

    async def read(self, scope: Scope, receive: Receive) -> bytes | None:
        """The request body; ``None`` when the client disconnected first.

        Raises:
            Refusal: the body is (or is declared) over ``max_bytes``, or did not
                arrive whole within ``timeout`` seconds.
        """
        if _declared_size(scope) > self.max_bytes:
            raise self._too_large()
        try:
            async with asyncio.timeout(self.timeout):
                return await self._read(receive)
        except TimeoutError:
            what = f"the request body did not arrive within {self.timeout} s"
            timeout = self.timeout or 0
            raise Refusal.limit(
                408, "body-timeout", "body_timeout", timeout, what, self.owner
            ) from None

    async def _read(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self) -> Refusal:
        what = f"the request body is over {self.max_bytes} bytes"
        return Refusal.limit(
            413, "body-too-large", "max_body_bytes", self.max_bytes, what, self.owner
        )

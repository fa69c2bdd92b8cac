"""AG-UI over a WebSocket, on the agent's own path.

Theory of operation
-------------------
A client opens a WebSocket on the URL it would POST to (``agent_app`` answers both).
Its first message is the run: a ``RunAgentInput`` as JSON, as in the upstream
proposal (ag-ui pull request 2085, where the socket is a second path; here it is the
same one). The server answers with one text message per event, the event's JSON,
and closes with 1000 when the run's stream ends.

Resuming is ours (the upstream proposal has none). A client that offers the
subprotocol :data:`SUBPROTOCOL` gets it accepted by an agent that keeps an event log,
and then each
event as ``{"id": <cursor>, "event": <event>}`` (a socket from the run's start opens with
``{"id": <start>}``, no event), and may open a later socket with
``{"type": "resume", "threadId": T, "runId": R, "after": <cursor>}`` (``after``
left out: from the start) to get exactly the events after that cursor, then the live
tail. Without the subprotocol the messages are bare events, whatever the agent keeps.

Refusals and limits are HTTP's: the first message must arrive within the body
timeout and be no larger than the body limit (else close 1008 / 1009); a run the
agent cannot start or a cursor it cannot read gets one text message holding the
same JSON error body the HTTP answer has (with its ``status``), then close 1008. A
client that goes away cancels a run served without a log, and detaches from a
logged one, as over HTTP. Messages the client sends after the first are ignored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any, Final, Protocol

from agentproto._core.asgi import BodyLimits, Receive, Scope, Send
from agentproto._core.errors import DecodeError
from agentproto._core.json.codec import dumps, loads
from agentproto._core.store.log import Entry, cursor_of
from agentproto.agui._generated import Event, RunAgentInput
from agentproto.agui._protocol.encoding import WEBSOCKET_SUBPROTOCOL
from agentproto.agui._protocol.frames import encode_event_jsonl
from agentproto.agui._serve.request import Begun

__all__ = ["SUBPROTOCOL", "Service", "websocket_session"]

SUBPROTOCOL: Final = WEBSOCKET_SUBPROTOCOL
"""The WebSocket subprotocol of cursored events and resume requests."""

_CLOSE_NORMAL, _CLOSE_POLICY, _CLOSE_TOO_BIG = 1000, 1008, 1009

_logger = logging.getLogger("agentproto.agui")


class Service(Protocol):
    """What a WebSocket session asks of the agent it serves (``agent_app``'s)."""

    @property
    def reading(self) -> BodyLimits: ...

    @property
    def logged(self) -> bool:
        """Whether the agent keeps an event log (only then are there cursors)."""
        ...

    async def begin(self, run_input: RunAgentInput, cursor: str | None) -> Begun: ...

    async def attach(self, thread_id: str, run_id: str, cursor: str | None) -> Begun: ...

    def entries(self, begun: Begun) -> AsyncGenerator[Entry, None]: ...

    def load(self, body: bytes) -> RunAgentInput | Begun: ...


async def websocket_session(scope: Scope, receive: Receive, send: Send, agent: Service) -> None:
    """Serve one WebSocket: the run (or resume request) it opens with, then its events."""
    if (await receive())["type"] != "websocket.connect":
        return
    cursors = agent.logged and SUBPROTOCOL in scope.get("subprotocols", ())
    accept: dict[str, Any] = {"type": "websocket.accept"}
    if cursors:
        accept["subprotocol"] = SUBPROTOCOL
    await send(accept)
    first = await _first_message(receive, send, agent.reading)
    if first is None:
        return
    begun = await _begun(first, cursors, agent)
    if begun.refusal is not None:
        status, body = begun.refusal
        await send({"type": "websocket.send", "text": dumps({**body, "status": status}).decode()})
        await send({"type": "websocket.close", "code": _CLOSE_POLICY})
        return
    if begun.events is not None:
        messages = _events(begun.events)
    else:
        fresh = cursors and begun.stream is not None and begun.cursor is None
        start = cursor_of(begun.stream, 0) if fresh and begun.stream is not None else None
        messages = _entries(agent.entries(begun), cursors, start)
    await _stream(messages, receive, send)


async def _first_message(receive: Receive, send: Send, reading: BodyLimits) -> bytes | None:
    """The client's first message, within the limits (``None``: refused or gone)."""
    try:
        message = await asyncio.wait_for(receive(), reading.timeout)
    except TimeoutError:
        await send({"type": "websocket.close", "code": _CLOSE_POLICY, "reason": "body-timeout"})
        return None
    if message["type"] != "websocket.receive":
        return None  # the client left
    data = message.get("bytes")
    if data is None:
        data = (message.get("text") or "").encode("utf-8", "surrogatepass")
    if len(data) > reading.max_bytes:
        await send({"type": "websocket.close", "code": _CLOSE_TOO_BIG, "reason": "body-too-large"})
        return None
    return bytes(data)


async def _begun(first: bytes, cursors: bool, agent: Service) -> Begun:
    """What the first message asks: a run, or (with the subprotocol) a resume."""
    if cursors:
        try:
            document = loads(first)
        except DecodeError:
            document = None  # the run input's reading says what is wrong
        if isinstance(document, dict) and document.get("type") == "resume":
            thread_id, run_id, after = (document.get(k) for k in ("threadId", "runId", "after"))
            if not isinstance(thread_id, str) or not isinstance(run_id, str):
                detail = "a resume names its run: threadId and runId (strings)"
                return Begun(refusal=(400, {"error": "invalid-attach", "detail": detail}))
            if after is not None and not isinstance(after, str):
                detail = "a resume's after is a cursor (a string)"
                return Begun(refusal=(400, {"error": "invalid-cursor", "detail": detail}))
            return await agent.attach(thread_id, run_id, after)
    run_input = agent.load(first)
    if isinstance(run_input, Begun):
        return run_input
    return await agent.begin(run_input, None)


async def _events(events: AsyncGenerator[Event, None]) -> AsyncGenerator[str, None]:
    try:
        async for event in events:
            yield encode_event_jsonl(event, check=False)[:-1].decode()
    finally:
        await events.aclose()


async def _entries(
    entries: AsyncGenerator[Entry, None], cursors: bool, start: str | None
) -> AsyncGenerator[str, None]:
    if start is not None:  # the start's cursor: resumable before the first event
        yield f'{{"id":"{start}"}}'
    try:
        async for entry in entries:
            data = entry.data.decode()
            yield f'{{"id":"{entry.cursor}","event":{data}}}' if cursors else data
    finally:
        await entries.aclose()


async def _stream(messages: AsyncGenerator[str, None], receive: Receive, send: Send) -> None:
    """Send the messages, then close; stop (and close them) when the client goes away."""

    async def sending() -> None:
        async for text in messages:
            await send({"type": "websocket.send", "text": text})
        await send({"type": "websocket.close", "code": _CLOSE_NORMAL})

    async def watching() -> None:
        while (await receive())["type"] != "websocket.disconnect":
            pass  # a message after the first: ignored

    sender, watcher = asyncio.ensure_future(sending()), asyncio.ensure_future(watching())
    try:
        await asyncio.wait((sender, watcher), return_when=asyncio.FIRST_COMPLETED)
        if not sender.done():
            _logger.info("the WebSocket client went away; its event stream is stopped")
    finally:
        for task in (sender, watcher):
            task.cancel()
        await asyncio.wait((sender, watcher))
        await messages.aclose()
    failure = None if sender.cancelled() else sender.exception()
    if failure is not None and not isinstance(failure, OSError):
        raise failure

"""What ACP's remote transports put on the wire around the JSON-RPC messages.

The transport is the "Streamable HTTP & WebSocket" one of the ACP RFDs, as the
TypeScript SDK 2.4.0 speaks it (the peer both sides are tested against), with the
durable-resumable RFD's cursors on top:

* one endpoint: ``POST`` a JSON-RPC message (``initialize`` without a connection id
  creates the connection and is answered ``200`` with its response and the
  :data:`CONNECTION_ID` header; everything else is ``202``, its answer coming on a
  stream), ``GET`` with ``Accept: text/event-stream`` opens a stream, ``DELETE`` ends
  the connection, and a WebSocket upgrade carries the whole connection both ways;
* streams: one per connection and one per session (``GET`` with :data:`SESSION_ID`);
  a message of the agent that names a ``sessionId`` in its params goes on that
  session's stream, an answer on the stream of the request it answers
  (:func:`route_of`), a ``$/cancel_request`` on the stream of the request it withdraws
  (ours: streams are not ordered between them, and a withdrawal must not overtake its
  request), everything else on the connection's;
* cursors: every message a stream carries has one, opaque and growing, as the SSE
  ``id:`` and in the message as ``_meta["acp/cursor"]`` (:func:`with_cursor`; the
  client takes it out again, :func:`take_cursor`); a stream reopened with
  ``Last-Event-ID`` (WebSocket: a first message :data:`RESUME`) replays what follows
  it, or is refused (``409``; :data:`RESUME_FAILED`).
"""

from __future__ import annotations

from typing import Any, Final

from agentproto._core.json.codec import dumps
from agentproto.acp import _generated_v2 as v2

__all__ = [
    "CANCEL_REQUEST",
    "CONNECTION_ID",
    "CURSOR_KEY",
    "LAST_EVENT_ID",
    "RESUME",
    "RESUME_FAILED",
    "SESSION_ID",
    "SESSION_METHODS",
    "UNKNOWN_CONNECTION",
    "route_of",
    "session_of",
    "take_cursor",
    "with_cursor",
]

CONNECTION_ID: Final = "acp-connection-id"
"""The header naming the connection (lower case, as ASGI and httpx give headers)."""
SESSION_ID: Final = "acp-session-id"
"""The header naming the session a POST or a GET is about."""
LAST_EVENT_ID: Final = "last-event-id"
CURSOR_KEY: Final = "acp/cursor"
"""Where a message's cursor rides in its ``_meta``."""
RESUME: Final = "stream/resume"
"""The WebSocket's first message that resumes a connection after a cursor (ours: the
RFD names it and leaves its shape open): ``params`` ``{"connectionId", "cursor"}``."""
RESUME_FAILED: Final = "stream/resume_failed"
"""The answer to a :data:`RESUME` that cannot be served: ``params`` ``{"reason"}``."""
UNKNOWN_CONNECTION: Final = "unknown-connection"
"""Why a request naming a connection the server does not have (any more) is refused: the
``error`` of the ``404`` (``409`` for a resume) body, the ``reason`` of a
:data:`RESUME_FAILED`."""
CANCEL_REQUEST: Final = v2.CancelRequestNotification.__agentproto_method__
"""The notification withdrawing a request (``$/cancel_request``)."""

SESSION_METHODS: Final = frozenset(
    {
        "session/cancel",
        "session/close",
        "session/delete",
        "session/fork",
        "session/load",
        "session/prompt",
        "session/resume",
        "session/set_config_option",
        "session/set_mode",
        "session/set_model",
    }
)
"""Methods a POST must name a session for, whatever their params hold (the TypeScript
SDK's list; any message whose params hold a ``sessionId`` must too)."""


def session_of(message: Any) -> str | None:
    """The ``sessionId`` a request's or notification's params name, if any."""
    params = message.get("params") if isinstance(message, dict) else None
    session = params.get("sessionId") if isinstance(params, dict) else None
    return session if isinstance(session, str) else None


def route_of(message: dict[str, Any], session: str | None) -> str | None:
    """The session whose stream carries the answer to ``message`` (a client's request
    POSTed with the ``session`` header), ``None`` for the connection's stream."""
    if message.get("method") == "session/load":  # its replay rides the session stream
        return None
    return session if session is not None else session_of(message)


def with_cursor(message: dict[str, Any], cursor: str) -> bytes:
    """``message`` as a JSON line with ``cursor`` in its params' (or result's) ``_meta``."""
    for key in ("params", "result"):
        body = message.get(key)
        if isinstance(body, dict):
            meta = body.get("_meta")
            body["_meta"] = (
                {**meta, CURSOR_KEY: cursor} if isinstance(meta, dict) else {CURSOR_KEY: cursor}
            )
            break
    return dumps(message)


def take_cursor(message: Any) -> str | None:
    """Remove the cursor :func:`with_cursor` put in ``message`` (in place); return it."""
    if not isinstance(message, dict):
        return None
    for key in ("params", "result"):
        body = message.get(key)
        if not isinstance(body, dict):
            continue
        meta = body.get("_meta")
        if isinstance(meta, dict) and CURSOR_KEY in meta:
            cursor = meta.pop(CURSOR_KEY)
            if not meta:
                del body["_meta"]
            return cursor if isinstance(cursor, str) else None
    return None

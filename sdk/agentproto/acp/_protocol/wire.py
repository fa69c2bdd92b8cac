"""ACP v2 documents ⇄ typed updates: the converters and the parse/dump functions."""

from __future__ import annotations

from typing import Any

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.wire.converter import WireConverter
from agentproto.acp import _generated_loaders_v2, _generated_v2
from agentproto.acp._generated_v2 import (
    RequestPermissionRequest,
    SessionUpdate,
    UpdateSessionNotification,
)
from agentproto.acp._protocol.jsonrpc import Notification, Request

__all__ = [
    "METHOD_REQUEST_PERMISSION",
    "METHOD_SESSION_UPDATE",
    "dump_session_update",
    "make_converter",
    "make_v1_converter",
    "parse_permission_request",
    "parse_session_notification",
    "parse_session_update",
    "permission_request",
    "session_notification",
]

METHOD_SESSION_UPDATE = "session/update"
"""The JSON-RPC method of the notifications carrying session updates."""

METHOD_REQUEST_PERMISSION = "session/request_permission"
"""The JSON-RPC method an agent calls to ask the user's permission."""


def make_converter() -> WireConverter:
    """A new converter for the ACP v2 classes."""
    return WireConverter(_generated_v2, _generated_loaders_v2)


def make_v1_converter() -> WireConverter:
    """A new converter for the ACP v1 classes (the v1 schema is imported on first use)."""
    from agentproto.acp import _generated_loaders_v1, _generated_v1

    return WireConverter(_generated_v1, _generated_loaders_v1)


CONVERTER = make_converter()


def parse_session_update(obj: Any, *, diagnostics: list[Diagnostic] | None = None) -> SessionUpdate:
    """Parse the ``update`` of a ``session/update`` notification.

    Args:
        obj: the update as decoded JSON (a dict with ``sessionUpdate``).
        diagnostics: ``None`` (default) for strict parsing, where a field the
            schema rejects is an error; a list to parse as the schema's
            ``x-deserialize-default-on-error`` / ``skip-invalid-items`` rules say,
            reporting each repair there. An unknown ``sessionUpdate`` kind parses as
            :class:`~agentproto.acp.schema.OtherSessionUpdate` in both modes.

    Raises:
        SchemaError: the update does not match the schema.
    """
    return CONVERTER.load(obj, SessionUpdate, diagnostics=diagnostics)  # type: ignore[no-any-return]


def dump_session_update(update: SessionUpdate) -> dict[str, Any]:
    """The wire JSON of a typed update; omitted patch fields stay omitted, cleared ones are null."""
    return CONVERTER.dump(update)  # type: ignore[no-any-return]


def parse_session_notification(
    params: Any, *, diagnostics: list[Diagnostic] | None = None
) -> UpdateSessionNotification:
    """Parse the ``params`` of a ``session/update`` notification.

    Args:
        params: the notification's ``params`` (for instance
            :attr:`Notification.params <agentproto.acp.Notification.params>`).
        diagnostics: as for :func:`parse_session_update`.

    Returns:
        The session id, the typed update and the notification's own ``_meta``
        (which describes this notification only and is never a patch).

    Raises:
        SchemaError: the params do not match the schema (location relative to
            ``params``).
    """
    return CONVERTER.load(params, UpdateSessionNotification, diagnostics=diagnostics)  # type: ignore[no-any-return]


def parse_permission_request(
    params: Any, *, diagnostics: list[Diagnostic] | None = None
) -> RequestPermissionRequest:
    """Parse the ``params`` of a ``session/request_permission`` request.

    A tool-call subject's ``toolCall`` is a :class:`~agentproto.acp.schema.ToolCallUpdate`
    to apply like a ``tool_call_update``
    (:meth:`~agentproto.acp.SessionState.apply_permission_request`).

    Args:
        params: the request's ``params``.
        diagnostics: as for :func:`parse_session_update`.

    Raises:
        SchemaError: the params do not match the schema.
    """
    return CONVERTER.load(params, RequestPermissionRequest, diagnostics=diagnostics)  # type: ignore[no-any-return]


def session_notification(
    session_id: str, update: SessionUpdate, *, meta: dict[str, Any] | None = None
) -> Notification:
    """The ``session/update`` notification carrying a typed update.

    Encode it with :func:`~agentproto.acp.encode_message` to write one NDJSON line.

    Args:
        session_id: the session.
        update: the update.
        meta: the notification's own ``_meta`` (about this notification only).
    """
    params = CONVERTER.dump(
        UpdateSessionNotification(session_id=session_id, update=update, meta=meta)
    )
    return Notification(METHOD_SESSION_UPDATE, params)


def permission_request(request_id: int | str, request: RequestPermissionRequest) -> Request:
    """The ``session/request_permission`` request carrying typed params.

    Args:
        request_id: the JSON-RPC id the response will answer.
        request: the params.
    """
    return Request(request_id, METHOD_REQUEST_PERMISSION, CONVERTER.dump(request))
